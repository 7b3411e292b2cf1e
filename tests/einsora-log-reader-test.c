/* Workload output as drivers keep it and the daemon reads it (docs/adr/
 * 0041): attempts kept apart and pruned, times noted, the reader's tail,
 * since, redaction, following across a rotation, and the follower that
 * fell too far behind. The writers here are the real ones (the times
 * helper the supervisor and the docker log use); only the clock is ours. */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "einsora-log-files.h"
#include "einsora-log-reader.h"
#include "einsora-redact.h"
#include "einsora-test-dir.h"

#define ID "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

typedef struct {
    gchar *dir;
    gchar *log;
    EinsoraLogTimes *times;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->log = g_build_filename(f->dir, ID ".log", NULL);
    f->times = einsora_log_times_new(f->log);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    einsora_log_times_free(f->times);
    einsora_test_dir_remove(f->dir);
    g_free(f->log);
    g_free(f->dir);
}

static void
append(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t)strlen(text));
    close(fd);
}

static gint64
size_of(const char *path)
{
    GStatBuf st;
    return g_stat(path, &st) == 0 ? (gint64)st.st_size : 0;
}

/* Writes and notes the length, as a writer does each second. */
static void
write_at(Fixture *f, const char *text, gint64 ms)
{
    append(f->log, text);
    einsora_log_times_note(f->times, size_of(f->log), ms);
}

/* The supervisor's rotation: copy to .log.1, truncate, times follow. */
static void
rotate_by_copy(Fixture *f)
{
    g_autofree gchar *older = g_strconcat(f->log, ".1", NULL);
    g_autofree gchar *contents = NULL;
    int fd;

    g_assert_true(g_file_get_contents(f->log, &contents, NULL, NULL));
    g_assert_true(g_file_set_contents(older, contents, -1, NULL));
    fd = open(f->log, O_WRONLY | O_TRUNC);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    einsora_log_times_rotated(f->times);
}

static gchar *
read_all(const char *log, const char *secret, gint64 since_us, guint64 tail)
{
    g_autoptr(EinsoraLogReader) reader = einsora_log_reader_new(log, secret);
    g_autoptr(GError) error = NULL;
    GString *out = g_string_new(NULL);

    g_assert_true(einsora_log_reader_read(reader, since_us, tail, FALSE, out, &error));
    g_assert_no_error(error);
    return g_string_free(out, FALSE);
}

static void
test_attempts_apart(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *first = NULL;
    g_autofree gchar *latest = NULL;
    gint64 found = 0;

    /* Nothing started: nothing to find. */
    g_assert_null(einsora_log_files_find(f->dir, ID, 0, &found, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_clear_error(&error);

    for (gint64 attempt = 1; attempt <= 6; attempt++) {
        g_autofree gchar *line = g_strdup_printf("attempt %" G_GINT64_FORMAT "\n", attempt);
        g_assert_true(einsora_log_files_begin_attempt(f->dir, ID, attempt, &error));
        g_assert_no_error(error);
        append(f->log, line);
    }
    /* The same attempt again (a retried start) appends. */
    g_assert_true(einsora_log_files_begin_attempt(f->dir, ID, 6, &error));
    append(f->log, "attempt 6 again\n");

    latest = einsora_log_files_find(f->dir, ID, 0, &found, &error);
    g_assert_no_error(error);
    g_assert_cmpint(found, ==, 6);
    g_assert_cmpstr(latest, ==, f->log);
    {
        g_autofree gchar *text = read_all(latest, NULL, 0, 0);
        g_assert_cmpstr(text, ==, "attempt 6\nattempt 6 again\n");
    }
    first = einsora_log_files_find(f->dir, ID, 5, &found, &error);
    g_assert_no_error(error);
    g_assert_cmpint(found, ==, 5);
    {
        g_autofree gchar *text = read_all(first, NULL, 0, 0);
        g_assert_cmpstr(text, ==, "attempt 5\n");
    }
    /* Three earlier attempts are kept: 3, 4, 5; 1 and 2 are gone. */
    g_clear_pointer(&first, g_free);
    first = einsora_log_files_find(f->dir, ID, 3, &found, &error);
    g_assert_no_error(error);
    g_assert_nonnull(first);
    g_clear_pointer(&first, g_free);
    first = einsora_log_files_find(f->dir, ID, 2, &found, &error);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_assert_null(first);
    g_clear_error(&error);

    einsora_log_files_remove(f->dir, ID);
    {
        g_autoptr(GDir) listing = g_dir_open(f->dir, 0, NULL);
        g_assert_null(g_dir_read_name(listing));
    }
}

static void
test_tail_and_partial(Fixture *f, gconstpointer data)
{
    g_autofree gchar *all = NULL;
    g_autofree gchar *two = NULL;
    g_autoptr(EinsoraLogReader) reader = einsora_log_reader_new(f->log, NULL);
    g_autoptr(GString) out = g_string_new(NULL);

    write_at(f, "one\ntwo\nthree\nfour", 1000);
    all = read_all(f->log, NULL, 0, 0);
    g_assert_cmpstr(all, ==, "one\ntwo\nthree\nfour\n");
    two = read_all(f->log, NULL, 0, 2);
    g_assert_cmpstr(two, ==, "three\nfour\n");

    /* A follower holds the unfinished line back until it ends. */
    g_assert_true(einsora_log_reader_read(reader, 0, 1, TRUE, out, NULL));
    g_assert_cmpstr(out->str, ==, "");
    g_assert_cmpint(einsora_log_reader_next(reader, 4096, out), ==, EINSORA_LOG_READ_NOTHING);
    append(f->log, "th line\nfive\n");
    g_assert_cmpint(einsora_log_reader_next(reader, 4096, out), ==, EINSORA_LOG_READ_MORE);
    g_assert_cmpstr(out->str, ==, "fourth line\nfive\n");
    g_string_truncate(out, 0);
    append(f->log, "no end");
    g_assert_cmpint(einsora_log_reader_next(reader, 4096, out), ==, EINSORA_LOG_READ_MORE);
    g_assert_cmpstr(out->str, ==, "");
    g_assert_cmpint(einsora_log_reader_next(reader, 4096, out), ==, EINSORA_LOG_READ_NOTHING);
    einsora_log_reader_flush(reader, out);
    g_assert_cmpstr(out->str, ==, "no end\n");
}

static void
test_since(Fixture *f, gconstpointer data)
{
    g_autofree gchar *later = NULL;
    g_autofree gchar *latest = NULL;
    g_autofree gchar *none = NULL;
    g_autofree gchar *everything = NULL;

    write_at(f, "at ten\n", 10000);
    write_at(f, "at twenty\n", 20000);
    rotate_by_copy(f);
    write_at(f, "at thirty\n", 30000);
    write_at(f, "at forty\n", 40000);

    /* Across the rotation: .log.1's second line, then .log. */
    later = read_all(f->log, NULL, 15000 * 1000, 0);
    g_assert_cmpstr(later, ==, "at twenty\nat thirty\nat forty\n");
    latest = read_all(f->log, NULL, 35000 * 1000, 0);
    g_assert_cmpstr(latest, ==, "at forty\n");
    none = read_all(f->log, NULL, 45000 * 1000, 0);
    g_assert_cmpstr(none, ==, "");
    everything = read_all(f->log, NULL, 0, 0);
    g_assert_cmpstr(everything, ==, "at ten\nat twenty\nat thirty\nat forty\n");
    /* Times come at most once a second. */
    write_at(f, "soon after\n", 40500);
    {
        g_autofree gchar *times_path = g_strconcat(f->log, ".times", NULL);
        g_autofree gchar *times = NULL;
        g_assert_true(g_file_get_contents(times_path, &times, NULL, NULL));
        g_assert_true(g_str_has_prefix(times, EINSORA_LOG_TIMES_HEADER "1\n"));
        g_assert_null(strstr(times, "40500 "));
    }
}

static void
test_follow_across_rotation(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraLogReader) reader = einsora_log_reader_new(f->log, NULL);
    g_autoptr(GString) out = g_string_new(NULL);

    write_at(f, "before\n", 1000);
    g_assert_true(einsora_log_reader_read(reader, 0, 0, TRUE, out, NULL));
    g_assert_cmpstr(out->str, ==, "before\n");
    g_string_truncate(out, 0);
    /* Written, rotated before the follower looked, then more. */
    write_at(f, "unread one\nunread ", 2000);
    rotate_by_copy(f);
    write_at(f, "two\nafter\n", 3000);
    while (einsora_log_reader_next(reader, 8, out) == EINSORA_LOG_READ_MORE)
        ;
    g_assert_cmpstr(out->str, ==, "unread one\nunread two\nafter\n");

    /* Two rotations while it didn't read: what it hadn't read is gone. */
    g_string_truncate(out, 0);
    write_at(f, "lost one\n", 4000);
    rotate_by_copy(f);
    write_at(f, "lost two\n", 5000);
    rotate_by_copy(f);
    write_at(f, "now\n", 6000);
    g_assert_cmpint(einsora_log_reader_next(reader, 4096, out), ==, EINSORA_LOG_READ_LOST);
    g_assert_cmpstr(out->str, ==, EINSORA_LOG_LOST_LINE);
    g_assert_true(g_str_has_prefix(out->str, "[einsora] "));
    g_assert_cmpint(einsora_log_reader_next(reader, 4096, out), ==, EINSORA_LOG_READ_LOST);
    g_assert_cmpstr(out->str, ==, EINSORA_LOG_LOST_LINE);
}

static void
test_long_line_in_pieces(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraLogReader) reader = einsora_log_reader_new(f->log, NULL);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autofree gchar *line = g_strnfill(100, 'x');

    g_assert_true(einsora_log_reader_read(reader, 0, 0, TRUE, out, NULL));
    write_at(f, line, 1000);
    g_assert_cmpint(einsora_log_reader_next(reader, 40, out), ==, EINSORA_LOG_READ_MORE);
    g_assert_cmpstr(out->str, ==, "");
    g_assert_cmpint(einsora_log_reader_next(reader, 40, out), ==, EINSORA_LOG_READ_MORE);
    /* Never more than a step and a piece held. */
    g_assert_cmpuint(out->len, ==, 81);
}

static void
test_redacted(Fixture *f, gconstpointer data)
{
    const char *token = "c0ffee0123456789abcdef0123456789";
    g_autofree gchar *jupyter =
        g_strdup_printf("[I 2026-12-03 14:02:00.000 ServerApp] http://127.0.0.1:8888/lab?token=%s\n"
                        "    or http://127.0.0.1:8888/lab?token=%s\n"
                        "the token is %s, printed bare\n"
                        "fetching https://alice:hunter2@example.com/data.csv\n"
                        "Authorization: Bearer tsk_abcdEFGHijklMNOPqrst\n",
                        token, token, token);
    g_autofree gchar *text = NULL;

    write_at(f, jupyter, 1000);
    text = read_all(f->log, token, 0, 0);
    g_assert_null(strstr(text, token));
    g_assert_null(strstr(text, "hunter2"));
    g_assert_null(strstr(text, "EFGHijkl"));
    g_assert_nonnull(strstr(text, "ServerApp"));
    g_assert_nonnull(strstr(text, "the token is " EINSORA_REDACTED ", printed bare"));
    g_assert_nonnull(strstr(text, "example.com/data.csv"));
}

/* A stopped attempt's token leaves its files, at the same length. */
static void
test_scrubbed(Fixture *f, gconstpointer data)
{
    const char *token = "c0ffee0123456789abcdef0123456789";
    g_autofree gchar *older = g_strconcat(f->log, ".1", NULL);
    g_autofree gchar *text = NULL;
    g_autofree gchar *old_text = NULL;
    gint64 before;

    append(older, "old c0ffee0123456789abcdef0123456789\n");
    write_at(f, "a c0ffee0123456789abcdef0123456789 b c0ffee0123456789abcdef0123456789\n", 1000);
    before = size_of(f->log);
    einsora_log_files_scrub(f->dir, ID, token);
    g_assert_cmpint(size_of(f->log), ==, before);
    g_assert_true(g_file_get_contents(f->log, &text, NULL, NULL));
    g_assert_cmpstr(text, ==,
                    "a [redacted**********************] b [redacted**********************]\n");
    g_assert_true(g_file_get_contents(older, &old_text, NULL, NULL));
    g_assert_null(strstr(old_text, token));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/log-files/attempts-apart", test_attempts_apart);
    ADD("/log-reader/tail-and-partial", test_tail_and_partial);
    ADD("/log-reader/since", test_since);
    ADD("/log-reader/follow-across-rotation", test_follow_across_rotation);
    ADD("/log-reader/long-line-in-pieces", test_long_line_in_pieces);
    ADD("/log-reader/redacted", test_redacted);
    ADD("/log-files/scrubbed", test_scrubbed);
#undef ADD
    return g_test_run();
}
