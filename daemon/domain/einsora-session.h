/* A browser session: the cookie's value and its CSRF token are kept only as
 * SHA-256 hashes. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *id;
    gchar *tenant_id;
    gchar *user_id;
    gchar *session_sha256; /* lowercase hex */
    gchar *csrf_sha256;    /* lowercase hex */
    gchar *created_at;
    gchar *expires_at;
    gchar *revoked_at; /* NULL until signed out */
} EinsoraSession;

#define EINSORA_TYPE_SESSION (einsora_session_get_type())
GType einsora_session_get_type(void);

EinsoraSession *einsora_session_new(void);
EinsoraSession *einsora_session_copy(const EinsoraSession *session);
void einsora_session_free(EinsoraSession *session);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraSession, einsora_session_free)

G_END_DECLS
