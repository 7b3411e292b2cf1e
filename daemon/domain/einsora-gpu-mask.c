#include "einsora-gpu-mask.h"

#include <string.h>

guint
einsora_gpu_mask_count(guint64 mask)
{
    return (guint)__builtin_popcountll(mask);
}

guint64
einsora_gpu_mask_pick(guint64 available, gint64 count)
{
    guint64 picked = 0;

    if (count <= 0 || einsora_gpu_mask_count(available) < (guint64)count)
        return 0;
    for (gint64 i = 0; i < count; i++) {
        guint64 lowest = available & (~available + 1);

        picked |= lowest;
        available &= ~lowest;
    }
    return picked;
}

gchar *
einsora_gpu_mask_to_string(guint64 mask)
{
    GString *text = g_string_new(NULL);

    for (guint i = 0; i < EINSORA_GPU_MASK_BITS; i++) {
        if ((mask & (G_GUINT64_CONSTANT(1) << i)) == 0)
            continue;
        if (text->len > 0)
            g_string_append_c(text, ',');
        g_string_append_printf(text, "%u", i);
    }
    return g_string_free(text, FALSE);
}

gboolean
einsora_gpu_mask_from_string(const char *text, guint64 *mask)
{
    guint64 parsed = 0;
    gint last = -1;
    const char *at = text;

    if (text == NULL)
        return FALSE;
    while (*at != '\0') {
        gint index = 0;
        guint digits = 0;

        if (last >= 0 && *at++ != ',')
            return FALSE;
        while (g_ascii_isdigit(*at) && digits < 3) {
            index = index * 10 + (*at++ - '0');
            digits++;
        }
        /* "00" or "07" would be a second spelling of one choice. */
        if (digits == 0 || (digits > 1 && at[-(gint)digits] == '0') || index <= last ||
            index >= EINSORA_GPU_MASK_BITS)
            return FALSE;
        parsed |= G_GUINT64_CONSTANT(1) << index;
        last = index;
    }
    *mask = parsed;
    return TRUE;
}
