/* Slows password guessing from one source (docs/adr/0024): after a few
 * failed sign-ins in a row under one key (a client address), each further
 * attempt waits for a delay that doubles with every failure, up to a cap;
 * a success forgets the key. Attempts still running count against the
 * free allowance, so parallel guesses gain nothing. In memory only, with
 * a bounded number of keys. Main thread only. Time comes from the
 * injected clock (monotonic microseconds). */
#pragma once

#include <gio/gio.h>

#include "einsora-timestamp.h"

G_BEGIN_DECLS

typedef struct {
    guint free_failures;    /* failures in a row before any delay */
    gint64 first_delay_us;  /* the delay after the first failure past them */
    gint64 max_delay_us;    /* the most a delay grows to */
    gint64 forget_after_us; /* a key quiet this long starts afresh */
    guint max_keys;         /* the most keys remembered at once */
} EinsoraLoginThrottleRule;

typedef enum {
    EINSORA_LOGIN_OUTCOME_FAILED,    /* a wrong email or password */
    EINSORA_LOGIN_OUTCOME_SUCCEEDED, /* signed in: the key is forgotten */
    EINSORA_LOGIN_OUTCOME_NONE,      /* no verdict (busy, client gone) */
} EinsoraLoginOutcome;

#define EINSORA_TYPE_LOGIN_THROTTLE (einsora_login_throttle_get_type())
G_DECLARE_FINAL_TYPE(EinsoraLoginThrottle, einsora_login_throttle, EINSORA, LOGIN_THROTTLE, GObject)

EinsoraLoginThrottle *einsora_login_throttle_new(const EinsoraLoginThrottleRule *rule,
                                                 EinsoraNowFunc now, gpointer now_data);

/* Whether an attempt under @key may start now. TRUE: it has started, and
 * must be ended with einsora_login_throttle_end(). FALSE: it must not
 * start (no password check at all); @retry_after_us says how long to
 * wait, at least 1 s. */
gboolean einsora_login_throttle_begin(EinsoraLoginThrottle *self, const char *key,
                                      gint64 *retry_after_us);
void einsora_login_throttle_end(EinsoraLoginThrottle *self, const char *key,
                                EinsoraLoginOutcome outcome);

/* How many keys are remembered (for tests of the bound). */
guint einsora_login_throttle_get_n_keys(EinsoraLoginThrottle *self);

G_END_DECLS
