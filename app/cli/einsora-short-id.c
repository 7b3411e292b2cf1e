/* Short IDs: shown as the shortest telling prefix, taken as any unique
 * prefix. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-short-id.h"

static gint
compare_ids(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

guint
einsora_short_id_length(GPtrArray *ids)
{
    g_autoptr(GPtrArray) sorted = g_ptr_array_copy(ids, NULL, NULL);
    guint length = EINSORA_SHORT_ID_MIN_SHOWN;

    /* Sorted, an ID shares its longest prefix with a neighbour. */
    g_ptr_array_sort(sorted, compare_ids);
    for (guint i = 1; i < sorted->len; i++) {
        const char *a = g_ptr_array_index(sorted, i - 1);
        const char *b = g_ptr_array_index(sorted, i);
        guint common = 0;

        while (a[common] != '\0' && a[common] == b[common])
            common++;
        length = MAX(length, common + 1);
    }
    for (guint i = 0; i < sorted->len; i++) {
        const char *id = g_ptr_array_index(sorted, i);
        if (length <= strlen(id) && length > 0 && id[length - 1] == '-')
            length++;
    }
    return length;
}

gboolean
einsora_short_id_is_full(const char *text)
{
    static const guint groups[] = {8, 4, 4, 4, 12};
    const char *p = text;

    for (guint g = 0; g < G_N_ELEMENTS(groups); g++) {
        for (guint i = 0; i < groups[g]; i++, p++) {
            if (!g_ascii_isxdigit(*p))
                return FALSE;
        }
        if (g + 1 < G_N_ELEMENTS(groups) && *p++ != '-')
            return FALSE;
    }
    return *p == '\0';
}

gboolean
einsora_short_id_is_prefix(const char *text)
{
    guint digits = 0;

    for (const char *p = text; *p != '\0'; p++) {
        if (g_ascii_isxdigit(*p))
            digits++;
        else if (*p != '-')
            return FALSE;
    }
    return digits >= EINSORA_SHORT_ID_MIN_DIGITS;
}

gboolean
einsora_short_id_matches(const char *id, const char *prefix)
{
    const char *i = id;

    for (const char *p = prefix; *p != '\0'; p++) {
        if (*p == '-')
            continue;
        while (*i == '-')
            i++;
        if (*i == '\0' || g_ascii_tolower(*i) != g_ascii_tolower(*p))
            return FALSE;
        i++;
    }
    return TRUE;
}
