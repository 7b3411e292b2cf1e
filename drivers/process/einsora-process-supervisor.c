#define G_LOG_DOMAIN "einsora-process"

#include "einsora-process-supervisor.h"

#include "einsora-log-files.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROC_ROOT "/proc"
#define POLL_INTERVAL_MS_DEFAULT 1000
#define STOP_POLL_MS 50
/* A process still there this long after SIGKILL sits in the kernel
 * (uninterruptible sleep); waiting longer would make stop unbounded. */
#define KILL_WAIT_MS 5000
#define STATE_GROUP "process"
#define LABELS_GROUP "labels"

/* The fields of /proc/PID/stat the supervisor needs. */
typedef struct {
    char state;
    GPid pgrp;
    guint64 start_time;
} ProcStat;

typedef struct {
    EinsoraProcessSupervisor *self; /* unowned: the supervisor owns its processes */
    gchar *name;
    EinsoraProcessState state;
    int exit_status;
    GPid pid; /* also its process group and session */
    guint64 start_time;
    gchar *fingerprint;
    GHashTable *labels; /* key -> value */
    EinsoraLogTimes *log_times;
    /* Started here: our child, reaped by its watch. Adopted ones are
     * watched by polling. */
    gboolean own_child;
    GSource *child_watch;
    /* A signal was sent from here, so its end is a stop. */
    gboolean stopping;
} Process;

struct _EinsoraProcessSupervisor {
    GObject parent_instance;

    GMainContext *context;
    gchar *dir;
    gsize log_limit;
    guint stop_grace_ms;
    guint poll_interval_ms;
    GSource *poll;         /* runs while something runs */
    GHashTable *processes; /* name -> Process */
};

enum {
    SIGNAL_CHANGED,
    SIGNAL_LAST,
};

static guint signals[SIGNAL_LAST];

G_DEFINE_FINAL_TYPE(EinsoraProcessSupervisor, einsora_process_supervisor, G_TYPE_OBJECT)

static void
clear_source(GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
}

static void
process_free(Process *process)
{
    /* The child keeps running; only our watch on it ends. */
    clear_source(&process->child_watch);
    g_clear_pointer(&process->log_times, einsora_log_times_free);
    g_clear_pointer(&process->labels, g_hash_table_unref);
    g_free(process->fingerprint);
    g_free(process->name);
    g_free(process);
}

static Process *
process_new(EinsoraProcessSupervisor *self, const char *name)
{
    Process *process = g_new0(Process, 1);

    process->self = self;
    process->name = g_strdup(name);
    process->state = EINSORA_PROCESS_UNKNOWN;
    process->labels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    {
        g_autofree gchar *log = g_strconcat(name, ".log", NULL);
        g_autofree gchar *path = g_build_filename(self->dir, log, NULL);
        process->log_times = einsora_log_times_new(path);
    }
    return process;
}

static void
einsora_process_supervisor_finalize(GObject *object)
{
    EinsoraProcessSupervisor *self = EINSORA_PROCESS_SUPERVISOR(object);

    clear_source(&self->poll);
    g_clear_pointer(&self->processes, g_hash_table_unref);
    g_clear_pointer(&self->context, g_main_context_unref);
    g_free(self->dir);
    G_OBJECT_CLASS(einsora_process_supervisor_parent_class)->finalize(object);
}

static void
einsora_process_supervisor_class_init(EinsoraProcessSupervisorClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_process_supervisor_finalize;
    signals[SIGNAL_CHANGED] = g_signal_new("changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                           0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
einsora_process_supervisor_init(EinsoraProcessSupervisor *self)
{
    self->context = g_main_context_ref_thread_default();
    self->log_limit = EINSORA_PROCESS_LOG_LIMIT_DEFAULT;
    self->stop_grace_ms = EINSORA_PROCESS_STOP_GRACE_MS_DEFAULT;
    self->poll_interval_ms = POLL_INTERVAL_MS_DEFAULT;
    self->processes =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)process_free);
}

EinsoraProcessSupervisor *
einsora_process_supervisor_new(const char *dir, GError **error)
{
    g_autoptr(EinsoraProcessSupervisor) self = NULL;

    g_return_val_if_fail(dir != NULL, NULL);
    if (g_mkdir_with_parents(dir, 0700) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't create %s: %s", dir,
                    g_strerror(saved));
        return NULL;
    }
    self = g_object_new(EINSORA_TYPE_PROCESS_SUPERVISOR, NULL);
    self->dir = g_strdup(dir);
    return g_steal_pointer(&self);
}

/* Names become file names: keep them to one safe path component. */
static gboolean
name_is_valid(const char *name)
{
    if (name == NULL || *name == '\0' || strlen(name) > 128)
        return FALSE;
    for (const char *c = name; *c != '\0'; c++) {
        if (!g_ascii_isalnum(*c) && *c != '-')
            return FALSE;
    }
    return TRUE;
}

static gboolean
check_name(const char *name, GError **error)
{
    if (name_is_valid(name))
        return TRUE;
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "process name '%s' is not made of [A-Za-z0-9-]", name != NULL ? name : "");
    return FALSE;
}

static gchar *
file_for(EinsoraProcessSupervisor *self, const char *name, const char *suffix)
{
    g_autofree gchar *base = g_strconcat(name, suffix, NULL);

    return g_build_filename(self->dir, base, NULL);
}

static Process *
process_lookup(EinsoraProcessSupervisor *self, const char *name)
{
    if (name == NULL)
        return NULL;
    return g_hash_table_lookup(self->processes, name);
}

static void
process_replace(EinsoraProcessSupervisor *self, Process *process)
{
    g_hash_table_replace(self->processes, process->name, process);
}

static gboolean
parse_stat(const char *contents, ProcStat *out)
{
    /* comm (field 2) may hold spaces and parentheses; it ends at the last
     * ')'. Field 3 (state) follows, then 4, 5 (pgrp) ... 22 (starttime). */
    const char *end = strrchr(contents, ')');
    g_auto(GStrv) fields = NULL;
    guint64 pgrp;

    if (end == NULL || end[1] != ' ')
        return FALSE;
    fields = g_strsplit(end + 2, " ", 21);
    if (g_strv_length(fields) < 20 || strlen(fields[0]) != 1)
        return FALSE;
    g_strchomp(fields[19]);
    if (!g_ascii_string_to_unsigned(fields[2], 10, 0, G_MAXINT, &pgrp, NULL))
        return FALSE;
    if (!g_ascii_string_to_unsigned(fields[19], 10, 0, G_MAXUINT64, &out->start_time, NULL))
        return FALSE;
    out->state = fields[0][0];
    out->pgrp = (GPid)pgrp;
    return TRUE;
}

static gboolean
read_stat(const char *proc_root, GPid pid, ProcStat *out)
{
    g_autofree gchar *pid_str = g_strdup_printf("%d", (int)pid);
    g_autofree gchar *path = g_build_filename(proc_root, pid_str, "stat", NULL);
    g_autofree gchar *contents = NULL;

    if (pid <= 0)
        return FALSE;
    /* Gone, or never there: both read as no such process. */
    if (!g_file_get_contents(path, &contents, NULL, NULL))
        return FALSE;
    return parse_stat(contents, out);
}

gboolean
einsora_process_read_start_time(const char *proc_root, GPid pid, guint64 *start_time,
                                gboolean *zombie)
{
    ProcStat st = {0};

    if (!read_stat(proc_root, pid, &st))
        return FALSE;
    if (start_time != NULL)
        *start_time = st.start_time;
    if (zombie != NULL)
        *zombie = st.state == 'Z';
    return TRUE;
}

gboolean
einsora_process_group_alive(const char *proc_root, GPid pgid)
{
    g_autoptr(GDir) dir = g_dir_open(proc_root, 0, NULL);
    const char *entry;

    if (dir == NULL || pgid <= 0)
        return FALSE;
    while ((entry = g_dir_read_name(dir)) != NULL) {
        guint64 pid;
        ProcStat st = {0};

        if (!g_ascii_string_to_unsigned(entry, 10, 1, G_MAXINT, &pid, NULL))
            continue;
        /* Zombies hold nothing and some containers' PID 1 never reaps
         * them, so they don't keep a group alive. */
        if (read_stat(proc_root, (GPid)pid, &st) && st.pgrp == pgid && st.state != 'Z')
            return TRUE;
    }
    return FALSE;
}

/* Whether @pid still names the process that started at @start_time, alive. */
static gboolean
process_is_alive(GPid pid, guint64 start_time)
{
    ProcStat st = {0};

    if (start_time == 0 || !read_stat(PROC_ROOT, pid, &st))
        return FALSE;
    return st.state != 'Z' && st.start_time == start_time && st.pgrp == pid;
}

/* Whether @pid now names another process: then its old group is gone too,
 * since the kernel doesn't reuse a PID that still names a group. */
static gboolean
pid_reused(GPid pid, guint64 start_time)
{
    ProcStat st = {0};

    return read_stat(PROC_ROOT, pid, &st) && st.start_time != start_time;
}

static void
signal_group(GPid pgid, guint64 start_time, int sig)
{
    int saved;

    if (pid_reused(pgid, start_time))
        return;
    if (kill(-pgid, sig) == 0 || errno == ESRCH)
        return;
    saved = errno;
    g_message("process group %d: can't send signal %d: %s", (int)pgid, sig, g_strerror(saved));
}

static void
process_set_ended(Process *process, EinsoraProcessState state, int exit_status)
{
    EinsoraProcessSupervisor *self = process->self;
    g_autofree gchar *name = g_strdup(process->name);

    process->state = state;
    process->exit_status = exit_status;
    /* Its leader ended without being asked: whatever else of its group
     * still runs (a sandbox's init and server, when only the outer bwrap
     * died) goes too, so nothing of it outlives what is reported. The
     * group's ID can't be reused while any member lives. */
    if (state != EINSORA_PROCESS_STOPPED && process->pid > 1 &&
        einsora_process_group_alive(PROC_ROOT, process->pid)) {
        g_message("%s: killing what is left of process group %d", name, (int)process->pid);
        kill(-process->pid, SIGKILL);
    }
    switch (state) {
    case EINSORA_PROCESS_EXITED:
        g_message("%s: PID %d exited with code %d", name, (int)process->pid, exit_status);
        break;
    case EINSORA_PROCESS_KILLED:
        g_message("%s: PID %d killed by signal %d (%s)", name, (int)process->pid, exit_status,
                  g_strsignal(exit_status));
        break;
    case EINSORA_PROCESS_VANISHED:
        g_message("%s: PID %d is gone", name, (int)process->pid);
        break;
    case EINSORA_PROCESS_STOPPED:
        g_debug("%s: PID %d stopped", name, (int)process->pid);
        break;
    case EINSORA_PROCESS_RUNNING:
    case EINSORA_PROCESS_UNKNOWN:
    default:
        g_return_if_reached();
    }
    /* A handler may forget or restart it: @process isn't used after this. */
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0, name);
}

static gboolean
copy_fd(int from, int to, GError **error)
{
    char buffer[65536];

    for (;;) {
        ssize_t got = read(from, buffer, sizeof(buffer));
        ssize_t done = 0;

        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int saved = errno;
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "read: %s",
                        g_strerror(saved));
            return FALSE;
        }
        if (got == 0)
            return TRUE;
        while (done < got) {
            ssize_t put = write(to, buffer + done, (size_t)(got - done));
            if (put < 0 && errno == EINTR)
                continue;
            if (put < 0) {
                int saved = errno;
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "write: %s",
                            g_strerror(saved));
                return FALSE;
            }
            done += put;
        }
    }
}

/* The child holds an O_APPEND descriptor on the log, so a rename wouldn't
 * move its writes: copy the log to .log.1, then truncate it in place, and
 * the child's next write lands at the new end. Output written between the
 * copy and the truncation is lost. */
static gboolean
rotate_log(EinsoraProcessSupervisor *self, Process *process, GError **error)
{
    g_autofree gchar *path = file_for(self, process->name, ".log");
    g_autofree gchar *old_path = file_for(self, process->name, ".log.1");
    struct stat st;
    int from;
    int to;
    gboolean ok;

    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return TRUE;
    /* How long it was when, for readers asking for output since a time. */
    einsora_log_times_note(process->log_times, (gint64)st.st_size, g_get_real_time() / 1000);
    if ((gsize)st.st_size <= self->log_limit)
        return TRUE;
    from = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (from < 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't open %s: %s", path,
                    g_strerror(saved));
        return FALSE;
    }
    /* Made afresh, so it is ours, 0600, and never a link to elsewhere. */
    if (unlink(old_path) != 0 && errno != ENOENT) {
        int saved = errno;
        close(from);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't remove %s: %s",
                    old_path, g_strerror(saved));
        return FALSE;
    }
    to = open(old_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (to < 0) {
        int saved = errno;
        close(from);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't create %s: %s",
                    old_path, g_strerror(saved));
        return FALSE;
    }
    ok = copy_fd(from, to, error);
    close(to);
    if (ok && ftruncate(from, 0) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't truncate %s: %s", path,
                    g_strerror(saved));
        ok = FALSE;
    }
    close(from);
    if (ok)
        einsora_log_times_rotated(process->log_times);
    return ok;
}

static gboolean on_poll(gpointer user_data);

static gboolean
any_running(EinsoraProcessSupervisor *self)
{
    GHashTableIter iter;
    Process *process;

    g_hash_table_iter_init(&iter, self->processes);
    while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&process)) {
        if (process->state == EINSORA_PROCESS_RUNNING)
            return TRUE;
    }
    return FALSE;
}

static void
ensure_poll(EinsoraProcessSupervisor *self)
{
    if (self->poll != NULL)
        return;
    self->poll = g_timeout_source_new(self->poll_interval_ms);
    g_source_set_callback(self->poll, on_poll, self, NULL);
    g_source_attach(self->poll, self->context);
}

/* Adopted processes aren't our children, so nothing tells us when they
 * end: look in /proc. Logs of everything running are kept bounded. */
static gboolean
on_poll(gpointer user_data)
{
    EinsoraProcessSupervisor *self = user_data;
    g_autoptr(EinsoraProcessSupervisor) hold = g_object_ref(self);
    g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter iter;
    Process *process;
    gboolean running = FALSE;

    g_hash_table_iter_init(&iter, self->processes);
    while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&process)) {
        g_autoptr(GError) error = NULL;

        if (process->state != EINSORA_PROCESS_RUNNING)
            continue;
        if (!rotate_log(self, process, &error))
            g_message("%s: log not rotated: %s", process->name, error->message);
        if (!process->own_child && !process_is_alive(process->pid, process->start_time))
            g_ptr_array_add(gone, g_strdup(process->name));
        else
            running = TRUE;
    }
    /* Signal handlers may change the table: end them after the walk. */
    for (guint i = 0; i < gone->len; i++) {
        process = process_lookup(self, g_ptr_array_index(gone, i));
        if (process != NULL && process->state == EINSORA_PROCESS_RUNNING)
            process_set_ended(
                process, process->stopping ? EINSORA_PROCESS_STOPPED : EINSORA_PROCESS_VANISHED, 0);
    }
    /* Handlers may have started something meanwhile. */
    if (running || any_running(self))
        return G_SOURCE_CONTINUE;
    if (self->poll == g_main_current_source())
        g_clear_pointer(&self->poll, g_source_unref);
    return G_SOURCE_REMOVE;
}

void
einsora_process_supervisor_set_log_limit(EinsoraProcessSupervisor *self, gsize bytes)
{
    g_return_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self));
    self->log_limit = bytes;
}

void
einsora_process_supervisor_set_stop_grace(EinsoraProcessSupervisor *self, guint grace_ms)
{
    g_return_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self));
    self->stop_grace_ms = grace_ms;
}

void
einsora_process_supervisor_set_poll_interval(EinsoraProcessSupervisor *self, guint interval_ms)
{
    g_return_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self));
    self->poll_interval_ms = MAX(interval_ms, 1);
    if (self->poll == NULL)
        return;
    clear_source(&self->poll);
    ensure_poll(self);
}

/* Runs in the child between fork and exec: async-signal-safe calls only. */
static void
child_setup(gpointer user_data)
{
    sigset_t all;

    /* Its own session and group, so a stop reaches all it starts and a
     * daemon's terminal or group signals don't. */
    setsid();
    /* Ignored signals and the mask survive exec; start it clean. */
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    }
}

static void
on_child_exit(GPid pid, gint wait_status, gpointer user_data)
{
    Process *process = user_data;

    /* Dispatched once, then destroyed by its context. */
    g_clear_pointer(&process->child_watch, g_source_unref);
    if (process->stopping)
        process_set_ended(process, EINSORA_PROCESS_STOPPED, 0);
    else if (WIFSIGNALED(wait_status))
        process_set_ended(process, EINSORA_PROCESS_KILLED, WTERMSIG(wait_status));
    else
        process_set_ended(process, EINSORA_PROCESS_EXITED,
                          WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
}

static gboolean
write_state(EinsoraProcessSupervisor *self, Process *process, GError **error)
{
    g_autoptr(GKeyFile) keys = g_key_file_new();
    g_autofree gchar *path = file_for(self, process->name, ".state");
    g_autofree gchar *data = NULL;
    gsize length = 0;
    GHashTableIter iter;
    const char *key;
    const char *value;

    g_key_file_set_int64(keys, STATE_GROUP, "pid", process->pid);
    g_key_file_set_uint64(keys, STATE_GROUP, "start_time", process->start_time);
    g_key_file_set_string(keys, STATE_GROUP, "fingerprint", process->fingerprint);
    g_hash_table_iter_init(&iter, process->labels);
    while (g_hash_table_iter_next(&iter, (gpointer *)&key, (gpointer *)&value))
        g_key_file_set_string(keys, LABELS_GROUP, key, value);
    data = g_key_file_to_data(keys, &length, NULL);
    if (!g_file_set_contents_full(path, data, (gssize)length, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                  error)) {
        g_prefix_error(error, "state of %s not written: ", process->name);
        return FALSE;
    }
    return TRUE;
}

static gboolean
parse_labels(const char *const *labels, GHashTable *into, GError **error)
{
    for (guint i = 0; labels != NULL && labels[i] != NULL; i++) {
        const char *equals = strchr(labels[i], '=');
        g_autofree gchar *key = NULL;
        gboolean valid;

        valid = equals != NULL && equals != labels[i];
        for (const char *c = labels[i]; valid && c < equals; c++)
            valid = g_ascii_islower(*c) || *c == '_';
        if (!valid) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                        "label %u is not key=value with a key of [a-z_]", i);
            return FALSE;
        }
        key = g_strndup(labels[i], (gsize)(equals - labels[i]));
        g_hash_table_replace(into, g_steal_pointer(&key), g_strdup(equals + 1));
    }
    return TRUE;
}

static int
open_log(EinsoraProcessSupervisor *self, const char *name, GError **error)
{
    g_autofree gchar *path = file_for(self, name, ".log");
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't open %s: %s", path,
                    g_strerror(saved));
    }
    return fd;
}

gboolean
einsora_process_supervisor_start(EinsoraProcessSupervisor *self, const char *name,
                                 const char *const *argv, const char *const *envp, const char *cwd,
                                 const char *fingerprint, const char *const *labels, GError **error)
{
    const char *const no_env[] = {NULL};
    Process *running;
    Process *process;
    gboolean spawned;
    int null_fd;
    int log_fd;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), FALSE);
    g_return_val_if_fail(argv != NULL && argv[0] != NULL, FALSE);
    if (!check_name(name, error))
        return FALSE;
    running = process_lookup(self, name);
    if (running != NULL && running->state == EINSORA_PROCESS_RUNNING) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s runs already (PID %d); stop it first",
                    name, (int)running->pid);
        return FALSE;
    }
    process = process_new(self, name);
    process->fingerprint = g_strdup(fingerprint != NULL ? fingerprint : "");
    if (!parse_labels(labels, process->labels, error)) {
        process_free(process);
        return FALSE;
    }
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't open /dev/null: %s",
                    g_strerror(saved));
        process_free(process);
        return FALSE;
    }
    log_fd = open_log(self, name, error);
    if (log_fd < 0) {
        close(null_fd);
        process_free(process);
        return FALSE;
    }
    /* Output goes to the file itself, never through a pipe to us: a pipe
     * would kill it with SIGPIPE once the daemon is gone. The PID comes
     * back from the spawn itself and the child stays unreaped until its
     * watch runs, so even a process that ends at once has a known PID
     * (GSubprocess forgets it as soon as the child exits). */
    spawned = g_spawn_async_with_pipes_and_fds(cwd, argv, envp != NULL ? envp : no_env,
                                               G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                               child_setup, NULL, null_fd, log_fd, log_fd, NULL,
                                               NULL, 0, &process->pid, NULL, NULL, NULL, error);
    close(null_fd);
    close(log_fd);
    if (!spawned) {
        g_prefix_error(error, "can't start %s: ", name);
        process_free(process);
        return FALSE;
    }

    process->own_child = TRUE;
    process->state = EINSORA_PROCESS_RUNNING;
    /* Nothing reaps it before its watch exists, so /proc has it, if only
     * as a zombie. 0 otherwise, which no adoption ever matches. */
    if (!einsora_process_read_start_time(PROC_ROOT, process->pid, &process->start_time, NULL))
        process->start_time = 0;
    process->child_watch = g_child_watch_source_new(process->pid);
    g_source_set_callback(process->child_watch, G_SOURCE_FUNC(on_child_exit), process, NULL);
    g_source_attach(process->child_watch, self->context);
    process_replace(self, process);
    g_message("%s: started, PID %d", name, (int)process->pid);

    /* A process nobody could adopt after a restart would run unsupervised. */
    if (!write_state(self, process, error)) {
        process->stopping = TRUE;
        signal_group(process->pid, process->start_time, SIGKILL);
        return FALSE;
    }
    ensure_poll(self);
    return TRUE;
}

/* Whether @pid names a live process, whatever its start time (a zombie
 * is dead, though its ID stays taken until it is reaped). */
static gboolean
process_lives(GPid pid)
{
    guint64 start_time = 0;
    gboolean zombie = FALSE;

    return einsora_process_read_start_time(PROC_ROOT, pid, &start_time, &zombie) && !zombie;
}

EinsoraProcessAdoption
einsora_process_supervisor_adopt(EinsoraProcessSupervisor *self, const char *name,
                                 const char *fingerprint)
{
    g_autoptr(GKeyFile) keys = g_key_file_new();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path = NULL;
    g_auto(GStrv) label_keys = NULL;
    Process *process;
    gint64 pid;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), EINSORA_PROCESS_GONE);
    if (fingerprint == NULL)
        fingerprint = "";
    if (!name_is_valid(name))
        return EINSORA_PROCESS_GONE;
    process = process_lookup(self, name);
    if (process != NULL && process->state == EINSORA_PROCESS_RUNNING)
        return g_strcmp0(process->fingerprint, fingerprint) == 0
                   ? EINSORA_PROCESS_ADOPTED
                   : EINSORA_PROCESS_FINGERPRINT_CHANGED;

    path = file_for(self, name, ".state");
    if (!g_key_file_load_from_file(keys, path, G_KEY_FILE_NONE, &error)) {
        if (!g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            g_message("%s: state not read: %s", name, error->message);
        g_hash_table_remove(self->processes, name);
        return EINSORA_PROCESS_GONE;
    }
    process = process_new(self, name);
    process->state = EINSORA_PROCESS_VANISHED;
    pid = g_key_file_get_int64(keys, STATE_GROUP, "pid", NULL);
    process->pid = pid > 0 && pid <= G_MAXINT ? (GPid)pid : 0;
    process->start_time = g_key_file_get_uint64(keys, STATE_GROUP, "start_time", NULL);
    process->fingerprint = g_key_file_get_string(keys, STATE_GROUP, "fingerprint", NULL);
    label_keys = g_key_file_get_keys(keys, LABELS_GROUP, NULL, NULL);
    for (guint i = 0; label_keys != NULL && label_keys[i] != NULL; i++) {
        gchar *value = g_key_file_get_string(keys, LABELS_GROUP, label_keys[i], NULL);
        if (value != NULL)
            g_hash_table_replace(process->labels, g_strdup(label_keys[i]), value);
    }
    process_replace(self, process);

    /* Only the same PID with the same start time is the same process. */
    if (!process_is_alive(process->pid, process->start_time)) {
        g_message("%s: recorded PID %d is gone", name, (int)process->pid);
        /* Its leader died while nobody watched, but members of its group
         * may live on. The group's ID can't have been reused while they
         * do, so a group under that ID with no process of that ID is
         * what is left of it. */
        if (process->pid > 1 && !process_lives(process->pid) &&
            einsora_process_group_alive(PROC_ROOT, process->pid)) {
            g_message("%s: killing what is left of process group %d", name, (int)process->pid);
            kill(-process->pid, SIGKILL);
        }
        return EINSORA_PROCESS_GONE;
    }
    process->state = EINSORA_PROCESS_RUNNING;
    ensure_poll(self);
    if (g_strcmp0(process->fingerprint, fingerprint) != 0) {
        g_message("%s: PID %d runs under another sandbox fingerprint", name, (int)process->pid);
        return EINSORA_PROCESS_FINGERPRINT_CHANGED;
    }
    g_message("%s: adopted PID %d", name, (int)process->pid);
    return EINSORA_PROCESS_ADOPTED;
}

static gint
compare_names(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

gchar **
einsora_process_supervisor_list_recorded(EinsoraProcessSupervisor *self)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GDir) dir = NULL;
    const char *entry;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), NULL);
    dir = g_dir_open(self->dir, 0, NULL);
    while (dir != NULL && (entry = g_dir_read_name(dir)) != NULL) {
        g_autofree gchar *name = NULL;

        if (!g_str_has_suffix(entry, ".state"))
            continue;
        name = g_strndup(entry, strlen(entry) - strlen(".state"));
        if (name_is_valid(name))
            g_ptr_array_add(names, g_steal_pointer(&name));
    }
    g_ptr_array_sort(names, compare_names);
    g_ptr_array_add(names, NULL);
    return (gchar **)g_ptr_array_free(g_steal_pointer(&names), FALSE);
}

EinsoraProcessState
einsora_process_supervisor_get_state(EinsoraProcessSupervisor *self, const char *name,
                                     int *exit_status)
{
    Process *process;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), EINSORA_PROCESS_UNKNOWN);
    process = process_lookup(self, name);
    if (exit_status != NULL)
        *exit_status = process != NULL ? process->exit_status : 0;
    return process != NULL ? process->state : EINSORA_PROCESS_UNKNOWN;
}

GPid
einsora_process_supervisor_get_pid(EinsoraProcessSupervisor *self, const char *name)
{
    Process *process;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), 0);
    process = process_lookup(self, name);
    if (process == NULL || process->state != EINSORA_PROCESS_RUNNING)
        return 0;
    return process->pid;
}

guint64
einsora_process_supervisor_get_start_time(EinsoraProcessSupervisor *self, const char *name)
{
    Process *process;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), 0);
    process = process_lookup(self, name);
    if (process == NULL || process->state != EINSORA_PROCESS_RUNNING)
        return 0;
    return process->start_time;
}

const char *
einsora_process_supervisor_get_label(EinsoraProcessSupervisor *self, const char *name,
                                     const char *key)
{
    Process *process;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), NULL);
    process = process_lookup(self, name);
    if (process == NULL || key == NULL)
        return NULL;
    return g_hash_table_lookup(process->labels, key);
}

static gboolean remove_file(const char *path, GError **error);

/* Read straight from the state file: what the caller needs to rebuild
 * the fingerprint it then hands to adopt(). */
gchar *
einsora_process_supervisor_read_label(EinsoraProcessSupervisor *self, const char *name,
                                      const char *key)
{
    g_autoptr(GKeyFile) keys = g_key_file_new();
    g_autofree gchar *path = NULL;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), NULL);
    if (!name_is_valid(name) || key == NULL)
        return NULL;
    path = file_for(self, name, ".state");
    if (!g_key_file_load_from_file(keys, path, G_KEY_FILE_NONE, NULL))
        return NULL;
    return g_key_file_get_string(keys, LABELS_GROUP, key, NULL);
}

gboolean
einsora_process_supervisor_clear_state(EinsoraProcessSupervisor *self, const char *name,
                                       GError **error)
{
    g_autofree gchar *path = NULL;
    Process *process;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), FALSE);
    if (!check_name(name, error))
        return FALSE;
    process = process_lookup(self, name);
    if (process != NULL && process->state == EINSORA_PROCESS_RUNNING) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s still runs (PID %d); stop it first",
                    name, (int)process->pid);
        return FALSE;
    }
    path = file_for(self, name, ".state");
    return remove_file(path, error);
}

/* One stop in flight. It owns its task; its sources point at it and are
 * destroyed before it is freed, so the task is answered exactly once. */
typedef struct {
    EinsoraProcessSupervisor *self; /* the task holds a reference */
    GTask *task;
    gchar *name;
    GPid pgid;
    guint64 start_time;
    gboolean own_child;
    gint64 kill_at;    /* monotonic µs */
    gint64 give_up_at; /* after SIGKILL */
    gboolean killed;
    GSource *poll;
    GSource *cancel_watch;
} StopOp;

static void
stop_op_finish(StopOp *op, GError *error)
{
    g_autoptr(GTask) task = g_steal_pointer(&op->task);

    clear_source(&op->poll);
    clear_source(&op->cancel_watch);
    g_free(op->name);
    g_free(op);
    if (error != NULL)
        g_task_return_error(task, error);
    else
        g_task_return_boolean(task, TRUE);
}

static gboolean
on_stop_cancelled(GCancellable *cancellable, gpointer user_data)
{
    StopOp *op = user_data;

    stop_op_finish(
        op, g_error_new(G_IO_ERROR, G_IO_ERROR_CANCELLED, "stopping %s cancelled", op->name));
    return G_SOURCE_REMOVE;
}

static gboolean
stop_op_group_gone(StopOp *op)
{
    Process *process;

    if (!pid_reused(op->pgid, op->start_time) && einsora_process_group_alive(PROC_ROOT, op->pgid))
        return FALSE;
    /* Our own child is done once reaped, so its end is recorded. */
    process = process_lookup(op->self, op->name);
    if (op->own_child && process != NULL && process->pid == op->pgid &&
        process->state == EINSORA_PROCESS_RUNNING)
        return FALSE;
    return TRUE;
}

static gboolean
on_stop_poll(gpointer user_data)
{
    StopOp *op = user_data;
    gint64 now = g_get_monotonic_time();
    Process *process;

    if (stop_op_group_gone(op)) {
        process = process_lookup(op->self, op->name);
        if (process != NULL && process->pid == op->pgid &&
            process->state == EINSORA_PROCESS_RUNNING)
            process_set_ended(process, EINSORA_PROCESS_STOPPED, 0);
        stop_op_finish(op, NULL);
        return G_SOURCE_REMOVE;
    }
    if (!op->killed && now >= op->kill_at) {
        g_message("%s: process group %d still there after the grace period; sending SIGKILL",
                  op->name, (int)op->pgid);
        signal_group(op->pgid, op->start_time, SIGKILL);
        op->killed = TRUE;
        op->give_up_at = now + KILL_WAIT_MS * G_TIME_SPAN_MILLISECOND;
    } else if (op->killed && now >= op->give_up_at) {
        stop_op_finish(op, g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                       "process group %d of %s still there %d ms after SIGKILL",
                                       (int)op->pgid, op->name, KILL_WAIT_MS));
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

void
einsora_process_supervisor_stop_async(EinsoraProcessSupervisor *self, const char *name,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data)
{
    g_autoptr(GTask) task = NULL;
    Process *process;
    StopOp *op;

    g_return_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self));
    task = g_task_new(self, cancellable, callback, user_data);
    g_task_set_source_tag(task, einsora_process_supervisor_stop_async);
    if (g_task_return_error_if_cancelled(task))
        return;
    process = process_lookup(self, name);
    if (process == NULL || process->state != EINSORA_PROCESS_RUNNING) {
        g_task_return_boolean(task, TRUE);
        return;
    }

    process->stopping = TRUE;
    g_debug("%s: stopping process group %d", name, (int)process->pid);
    signal_group(process->pid, process->start_time, SIGTERM);
    op = g_new0(StopOp, 1);
    op->self = self;
    op->task = g_steal_pointer(&task);
    op->name = g_strdup(name);
    op->pgid = process->pid;
    op->start_time = process->start_time;
    op->own_child = process->own_child;
    op->kill_at = g_get_monotonic_time() + (gint64)self->stop_grace_ms * G_TIME_SPAN_MILLISECOND;
    op->poll = g_timeout_source_new(STOP_POLL_MS);
    g_source_set_callback(op->poll, on_stop_poll, op, NULL);
    g_source_attach(op->poll, self->context);
    if (cancellable != NULL) {
        op->cancel_watch = g_cancellable_source_new(cancellable);
        g_source_set_callback(op->cancel_watch, G_SOURCE_FUNC(on_stop_cancelled), op, NULL);
        g_source_attach(op->cancel_watch, self->context);
    }
}

gboolean
einsora_process_supervisor_stop_finish(EinsoraProcessSupervisor *self, GAsyncResult *result,
                                       GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    g_return_val_if_fail(
        g_task_get_source_tag(G_TASK(result)) == einsora_process_supervisor_stop_async, FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}

static gboolean
remove_file(const char *path, GError **error)
{
    int saved;

    if (g_unlink(path) == 0 || errno == ENOENT)
        return TRUE;
    saved = errno;
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't remove %s: %s", path,
                g_strerror(saved));
    return FALSE;
}

gboolean
einsora_process_supervisor_forget(EinsoraProcessSupervisor *self, const char *name, GError **error)
{
    const char *const suffixes[] = {".state", ".log", ".log.1", ".log.times", ".log.1.times"};
    Process *process;

    g_return_val_if_fail(EINSORA_IS_PROCESS_SUPERVISOR(self), FALSE);
    if (!check_name(name, error))
        return FALSE;
    process = process_lookup(self, name);
    if (process != NULL && process->state == EINSORA_PROCESS_RUNNING) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s still runs (PID %d); stop it first",
                    name, (int)process->pid);
        return FALSE;
    }
    g_hash_table_remove(self->processes, name);
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *path = file_for(self, name, suffixes[i]);
        if (!remove_file(path, error))
            return FALSE;
    }
    return TRUE;
}
