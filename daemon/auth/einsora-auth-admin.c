/* Lab administration (docs/adr/0049): a Lab's admins list, create,
 * disable and enable accounts and give tenants quotas. Each change and
 * its line in the tenant's audit trail are one transaction; the log says
 * the same. Never a secret in either. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include "einsora-credential.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

/* Who a change is by when no account made it. */
#define DAEMON_ACTOR "einsora-daemon account create"
#define FIRST_TOKEN_NAME "created with the account"

gboolean
einsora_auth_require_admin(EinsoraAuth *self, const EinsoraActor *actor, GError **error)
{
    g_autoptr(EinsoraUser) user = NULL;

    /* The daemon's own command, run on the machine by its operator. */
    if (actor == NULL)
        return TRUE;
    user = einsora_auth_get_active_user(self, actor->tenant_id, actor->user_id,
                                        "this account can no longer sign in", error);
    if (user == NULL)
        return FALSE;
    if (!user->admin) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN,
                            "only a Lab admin may manage accounts and quotas");
        return FALSE;
    }
    return TRUE;
}

static EinsoraAuditEvent *
audit_event_new(EinsoraAuth *self, const EinsoraActor *actor, const char *tenant_id,
                const char *action, const char *target, const char *detail)
{
    EinsoraAuditEvent *event = einsora_audit_event_new();
    gint64 now_us = self->now(self->now_data);

    event->id = einsora_uuid_v7_new(now_us / 1000);
    event->tenant_id = g_strdup(tenant_id);
    event->at = einsora_timestamp_format(now_us);
    event->actor = g_strdup(actor != NULL ? actor->subject : DAEMON_ACTOR);
    event->actor_user_id = g_strdup(actor != NULL ? actor->user_id : NULL);
    event->action = g_strdup(action);
    event->target = g_strdup(target);
    event->detail = g_strdup(detail);
    return event;
}

static void
log_audit(const EinsoraAuditEvent *event)
{
    g_message("audit: %s: %s %s (%s), tenant %s", event->actor, event->action, event->target,
              event->detail, event->tenant_id);
}

GPtrArray *
einsora_auth_admin_list_accounts(EinsoraAuth *self, const EinsoraActor *actor, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    if (!einsora_auth_require_admin(self, actor, error))
        return NULL;
    return einsora_store_list_users(self->store, error);
}

GPtrArray *
einsora_auth_admin_list_tenants(EinsoraAuth *self, const EinsoraActor *actor, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    if (!einsora_auth_require_admin(self, actor, error))
        return NULL;
    return einsora_store_list_tenants(self->store, error);
}

typedef struct {
    EinsoraTenant *new_tenant; /* NULL: joins an existing one */
    EinsoraUser *user;
    EinsoraApiToken *token;
    EinsoraAuditEvent *event;
} NewAccount;

static gboolean
insert_new_account_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    NewAccount *account = user_data;
    AccountContext ctx = {.tenant = account->new_tenant, .user = account->user};

    if (account->new_tenant != NULL) {
        if (!einsora_auth_insert_account_tx(store, &ctx, error))
            return FALSE;
    } else {
        g_autoptr(GError) local_error = NULL;
        if (!einsora_store_insert_user(store, account->user, &local_error)) {
            if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT))
                g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                                    "an account with this email address already exists");
            else if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND))
                g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                                    "no such tenant");
            else
                g_propagate_error(error, g_steal_pointer(&local_error));
            return FALSE;
        }
    }
    return einsora_store_insert_api_token(store, account->token, error) &&
           einsora_store_insert_audit_event(store, account->event, error);
}

EinsoraUser *
einsora_auth_admin_create_account(EinsoraAuth *self, const EinsoraActor *actor,
                                  const char *tenant_id, const char *new_tenant, const char *email,
                                  const char *password, gboolean admin, gchar **secret,
                                  GError **error)
{
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(EinsoraApiToken) token = NULL;
    g_autoptr(EinsoraAuditEvent) event = NULL;
    g_autoptr(Secret) value = NULL;
    g_autofree gchar *normalized = NULL;
    g_autofree gchar *password_hash = NULL;
    g_autofree gchar *detail = NULL;
    NewAccount account;
    gint64 now_us;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(secret != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (!einsora_auth_require_admin(self, actor, error))
        return NULL;
    if ((tenant_id == NULL) == (new_tenant == NULL)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an account goes into an existing tenant (tenant_id) or a new one "
                            "(new_tenant): give one of them");
        return NULL;
    }
    if (new_tenant != NULL && !einsora_auth_check_name("a tenant's name", new_tenant,
                                                       EINSORA_AUTH_TENANT_NAME_MAX_BYTES, error))
        return NULL;
    normalized = einsora_auth_normalize_email(email, error);
    if (normalized == NULL)
        return NULL;
    if (tenant_id != NULL) {
        g_autoptr(EinsoraTenant) existing = einsora_store_get_tenant(self->store, tenant_id, error);
        if (existing == NULL)
            return NULL;
    }
    /* The daemon's command may set a password (hashed here, slowly, on
     * purpose); the API never does, so no request waits for argon2. */
    if (password != NULL &&
        (password_hash = einsora_credential_hash_password(password, error)) == NULL)
        return NULL;
    if (!einsora_auth_new_secret(EINSORA_CREDENTIAL_TOKEN_PREFIX, &value, error))
        return NULL;

    now_us = self->now(self->now_data);
    if (new_tenant != NULL) {
        g_autofree gchar *id = einsora_uuid_v7_new(now_us / 1000);
        g_autofree gchar *created_at = einsora_timestamp_format(now_us);
        tenant = einsora_tenant_new(id, new_tenant, FALSE, created_at);
    }
    user = einsora_auth_user_new(
        tenant != NULL ? tenant->id : tenant_id, normalized, password_hash,
        tenant != NULL ? EINSORA_USER_ROLE_OWNER : EINSORA_USER_ROLE_MEMBER, now_us);
    user->admin = admin;
    token = einsora_api_token_new();
    token->id = einsora_uuid_v7_new(now_us / 1000);
    token->tenant_id = g_strdup(user->tenant_id);
    token->user_id = g_strdup(user->id);
    token->name = g_strdup(FIRST_TOKEN_NAME);
    token->prefix = einsora_credential_display_prefix(value);
    token->token_sha256 = einsora_credential_sha256_hex(value);
    token->created_at = einsora_timestamp_format(now_us);
    detail = g_strdup_printf("%s of %s%s%s", user->role,
                             tenant != NULL ? "the new tenant " : "the tenant",
                             tenant != NULL ? tenant->name : "", admin ? ", a Lab admin" : "");
    event = audit_event_new(self, actor, user->tenant_id, EINSORA_AUDIT_ACCOUNT_CREATED,
                            user->email, detail);
    account = (NewAccount){.new_tenant = tenant, .user = user, .token = token, .event = event};
    if (!einsora_store_in_transaction(self->store, insert_new_account_tx, &account, error))
        return NULL;
    log_audit(event);
    *secret = g_steal_pointer(&value);
    return g_steal_pointer(&user);
}

EinsoraUser *
einsora_auth_find_account(EinsoraAuth *self, const char *user_id, GError **error)
{
    g_autoptr(GPtrArray) users = einsora_store_list_users(self->store, error);

    if (users == NULL)
        return NULL;
    /* A Lab has tens of accounts, not millions: the list is the index. */
    for (guint i = 0; i < users->len; i++) {
        EinsoraUser *user = g_ptr_array_index(users, i);
        if (g_strcmp0(user->id, user_id) == 0)
            return einsora_user_copy(user);
    }
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such account");
    return NULL;
}

typedef struct {
    const EinsoraUser *user;
    const char *disabled_at;
    EinsoraAuditEvent *event;
} AccountChange;

static gboolean
set_disabled_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    AccountChange *change = user_data;

    return einsora_store_set_user_disabled(store, change->user->tenant_id, change->user->id,
                                           change->disabled_at, error) &&
           einsora_store_insert_audit_event(store, change->event, error);
}

EinsoraUser *
einsora_auth_admin_set_disabled(EinsoraAuth *self, const EinsoraActor *actor, const char *user_id,
                                gboolean disabled, GError **error)
{
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(EinsoraAuditEvent) event = NULL;
    g_autofree gchar *now = NULL;
    AccountChange change;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(user_id != NULL, NULL);

    if (!einsora_auth_require_admin(self, actor, error))
        return NULL;
    user = einsora_auth_find_account(self, user_id, error);
    if (user == NULL)
        return NULL;
    /* The last admin would lock everyone out of administration. */
    if (disabled && actor != NULL && g_strcmp0(actor->user_id, user->id) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "you can't disable your own account: ask another admin");
        return NULL;
    }
    now = einsora_timestamp_format(self->now(self->now_data));
    event = audit_event_new(
        self, actor, user->tenant_id,
        disabled ? EINSORA_AUDIT_ACCOUNT_DISABLED : EINSORA_AUDIT_ACCOUNT_ENABLED, user->email,
        disabled ? "its tokens and sessions stop working at once" : "it may sign in again");
    change = (AccountChange){.user = user, .disabled_at = disabled ? now : NULL, .event = event};
    if (!einsora_store_in_transaction(self->store, set_disabled_tx, &change, error))
        return NULL;
    log_audit(event);
    g_clear_pointer(&user, einsora_user_free);
    return einsora_auth_find_account(self, user_id, error);
}

typedef struct {
    const char *tenant_id;
    const char *gpu_class;
    gint64 gpus;
    EinsoraAuditEvent *event;
} QuotaChange;

static gboolean
set_quota_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    QuotaChange *change = user_data;

    return einsora_store_set_quota(store, change->tenant_id, change->gpu_class, change->gpus,
                                   error) &&
           einsora_store_insert_audit_event(store, change->event, error);
}

gboolean
einsora_auth_admin_set_quota(EinsoraAuth *self, const EinsoraActor *actor, const char *tenant_id,
                             const char *gpu_class, gint64 gpus, GError **error)
{
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraAuditEvent) event = NULL;
    g_autofree gchar *detail = NULL;
    gint64 before = 0;
    QuotaChange change;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL && gpu_class != NULL, FALSE);

    if (!einsora_auth_require_admin(self, actor, error))
        return FALSE;
    if (gpus < 0 || gpus > EINSORA_AUTH_MAX_QUOTA) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST, "a quota is 0 to %d GPUs",
                    EINSORA_AUTH_MAX_QUOTA);
        return FALSE;
    }
    tenant = einsora_store_get_tenant(self->store, tenant_id, error);
    if (tenant == NULL ||
        !einsora_store_get_quota(self->store, tenant_id, gpu_class, &before, error))
        return FALSE;
    detail = g_strdup_printf("%" G_GINT64_FORMAT " GPU(s), was %" G_GINT64_FORMAT, gpus, before);
    event = audit_event_new(self, actor, tenant_id, EINSORA_AUDIT_QUOTA_SET, gpu_class, detail);
    change =
        (QuotaChange){.tenant_id = tenant_id, .gpu_class = gpu_class, .gpus = gpus, .event = event};
    if (!einsora_store_in_transaction(self->store, set_quota_tx, &change, error))
        return FALSE;
    log_audit(event);
    return TRUE;
}

gboolean
einsora_auth_get_quota(EinsoraAuth *self, const char *tenant_id, const char *gpu_class,
                       gint64 *gpus, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    return einsora_store_get_quota(self->store, tenant_id, gpu_class, gpus, error);
}

GPtrArray *
einsora_auth_list_audit(EinsoraAuth *self, const EinsoraActor *actor, guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(actor != NULL, NULL);
    return einsora_store_list_audit_events(self->store, actor->tenant_id, limit, error);
}

typedef struct {
    const EinsoraMachine *machine;
    EinsoraSharing sharing;
    EinsoraAuditEvent *event;
} SharingChange;

static gboolean
set_sharing_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    SharingChange *change = user_data;

    return einsora_store_set_machine_sharing(store, change->machine->tenant_id, change->machine->id,
                                             change->sharing, error) &&
           einsora_store_insert_audit_event(store, change->event, error);
}

/* The machine @actor may manage: their tenant's, as its owner, or any
 * as a Lab admin. Another tenant's is NOT_FOUND; a member's is FORBIDDEN
 * ("only ... may @what its machines"). */
static EinsoraMachine *
find_managed_machine(EinsoraAuth *self, const EinsoraActor *actor, const char *machine_id,
                     const char *what, GError **error)
{
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(GError) local_error = NULL;

    user = einsora_auth_get_active_user(self, actor->tenant_id, actor->user_id,
                                        "this account can no longer sign in", error);
    if (user == NULL)
        return NULL;
    machine = einsora_store_find_machine(self->store, machine_id, &local_error);
    /* Another tenant's machine is not there, unless an admin asks. */
    if (machine == NULL || (!user->admin && g_strcmp0(machine->tenant_id, actor->tenant_id) != 0)) {
        if (machine == NULL &&
            !g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND))
            g_propagate_error(error, g_steal_pointer(&local_error));
        else
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return NULL;
    }
    if (!user->admin && g_strcmp0(user->role, EINSORA_USER_ROLE_OWNER) != 0) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN,
                    "only the tenant's owner or a Lab admin may %s its machines", what);
        return NULL;
    }
    return g_steal_pointer(&machine);
}

EinsoraMachine *
einsora_auth_set_machine_sharing(EinsoraAuth *self, const EinsoraActor *actor,
                                 const char *machine_id, EinsoraSharing sharing, GError **error)
{
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraAuditEvent) event = NULL;
    g_autofree gchar *detail = NULL;
    SharingChange change;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(actor != NULL && machine_id != NULL, NULL);

    machine = find_managed_machine(self, actor, machine_id, "share", error);
    if (machine == NULL)
        return NULL;
    if (sharing == EINSORA_SHARING_INVITE) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "invite-only sharing comes with invite lists; until then a machine "
                            "is private or community");
        return NULL;
    }
    detail = g_strdup_printf("%s, was %s", einsora_sharing_to_string(sharing),
                             einsora_sharing_to_string(machine->sharing));
    event = audit_event_new(self, actor, machine->tenant_id, EINSORA_AUDIT_MACHINE_SHARING,
                            machine->name, detail);
    change = (SharingChange){.machine = machine, .sharing = sharing, .event = event};
    if (!einsora_store_in_transaction(self->store, set_sharing_tx, &change, error))
        return NULL;
    log_audit(event);
    machine->sharing = sharing;
    return g_steal_pointer(&machine);
}

typedef struct {
    EinsoraMachine *machine;
    EinsoraAuditEvent *event;
} Revocation;

static gboolean
revoke_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    Revocation *revocation = user_data;

    return einsora_store_clear_machine_certificate(store, revocation->machine->tenant_id,
                                                   revocation->machine->id, error) &&
           einsora_store_insert_audit_event(store, revocation->event, error);
}

EinsoraMachine *
einsora_auth_revoke_machine(EinsoraAuth *self, const EinsoraActor *actor, const char *machine_id,
                            GError **error)
{
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraAuditEvent) event = NULL;
    g_autofree gchar *detail = NULL;
    Revocation revocation;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(actor != NULL && machine_id != NULL, NULL);

    machine = find_managed_machine(self, actor, machine_id, "revoke", error);
    if (machine == NULL)
        return NULL;
    if (machine->cert_fingerprint == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "this machine has no agent certificate to revoke: it is this "
                            "daemon's own, or revoked already");
        return NULL;
    }
    detail = g_strdup_printf("certificate %s", machine->cert_fingerprint);
    event = audit_event_new(self, actor, machine->tenant_id, EINSORA_AUDIT_MACHINE_REVOKED,
                            machine->name, detail);
    revocation = (Revocation){.machine = machine, .event = event};
    if (!einsora_store_in_transaction(self->store, revoke_tx, &revocation, error))
        return NULL;
    log_audit(event);
    return g_steal_pointer(&machine);
}
