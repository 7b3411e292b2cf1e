#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-credential.h"

#include <argon2.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <string.h>

#include "einsora-error.h"

#define SECRET_BYTES 32
#define DISPLAY_PREFIX_CHARS 8

#define ARGON2_T_COST 3
#define ARGON2_M_COST_KIB 65536
#define ARGON2_PARALLELISM 1
#define ARGON2_SALT_BYTES 16
#define ARGON2_HASH_BYTES 32
#define ARGON2ID_ENCODED_PREFIX "$argon2id$"

gchar *
einsora_credential_new_secret(const char *prefix)
{
    guint8 bytes[SECRET_BYTES];
    g_autofree gchar *encoded = NULL;
    gchar *secret;

    g_return_val_if_fail(prefix != NULL, NULL);

    if (RAND_bytes(bytes, sizeof bytes) != 1) {
        g_warning("the system's random generator failed; no secret was made");
        return NULL;
    }
    encoded = g_base64_encode(bytes, sizeof bytes);
    OPENSSL_cleanse(bytes, sizeof bytes);
    /* base64 to base64url, without the padding. */
    for (gchar *p = encoded; *p != '\0'; p++) {
        if (*p == '+')
            *p = '-';
        else if (*p == '/')
            *p = '_';
        else if (*p == '=')
            *p = '\0';
    }
    secret = g_strconcat(prefix, encoded, NULL);
    OPENSSL_cleanse(encoded, strlen(encoded));
    return secret;
}

gboolean
einsora_credential_looks_like_secret(const char *value, const char *prefix)
{
    g_return_val_if_fail(prefix != NULL, FALSE);
    return value != NULL && g_str_has_prefix(value, prefix) &&
           strnlen(value, EINSORA_CREDENTIAL_SECRET_MAX_BYTES + 1) <=
               EINSORA_CREDENTIAL_SECRET_MAX_BYTES;
}

gchar *
einsora_credential_sha256_hex(const char *secret)
{
    g_return_val_if_fail(secret != NULL, NULL);
    /* GLib's SHA-256 cannot fail, so neither can this. */
    return g_compute_checksum_for_string(G_CHECKSUM_SHA256, secret, -1);
}

gchar *
einsora_credential_display_prefix(const char *token)
{
    g_return_val_if_fail(token != NULL, NULL);
    return g_strndup(token, DISPLAY_PREFIX_CHARS);
}

gboolean
einsora_credential_equal(const char *a, const char *b)
{
    gsize len;

    if (a == NULL || b == NULL)
        return FALSE;
    len = strlen(a);
    if (strlen(b) != len)
        return FALSE;
    return CRYPTO_memcmp(a, b, len) == 0;
}

static gboolean
check_password(const char *password, GError **error)
{
    gsize len = password != NULL ? strlen(password) : 0;

    if (len == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the password is empty");
        return FALSE;
    }
    if (len > EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "the password is longer than %d bytes", EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES);
        return FALSE;
    }
    return TRUE;
}

gchar *
einsora_credential_hash_password(const char *password, GError **error)
{
    guint8 salt[ARGON2_SALT_BYTES];
    gsize encoded_len;
    g_autofree gchar *encoded = NULL;
    int rc;

    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (!check_password(password, error))
        return NULL;
    if (RAND_bytes(salt, sizeof salt) != 1) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "the system's random generator failed");
        return NULL;
    }
    encoded_len = argon2_encodedlen(ARGON2_T_COST, ARGON2_M_COST_KIB, ARGON2_PARALLELISM,
                                    sizeof salt, ARGON2_HASH_BYTES, Argon2_id);
    encoded = g_malloc0(encoded_len);
    rc = argon2id_hash_encoded(ARGON2_T_COST, ARGON2_M_COST_KIB, ARGON2_PARALLELISM, password,
                               strlen(password), salt, sizeof salt, ARGON2_HASH_BYTES, encoded,
                               encoded_len);
    if (rc != ARGON2_OK) {
        /* argon2's messages name parameters, never the password. */
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "hashing the password: argon2: %s",
                    argon2_error_message(rc));
        return NULL;
    }
    return g_steal_pointer(&encoded);
}

gboolean
einsora_credential_verify_password(const char *encoded, const char *password)
{
    gsize len;

    if (encoded == NULL || password == NULL || !g_str_has_prefix(encoded, ARGON2ID_ENCODED_PREFIX))
        return FALSE;
    len = strlen(password);
    if (len == 0 || len > EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES)
        return FALSE;
    return argon2id_verify(encoded, password, len) == ARGON2_OK;
}

/* The worker threads */

typedef enum {
    PASSWORD_HASH,
    PASSWORD_VERIFY,
} PasswordWork;

typedef struct {
    PasswordWork work;
    gchar *encoded; /* verify only */
    gchar *password;
} PasswordJob;

static void
password_job_wipe(PasswordJob *job)
{
    if (job->password != NULL) {
        OPENSSL_cleanse(job->password, strlen(job->password));
        g_clear_pointer(&job->password, g_free);
    }
}

static void
password_job_free(PasswordJob *job)
{
    g_free(job->encoded);
    password_job_wipe(job);
    g_free(job);
}

static PasswordJob *
password_job_new(PasswordWork work, const char *encoded, const char *password)
{
    PasswordJob *job = g_new0(PasswordJob, 1);

    job->work = work;
    job->encoded = g_strdup(encoded);
    job->password = g_strdup(password);
    return job;
}

/* One pool for the whole process: the bound is on memory and CPU, which
 * the process shares. GLib's shared GTask pool would grow a thread per
 * blocked job instead. */
typedef struct {
    GThreadPool *pool;
    guint max_running;
    gint admitted; /* running or waiting; atomic */
    gint running;  /* atomic */
    gint peak_running;
    GMutex hook_lock;
    EinsoraCredentialWorkHook hook;
    gpointer hook_data;
} PasswordPool;

static PasswordPool password_pool;

static void password_pool_run(gpointer data, gpointer user_data);

static PasswordPool *
password_pool_get(void)
{
    static gsize initialized = 0;

    if (g_once_init_enter(&initialized)) {
        password_pool.max_running = MAX(1, g_get_num_processors() / 2);
        /* Not exclusive: idle threads go back to GLib's spare ones. */
        password_pool.pool = g_thread_pool_new(password_pool_run, NULL,
                                               (gint)password_pool.max_running, FALSE, NULL);
        g_once_init_leave(&initialized, 1);
    }
    return &password_pool;
}

static void
note_running(PasswordPool *pool)
{
    gint running = g_atomic_int_add(&pool->running, 1) + 1;
    gint peak = g_atomic_int_get(&pool->peak_running);

    while (running > peak && !g_atomic_int_compare_and_exchange(&pool->peak_running, peak, running))
        peak = g_atomic_int_get(&pool->peak_running);
}

static void
call_work_hook(PasswordPool *pool)
{
    EinsoraCredentialWorkHook hook;
    gpointer hook_data;

    g_mutex_lock(&pool->hook_lock);
    hook = pool->hook;
    hook_data = pool->hook_data;
    g_mutex_unlock(&pool->hook_lock);
    if (hook != NULL)
        hook(hook_data);
}

static void
password_pool_run(gpointer data, gpointer user_data)
{
    g_autoptr(GTask) task = data;
    PasswordPool *pool = &password_pool;
    PasswordJob *job = g_task_get_task_data(task);
    GError *error = NULL;
    gchar *encoded = NULL;

    note_running(pool);
    /* A caller that has gone away (a client that disconnected) costs no
     * argon2 run. */
    if (!g_cancellable_set_error_if_cancelled(g_task_get_cancellable(task), &error)) {
        call_work_hook(pool);
        if (job->work == PASSWORD_HASH)
            encoded = einsora_credential_hash_password(job->password, &error);
        else if (!einsora_credential_verify_password(job->encoded, job->password))
            g_set_error_literal(&error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                                "wrong password");
    }
    password_job_wipe(job);
    /* Counted out before the answer goes back, so that a caller who
     * starts another job from its callback finds the room. */
    g_atomic_int_add(&pool->running, -1);
    g_atomic_int_add(&pool->admitted, -1);
    if (error != NULL)
        g_task_return_error(task, error);
    else if (job->work == PASSWORD_HASH)
        g_task_return_pointer(task, encoded, g_free);
    else
        g_task_return_boolean(task, TRUE);
}

/* Queues @task, or fails it at once when the queue is full. */
static void
password_pool_push(GTask *task)
{
    PasswordPool *pool = password_pool_get();
    g_autoptr(GError) error = NULL;
    guint limit = pool->max_running + EINSORA_CREDENTIAL_PASSWORD_QUEUE_MAX;

    if ((guint)g_atomic_int_add(&pool->admitted, 1) >= limit) {
        g_atomic_int_add(&pool->admitted, -1);
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_BUSY,
                                "too many password checks at once; try again shortly");
        return;
    }
    /* Fails only when no new thread could be made; the job stays queued
     * for the threads there are. */
    if (!g_thread_pool_push(pool->pool, g_object_ref(task), &error))
        g_warning("starting a password thread: %s", error->message);
}

void
einsora_credential_get_pool_stats(EinsoraCredentialPoolStats *stats)
{
    PasswordPool *pool = password_pool_get();
    guint admitted = (guint)g_atomic_int_get(&pool->admitted);

    g_return_if_fail(stats != NULL);

    stats->max_running = pool->max_running;
    stats->max_waiting = EINSORA_CREDENTIAL_PASSWORD_QUEUE_MAX;
    stats->running = (guint)g_atomic_int_get(&pool->running);
    stats->waiting = admitted > stats->running ? admitted - stats->running : 0;
    stats->peak_running = (guint)g_atomic_int_get(&pool->peak_running);
}

void
einsora_credential_set_work_hook(EinsoraCredentialWorkHook hook, gpointer user_data)
{
    PasswordPool *pool = password_pool_get();

    g_mutex_lock(&pool->hook_lock);
    pool->hook = hook;
    pool->hook_data = user_data;
    g_mutex_unlock(&pool->hook_lock);
}

void
einsora_credential_hash_password_async(const char *password, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);

    g_task_set_source_tag(task, einsora_credential_hash_password_async);
    g_task_set_task_data(task, password_job_new(PASSWORD_HASH, NULL, password),
                         (GDestroyNotify)password_job_free);
    password_pool_push(task);
}

gchar *
einsora_credential_hash_password_finish(GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, NULL), NULL);
    g_return_val_if_fail(g_async_result_is_tagged(result, einsora_credential_hash_password_async),
                         NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

void
einsora_credential_verify_password_async(const char *encoded, const char *password,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);

    g_task_set_source_tag(task, einsora_credential_verify_password_async);
    g_task_set_task_data(task, password_job_new(PASSWORD_VERIFY, encoded, password),
                         (GDestroyNotify)password_job_free);
    password_pool_push(task);
}

gboolean
einsora_credential_verify_password_finish(GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, NULL), FALSE);
    g_return_val_if_fail(g_async_result_is_tagged(result, einsora_credential_verify_password_async),
                         FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}
