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

typedef struct {
    gchar *encoded; /* verify only */
    gchar *password;
} PasswordJob;

static void
password_job_free(PasswordJob *job)
{
    g_free(job->encoded);
    if (job->password != NULL) {
        OPENSSL_cleanse(job->password, strlen(job->password));
        g_free(job->password);
    }
    g_free(job);
}

static PasswordJob *
password_job_new(const char *encoded, const char *password)
{
    PasswordJob *job = g_new0(PasswordJob, 1);

    job->encoded = g_strdup(encoded);
    job->password = g_strdup(password);
    return job;
}

static void
hash_password_thread(GTask *task, gpointer source_object, gpointer task_data,
                     GCancellable *cancellable)
{
    PasswordJob *job = task_data;
    GError *error = NULL;
    gchar *encoded;

    if (g_task_return_error_if_cancelled(task))
        return;
    encoded = einsora_credential_hash_password(job->password, &error);
    if (encoded == NULL)
        g_task_return_error(task, error);
    else
        g_task_return_pointer(task, encoded, g_free);
}

void
einsora_credential_hash_password_async(const char *password, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);

    g_task_set_source_tag(task, einsora_credential_hash_password_async);
    g_task_set_task_data(task, password_job_new(NULL, password), (GDestroyNotify)password_job_free);
    g_task_run_in_thread(task, hash_password_thread);
}

gchar *
einsora_credential_hash_password_finish(GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, NULL), NULL);
    g_return_val_if_fail(g_async_result_is_tagged(result, einsora_credential_hash_password_async),
                         NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void
verify_password_thread(GTask *task, gpointer source_object, gpointer task_data,
                       GCancellable *cancellable)
{
    PasswordJob *job = task_data;

    if (g_task_return_error_if_cancelled(task))
        return;
    if (einsora_credential_verify_password(job->encoded, job->password))
        g_task_return_boolean(task, TRUE);
    else
        g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                                "wrong password");
}

void
einsora_credential_verify_password_async(const char *encoded, const char *password,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);

    g_task_set_source_tag(task, einsora_credential_verify_password_async);
    g_task_set_task_data(task, password_job_new(encoded, password),
                         (GDestroyNotify)password_job_free);
    g_task_run_in_thread(task, verify_password_thread);
}

gboolean
einsora_credential_verify_password_finish(GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, NULL), FALSE);
    g_return_val_if_fail(g_async_result_is_tagged(result, einsora_credential_verify_password_async),
                         FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}
