#define G_LOG_DOMAIN "einsora-service"

#include "einsora-log-reader.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-redact.h"

/* The times files' format (docs/adr/0041; the drivers write them). */
#define TIMES_HEADER "einsora-log-times "
/* No log file is read past this, whatever is on disk: the writers keep
 * theirs to about a mebibyte, so this only guards against a stranger. */
#define MAX_FILE_BYTES (64 * 1024 * 1024)
#define MAX_TIMES_BYTES (1024 * 1024)

struct _EinsoraLogReader {
    gchar *path;     /* <attempt>.log */
    gchar *previous; /* <attempt>.log.1 */
    gchar *secret;
    gint64 generation; /* of the file it stands in */
    gint64 offset;     /* where it stands in it */
    GByteArray *carry; /* a line begun and not yet ended */
    gboolean lost;
};

EinsoraLogReader *
einsora_log_reader_new(const char *log_path, const char *secret)
{
    EinsoraLogReader *self = g_new0(EinsoraLogReader, 1);

    self->path = g_strdup(log_path);
    self->previous = g_strconcat(log_path, ".1", NULL);
    self->secret = secret != NULL && secret[0] != '\0' ? g_strdup(secret) : NULL;
    self->carry = g_byte_array_new();
    return self;
}

void
einsora_log_reader_free(EinsoraLogReader *self)
{
    if (self == NULL)
        return;
    if (self->secret != NULL)
        explicit_bzero(self->secret, strlen(self->secret));
    g_free(self->secret);
    g_free(self->path);
    g_free(self->previous);
    g_byte_array_unref(self->carry);
    g_free(self);
}

/* Up to @max bytes of @path from @from; a missing file is empty. */
static gboolean
read_range(const char *path, gint64 from, gsize max, GByteArray *into, gint64 *size, GError **error)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    gsize want;
    gsize done = 0;
    guint start = into->len;

    *size = 0;
    if (fd < 0 && errno == ENOENT)
        return TRUE;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int saved = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't read %s: %s", path,
                    g_strerror(saved));
        return FALSE;
    }
    *size = st.st_size;
    if (from >= st.st_size) {
        close(fd);
        return TRUE;
    }
    want = MIN((gsize)(st.st_size - from), max);
    g_byte_array_set_size(into, start + want);
    while (done < want) {
        ssize_t got = pread(fd, into->data + start + done, want - done, from + (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (gsize)got;
    }
    g_byte_array_set_size(into, start + done);
    close(fd);
    return TRUE;
}

static gchar *
times_path(const char *log_path)
{
    return g_strconcat(log_path, ".times", NULL);
}

static gint64
generation_of(const char *log_path)
{
    g_autofree gchar *path = times_path(log_path);
    g_autoptr(GByteArray) head = g_byte_array_new();
    g_autofree gchar *text = NULL;
    gint64 size = 0;

    if (!read_range(path, 0, 63, head, &size, NULL) || head->len == 0)
        return 0;
    text = g_strndup((const char *)head->data, head->len);
    if (!g_str_has_prefix(text, TIMES_HEADER))
        return 0;
    return MAX(g_ascii_strtoll(text + strlen(TIMES_HEADER), NULL, 10), 0);
}

/* Where output written at or after @since_ms begins in @log_path, by its
 * times: the length it had at the last note before then (0: none). */
static gint64
start_for(const char *log_path, gint64 since_ms)
{
    g_autofree gchar *path = times_path(log_path);
    g_autoptr(GByteArray) bytes = g_byte_array_new();
    g_autofree gchar *text = NULL;
    g_auto(GStrv) lines = NULL;
    gint64 size = 0;
    gint64 start = 0;

    if (!read_range(path, 0, MAX_TIMES_BYTES, bytes, &size, NULL) || bytes->len == 0)
        return 0;
    text = g_strndup((const char *)bytes->data, bytes->len);
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 1; lines[i] != NULL; i++) {
        gchar *end = NULL;
        gint64 ms = g_ascii_strtoll(lines[i], &end, 10);
        gint64 length;

        if (end == lines[i] || *end != ' ')
            continue;
        length = g_ascii_strtoll(end + 1, NULL, 10);
        if (ms > since_ms)
            break;
        start = length;
    }
    return start;
}

static void
append_redacted(EinsoraLogReader *self, GString *out, const char *line, gsize length)
{
    g_autofree gchar *text = g_strndup(line, length);
    g_autofree gchar *clean = einsora_redact_secrets(text);

    if (self->secret != NULL && strstr(clean, self->secret) != NULL) {
        g_auto(GStrv) parts = g_strsplit(clean, self->secret, -1);
        g_free(clean);
        clean = g_strjoinv(EINSORA_REDACTED, parts);
    }
    g_string_append(out, clean);
    g_string_append_c(out, '\n');
}

/* Whole lines of @data to @out; what follows the last newline is kept
 * (or given too, when @partial is FALSE). */
static void
emit(EinsoraLogReader *self, GString *out, const guint8 *data, gsize length, gboolean hold)
{
    gsize begin = 0;

    for (gsize i = 0; i < length; i++) {
        if (data[i] != '\n')
            continue;
        append_redacted(self, out, (const char *)data + begin, i - begin);
        begin = i + 1;
    }
    if (begin < length) {
        if (hold)
            g_byte_array_append(self->carry, data + begin, (guint)(length - begin));
        else
            append_redacted(self, out, (const char *)data + begin, length - begin);
    }
}

/* Skips the line that was already under way at @start. */
static gsize
line_start_at(const GByteArray *data, gsize start)
{
    if (start == 0 || start > data->len)
        return MIN(start, data->len);
    if (data->data[start - 1] == '\n')
        return start;
    for (gsize i = start; i < data->len; i++) {
        if (data->data[i] == '\n')
            return i + 1;
    }
    return data->len;
}

/* Where the last @tail lines of @data begin. */
static gsize
tail_start(const GByteArray *data, guint64 tail)
{
    gsize i = data->len;
    guint64 seen = 0;

    if (tail == 0)
        return 0;
    if (i > 0 && data->data[i - 1] == '\n')
        i--;
    while (i > 0) {
        if (data->data[i - 1] == '\n' && ++seen == tail)
            return i;
        i--;
    }
    return 0;
}

gboolean
einsora_log_reader_read(EinsoraLogReader *self, gint64 since_us, guint64 tail,
                        gboolean hold_partial, GString *out, GError **error)
{
    g_autoptr(GByteArray) older = g_byte_array_new();
    g_autoptr(GByteArray) current = g_byte_array_new();
    g_autoptr(GByteArray) all = g_byte_array_new();
    gint64 generation = generation_of(self->path);
    gint64 older_size = 0;
    gint64 size = 0;
    gsize older_from = 0;
    gsize current_from = 0;
    gsize from;

    /* .log.1 belongs with .log when it is the generation before it. */
    if ((generation == 0 || generation_of(self->previous) == generation - 1) &&
        !read_range(self->previous, 0, MAX_FILE_BYTES, older, &older_size, error))
        return FALSE;
    if (!read_range(self->path, 0, MAX_FILE_BYTES, current, &size, error))
        return FALSE;
    if (since_us > g_get_real_time()) {
        /* Nothing is written in the future; it stands at the end. */
        older_from = older->len;
        current_from = current->len;
    } else if (since_us > 0) {
        gint64 since_ms = since_us / 1000;
        gint64 in_current = start_for(self->path, since_ms);

        /* Noted before then in .log: all of .log.1 is older. */
        if (in_current > 0) {
            older_from = older->len;
            current_from = line_start_at(current, (gsize)in_current);
        } else {
            older_from = line_start_at(older, (gsize)start_for(self->previous, since_ms));
        }
    }
    g_byte_array_append(all, older->data + older_from, older->len - older_from);
    g_byte_array_append(all, current->data + current_from, current->len - current_from);
    from = tail_start(all, tail);
    g_byte_array_set_size(self->carry, 0);
    emit(self, out, all->data + from, all->len - from, hold_partial);
    self->generation = generation;
    self->offset = (gint64)current->len;
    self->lost = FALSE;
    return TRUE;
}

static EinsoraLogRead
lose(EinsoraLogReader *self, GString *out)
{
    if (!self->lost)
        g_string_append(out, EINSORA_LOG_LOST_LINE);
    self->lost = TRUE;
    return EINSORA_LOG_READ_LOST;
}

static EinsoraLogRead
take(EinsoraLogReader *self, GByteArray *fresh, gsize max, GString *out)
{
    g_autoptr(GByteArray) data = g_byte_array_new();

    g_byte_array_append(data, self->carry->data, self->carry->len);
    g_byte_array_append(data, fresh->data, fresh->len);
    g_byte_array_set_size(self->carry, 0);
    emit(self, out, data->data, data->len, TRUE);
    /* A line longer than a step goes out in pieces. */
    if (self->carry->len > max) {
        append_redacted(self, out, (const char *)self->carry->data, self->carry->len);
        g_byte_array_set_size(self->carry, 0);
    }
    return EINSORA_LOG_READ_MORE;
}

EinsoraLogRead
einsora_log_reader_next(EinsoraLogReader *self, gsize max, GString *out)
{
    g_autoptr(GByteArray) fresh = g_byte_array_new();
    gint64 generation;
    gint64 size = 0;

    if (self->lost)
        return EINSORA_LOG_READ_LOST;
    max = MAX(max, 1);
    generation = generation_of(self->path);
    if (generation == self->generation + 1 && generation_of(self->previous) == self->generation) {
        /* It rotated: the rest of what it stood in is .log.1 now. */
        if (!read_range(self->previous, self->offset, max, fresh, &size, NULL) ||
            size < self->offset)
            return lose(self, out);
        if (fresh->len > 0) {
            self->offset += fresh->len;
            return take(self, fresh, max, out);
        }
        self->generation = generation;
        self->offset = 0;
    } else if (generation != self->generation) {
        return lose(self, out);
    }
    if (!read_range(self->path, self->offset, max, fresh, &size, NULL) || size < self->offset)
        return lose(self, out);
    if (fresh->len == 0)
        return EINSORA_LOG_READ_NOTHING;
    self->offset += fresh->len;
    return take(self, fresh, max, out);
}

void
einsora_log_reader_flush(EinsoraLogReader *self, GString *out)
{
    if (self->carry->len == 0)
        return;
    append_redacted(self, out, (const char *)self->carry->data, self->carry->len);
    g_byte_array_set_size(self->carry, 0);
}
