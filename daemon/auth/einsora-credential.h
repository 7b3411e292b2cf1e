/* Credentials: random secrets that are stored only as SHA-256 hashes (API
 * tokens, session cookies, CSRF tokens), and argon2id password hashes.
 * Nothing here logs or keeps a secret. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_CREDENTIAL_TOKEN_PREFIX "tsk_"
#define EINSORA_CREDENTIAL_SESSION_PREFIX "ses_"
#define EINSORA_CREDENTIAL_CSRF_PREFIX "csrf_"
/* The one-time ticket in an access link (the access proxy takes it). */
#define EINSORA_CREDENTIAL_ACCESS_TICKET_PREFIX "tkt_"

/* A secret longer than this is not one of ours. */
#define EINSORA_CREDENTIAL_SECRET_MAX_BYTES 256

/* Passwords longer than this are refused: argon2id's cost does not depend
 * on it, but nobody needs more, and a bound keeps requests small. */
#define EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES 1024

/* @prefix followed by 32 random bytes (OpenSSL's RAND_bytes) in base64url
 * without padding (43 characters). NULL only if the system's random
 * generator fails. */
gchar *einsora_credential_new_secret(const char *prefix);

/* Whether @value could be one of our secrets with @prefix (and at most
 * EINSORA_CREDENTIAL_SECRET_MAX_BYTES): anything else is refused before
 * it is hashed or looked up. */
gboolean einsora_credential_looks_like_secret(const char *value, const char *prefix);

/* The lowercase hex SHA-256 of @secret: what the store keeps. */
gchar *einsora_credential_sha256_hex(const char *secret);

/* The first 8 characters of a secret (e.g. "tsk_Ab3x"): enough for a person
 * to tell their tokens apart, too little to help a guess. */
gchar *einsora_credential_display_prefix(const char *token);

/* Constant-time string equality; FALSE when either is NULL or the lengths
 * differ (the values compared are fixed-length digests, so the length
 * tells nothing). */
gboolean einsora_credential_equal(const char *a, const char *b);

/* argon2id (t=3, m=64 MiB, p=1, 16-byte random salt, 32-byte hash) in its
 * encoded "$argon2id$..." form. Slow on purpose: never call it on the main
 * loop of a running daemon (use the _async form) nor inside a store
 * transaction. An empty or over-long password is
 * EINSORA_ERROR_INVALID_REQUEST. */
gchar *einsora_credential_hash_password(const char *password, GError **error);

/* Whether @password matches @encoded (an argon2id hash from above). FALSE
 * for anything malformed. */
gboolean einsora_credential_verify_password(const char *encoded, const char *password);

/* Password work (the _async forms below) runs on a thread pool of this
 * module's own, never GLib's shared one: each job holds 64 MiB for a
 * noticeable time, so at most MAX(1, processors / 2) run at once and at
 * most EINSORA_CREDENTIAL_PASSWORD_QUEUE_MAX more wait. A job that finds
 * the queue full fails at once with G_IO_ERROR_BUSY. */
#define EINSORA_CREDENTIAL_PASSWORD_QUEUE_MAX 16

typedef struct {
    guint max_running;
    guint max_waiting;
    guint running;
    guint waiting;
    /* The most that ever ran at once in this process. */
    guint peak_running;
} EinsoraCredentialPoolStats;

void einsora_credential_get_pool_stats(EinsoraCredentialPoolStats *stats);

/* For tests: called in the worker thread as a job is about to run argon2,
 * after its cancellable was checked. NULL removes it. */
typedef void (*EinsoraCredentialWorkHook)(gpointer user_data);
void einsora_credential_set_work_hook(EinsoraCredentialWorkHook hook, gpointer user_data);

/* The same in a worker thread of that pool, so the calling thread's main
 * loop keeps running. The inputs are copied; the copies of the password
 * are wiped when done. A job cancelled before its turn skips argon2 and
 * is G_IO_ERROR_CANCELLED. */
void einsora_credential_hash_password_async(const char *password, GCancellable *cancellable,
                                            GAsyncReadyCallback callback, gpointer user_data);
gchar *einsora_credential_hash_password_finish(GAsyncResult *result, GError **error);

/* TRUE when the password matches. A mismatch is FALSE with
 * EINSORA_ERROR_UNAUTHENTICATED, so that FALSE always comes with an
 * error; cancellation is G_IO_ERROR_CANCELLED, a full queue
 * G_IO_ERROR_BUSY. */
void einsora_credential_verify_password_async(const char *encoded, const char *password,
                                              GCancellable *cancellable,
                                              GAsyncReadyCallback callback, gpointer user_data);
gboolean einsora_credential_verify_password_finish(GAsyncResult *result, GError **error);

G_END_DECLS
