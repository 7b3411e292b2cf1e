#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-api-token.h"

G_DEFINE_BOXED_TYPE(EinsoraApiToken, einsora_api_token, einsora_api_token_copy,
                    einsora_api_token_free)

EinsoraApiToken *
einsora_api_token_new(void)
{
    return g_new0(EinsoraApiToken, 1);
}

EinsoraApiToken *
einsora_api_token_copy(const EinsoraApiToken *token)
{
    EinsoraApiToken *copy = g_new0(EinsoraApiToken, 1);

    copy->id = g_strdup(token->id);
    copy->tenant_id = g_strdup(token->tenant_id);
    copy->user_id = g_strdup(token->user_id);
    copy->name = g_strdup(token->name);
    copy->prefix = g_strdup(token->prefix);
    copy->token_sha256 = g_strdup(token->token_sha256);
    copy->created_at = g_strdup(token->created_at);
    copy->last_used_at = g_strdup(token->last_used_at);
    copy->expires_at = g_strdup(token->expires_at);
    copy->revoked_at = g_strdup(token->revoked_at);
    return copy;
}

void
einsora_api_token_free(EinsoraApiToken *token)
{
    if (token == NULL)
        return;
    g_free(token->id);
    g_free(token->tenant_id);
    g_free(token->user_id);
    g_free(token->name);
    g_free(token->prefix);
    g_free(token->token_sha256);
    g_free(token->created_at);
    g_free(token->last_used_at);
    g_free(token->expires_at);
    g_free(token->revoked_at);
    g_free(token);
}
