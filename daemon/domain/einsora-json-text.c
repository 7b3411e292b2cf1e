#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-json-text.h"

#include <string.h>

/* Where the string that opens at @i ends (just past its closing quote),
 * or @length when it never does. */
static gsize
skip_string(const char *data, gsize length, gsize i)
{
    for (i++; i < length; i++) {
        if (data[i] == '\\')
            i++;
        else if (data[i] == '"')
            return i + 1;
    }
    return length + 1;
}

gboolean
einsora_json_text_is_one_value(const char *data, gsize length)
{
    gsize i = 0;

    while (i < length && g_ascii_isspace(data[i]))
        i++;
    if (i == length)
        return TRUE; /* nothing: the parser says so */
    if (data[i] == '{' || data[i] == '[') {
        gsize depth = 0;
        for (; i < length; i++) {
            char c = data[i];
            if (c == '"') {
                i = skip_string(data, length, i) - 1;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                break;
            }
        }
        if (i >= length)
            return FALSE; /* never closed: the parser would refuse it too */
        i++;
    } else if (data[i] == '"') {
        i = skip_string(data, length, i);
        if (i > length)
            return FALSE;
    } else {
        /* A number or a literal: up to the next space or punctuation. */
        while (i < length && !g_ascii_isspace(data[i]) && data[i] != '\0' &&
               strchr("{}[]\",:", data[i]) == NULL)
            i++;
    }
    for (; i < length; i++) {
        if (!g_ascii_isspace(data[i]))
            return FALSE;
    }
    return TRUE;
}

gboolean
einsora_json_text_depth_within(const char *data, gsize length, gsize max_depth)
{
    gsize depth = 0;

    for (gsize i = 0; i < length; i++) {
        char c = data[i];
        if (c == '"') {
            i = skip_string(data, length, i) - 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth)
                return FALSE;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
    }
    return TRUE;
}
