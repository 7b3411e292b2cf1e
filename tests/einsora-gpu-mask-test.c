/* Which GPUs a workload holds: picking the lowest free ones, and the one
 * spelling a choice has in labels and the timeline. */
#include <glib.h>

#include "einsora-gpu-mask.h"

static void
test_pick(void)
{
    /* GPUs 1, 2, 5 and 63 free: the two lowest. */
    guint64 free = (1u << 1) | (1u << 2) | (1u << 5) | (G_GUINT64_CONSTANT(1) << 63);

    g_assert_cmphex(einsora_gpu_mask_pick(free, 2), ==, 0x6);
    g_assert_cmphex(einsora_gpu_mask_pick(free, 4), ==, free);
    /* More than are free, or nothing asked for: none chosen. */
    g_assert_cmphex(einsora_gpu_mask_pick(free, 5), ==, 0);
    g_assert_cmphex(einsora_gpu_mask_pick(free, 0), ==, 0);
    g_assert_cmphex(einsora_gpu_mask_pick(0, 1), ==, 0);
    g_assert_cmpuint(einsora_gpu_mask_count(G_MAXUINT64), ==, 64);
}

static void
test_text(void)
{
    static const struct {
        const char *text;
        guint64 mask;
    } good[] = {
        {"", 0},
        {"0", 0x1},
        {"0,3", 0x9},
        {"10,63", (G_GUINT64_CONSTANT(1) << 10) | (G_GUINT64_CONSTANT(1) << 63)},
    };
    /* Not rising, repeated, too large, padded, spaced or not numbers. */
    static const char *const bad[] = {"3,0", "1,1", "64", "100", "007", "01",   "0, 1",
                                      ",",   "0,",  ",0", "a",   "-1",  "1000", "0,,1"};

    for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autofree gchar *text = einsora_gpu_mask_to_string(good[i].mask);
        guint64 mask = 1234;

        g_assert_cmpstr(text, ==, good[i].text);
        g_assert_true(einsora_gpu_mask_from_string(good[i].text, &mask));
        g_assert_cmphex(mask, ==, good[i].mask);
    }
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        guint64 mask = 1234;

        g_test_message("%s", bad[i]);
        g_assert_false(einsora_gpu_mask_from_string(bad[i], &mask));
        g_assert_cmphex(mask, ==, 1234);
    }
    g_assert_false(einsora_gpu_mask_from_string(NULL, &(guint64){0}));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gpu-mask/pick", test_pick);
    g_test_add_func("/gpu-mask/text", test_text);
    return g_test_run();
}
