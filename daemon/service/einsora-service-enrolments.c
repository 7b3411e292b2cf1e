/* Machine enrolments (docs/adr/0055): a user's one-time token for a
 * machine of theirs, and the machine it makes when an agent presents it.
 * The service sees only the token's SHA-256; signing the agent's
 * certificate is the API's, with the daemon's CA. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-uuid.h"

/* A machine's name as people type it: 1 to 63 of a-z, 0-9, '-', '.',
 * '_', starting with a letter or digit. */
static gboolean
is_machine_name(const char *name)
{
    gsize length = strlen(name);

    if (length == 0 || length > 63 || !g_ascii_isalnum(name[0]))
        return FALSE;
    for (const char *p = name; *p != '\0'; p++) {
        if (!g_ascii_isalnum(*p) && *p != '-' && *p != '.' && *p != '_')
            return FALSE;
    }
    return TRUE;
}

EinsoraEnrolment *
einsora_service_create_enrolment(EinsoraService *self, const EinsoraActor *actor, const char *name,
                                 const char *region, const char *token_hash, GError **error)
{
    gint64 now_us;
    g_autoptr(EinsoraEnrolment) enrolment = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && token_hash != NULL, NULL);
    if (name != NULL && !is_machine_name(name)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "name: \"%s\" is not a machine name (1 to 63 of a-z, 0-9, '-', '.', '_', "
                    "starting with a letter or digit)",
                    name);
        return NULL;
    }
    if (region == NULL)
        region = einsora_catalog_get_default_region(self->catalog);
    if (einsora_catalog_lookup_region(self->catalog, region) == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "region: \"%s\" is not a region of the catalog", region);
        return NULL;
    }
    now_us = einsora_service_now(self);
    enrolment = einsora_enrolment_new();
    enrolment->id = einsora_uuid_v7_new(now_us / 1000);
    enrolment->tenant_id = g_strdup(actor->tenant_id);
    enrolment->hash = g_strdup(token_hash);
    enrolment->name = g_strdup(name);
    enrolment->region = g_strdup(region);
    enrolment->created_by = g_strdup(actor->subject);
    enrolment->created_at = einsora_timestamp_format(now_us);
    enrolment->expires_at = einsora_timestamp_format(now_us + EINSORA_ENROLMENT_LIFETIME_US);
    if (!einsora_store_insert_enrolment(self->store, enrolment, error))
        return NULL;
    g_message("enrolment %s: a machine for tenant %s in region %s, by %s, until %s", enrolment->id,
              enrolment->tenant_id, enrolment->region, enrolment->created_by,
              enrolment->expires_at);
    return g_steal_pointer(&enrolment);
}

typedef struct {
    EinsoraService *self;
    const char *token_hash;
    const char *machine_id;
    const char *fingerprint;
    const char *cert_expires_at;
    EinsoraEnrolment *taken;
} EnrolContext;

/* The token and the machine it names go together or not at all. */
static gboolean
enrol_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    EnrolContext *ctx = user_data;
    g_autofree gchar *now = einsora_timestamp_format(einsora_service_now(ctx->self));
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    ctx->taken = einsora_store_take_enrolment(store, ctx->token_hash, now, ctx->machine_id, error);
    if (ctx->taken == NULL)
        return FALSE;
    machine->id = g_strdup(ctx->machine_id);
    machine->tenant_id = g_strdup(ctx->taken->tenant_id);
    /* Never the host's name: the owner named it, or its ID does. */
    machine->name = ctx->taken->name != NULL ? g_strdup(ctx->taken->name)
                                             : g_strdup_printf("machine-%.8s", ctx->machine_id);
    machine->region = g_strdup(ctx->taken->region);
    /* What it has comes with its first sync's inventory. */
    machine->os = g_strdup("linux");
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = g_strdup(now);
    machine->cert_fingerprint = g_strdup(ctx->fingerprint);
    machine->cert_expires_at = g_strdup(ctx->cert_expires_at);
    return einsora_store_insert_machine(store, machine, error);
}

EinsoraEnrolment *
einsora_service_enrol_machine(EinsoraService *self, const char *token_hash, const char *machine_id,
                              const char *fingerprint, const char *cert_expires_at, GError **error)
{
    EnrolContext ctx = {self, token_hash, machine_id, fingerprint, cert_expires_at, NULL};
    g_autoptr(GError) local_error = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(token_hash != NULL && machine_id != NULL && fingerprint != NULL, NULL);
    if (!einsora_store_in_transaction(self->store, enrol_tx, &ctx, &local_error)) {
        g_clear_pointer(&ctx.taken, einsora_enrolment_free);
        if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND)) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                                "not a valid enrolment token: unknown, used already, or expired "
                                "(ask for another with einsora machines add)");
            return NULL;
        }
        g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    g_message("enrolment %s: machine %s joined tenant %s in region %s, certificate %s",
              ctx.taken->id, machine_id, ctx.taken->tenant_id, ctx.taken->region, fingerprint);
    return ctx.taken;
}
