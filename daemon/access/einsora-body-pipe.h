/* A request body on its way through the proxy: the server side pushes
 * the chunks it reads from the browser (on the main loop), the client
 * side reads them as the workload takes them (GInputStream, read in a
 * worker thread by GIO's default async read). At most a bounded amount
 * waits in between: past the high mark the writer is told to pause, and
 * once the reader has taken it below the low mark, to go on. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_BODY_PIPE_HIGH_MARK (1024 * 1024)
#define EINSORA_BODY_PIPE_LOW_MARK (256 * 1024)

#define EINSORA_TYPE_BODY_PIPE (einsora_body_pipe_get_type())
G_DECLARE_FINAL_TYPE(EinsoraBodyPipe, einsora_body_pipe, EINSORA, BODY_PIPE, GInputStream)

/* @flow(paused, user_data) runs on the main context that was
 * thread-default when the pipe was made: TRUE when the writer should
 * pause, FALSE when it may go on. */
typedef void (*EinsoraBodyPipeFlow)(gboolean pause, gpointer user_data);

EinsoraBodyPipe *einsora_body_pipe_new(EinsoraBodyPipeFlow flow, gpointer user_data);

/* Main loop side. Returns TRUE when the writer should pause now. */
gboolean einsora_body_pipe_push(EinsoraBodyPipe *self, const guint8 *data, gsize size);
void einsora_body_pipe_finish(EinsoraBodyPipe *self);
/* The writer went away: the reader gets an error, and @flow is never
 * called again. */
void einsora_body_pipe_abort(EinsoraBodyPipe *self);

G_END_DECLS
