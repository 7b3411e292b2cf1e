/* One line of a tenant's audit trail: what an admin (or the daemon's own
 * command) changed about the tenant's people or quotas, by whom, when.
 * Never a secret: a password or token is said to have changed, never
 * what it is. docs/adr/0049. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/* The actions. */
#define EINSORA_AUDIT_ACCOUNT_CREATED "account.created"
#define EINSORA_AUDIT_ACCOUNT_DISABLED "account.disabled"
#define EINSORA_AUDIT_ACCOUNT_ENABLED "account.enabled"
#define EINSORA_AUDIT_QUOTA_SET "quota.set"
#define EINSORA_AUDIT_PASSWORD_CHANGED "password.changed"
#define EINSORA_AUDIT_PASSWORD_RESET "password.reset"
#define EINSORA_AUDIT_MACHINE_SHARING "machine.sharing"
#define EINSORA_AUDIT_MACHINE_REVOKED "machine.revoked"

typedef struct {
    gchar *id;
    gchar *tenant_id;
    gchar *at;
    gchar *actor;         /* an email, or the daemon's command */
    gchar *actor_user_id; /* NULL: not an account (the daemon's command) */
    gchar *action;        /* EINSORA_AUDIT_* */
    gchar *target;        /* an account's email, a class */
    gchar *detail;        /* plain words */
} EinsoraAuditEvent;

#define EINSORA_TYPE_AUDIT_EVENT (einsora_audit_event_get_type())
GType einsora_audit_event_get_type(void);

EinsoraAuditEvent *einsora_audit_event_new(void);
EinsoraAuditEvent *einsora_audit_event_copy(const EinsoraAuditEvent *event);
void einsora_audit_event_free(EinsoraAuditEvent *event);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraAuditEvent, einsora_audit_event_free)

G_END_DECLS
