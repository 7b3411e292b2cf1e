/* One chat completion from an endpoint's OpenAI-compatible base URL (the
 * access proxy's, which the access grant of an endpoint answers), streamed
 * as server-sent events: each piece of the answer is handed over as it
 * arrives. The API token goes in Authorization only. Blocking, for the
 * CLI; one request, nothing kept. */
#pragma once

#include <gio/gio.h>

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
 * endpoint's own base URL serves one model). @usage: (optional). Errors
 * are EINSORA_CLIENT_ERROR with the endpoint's error message. */
gboolean einsora_endpoint_chat(const char *base_url, const char *token, const char *model,
                               const char *prompt, EinsoraChatPieceFunc on_piece,
                               gpointer user_data, EinsoraChatUsage *usage, GError **error);

G_END_DECLS
