#include "einsora-json-writer.h"

void
einsora_json_append_string(GString *out, const char *value)
{
    const char *run;

    if (value == NULL) {
        g_string_append(out, "null");
        return;
    }
    g_string_append_c(out, '"');
    /* Copy runs that need no escape in one go: most values are IDs and
     * times. */
    run = value;
    for (const char *p = value; *p != '\0'; p++) {
        guchar c = (guchar)*p;
        const char *escape = NULL;

        switch (c) {
        case '"':
            escape = "\\\"";
            break;
        case '\\':
            escape = "\\\\";
            break;
        case '\b':
            escape = "\\b";
            break;
        case '\f':
            escape = "\\f";
            break;
        case '\n':
            escape = "\\n";
            break;
        case '\r':
            escape = "\\r";
            break;
        case '\t':
            escape = "\\t";
            break;
        default:
            if (c >= 0x20 && c != 0x7f)
                continue;
        }
        g_string_append_len(out, run, p - run);
        if (escape != NULL)
            g_string_append(out, escape);
        else
            g_string_append_printf(out, "\\u%04x", c);
        run = p + 1;
    }
    g_string_append(out, run);
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
    einsora_json_append_member(out, name, first);
    g_string_append_printf(out, "%" G_GINT64_FORMAT, value);
}

void
einsora_json_append_member_boolean(GString *out, const char *name, gboolean value, gboolean first)
{
    einsora_json_append_member(out, name, first);
    g_string_append(out, value ? "true" : "false");
}
