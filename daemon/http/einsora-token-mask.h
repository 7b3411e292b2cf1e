/* A GConverter that replaces every occurrence of one secret in a byte
 * stream with as many 'x' bytes, for a relay that passes a workload's
 * answers to a server that must never see the workload's token. The
 * length is kept, so Content-Length and chunk sizes stay right. A token
 * split across reads is still masked: the converter leaves unconsumed a
 * tail that could start the token, until more input, a flush or the end
 * comes. With @head_only, only the first HTTP head is masked and what
 * follows its blank line (WebSocket frames after a 101) passes untouched
 * and undelayed. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_TOKEN_MASK (einsora_token_mask_get_type())
G_DECLARE_FINAL_TYPE(EinsoraTokenMask, einsora_token_mask, EINSORA, TOKEN_MASK, GObject)

/* Masks @token (NULL or empty: passes everything through). The token is
 * copied, and the copy wiped when the converter goes. */
EinsoraTokenMask *einsora_token_mask_new(const char *token, gboolean head_only);

G_END_DECLS
