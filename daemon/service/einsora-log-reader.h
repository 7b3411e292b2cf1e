/* Reads one attempt's output as drivers keep it (docs/adr/0041: .log,
 * .log.1 and their times files) and hands it out redacted, line by line:
 * every credential einsora_redact_secrets() knows, and the workload's
 * own token wherever it appears. What it holds is bounded: a read of the
 * whole is at most the files' size (about twice the log limit), a
 * follower's step at most @max bytes and one partial line. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    /* It read on (lines were appended to @out, or a line is under way):
     * there may be more. */
    EINSORA_LOG_READ_MORE,
    /* Nothing new (yet). */
    EINSORA_LOG_READ_NOTHING,
    /* The writer rotated past what this reader hadn't read: it can't go
     * on without a gap. A line saying so was appended to @out. */
    EINSORA_LOG_READ_LOST,
} EinsoraLogRead;

/* The line that tells a follower it was dropped; it starts with "[einsora] ". */
#define EINSORA_LOG_LOST_LINE                                                                      \
    "[einsora] this reader fell further behind the workload's output than its log keeps; lines "   \
    "were lost here, so it stops. Read the logs again to go on.\n"

typedef struct _EinsoraLogReader EinsoraLogReader;

/* @log_path: the attempt's .log (it may not exist yet). @secret: the
 * workload's own token, or NULL; copied, and wiped when freed. */
EinsoraLogReader *einsora_log_reader_new(const char *log_path, const char *secret);
void einsora_log_reader_free(EinsoraLogReader *self);

/* The output there is now, from the first line written at or after
 * @since_us (Unix microseconds, to about a second; 0: from the start),
 * its last @tail lines (0: all). A last line without its newline is
 * given when @hold_partial is FALSE, and kept back for
 * einsora_log_reader_next() otherwise. The reader then stands at the
 * end. */
gboolean einsora_log_reader_read(EinsoraLogReader *self, gint64 since_us, guint64 tail,
                                 gboolean hold_partial, GString *out, GError **error);
/* What was written after where it stands, about @max bytes at most,
 * whole lines only (a line longer than @max comes in pieces). */
EinsoraLogRead einsora_log_reader_next(EinsoraLogReader *self, gsize max, GString *out);
/* The partial last line it held back, as a line: the attempt is over. */
void einsora_log_reader_flush(EinsoraLogReader *self, GString *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraLogReader, einsora_log_reader_free)

G_END_DECLS
