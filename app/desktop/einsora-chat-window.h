/* A small chat to try a running endpoint: a transcript, an entry, Send
 * and Stop. The answer streams in piece by piece as it arrives
 * (einsora_endpoint_chat_async at the endpoint's base URL, with the
 * app's API token as Bearer). The conversation is kept in the window and
 * sent whole each time, since the endpoint keeps nothing between
 * requests; an error shows the endpoint's own message
 * (docs/adr/0036-app-endpoints.md). */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_CHAT_WINDOW (einsora_chat_window_get_type())
G_DECLARE_FINAL_TYPE(EinsoraChatWindow, einsora_chat_window, EINSORA, CHAT_WINDOW,
                     AdwApplicationWindow)

/* @application: (nullable); @title: the endpoint's name; @base_url: what
 * its access grant answered; @token: the API token requests carry (kept
 * in memory only, never shown or logged). */
EinsoraChatWindow *einsora_chat_window_new(GtkApplication *application, const char *workload_id,
                                           const char *title, const char *base_url,
                                           const char *token);
const char *einsora_chat_window_get_workload_id(EinsoraChatWindow *self);
/* Sends @text as the user's next message, as Send does with the entry's
 * text; FALSE while an answer is still coming, or for blank text. */
gboolean einsora_chat_window_send(EinsoraChatWindow *self, const char *text);
/* Cancels the answer coming, as Stop does. */
void einsora_chat_window_stop(EinsoraChatWindow *self);
gboolean einsora_chat_window_is_answering(EinsoraChatWindow *self);
/* The text of the latest answer so far (NULL before the first), and the
 * error shown for the latest request (NULL when none). */
const char *einsora_chat_window_get_answer(EinsoraChatWindow *self);
const char *einsora_chat_window_get_error(EinsoraChatWindow *self);
/* How many messages the conversation holds (what the next request sends
 * before the new question). */
guint einsora_chat_window_get_n_messages(EinsoraChatWindow *self);

G_END_DECLS
