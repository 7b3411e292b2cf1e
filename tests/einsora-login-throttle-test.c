/* The sign-in throttle (docs/adr/0024), on an injected clock. */
#include "einsora-login-throttle.h"

#define SECOND G_USEC_PER_SEC

typedef struct {
    gint64 now_us;
} Clock;

static gint64
clock_now(gpointer user_data)
{
    return ((Clock *)user_data)->now_us;
}

static const EinsoraLoginThrottleRule rule = {
    .free_failures = 3,
    .first_delay_us = 1 * SECOND,
    .max_delay_us = 8 * SECOND,
    .forget_after_us = 60 * SECOND,
    .max_keys = 4,
};

static gboolean
attempt(EinsoraLoginThrottle *throttle, const char *key, EinsoraLoginOutcome outcome,
        gint64 *retry_after_us)
{
    gint64 ignored;

    if (!einsora_login_throttle_begin(throttle, key, retry_after_us ? retry_after_us : &ignored))
        return FALSE;
    einsora_login_throttle_end(throttle, key, outcome);
    return TRUE;
}

static void
test_free_then_doubling_delays(void)
{
    Clock clock = {1000 * SECOND};
    g_autoptr(EinsoraLoginThrottle) throttle = einsora_login_throttle_new(&rule, clock_now, &clock);
    gint64 retry = 0;

    for (guint i = 0; i < rule.free_failures; i++)
        g_assert_true(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    /* The next waits 1 s, refused without starting (so no password check). */
    g_assert_false(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_SUCCEEDED, &retry));
    g_assert_cmpint(retry, ==, 1 * SECOND);
    clock.now_us += SECOND / 2;
    g_assert_false(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_SUCCEEDED, &retry));
    /* Never less than a second: Retry-After counts whole seconds. */
    g_assert_cmpint(retry, ==, 1 * SECOND);
    /* Refusals do not make it longer; each failure past the allowance
     * doubles it, up to the cap. */
    clock.now_us += SECOND / 2;
    g_assert_true(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    g_assert_false(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_FAILED, &retry));
    g_assert_cmpint(retry, ==, 2 * SECOND);
    for (gint64 want = 2; want <= 16; want *= 2) {
        clock.now_us += MIN(want, 8) * SECOND;
        g_assert_true(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
        g_assert_false(attempt(throttle, "10.0.0.1", EINSORA_LOGIN_OUTCOME_FAILED, &retry));
        g_assert_cmpint(retry, ==, MIN(want * 2, 8) * SECOND);
    }
    /* Other keys are not affected. */
    g_assert_true(attempt(throttle, "10.0.0.2", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
}

static void
test_success_forgets(void)
{
    Clock clock = {1000 * SECOND};
    g_autoptr(EinsoraLoginThrottle) throttle = einsora_login_throttle_new(&rule, clock_now, &clock);

    for (guint i = 0; i < rule.free_failures; i++)
        g_assert_true(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    clock.now_us += SECOND;
    g_assert_true(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_SUCCEEDED, NULL));
    g_assert_cmpuint(einsora_login_throttle_get_n_keys(throttle), ==, 0);
    for (guint i = 0; i < rule.free_failures; i++)
        g_assert_true(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, NULL));

    /* No verdict (a full pool, a client gone) counts for nothing. */
    clock.now_us += SECOND;
    g_assert_true(attempt(throttle, "b", EINSORA_LOGIN_OUTCOME_NONE, NULL));
    g_assert_cmpuint(einsora_login_throttle_get_n_keys(throttle), ==, 1);
    for (guint i = 0; i < 10; i++)
        g_assert_true(attempt(throttle, "b", EINSORA_LOGIN_OUTCOME_NONE, NULL));
}

static void
test_parallel_attempts_count(void)
{
    Clock clock = {1000 * SECOND};
    g_autoptr(EinsoraLoginThrottle) throttle = einsora_login_throttle_new(&rule, clock_now, &clock);
    gint64 retry = 0;

    /* As many at once as the allowance, not one more. */
    for (guint i = 0; i < rule.free_failures; i++)
        g_assert_true(einsora_login_throttle_begin(throttle, "a", &retry));
    g_assert_false(einsora_login_throttle_begin(throttle, "a", &retry));
    g_assert_cmpint(retry, ==, 1 * SECOND);
    for (guint i = 0; i < rule.free_failures; i++)
        einsora_login_throttle_end(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED);

    /* Past it, one at a time even once the delay is over. */
    clock.now_us += SECOND;
    g_assert_true(einsora_login_throttle_begin(throttle, "a", &retry));
    g_assert_false(einsora_login_throttle_begin(throttle, "a", &retry));
    einsora_login_throttle_end(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED);
    g_assert_false(einsora_login_throttle_begin(throttle, "a", &retry));
    g_assert_cmpint(retry, ==, 2 * SECOND);
}

static void
test_quiet_keys_forgotten_and_bounded(void)
{
    Clock clock = {1000 * SECOND};
    g_autoptr(EinsoraLoginThrottle) throttle = einsora_login_throttle_new(&rule, clock_now, &clock);
    gint64 retry = 0;

    for (guint i = 0; i < rule.free_failures + 2; i++) {
        clock.now_us += 8 * SECOND;
        g_assert_true(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    }
    g_assert_false(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, &retry));
    /* Quiet for the forget time: a fresh start. */
    clock.now_us += rule.forget_after_us;
    for (guint i = 0; i < rule.free_failures; i++)
        g_assert_true(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    g_assert_false(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, &retry));

    /* Many keys: never more than max_keys, the one seen longest ago goes. */
    for (guint i = 0; i < 100; i++) {
        g_autofree gchar *key = g_strdup_printf("key %u", i);
        clock.now_us += 1;
        g_assert_true(attempt(throttle, key, EINSORA_LOGIN_OUTCOME_FAILED, NULL));
        g_assert_cmpuint(einsora_login_throttle_get_n_keys(throttle), <=, rule.max_keys);
    }
    /* "a" was evicted, so it starts afresh; the newest ones are kept. */
    g_assert_true(attempt(throttle, "a", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    for (guint i = 0; i < rule.free_failures - 1; i++)
        g_assert_true(attempt(throttle, "key 99", EINSORA_LOGIN_OUTCOME_FAILED, NULL));
    g_assert_false(attempt(throttle, "key 99", EINSORA_LOGIN_OUTCOME_FAILED, &retry));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/login-throttle/free-failures-then-doubling-delays",
                    test_free_then_doubling_delays);
    g_test_add_func("/login-throttle/success-forgets", test_success_forgets);
    g_test_add_func("/login-throttle/parallel-attempts-count", test_parallel_attempts_count);
    g_test_add_func("/login-throttle/quiet-keys-forgotten-and-bounded",
                    test_quiet_keys_forgotten_and_bounded);
    return g_test_run();
}
