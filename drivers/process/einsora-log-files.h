/* A workload's output on disk, laid out the same way by every driver,
 * so that one reader serves them all (docs/adr/0041). In a driver's
 * directory, for workload <name>:
 *   <name>.log            the output of the attempt that runs (or ran
 *                         last), appended by its writer
 *   <name>.log.1          its older part, once .log passed the limit
 *   <name>.log.times      "einsora-log-times G\n", then "MS SIZE\n"
 *                         lines: .log was SIZE bytes long at Unix time
 *                         MS milliseconds (at most one a second, while it
 *                         grows). G counts rotations, so a reader can
 *                         tell whether .log.1 still holds what it hadn't
 *                         read.
 *   <name>.log.1.times    the same for .log.1
 *   <name>.log.attempt    the attempt the .log files belong to
 *   <name>.attempt-N.log, .log.1, .log.times, .log.1.times
 *                         an earlier attempt's, the last
 *                         EINSORA_LOG_FILES_KEEP_ATTEMPTS of them
 * Only drivers write there (never a workload), all files 0600. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Earlier attempts whose output is kept beside the current one. */
#define EINSORA_LOG_FILES_KEEP_ATTEMPTS 3
/* A times file stops growing here (its resolution gets coarser, the
 * output is still all there). */
#define EINSORA_LOG_TIMES_MAX_BYTES (256 * 1024)
#define EINSORA_LOG_TIMES_HEADER "einsora-log-times "

/* Before attempt @attempt's writer starts: the files of another attempt
 * move to <name>.attempt-N.*, attempts beyond the kept ones are
 * deleted, and <name>.log.attempt says @attempt. The same attempt again
 * (a start retried) appends to its files. */
gboolean einsora_log_files_begin_attempt(const char *dir, const char *name, gint64 attempt,
                                         GError **error);

/* The path of attempt @attempt's .log (it may not exist yet: nothing
 * written), @attempt <= 0 meaning the latest; @found_attempt says which.
 * G_IO_ERROR_NOT_FOUND when nothing of that attempt is kept. */
gchar *einsora_log_files_find(const char *dir, const char *name, gint64 attempt,
                              gint64 *found_attempt, GError **error);

/* Overwrites every @secret in <name>.log and <name>.log.1 with a mask of
 * the same length ("[redacted*...]"), so offsets and times still hold:
 * an attempt's token is dead once it stops, and isn't kept in clear. */
void einsora_log_files_scrub(const char *dir, const char *name, const char *secret);

/* Deletes every log file of @name: the workload is gone. */
void einsora_log_files_remove(const char *dir, const char *name);

/* The rotation count in <log_path>.times; 0 when it has none. */
gint64 einsora_log_times_generation(const char *log_path);

/* A writer's record of how long its log was when. */
typedef struct _EinsoraLogTimes EinsoraLogTimes;

EinsoraLogTimes *einsora_log_times_new(const char *log_path);
void einsora_log_times_free(EinsoraLogTimes *times);
/* Notes that the log is @size bytes long at @now_ms, when it grew and
 * the last note is a second old or more. Failures are quiet: times only
 * make `since` finer. */
void einsora_log_times_note(EinsoraLogTimes *times, gint64 size, gint64 now_ms);
/* The log became <log_path>.1: so do its times, and new ones start with
 * the next generation. */
void einsora_log_times_rotated(EinsoraLogTimes *times);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraLogTimes, einsora_log_times_free)

G_END_DECLS
