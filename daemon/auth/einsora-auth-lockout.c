/* Sign-in lock-out, which einsora-auth-login.c consults and feeds. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

/* Failed sign-ins are counted per email in a window that opens with the
 * first failure; the fifth within the window locks the email until the
 * window closes, so a guesser gets at most 5 argon2 runs per window and
 * email. Unknown emails are counted the same, so a lock says nothing
 * about whether an account exists. In memory only: a restart forgets. */

/* Emails whose failures are remembered at once: enough for any real
 * traffic, and a bound on what random emails can make us keep. */
#define LOGIN_FAILURES_MAX_EMAILS 4096

/* Recent failed sign-ins for one email (known or not). */
typedef struct {
    gint64 window_start_us; /* the first failure counted */
    guint failures;
} LoginFailures;

static gboolean
login_failures_expired(const LoginFailures *record, gint64 now_us)
{
    return now_us - record->window_start_us >= EINSORA_AUTH_LOGIN_FAILURE_WINDOW_US;
}

gboolean
einsora_auth_is_locked_out(EinsoraAuth *self, const char *email)
{
    LoginFailures *record = g_hash_table_lookup(self->login_failures, email);
    gint64 now_us = self->now(self->now_data);

    if (record == NULL)
        return FALSE;
    if (login_failures_expired(record, now_us)) {
        g_hash_table_remove(self->login_failures, email);
        return FALSE;
    }
    return record->failures >= EINSORA_AUTH_LOGIN_FAILURES_MAX;
}

/* Keeps the table bounded: expired windows go first, then, if it is still
 * full, the oldest window. */
static void
make_room_for_failures(EinsoraAuth *self, gint64 now_us)
{
    GHashTableIter iter;
    gpointer key;
    gpointer value;
    const char *oldest = NULL;
    gint64 oldest_us = G_MAXINT64;

    if (g_hash_table_size(self->login_failures) < LOGIN_FAILURES_MAX_EMAILS)
        return;
    g_hash_table_iter_init(&iter, self->login_failures);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        if (login_failures_expired(value, now_us))
            g_hash_table_iter_remove(&iter);
    }
    if (g_hash_table_size(self->login_failures) < LOGIN_FAILURES_MAX_EMAILS)
        return;
    g_hash_table_iter_init(&iter, self->login_failures);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        LoginFailures *record = value;
        if (record->window_start_us < oldest_us) {
            oldest_us = record->window_start_us;
            oldest = key;
        }
    }
    g_hash_table_remove(self->login_failures, oldest);
}

void
einsora_auth_record_login_failure(EinsoraAuth *self, const char *email)
{
    gint64 now_us = self->now(self->now_data);
    LoginFailures *record = g_hash_table_lookup(self->login_failures, email);

    if (record != NULL && login_failures_expired(record, now_us)) {
        g_hash_table_remove(self->login_failures, email);
        record = NULL;
    }
    if (record == NULL) {
        make_room_for_failures(self, now_us);
        record = g_new0(LoginFailures, 1);
        record->window_start_us = now_us;
        g_hash_table_insert(self->login_failures, g_strdup(email), record);
    }
    record->failures++;
}
