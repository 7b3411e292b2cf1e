#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-session.h"

G_DEFINE_BOXED_TYPE(EinsoraSession, einsora_session, einsora_session_copy, einsora_session_free)

EinsoraSession *
einsora_session_new(void)
{
    return g_new0(EinsoraSession, 1);
}

EinsoraSession *
einsora_session_copy(const EinsoraSession *session)
{
    EinsoraSession *copy = g_new0(EinsoraSession, 1);

    copy->id = g_strdup(session->id);
    copy->tenant_id = g_strdup(session->tenant_id);
    copy->user_id = g_strdup(session->user_id);
    copy->session_sha256 = g_strdup(session->session_sha256);
    copy->csrf_sha256 = g_strdup(session->csrf_sha256);
    copy->created_at = g_strdup(session->created_at);
    copy->expires_at = g_strdup(session->expires_at);
    copy->revoked_at = g_strdup(session->revoked_at);
    return copy;
}

void
einsora_session_free(EinsoraSession *session)
{
    if (session == NULL)
        return;
    g_free(session->id);
    g_free(session->tenant_id);
    g_free(session->user_id);
    g_free(session->session_sha256);
    g_free(session->csrf_sha256);
    g_free(session->created_at);
    g_free(session->expires_at);
    g_free(session->revoked_at);
    g_free(session);
}
