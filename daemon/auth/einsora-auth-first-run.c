/* Solo's first run: the local tenant, its owner and an API token whose
 * secret goes to a file only the daemon's user can read. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-uuid.h"

#define TOKEN_FILE_MODE 0600

static gboolean
first_run_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    AccountContext *ctx = user_data;
    gint64 users = 0;

    /* Checked again under the write lock, in case another process got
     * here first. */
    if (!einsora_store_count_users(store, &users, error))
        return FALSE;
    if (users > 0) {
        ctx->users_exist = TRUE;
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "accounts were created meanwhile");
        return FALSE;
    }
    if (!einsora_auth_insert_account_tx(store, ctx, error))
        return FALSE;
    for (guint i = 0; ctx->gpu_classes != NULL && ctx->gpu_classes[i] != NULL; i++) {
        if (!einsora_store_set_quota(store, ctx->tenant->id, ctx->gpu_classes[i],
                                     ctx->gpus_per_class, error))
            return FALSE;
    }
    return einsora_store_insert_api_token(store, ctx->token, error);
}

static gboolean
write_all(int fd, const char *data, gsize len)
{
    while (len > 0) {
        ssize_t written = write(fd, data, len);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return FALSE;
        data += written;
        len -= (gsize)written;
    }
    return TRUE;
}

/* Creates @path, refusing to replace anything (a symbolic link included),
 * and makes the secret durable before the account that honours it exists.
 * FALSE with *exists set when the file was already there. */
static gboolean
write_token_file(const char *path, const char *secret, gboolean *exists, GError **error)
{
    g_autofree gchar *contents = g_strconcat(secret, "\n", NULL);
    g_autofree gchar *dir = g_path_get_dirname(path);
    int fd;
    int dir_fd;
    gboolean ok;
    int saved_errno;

    *exists = FALSE;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, TOKEN_FILE_MODE);
    if (fd < 0) {
        saved_errno = errno;
        OPENSSL_cleanse(contents, strlen(contents));
        *exists = saved_errno == EEXIST;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "can't create %s: %s",
                    path, g_strerror(saved_errno));
        return FALSE;
    }
    /* The umask may have removed bits; say exactly what is meant. */
    ok = fchmod(fd, TOKEN_FILE_MODE) == 0 && write_all(fd, contents, strlen(contents)) &&
         fsync(fd) == 0;
    saved_errno = errno;
    OPENSSL_cleanse(contents, strlen(contents));
    if (close(fd) != 0 && ok) {
        ok = FALSE;
        saved_errno = errno;
    }
    if (!ok) {
        unlink(path);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "can't write %s: %s",
                    path, g_strerror(saved_errno));
        return FALSE;
    }
    /* So that the file's name survives a crash too. */
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        fsync(dir_fd);
        close(dir_fd);
    }
    return TRUE;
}

gboolean
einsora_auth_ensure_first_run(EinsoraAuth *self, const char *data_dir,
                              const char *const *gpu_classes, gint64 gpus_per_class,
                              EinsoraUser **owner, GError **error)
{
    g_autofree gchar *path = NULL;
    g_autoptr(Secret) secret = NULL;
    g_autofree gchar *tenant_id = NULL;
    g_autofree gchar *created_at = NULL;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(EinsoraApiToken) token = NULL;
    g_autoptr(GError) local_error = NULL;
    AccountContext ctx = {0};
    gboolean exists = FALSE;
    gint64 users = 0;
    gint64 now_us;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    g_return_val_if_fail(data_dir != NULL, FALSE);
    g_return_val_if_fail(gpus_per_class >= 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (owner != NULL)
        *owner = NULL;
    if (!einsora_store_count_users(self->store, &users, error))
        return FALSE;
    if (users > 0)
        return TRUE;

    path = g_build_filename(data_dir, EINSORA_AUTH_TOKEN_FILE, NULL);
    if (!einsora_auth_new_secret(EINSORA_CREDENTIAL_TOKEN_PREFIX, &secret, error))
        return FALSE;
    if (!write_token_file(path, secret, &exists, &local_error)) {
        if (!exists) {
            g_propagate_error(error, g_steal_pointer(&local_error));
            return FALSE;
        }
        /* Someone's token (or a stale one): never replaced behind their
         * back. */
        g_warning("the store has no accounts, but %s exists; leaving it alone. Remove it and "
                  "start again to create the local account and its API token",
                  path);
        return TRUE;
    }

    now_us = self->now(self->now_data);
    tenant_id = einsora_uuid_v7_new(now_us / 1000);
    created_at = einsora_timestamp_format(now_us);
    tenant = einsora_tenant_new(tenant_id, EINSORA_AUTH_LOCAL_TENANT, TRUE, created_at);
    user = einsora_auth_user_new(tenant_id, EINSORA_AUTH_LOCAL_OWNER_EMAIL, NULL,
                                 EINSORA_USER_ROLE_OWNER, now_us);
    /* The machine's owner runs its Lab, if it becomes one. */
    user->admin = TRUE;
    token = einsora_api_token_new();
    token->id = einsora_uuid_v7_new(now_us / 1000);
    token->tenant_id = g_strdup(tenant_id);
    token->user_id = g_strdup(user->id);
    token->name = g_strdup(EINSORA_AUTH_LOCAL_TOKEN_NAME);
    token->prefix = einsora_credential_display_prefix(secret);
    token->token_sha256 = einsora_credential_sha256_hex(secret);
    token->created_at = g_strdup(created_at);

    ctx.tenant = tenant;
    ctx.user = user;
    ctx.token = token;
    ctx.gpu_classes = gpu_classes;
    ctx.gpus_per_class = gpus_per_class;
    if (!einsora_store_in_transaction(self->store, first_run_tx, &ctx, &local_error)) {
        /* The file holds a token no account honours. */
        unlink(path);
        if (ctx.users_exist)
            return TRUE;
        g_propagate_prefixed_error(error, g_steal_pointer(&local_error),
                                   "creating the local account: ");
        return FALSE;
    }
    if (owner != NULL)
        *owner = g_steal_pointer(&user);
    return TRUE;
}
