/* The process supervisor: runs each workload's server in its own session
 * and process group, so a daemon restart never kills it (no
 * die-with-parent), with its output in a bounded log file and a state
 * file (PID, its start time from /proc, the sandbox fingerprint, and the
 * caller's labels). A restarted daemon adopts a process only when its PID
 * still names a live process with the recorded start time, so a reused
 * PID is never mistaken for it. Stopping sends SIGTERM to the group, then
 * SIGKILL after a grace period. Every name is a workload ID (or another
 * [A-Za-z0-9-] name); files live in the supervisor's directory:
 *   <dir>/<name>.state   written 0600 with a rename, never half-written
 *   <dir>/<name>.log     0600, O_APPEND; when over the limit (checked each
 *                        poll) it is copied to <name>.log.1 and truncated
 *                        in place (the child's O_APPEND descriptor then
 *                        writes at the new end), so about twice the limit
 *                        is kept; <name>.log.times says how long it
 *                        was when (einsora-log-files.h)
 * Timers and child watches run on the main context that was
 * thread-default when the supervisor was made; there are no threads.
 * Dropping the supervisor leaves its processes running (a child that
 * ends later stays a zombie until the daemon exits).
 * Errors are G_IO_ERROR (G_IO_ERROR_INVALID_ARGUMENT for a bad name or
 * label, G_IO_ERROR_BUSY when it runs already or still runs), except a
 * failed spawn, which keeps g_spawn's G_SPAWN_ERROR. Processes are
 * spawned with g_spawn_async_with_pipes_and_fds() and watched with a
 * child watch, not GSubprocess: GSubprocess forgets the PID as soon as
 * the child exits, so a process that ends at once would have none. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_PROCESS_LOG_LIMIT_DEFAULT (1024 * 1024)
#define EINSORA_PROCESS_STOP_GRACE_MS_DEFAULT 10000

typedef enum {
    /* Still running (started here, or adopted). */
    EINSORA_PROCESS_RUNNING,
    /* Stopped through einsora_process_supervisor_stop_async(). */
    EINSORA_PROCESS_STOPPED,
    /* Started here and exited by itself; exit_status holds its code. */
    EINSORA_PROCESS_EXITED,
    /* Started here and killed by a signal nobody here sent; exit_status
     * holds the signal (SIGKILL from nobody here usually means the
     * kernel's out-of-memory killer). */
    EINSORA_PROCESS_KILLED,
    /* Adopted (or recorded in a state file) and gone: how it ended is
     * unknown, only that it stopped by itself. */
    EINSORA_PROCESS_VANISHED,
    /* Nothing known under that name. */
    EINSORA_PROCESS_UNKNOWN,
} EinsoraProcessState;

typedef enum {
    /* Its recorded process still runs, same PID and start time, same
     * fingerprint: it is supervised again. */
    EINSORA_PROCESS_ADOPTED,
    /* No state file, or its process is gone (or the PID now names another
     * process): its state is VANISHED if there was a state file. */
    EINSORA_PROCESS_GONE,
    /* Its process still runs but under another sandbox fingerprint. It is
     * supervised (RUNNING) so the caller can stop it. */
    EINSORA_PROCESS_FINGERPRINT_CHANGED,
} EinsoraProcessAdoption;

#define EINSORA_TYPE_PROCESS_SUPERVISOR (einsora_process_supervisor_get_type())
G_DECLARE_FINAL_TYPE(EinsoraProcessSupervisor, einsora_process_supervisor, EINSORA,
                     PROCESS_SUPERVISOR, GObject)

/* @dir is created 0700 if missing. */
EinsoraProcessSupervisor *einsora_process_supervisor_new(const char *dir, GError **error);

void einsora_process_supervisor_set_log_limit(EinsoraProcessSupervisor *self, gsize bytes);
void einsora_process_supervisor_set_stop_grace(EinsoraProcessSupervisor *self, guint grace_ms);
/* How often adopted processes are checked for having gone, and logs for
 * their size; default 1 s. */
void einsora_process_supervisor_set_poll_interval(EinsoraProcessSupervisor *self,
                                                  guint interval_ms);

/* Starts @argv (argv[0] a path, or found in the daemon's PATH, not in
 * @envp's) with exactly @envp (NULL: an empty environment), in @cwd (NULL:
 * ours), stdin /dev/null, stdout and stderr appended to <name>.log, in a
 * new session, with default signal dispositions and an empty signal mask;
 * then writes <name>.state with @fingerprint (NULL: "") and @labels
 * (NULL-terminated "key=value" strings, keys [a-z_]+). Fails with
 * G_IO_ERROR_BUSY if @name runs already, G_SPAWN_ERROR_NOENT (as a
 * G_SPAWN_ERROR) when argv[0] can't be found. If the state file can't be
 * written the process is killed (its state becomes STOPPED) and the call
 * fails. */
gboolean einsora_process_supervisor_start(EinsoraProcessSupervisor *self, const char *name,
                                          const char *const *argv, const char *const *envp,
                                          const char *cwd, const char *fingerprint,
                                          const char *const *labels, GError **error);

/* Reads <name>.state and supervises its process again if it still runs. */
EinsoraProcessAdoption einsora_process_supervisor_adopt(EinsoraProcessSupervisor *self,
                                                        const char *name, const char *fingerprint);

/* Names that have a state file in the directory, sorted. */
gchar **einsora_process_supervisor_list_recorded(EinsoraProcessSupervisor *self);

EinsoraProcessState einsora_process_supervisor_get_state(EinsoraProcessSupervisor *self,
                                                         const char *name, int *exit_status);
/* 0 when nothing runs under @name. */
GPid einsora_process_supervisor_get_pid(EinsoraProcessSupervisor *self, const char *name);
/* The process's start time in clock ticks after boot (/proc/PID/stat
 * field 22), 0 when nothing runs under @name. */
guint64 einsora_process_supervisor_get_start_time(EinsoraProcessSupervisor *self, const char *name);
/* A label from its state file; NULL if none. */
const char *einsora_process_supervisor_get_label(EinsoraProcessSupervisor *self, const char *name,
                                                 const char *key);

/* A label from <name>.state as written, without adopting anything: what
 * a caller needs to rebuild the fingerprint it hands to adopt(). */
gchar *einsora_process_supervisor_read_label(EinsoraProcessSupervisor *self, const char *name,
                                             const char *key);
/* Deletes <name>.state and keeps the logs: a process that was stopped on
 * purpose has nothing left to adopt. It must not run. */
gboolean einsora_process_supervisor_clear_state(EinsoraProcessSupervisor *self, const char *name,
                                                GError **error);

/* SIGTERM to its process group, SIGKILL after the grace period, and done
 * once no process of the group is left (zombies don't count) and, for a
 * process started here, it is reaped; then its state is STOPPED. A process
 * that leaves the group (setsid, setpgid) is out of reach. Stopping a
 * name that doesn't run succeeds at once. Cancelling ends the wait with
 * G_IO_ERROR_CANCELLED; the signals already sent stay sent, and its end is
 * STOPPED whenever it comes. G_IO_ERROR_TIMED_OUT if the group is still
 * there 5 s after SIGKILL (stuck in the kernel). */
void einsora_process_supervisor_stop_async(EinsoraProcessSupervisor *self, const char *name,
                                           GCancellable *cancellable, GAsyncReadyCallback callback,
                                           gpointer user_data);
gboolean einsora_process_supervisor_stop_finish(EinsoraProcessSupervisor *self,
                                                GAsyncResult *result, GError **error);

/* Forgets @name and deletes its state file and logs; it must not run. */
gboolean einsora_process_supervisor_forget(EinsoraProcessSupervisor *self, const char *name,
                                           GError **error);

/* Emitted (signal "changed", with the name) when a supervised process
 * leaves RUNNING: it exits, is killed, vanishes, or is stopped, so the
 * caller can report at once. Handlers may call back into the supervisor. */

/* Reads /proc/<pid>/stat under @proc_root ("/proc" normally): its start
 * time, and whether it is a zombie. FALSE if there is no such process. */
gboolean einsora_process_read_start_time(const char *proc_root, GPid pid, guint64 *start_time,
                                         gboolean *zombie);
/* Whether a process other than a zombie is left in process group @pgid,
 * looking at every /proc/<pid>/stat under @proc_root (field 5). */
gboolean einsora_process_group_alive(const char *proc_root, GPid pgid);

G_END_DECLS
