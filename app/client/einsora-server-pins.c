#define G_LOG_DOMAIN "einsora-client"

#include "einsora-server-pins.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n-lib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Far more than any person's servers. */
#define MAX_PINS_FILE_BYTES (1024 * 1024)

#include "einsora-pinned-database.h"

struct _EinsoraServerPins {
    gchar *path;
    GHashTable *pins; /* origin -> fingerprint */
};

gchar *
einsora_server_origin(const char *url)
{
    g_autoptr(GUri) uri = url != NULL ? g_uri_parse(url, G_URI_FLAGS_NONE, NULL) : NULL;
    g_autofree gchar *host = NULL;
    const char *scheme;
    gint port;

    if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0')
        return NULL;
    scheme = g_uri_get_scheme(uri);
    if (g_ascii_strcasecmp(scheme, "https") != 0 && g_ascii_strcasecmp(scheme, "http") != 0)
        return NULL;
    port = g_uri_get_port(uri);
    if (port == -1)
        port = g_ascii_strcasecmp(scheme, "https") == 0 ? 443 : 80;
    host = g_ascii_strdown(g_uri_get_host(uri), -1);
    /* An IPv6 literal keeps its brackets. */
    return g_strdup_printf(strchr(host, ':') != NULL ? "%s://[%s]:%d" : "%s://%s:%d",
                           g_ascii_strcasecmp(scheme, "https") == 0 ? "https" : "http", host, port);
}

void
einsora_server_pins_free(EinsoraServerPins *self)
{
    if (self == NULL)
        return;
    g_free(self->path);
    g_hash_table_unref(self->pins);
    g_free(self);
}

static gboolean
bad_file(const char *path, const char *why, GError **error)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, _("%s: %s"), path, why);
    return FALSE;
}

static gboolean
read_pins(EinsoraServerPins *self, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) local_error = NULL;
    JsonNode *root;
    JsonObject *servers;
    g_autoptr(GList) members = NULL;
    struct stat st;
    g_autoptr(GString) contents = g_string_new(NULL);
    char buffer[8192];
    ssize_t got;
    int fd;

    /* What is checked is what is read: the open file itself, and never
     * through a link someone else may point elsewhere. */
    fd = open(self->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? TRUE : bad_file(self->path, g_strerror(errno), error);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bad_file(self->path, _("it is not a regular file"), error);
    }
    /* Whoever can write it decides whom this user trusts. */
    if (st.st_uid != getuid() || (st.st_mode & 022) != 0) {
        close(fd);
        return bad_file(self->path,
                        _("it must be yours and writable by you alone (chmod 600) to be trusted"),
                        error);
    }
    while ((got = read(fd, buffer, sizeof buffer)) > 0 && contents->len <= MAX_PINS_FILE_BYTES)
        g_string_append_len(contents, buffer, got);
    close(fd);
    if (got < 0 || contents->len > MAX_PINS_FILE_BYTES)
        return bad_file(self->path, got < 0 ? g_strerror(errno) : _("it is too large"), error);
    if (!json_parser_load_from_data(parser, contents->str, (gssize)contents->len, &local_error))
        return bad_file(self->path, local_error->message, error);
    root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root) ||
        !json_object_has_member(json_node_get_object(root), "servers") ||
        !JSON_NODE_HOLDS_OBJECT(json_object_get_member(json_node_get_object(root), "servers")))
        return bad_file(self->path, _("it has no “servers” object"), error);
    servers = json_object_get_object_member(json_node_get_object(root), "servers");
    members = json_object_get_members(servers);
    for (GList *l = members; l != NULL; l = l->next) {
        JsonNode *entry = json_object_get_member(servers, l->data);
        const char *text = NULL;
        g_autofree gchar *origin = einsora_server_origin(l->data);
        g_autofree gchar *fingerprint = NULL;

        if (JSON_NODE_HOLDS_OBJECT(entry))
            text = json_object_get_string_member_with_default(json_node_get_object(entry),
                                                              "fingerprint", NULL);
        fingerprint = einsora_fingerprint_normalize(text);
        if (origin == NULL || fingerprint == NULL)
            return bad_file(self->path, _("a server in it has no fingerprint like SHA256:…"),
                            error);
        g_hash_table_replace(self->pins, g_steal_pointer(&origin), g_steal_pointer(&fingerprint));
    }
    return TRUE;
}

EinsoraServerPins *
einsora_server_pins_load(const char *path, GError **error)
{
    g_autoptr(EinsoraServerPins) self = g_new0(EinsoraServerPins, 1);

    self->path = path != NULL
                     ? g_strdup(path)
                     : g_build_filename(g_get_user_config_dir(), "einsora", "servers.json", NULL);
    self->pins = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    if (!read_pins(self, error))
        return NULL;
    return g_steal_pointer(&self);
}

const char *
einsora_server_pins_get_path(EinsoraServerPins *self)
{
    return self->path;
}

const char *
einsora_server_pins_lookup(EinsoraServerPins *self, const char *server)
{
    g_autofree gchar *origin = einsora_server_origin(server);

    return origin != NULL ? g_hash_table_lookup(self->pins, origin) : NULL;
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

static gboolean write_pins(EinsoraServerPins *self, const char *origin, const char *pin,
                           GError **error);

gboolean
einsora_server_pins_save(EinsoraServerPins *self, const char *server, const char *fingerprint,
                         GError **error)
{
    g_autofree gchar *origin = einsora_server_origin(server);
    g_autofree gchar *pin = einsora_fingerprint_normalize(fingerprint);
    g_autofree gchar *dir = g_path_get_dirname(self->path);
    g_autofree gchar *lock_path = g_strconcat(self->path, ".lock", NULL);
    int lock_fd;
    gboolean saved;

    if (origin == NULL || pin == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            _("a pin needs a server URL and a fingerprint like SHA256:…"));
        return FALSE;
    }
    if (g_mkdir_with_parents(dir, 0700) != 0) {
        int saved_errno = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "%s: %s", dir,
                    g_strerror(saved_errno));
        return FALSE;
    }
    /* Two clients pinning at once: each adds to what the other wrote,
     * under a lock, rather than write back an older copy. */
    lock_fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
        int saved_errno = errno;
        if (lock_fd >= 0)
            close(lock_fd);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "%s: %s", lock_path,
                    g_strerror(saved_errno));
        return FALSE;
    }
    saved = read_pins(self, error) && write_pins(self, origin, pin, error);
    close(lock_fd);
    if (saved)
        g_hash_table_replace(self->pins, g_steal_pointer(&origin), g_steal_pointer(&pin));
    return saved;
}

/* The file as @self's pins and @origin's @pin make it, written whole. */
static gboolean
write_pins(EinsoraServerPins *self, const char *origin, const char *pin, GError **error)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonGenerator) generator = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr(GPtrArray) origins = g_ptr_array_new();
    GHashTableIter iter;
    gpointer key;

    g_hash_table_iter_init(&iter, self->pins);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        g_ptr_array_add(origins, key);
    if (!g_hash_table_contains(self->pins, origin))
        g_ptr_array_add(origins, (gpointer)origin);
    g_ptr_array_sort(origins, compare_strings);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "servers");
    json_builder_begin_object(builder);
    for (guint i = 0; i < origins->len; i++) {
        const char *name = g_ptr_array_index(origins, i);
        json_builder_set_member_name(builder, name);
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "fingerprint");
        json_builder_add_string_value(
            builder, g_str_equal(name, origin) ? pin : g_hash_table_lookup(self->pins, name));
        json_builder_end_object(builder);
    }
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    json_generator_set_root(generator, root);
    json_generator_set_pretty(generator, TRUE);
    text = json_generator_to_data(generator, NULL);
    return g_file_set_contents_full(self->path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                    error);
}
