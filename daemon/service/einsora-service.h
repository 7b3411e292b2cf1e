/* The service: business operations on workloads, always scoped to the
 * caller's tenant. einsora_service_transition() is the only way a
 * workload's state changes; einsora_service_note() records a decision that
 * changes nothing. Time comes from the injected clock. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-actor.h"
#include "einsora-catalog.h"
#include "einsora-idempotency-record.h"
#include "einsora-machine-gpu.h"
#include "einsora-enrolment.h"
#include "einsora-machine.h"
#include "einsora-metrics.h"
#include "einsora-model-finder.h"
#include "einsora-model-store.h"
#include "einsora-store.h"
#include "einsora-timestamp.h"
#include "einsora-usage-group.h"
#include "einsora-workload-logs.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

/* What a user asks for; strings are borrowed. */
typedef struct {
    const char *kind;
    const char *name;
    const char *gpu_class;
    const char *image;
    const char *region; /* NULL: the catalog's default region */
    /* With an Idempotency-Key (NULL: none), its record (the 201 and the
     * workload's JSON) is saved in the create's own transaction: a crash
     * can't keep the workload and lose the key, so a retry can't make a
     * second one. @request_sha256: of the request, as the API hashes it. */
    const char *idempotency_key;
    const char *request_sha256;
    /* An endpoint's model, by its name in the model store (required for
     * endpoints, refused for other kinds). */
    const char *model;
    /* Seconds idle before it is stopped (docs/adr/0044); 0: the default
     * (einsora_service_set_default_idle_timeout()), -1: never. */
    gint64 idle_timeout_s;
    /* Classes it may run on instead, in order (NULL-terminated; NULL:
     * none), "cpu" for the smallest CPU class as big as its own, once it
     * waited @fallback_after_s for its own class (docs/adr/0052). */
    const char *const *fallback;
    gint64 fallback_after_s;
} EinsoraWorkloadRequest;

/* Fallback classes a workload may name at most, and the longest wait. */
#define EINSORA_FALLBACK_MAX 4
#define EINSORA_FALLBACK_AFTER_MAX_S (G_GINT64_CONSTANT(7) * 24 * 3600)

/* The longest idle limit a workload may be given: a year. */
#define EINSORA_IDLE_TIMEOUT_MAX_S (G_GINT64_CONSTANT(366) * 24 * 3600)

/* Where the controller placed a workload; recorded with the move to
 * provisioning, in the same transaction. */
typedef struct {
    const char *placed_class;
    const char *machine_id; /* NULL on backends that pick the node */
    const char *driver;     /* NULL on backends that pick the node */
    /* The machine's GPUs it runs on (einsora-gpu-mask.h): as many as the
     * class has devices, or 0 when placement chose none. */
    guint64 gpu_mask;
} EinsoraPlacement;

#define EINSORA_WORKLOAD_NAME_MAX_BYTES 100

/* How long the link of a one-time access ticket stays valid. */
#define EINSORA_ACCESS_TICKET_TTL_US (60 * G_TIME_SPAN_SECOND)

#define EINSORA_TYPE_SERVICE (einsora_service_get_type())
G_DECLARE_FINAL_TYPE(EinsoraService, einsora_service, EINSORA, SERVICE, GObject)

EinsoraService *einsora_service_new(EinsoraStore *store, EinsoraCatalog *catalog,
                                    EinsoraNowFunc now, gpointer now_data);

/* The catalog the service checks requests against (borrowed): read-only
 * data, for showing a tenant what it may ask for (GET /v1/catalog). */
EinsoraCatalog *einsora_service_get_catalog(EinsoraService *self);

EinsoraWorkload *einsora_service_create_workload(EinsoraService *self, const EinsoraActor *actor,
                                                 const EinsoraWorkloadRequest *request,
                                                 GError **error);
EinsoraWorkload *einsora_service_get_workload(EinsoraService *self, const char *tenant_id,
                                              const char *workload_id, gboolean include_deleted,
                                              GError **error);
GPtrArray *einsora_service_list_workloads(EinsoraService *self, const char *tenant_id,
                                          gboolean include_deleted, GError **error);
/* A keyset page of the list: after (@after_created_at, @after_id), both
 * NULL for the first, at most @limit. */
GPtrArray *einsora_service_list_workloads_page(EinsoraService *self, const char *tenant_id,
                                               gboolean include_deleted,
                                               const char *after_created_at, const char *after_id,
                                               guint limit, GError **error);
EinsoraWorkload *einsora_service_start_workload(EinsoraService *self, const EinsoraActor *actor,
                                                const char *workload_id, GError **error);
EinsoraWorkload *einsora_service_stop_workload(EinsoraService *self, const EinsoraActor *actor,
                                               const char *workload_id, GError **error);
EinsoraWorkload *einsora_service_delete_workload(EinsoraService *self, const EinsoraActor *actor,
                                                 const char *workload_id, GError **error);
GPtrArray *einsora_service_list_events(EinsoraService *self, const char *tenant_id,
                                       const char *workload_id, GError **error);
/* The timeline's events whose seq is above @after_seq, at most @limit. */
GPtrArray *einsora_service_list_events_page(EinsoraService *self, const char *tenant_id,
                                            const char *workload_id, gint64 after_seq, guint limit,
                                            GError **error);
JsonNode *einsora_service_export_workload(EinsoraService *self, const char *tenant_id,
                                          const char *workload_id, GError **error);

/* The change feed (GET /v1/events). Every committed write that appends to
 * a tenant's timeline emits "events-added" (tenant ID) afterwards; list
 * then answers the tenant's events whose seq is above @after_seq, of all
 * its workloads, in seq order, at most @limit. seq is one sequence for
 * the whole store: it only grows. last_event_seq is the seq of the
 * tenant's latest event (0 when there is none): where "from now" starts. */
GPtrArray *einsora_service_list_tenant_events(EinsoraService *self, const char *tenant_id,
                                              gint64 after_seq, guint limit, GError **error);
gboolean einsora_service_last_event_seq(EinsoraService *self, const char *tenant_id, gint64 *seq,
                                        GError **error);

/* The tenant's quota for the GPU class @gpu_class (0 when it has no row:
 * deny by default) and the GPUs of that requested class its workloads
 * hold now, in states that hold quota: the two numbers create and start
 * check. */
gboolean einsora_service_get_gpu_quota(EinsoraService *self, const char *tenant_id,
                                       const char *gpu_class, gint64 *quota, gint64 *held,
                                       GError **error);

/* Opening a notebook in a browser (the access proxy). The API makes the
 * secret and passes only its SHA-256 (lowercase hex) here; nothing in the
 * service sees the secret.
 *
 * grant: the workload must be the actor's tenant's (else NOT_FOUND, as
 * for every other tenant's object), a notebook, running, and placed on a
 * machine (else CONFLICT). Stores a ticket for the workload's current
 * attempt, valid for EINSORA_ACCESS_TICKET_TTL_US, and notes in the
 * timeline who asked, in one transaction. Returns the stored ticket. */
EinsoraAccessTicket *einsora_service_grant_access(EinsoraService *self, const EinsoraActor *actor,
                                                  const char *workload_id, const char *ticket_hash,
                                                  GError **error);
/* An endpoint's way in is its base URL on the access proxy, called with
 * an API token: nothing is stored and nothing expires. The workload must
 * be the actor's tenant's (else NOT_FOUND), an endpoint, running, and
 * placed on a machine (else CONFLICT). Returns it. */
EinsoraWorkload *einsora_service_endpoint_access(EinsoraService *self, const EinsoraActor *actor,
                                                 const char *workload_id, GError **error);
/* take: the ticket whose secret hashes to @ticket_hash, deleted as it is
 * returned, so it opens at most once. Unknown, expired, already taken,
 * malformed or NULL is NOT_FOUND. The caller still checks that the ticket's
 * workload (and attempt) is the one it is about to open, and that it is
 * still ready: the ticket says only who was allowed to open what. */
EinsoraAccessTicket *einsora_service_take_access_ticket(EinsoraService *self,
                                                        const char *ticket_hash, GError **error);

/* Machine enrolments (docs/adr/0055). A one-time token for a machine of
 * @actor's tenant in @region (NULL: the catalog's default), named @name
 * (NULL: from its ID), valid EINSORA_ENROLMENT_LIFETIME_US; the service
 * stores @token_hash, the secret's SHA-256, only. */
EinsoraEnrolment *einsora_service_create_enrolment(EinsoraService *self, const EinsoraActor *actor,
                                                   const char *name, const char *region,
                                                   const char *token_hash, GError **error);
/* Takes the enrolment whose token hashes to @token_hash and makes machine
 * @machine_id with its owner and region and the agent's certificate
 * (@fingerprint, @cert_expires_at), in one transaction. An unknown, used
 * or expired token is UNAUTHENTICATED and changes nothing. */
EinsoraEnrolment *einsora_service_enrol_machine(EinsoraService *self, const char *token_hash,
                                                const char *machine_id, const char *fingerprint,
                                                const char *cert_expires_at, GError **error);

/* A networked agent's sync (docs/adr/0056): the machine whose agent holds
 * the client certificate with @fingerprint, whoever owns it.
 * UNAUTHENTICATED when none does: never enrolled here, or revoked. */
EinsoraMachine *einsora_service_find_agent_machine(EinsoraService *self, const char *fingerprint,
                                                   GError **error);
/* The IDs of the workloads placed on @machine_id and not deleted (a set):
 * what its agent may report on. */
GHashTable *einsora_service_placed_workload_ids(EinsoraService *self, const char *machine_id,
                                                GError **error);

/* Machines are read-only here: they register through their agent. */
GPtrArray *einsora_service_list_machines(EinsoraService *self, const char *tenant_id,
                                         GError **error);
EinsoraMachine *einsora_service_get_machine(EinsoraService *self, const char *tenant_id,
                                            const char *machine_id, GError **error);
/* Online when its agent was seen in the last three minutes. */
gboolean einsora_service_machine_online(EinsoraService *self, const EinsoraMachine *machine);
/* Whether new work can be placed on it now (EINSORA_MACHINE_PLACEABLE_WINDOW_US). */
gboolean einsora_service_machine_placeable(EinsoraService *self, const EinsoraMachine *machine);
/* What the machine's agent last reported, as the store keeps it, read by
 * einsora_inventory_read_stored() as the hub reads it: its GPUs
 * (EinsoraMachineGpu, each with the class it serves in the machine's
 * region) and its drivers. Empty when it hasn't reported yet, or when
 * what is stored doesn't fit the machine. */
GPtrArray *einsora_service_machine_gpus(EinsoraService *self, const EinsoraMachine *machine);
gchar **einsora_service_machine_drivers(EinsoraService *self, const EinsoraMachine *machine);
/* Its CPUs and memory as its agent last reported them (the row's, before). */
void einsora_service_machine_size(EinsoraService *self, const EinsoraMachine *machine, gint64 *cpus,
                                  gint64 *memory_mib);
/* The drivers that run @image_name on some system (sim left out). */
gchar **einsora_service_image_drivers(EinsoraService *self, const char *image_name);
/* Whether a machine of the tenant's, placeable now, offers one of them. */
gboolean einsora_service_image_runs_now(EinsoraService *self, const char *tenant_id,
                                        const char *image_name);
/* Why @workload can't run on any machine here now, or NULL when one can. */
gchar *einsora_service_runs_nowhere_reason(EinsoraService *self, const EinsoraWorkload *workload);
/* How many of the tenant's workloads hold capacity on each machine:
 * machine ID -> count (GINT_TO_POINTER), from one read of the workloads. */
/* What other tenants' workloads hold on @machine now: the owner's view
 * of a shared machine. */
typedef struct {
    gint64 workloads;
    gint64 cpus;
    gint64 memory_mib;
    gint64 gpus;
} EinsoraGuestUse;

gboolean einsora_service_machine_guest_use(EinsoraService *self, const EinsoraMachine *machine,
                                           EinsoraGuestUse *use, GError **error);
GHashTable *einsora_service_count_machine_workloads(EinsoraService *self, const char *tenant_id,
                                                    GError **error);

/* Idempotency-Key records, kept for a day. */
EinsoraIdempotencyRecord *einsora_service_get_idempotency_record(EinsoraService *self,
                                                                 const char *tenant_id,
                                                                 const char *key, GError **error);
gboolean einsora_service_save_idempotency_record(EinsoraService *self, const char *tenant_id,
                                                 const char *key, const char *request_sha256,
                                                 guint status, const char *body, GError **error);

/* Whether the store is reachable and migrated. */
gboolean einsora_service_check_ready(EinsoraService *self, GError **error);

gboolean einsora_service_transition(EinsoraService *self, EinsoraWorkload *workload,
                                    EinsoraWorkloadState to, const char *reason,
                                    const EinsoraPlacement *placement, GError **error);
gboolean einsora_service_note(EinsoraService *self, const EinsoraWorkload *workload,
                              const char *reason, GError **error);

/* A group commit (docs/adr/0028-admission-group-commit.md): between begin
 * and commit, transitions and notes write into one transaction instead of
 * one each, and "events-added" waits for the commit (a rollback tells no
 * one). A transition that loses its race (CONFLICT) or is refused writes
 * nothing and leaves the group as it was; any other failure dooms the
 * group: every later write in it fails, and commit rolls it back. Groups
 * never nest, and nothing else may write through the service or the store
 * while one is open. For the controller's own decisions, which a crash
 * may lose because the next pass makes them again. */
gboolean einsora_service_group_begin(EinsoraService *self, GError **error);
gboolean einsora_service_group_commit(EinsoraService *self, GError **error);
void einsora_service_group_rollback(EinsoraService *self);
/* Whether a write in the open group failed, so that it can only roll back. */
gboolean einsora_service_group_failed(EinsoraService *self);

/* The idle limit a workload gets when its create names none, in
 * seconds; 0 (the default): none. */
void einsora_service_set_default_idle_timeout(EinsoraService *self, gint64 seconds);

/* Another process sharing the store appended events for @tenant_id, or,
 * with NULL, events of any tenant may have been appended unseen: emits
 * EinsoraService::events-added as this process's own commits do, so that
 * change feeds and the access proxy look again. */
void einsora_service_events_added_elsewhere(EinsoraService *self, const char *tenant_id);

/* Activity through the access proxy (einsora-service-activity.c), kept in
 * memory: a restarted daemon counts from its start, so it never stops a
 * workload early. */
void einsora_service_note_activity(EinsoraService *self, const char *workload_id);
/* When a request or message last went through the proxy to it (Unix
 * µs), 0 when none since the daemon started. */
gint64 einsora_service_last_activity(EinsoraService *self, const char *workload_id);

/* Workload output (einsora-service-logs.c): where the backend that runs
 * a workload keeps it. Without one, every workload has none. */
void einsora_service_set_workload_logs(EinsoraService *self, EinsoraWorkloadLogs *logs);
/* The path of the .log of @tenant_id's workload's attempt @attempt (<= 0:
 * the latest), @found_attempt which, @token its own token while it runs
 * (the caller redacts and wipes it); with the workload itself, so the
 * caller can tell when the attempt is over. NOT_FOUND for another
 * tenant's workload, one deleted (its logs went with its data), or one
 * with nothing kept; INVALID_REQUEST for an attempt it never had. */
gchar *einsora_service_find_workload_log(EinsoraService *self, const char *tenant_id,
                                         const char *workload_id, gint64 attempt,
                                         gint64 *found_attempt, gchar **token,
                                         EinsoraWorkload **workload, GError **error);

/* The model store (einsora-service-models.c). Endpoints are launched on a
 * model of it; only @owner_tenant_id, the tenant whose machine the daemon
 * runs on (its files are that machine's), adds and removes models, and
 * every tenant may list them. Without one, endpoints can't be launched. */
void einsora_service_set_model_store(EinsoraService *self, EinsoraModelStore *models,
                                     const char *owner_tenant_id);
GPtrArray *einsora_service_list_models(EinsoraService *self, const EinsoraActor *actor,
                                       GError **error);
EinsoraModelManifest *einsora_service_get_model(EinsoraService *self, const EinsoraActor *actor,
                                                const char *name, GError **error);
/* FORBIDDEN for another tenant; the store's refusals otherwise. */
EinsoraModelImport *einsora_service_import_model(EinsoraService *self, const EinsoraActor *actor,
                                                 const char *name, const char *source,
                                                 GError **error);
EinsoraModelImport *einsora_service_get_model_import(EinsoraService *self,
                                                     const EinsoraActor *actor, const char *id,
                                                     GError **error);
/* Other tools' models on the daemon's machine (EinsoraFoundModel), which
 * import takes by source; FORBIDDEN for another tenant (they are that
 * machine's files). */
GPtrArray *einsora_service_find_local_models(EinsoraService *self, const EinsoraActor *actor,
                                             GError **error);
/* CONFLICT while a workload that isn't deleted serves it. */
gboolean einsora_service_remove_model(EinsoraService *self, const EinsoraActor *actor,
                                      const char *name, GError **error);

/* /metrics (einsora-service-metrics.c, docs/adr/0043-metrics.md): the
 * daemon's metrics, machine-wide, which only @reader_tenant_id (the
 * tenant that owns this machine) may read. */
void einsora_service_set_metrics(EinsoraService *self, EinsoraMetrics *metrics,
                                 const char *reader_tenant_id);
/* Prometheus' text format 0.0.4, with the workloads of every tenant
 * counted from the store now (einsora_workloads). @actor NULL: a caller
 * the API let in without credentials (EINSORA_METRICS_OPEN=loopback).
 * FORBIDDEN for another tenant; NOT_FOUND without metrics; the store's
 * errors. */
GString *einsora_service_render_metrics(EinsoraService *self, const EinsoraActor *actor,
                                        GError **error);

/* Usage (docs/adr/0042): the tenant's metered seconds in [@from_us,
 * @to_us), widened to whole hours (the hours read come back in
 * *from_hour_us and *to_hour_us, either NULL), summed per @grouping:
 * EinsoraUsageGroup. At most EINSORA_USAGE_MAX_SPAN_US at once; from
 * after to, or a longer span, is INVALID_REQUEST. */
#define EINSORA_USAGE_MAX_SPAN_US (G_GINT64_CONSTANT(366) * 24 * 3600 * G_USEC_PER_SEC)
GPtrArray *einsora_service_usage(EinsoraService *self, const char *tenant_id, gint64 from_us,
                                 gint64 to_us, EinsoraUsageGrouping grouping, gint64 *from_hour_us,
                                 gint64 *to_hour_us, GError **error);

G_END_DECLS
