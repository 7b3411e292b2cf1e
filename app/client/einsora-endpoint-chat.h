/* One chat completion from an endpoint's OpenAI-compatible base URL (the
 * access proxy's, which the access grant of an endpoint answers), streamed
 * as server-sent events: each piece of the answer is handed over as it
 * arrives. The API token goes in Authorization only. Blocking for the
 * CLI, asynchronous on the caller's main context for the app (both read
 * the stream the same way); one request, nothing kept. */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

/* A piece of the answer's text (valid UTF-8, cleaned of nothing: the
 * caller decides how it reaches a terminal). */
typedef void (*EinsoraChatPieceFunc)(const char *text, gpointer user_data);

typedef struct {
    gint64 prompt_tokens;
    gint64 completion_tokens;
    /* From sending the request to the first piece, and to the end. */
    gint64 first_piece_us;
    gint64 total_us;
} EinsoraChatUsage;

/* The largest line of the stream read; past it the stream is dropped. */
#define EINSORA_CHAT_MAX_LINE (1024 * 1024)

/* Sends {"model", "messages": [{"role": "user", "content": @prompt}],
 * "stream": true, "stream_options": {"include_usage": true}} to
 * @base_url/chat/completions. @model: (nullable): left out when NULL (an
 * endpoint's own base URL serves one model). @usage: (optional).
 * @database: (nullable): what an https:// base URL's certificate is checked
 * with (the client's, for a Lab's own certificate); NULL: the system's.
 * Errors are EINSORA_CLIENT_ERROR with the endpoint's error message. */
gboolean einsora_endpoint_chat(const char *base_url, const char *token, GTlsDatabase *database,
                               const char *model, const char *prompt, EinsoraChatPieceFunc on_piece,
                               gpointer user_data, EinsoraChatUsage *usage, GError **error);

/* The same request with a whole conversation: @messages holds OpenAI's
 * {"role", "content"} objects, oldest first (the endpoint keeps nothing
 * between requests, so the caller sends what was said before). Reads the
 * stream with the main context of the caller's thread; @on_piece is
 * called there for each piece as it arrives, never after @cancellable is
 * cancelled. @session: (nullable): one of the caller's, else one of its
 * own. @model: (nullable). */
void einsora_endpoint_chat_async(SoupSession *session, const char *base_url, const char *token,
                                 const char *model, JsonArray *messages,
                                 EinsoraChatPieceFunc on_piece, gpointer piece_data,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data);
/* @usage: (optional). G_IO_ERROR_CANCELLED once cancelled; else errors
 * as einsora_endpoint_chat()'s. */
gboolean einsora_endpoint_chat_finish(GAsyncResult *result, EinsoraChatUsage *usage,
                                      GError **error);

G_END_DECLS
