/* The process supervisor against real processes (sh, sleep, env): sessions
 * and groups, logs, state files, adoption after a restart, exits, stops,
 * and /proc parsing on a fixture. Every process started is killed with its
 * group in teardown. */
#include "einsora-process-supervisor.h"
#include "einsora-test-dir.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS 5000

typedef struct {
    gchar *dir;
    EinsoraProcessSupervisor *supervisor;
    GArray *pids;       /* every group started, for teardown */
    GPtrArray *changed; /* names from the "changed" signal, in order */
} Fixture;

static const char *const test_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};

static void
iterate(void)
{
    if (!g_main_context_iteration(NULL, FALSE))
        g_usleep(2000);
}

/* Runs the main context until @cond holds, failing the test after @ms. */
#define WAIT_UNTIL(cond, ms)                                                                       \
    G_STMT_START                                                                                   \
    {                                                                                              \
        gint64 deadline_ = g_get_monotonic_time() + (gint64)(ms)*G_TIME_SPAN_MILLISECOND;          \
        while (!(cond)) {                                                                          \
            if (g_get_monotonic_time() > deadline_)                                                \
                g_error("timed out waiting for: %s", #cond);                                       \
            iterate();                                                                             \
        }                                                                                          \
    }                                                                                              \
    G_STMT_END

static void
on_changed(EinsoraProcessSupervisor *supervisor, const char *name, gpointer user_data)
{
    Fixture *fx = user_data;

    g_ptr_array_add(fx->changed, g_strdup(name));
}

static void
fixture_new_supervisor(Fixture *fx)
{
    g_autoptr(GError) error = NULL;

    g_clear_object(&fx->supervisor);
    fx->supervisor = einsora_process_supervisor_new(fx->dir, &error);
    g_assert_no_error(error);
    g_signal_connect(fx->supervisor, "changed", G_CALLBACK(on_changed), fx);
}

static void
fixture_set_up(Fixture *fx, gconstpointer data)
{
    fx->dir = einsora_test_dir_new();
    fx->pids = g_array_new(FALSE, FALSE, sizeof(GPid));
    fx->changed = g_ptr_array_new_with_free_func(g_free);
    fixture_new_supervisor(fx);
}

/* Alive: there, and not a zombie. */
static gboolean
pid_alive(GPid pid)
{
    gboolean zombie = FALSE;

    return einsora_process_read_start_time("/proc", pid, NULL, &zombie) && !zombie;
}

static void
fixture_tear_down(Fixture *fx, gconstpointer data)
{
    /* First, so no child watch of its own races the reaping below. */
    g_clear_object(&fx->supervisor);
    for (guint i = 0; i < fx->pids->len; i++) {
        GPid pid = g_array_index(fx->pids, GPid, i);

        kill(-pid, SIGKILL);
        /* ECHILD when the supervisor reaped it already. */
        waitpid(pid, NULL, 0);
        /* The group's others may stay zombies under a PID 1 that doesn't
         * reap. */
        WAIT_UNTIL(!einsora_process_group_alive("/proc", pid), WAIT_MS);
    }
    g_ptr_array_unref(fx->changed);
    g_array_unref(fx->pids);
    einsora_test_dir_remove(fx->dir);
    g_free(fx->dir);
}

static GPid
start_argv(Fixture *fx, const char *name, const char *const *argv, const char *const *envp,
           const char *const *labels)
{
    g_autoptr(GError) error = NULL;
    GPid pid;

    einsora_process_supervisor_start(fx->supervisor, name, argv, envp, fx->dir, "fp-1", labels,
                                     &error);
    g_assert_no_error(error);
    pid = einsora_process_supervisor_get_pid(fx->supervisor, name);
    g_assert_cmpint(pid, >, 0);
    g_array_append_val(fx->pids, pid);
    return pid;
}

static GPid
start_sh(Fixture *fx, const char *name, const char *script)
{
    const char *argv[] = {"sh", "-c", script, NULL};

    return start_argv(fx, name, argv, test_env, NULL);
}

static gchar *
path_for(Fixture *fx, const char *file)
{
    return g_build_filename(fx->dir, file, NULL);
}

static gchar *
read_file(Fixture *fx, const char *file)
{
    g_autofree gchar *path = path_for(fx, file);
    g_autoptr(GError) error = NULL;
    gchar *contents = NULL;

    g_file_get_contents(path, &contents, NULL, &error);
    g_assert_no_error(error);
    return contents;
}

static gboolean
file_exists(Fixture *fx, const char *file)
{
    g_autofree gchar *path = path_for(fx, file);

    return g_file_test(path, G_FILE_TEST_EXISTS);
}

static gint64
file_size(Fixture *fx, const char *file)
{
    g_autofree gchar *path = path_for(fx, file);
    GStatBuf st;

    if (g_lstat(path, &st) != 0)
        return -1;
    return st.st_size;
}

static gboolean
log_contains(Fixture *fx, const char *name, const char *text)
{
    g_autofree gchar *file = g_strconcat(name, ".log", NULL);
    g_autofree gchar *path = path_for(fx, file);
    g_autofree gchar *contents = NULL;

    return g_file_get_contents(path, &contents, NULL, NULL) && strstr(contents, text) != NULL;
}

static EinsoraProcessState
state_of(Fixture *fx, const char *name, int *exit_status)
{
    return einsora_process_supervisor_get_state(fx->supervisor, name, exit_status);
}

static gboolean
was_changed(Fixture *fx, const char *name)
{
    for (guint i = 0; i < fx->changed->len; i++) {
        if (g_strcmp0(g_ptr_array_index(fx->changed, i), name) == 0)
            return TRUE;
    }
    return FALSE;
}

/* The members of a process group that aren't zombies, read here rather
 * than through the supervisor. */
static GArray *
group_members(GPid pgid)
{
    g_autoptr(GDir) dir = g_dir_open("/proc", 0, NULL);
    GArray *members = g_array_new(FALSE, FALSE, sizeof(GPid));
    const char *entry;

    g_assert_nonnull(dir);
    while ((entry = g_dir_read_name(dir)) != NULL) {
        GPid pid = (GPid)g_ascii_strtoll(entry, NULL, 10);
        if (pid > 0 && pid_alive(pid) && getpgid(pid) == pgid)
            g_array_append_val(members, pid);
    }
    return members;
}

/* Whether the group has @count members, kept in @members. */
static gboolean
group_has(GPid pgid, guint count, GArray **members)
{
    g_clear_pointer(members, g_array_unref);
    *members = group_members(pgid);
    return (*members)->len == count;
}

typedef struct {
    gboolean done;
    gboolean ok;
    GError *error;
} StopResult;

static void
on_stopped(GObject *source, GAsyncResult *result, gpointer user_data)
{
    StopResult *stop = user_data;

    g_assert_false(stop->done);
    stop->ok = einsora_process_supervisor_stop_finish(EINSORA_PROCESS_SUPERVISOR(source), result,
                                                      &stop->error);
    stop->done = TRUE;
}

static gboolean
stop_sync(Fixture *fx, const char *name, GCancellable *cancellable, GError **error)
{
    StopResult stop = {0};

    einsora_process_supervisor_stop_async(fx->supervisor, name, cancellable, on_stopped, &stop);
    WAIT_UNTIL(stop.done, 15000);
    /* Answered once: nothing more comes. */
    for (int i = 0; i < 10; i++)
        iterate();
    if (stop.error != NULL)
        g_propagate_error(error, stop.error);
    return stop.ok;
}

static void
test_start_new_session(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    GPid pid = start_argv(fx, "w1", argv, test_env, NULL);

    g_assert_cmpint(getsid(pid), ==, pid);
    g_assert_cmpint(getpgid(pid), ==, pid);
    g_assert_cmpint(getpgid(pid), !=, getpgid(0));
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_RUNNING);
}

static void
test_start_log_and_cwd(Fixture *fx, gconstpointer data)
{
    g_autofree gchar *work = g_build_filename(fx->dir, "work", NULL);
    g_autofree gchar *expected = g_strdup_printf("out\nerr\n%s\n", work);
    g_autofree gchar *log = NULL;
    const char *argv[] = {"sh", "-c", "echo out; echo err >&2; pwd", NULL};
    g_autoptr(GError) error = NULL;
    int status = -1;
    GPid pid;

    g_assert_cmpint(g_mkdir(work, 0700), ==, 0);
    einsora_process_supervisor_start(fx->supervisor, "w1", argv, test_env, work, "fp", NULL,
                                     &error);
    g_assert_no_error(error);
    pid = einsora_process_supervisor_get_pid(fx->supervisor, "w1");
    g_array_append_val(fx->pids, pid);
    WAIT_UNTIL(state_of(fx, "w1", NULL) != EINSORA_PROCESS_RUNNING, WAIT_MS);
    g_assert_cmpint(state_of(fx, "w1", &status), ==, EINSORA_PROCESS_EXITED);
    g_assert_cmpint(status, ==, 0);
    log = read_file(fx, "w1.log");
    g_assert_cmpstr(log, ==, expected);
}

static void
test_start_exact_environment(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"/usr/bin/env", NULL};
    const char *envp[] = {"A=1", "TOKEN=secret value", NULL};
    g_autofree gchar *log = NULL;
    g_autofree gchar *empty_log = NULL;

    g_setenv("EINSORA_TEST_LEAK", "must-not-reach-the-child", TRUE);
    start_argv(fx, "with-env", argv, envp, NULL);
    start_argv(fx, "no-env", argv, NULL, NULL);
    WAIT_UNTIL(state_of(fx, "with-env", NULL) == EINSORA_PROCESS_EXITED &&
                   state_of(fx, "no-env", NULL) == EINSORA_PROCESS_EXITED,
               WAIT_MS);
    g_unsetenv("EINSORA_TEST_LEAK");
    log = read_file(fx, "with-env.log");
    g_assert_cmpstr(log, ==, "A=1\nTOKEN=secret value\n");
    empty_log = read_file(fx, "no-env.log");
    g_assert_cmpstr(empty_log, ==, "");
}

static void
test_start_state_file(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    const char *labels[] = {"attempt=3", "image=jupyter base", NULL};
    g_autoptr(GKeyFile) keys = g_key_file_new();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *state_path = path_for(fx, "w1.state");
    g_autofree gchar *log_path = path_for(fx, "w1.log");
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *attempt = NULL;
    g_autofree gchar *image = NULL;
    guint64 start_time = 0;
    gboolean zombie = TRUE;
    GStatBuf st;
    GPid pid = start_argv(fx, "w1", argv, test_env, labels);

    g_assert_true(einsora_process_read_start_time("/proc", pid, &start_time, &zombie));
    g_assert_false(zombie);
    g_assert_cmpuint(start_time, >, 0);
    g_assert_cmpuint(einsora_process_supervisor_get_start_time(fx->supervisor, "w1"), ==,
                     start_time);

    g_assert_cmpint(g_lstat(state_path, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    g_assert_cmpint(g_lstat(log_path, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);

    g_key_file_load_from_file(keys, state_path, G_KEY_FILE_NONE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(g_key_file_get_int64(keys, "process", "pid", &error), ==, pid);
    g_assert_no_error(error);
    g_assert_cmpuint(g_key_file_get_uint64(keys, "process", "start_time", &error), ==, start_time);
    g_assert_no_error(error);
    fingerprint = g_key_file_get_string(keys, "process", "fingerprint", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(fingerprint, ==, "fp-1");
    attempt = g_key_file_get_string(keys, "labels", "attempt", NULL);
    g_assert_cmpstr(attempt, ==, "3");
    image = g_key_file_get_string(keys, "labels", "image", NULL);
    g_assert_cmpstr(image, ==, "jupyter base");
    g_assert_cmpstr(einsora_process_supervisor_get_label(fx->supervisor, "w1", "attempt"), ==, "3");
    g_assert_null(einsora_process_supervisor_get_label(fx->supervisor, "w1", "absent"));
}

static void
test_start_missing_binary(Fixture *fx, gconstpointer data)
{
    const char *by_path[] = {"/nonexistent/einsora-no-such-binary", NULL};
    const char *by_name[] = {"einsora-no-such-binary", NULL};
    g_auto(GStrv) recorded = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_false(einsora_process_supervisor_start(fx->supervisor, "w1", by_path, test_env, NULL,
                                                    "fp", NULL, &error));
    g_assert_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT);
    g_clear_error(&error);
    g_assert_false(einsora_process_supervisor_start(fx->supervisor, "w1", by_name, test_env, NULL,
                                                    "fp", NULL, &error));
    g_assert_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_UNKNOWN);
    recorded = einsora_process_supervisor_list_recorded(fx->supervisor);
    g_assert_cmpuint(g_strv_length(recorded), ==, 0);
}

static void
test_start_refusals(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    const char *bad_labels[] = {"Attempt=3", NULL};
    const char *no_key[] = {"=3", NULL};
    const char *bad_names[] = {"", "../w", "w/1", "w.1", "w 1"};
    g_autoptr(GError) error = NULL;
    GPid pid = start_argv(fx, "w1", argv, test_env, NULL);

    g_assert_false(einsora_process_supervisor_start(fx->supervisor, "w1", argv, test_env, NULL,
                                                    "fp", NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    g_clear_error(&error);
    /* The refused start left the running one alone. */
    g_assert_cmpint(einsora_process_supervisor_get_pid(fx->supervisor, "w1"), ==, pid);

    for (guint i = 0; i < G_N_ELEMENTS(bad_names); i++) {
        g_assert_false(einsora_process_supervisor_start(fx->supervisor, bad_names[i], argv,
                                                        test_env, NULL, "fp", NULL, &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        g_clear_error(&error);
    }
    g_assert_false(einsora_process_supervisor_start(fx->supervisor, "w2", argv, test_env, NULL,
                                                    "fp", bad_labels, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error(&error);
    g_assert_false(einsora_process_supervisor_start(fx->supervisor, "w2", argv, test_env, NULL,
                                                    "fp", no_key, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_cmpint(state_of(fx, "w2", NULL), ==, EINSORA_PROCESS_UNKNOWN);
}

static void
test_adopt_same_process(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    const char *labels[] = {"attempt=7", NULL};
    g_autoptr(GError) error = NULL;
    GPid pid = start_argv(fx, "w1", argv, test_env, labels);
    guint64 start_time = einsora_process_supervisor_get_start_time(fx->supervisor, "w1");

    /* A daemon restart: the process outlives its supervisor. */
    fixture_new_supervisor(fx);
    g_assert_true(pid_alive(pid));
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_UNKNOWN);
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-1"), ==,
                    EINSORA_PROCESS_ADOPTED);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_RUNNING);
    g_assert_cmpint(einsora_process_supervisor_get_pid(fx->supervisor, "w1"), ==, pid);
    g_assert_cmpuint(einsora_process_supervisor_get_start_time(fx->supervisor, "w1"), ==,
                     start_time);
    g_assert_cmpstr(einsora_process_supervisor_get_label(fx->supervisor, "w1", "attempt"), ==, "7");
    /* Adopting again changes nothing. */
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-1"), ==,
                    EINSORA_PROCESS_ADOPTED);

    /* An adopted process can be stopped too. */
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_STOPPED);
    g_assert_true(was_changed(fx, "w1"));
    g_assert_false(pid_alive(pid));
}

static void
test_adopt_reused_pid(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    const char *labels[] = {"attempt=2", NULL};
    g_autofree gchar *state_path = path_for(fx, "w1.state");
    g_autoptr(GKeyFile) keys = g_key_file_new();
    g_autoptr(GError) error = NULL;
    GPid pid = start_argv(fx, "w1", argv, test_env, labels);
    guint64 start_time = einsora_process_supervisor_get_start_time(fx->supervisor, "w1");

    fixture_new_supervisor(fx);
    /* The PID now names a process that started at another time. */
    g_key_file_load_from_file(keys, state_path, G_KEY_FILE_NONE, &error);
    g_assert_no_error(error);
    g_key_file_set_uint64(keys, "process", "start_time", start_time + 1);
    g_key_file_save_to_file(keys, state_path, &error);
    g_assert_no_error(error);

    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-1"), ==,
                    EINSORA_PROCESS_GONE);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_VANISHED);
    g_assert_cmpint(einsora_process_supervisor_get_pid(fx->supervisor, "w1"), ==, 0);
    g_assert_cmpstr(einsora_process_supervisor_get_label(fx->supervisor, "w1", "attempt"), ==, "2");
    /* Stopping what isn't ours touches nothing. */
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
    g_assert_true(pid_alive(pid));
}

static void
test_adopt_fingerprint_changed(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    GPid pid = start_sh(fx, "w1", "sleep 100 & sleep 100; wait");

    fixture_new_supervisor(fx);
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-2"), ==,
                    EINSORA_PROCESS_FINGERPRINT_CHANGED);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_RUNNING);
    g_assert_cmpint(einsora_process_supervisor_get_pid(fx->supervisor, "w1"), ==, pid);
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_STOPPED);
    g_assert_false(pid_alive(pid));
    g_assert_false(einsora_process_group_alive("/proc", pid));
}

static void
test_adopt_nothing_recorded(Fixture *fx, gconstpointer data)
{
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-1"), ==,
                    EINSORA_PROCESS_GONE);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_UNKNOWN);
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "../etc", "fp-1"), ==,
                    EINSORA_PROCESS_GONE);
}

static void
test_adopt_vanishes(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    GPid pid = start_argv(fx, "w1", argv, test_env, NULL);

    fixture_new_supervisor(fx);
    einsora_process_supervisor_set_poll_interval(fx->supervisor, 50);
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-1"), ==,
                    EINSORA_PROCESS_ADOPTED);
    g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
    WAIT_UNTIL(was_changed(fx, "w1"), WAIT_MS);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_VANISHED);
    g_assert_cmpint(einsora_process_supervisor_get_pid(fx->supervisor, "w1"), ==, 0);
}

/* The rest of a group whose leader died goes too, whether the leader
 * died under watch or while no supervisor was there. */
static GPid
start_with_member(Fixture *fx, const char *name, GPid *member)
{
    g_autofree gchar *member_file = path_for(fx, "member.pid");
    g_autofree gchar *script =
        g_strdup_printf("sleep 100 & echo $! > '%s'; exec sleep 100", member_file);
    g_autofree gchar *text = NULL;
    GPid pid = start_sh(fx, name, script);

    WAIT_UNTIL(g_file_get_contents(member_file, &text, NULL, NULL) && strchr(text, '\n'), WAIT_MS);
    *member = atoi(text);
    g_assert_true(pid_alive(*member));
    g_unlink(member_file);
    return pid;
}

static void
test_leader_dies_watched(Fixture *fx, gconstpointer data)
{
    GPid member = 0;
    GPid pid = start_with_member(fx, "w1", &member);

    g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
    WAIT_UNTIL(was_changed(fx, "w1"), WAIT_MS);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_KILLED);
    WAIT_UNTIL(!pid_alive(member), WAIT_MS);
}

static void
test_leader_dies_unwatched(Fixture *fx, gconstpointer data)
{
    GPid member = 0;
    GPid pid = start_with_member(fx, "w1", &member);

    /* The daemon is away: nobody watches when the leader dies (it stays
     * a zombie of this process, which doesn't reap it yet). */
    g_clear_object(&fx->supervisor);
    g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
    WAIT_UNTIL(!pid_alive(pid), WAIT_MS);
    g_assert_true(pid_alive(member));
    fixture_new_supervisor(fx);
    g_assert_cmpint(einsora_process_supervisor_adopt(fx->supervisor, "w1", "fp-1"), ==,
                    EINSORA_PROCESS_GONE);
    WAIT_UNTIL(!pid_alive(member), WAIT_MS);
}

static void
test_exit_with_code(Fixture *fx, gconstpointer data)
{
    int status = -1;

    start_sh(fx, "w1", "exit 3");
    WAIT_UNTIL(was_changed(fx, "w1"), WAIT_MS);
    g_assert_cmpint(state_of(fx, "w1", &status), ==, EINSORA_PROCESS_EXITED);
    g_assert_cmpint(status, ==, 3);
    g_assert_cmpint(einsora_process_supervisor_get_pid(fx->supervisor, "w1"), ==, 0);
    g_assert_cmpuint(fx->changed->len, ==, 1);
}

static void
test_exit_killed(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    int status = -1;
    GPid pid = start_argv(fx, "w1", argv, test_env, NULL);

    g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
    WAIT_UNTIL(was_changed(fx, "w1"), WAIT_MS);
    g_assert_cmpint(state_of(fx, "w1", &status), ==, EINSORA_PROCESS_KILLED);
    g_assert_cmpint(status, ==, SIGKILL);
}

static void
test_stop_whole_group(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) members = NULL;
    gint64 began;
    GPid pid;

    einsora_process_supervisor_set_stop_grace(fx->supervisor, 5000);
    pid = start_sh(fx, "w1", "sleep 100 & sleep 100; wait");
    /* sh and both sleeps. */
    WAIT_UNTIL(group_has(pid, 3, &members), WAIT_MS);

    began = g_get_monotonic_time();
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
    /* SIGTERM did it, well within the grace period. */
    g_assert_cmpint(g_get_monotonic_time() - began, <, 2500 * G_TIME_SPAN_MILLISECOND);
    for (guint i = 0; i < members->len; i++)
        g_assert_false(pid_alive(g_array_index(members, GPid, i)));
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_STOPPED);
    g_assert_true(was_changed(fx, "w1"));
    /* Stopping it again succeeds at once. */
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
}

static void
test_stop_kills_after_grace(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    gint64 began;
    GPid pid;

    einsora_process_supervisor_set_stop_grace(fx->supervisor, 300);
    pid = start_sh(fx, "w1", "trap '' TERM; echo ready; while :; do sleep 0.1; done");
    WAIT_UNTIL(log_contains(fx, "w1", "ready"), WAIT_MS);

    began = g_get_monotonic_time();
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(g_get_monotonic_time() - began, >=, 300 * G_TIME_SPAN_MILLISECOND);
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_STOPPED);
    g_assert_false(pid_alive(pid));
    g_assert_false(einsora_process_group_alive("/proc", pid));
}

static void
test_stop_not_running(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    int status = -1;

    g_assert_true(stop_sync(fx, "nothing", NULL, &error));
    g_assert_no_error(error);
    start_sh(fx, "w1", "exit 4");
    WAIT_UNTIL(state_of(fx, "w1", NULL) == EINSORA_PROCESS_EXITED, WAIT_MS);
    g_assert_true(stop_sync(fx, "w1", NULL, &error));
    g_assert_no_error(error);
    /* How it ended is kept. */
    g_assert_cmpint(state_of(fx, "w1", &status), ==, EINSORA_PROCESS_EXITED);
    g_assert_cmpint(status, ==, 4);
}

static gboolean
cancel_later(gpointer user_data)
{
    g_cancellable_cancel(user_data);
    return G_SOURCE_REMOVE;
}

static void
test_stop_cancelled(Fixture *fx, gconstpointer data)
{
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autoptr(GCancellable) cancelled = g_cancellable_new();
    g_autoptr(GError) error = NULL;
    GPid pid;

    pid = start_sh(fx, "w1", "trap '' TERM; echo ready; while :; do sleep 0.1; done");
    WAIT_UNTIL(log_contains(fx, "w1", "ready"), WAIT_MS);

    g_cancellable_cancel(cancelled);
    g_assert_false(stop_sync(fx, "w1", cancelled, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&error);

    g_timeout_add(100, cancel_later, cancellable);
    g_assert_false(stop_sync(fx, "w1", cancellable, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    /* It ignores SIGTERM and the grace (10 s) hadn't run out. */
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_RUNNING);
    g_assert_true(pid_alive(pid));
    g_assert_false(was_changed(fx, "w1"));
}

static void
test_log_bounded(Fixture *fx, gconstpointer data)
{
    g_autofree gchar *log = NULL;
    GStatBuf st;
    g_autofree gchar *old_path = path_for(fx, "w1.log.1");

    einsora_process_supervisor_set_log_limit(fx->supervisor, 4096);
    einsora_process_supervisor_set_poll_interval(fx->supervisor, 50);
    start_sh(fx, "w1", "head -c 10000 /dev/zero; sleep 0.5; printf tail; sleep 100");

    WAIT_UNTIL(file_size(fx, "w1.log.1") == 10000, WAIT_MS);
    g_assert_cmpint(g_lstat(old_path, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    /* Its writes carry on at the start of the emptied file, not past a
     * hole where the old end was. */
    WAIT_UNTIL(log_contains(fx, "w1", "tail"), WAIT_MS);
    g_assert_cmpint(file_size(fx, "w1.log"), ==, 4);
    log = read_file(fx, "w1.log");
    g_assert_cmpstr(log, ==, "tail");
    g_assert_cmpint(file_size(fx, "w1.log.1"), ==, 10000);
}

static void
test_forget(Fixture *fx, gconstpointer data)
{
    const char *argv[] = {"sleep", "100", NULL};
    g_autofree gchar *old_log = path_for(fx, "w1.log.1");
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) recorded = NULL;

    start_sh(fx, "w1", "echo hi");
    WAIT_UNTIL(state_of(fx, "w1", NULL) == EINSORA_PROCESS_EXITED, WAIT_MS);
    g_file_set_contents(old_log, "old", -1, &error);
    g_assert_no_error(error);
    g_assert_true(file_exists(fx, "w1.state"));
    g_assert_true(file_exists(fx, "w1.log"));

    g_assert_true(einsora_process_supervisor_forget(fx->supervisor, "w1", &error));
    g_assert_no_error(error);
    g_assert_false(file_exists(fx, "w1.state"));
    g_assert_false(file_exists(fx, "w1.log"));
    g_assert_false(file_exists(fx, "w1.log.1"));
    g_assert_cmpint(state_of(fx, "w1", NULL), ==, EINSORA_PROCESS_UNKNOWN);
    recorded = einsora_process_supervisor_list_recorded(fx->supervisor);
    g_assert_cmpuint(g_strv_length(recorded), ==, 0);
    /* Forgetting twice is fine. */
    g_assert_true(einsora_process_supervisor_forget(fx->supervisor, "w1", &error));
    g_assert_no_error(error);

    start_argv(fx, "w2", argv, test_env, NULL);
    g_assert_false(einsora_process_supervisor_forget(fx->supervisor, "w2", &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    g_assert_true(file_exists(fx, "w2.state"));
    g_assert_cmpint(state_of(fx, "w2", NULL), ==, EINSORA_PROCESS_RUNNING);
}

static void
test_list_recorded(Fixture *fx, gconstpointer data)
{
    g_autofree gchar *stray = path_for(fx, "not_a_name.state");
    g_autofree gchar *other = path_for(fx, "notes.txt");
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) recorded = NULL;

    start_sh(fx, "b", "exit 0");
    start_sh(fx, "c-1", "exit 0");
    start_sh(fx, "a", "exit 0");
    g_file_set_contents(stray, "", -1, &error);
    g_assert_no_error(error);
    g_file_set_contents(other, "", -1, &error);
    g_assert_no_error(error);
    recorded = einsora_process_supervisor_list_recorded(fx->supervisor);
    g_assert_cmpuint(g_strv_length(recorded), ==, 3);
    g_assert_cmpstr(recorded[0], ==, "a");
    g_assert_cmpstr(recorded[1], ==, "b");
    g_assert_cmpstr(recorded[2], ==, "c-1");
}

/* A /proc/PID/stat with @comm and @state, pgrp @pgrp and starttime (field
 * 22) @start_time. */
static void
write_stat(const char *proc, GPid pid, const char *comm, char state, GPid pgrp, guint64 start_time)
{
    g_autofree gchar *pid_str = g_strdup_printf("%d", (int)pid);
    g_autofree gchar *dir = g_build_filename(proc, pid_str, NULL);
    g_autofree gchar *path = g_build_filename(dir, "stat", NULL);
    g_autofree gchar *stat = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    /* Fields 4 to 21, then 22 and a few after it. */
    stat = g_strdup_printf(
        "%d (%s) %c 1 %d %d 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 %" G_GUINT64_FORMAT
        " 12345678 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0\n",
        (int)pid, comm, state, (int)pgrp, (int)pgrp, start_time);
    g_file_set_contents(path, stat, -1, &error);
    g_assert_no_error(error);
}

static void
write_raw_stat(const char *proc, GPid pid, const char *contents)
{
    g_autofree gchar *pid_str = g_strdup_printf("%d", (int)pid);
    g_autofree gchar *dir = g_build_filename(proc, pid_str, NULL);
    g_autofree gchar *path = g_build_filename(dir, "stat", NULL);
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_file_set_contents(path, contents, -1, &error);
    g_assert_no_error(error);
}

static void
test_proc_start_time(Fixture *fx, gconstpointer data)
{
    g_autofree gchar *proc = path_for(fx, "proc");
    guint64 start_time = 0;
    gboolean zombie = TRUE;

    write_stat(proc, 4242, "a) (b ) S 9 9 (c", 'S', 4242, 987654);
    write_stat(proc, 4243, "x 1 2 3", 'Z', 4243, 555);
    write_stat(proc, 4244, "R", 'R', 4244, 42);
    write_raw_stat(proc, 4245, "4245 (no closing paren S 1 2 3\n");
    write_raw_stat(proc, 4246, "4246 (short) S 1 4246 4246 0\n");
    write_raw_stat(proc, 4247,
                   "4247 (bad) S 1 4247 4247 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 "
                   "notanumber 1 2\n");

    g_assert_true(einsora_process_read_start_time(proc, 4242, &start_time, &zombie));
    g_assert_cmpuint(start_time, ==, 987654);
    g_assert_false(zombie);
    g_assert_true(einsora_process_read_start_time(proc, 4243, &start_time, &zombie));
    g_assert_cmpuint(start_time, ==, 555);
    g_assert_true(zombie);
    g_assert_true(einsora_process_read_start_time(proc, 4244, &start_time, &zombie));
    g_assert_cmpuint(start_time, ==, 42);
    g_assert_false(zombie);
    /* Unparseable reads as no process at all. */
    g_assert_false(einsora_process_read_start_time(proc, 4245, &start_time, &zombie));
    g_assert_false(einsora_process_read_start_time(proc, 4246, &start_time, &zombie));
    g_assert_false(einsora_process_read_start_time(proc, 4247, &start_time, &zombie));
    g_assert_false(einsora_process_read_start_time(proc, 4999, &start_time, &zombie));
    g_assert_false(einsora_process_read_start_time(proc, 0, NULL, NULL));
    g_assert_false(einsora_process_read_start_time(proc, -1, NULL, NULL));

    /* And the real thing. */
    g_assert_true(einsora_process_read_start_time("/proc", getpid(), &start_time, &zombie));
    g_assert_cmpuint(start_time, >, 0);
    g_assert_false(zombie);
}

static void
test_proc_group_alive(Fixture *fx, gconstpointer data)
{
    g_autofree gchar *proc = path_for(fx, "proc");
    g_autofree gchar *self_dir = g_build_filename(proc, "self", NULL);

    g_assert_cmpint(g_mkdir_with_parents(self_dir, 0700), ==, 0);
    write_stat(proc, 10, "leader", 'Z', 10, 100);
    write_stat(proc, 11, "member (x)", 'S', 10, 101);
    write_stat(proc, 12, "other", 'S', 99, 102);
    g_assert_true(einsora_process_group_alive(proc, 10));
    g_assert_true(einsora_process_group_alive(proc, 99));
    g_assert_false(einsora_process_group_alive(proc, 5));
    /* Zombies don't count: nobody may ever reap them. */
    write_stat(proc, 11, "member (x)", 'Z', 10, 101);
    g_assert_false(einsora_process_group_alive(proc, 10));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* Commands are found in our PATH; a directory in it that a non-root
     * user can't search would turn "not found" into "permission denied". */
    g_setenv("PATH", "/usr/local/bin:/usr/bin:/bin", TRUE);

#define ADD(path, fn) g_test_add(path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
    ADD("/process/start/new-session", test_start_new_session);
    ADD("/process/start/log-and-cwd", test_start_log_and_cwd);
    ADD("/process/start/exact-environment", test_start_exact_environment);
    ADD("/process/start/state-file", test_start_state_file);
    ADD("/process/start/missing-binary", test_start_missing_binary);
    ADD("/process/start/refusals", test_start_refusals);
    ADD("/process/adopt/same-process", test_adopt_same_process);
    ADD("/process/adopt/reused-pid", test_adopt_reused_pid);
    ADD("/process/adopt/fingerprint-changed", test_adopt_fingerprint_changed);
    ADD("/process/adopt/nothing-recorded", test_adopt_nothing_recorded);
    ADD("/process/adopt/vanishes", test_adopt_vanishes);
    ADD("/process/adopt/leader-dies-unwatched", test_leader_dies_unwatched);
    ADD("/process/exit/leader-dies-watched", test_leader_dies_watched);
    ADD("/process/exit/with-code", test_exit_with_code);
    ADD("/process/exit/killed", test_exit_killed);
    ADD("/process/stop/whole-group", test_stop_whole_group);
    ADD("/process/stop/kills-after-grace", test_stop_kills_after_grace);
    ADD("/process/stop/not-running", test_stop_not_running);
    ADD("/process/stop/cancelled", test_stop_cancelled);
    ADD("/process/log/bounded", test_log_bounded);
    ADD("/process/forget", test_forget);
    ADD("/process/list-recorded", test_list_recorded);
    ADD("/process/proc/start-time", test_proc_start_time);
    ADD("/process/proc/group-alive", test_proc_group_alive);
#undef ADD
    return g_test_run();
}
