/* A docker workload's output on disk, kept as the process supervisor
 * keeps a native workload's, so that whoever reads logs reads both the
 * same way (einsora-log-files.h): <dir>/<name>.log, 0600, appended, with
 * its times; once past the limit it becomes <name>.log.1 (replacing the
 * one before) and a new file starts, so about twice the limit is kept.
 * The container never sees the directory: only the driver writes there. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EinsoraDockerLog EinsoraDockerLog;

/* Opens (creating) <dir>/<name>.log for appending, following no link. */
EinsoraDockerLog *einsora_docker_log_open(const char *dir, const char *name, gsize limit,
                                          GError **error);
/* Appends @data; a failed write is said once in the daemon's log and
 * the output dropped (the workload runs on). */
void einsora_docker_log_write(EinsoraDockerLog *log, const guint8 *data, gsize length);
void einsora_docker_log_close(EinsoraDockerLog *log);
/* When <dir>/<name>.log was last written, in Unix seconds; 0 when there
 * is none. A follower that starts again asks for output from then. */
gint64 einsora_docker_log_last_written(const char *dir, const char *name);
/* Deletes every log file of <name>, earlier attempts' too: the
 * workload is gone. */
void einsora_docker_log_remove(const char *dir, const char *name);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraDockerLog, einsora_docker_log_close)

G_END_DECLS
