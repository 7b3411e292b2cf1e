/* An API token. Only the SHA-256 of the secret is kept; the secret itself
 * is shown once, when the token is created. Revoked tokens stay listed. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *id;
    gchar *tenant_id;
    gchar *user_id;
    gchar *name;
    gchar *prefix;       /* the secret's first characters, e.g. "tsk_Ab3x", to recognise it */
    gchar *token_sha256; /* lowercase hex */
    gchar *created_at;
    gchar *last_used_at; /* NULL until first used */
    gchar *expires_at;   /* NULL: never expires */
    gchar *revoked_at;   /* NULL while valid */
} EinsoraApiToken;

#define EINSORA_TYPE_API_TOKEN (einsora_api_token_get_type())
GType einsora_api_token_get_type(void);

EinsoraApiToken *einsora_api_token_new(void);
EinsoraApiToken *einsora_api_token_copy(const EinsoraApiToken *token);
void einsora_api_token_free(EinsoraApiToken *token);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraApiToken, einsora_api_token_free)

G_END_DECLS
