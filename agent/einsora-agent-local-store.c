#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-agent-local-store.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define DESIRED_FILE "desired.json"
#define OUTBOX_FILE "outbox.log"
#define NEXT_PREFIX "#next "
/* A status is a few hundred bytes; a line past this is not one of ours. */
#define MAX_LINE_BYTES (64 * 1024)

struct _EinsoraAgentLocalStore {
    gchar *dir;
    gchar *outbox_path;
    int outbox_fd;
    guint64 next_seq;
    GPtrArray *pending; /* EinsoraOutboxRecord */
};

static void
record_free(EinsoraOutboxRecord *record)
{
    einsora_workload_status_free(record->status);
    g_free(record);
}

static gboolean
io_error(GError **error, const char *path, const char *what)
{
    int saved = errno;

    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "%s: %s: %s", path, what,
                g_strerror(saved));
    return FALSE;
}

static gchar *
record_line(guint64 seq, const EinsoraWorkloadStatus *status)
{
    g_autoptr(JsonNode) node = einsora_workload_status_to_json(status);
    g_autofree gchar *json = json_to_string(node, FALSE);
    g_autofree gchar *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, json, -1);

    return g_strdup_printf("%" G_GUINT64_FORMAT " %s %s\n", seq, sum, json);
}

/* One whole line: its record, or NULL with @error when it is damaged. */
static EinsoraOutboxRecord *
parse_record(const char *line, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(line, " ", 3);
    g_autofree gchar *sum = NULL;
    g_autoptr(JsonNode) node = NULL;
    EinsoraWorkloadStatus *status;
    EinsoraOutboxRecord *record;
    guint64 seq = 0;

    if (g_strv_length(parts) != 3 ||
        !g_ascii_string_to_unsigned(parts[0], 10, 1, G_MAXUINT64, &seq, NULL)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "not a record");
        return NULL;
    }
    sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, parts[2], -1);
    if (!g_str_equal(sum, parts[1])) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "a record whose checksum doesn't match");
        return NULL;
    }
    node = json_from_string(parts[2], error);
    if (node == NULL)
        return NULL;
    status = einsora_workload_status_from_json(node, error);
    if (status == NULL)
        return NULL;
    record = g_new0(EinsoraOutboxRecord, 1);
    record->seq = seq;
    record->status = status;
    return record;
}

/* Reads the outbox: whole records kept, a torn last line cut off. */
static gboolean
load_outbox(EinsoraAgentLocalStore *self, GError **error)
{
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    g_autoptr(GError) local_error = NULL;
    gsize good = 0; /* bytes of whole, valid lines */
    gsize at = 0;
    guint64 last_seq = 0;

    if (!g_file_get_contents(self->outbox_path, &contents, &length, &local_error)) {
        if (g_error_matches(local_error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            return TRUE;
        g_propagate_error(error, g_steal_pointer(&local_error));
        return FALSE;
    }
    while (at < length) {
        const char *start = contents + at;
        const char *end = memchr(start, '\n', length - at);
        g_autofree gchar *line = NULL;
        g_autoptr(GError) bad = NULL;
        EinsoraOutboxRecord *record;

        /* No newline: the last append was torn. */
        if (end == NULL)
            break;
        line = g_strndup(start, (gsize)(end - start));
        at = (gsize)(end - contents) + 1;
        if (g_str_has_prefix(line, NEXT_PREFIX)) {
            guint64 next = 0;
            if (!g_ascii_string_to_unsigned(line + strlen(NEXT_PREFIX), 10, 1, G_MAXUINT64, &next,
                                            NULL)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "%s: a damaged \"#next\" line", self->outbox_path);
                return FALSE;
            }
            self->next_seq = MAX(self->next_seq, next);
            good = at;
            continue;
        }
        record = strlen(line) <= MAX_LINE_BYTES ? parse_record(line, &bad) : NULL;
        if (record == NULL) {
            /* Only the very last line may be a crash's. */
            if (at == length)
                break;
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "%s: %s before its end: not what a crash leaves, so it is kept as it "
                        "is for someone to look at",
                        self->outbox_path, bad != NULL ? bad->message : "a line too long");
            return FALSE;
        }
        if (record->seq <= last_seq) {
            record_free(record);
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: records out of order",
                        self->outbox_path);
            return FALSE;
        }
        last_seq = record->seq;
        self->next_seq = MAX(self->next_seq, record->seq + 1);
        g_ptr_array_add(self->pending, record);
        good = at;
    }
    if (good < length && truncate(self->outbox_path, (off_t)good) != 0)
        return io_error(error, self->outbox_path, "can't cut off its torn end");
    return TRUE;
}

EinsoraAgentLocalStore *
einsora_agent_local_store_open(const char *dir, GError **error)
{
    g_autoptr(EinsoraAgentLocalStore) self = g_new0(EinsoraAgentLocalStore, 1);

    self->dir = g_strdup(dir);
    self->outbox_path = g_build_filename(dir, OUTBOX_FILE, NULL);
    self->outbox_fd = -1;
    self->next_seq = 1;
    self->pending = g_ptr_array_new_with_free_func((GDestroyNotify)record_free);
    if (g_mkdir_with_parents(dir, 0700) != 0 || g_chmod(dir, 0700) != 0) {
        io_error(error, dir, "can't make it");
        return NULL;
    }
    if (!load_outbox(self, error))
        return NULL;
    self->outbox_fd =
        open(self->outbox_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (self->outbox_fd < 0) {
        io_error(error, self->outbox_path, "can't open it");
        return NULL;
    }
    return g_steal_pointer(&self);
}

void
einsora_agent_local_store_free(EinsoraAgentLocalStore *self)
{
    if (self == NULL)
        return;
    if (self->outbox_fd >= 0)
        close(self->outbox_fd);
    g_ptr_array_unref(self->pending);
    g_free(self->outbox_path);
    g_free(self->dir);
    g_free(self);
}

EinsoraDesiredState *
einsora_agent_local_store_load_desired(EinsoraAgentLocalStore *self, GError **error)
{
    g_autofree gchar *path = g_build_filename(self->dir, DESIRED_FILE, NULL);
    g_autofree gchar *contents = NULL;
    g_autoptr(GError) local_error = NULL;
    g_autoptr(JsonNode) node = NULL;

    if (!g_file_get_contents(path, &contents, NULL, &local_error)) {
        if (g_error_matches(local_error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            return NULL;
        g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    node = json_from_string(contents, error);
    return node != NULL ? einsora_desired_state_from_json(node, error) : NULL;
}

gboolean
einsora_agent_local_store_save_desired(EinsoraAgentLocalStore *self,
                                       const EinsoraDesiredState *state, GError **error)
{
    g_autofree gchar *path = g_build_filename(self->dir, DESIRED_FILE, NULL);
    g_autoptr(JsonNode) node = einsora_desired_state_to_json(state);
    g_autofree gchar *text = json_to_string(node, FALSE);

    return g_file_set_contents_full(
        path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE, 0600, error);
}

static gboolean
write_all(int fd, const char *path, const char *text, GError **error)
{
    gsize length = strlen(text);
    gsize done = 0;

    while (done < length) {
        ssize_t wrote = write(fd, text + done, length - done);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0)
            return io_error(error, path, "can't write to it");
        done += (gsize)wrote;
    }
    return TRUE;
}

gboolean
einsora_agent_local_store_append(EinsoraAgentLocalStore *self, const EinsoraWorkloadStatus *status,
                                 guint64 *seq, GError **error)
{
    g_autofree gchar *line = NULL;
    EinsoraOutboxRecord *record;

    if (self->pending->len >= EINSORA_AGENT_OUTBOX_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                    "the outbox holds %u reports the server hasn't taken: no more until it "
                    "does",
                    self->pending->len);
        return FALSE;
    }
    line = record_line(self->next_seq, status);
    /* On disk before it counts: a crash after this returns loses nothing. */
    if (!write_all(self->outbox_fd, self->outbox_path, line, error))
        return FALSE;
    if (fdatasync(self->outbox_fd) != 0)
        return io_error(error, self->outbox_path, "can't flush it");
    record = g_new0(EinsoraOutboxRecord, 1);
    record->seq = self->next_seq++;
    record->status = einsora_workload_status_copy(status);
    g_ptr_array_add(self->pending, record);
    if (seq != NULL)
        *seq = record->seq;
    return TRUE;
}

GPtrArray *
einsora_agent_local_store_pending(EinsoraAgentLocalStore *self)
{
    GPtrArray *copy = g_ptr_array_new_with_free_func((GDestroyNotify)record_free);

    for (guint i = 0; i < self->pending->len; i++) {
        const EinsoraOutboxRecord *record = g_ptr_array_index(self->pending, i);
        EinsoraOutboxRecord *dup = g_new0(EinsoraOutboxRecord, 1);

        dup->seq = record->seq;
        dup->status = einsora_workload_status_copy(record->status);
        g_ptr_array_add(copy, dup);
    }
    return copy;
}

gboolean
einsora_agent_local_store_acknowledge(EinsoraAgentLocalStore *self, guint64 seq, GError **error)
{
    g_autoptr(GString) text = g_string_new(NULL);
    guint keep = 0;
    int fd;

    while (keep < self->pending->len &&
           ((EinsoraOutboxRecord *)g_ptr_array_index(self->pending, keep))->seq <= seq)
        keep++;
    if (keep == 0)
        return TRUE;
    /* The file as it will be: the next number, then what is left. */
    g_string_append_printf(text, NEXT_PREFIX "%" G_GUINT64_FORMAT "\n", self->next_seq);
    for (guint i = keep; i < self->pending->len; i++) {
        const EinsoraOutboxRecord *record = g_ptr_array_index(self->pending, i);
        g_autofree gchar *line = record_line(record->seq, record->status);
        g_string_append(text, line);
    }
    if (!g_file_set_contents_full(self->outbox_path, text->str, (gssize)text->len,
                                  G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                  0600, error))
        return FALSE;
    fd = open(self->outbox_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return io_error(error, self->outbox_path, "can't open it again");
    close(self->outbox_fd);
    self->outbox_fd = fd;
    g_ptr_array_remove_range(self->pending, 0, keep);
    return TRUE;
}
