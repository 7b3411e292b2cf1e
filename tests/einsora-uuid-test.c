#include "einsora-error.h"
#include "einsora-test-seccomp.h"
#include "einsora-uuid.h"

static void
test_format_and_version(void)
{
    g_autofree gchar *id = einsora_uuid_v7_new(G_GINT64_CONSTANT(1764406000123));
    guint8 bytes[16];
    g_autoptr(GError) error = NULL;

    g_assert_cmpuint(strlen(id), ==, EINSORA_UUID_STRING_LEN);
    g_assert_true(g_regex_match_simple(
        "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", id, 0, 0));
    g_assert_true(einsora_uuid_parse(id, bytes, &error));
    g_assert_no_error(error);
    g_assert_cmpint(einsora_uuid_v7_unix_ms(bytes), ==, G_GINT64_CONSTANT(1764406000123));
}

static void
test_sorts_in_creation_order(void)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);

    /* Many in one millisecond, then a later one, then the clock going back:
     * text order must still be creation order. */
    for (guint i = 0; i < 5000; i++)
        g_ptr_array_add(ids, einsora_uuid_v7_new(G_GINT64_CONSTANT(1764406000000)));
    g_ptr_array_add(ids, einsora_uuid_v7_new(G_GINT64_CONSTANT(1764406000001)));
    g_ptr_array_add(ids, einsora_uuid_v7_new(G_GINT64_CONSTANT(1764405999000)));
    for (guint i = 1; i < ids->len; i++)
        g_assert_cmpstr(g_ptr_array_index(ids, i - 1), <, g_ptr_array_index(ids, i));
}

static void
test_parse_refuses(void)
{
    static const char *const bad[] = {
        "",
        "not-a-uuid",
        "0190b5d2-7c4e-7abc-8def-0123456789a",   /* short */
        "0190b5d2-7c4e-7abc-8def-0123456789abc", /* long */
        "0190B5D2-7C4E-7ABC-8DEF-0123456789AB",  /* upper case */
        "0190b5d2-7c4e-4abc-8def-0123456789ab",  /* version 4 */
        "0190b5d2-7c4e-7abc-cdef-0123456789ab",  /* wrong variant */
        "0190b5d27c4e-7abc-8def-0123456789ab-",  /* dashes misplaced */
        "0190b5d2-7c4e-7abc-8def-0123456789ag",  /* not hex */
        "{0190b5d2-7c4e-7abc-8def-0123456789a}",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        g_test_message("%s", bad[i]);
        g_assert_false(einsora_uuid_parse(bad[i], NULL, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_false(einsora_uuid_is_valid(bad[i]));
    }
    g_assert_false(einsora_uuid_is_valid(NULL));
    g_assert_true(einsora_uuid_is_valid("0190b5d2-7c4e-7abc-8def-0123456789ab"));
}

static void
test_unique(void)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint i = 0; i < 20000; i++) {
        gchar *id = einsora_uuid_v7_new(G_GINT64_CONSTANT(1764406100000) + (i / 100));
        g_assert_false(g_hash_table_contains(seen, id));
        g_hash_table_add(seen, id);
    }
}

static void
test_random_answers(void)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_uuid_check_random(&error));
    g_assert_no_error(error);
}

/* Without the kernel's generator the check says so, as an error, and an
 * ID is never made from anything else: it stops, saying why. */
static void
test_without_random_generator(void)
{
    if (g_test_subprocess()) {
        g_autoptr(GError) error = NULL;

        if (!einsora_test_hide_getrandom()) {
            g_print("seccomp is not available here\n");
            return;
        }
        g_assert_false(einsora_uuid_check_random(&error));
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSYS);
        g_assert_nonnull(strstr(error->message, "getrandom"));
        g_free(einsora_uuid_v7_new(G_GINT64_CONSTANT(1764406000123)));
        g_assert_not_reached();
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    if (g_test_trap_has_passed()) {
        g_test_trap_assert_stdout("*seccomp is not available here*");
        g_test_skip("seccomp is not available here, so getrandom can't be hidden");
        return;
    }
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*getrandom: Function not implemented*");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/uuid/v7/format-and-version", test_format_and_version);
    g_test_add_func("/uuid/v7/sorts-in-creation-order", test_sorts_in_creation_order);
    g_test_add_func("/uuid/v7/unique", test_unique);
    g_test_add_func("/uuid/parse/refuses-malformed", test_parse_refuses);
    g_test_add_func("/uuid/random/kernel-generator-answers", test_random_answers);
    g_test_add_func("/uuid/random/without-it-no-id-is-made", test_without_random_generator);
    return g_test_run();
}
