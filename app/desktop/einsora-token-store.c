#define G_LOG_DOMAIN "einsora-app"

#include "einsora-token-store.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsecret/secret.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRETS_BUS_NAME "org.freedesktop.secrets"
#define BUS_CALL_TIMEOUT_MS 5000
/* A token file is a few hundred bytes; anything this big is not one. */
#define MAX_FILE_SIZE (1024 * 1024)

static const SecretSchema token_schema = {
    "dev.einsora.Einsora.Token",
    SECRET_SCHEMA_NONE,
    {
        {"server", SECRET_SCHEMA_ATTRIBUTE_STRING},
        {NULL, 0},
    },
    0,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* One read-modify-write of the file at a time, whichever store asks. */
static GMutex file_lock;

struct _EinsoraTokenStore {
    GObject parent_instance;
    gchar *path;
    const char *backend; /* one of the two names, or NULL until chosen */
    gboolean forced;     /* by EINSORA_TOKEN_STORE: no falling back */
};

G_DEFINE_FINAL_TYPE(EinsoraTokenStore, einsora_token_store, G_TYPE_OBJECT)
/* The macro stringifies its first argument: keep the formatter away. */
/* clang-format off */
G_DEFINE_QUARK(einsora-token-store-error-quark, einsora_token_store_error)
/* clang-format on */

enum { PROP_0, PROP_BACKEND, N_PROPS };
static GParamSpec *props[N_PROPS];

typedef enum { OP_SAVE, OP_LOOKUP, OP_CLEAR } OpKind;

typedef struct {
    OpKind kind;
    gchar *server; /* the normalized URL: the key in either backend */
    gchar *token;  /* to save */
} Op;

static void
wipe(gchar *secret)
{
    if (secret != NULL)
        explicit_bzero(secret, strlen(secret));
}

static void
op_free(Op *op)
{
    wipe(op->token);
    g_free(op->token);
    g_free(op->server);
    g_free(op);
}

static void
einsora_token_store_finalize(GObject *object)
{
    EinsoraTokenStore *self = EINSORA_TOKEN_STORE(object);

    g_free(self->path);
    G_OBJECT_CLASS(einsora_token_store_parent_class)->finalize(object);
}

static void
einsora_token_store_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    EinsoraTokenStore *self = EINSORA_TOKEN_STORE(object);

    switch (prop_id) {
    case PROP_BACKEND:
        g_value_set_string(value, self->backend);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_token_store_class_init(EinsoraTokenStoreClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->finalize = einsora_token_store_finalize;
    object_class->get_property = einsora_token_store_get_property;
    props[PROP_BACKEND] =
        g_param_spec_string("backend", NULL, NULL, NULL,
                            G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(object_class, N_PROPS, props);
}

static void
einsora_token_store_init(EinsoraTokenStore *self)
{
    const char *forced = g_getenv("EINSORA_TOKEN_STORE");

    self->path = g_build_filename(g_get_user_config_dir(), "einsora", "tokens.json", NULL);
    if (g_strcmp0(forced, EINSORA_TOKEN_STORE_FILE) == 0) {
        self->backend = EINSORA_TOKEN_STORE_FILE;
        self->forced = TRUE;
    } else if (g_strcmp0(forced, EINSORA_TOKEN_STORE_SECRET_SERVICE) == 0) {
        self->backend = EINSORA_TOKEN_STORE_SECRET_SERVICE;
        self->forced = TRUE;
    }
}

EinsoraTokenStore *
einsora_token_store_new(void)
{
    return g_object_new(EINSORA_TYPE_TOKEN_STORE, NULL);
}

const char *
einsora_token_store_get_backend(EinsoraTokenStore *self)
{
    g_return_val_if_fail(EINSORA_IS_TOKEN_STORE(self), NULL);
    return self->backend;
}

const char *
einsora_token_store_get_path(EinsoraTokenStore *self)
{
    g_return_val_if_fail(EINSORA_IS_TOKEN_STORE(self), NULL);
    return self->path;
}

static void
set_backend(EinsoraTokenStore *self, const char *backend)
{
    if (self->backend == backend)
        return;
    self->backend = backend;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BACKEND]);
}

/* The key a server's token is kept under: scheme and host in lower case,
 * a default port left out, no trailing slash, so that the ways a person
 * writes one URL find one token. */
static gchar *
server_key(const char *server, GError **error)
{
    g_autoptr(GUri) uri = server != NULL ? g_uri_parse(server, G_URI_FLAGS_NONE, NULL) : NULL;
    const char *host = uri != NULL ? g_uri_get_host(uri) : NULL;
    g_autofree gchar *scheme = NULL, *lower_host = NULL, *path = NULL;
    g_autoptr(GString) key = NULL;
    int port;

    if (host == NULL || *host == '\0') {
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_INVALID,
                    _("“%s” is not a server’s address"), server != NULL ? server : "");
        return NULL;
    }
    scheme = g_ascii_strdown(g_uri_get_scheme(uri), -1);
    lower_host = g_ascii_strdown(host, -1);
    port = g_uri_get_port(uri);
    path = g_strdup(g_uri_get_path(uri));
    while (*path != '\0' && path[strlen(path) - 1] == '/')
        path[strlen(path) - 1] = '\0';
    key = g_string_new(NULL);
    g_string_append_printf(key, strchr(lower_host, ':') != NULL ? "%s://[%s]" : "%s://%s", scheme,
                           lower_host);
    if (port != -1 && !(port == 80 && g_str_equal(scheme, "http")) &&
        !(port == 443 && g_str_equal(scheme, "https")))
        g_string_append_printf(key, ":%d", port);
    g_string_append(key, path);
    return g_string_free(g_steal_pointer(&key), FALSE);
}

static gboolean
token_is_valid(const char *token)
{
    if (token == NULL || *token == '\0')
        return FALSE;
    for (const char *c = token; *c != '\0'; c++)
        if (g_ascii_isspace(*c) || g_ascii_iscntrl(*c))
            return FALSE;
    return TRUE;
}

/* --- the file backend: runs in a GTask thread, under file_lock ---------- */

/* The file's tokens (server -> token), an empty object when there is no
 * file. A file that others could read, or that isn't the user's own, is
 * refused rather than trusted or repaired: its tokens may have leaked. */
static JsonObject *
read_tokens(const char *path, GError **error)
{
    int fd = g_open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    struct stat st;
    g_autofree gchar *data = NULL;
    gsize done = 0;
    g_autoptr(JsonParser) parser = NULL;
    JsonNode *root, *tokens, *token;
    JsonObjectIter iter;
    const char *server;
    g_autoptr(JsonObject) result = NULL;

    if (fd < 0 && errno == ENOENT)
        return json_object_new();
    if (fd < 0) {
        int saved = errno;
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR,
                    saved == ELOOP ? EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE
                                   : EINSORA_TOKEN_STORE_ERROR_FAILED,
                    saved == ELOOP ? _("%s is a symbolic link; Einsora keeps tokens only in a file "
                                       "of its own")
                                   : _("Can’t read %s: %s"),
                    path, g_strerror(saved));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
        close(fd);
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE,
                    _("%s is not a file of this user’s; Einsora won’t read tokens from it"), path);
        return NULL;
    }
    if ((st.st_mode & 077) != 0) {
        close(fd);
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE,
                    _("%s can be read by other users (its mode is %04o, not 0600), so Einsora "
                      "won’t use the tokens in it. If nobody else could have read them, make it "
                      "private with “chmod 600 %s”; else make new tokens and delete the file."),
                    path, (unsigned)(st.st_mode & 07777), path);
        return NULL;
    }
    if (st.st_size > MAX_FILE_SIZE) {
        close(fd);
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_BAD_FILE,
                    _("%s is too large to be Einsora’s token file"), path);
        return NULL;
    }
    data = g_malloc0((gsize)st.st_size + 1);
    while (done < (gsize)st.st_size) {
        gssize n = read(fd, data + done, (gsize)st.st_size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (gsize)n;
    }
    close(fd);
    parser = json_parser_new();
    /* The parser's own message could quote the file: the file's name only. */
    if (!json_parser_load_from_data(parser, data, (gssize)done, NULL) ||
        (root = json_parser_get_root(parser)) == NULL || !JSON_NODE_HOLDS_OBJECT(root) ||
        (tokens = json_object_get_member(json_node_get_object(root), "tokens")) == NULL ||
        !JSON_NODE_HOLDS_OBJECT(tokens)) {
        wipe(data);
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_BAD_FILE,
                    _("%s is not a token file Einsora can read"), path);
        return NULL;
    }
    wipe(data);
    result = json_object_new();
    json_object_iter_init(&iter, json_node_get_object(tokens));
    while (json_object_iter_next(&iter, &server, &token))
        if (json_node_get_value_type(token) == G_TYPE_STRING)
            json_object_set_string_member(result, server, json_node_get_string(token));
    return g_steal_pointer(&result);
}

/* The whole file, written to a new 0600 file renamed over the old one. */
static gboolean
write_tokens(const char *path, JsonObject *tokens, GError **error)
{
    g_autofree gchar *dir = g_path_get_dirname(path);
    g_autoptr(JsonNode) root = json_node_new(JSON_NODE_OBJECT);
    g_autoptr(JsonObject) object = json_object_new();
    g_autoptr(JsonGenerator) generator = json_generator_new();
    g_autofree gchar *data = NULL;
    gsize length = 0;
    struct stat st;
    gboolean written;

    if (g_mkdir_with_parents(dir, 0700) != 0 || g_lstat(dir, &st) != 0) {
        int saved = errno;
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_FAILED,
                    _("Can’t create %s: %s"), dir, g_strerror(saved));
        return FALSE;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE,
                    _("%s is not a directory of this user’s; Einsora won’t keep tokens in it"),
                    dir);
        return FALSE;
    }
    /* Einsora's own directory: nobody else has any business in it. */
    if ((st.st_mode & 077) != 0 && g_chmod(dir, 0700) != 0) {
        int saved = errno;
        g_set_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_FAILED,
                    _("Can’t make %s private: %s"), dir, g_strerror(saved));
        return FALSE;
    }
    json_object_set_object_member(object, "tokens", json_object_ref(tokens));
    json_node_take_object(root, g_steal_pointer(&object));
    json_generator_set_root(generator, root);
    json_generator_set_pretty(generator, TRUE);
    data = json_generator_to_data(generator, &length);
    written = g_file_set_contents_full(path, data, (gssize)length, G_FILE_SET_CONTENTS_CONSISTENT,
                                       0600, error);
    wipe(data);
    if (!written)
        g_prefix_error(error, _("Can’t keep the token: "));
    return written;
}

static void
file_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    EinsoraTokenStore *self = source;
    Op *op = task_data;
    g_autoptr(GMutexLocker) locker G_GNUC_UNUSED = g_mutex_locker_new(&file_lock);
    g_autoptr(JsonObject) tokens = NULL;
    GError *error = NULL;

    tokens = read_tokens(self->path, &error);
    if (tokens == NULL) {
        g_task_return_error(task, error);
        return;
    }
    switch (op->kind) {
    case OP_LOOKUP:
        g_task_return_pointer(
            task, g_strdup(json_object_get_string_member_with_default(tokens, op->server, NULL)),
            g_free);
        return;
    case OP_SAVE:
        json_object_set_string_member(tokens, op->server, op->token);
        break;
    case OP_CLEAR:
        if (!json_object_has_member(tokens, op->server)) {
            g_task_return_boolean(task, TRUE);
            return;
        }
        json_object_remove_member(tokens, op->server);
        break;
    }
    if (!write_tokens(self->path, tokens, &error)) {
        g_task_return_error(task, error);
        return;
    }
    g_debug("%s the token for %s in %s", op->kind == OP_SAVE ? "kept" : "removed", op->server,
            self->path);
    g_task_return_boolean(task, TRUE);
}

static void
run_file(GTask *task)
{
    g_task_run_in_thread(task, file_thread);
    g_object_unref(task);
}

/* --- the Secret Service ------------------------------------------------- */

/* Errors that say the Secret Service isn't there (any more), as opposed
 * to one that answered no (a locked keyring, a dismissed prompt). */
static gboolean
means_unavailable(const GError *error)
{
    if (error->domain == G_DBUS_ERROR)
        return error->code == G_DBUS_ERROR_SERVICE_UNKNOWN ||
               error->code == G_DBUS_ERROR_NAME_HAS_NO_OWNER ||
               error->code == G_DBUS_ERROR_NO_REPLY || error->code == G_DBUS_ERROR_TIMEOUT ||
               error->code == G_DBUS_ERROR_TIMED_OUT || error->code == G_DBUS_ERROR_DISCONNECTED ||
               error->code == G_DBUS_ERROR_NO_SERVER ||
               error->code == G_DBUS_ERROR_UNKNOWN_METHOD ||
               error->code == G_DBUS_ERROR_SPAWN_EXEC_FAILED ||
               error->code == G_DBUS_ERROR_SPAWN_CHILD_EXITED ||
               error->code == G_DBUS_ERROR_SPAWN_CHILD_SIGNALED ||
               error->code == G_DBUS_ERROR_SPAWN_FAILED ||
               error->code == G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND;
    if (error->domain == G_IO_ERROR)
        return error->code == G_IO_ERROR_CLOSED || error->code == G_IO_ERROR_NOT_FOUND ||
               error->code == G_IO_ERROR_TIMED_OUT;
    return FALSE;
}

static void
fall_back_to_file(GTask *task, const char *why)
{
    EinsoraTokenStore *self = g_task_get_source_object(task);

    g_message("no Secret Service (%s): API tokens are kept in %s, readable only by this user", why,
              self->path);
    set_backend(self, EINSORA_TOKEN_STORE_FILE);
    run_file(task);
}

static void
on_secret_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    EinsoraTokenStore *self = g_task_get_source_object(task);
    Op *op = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    gchar *token = NULL;
    gboolean ok = FALSE;

    if (op->kind == OP_LOOKUP)
        ok = (token = secret_password_lookup_finish(result, &error)) != NULL || error == NULL;
    else if (op->kind == OP_SAVE)
        ok = secret_password_store_finish(result, &error);
    else
        /* FALSE without an error: there was nothing to clear. */
        ok = secret_password_clear_finish(result, &error) || error == NULL;
    if (!ok && !self->forced && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) &&
        means_unavailable(error)) {
        fall_back_to_file(task, error->message);
        return;
    }
    if (!ok && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_task_return_error(task, g_steal_pointer(&error));
    } else if (!ok) {
        g_task_return_new_error(task, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_FAILED,
                                op->kind == OP_LOOKUP ? _("The Secret Service couldn’t give the "
                                                          "token for %s: %s")
                                : op->kind == OP_SAVE ? _("The Secret Service couldn’t keep the "
                                                          "token for %s: %s")
                                                      : _("The Secret Service couldn’t forget the "
                                                          "token for %s: %s"),
                                op->server, error->message);
    } else if (op->kind == OP_LOOKUP) {
        g_task_return_pointer(task, token, (GDestroyNotify)secret_password_free);
    } else {
        g_debug("%s the token for %s in the Secret Service",
                op->kind == OP_SAVE ? "kept" : "removed", op->server);
        g_task_return_boolean(task, TRUE);
    }
    g_object_unref(task);
}

static void
run_secret_service(GTask *task)
{
    Op *op = g_task_get_task_data(task);
    GCancellable *cancellable = g_task_get_cancellable(task);
    g_autofree gchar *label = NULL;

    switch (op->kind) {
    case OP_SAVE:
        label = g_strdup_printf(_("Einsora API token for %s"), op->server);
        secret_password_store(&token_schema, SECRET_COLLECTION_DEFAULT, label, op->token,
                              cancellable, on_secret_done, task, "server", op->server, NULL);
        break;
    case OP_LOOKUP:
        secret_password_lookup(&token_schema, cancellable, on_secret_done, task, "server",
                               op->server, NULL);
        break;
    case OP_CLEAR:
        secret_password_clear(&token_schema, cancellable, on_secret_done, task, "server",
                              op->server, NULL);
        break;
    }
}

static void
run(GTask *task)
{
    EinsoraTokenStore *self = g_task_get_source_object(task);

    if (g_strcmp0(self->backend, EINSORA_TOKEN_STORE_SECRET_SERVICE) == 0)
        run_secret_service(task);
    else
        run_file(task);
}

/* --- choosing: is a Secret Service on the session bus, or can it start? -- */

/* A probe that was cancelled decides nothing; any other failure means
 * there is no Secret Service to use. */
static void
probe_failed(GTask *task, GError *error)
{
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_task_return_error(task, g_error_copy(error));
        g_object_unref(task);
        return;
    }
    fall_back_to_file(task, error->message);
}

static void
on_activatable(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    EinsoraTokenStore *self = g_task_get_source_object(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) reply =
        g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);
    g_autofree const char **names = NULL;

    if (reply != NULL)
        g_variant_get(reply, "(^a&s)", &names);
    if (names != NULL && g_strv_contains(names, SECRETS_BUS_NAME)) {
        set_backend(self, EINSORA_TOKEN_STORE_SECRET_SERVICE);
        run(task);
        return;
    }
    if (error != NULL)
        probe_failed(task, error);
    else
        fall_back_to_file(task, "nothing owns or activates " SECRETS_BUS_NAME);
}

static void
on_has_owner(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    EinsoraTokenStore *self = g_task_get_source_object(task);
    GDBusConnection *bus = G_DBUS_CONNECTION(source);
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) reply = g_dbus_connection_call_finish(bus, result, &error);
    gboolean has_owner = FALSE;

    if (reply == NULL) {
        probe_failed(task, error);
        return;
    }
    g_variant_get(reply, "(b)", &has_owner);
    if (has_owner) {
        set_backend(self, EINSORA_TOKEN_STORE_SECRET_SERVICE);
        run(task);
        return;
    }
    /* Not running: one the bus can start (gnome-keyring, KeePassXC) will
     * do, as libsecret starts it. */
    g_dbus_connection_call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus", "ListActivatableNames", NULL,
                           G_VARIANT_TYPE("(as)"), G_DBUS_CALL_FLAGS_NONE, BUS_CALL_TIMEOUT_MS,
                           g_task_get_cancellable(task), on_activatable, task);
}

static void
on_bus(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GDBusConnection) bus = g_bus_get_finish(result, &error);

    if (bus == NULL) {
        probe_failed(task, error);
        return;
    }
    g_dbus_connection_call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus", "NameHasOwner",
                           g_variant_new("(s)", SECRETS_BUS_NAME), G_VARIANT_TYPE("(b)"),
                           G_DBUS_CALL_FLAGS_NONE, BUS_CALL_TIMEOUT_MS,
                           g_task_get_cancellable(task), on_has_owner, task);
}

/* Takes @op; the task goes to whichever backend is (or gets) chosen. */
static void
start(EinsoraTokenStore *self, Op *op, gpointer source_tag, GCancellable *cancellable,
      GAsyncReadyCallback callback, gpointer user_data, const char *server)
{
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    GError *error = NULL;

    g_task_set_source_tag(task, source_tag);
    g_task_set_task_data(task, op, (GDestroyNotify)op_free);
    op->server = server_key(server, &error);
    if (op->server == NULL) {
        g_task_return_error(task, error);
        g_object_unref(task);
        return;
    }
    if (op->kind == OP_SAVE && !token_is_valid(op->token)) {
        g_task_return_new_error(task, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_INVALID,
                                _("An API token is one word, without spaces"));
        g_object_unref(task);
        return;
    }
    if (self->backend != NULL)
        run(task);
    else
        g_bus_get(G_BUS_TYPE_SESSION, cancellable, on_bus, task);
}

void
einsora_token_store_save_async(EinsoraTokenStore *self, const char *server, const char *token,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data)
{
    Op *op = g_new0(Op, 1);

    g_return_if_fail(EINSORA_IS_TOKEN_STORE(self));
    op->kind = OP_SAVE;
    op->token = g_strdup(token);
    start(self, op, einsora_token_store_save_async, cancellable, callback, user_data, server);
}

gboolean
einsora_token_store_save_finish(EinsoraTokenStore *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}

void
einsora_token_store_lookup_async(EinsoraTokenStore *self, const char *server,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data)
{
    Op *op = g_new0(Op, 1);

    g_return_if_fail(EINSORA_IS_TOKEN_STORE(self));
    op->kind = OP_LOOKUP;
    start(self, op, einsora_token_store_lookup_async, cancellable, callback, user_data, server);
}

gchar *
einsora_token_store_lookup_finish(EinsoraTokenStore *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

void
einsora_token_store_clear_async(EinsoraTokenStore *self, const char *server,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data)
{
    Op *op = g_new0(Op, 1);

    g_return_if_fail(EINSORA_IS_TOKEN_STORE(self));
    op->kind = OP_CLEAR;
    start(self, op, einsora_token_store_clear_async, cancellable, callback, user_data, server);
}

gboolean
einsora_token_store_clear_finish(EinsoraTokenStore *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}
