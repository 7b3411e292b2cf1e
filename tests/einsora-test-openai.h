/* A stand-in for an endpoint's OpenAI-compatible base URL, on loopback in
 * the test's own main context: POST <base>/chat/completions answers a
 * stream of server-sent events, one piece a chunk with a pause between,
 * or OpenAI's error shape. It keeps what the client sent (Authorization,
 * the messages) and whether the client went away before the end. */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct _EinsoraTestOpenai EinsoraTestOpenai;

EinsoraTestOpenai *einsora_test_openai_new(void);
void einsora_test_openai_free(EinsoraTestOpenai *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraTestOpenai, einsora_test_openai_free)

/* http://127.0.0.1:<port>/endpoints/<id>/v1, as the access grant says. */
const char *einsora_test_openai_get_base_url(EinsoraTestOpenai *self);

/* The next answers stream @pieces, @pause_ms apart; with @hold, the
 * stream waits after the first piece until einsora_test_openai_release(). */
void einsora_test_openai_answer(EinsoraTestOpenai *self, const char *const *pieces, guint pause_ms,
                                gboolean hold);
/* The next answers are @status with {"error": {"message": @message, ...}}. */
void einsora_test_openai_fail(EinsoraTestOpenai *self, guint status, const char *message);
void einsora_test_openai_release(EinsoraTestOpenai *self);

guint einsora_test_openai_get_n_requests(EinsoraTestOpenai *self);
/* Of the latest request: the pieces sent so far, whether [DONE] went,
 * whether the client hung up before it. */
guint einsora_test_openai_get_n_sent(EinsoraTestOpenai *self);
gboolean einsora_test_openai_is_done(EinsoraTestOpenai *self);
gboolean einsora_test_openai_client_left(EinsoraTestOpenai *self);
/* The latest request's Authorization header and "messages" (NULL if none). */
const char *einsora_test_openai_get_authorization(EinsoraTestOpenai *self);
JsonArray *einsora_test_openai_get_messages(EinsoraTestOpenai *self);

G_END_DECLS
