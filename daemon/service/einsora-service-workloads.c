/* Workloads: creating one from a request checked against the catalog
 * (with its quota check, its first timeline row and its Idempotency-Key
 * record in one transaction), and reading them. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-reason.h"
#include "einsora-uuid.h"
#include "einsora-workload-json.h"

static gboolean
validate_name(const char *name, GError **error)
{
    if (name == NULL || *name == '\0') {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "name is required");
        return FALSE;
    }
    if (strlen(name) > EINSORA_WORKLOAD_NAME_MAX_BYTES || !g_utf8_validate(name, -1, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "name must be valid UTF-8 of at most %d bytes",
                    EINSORA_WORKLOAD_NAME_MAX_BYTES);
        return FALSE;
    }
    for (const char *p = name; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        /* Format characters are invisible and can reorder what is shown. */
        if (g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                                "name must not contain control or invisible formatting "
                                "characters");
            return FALSE;
        }
    }
    if (g_unichar_isspace(g_utf8_get_char(name)) ||
        g_unichar_isspace(g_utf8_get_char(g_utf8_find_prev_char(name, name + strlen(name))))) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "name must not start or end with a space");
        return FALSE;
    }
    return TRUE;
}

/* "cpu" in a fallback list: the smallest CPU class offered in @region
 * with at least @klass's CPUs and memory. */
static const EinsoraComputeClass *
cpu_class_as_big_as(EinsoraService *self, const EinsoraComputeClass *klass, const char *region)
{
    GPtrArray *classes = einsora_catalog_get_classes(self->catalog);
    const EinsoraComputeClass *best = NULL;

    for (guint i = 0; i < classes->len; i++) {
        const EinsoraComputeClass *c = g_ptr_array_index(classes, i);
        if (c->devices != 0 || c->cpus < klass->cpus || c->memory_mib < klass->memory_mib ||
            !einsora_catalog_class_offered_in(c, region))
            continue;
        if (best == NULL || c->cpus < best->cpus ||
            (c->cpus == best->cpus && c->memory_mib < best->memory_mib))
            best = c;
    }
    return best;
}

/* The fallback list as stored (comma-separated class names), each class
 * checked: offered here, not the requested one nor named twice, with a
 * runtime of the image, and (a GPU class) with quota for the tenant. */
static gchar *
resolve_fallback(EinsoraService *self, const char *tenant_id, EinsoraWorkloadKind kind,
                 const EinsoraComputeClass *requested, const EinsoraImage *image,
                 const char *region, const char *const *names, GError **error)
{
    g_autoptr(GStrvBuilder) chosen = g_strv_builder_new();
    g_auto(GStrv) list = NULL;
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

    if (g_strv_length((gchar **)names) > EINSORA_FALLBACK_MAX) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "fallback names at most %d classes", EINSORA_FALLBACK_MAX);
        return NULL;
    }
    g_hash_table_add(seen, requested->name);
    for (guint i = 0; names[i] != NULL; i++) {
        const EinsoraComputeClass *klass =
            g_str_equal(names[i], "cpu") ? cpu_class_as_big_as(self, requested, region)
                                         : einsora_catalog_lookup_class(self->catalog, names[i]);
        EinsoraCatalogResolution resolved;

        if (klass == NULL || !einsora_catalog_class_offered_in(klass, region)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        g_str_equal(names[i], "cpu")
                            ? "fallback: no CPU class here is as big as %s; name one"
                            : "fallback: %s is not a class offered in this region",
                        g_str_equal(names[i], "cpu") ? requested->name : names[i]);
            return NULL;
        }
        if (!g_hash_table_add(seen, klass->name)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "fallback: %s is the class asked for, or named twice", klass->name);
            return NULL;
        }
        einsora_catalog_resolve(self->catalog, klass->name, image->name, &resolved);
        if (resolved.runtime == NULL || !einsora_image_supports_kind(image, kind)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "fallback: image %s has no runtime for %s's accelerator (%s)", image->name,
                        klass->name, einsora_accelerator_to_string(klass->accelerator));
            return NULL;
        }
        if (klass->devices > 0) {
            gint64 quota = 0, held = 0;
            if (!einsora_service_get_gpu_quota(self, tenant_id, klass->name, &quota, &held, error))
                return NULL;
            if (quota == 0) {
                g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED,
                            "fallback: your tenant has no quota of %s GPUs; a Lab admin can "
                            "give it one (einsora admin quota set)",
                            klass->name);
                return NULL;
            }
        }
        g_strv_builder_add(chosen, klass->name);
    }
    list = g_strv_builder_end(chosen);
    return g_strjoinv(",", list);
}

/* Checks a request against the catalog and builds the new workload row.
 * Nothing is written. */
static EinsoraWorkload *
workload_from_request(EinsoraService *self, const EinsoraActor *actor,
                      const EinsoraWorkloadRequest *request, gint64 now_us, GError **error)
{
    EinsoraWorkloadKind kind;
    const char *region;
    const EinsoraComputeClass *klass;
    const EinsoraImage *image;
    EinsoraCatalogResolution resolved;
    g_autoptr(EinsoraModelManifest) model = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autofree gchar *fallback_classes = NULL;

    if (request->kind == NULL || !einsora_workload_kind_from_string(request->kind, &kind)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "kind must be one of notebook, endpoint, vm");
        return NULL;
    }
    if (request->name != NULL && !validate_name(request->name, error))
        return NULL;

    region = request->region != NULL ? request->region
                                     : einsora_catalog_get_default_region(self->catalog);
    if (einsora_catalog_lookup_region(self->catalog, region) == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "region is not one this installation offers");
        return NULL;
    }
    if (request->gpu_class == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "gpu_class is required");
        return NULL;
    }
    einsora_catalog_resolve(self->catalog, request->gpu_class, request->image, &resolved);
    klass = resolved.klass;
    if (klass == NULL || !einsora_catalog_class_offered_in(klass, region)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "gpu_class is not offered in this region");
        return NULL;
    }
    /* An endpoint's model says what it serves: the image that runs
     * endpoints on its class is the one it gets unless it names one. */
    if (request->image == NULL) {
        const EinsoraImage *fallback =
            einsora_catalog_default_image(self->catalog, kind, klass->accelerator);
        if (fallback != NULL)
            einsora_catalog_resolve(self->catalog, request->gpu_class, fallback->name, &resolved);
    }
    if (request->image == NULL && resolved.image == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "image is required");
        return NULL;
    }
    image = resolved.image;
    if (image == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "image is not one this installation offers");
        return NULL;
    }
    if (!einsora_image_supports_kind(image, kind)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "image %s can't run as a %s", image->name,
                    einsora_workload_kind_to_string(kind));
        return NULL;
    }
    if (resolved.runtime == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "image %s has no runtime for %s's accelerator (%s)", image->name, klass->name,
                    einsora_accelerator_to_string(klass->accelerator));
        return NULL;
    }

    /* An endpoint serves one model of the store, fixed at launch: the
     * digest recorded now names the file its agent loads. */
    if (kind == EINSORA_WORKLOAD_KIND_ENDPOINT && request->model == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an endpoint needs a model: the name of one in the model store "
                            "(einsora models list)");
        return NULL;
    }
    if (kind != EINSORA_WORKLOAD_KIND_ENDPOINT && request->model != NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "only an endpoint has a model, not a %s",
                    einsora_workload_kind_to_string(kind));
        return NULL;
    }
    if (request->idle_timeout_s > EINSORA_IDLE_TIMEOUT_MAX_S || request->idle_timeout_s < -1) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "idle_timeout must be a number of seconds from 1 to %" G_GINT64_FORMAT
                    " (a year), or 0 for none",
                    EINSORA_IDLE_TIMEOUT_MAX_S);
        return NULL;
    }
    if (request->model != NULL) {
        g_autoptr(GError) local_error = NULL;

        model = self->models != NULL
                    ? einsora_model_store_lookup(self->models, request->model, &local_error)
                    : NULL;
        if (model == NULL) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "model %s isn't in this installation's model store; add it with "
                        "einsora models add",
                        einsora_model_name_is_valid(request->model) ? request->model : "(that)");
            return NULL;
        }
    }

    if (request->fallback_after_s < 0 || request->fallback_after_s > EINSORA_FALLBACK_AFTER_MAX_S) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "fallback_after must be a number of seconds from 0 to %" G_GINT64_FORMAT
                    " (a week)",
                    EINSORA_FALLBACK_AFTER_MAX_S);
        return NULL;
    }
    if (request->fallback != NULL && request->fallback[0] != NULL &&
        (fallback_classes = resolve_fallback(self, actor->tenant_id, kind, klass, image, region,
                                             request->fallback, error)) == NULL)
        return NULL;

    workload = einsora_workload_new();
    workload->id = einsora_uuid_v7_new(now_us / 1000);
    workload->tenant_id = g_strdup(actor->tenant_id);
    workload->kind = kind;
    /* No name given: the kind and the ID's last characters, which vary
     * even between workloads created in the same millisecond. */
    workload->name = request->name != NULL
                         ? g_strdup(request->name)
                         : g_strdup_printf("%s-%s", einsora_workload_kind_to_string(kind),
                                           workload->id + EINSORA_UUID_STRING_LEN - 6);
    workload->state = EINSORA_WORKLOAD_STATE_INITIAL;
    workload->region = g_strdup(region);
    workload->gpu_class = g_strdup(klass->name);
    workload->image = g_strdup(image->name);
    if (model != NULL) {
        workload->model = g_strdup(model->name);
        workload->model_digest = g_strdup(model->digest);
    }
    workload->gpus = klass->devices;
    workload->fallback = g_steal_pointer(&fallback_classes);
    workload->fallback_after_s = workload->fallback != NULL ? request->fallback_after_s : 0;
    workload->idle_timeout_s = request->idle_timeout_s > 0   ? request->idle_timeout_s
                               : request->idle_timeout_s < 0 ? 0
                                                             : self->default_idle_timeout_s;
    workload->attempt = 0;
    workload->version = 0;
    workload->created_by = g_strdup(actor->user_id);
    workload->created_at = einsora_timestamp_format(now_us);
    workload->updated_at = einsora_timestamp_format(now_us);
    return g_steal_pointer(&workload);
}

typedef struct {
    EinsoraService *self;
    const EinsoraActor *actor;
    const EinsoraWorkload *workload;
    const EinsoraWorkloadRequest *request;
    gint64 now_us;
    /* Why no machine here can run it now, or NULL: noted with the create. */
    const char *nowhere;
} CreateContext;

static gboolean
create_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    CreateContext *ctx = user_data;
    g_autofree gchar *reason = einsora_reason_created(ctx->actor);
    g_autoptr(EinsoraWorkloadEvent) event = NULL;

    if (!einsora_service_check_quota_in_tx(ctx->self, ctx->workload->tenant_id,
                                           ctx->workload->gpu_class, ctx->workload->gpus, error))
        return FALSE;
    if (!einsora_store_insert_workload(store, ctx->workload, error))
        return FALSE;
    event = einsora_service_event_new(ctx->self, ctx->workload, FALSE, ctx->workload->state, reason,
                                      ctx->now_us);
    if (!einsora_store_append_event(store, event, error))
        return FALSE;
    if (ctx->nowhere != NULL) {
        g_autoptr(EinsoraWorkloadEvent) note = einsora_service_event_new(
            ctx->self, ctx->workload, TRUE, ctx->workload->state, ctx->nowhere, ctx->now_us);
        if (!einsora_store_append_event(store, note, error))
            return FALSE;
    }
    /* The answer the API is about to give, kept with the workload. */
    if (ctx->request->idempotency_key != NULL && ctx->request->request_sha256 != NULL) {
        g_autoptr(JsonNode) node = einsora_workload_to_json(ctx->workload);
        g_autofree gchar *body = NULL;

        if (ctx->nowhere != NULL)
            json_object_set_string_member(json_node_get_object(node), "warning", ctx->nowhere);
        body = json_to_string(node, FALSE);
        g_autoptr(EinsoraIdempotencyRecord) record = einsora_service_idempotency_record_new(
            ctx->workload->tenant_id, ctx->request->idempotency_key, ctx->request->request_sha256,
            201, body, ctx->now_us);

        return einsora_store_insert_idempotency_record(store, record, error);
    }
    return TRUE;
}

EinsoraWorkload *
einsora_service_create_workload(EinsoraService *self, const EinsoraActor *actor,
                                const EinsoraWorkloadRequest *request, GError **error)
{
    gint64 now_us;
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autofree gchar *nowhere = NULL;
    CreateContext ctx;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL, NULL);
    g_return_val_if_fail(request != NULL, NULL);

    now_us = einsora_service_now(self);
    workload = workload_from_request(self, actor, request, now_us, error);
    if (workload == NULL)
        return NULL;
    /* Created all the same (a machine that can may join), and said. */
    nowhere = einsora_service_runs_nowhere_reason(self, workload);
    ctx = (CreateContext){self, actor, workload, request, now_us, nowhere};
    if (!einsora_store_in_transaction(self->store, create_tx, &ctx, error))
        return NULL;
    einsora_service_events_added(self, workload->tenant_id);
    einsora_service_intent_changed(self, workload->id);
    return g_steal_pointer(&workload);
}

EinsoraWorkload *
einsora_service_get_workload(EinsoraService *self, const char *tenant_id, const char *workload_id,
                             gboolean include_deleted, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    workload = einsora_store_get_workload(self->store, tenant_id, workload_id, error);
    if (workload == NULL)
        return NULL;
    if (workload->state == EINSORA_WORKLOAD_STATE_DELETED && !include_deleted) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return g_steal_pointer(&workload);
}

GPtrArray *
einsora_service_list_workloads(EinsoraService *self, const char *tenant_id,
                               gboolean include_deleted, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    return einsora_store_list_workloads(self->store, tenant_id, include_deleted, error);
}

GPtrArray *
einsora_service_list_workloads_page(EinsoraService *self, const char *tenant_id,
                                    gboolean include_deleted, const char *after_created_at,
                                    const char *after_id, guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    return einsora_store_list_workloads_page(self->store, tenant_id, include_deleted,
                                             after_created_at, after_id, limit, error);
}
