#include "einsora-json-writer.h"

/* Which bytes a JSON string can't hold as they are: control characters,
 * the quote and the backslash, and DEL (json-glib escapes it too). */
static const guint8 needs_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,         1,          1,          1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ['"'] = 1, ['\\'] = 1, [0x7f] = 1,
};

void
einsora_json_append_string(GString *out, const char *value)
{
    const guchar *run;
    const guchar *p;

    if (value == NULL) {
        g_string_append(out, "null");
        return;
    }
    g_string_append_c(out, '"');
    /* Runs that need no escape (most values are IDs and times) are
     * copied in one go. */
    run = (const guchar *)value;
    for (;;) {
        p = run;
        while (!needs_escape[*p])
            p++;
        if (p > run)
            g_string_append_len(out, (const char *)run, p - run);
        if (*p == '\0')
            break;
        switch (*p) {
        case '"':
            g_string_append(out, "\\\"");
            break;
        case '\\':
            g_string_append(out, "\\\\");
            break;
        case '\b':
            g_string_append(out, "\\b");
            break;
        case '\f':
            g_string_append(out, "\\f");
            break;
        case '\n':
            g_string_append(out, "\\n");
            break;
        case '\r':
            g_string_append(out, "\\r");
            break;
        case '\t':
            g_string_append(out, "\\t");
            break;
        default:
            g_string_append_printf(out, "\\u%04x", *p);
        }
        run = p + 1;
    }
    g_string_append_c(out, '"');
}

void
einsora_json_append_member(GString *out, const char *name, gboolean first)
{
    if (!first)
        g_string_append_c(out, ',');
    g_string_append_c(out, '"');
    g_string_append(out, name);
    g_string_append(out, "\":");
}

void
einsora_json_append_member_string(GString *out, const char *name, const char *value, gboolean first)
{
    einsora_json_append_member(out, name, first);
    einsora_json_append_string(out, value);
}

void
einsora_json_append_member_int(GString *out, const char *name, gint64 value, gboolean first)
{
    char digits[24];
    int length;

    einsora_json_append_member(out, name, first);
    /* Not g_string_append_printf: it formats through a temporary string. */
    length = g_snprintf(digits, sizeof(digits), "%" G_GINT64_FORMAT, value);
    g_string_append_len(out, digits, length);
}

void
einsora_json_append_member_boolean(GString *out, const char *name, gboolean value, gboolean first)
{
    einsora_json_append_member(out, name, first);
    g_string_append(out, value ? "true" : "false");
}
