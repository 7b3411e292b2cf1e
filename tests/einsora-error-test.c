#include "einsora-error.h"

static void
test_domain_name(void)
{
    /* Errors are matched by this name across processes (D-Bus, logs). */
    g_assert_cmpstr(g_quark_to_string(EINSORA_ERROR), ==, "einsora-error-quark");
}

static void
test_codes_and_statuses(void)
{
    static const struct {
        EinsoraError code;
        const char *name;
        guint status;
    } table[] = {
        {EINSORA_ERROR_INVALID_REQUEST, "invalid_request", 400},
        {EINSORA_ERROR_UNAUTHENTICATED, "unauthenticated", 401},
        {EINSORA_ERROR_FORBIDDEN, "forbidden", 403},
        {EINSORA_ERROR_NOT_FOUND, "not_found", 404},
        {EINSORA_ERROR_CONFLICT, "conflict", 409},
        {EINSORA_ERROR_QUOTA_EXCEEDED, "quota_exceeded", 409},
        {EINSORA_ERROR_INVALID_TRANSITION, "invalid_transition", 409},
        {EINSORA_ERROR_UNAVAILABLE, "unavailable", 503},
    };

    g_assert_cmpuint(G_N_ELEMENTS(table), ==, EINSORA_ERROR_LAST + 1);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_assert_cmpstr(einsora_error_code_to_string(table[i].code), ==, table[i].name);
        g_assert_cmpuint(einsora_error_http_status(table[i].code), ==, table[i].status);
    }
    g_assert_null(einsora_error_code_to_string((EinsoraError)99));
    g_assert_cmpuint(einsora_error_http_status((EinsoraError)99), ==, 500);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/error/domain/name", test_domain_name);
    g_test_add_func("/error/codes/api-names-and-statuses", test_codes_and_statuses);
    return g_test_run();
}
