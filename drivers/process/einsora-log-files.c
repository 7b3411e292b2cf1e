#define G_LOG_DOMAIN "einsora-process"

#include "einsora-log-files.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const suffixes[] = {".log", ".log.1", ".log.times", ".log.1.times"};

struct _EinsoraLogTimes {
    gchar *path;      /* <log>.times */
    gchar *log_path;  /* <log> */
    gint64 last_ms;   /* the last note's time; 0: none yet */
    gint64 last_size; /* -1: unknown */
};

static gchar *
file_in(const char *dir, const char *name, const char *suffix)
{
    g_autofree gchar *file = g_strconcat(name, suffix, NULL);
    return g_build_filename(dir, file, NULL);
}

/* The attempt in <name>.log.attempt; 0 when there is none. */
static gint64
recorded_attempt(const char *dir, const char *name)
{
    g_autofree gchar *path = file_in(dir, name, ".log.attempt");
    g_autofree gchar *text = NULL;
    gint64 attempt = 0;

    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    g_strstrip(text);
    if (!g_ascii_string_to_signed(text, 10, 1, G_MAXINT64, &attempt, NULL))
        return 0;
    return attempt;
}

static void
remove_quietly(const char *path)
{
    if (g_unlink(path) != 0 && errno != ENOENT)
        g_message("can't remove %s: %s", path, g_strerror(errno));
}

static void
remove_set(const char *dir, const char *base)
{
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *path = file_in(dir, base, suffixes[i]);
        remove_quietly(path);
    }
}

static gint
highest_first(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The attempts archived for @name, highest first. */
static GArray *
archived_attempts(const char *dir, const char *name)
{
    g_autofree gchar *prefix = g_strconcat(name, ".attempt-", NULL);
    GArray *attempts = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(GDir) listing = g_dir_open(dir, 0, NULL);
    const char *entry;

    if (listing == NULL)
        return attempts;
    while ((entry = g_dir_read_name(listing)) != NULL) {
        g_autofree gchar *number = NULL;
        gint64 attempt = 0;

        if (!g_str_has_prefix(entry, prefix) || !g_str_has_suffix(entry, ".log"))
            continue;
        number = g_strndup(entry + strlen(prefix), strlen(entry) - strlen(prefix) - 4);
        if (g_ascii_string_to_signed(number, 10, 1, G_MAXINT64, &attempt, NULL))
            g_array_append_val(attempts, attempt);
    }
    g_array_sort(attempts, highest_first);
    return attempts;
}

static gchar *
archive_base(const char *name, gint64 attempt)
{
    return g_strdup_printf("%s.attempt-%" G_GINT64_FORMAT, name, attempt);
}

gboolean
einsora_log_files_begin_attempt(const char *dir, const char *name, gint64 attempt, GError **error)
{
    gint64 before = recorded_attempt(dir, name);
    g_autofree gchar *marker = file_in(dir, name, ".log.attempt");
    g_autofree gchar *text = NULL;
    g_autoptr(GArray) kept = NULL;

    if (before == attempt)
        return TRUE;
    if (before > 0) {
        g_autofree gchar *base = archive_base(name, before);

        for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
            g_autofree gchar *from = file_in(dir, name, suffixes[i]);
            g_autofree gchar *to = file_in(dir, base, suffixes[i]);

            if (g_rename(from, to) != 0 && errno != ENOENT) {
                int saved = errno;
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved),
                            "can't keep attempt %" G_GINT64_FORMAT "'s log %s: %s", before, from,
                            g_strerror(saved));
                return FALSE;
            }
        }
    }
    kept = archived_attempts(dir, name);
    for (guint i = EINSORA_LOG_FILES_KEEP_ATTEMPTS; i < kept->len; i++) {
        g_autofree gchar *base = archive_base(name, g_array_index(kept, gint64, i));
        remove_set(dir, base);
    }
    text = g_strdup_printf("%" G_GINT64_FORMAT "\n", attempt);
    return g_file_set_contents_full(marker, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, error);
}

gchar *
einsora_log_files_find(const char *dir, const char *name, gint64 attempt, gint64 *found_attempt,
                       GError **error)
{
    gint64 current = recorded_attempt(dir, name);
    g_autofree gchar *base = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *older = NULL;

    if (attempt <= 0 || attempt == current) {
        if (current > 0) {
            *found_attempt = current;
            return file_in(dir, name, ".log");
        }
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no attempt has written output yet");
        return NULL;
    }
    base = archive_base(name, attempt);
    path = file_in(dir, base, ".log");
    older = file_in(dir, base, ".log.1");
    if (!g_file_test(path, G_FILE_TEST_EXISTS) && !g_file_test(older, G_FILE_TEST_EXISTS)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "attempt %" G_GINT64_FORMAT "'s output isn't kept (the last %d attempts' are)",
                    attempt, EINSORA_LOG_FILES_KEEP_ATTEMPTS + 1);
        return NULL;
    }
    *found_attempt = attempt;
    return g_steal_pointer(&path);
}

/* The longest file scrubbed: the writers keep theirs near a mebibyte. */
#define SCRUB_MAX_BYTES (64 * 1024 * 1024)

static void
scrub_file(const char *path, const char *secret, const char *mask, gsize length)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    g_autofree gchar *data = NULL;
    gsize size;
    gsize done = 0;

    if (fd < 0)
        return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SCRUB_MAX_BYTES) {
        close(fd);
        return;
    }
    size = (gsize)st.st_size;
    data = g_malloc(size + 1);
    while (done < size) {
        ssize_t got = pread(fd, data + done, size - done, (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (gsize)got;
    }
    for (const char *at = data; done >= length && at != NULL;) {
        at = memmem(at, (gsize)(data + done - at), secret, length);
        if (at == NULL)
            break;
        if (pwrite(fd, mask, length, (off_t)(at - data)) != (ssize_t)length)
            g_message("can't scrub %s: %s", path, g_strerror(errno));
        at += length;
    }
    close(fd);
}

void
einsora_log_files_scrub(const char *dir, const char *name, const char *secret)
{
    gsize length = secret != NULL ? strlen(secret) : 0;
    g_autofree gchar *mask = NULL;

    /* Too short to be a token, and too short to mask recognisably. */
    if (length < 12)
        return;
    mask = g_strnfill(length, '*');
    memcpy(mask, "[redacted", 9);
    mask[length - 1] = ']';
    for (guint i = 0; i < 2; i++) {
        g_autofree gchar *path = file_in(dir, name, suffixes[i]);
        scrub_file(path, secret, mask, length);
    }
}

void
einsora_log_files_remove(const char *dir, const char *name)
{
    g_autoptr(GArray) kept = archived_attempts(dir, name);
    g_autofree gchar *marker = file_in(dir, name, ".log.attempt");

    for (guint i = 0; i < kept->len; i++) {
        g_autofree gchar *base = archive_base(name, g_array_index(kept, gint64, i));
        remove_set(dir, base);
    }
    remove_set(dir, name);
    remove_quietly(marker);
}

gint64
einsora_log_times_generation(const char *log_path)
{
    g_autofree gchar *path = g_strconcat(log_path, ".times", NULL);
    char head[64] = {0};
    gint64 generation = 0;
    const char *number;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return 0;
    got = read(fd, head, sizeof head - 1);
    close(fd);
    if (got <= 0 || !g_str_has_prefix(head, EINSORA_LOG_TIMES_HEADER))
        return 0;
    number = head + strlen(EINSORA_LOG_TIMES_HEADER);
    generation = g_ascii_strtoll(number, NULL, 10);
    return MAX(generation, 0);
}

EinsoraLogTimes *
einsora_log_times_new(const char *log_path)
{
    EinsoraLogTimes *times = g_new0(EinsoraLogTimes, 1);

    times->log_path = g_strdup(log_path);
    times->path = g_strconcat(log_path, ".times", NULL);
    times->last_size = -1;
    return times;
}

void
einsora_log_times_free(EinsoraLogTimes *times)
{
    if (times == NULL)
        return;
    g_free(times->path);
    g_free(times->log_path);
    g_free(times);
}

static gboolean
append_text(const char *path, const char *text, gboolean create)
{
    int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0);
    int fd = open(path, flags, 0600);
    struct stat st;
    gsize length = strlen(text);
    gboolean ok;

    if (fd < 0)
        return FALSE;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size + (off_t)length > EINSORA_LOG_TIMES_MAX_BYTES) {
        close(fd);
        return FALSE;
    }
    if (st.st_size == 0 && !g_str_has_prefix(text, EINSORA_LOG_TIMES_HEADER)) {
        /* Made just now (or emptied): it starts with its generation. */
        const char *header = EINSORA_LOG_TIMES_HEADER "0\n";
        if (write(fd, header, strlen(header)) != (ssize_t)strlen(header)) {
            close(fd);
            return FALSE;
        }
    }
    ok = write(fd, text, length) == (ssize_t)length;
    close(fd);
    return ok;
}

void
einsora_log_times_note(EinsoraLogTimes *times, gint64 size, gint64 now_ms)
{
    char line[64];

    if (size == times->last_size || size <= 0)
        return;
    if (times->last_ms != 0 && now_ms - times->last_ms < 1000)
        return;
    g_snprintf(line, sizeof line, "%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", now_ms, size);
    if (append_text(times->path, line, TRUE)) {
        times->last_ms = now_ms;
        times->last_size = size;
    }
}

void
einsora_log_times_rotated(EinsoraLogTimes *times)
{
    g_autofree gchar *previous = g_strconcat(times->log_path, ".1.times", NULL);
    g_autofree gchar *header = NULL;
    gint64 generation = einsora_log_times_generation(times->log_path);

    if (g_rename(times->path, previous) != 0) {
        if (errno != ENOENT)
            g_message("can't rotate %s: %s", times->path, g_strerror(errno));
        remove_quietly(previous);
    }
    header = g_strdup_printf(EINSORA_LOG_TIMES_HEADER "%" G_GINT64_FORMAT "\n", generation + 1);
    remove_quietly(times->path);
    if (!append_text(times->path, header, TRUE))
        g_message("can't start %s", times->path);
    times->last_ms = 0;
    times->last_size = 0;
}
