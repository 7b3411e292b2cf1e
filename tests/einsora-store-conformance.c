#define G_LOG_DOMAIN "einsora-store"

#include "einsora-store-conformance.h"

#include <gio/gio.h>

#include "einsora-error.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

/* The schema, defined once: every store's tables, columns and index names. */

typedef struct {
    const char *table;
    const char *const *columns;
} TableColumns;

static const TableColumns schema_columns[] = {
    {"tenants", (const char *const[]){"id", "name", "trusted", "created_at", NULL}},
    {"users",
     (const char *const[]){"id", "tenant_id", "email", "display_name", "password_hash", "role",
                           "created_at", "disabled_at", "admin", "password_must_change", NULL}},
    {"api_tokens",
     (const char *const[]){"id", "tenant_id", "user_id", "name", "prefix", "token_sha256",
                           "created_at", "last_used_at", "expires_at", "revoked_at", NULL}},
    {"sessions",
     (const char *const[]){"id", "tenant_id", "user_id", "session_sha256", "csrf_sha256",
                           "created_at", "expires_at", "revoked_at", NULL}},
    {"quotas", (const char *const[]){"tenant_id", "gpu_class", "gpus", "updated_at", NULL}},
    {"machines",
     (const char *const[]){"id", "tenant_id", "name", "region", "os", "cpus", "memory_mib",
                           "sharing", "inventory", "last_seen_at", "created_at", "cert_fingerprint",
                           "cert_expires_at", "agent_version", "clock_offset_ms", NULL}},
    {"machine_enrolments",
     (const char *const[]){"id", "tenant_id", "token_sha256", "name", "region", "created_by",
                           "created_at", "expires_at", "used_at", "machine_id", NULL}},
    {"workloads", (const char *const[]){"id",
                                        "tenant_id",
                                        "kind",
                                        "name",
                                        "state",
                                        "region",
                                        "gpu_class",
                                        "placed_class",
                                        "image",
                                        "gpus",
                                        "machine_id",
                                        "driver",
                                        "attempt",
                                        "version",
                                        "created_by",
                                        "created_at",
                                        "updated_at",
                                        "model",
                                        "model_digest",
                                        "gpu_mask",
                                        "idle_timeout_s",
                                        "fallback",
                                        "fallback_after_s",
                                        NULL}},
    {"workload_events",
     (const char *const[]){"seq", "id", "tenant_id", "workload_id", "from_state", "to_state",
                           "reason", "attempt", "created_at", "placed_class", NULL}},
    {"access_tickets", (const char *const[]){"ticket_sha256", "tenant_id", "workload_id", "attempt",
                                             "created_by", "created_at", "expires_at", NULL}},
    {"usage_records",
     (const char *const[]){"id", "tenant_id", "workload_id", "region", "gpu_class", "hour_start",
                           "seconds", "gpu_seconds", "created_at", NULL}},
    {"leases", (const char *const[]){"name", "holder", "acquired_at", "expires_at", NULL}},
    {"metering_cursors", (const char *const[]){"name", "last_seq", "updated_at", NULL}},
    {"audit_events", (const char *const[]){"id", "tenant_id", "at", "actor", "actor_user_id",
                                           "action", "target", "detail", NULL}},
    {"idempotency_keys",
     (const char *const[]){"tenant_id", "key", "request_sha256", "response_status", "response_body",
                           "created_at", "expires_at", NULL}},
};

static const char *const schema_indexes[] = {
    "tenants_name",
    "users_email",
    "users_tenant_id_id",
    "api_tokens_token_sha256",
    "api_tokens_user_id",
    "sessions_session_sha256",
    "sessions_user_id",
    "sessions_expires_at",
    "machines_tenant_id",
    "machines_region",
    "machines_cert_fingerprint",
    "machine_enrolments_tenant_id",
    "workloads_tenant_id_id",
    "workloads_tenant_id_created_at_id",
    "workloads_tenant_id_gpu_class_state",
    "workloads_region_state",
    "workloads_machine_id",
    "workloads_model",
    "workload_events_id",
    "workload_events_workload_id_seq",
    "workload_events_tenant_id_seq",
    "access_tickets_expires_at",
    "usage_records_workload_id_gpu_class_hour_start",
    "audit_events_tenant_id_at",
    "usage_records_tenant_id_hour_start",
    "idempotency_keys_expires_at",
    NULL,
};

const char *const *
einsora_store_conformance_tables(void)
{
    static const char *tables[G_N_ELEMENTS(schema_columns) + 1];

    for (guint i = 0; i < G_N_ELEMENTS(schema_columns); i++)
        tables[i] = schema_columns[i].table;
    tables[G_N_ELEMENTS(schema_columns)] = NULL;
    return tables;
}

/* Fixture and record helpers */

/* 2026-01-01T00:00:00Z */
#define BASE_US G_GINT64_CONSTANT(1767225600000000)

typedef struct {
    const EinsoraStoreHarness *harness;
    EinsoraStore *store;
    gint64 now_us;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    f->harness = data;
    f->store = f->harness->open_fresh(f->harness->data, &error);
    g_assert_no_error(error);
    g_assert_true(EINSORA_IS_STORE(f->store));
    f->now_us = BASE_US;
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_assert_finalize_object(f->store);
}

/* A timestamp one second after the last one, so creation order is time
 * order unless a test says otherwise. */
static gchar *
tick(Fixture *f)
{
    f->now_us += G_USEC_PER_SEC;
    return einsora_timestamp_format(f->now_us);
}

static gchar *
new_id(Fixture *f)
{
    return einsora_uuid_v7_new(f->now_us / 1000);
}

/* Takes @value. */
static void
replace_string(gchar **field, gchar *value)
{
    g_free(*field);
    *field = value;
}

static EinsoraTenant *
add_tenant(Fixture *f, const char *name, gboolean trusted)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *id = new_id(f);
    g_autofree gchar *created_at = tick(f);
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(id, name, trusted, created_at);

    g_assert_true(einsora_store_insert_tenant(f->store, tenant, &error));
    g_assert_no_error(error);
    return g_steal_pointer(&tenant);
}

static EinsoraMachine *
machine_new_for(Fixture *f, const char *tenant_id, const char *name)
{
    EinsoraMachine *machine = einsora_machine_new();

    machine->id = new_id(f);
    machine->tenant_id = g_strdup(tenant_id);
    machine->name = g_strdup(name);
    machine->region = g_strdup("home");
    machine->os = g_strdup("linux");
    machine->cpus = 16;
    machine->memory_mib = 65536;
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = tick(f);
    return machine;
}

static EinsoraMachine *
add_machine(Fixture *f, const char *tenant_id, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = machine_new_for(f, tenant_id, name);

    g_assert_true(einsora_store_insert_machine(f->store, machine, &error));
    g_assert_no_error(error);
    return g_steal_pointer(&machine);
}

static EinsoraWorkload *
workload_new_for(Fixture *f, const char *tenant_id, const char *name)
{
    EinsoraWorkload *workload = einsora_workload_new();

    workload->id = new_id(f);
    workload->tenant_id = g_strdup(tenant_id);
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    workload->name = g_strdup(name);
    workload->state = EINSORA_WORKLOAD_STATE_PENDING;
    workload->region = g_strdup("home");
    workload->gpu_class = g_strdup("l40s-48gb");
    workload->image = g_strdup("jupyter-pytorch");
    workload->gpus = 1;
    workload->created_by = einsora_uuid_v7_new(BASE_US / 1000);
    workload->created_at = tick(f);
    workload->updated_at = g_strdup(workload->created_at);
    /* Every workload has an idle limit here, so each read checks it. */
    workload->idle_timeout_s = 3600;
    return workload;
}

static void
insert_workload(Fixture *f, const EinsoraWorkload *workload)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_store_insert_workload(f->store, workload, &error));
    g_assert_no_error(error);
}

static EinsoraWorkload *
add_workload(Fixture *f, const char *tenant_id, const char *name)
{
    g_autoptr(EinsoraWorkload) workload = workload_new_for(f, tenant_id, name);

    insert_workload(f, workload);
    return g_steal_pointer(&workload);
}

static EinsoraWorkloadEvent *
event_new_for(Fixture *f, const EinsoraWorkload *workload, gboolean has_from_state,
              EinsoraWorkloadState from, EinsoraWorkloadState to, const char *reason)
{
    EinsoraWorkloadEvent *event = einsora_workload_event_new();

    event->id = new_id(f);
    event->tenant_id = g_strdup(workload->tenant_id);
    event->workload_id = g_strdup(workload->id);
    event->has_from_state = has_from_state;
    event->from_state = has_from_state ? from : EINSORA_WORKLOAD_STATE_PENDING;
    event->to_state = to;
    event->reason = g_strdup(reason);
    event->attempt = workload->attempt;
    event->created_at = tick(f);
    return event;
}

static void
append_event(Fixture *f, const EinsoraWorkloadEvent *event)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_store_append_event(f->store, event, &error));
    g_assert_no_error(error);
}

static void
assert_tenant_equal(const EinsoraTenant *a, const EinsoraTenant *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_cmpint(a->trusted, ==, b->trusted);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
}

static void
assert_machine_equal(const EinsoraMachine *a, const EinsoraMachine *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_cmpstr(a->region, ==, b->region);
    g_assert_cmpstr(a->os, ==, b->os);
    g_assert_cmpint(a->cpus, ==, b->cpus);
    g_assert_cmpint(a->memory_mib, ==, b->memory_mib);
    g_assert_cmpint(a->sharing, ==, b->sharing);
    g_assert_cmpstr(a->last_seen_at, ==, b->last_seen_at);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->agent_version, ==, b->agent_version);
    g_assert_cmpint(a->has_clock_offset, ==, b->has_clock_offset);
    if (a->has_clock_offset)
        g_assert_cmpint(a->clock_offset_ms, ==, b->clock_offset_ms);
}

static void
assert_workload_equal(const EinsoraWorkload *a, const EinsoraWorkload *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpint(a->kind, ==, b->kind);
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_cmpint(a->state, ==, b->state);
    g_assert_cmpstr(a->region, ==, b->region);
    g_assert_cmpstr(a->gpu_class, ==, b->gpu_class);
    g_assert_cmpstr(a->placed_class, ==, b->placed_class);
    g_assert_cmpstr(a->image, ==, b->image);
    g_assert_cmpstr(a->model, ==, b->model);
    g_assert_cmpstr(a->model_digest, ==, b->model_digest);
    g_assert_cmpint(a->gpus, ==, b->gpus);
    g_assert_cmpint(a->idle_timeout_s, ==, b->idle_timeout_s);
    g_assert_cmpstr(a->fallback, ==, b->fallback);
    g_assert_cmpint(a->fallback_after_s, ==, b->fallback_after_s);
    g_assert_cmpstr(a->machine_id, ==, b->machine_id);
    g_assert_cmpstr(a->driver, ==, b->driver);
    g_assert_cmpint(a->attempt, ==, b->attempt);
    g_assert_cmpint(a->version, ==, b->version);
    g_assert_cmpstr(a->created_by, ==, b->created_by);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->updated_at, ==, b->updated_at);
}

static void
assert_event_equal(const EinsoraWorkloadEvent *a, const EinsoraWorkloadEvent *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->workload_id, ==, b->workload_id);
    g_assert_cmpint(a->has_from_state, ==, b->has_from_state);
    if (a->has_from_state)
        g_assert_cmpint(a->from_state, ==, b->from_state);
    g_assert_cmpint(a->to_state, ==, b->to_state);
    g_assert_cmpstr(a->reason, ==, b->reason);
    g_assert_cmpint(a->attempt, ==, b->attempt);
    g_assert_cmpstr(a->placed_class, ==, b->placed_class);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
}

static EinsoraWorkload *
get_workload(Fixture *f, const char *tenant_id, const char *workload_id)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkload *workload =
        einsora_store_get_workload(f->store, tenant_id, workload_id, &error);

    g_assert_no_error(error);
    g_assert_nonnull(workload);
    return workload;
}

static GPtrArray *
list_events(Fixture *f, const char *tenant_id, const char *workload_id)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *events = einsora_store_list_events(f->store, tenant_id, workload_id, &error);

    g_assert_no_error(error);
    g_assert_nonnull(events);
    return events;
}

static GPtrArray *
list_workloads(Fixture *f, const char *tenant_id, gboolean include_deleted)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *workloads =
        einsora_store_list_workloads(f->store, tenant_id, include_deleted, &error);

    g_assert_no_error(error);
    g_assert_nonnull(workloads);
    return workloads;
}

/* Orders by (created_at, id), as lists must. */
static gint
workload_order_cmp(gconstpointer a, gconstpointer b)
{
    const EinsoraWorkload *wa = *(EinsoraWorkload *const *)a;
    const EinsoraWorkload *wb = *(EinsoraWorkload *const *)b;
    int cmp = g_strcmp0(wa->created_at, wb->created_at);

    return cmp != 0 ? cmp : g_strcmp0(wa->id, wb->id);
}

static gint
machine_order_cmp(gconstpointer a, gconstpointer b)
{
    const EinsoraMachine *ma = *(EinsoraMachine *const *)a;
    const EinsoraMachine *mb = *(EinsoraMachine *const *)b;
    int cmp = g_strcmp0(ma->created_at, mb->created_at);

    return cmp != 0 ? cmp : g_strcmp0(ma->id, mb->id);
}

/* Tenants */

static void
test_tenant_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) internal = add_tenant(f, "internal", TRUE);
    g_autoptr(EinsoraTenant) got_acme = NULL;
    g_autoptr(EinsoraTenant) got_internal = NULL;
    g_autoptr(EinsoraTenant) missing = NULL;
    g_autofree gchar *unknown_id = new_id(f);

    got_acme = einsora_store_get_tenant(f->store, acme->id, &error);
    g_assert_no_error(error);
    assert_tenant_equal(got_acme, acme);
    got_internal = einsora_store_get_tenant(f->store, internal->id, &error);
    g_assert_no_error(error);
    assert_tenant_equal(got_internal, internal);
    g_assert_true(got_internal->trusted);

    missing = einsora_store_get_tenant(f->store, unknown_id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(missing);
}

static void
test_tenant_duplicate_id(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) copy = einsora_tenant_new(acme->id, "globex", TRUE, acme->created_at);
    g_autoptr(EinsoraTenant) got = NULL;

    g_assert_false(einsora_store_insert_tenant(f->store, copy, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    got = einsora_store_get_tenant(f->store, acme->id, &error);
    g_assert_no_error(error);
    assert_tenant_equal(got, acme);
}

static void
test_tenant_duplicate_name(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autofree gchar *other_id = new_id(f);
    g_autoptr(EinsoraTenant) other = einsora_tenant_new(other_id, "acme", FALSE, acme->created_at);
    g_autoptr(EinsoraTenant) missing = NULL;

    g_assert_false(einsora_store_insert_tenant(f->store, other, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    missing = einsora_store_get_tenant(f->store, other_id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

/* Machines */

static void
test_machine_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraMachine) desktop = add_machine(f, acme->id, "desktop");
    g_autoptr(EinsoraMachine) studio = machine_new_for(f, acme->id, "studio");
    g_autoptr(EinsoraMachine) got = NULL;

    replace_string(&studio->os, g_strdup("darwin"));
    studio->sharing = EINSORA_SHARING_COMMUNITY;
    studio->last_seen_at = tick(f);
    studio->agent_version = g_strdup("0.1.0");
    studio->has_clock_offset = TRUE;
    studio->clock_offset_ms = -1234;
    g_assert_true(einsora_store_insert_machine(f->store, studio, &error));
    g_assert_no_error(error);

    got = einsora_store_get_machine(f->store, acme->id, desktop->id, &error);
    g_assert_no_error(error);
    assert_machine_equal(got, desktop);
    g_assert_null(got->last_seen_at);
    g_assert_null(got->agent_version);
    g_assert_false(got->has_clock_offset);
    g_clear_pointer(&got, einsora_machine_free);
    got = einsora_store_get_machine(f->store, acme->id, studio->id, &error);
    g_assert_no_error(error);
    assert_machine_equal(got, studio);
}

/* What an agent says of itself on a sync (docs/adr/0057): its version and
 * its clock's offset, either way of zero, read back by every reader;
 * replaced by the next sync's, and cleared by one that says nothing; an
 * inventory sent or kept changes neither. */
static void
test_machine_agent_health(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraMachine) ws = add_machine(f, acme->id, "ws");
    g_autoptr(EinsoraMachine) other = add_machine(f, acme->id, "other");
    const gint64 behind = 120000;
    const gint64 ahead = -45250;

    g_assert_true(einsora_store_record_machine_seen(f->store, ws->id, "2026-11-29T10:00:00.000000Z",
                                                    "{\"cpus\":16}", "0.1.0", &behind, &error));
    g_assert_no_error(error);
    {
        g_autoptr(EinsoraMachine) got =
            einsora_store_get_machine(f->store, acme->id, ws->id, &error);
        g_autoptr(EinsoraMachine) found = einsora_store_find_machine(f->store, ws->id, &error);
        g_autoptr(GPtrArray) owned = einsora_store_list_machines(f->store, acme->id, &error);
        g_autoptr(GPtrArray) region = einsora_store_list_region_machines(f->store, "home", &error);
        g_autoptr(EinsoraMachine) untouched =
            einsora_store_get_machine(f->store, acme->id, other->id, &error);

        g_assert_no_error(error);
        g_assert_cmpstr(got->agent_version, ==, "0.1.0");
        g_assert_true(got->has_clock_offset);
        g_assert_cmpint(got->clock_offset_ms, ==, behind);
        assert_machine_equal(found, got);
        assert_machine_equal(g_ptr_array_index(owned, 0), got);
        assert_machine_equal(g_ptr_array_index(region, 0), got);
        g_assert_null(untouched->agent_version);
        g_assert_false(untouched->has_clock_offset);
    }
    /* The next sync's replace them, the inventory kept. */
    g_assert_true(einsora_store_record_machine_seen(f->store, ws->id, "2026-11-29T10:00:05.000000Z",
                                                    NULL, "0.2.0~rc1", &ahead, &error));
    g_assert_no_error(error);
    {
        g_autoptr(EinsoraMachine) got =
            einsora_store_get_machine(f->store, acme->id, ws->id, &error);
        g_assert_cmpstr(got->agent_version, ==, "0.2.0~rc1");
        g_assert_true(got->has_clock_offset);
        g_assert_cmpint(got->clock_offset_ms, ==, ahead);
        g_assert_cmpstr(got->inventory, ==, "{\"cpus\":16}");
    }
    /* A clock at exactly the server's is an offset of 0, not none. */
    {
        const gint64 zero = 0;
        g_autoptr(EinsoraMachine) got = NULL;

        g_assert_true(einsora_store_record_machine_seen(
            f->store, ws->id, "2026-11-29T10:00:07.000000Z", NULL, "0.2.0", &zero, &error));
        got = einsora_store_get_machine(f->store, acme->id, ws->id, &error);
        g_assert_true(got->has_clock_offset);
        g_assert_cmpint(got->clock_offset_ms, ==, 0);
    }
    /* An agent that says neither (an older one) leaves neither. */
    g_assert_true(einsora_store_record_machine_seen(f->store, ws->id, "2026-11-29T10:00:10.000000Z",
                                                    NULL, NULL, NULL, &error));
    g_assert_no_error(error);
    {
        g_autoptr(EinsoraMachine) got =
            einsora_store_get_machine(f->store, acme->id, ws->id, &error);
        g_assert_null(got->agent_version);
        g_assert_false(got->has_clock_offset);
        g_assert_cmpstr(got->last_seen_at, ==, "2026-11-29T10:00:10.000000Z");
    }
}

static void
test_machine_duplicate_id(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraMachine) desktop = add_machine(f, acme->id, "desktop");
    g_autoptr(EinsoraMachine) copy = einsora_machine_copy(desktop);
    g_autoptr(EinsoraMachine) got = NULL;

    replace_string(&copy->name, g_strdup("impostor"));
    g_assert_false(einsora_store_insert_machine(f->store, copy, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    got = einsora_store_get_machine(f->store, acme->id, desktop->id, &error);
    g_assert_no_error(error);
    assert_machine_equal(got, desktop);
}

static void
test_machine_unknown_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *tenant_id = new_id(f);
    g_autoptr(EinsoraMachine) machine = machine_new_for(f, tenant_id, "desktop");

    g_assert_false(einsora_store_insert_machine(f->store, machine, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
test_machine_other_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraMachine) desktop = add_machine(f, acme->id, "desktop");
    g_autoptr(EinsoraMachine) got = NULL;
    g_autoptr(GPtrArray) acme_list = NULL;
    g_autoptr(GPtrArray) globex_list = NULL;

    got = einsora_store_get_machine(f->store, globex->id, desktop->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);

    globex_list = einsora_store_list_machines(f->store, globex->id, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(globex_list->len, ==, 0);
    acme_list = einsora_store_list_machines(f->store, acme->id, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(acme_list->len, ==, 1);
    assert_machine_equal(g_ptr_array_index(acme_list, 0), desktop);
}

static void
test_machine_list_order(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(GPtrArray) expected =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_free);
    g_autoptr(GPtrArray) got = NULL;
    g_autofree gchar *early = tick(f);
    g_autofree gchar *late = tick(f);
    /* Inserted out of time order, two with the same time. */
    const char *times[] = {late, early, early, late};

    for (guint i = 0; i < G_N_ELEMENTS(times); i++) {
        g_autofree gchar *name = g_strdup_printf("machine-%u", i);
        EinsoraMachine *machine = machine_new_for(f, acme->id, name);
        replace_string(&machine->created_at, g_strdup(times[i]));
        g_assert_true(einsora_store_insert_machine(f->store, machine, &error));
        g_assert_no_error(error);
        g_ptr_array_add(expected, machine);
    }
    g_ptr_array_sort(expected, machine_order_cmp);

    got = einsora_store_list_machines(f->store, acme->id, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(got->len, ==, expected->len);
    for (guint i = 0; i < got->len; i++)
        assert_machine_equal(g_ptr_array_index(got, i), g_ptr_array_index(expected, i));
}

/* Workloads */

#define MODEL_DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static EinsoraWorkload *
endpoint_serving(Fixture *f, const char *tenant_id, const char *name, const char *model,
                 EinsoraWorkloadState state)
{
    EinsoraWorkload *endpoint = workload_new_for(f, tenant_id, name);

    endpoint->kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
    endpoint->state = state;
    endpoint->model = g_strdup(model);
    endpoint->model_digest = g_strdup(MODEL_DIGEST);
    insert_workload(f, endpoint);
    return endpoint;
}

static gint64
count_with_model(Fixture *f, const char *model)
{
    g_autoptr(GError) error = NULL;
    gint64 count = -1;

    g_assert_true(einsora_store_count_workloads_with_model(f->store, model, &count, &error));
    g_assert_no_error(error);
    return count;
}

/* What keeps a model in the model store: every workload not deleted that
 * serves it, of any tenant (the store is the installation's). */
static void
test_workload_count_with_model(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraWorkload) notebook = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) running =
        endpoint_serving(f, acme->id, "running", "tiny", EINSORA_WORKLOAD_STATE_RUNNING);
    g_autoptr(EinsoraWorkload) deleting =
        endpoint_serving(f, acme->id, "deleting", "tiny", EINSORA_WORKLOAD_STATE_DELETING);
    g_autoptr(EinsoraWorkload) deleted =
        endpoint_serving(f, acme->id, "deleted", "tiny", EINSORA_WORKLOAD_STATE_DELETED);
    g_autoptr(EinsoraWorkload) theirs =
        endpoint_serving(f, globex->id, "theirs", "tiny", EINSORA_WORKLOAD_STATE_PENDING);
    g_autoptr(EinsoraWorkload) other =
        endpoint_serving(f, acme->id, "other", "other", EINSORA_WORKLOAD_STATE_STOPPED);

    g_assert_cmpint(count_with_model(f, "tiny"), ==, 3);
    g_assert_cmpint(count_with_model(f, "other"), ==, 1);
    g_assert_cmpint(count_with_model(f, "nobody"), ==, 0);
    g_assert_null(notebook->model);
}

/* /metrics counts every tenant's workloads by kind and state, deleted
 * ones left out, and zeroes what the caller passed. */
static void
test_workload_count_by_kind_and_state(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraWorkload) pending = add_workload(f, acme->id, "pending");
    g_autoptr(EinsoraWorkload) theirs = add_workload(f, globex->id, "theirs");
    g_autoptr(EinsoraWorkload) running =
        endpoint_serving(f, acme->id, "running", "tiny", EINSORA_WORKLOAD_STATE_RUNNING);
    g_autoptr(EinsoraWorkload) deleted =
        endpoint_serving(f, globex->id, "deleted", "tiny", EINSORA_WORKLOAD_STATE_DELETED);
    gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT];
    g_autoptr(GError) error = NULL;

    for (guint k = 0; k < EINSORA_WORKLOAD_KIND_COUNT; k++)
        for (guint s = 0; s < EINSORA_WORKLOAD_STATE_COUNT; s++)
            counts[k][s] = 1000;
    g_assert_true(einsora_store_count_workloads(f->store, counts, &error));
    g_assert_no_error(error);
    g_assert_cmpint(pending->state, ==, EINSORA_WORKLOAD_STATE_PENDING);
    for (guint k = 0; k < EINSORA_WORKLOAD_KIND_COUNT; k++) {
        for (guint s = 0; s < EINSORA_WORKLOAD_STATE_COUNT; s++) {
            gint64 want = 0;
            if (k == EINSORA_WORKLOAD_KIND_NOTEBOOK && s == EINSORA_WORKLOAD_STATE_PENDING)
                want = 2;
            else if (k == EINSORA_WORKLOAD_KIND_ENDPOINT && s == EINSORA_WORKLOAD_STATE_RUNNING)
                want = 1;
            g_assert_cmpint(counts[k][s], ==, want);
        }
    }
}

/* Only an endpoint names a model, and always with its file's digest. */
static void
test_workload_model_only_endpoints(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) notebook = workload_new_for(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) no_digest = workload_new_for(f, acme->id, "no-digest");
    g_autoptr(GError) error = NULL;

    notebook->model = g_strdup("tiny");
    notebook->model_digest = g_strdup(MODEL_DIGEST);
    g_assert_false(einsora_store_insert_workload(f->store, notebook, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    no_digest->kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
    no_digest->model = g_strdup("tiny");
    g_assert_false(einsora_store_insert_workload(f->store, no_digest, &error));
    g_assert_nonnull(error);
    g_assert_cmpint(count_with_model(f, "tiny"), ==, 0);
}

static void
test_workload_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraMachine) desktop = add_machine(f, acme->id, "desktop");
    g_autoptr(EinsoraWorkload) plain = add_workload(f, acme->id, "plain");
    g_autoptr(EinsoraWorkload) placed = workload_new_for(f, acme->id, "placed");
    g_autoptr(EinsoraWorkload) got_plain = NULL;
    g_autoptr(EinsoraWorkload) got_placed = NULL;

    placed->kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
    placed->state = EINSORA_WORKLOAD_STATE_RUNNING;
    placed->placed_class = g_strdup("a100-80gb");
    placed->machine_id = g_strdup(desktop->id);
    placed->driver = g_strdup("docker");
    placed->gpus = 2;
    placed->attempt = 3;
    placed->version = 7;
    placed->model = g_strdup("llama3.2:1b");
    placed->model_digest = g_strdup(MODEL_DIGEST);
    placed->fallback = g_strdup("l40s-48gb,cpu-8c-32g");
    placed->fallback_after_s = 600;
    replace_string(&placed->updated_at, tick(f));
    insert_workload(f, placed);

    got_plain = get_workload(f, acme->id, plain->id);
    assert_workload_equal(got_plain, plain);
    g_assert_null(got_plain->model);
    g_assert_null(got_plain->fallback);
    g_assert_null(got_plain->placed_class);
    g_assert_null(got_plain->machine_id);
    g_assert_null(got_plain->driver);
    got_placed = get_workload(f, acme->id, placed->id);
    assert_workload_equal(got_placed, placed);
}

static void
test_workload_duplicate_id(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "first");
    g_autoptr(EinsoraWorkload) copy = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) got = NULL;
    g_autoptr(GPtrArray) list = NULL;

    replace_string(&copy->name, g_strdup("second"));
    g_assert_false(einsora_store_insert_workload(f->store, copy, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    got = get_workload(f, acme->id, workload->id);
    assert_workload_equal(got, workload);
    list = list_workloads(f, acme->id, TRUE);
    g_assert_cmpuint(list->len, ==, 1);
}

static void
test_workload_unknown_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *tenant_id = new_id(f);
    g_autoptr(EinsoraWorkload) workload = workload_new_for(f, tenant_id, "orphan");

    g_assert_false(einsora_store_insert_workload(f->store, workload, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
test_workload_unknown(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) ghost = workload_new_for(f, acme->id, "ghost");
    g_autoptr(EinsoraWorkload) got = NULL;
    g_autoptr(GPtrArray) events = NULL;

    got = einsora_store_get_workload(f->store, acme->id, ghost->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);

    events = einsora_store_list_events(f->store, acme->id, ghost->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(events);
    g_clear_error(&error);

    ghost->state = EINSORA_WORKLOAD_STATE_QUEUED;
    g_assert_false(einsora_store_update_workload_state(f->store, ghost,
                                                       EINSORA_WORKLOAD_STATE_PENDING, 0, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

/* Every tenant-scoped method, called by tenant B on tenant A's workload. */
static void
test_workload_other_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "acme-notebook");
    g_autoptr(EinsoraWorkloadEvent) created = event_new_for(
        f, workload, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created by you@acme.example");
    g_autoptr(EinsoraWorkload) as_globex = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkloadEvent) globex_event = NULL;
    g_autoptr(EinsoraWorkload) got = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autoptr(GPtrArray) globex_list = NULL;
    g_autoptr(GPtrArray) globex_all = NULL;
    g_autoptr(GPtrArray) acme_list = NULL;

    append_event(f, created);

    got = einsora_store_get_workload(f->store, globex->id, workload->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);

    globex_list = list_workloads(f, globex->id, FALSE);
    g_assert_cmpuint(globex_list->len, ==, 0);
    globex_all = list_workloads(f, globex->id, TRUE);
    g_assert_cmpuint(globex_all->len, ==, 0);
    acme_list = list_workloads(f, acme->id, FALSE);
    g_assert_cmpuint(acme_list->len, ==, 1);

    events = einsora_store_list_events(f->store, globex->id, workload->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(events);
    g_clear_error(&error);

    /* The CAS with B's tenant ID must not touch A's row. */
    replace_string(&as_globex->tenant_id, g_strdup(globex->id));
    as_globex->state = EINSORA_WORKLOAD_STATE_DELETING;
    g_assert_false(einsora_store_update_workload_state(f->store, as_globex,
                                                       EINSORA_WORKLOAD_STATE_PENDING, 0, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    /* Nor may B write into A's timeline. */
    globex_event = event_new_for(f, workload, TRUE, EINSORA_WORKLOAD_STATE_PENDING,
                                 EINSORA_WORKLOAD_STATE_DELETING, "delete requested");
    replace_string(&globex_event->tenant_id, g_strdup(globex->id));
    g_assert_false(einsora_store_append_event(f->store, globex_event, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);

    got = get_workload(f, acme->id, workload->id);
    assert_workload_equal(got, workload);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = list_events(f, acme->id, workload->id);
    g_assert_cmpuint(events->len, ==, 1);
    assert_event_equal(g_ptr_array_index(events, 0), created);
}

/* The controller's list: one region, every tenant, only what needs
 * reconciling, oldest first. */
static void
test_workload_list_region(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    const EinsoraWorkloadState states[] = {
        EINSORA_WORKLOAD_STATE_PENDING,      EINSORA_WORKLOAD_STATE_QUEUED,
        EINSORA_WORKLOAD_STATE_PROVISIONING, EINSORA_WORKLOAD_STATE_RUNNING,
        EINSORA_WORKLOAD_STATE_STOPPING,     EINSORA_WORKLOAD_STATE_STOPPED,
        EINSORA_WORKLOAD_STATE_FAILED,       EINSORA_WORKLOAD_STATE_DELETING,
        EINSORA_WORKLOAD_STATE_DELETED,
    };
    g_autoptr(GPtrArray) expected = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) listed = NULL;

    for (guint i = 0; i < G_N_ELEMENTS(states); i++) {
        g_autoptr(EinsoraWorkload) workload =
            workload_new_for(f, i % 2 == 0 ? acme->id : globex->id, "w");
        g_autoptr(EinsoraWorkload) elsewhere = workload_new_for(f, acme->id, "far");
        workload->state = states[i];
        elsewhere->state = states[i];
        g_free(elsewhere->region);
        elsewhere->region = g_strdup("away");
        insert_workload(f, workload);
        insert_workload(f, elsewhere);
        if (states[i] != EINSORA_WORKLOAD_STATE_STOPPED &&
            states[i] != EINSORA_WORKLOAD_STATE_FAILED &&
            states[i] != EINSORA_WORKLOAD_STATE_DELETED)
            g_ptr_array_add(expected, g_strdup(workload->id));
    }
    listed = einsora_store_list_region_workloads(f->store, "home", &error);
    g_assert_no_error(error);
    g_assert_cmpuint(listed->len, ==, expected->len);
    for (guint i = 0; i < listed->len; i++)
        g_assert_cmpstr(((EinsoraWorkload *)g_ptr_array_index(listed, i))->id, ==,
                        g_ptr_array_index(expected, i));
}

static void
test_workload_list_order(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(GPtrArray) expected =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_free);
    g_autoptr(GPtrArray) got = NULL;
    g_autofree gchar *early = tick(f);
    g_autofree gchar *late = tick(f);
    const char *times[] = {late, early, late, early, early};

    for (guint i = 0; i < G_N_ELEMENTS(times); i++) {
        g_autofree gchar *name = g_strdup_printf("workload-%u", i);
        EinsoraWorkload *workload = workload_new_for(f, acme->id, name);
        replace_string(&workload->created_at, g_strdup(times[i]));
        insert_workload(f, workload);
        g_ptr_array_add(expected, workload);
    }
    g_ptr_array_sort(expected, workload_order_cmp);

    got = list_workloads(f, acme->id, FALSE);
    g_assert_cmpuint(got->len, ==, expected->len);
    for (guint i = 0; i < got->len; i++)
        assert_workload_equal(g_ptr_array_index(got, i), g_ptr_array_index(expected, i));
}

static void
test_workload_list_include_deleted(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) running = workload_new_for(f, acme->id, "running");
    g_autoptr(EinsoraWorkload) deleted = workload_new_for(f, acme->id, "deleted");
    g_autoptr(EinsoraWorkload) deleting = workload_new_for(f, acme->id, "deleting");
    g_autoptr(EinsoraWorkload) got = NULL;
    g_autoptr(GPtrArray) visible = NULL;
    g_autoptr(GPtrArray) all = NULL;

    running->state = EINSORA_WORKLOAD_STATE_RUNNING;
    deleted->state = EINSORA_WORKLOAD_STATE_DELETED;
    deleting->state = EINSORA_WORKLOAD_STATE_DELETING;
    insert_workload(f, running);
    insert_workload(f, deleted);
    insert_workload(f, deleting);

    visible = list_workloads(f, acme->id, FALSE);
    g_assert_cmpuint(visible->len, ==, 2);
    assert_workload_equal(g_ptr_array_index(visible, 0), running);
    assert_workload_equal(g_ptr_array_index(visible, 1), deleting);

    all = list_workloads(f, acme->id, TRUE);
    g_assert_cmpuint(all->len, ==, 3);
    assert_workload_equal(g_ptr_array_index(all, 0), running);
    assert_workload_equal(g_ptr_array_index(all, 1), deleted);
    assert_workload_equal(g_ptr_array_index(all, 2), deleting);

    /* get finds deleted workloads; callers decide whether to show them. */
    got = get_workload(f, acme->id, deleted->id);
    assert_workload_equal(got, deleted);
}

/* Compare-and-swap */

static void
test_cas_success(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraMachine) desktop = add_machine(f, acme->id, "desktop");
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) next = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) got = NULL;
    g_autoptr(EinsoraWorkload) stopped = NULL;

    /* Only state, placement, attempt and updated_at are written; the rest
     * of the record is the user's intent and must not change. */
    next->state = EINSORA_WORKLOAD_STATE_PROVISIONING;
    next->placed_class = g_strdup("l40s-48gb");
    next->machine_id = g_strdup(desktop->id);
    next->driver = g_strdup("sim");
    /* GPU 63 too: the top bit survives a signed 64-bit column. */
    next->gpu_mask = G_GUINT64_CONSTANT(1) << 63 | 0x4;
    next->attempt = 1;
    replace_string(&next->updated_at, tick(f));
    replace_string(&next->name, g_strdup("renamed"));
    next->gpus = 99;
    next->idle_timeout_s = 7;
    next->version = 42;
    g_assert_true(einsora_store_update_workload_state(
        f->store, next, EINSORA_WORKLOAD_STATE_PENDING, workload->version, &error));
    g_assert_no_error(error);

    got = get_workload(f, acme->id, workload->id);
    g_assert_cmpint(got->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpstr(got->placed_class, ==, "l40s-48gb");
    g_assert_cmpstr(got->machine_id, ==, desktop->id);
    g_assert_cmpstr(got->driver, ==, "sim");
    g_assert_cmphex(got->gpu_mask, ==, G_GUINT64_CONSTANT(1) << 63 | 0x4);
    g_assert_cmpint(got->attempt, ==, 1);
    g_assert_cmpint(got->version, ==, workload->version + 1);
    g_assert_cmpstr(got->updated_at, ==, next->updated_at);
    g_assert_cmpstr(got->name, ==, workload->name);
    g_assert_cmpint(got->gpus, ==, workload->gpus);
    g_assert_cmpint(got->idle_timeout_s, ==, 3600);
    g_assert_cmpstr(got->created_at, ==, workload->created_at);
    g_assert_cmpstr(got->created_by, ==, workload->created_by);

    /* A later step clears the placement again. */
    stopped = einsora_workload_copy(got);
    stopped->state = EINSORA_WORKLOAD_STATE_STOPPING;
    g_clear_pointer(&stopped->placed_class, g_free);
    g_clear_pointer(&stopped->machine_id, g_free);
    g_clear_pointer(&stopped->driver, g_free);
    g_assert_true(einsora_store_update_workload_state(
        f->store, stopped, EINSORA_WORKLOAD_STATE_PROVISIONING, got->version, &error));
    g_assert_no_error(error);
    g_clear_pointer(&got, einsora_workload_free);
    got = get_workload(f, acme->id, workload->id);
    g_assert_cmpint(got->state, ==, EINSORA_WORKLOAD_STATE_STOPPING);
    g_assert_null(got->placed_class);
    g_assert_null(got->machine_id);
    g_assert_null(got->driver);
    g_assert_cmpint(got->version, ==, workload->version + 2);
}

static void
test_cas_stale_version(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) queued = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) deleting = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) before = NULL;
    g_autoptr(EinsoraWorkload) after = NULL;

    /* The controller wins the race... */
    queued->state = EINSORA_WORKLOAD_STATE_QUEUED;
    replace_string(&queued->updated_at, tick(f));
    g_assert_true(einsora_store_update_workload_state(f->store, queued,
                                                      EINSORA_WORKLOAD_STATE_PENDING, 0, &error));
    g_assert_no_error(error);
    before = get_workload(f, acme->id, workload->id);

    /* ...so the API's write, based on version 0, must fail. The expected
     * state is what the row now has, so only the version can stop it. */
    deleting->state = EINSORA_WORKLOAD_STATE_DELETING;
    replace_string(&deleting->updated_at, tick(f));
    g_assert_false(einsora_store_update_workload_state(f->store, deleting,
                                                       EINSORA_WORKLOAD_STATE_QUEUED, 0, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);

    after = get_workload(f, acme->id, workload->id);
    assert_workload_equal(after, before);
    g_assert_cmpint(after->version, ==, 1);
}

static void
test_cas_wrong_state(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) next = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) after = NULL;

    next->state = EINSORA_WORKLOAD_STATE_PROVISIONING;
    replace_string(&next->updated_at, tick(f));
    g_assert_false(einsora_store_update_workload_state(
        f->store, next, EINSORA_WORKLOAD_STATE_QUEUED, workload->version, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);

    after = get_workload(f, acme->id, workload->id);
    assert_workload_equal(after, workload);
}

static void
test_cas_unknown_machine(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) next = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) after = NULL;

    next->state = EINSORA_WORKLOAD_STATE_PROVISIONING;
    next->placed_class = g_strdup("l40s-48gb");
    next->machine_id = new_id(f);
    next->driver = g_strdup("sim");
    g_assert_false(einsora_store_update_workload_state(
        f->store, next, EINSORA_WORKLOAD_STATE_PENDING, workload->version, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);

    after = get_workload(f, acme->id, workload->id);
    assert_workload_equal(after, workload);
}

/* Quotas */

static void
test_quota_missing_is_zero(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autofree gchar *unknown_tenant = new_id(f);
    gint64 gpus = 42;

    g_assert_true(einsora_store_get_quota(f->store, acme->id, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 0);
    gpus = 42;
    g_assert_true(einsora_store_get_quota(f->store, unknown_tenant, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 0);
}

static void
test_quota_set_and_update(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autofree gchar *unknown_tenant = new_id(f);
    const gint64 values[] = {4, 2, 0, 8};
    gint64 gpus = -1;

    for (guint i = 0; i < G_N_ELEMENTS(values); i++) {
        g_assert_true(einsora_store_set_quota(f->store, acme->id, "l40s-48gb", values[i], &error));
        g_assert_no_error(error);
        g_assert_true(einsora_store_get_quota(f->store, acme->id, "l40s-48gb", &gpus, &error));
        g_assert_no_error(error);
        g_assert_cmpint(gpus, ==, values[i]);
    }

    g_assert_false(einsora_store_set_quota(f->store, acme->id, "l40s-48gb", -1, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_clear_error(&error);
    g_assert_true(einsora_store_get_quota(f->store, acme->id, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 8);

    g_assert_false(einsora_store_set_quota(f->store, unknown_tenant, "l40s-48gb", 1, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
test_quota_per_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    gint64 gpus = -1;

    g_assert_true(einsora_store_set_quota(f->store, acme->id, "l40s-48gb", 4, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_get_quota(f->store, globex->id, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 0);

    g_assert_true(einsora_store_set_quota(f->store, globex->id, "l40s-48gb", 1, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_get_quota(f->store, acme->id, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 4);
    g_assert_true(einsora_store_get_quota(f->store, acme->id, "a100-80gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 0);
}

static void
add_held(Fixture *f, const char *tenant_id, const char *gpu_class, EinsoraWorkloadState state,
         gint64 gpus)
{
    g_autoptr(EinsoraWorkload) workload = workload_new_for(f, tenant_id, "held");

    replace_string(&workload->gpu_class, g_strdup(gpu_class));
    workload->state = state;
    workload->gpus = gpus;
    insert_workload(f, workload);
}

static void
test_quota_gpus_by_state(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    gint64 sums[EINSORA_WORKLOAD_STATE_COUNT];
    gint64 expected[EINSORA_WORKLOAD_STATE_COUNT] = {0};

    add_held(f, acme->id, "l40s-48gb", EINSORA_WORKLOAD_STATE_PENDING, 2);
    add_held(f, acme->id, "l40s-48gb", EINSORA_WORKLOAD_STATE_RUNNING, 1);
    add_held(f, acme->id, "l40s-48gb", EINSORA_WORKLOAD_STATE_RUNNING, 4);
    add_held(f, acme->id, "l40s-48gb", EINSORA_WORKLOAD_STATE_DELETED, 1);
    add_held(f, acme->id, "a100-80gb", EINSORA_WORKLOAD_STATE_RUNNING, 8);
    add_held(f, globex->id, "l40s-48gb", EINSORA_WORKLOAD_STATE_RUNNING, 16);
    add_held(f, globex->id, "l40s-48gb", EINSORA_WORKLOAD_STATE_QUEUED, 32);

    /* The store zeroes the caller's array first. */
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++)
        sums[i] = 1000;
    g_assert_true(einsora_store_gpus_by_state(f->store, acme->id, "l40s-48gb", sums, &error));
    g_assert_no_error(error);
    expected[EINSORA_WORKLOAD_STATE_PENDING] = 2;
    expected[EINSORA_WORKLOAD_STATE_RUNNING] = 5;
    expected[EINSORA_WORKLOAD_STATE_DELETED] = 1;
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++)
        g_assert_cmpint(sums[i], ==, expected[i]);

    g_assert_true(einsora_store_gpus_by_state(f->store, globex->id, "l40s-48gb", sums, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++) {
        gint64 want = i == EINSORA_WORKLOAD_STATE_RUNNING  ? 16
                      : i == EINSORA_WORKLOAD_STATE_QUEUED ? 32
                                                           : 0;
        g_assert_cmpint(sums[i], ==, want);
    }

    g_assert_true(einsora_store_gpus_by_state(f->store, globex->id, "a100-80gb", sums, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++)
        g_assert_cmpint(sums[i], ==, 0);
}

/* The timeline */

static void
test_event_round_trip_and_order(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) other = add_workload(f, acme->id, "other");
    g_autoptr(GPtrArray) appended =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    g_autoptr(EinsoraWorkloadEvent) other_event = NULL;
    g_autoptr(GPtrArray) got = NULL;
    g_autoptr(GPtrArray) got_other = NULL;
    const struct {
        gboolean has_from;
        EinsoraWorkloadState from;
        EinsoraWorkloadState to;
        const char *reason;
    } steps[] = {
        {FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created by you@example.com"},
        {TRUE, EINSORA_WORKLOAD_STATE_PENDING, EINSORA_WORKLOAD_STATE_QUEUED,
         "waiting for l40s-48gb capacity: requested 1 GPU(s), not enough free right now"},
        {TRUE, EINSORA_WORKLOAD_STATE_QUEUED, EINSORA_WORKLOAD_STATE_QUEUED,
         "its machine is offline; waiting for it to reconnect"},
        {TRUE, EINSORA_WORKLOAD_STATE_QUEUED, EINSORA_WORKLOAD_STATE_PROVISIONING,
         "admitted: 1 × l40s-48gb"},
    };

    /* Appended with times and IDs running backwards: the order must be
     * the order of appending, nothing else. */
    f->now_us += 100 * G_USEC_PER_SEC;
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        EinsoraWorkloadEvent *event = event_new_for(f, workload, steps[i].has_from, steps[i].from,
                                                    steps[i].to, steps[i].reason);
        event->attempt = i == 3 ? 1 : 0;
        /* The placement it had after the step: none until admitted. */
        event->placed_class = i == 3 ? g_strdup("l40s-48gb") : NULL;
        append_event(f, event);
        g_ptr_array_add(appended, event);
        f->now_us -= 10 * G_USEC_PER_SEC;
    }
    other_event = event_new_for(f, other, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created");
    append_event(f, other_event);

    got = list_events(f, acme->id, workload->id);
    g_assert_cmpuint(got->len, ==, appended->len);
    for (guint i = 0; i < got->len; i++)
        assert_event_equal(g_ptr_array_index(got, i), g_ptr_array_index(appended, i));
    g_assert_false(((EinsoraWorkloadEvent *)g_ptr_array_index(got, 0))->has_from_state);
    g_assert_true(einsora_workload_event_is_note(g_ptr_array_index(got, 2)));

    got_other = list_events(f, acme->id, other->id);
    g_assert_cmpuint(got_other->len, ==, 1);
    assert_event_equal(g_ptr_array_index(got_other, 0), other_event);
}

static void
test_event_duplicate_id(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkloadEvent) created =
        event_new_for(f, workload, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created");
    g_autoptr(EinsoraWorkloadEvent) copy = einsora_workload_event_copy(created);
    g_autoptr(GPtrArray) events = NULL;

    append_event(f, created);
    replace_string(&copy->reason, g_strdup("again"));
    g_assert_false(einsora_store_append_event(f->store, copy, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);

    events = list_events(f, acme->id, workload->id);
    g_assert_cmpuint(events->len, ==, 1);
    assert_event_equal(g_ptr_array_index(events, 0), created);
}

static void
test_event_unknown_workload(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) ghost = workload_new_for(f, acme->id, "ghost");
    g_autoptr(EinsoraWorkloadEvent) event =
        event_new_for(f, ghost, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created");

    g_assert_false(einsora_store_append_event(f->store, event, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
test_event_append_only(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkloadEvent) created =
        event_new_for(f, workload, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created");
    g_autoptr(EinsoraWorkloadEvent) queued =
        event_new_for(f, workload, TRUE, EINSORA_WORKLOAD_STATE_PENDING,
                      EINSORA_WORKLOAD_STATE_QUEUED, "waiting for capacity");
    g_autoptr(GPtrArray) events = NULL;
    const char *const rewrites[] = {
        "UPDATE workload_events SET reason = 'rewritten'",
        "UPDATE workload_events SET to_state = 'running' WHERE from_state IS NULL",
        "DELETE FROM workload_events",
        "DELETE FROM workload_events WHERE from_state IS NOT NULL",
        /* REPLACE deletes the old row without firing delete triggers. */
        "INSERT OR REPLACE INTO workload_events (seq, id, tenant_id, workload_id, from_state, "
        "to_state, reason, attempt, created_at) SELECT seq, id, tenant_id, workload_id, "
        "from_state, to_state, 'rewritten', attempt, created_at FROM workload_events "
        "WHERE seq = (SELECT MIN(seq) FROM workload_events)",
        "REPLACE INTO workload_events (seq, id, tenant_id, workload_id, from_state, to_state, "
        "reason, attempt, created_at) SELECT seq + 1000, id, tenant_id, workload_id, from_state, "
        "to_state, 'rewritten', attempt, created_at FROM workload_events",
        "INSERT INTO workload_events (seq, id, tenant_id, workload_id, from_state, to_state, "
        "reason, attempt, created_at) SELECT seq, id, tenant_id, workload_id, from_state, "
        "to_state, 'rewritten', attempt, created_at FROM workload_events WHERE true "
        "ON CONFLICT DO UPDATE SET reason = 'rewritten'",
    };

    append_event(f, created);
    append_event(f, queued);

    for (guint i = 0; i < G_N_ELEMENTS(rewrites); i++) {
        g_test_message("running %s", rewrites[i]);
        g_assert_false(f->harness->raw_exec(f->store, rewrites[i], &error));
        g_assert_nonnull(error);
        g_clear_error(&error);
    }

    events = list_events(f, acme->id, workload->id);
    g_assert_cmpuint(events->len, ==, 2);
    assert_event_equal(g_ptr_array_index(events, 0), created);
    assert_event_equal(g_ptr_array_index(events, 1), queued);
}

static GPtrArray *
list_tenant_events(Fixture *f, const char *tenant_id, gint64 after_seq, guint limit)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *events =
        einsora_store_list_tenant_events(f->store, tenant_id, after_seq, limit, &error);

    g_assert_no_error(error);
    g_assert_nonnull(events);
    return events;
}

static gint64
last_event_seq(Fixture *f, const char *tenant_id)
{
    g_autoptr(GError) error = NULL;
    gint64 seq = -1;

    g_assert_true(einsora_store_last_event_seq(f->store, tenant_id, &seq, &error));
    g_assert_no_error(error);
    return seq;
}

/* The change feed's read: one tenant's events of all its workloads, in
 * the store's one sequence, after a point, a page at a time. Another
 * tenant's events are never in it, interleaved as they are. */
static void
test_event_tenant_feed(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraTenant) initech = add_tenant(f, "initech", FALSE);
    g_autoptr(EinsoraWorkload) first = add_workload(f, acme->id, "first");
    g_autoptr(EinsoraWorkload) second = add_workload(f, acme->id, "second");
    g_autoptr(EinsoraWorkload) theirs = add_workload(f, globex->id, "theirs");
    g_autoptr(GPtrArray) appended =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    g_autoptr(GPtrArray) all = NULL;
    g_autoptr(GPtrArray) page = NULL;
    g_autoptr(GPtrArray) rest = NULL;
    g_autoptr(GPtrArray) none = NULL;
    g_autoptr(GPtrArray) other = NULL;
    g_autoptr(GPtrArray) timeline = NULL;
    const EinsoraWorkload *order[] = {first, theirs, second, theirs, first, first, theirs, second};
    guint acme_count = 0;
    gint64 previous = 0;

    g_assert_cmpint(last_event_seq(f, acme->id), ==, 0);
    none = list_tenant_events(f, acme->id, 0, 100);
    g_assert_cmpuint(none->len, ==, 0);
    g_clear_pointer(&none, g_ptr_array_unref);

    /* Times running backwards: seq, not time, is the order. */
    f->now_us += 100 * G_USEC_PER_SEC;
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        EinsoraWorkloadEvent *event =
            event_new_for(f, order[i], TRUE, EINSORA_WORKLOAD_STATE_PENDING,
                          EINSORA_WORKLOAD_STATE_QUEUED, "step");
        append_event(f, event);
        f->now_us -= 10 * G_USEC_PER_SEC;
        if (g_strcmp0(order[i]->tenant_id, acme->id) == 0) {
            g_ptr_array_add(appended, event);
            acme_count++;
        } else {
            einsora_workload_event_free(event);
        }
    }

    all = list_tenant_events(f, acme->id, 0, 100);
    g_assert_cmpuint(all->len, ==, acme_count);
    for (guint i = 0; i < all->len; i++) {
        const EinsoraWorkloadEvent *event = g_ptr_array_index(all, i);
        assert_event_equal(event, g_ptr_array_index(appended, i));
        g_assert_cmpstr(event->tenant_id, ==, acme->id);
        g_assert_cmpint(event->seq, >, previous);
        previous = event->seq;
    }
    g_assert_cmpint(last_event_seq(f, acme->id), ==, previous);

    /* A workload's own timeline carries the same seqs. */
    timeline = list_events(f, acme->id, first->id);
    g_assert_cmpuint(timeline->len, ==, 3);
    g_assert_cmpint(((EinsoraWorkloadEvent *)g_ptr_array_index(timeline, 0))->seq, ==,
                    ((EinsoraWorkloadEvent *)g_ptr_array_index(all, 0))->seq);

    /* A page, then what follows its last, with neither gap nor repeat. */
    page = list_tenant_events(f, acme->id, 0, 2);
    g_assert_cmpuint(page->len, ==, 2);
    assert_event_equal(g_ptr_array_index(page, 0), g_ptr_array_index(all, 0));
    assert_event_equal(g_ptr_array_index(page, 1), g_ptr_array_index(all, 1));
    rest = list_tenant_events(f, acme->id,
                              ((EinsoraWorkloadEvent *)g_ptr_array_index(page, 1))->seq, 100);
    g_assert_cmpuint(rest->len, ==, all->len - 2);
    for (guint i = 0; i < rest->len; i++)
        g_assert_cmpint(((EinsoraWorkloadEvent *)g_ptr_array_index(rest, i))->seq, ==,
                        ((EinsoraWorkloadEvent *)g_ptr_array_index(all, i + 2))->seq);
    none = list_tenant_events(f, acme->id, previous, 100);
    g_assert_cmpuint(none->len, ==, 0);
    g_clear_pointer(&none, g_ptr_array_unref);
    /* A limit of 0 reads nothing. */
    none = list_tenant_events(f, acme->id, 0, 0);
    g_assert_cmpuint(none->len, ==, 0);
    g_clear_pointer(&none, g_ptr_array_unref);

    /* The other tenant sees only its own, and a tenant without events
     * (or one the store doesn't know) sees none. */
    other = list_tenant_events(f, globex->id, 0, 100);
    g_assert_cmpuint(other->len, ==, G_N_ELEMENTS(order) - acme_count);
    for (guint i = 0; i < other->len; i++)
        g_assert_cmpstr(((EinsoraWorkloadEvent *)g_ptr_array_index(other, i))->workload_id, ==,
                        theirs->id);
    g_assert_cmpint(last_event_seq(f, globex->id), ==,
                    ((EinsoraWorkloadEvent *)g_ptr_array_index(other, other->len - 1))->seq);
    none = list_tenant_events(f, initech->id, 0, 100);
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_cmpint(last_event_seq(f, initech->id), ==, 0);
    g_assert_cmpint(last_event_seq(f, "0190a000-0000-7000-8000-00000000dead"), ==, 0);
}

/* Machines as the hub sees them: not tenant-scoped, since the hub serves
 * every machine of its region; what it reports is recorded. */
static void
test_machine_hub_view(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraMachine) ws = add_machine(f, acme->id, "ws");
    g_autoptr(EinsoraMachine) box = add_machine(f, globex->id, "box");
    g_autoptr(EinsoraMachine) far = machine_new_for(f, acme->id, "far");
    g_autoptr(GPtrArray) home = NULL;
    g_autoptr(GPtrArray) on_ws = NULL;
    g_autoptr(EinsoraWorkload) placed = workload_new_for(f, acme->id, "placed");
    g_autoptr(EinsoraWorkload) gone = workload_new_for(f, acme->id, "gone");
    g_autoptr(EinsoraWorkload) elsewhere = workload_new_for(f, globex->id, "elsewhere");
    g_autofree gchar *unknown = new_id(f);

    g_free(far->region);
    far->region = g_strdup("away");
    g_assert_true(einsora_store_insert_machine(f->store, far, &error));
    home = einsora_store_list_region_machines(f->store, "home", &error);
    g_assert_no_error(error);
    g_assert_cmpuint(home->len, ==, 2);
    g_assert_cmpstr(((EinsoraMachine *)g_ptr_array_index(home, 0))->id, ==, ws->id);
    g_assert_cmpstr(((EinsoraMachine *)g_ptr_array_index(home, 1))->id, ==, box->id);

    /* Found by ID whoever owns it (the hub and placement checks). */
    {
        g_autoptr(EinsoraMachine) found = einsora_store_find_machine(f->store, box->id, &error);
        g_autoptr(EinsoraMachine) missing = NULL;
        g_assert_no_error(error);
        g_assert_cmpstr(found->tenant_id, ==, globex->id);
        missing = einsora_store_find_machine(f->store, unknown, &error);
        g_assert_null(missing);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_clear_error(&error);
    }

    /* A sync records when, and the inventory only when one came. */
    g_assert_true(einsora_store_record_machine_seen(f->store, ws->id, "2026-11-29T10:00:00.000000Z",
                                                    "{\"cpus\":16}", NULL, NULL, &error));
    g_assert_true(einsora_store_record_machine_seen(f->store, ws->id, "2026-11-29T10:00:05.000000Z",
                                                    NULL, NULL, NULL, &error));
    g_assert_no_error(error);
    {
        g_autoptr(EinsoraMachine) seen =
            einsora_store_get_machine(f->store, acme->id, ws->id, &error);
        g_assert_cmpstr(seen->last_seen_at, ==, "2026-11-29T10:00:05.000000Z");
        g_assert_cmpstr(seen->inventory, ==, "{\"cpus\":16}");
        g_assert_null(seen->agent_version);
        g_assert_false(seen->has_clock_offset);
    }
    g_assert_false(einsora_store_record_machine_seen(
        f->store, unknown, "2026-11-29T10:00:05.000000Z", NULL, NULL, NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    /* What is placed on a machine and not deleted, whoever's it is. */
    placed->machine_id = g_strdup(ws->id);
    placed->state = EINSORA_WORKLOAD_STATE_RUNNING;
    gone->machine_id = g_strdup(ws->id);
    gone->state = EINSORA_WORKLOAD_STATE_DELETED;
    elsewhere->machine_id = g_strdup(box->id);
    insert_workload(f, placed);
    insert_workload(f, gone);
    insert_workload(f, elsewhere);
    on_ws = einsora_store_list_machine_workloads(f->store, ws->id, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(on_ws->len, ==, 1);
    g_assert_cmpstr(((EinsoraWorkload *)g_ptr_array_index(on_ws, 0))->id, ==, placed->id);
}

static void
test_tenant_by_name(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", TRUE);
    g_autoptr(EinsoraTenant) found = einsora_store_find_tenant_by_name(f->store, "acme", &error);
    g_autoptr(EinsoraTenant) missing = NULL;

    g_assert_no_error(error);
    g_assert_cmpstr(found->id, ==, acme->id);
    g_assert_true(found->trusted);
    missing = einsora_store_find_tenant_by_name(f->store, "Acme", &error);
    g_assert_null(missing);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

/* Leases */

static gboolean
acquire(Fixture *f, const char *holder, const char *now, const char *until)
{
    g_autoptr(GError) error = NULL;
    gboolean held = FALSE;

    g_assert_true(einsora_store_acquire_lease(f->store, "controller:home", holder, now, until,
                                              &held, &error));
    g_assert_no_error(error);
    return held;
}

static void
test_lease(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    const char *t0 = "2026-11-29T10:00:00.000000Z";
    const char *t1 = "2026-11-29T10:00:10.000000Z";
    const char *t2 = "2026-11-29T10:00:30.000000Z";
    const char *t3 = "2026-11-29T10:00:31.000000Z";
    const char *t4 = "2026-11-29T10:01:00.000000Z";

    g_assert_true(acquire(f, "one", t0, t2));
    /* Held by one until t2: two can't take it, one renews it. */
    g_assert_false(acquire(f, "two", t1, t3));
    g_assert_true(acquire(f, "one", t1, t3));
    g_assert_false(acquire(f, "two", t2, t4));
    /* Expired: two takes it, and one has lost it. */
    g_assert_true(acquire(f, "two", t3, t4));
    g_assert_false(acquire(f, "one", t3, t4));
    /* Only the holder can release it; then anyone may take it. */
    g_assert_true(einsora_store_release_lease(f->store, "controller:home", "one", &error));
    g_assert_false(acquire(f, "one", t3, t4));
    g_assert_true(einsora_store_release_lease(f->store, "controller:home", "two", &error));
    g_assert_no_error(error);
    g_assert_true(acquire(f, "one", t3, t4));
}

/* Accounts */

static gchar *
sha256_of(const char *text)
{
    return g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
}

static EinsoraUser *
user_new_for(Fixture *f, const char *tenant_id, const char *email)
{
    EinsoraUser *user = einsora_user_new();

    user->id = new_id(f);
    user->tenant_id = g_strdup(tenant_id);
    user->email = g_strdup(email);
    user->display_name = g_strdup("Someone");
    user->password_hash = g_strdup("$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$aGFzaA");
    user->role = g_strdup("member");
    user->created_at = tick(f);
    return user;
}

static EinsoraUser *
add_user(Fixture *f, const char *tenant_id, const char *email)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) user = user_new_for(f, tenant_id, email);

    g_assert_true(einsora_store_insert_user(f->store, user, &error));
    g_assert_no_error(error);
    return g_steal_pointer(&user);
}

static void
assert_user_equal(const EinsoraUser *a, const EinsoraUser *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->email, ==, b->email);
    g_assert_cmpstr(a->display_name, ==, b->display_name);
    g_assert_cmpstr(a->password_hash, ==, b->password_hash);
    g_assert_cmpstr(a->role, ==, b->role);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->disabled_at, ==, b->disabled_at);
    g_assert_cmpint(a->admin, ==, b->admin);
    g_assert_cmpint(a->password_must_change, ==, b->password_must_change);
}

static gint64
count_users(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    gint64 count = -1;

    g_assert_true(einsora_store_count_users(f->store, &count, &error));
    g_assert_no_error(error);
    return count;
}

static void
test_user_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) owner = user_new_for(f, acme->id, "owner@localhost");
    g_autoptr(EinsoraUser) got = NULL;

    g_assert_cmpint(count_users(f), ==, 1);
    /* No password, an owner, disabled. */
    g_clear_pointer(&owner->password_hash, g_free);
    replace_string(&owner->role, g_strdup("owner"));
    owner->disabled_at = tick(f);
    owner->admin = TRUE;
    owner->password_must_change = TRUE;
    g_assert_true(einsora_store_insert_user(f->store, owner, &error));
    g_assert_no_error(error);
    g_assert_cmpint(count_users(f), ==, 2);

    got = einsora_store_get_user(f->store, acme->id, ann->id, &error);
    g_assert_no_error(error);
    assert_user_equal(got, ann);
    g_clear_pointer(&got, einsora_user_free);
    got = einsora_store_get_user(f->store, acme->id, owner->id, &error);
    g_assert_no_error(error);
    assert_user_equal(got, owner);
    g_assert_null(got->password_hash);
    g_clear_pointer(&got, einsora_user_free);

    got = einsora_store_find_user_by_email(f->store, "ann@acme.example", &error);
    g_assert_no_error(error);
    assert_user_equal(got, ann);
    g_clear_pointer(&got, einsora_user_free);
    got = einsora_store_find_user_by_email(f->store, "nobody@acme.example", &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
}

static void
test_user_duplicate_email(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@example.com");
    /* Emails are unique across tenants: sign-in finds one account. */
    g_autoptr(EinsoraUser) again = user_new_for(f, globex->id, "ann@example.com");
    g_autoptr(EinsoraUser) same_id = user_new_for(f, acme->id, "other@example.com");

    g_assert_false(einsora_store_insert_user(f->store, again, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    replace_string(&same_id->id, g_strdup(ann->id));
    g_assert_false(einsora_store_insert_user(f->store, same_id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_assert_cmpint(count_users(f), ==, 1);
}

static void
test_user_unknown_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *tenant_id = new_id(f);
    g_autoptr(EinsoraUser) user = user_new_for(f, tenant_id, "ann@example.com");

    g_assert_false(einsora_store_insert_user(f->store, user, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_cmpint(count_users(f), ==, 0);
}

static void
test_user_other_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) got = NULL;
    g_autofree gchar *unknown_id = new_id(f);

    got = einsora_store_get_user(f->store, globex->id, ann->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);
    got = einsora_store_get_user(f->store, acme->id, unknown_id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
}

/* Every account, by email, whatever its tenant: a Lab's admins. */
static void
test_user_list_all(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) zoe = add_user(f, acme->id, "zoe@acme.example");
    g_autoptr(EinsoraUser) ann = add_user(f, globex->id, "ann@globex.example");
    g_autoptr(EinsoraUser) bob = add_user(f, acme->id, "bob@acme.example");
    g_autoptr(GPtrArray) users = einsora_store_list_users(f->store, &error);

    g_assert_no_error(error);
    g_assert_cmpuint(users->len, ==, 3);
    assert_user_equal(g_ptr_array_index(users, 0), ann);
    assert_user_equal(g_ptr_array_index(users, 1), bob);
    assert_user_equal(g_ptr_array_index(users, 2), zoe);
}

/* Disabled and enabled again, in its tenant only; a second disable
 * keeps the first time. */
static void
test_user_disable(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) got = NULL;
    g_autofree gchar *first = tick(f);
    g_autofree gchar *second = tick(f);
    g_autofree gchar *unknown = new_id(f);

    g_assert_true(einsora_store_set_user_disabled(f->store, acme->id, ann->id, first, &error));
    g_assert_true(einsora_store_set_user_disabled(f->store, acme->id, ann->id, second, &error));
    g_assert_no_error(error);
    got = einsora_store_get_user(f->store, acme->id, ann->id, &error);
    g_assert_cmpstr(got->disabled_at, ==, first);
    g_clear_pointer(&got, einsora_user_free);
    g_assert_false(einsora_store_set_user_disabled(f->store, globex->id, ann->id, NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_false(einsora_store_set_user_disabled(f->store, acme->id, unknown, first, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    got = einsora_store_get_user(f->store, acme->id, ann->id, &error);
    g_assert_cmpstr(got->disabled_at, ==, first);
    g_clear_pointer(&got, einsora_user_free);
    g_assert_true(einsora_store_set_user_disabled(f->store, acme->id, ann->id, NULL, &error));
    got = einsora_store_get_user(f->store, acme->id, ann->id, &error);
    g_assert_no_error(error);
    g_assert_null(got->disabled_at);
}

/* A new password, and whether it must be changed; in its tenant only. */
static void
test_user_password(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) got = NULL;
    const char *hash = "$argon2id$v=19$m=65536,t=3,p=1$bmV3$bmV3aGFzaA";

    g_assert_true(einsora_store_set_user_password(f->store, acme->id, ann->id, hash, TRUE, &error));
    g_assert_no_error(error);
    got = einsora_store_get_user(f->store, acme->id, ann->id, &error);
    g_assert_cmpstr(got->password_hash, ==, hash);
    g_assert_true(got->password_must_change);
    g_clear_pointer(&got, einsora_user_free);
    g_assert_false(
        einsora_store_set_user_password(f->store, globex->id, ann->id, NULL, FALSE, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_true(
        einsora_store_set_user_password(f->store, acme->id, ann->id, NULL, FALSE, &error));
    got = einsora_store_get_user(f->store, acme->id, ann->id, &error);
    g_assert_null(got->password_hash);
    g_assert_false(got->password_must_change);
}

/* The owner's choice, in its tenant only. */
static void
test_machine_sharing(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraMachine) rack = add_machine(f, acme->id, "rack");
    g_autoptr(EinsoraMachine) got = NULL;

    g_assert_true(einsora_store_set_machine_sharing(f->store, acme->id, rack->id,
                                                    EINSORA_SHARING_COMMUNITY, &error));
    g_assert_no_error(error);
    got = einsora_store_find_machine(f->store, rack->id, &error);
    g_assert_cmpint(got->sharing, ==, EINSORA_SHARING_COMMUNITY);
    g_clear_pointer(&got, einsora_machine_free);
    g_assert_false(einsora_store_set_machine_sharing(f->store, globex->id, rack->id,
                                                     EINSORA_SHARING_PRIVATE, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    got = einsora_store_find_machine(f->store, rack->id, &error);
    g_assert_cmpint(got->sharing, ==, EINSORA_SHARING_COMMUNITY);
}

static void
test_tenant_list_all(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) north = add_tenant(f, "north", TRUE);
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(GPtrArray) tenants = einsora_store_list_tenants(f->store, &error);
    const EinsoraTenant *first;

    g_assert_no_error(error);
    g_assert_cmpuint(tenants->len, ==, 2);
    first = g_ptr_array_index(tenants, 0);
    g_assert_cmpstr(first->id, ==, acme->id);
    g_assert_false(first->trusted);
    g_assert_cmpstr(((const EinsoraTenant *)g_ptr_array_index(tenants, 1))->id, ==, north->id);
    g_assert_true(((const EinsoraTenant *)g_ptr_array_index(tenants, 1))->trusted);
}

static EinsoraAuditEvent *
audit_event_new_for(Fixture *f, const char *tenant_id, const char *action)
{
    EinsoraAuditEvent *event = einsora_audit_event_new();

    event->id = new_id(f);
    event->tenant_id = g_strdup(tenant_id);
    event->at = tick(f);
    event->actor = g_strdup("root@lab.example");
    event->action = g_strdup(action);
    event->target = g_strdup("ann@acme.example");
    event->detail = g_strdup("made by an admin");
    return event;
}

/* A tenant's trail: the latest N, oldest first; another tenant's is not
 * in it; an unknown tenant's event is refused. */
static void
test_audit_trail(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(GPtrArray) made =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_audit_event_free);
    g_autoptr(GPtrArray) got = NULL;
    g_autoptr(EinsoraAuditEvent) other = audit_event_new_for(f, globex->id, "quota.set");
    g_autofree gchar *unknown = new_id(f);
    g_autoptr(EinsoraAuditEvent) nowhere = audit_event_new_for(f, unknown, "quota.set");

    for (guint i = 0; i < 4; i++) {
        EinsoraAuditEvent *event = audit_event_new_for(f, acme->id, "account.created");
        if (i == 1)
            g_clear_pointer(&event->actor_user_id, g_free);
        else
            event->actor_user_id = new_id(f);
        g_assert_true(einsora_store_insert_audit_event(f->store, event, &error));
        g_assert_no_error(error);
        g_ptr_array_add(made, event);
    }
    g_assert_true(einsora_store_insert_audit_event(f->store, other, &error));
    g_assert_false(einsora_store_insert_audit_event(f->store, nowhere, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    got = einsora_store_list_audit_events(f->store, acme->id, 3, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(got->len, ==, 3);
    for (guint i = 0; i < 3; i++) {
        const EinsoraAuditEvent *want = g_ptr_array_index(made, i + 1);
        const EinsoraAuditEvent *have = g_ptr_array_index(got, i);
        g_assert_cmpstr(have->id, ==, want->id);
        g_assert_cmpstr(have->at, ==, want->at);
        g_assert_cmpstr(have->actor, ==, want->actor);
        g_assert_cmpstr(have->actor_user_id, ==, want->actor_user_id);
        g_assert_cmpstr(have->action, ==, want->action);
        g_assert_cmpstr(have->target, ==, want->target);
        g_assert_cmpstr(have->detail, ==, want->detail);
    }
    g_clear_pointer(&got, g_ptr_array_unref);
    got = einsora_store_list_audit_events(f->store, globex->id, 100, &error);
    g_assert_cmpuint(got->len, ==, 1);
    g_assert_cmpstr(((const EinsoraAuditEvent *)g_ptr_array_index(got, 0))->id, ==, other->id);
}

/* API tokens */

static EinsoraApiToken *
api_token_new_for(Fixture *f, const EinsoraUser *user, const char *name)
{
    EinsoraApiToken *token = einsora_api_token_new();
    g_autofree gchar *secret = g_strdup_printf("tsk_%s_%s", user->id, name);

    token->id = new_id(f);
    token->tenant_id = g_strdup(user->tenant_id);
    token->user_id = g_strdup(user->id);
    token->name = g_strdup(name);
    token->prefix = g_strndup(secret, 8);
    token->token_sha256 = sha256_of(secret);
    token->created_at = tick(f);
    return token;
}

static EinsoraApiToken *
add_api_token(Fixture *f, const EinsoraUser *user, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraApiToken) token = api_token_new_for(f, user, name);

    g_assert_true(einsora_store_insert_api_token(f->store, token, &error));
    g_assert_no_error(error);
    return g_steal_pointer(&token);
}

static void
assert_api_token_equal(const EinsoraApiToken *a, const EinsoraApiToken *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->user_id, ==, b->user_id);
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_cmpstr(a->prefix, ==, b->prefix);
    g_assert_cmpstr(a->token_sha256, ==, b->token_sha256);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->last_used_at, ==, b->last_used_at);
    g_assert_cmpstr(a->expires_at, ==, b->expires_at);
    g_assert_cmpstr(a->revoked_at, ==, b->revoked_at);
}

static EinsoraApiToken *
find_api_token(Fixture *f, const char *token_sha256)
{
    g_autoptr(GError) error = NULL;
    EinsoraApiToken *token = einsora_store_find_api_token(f->store, token_sha256, &error);

    g_assert_no_error(error);
    g_assert_nonnull(token);
    return token;
}

static GPtrArray *
list_api_tokens(Fixture *f, const char *tenant_id, const char *user_id)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *tokens = einsora_store_list_api_tokens(f->store, tenant_id, user_id, &error);

    g_assert_no_error(error);
    g_assert_nonnull(tokens);
    return tokens;
}

static void
test_api_token_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraApiToken) laptop = add_api_token(f, ann, "laptop");
    g_autoptr(EinsoraApiToken) ci = api_token_new_for(f, ann, "ci");
    g_autoptr(EinsoraApiToken) got = NULL;
    g_autoptr(EinsoraApiToken) missing = NULL;
    g_autofree gchar *unknown_sha256 = sha256_of("tsk_unknown");

    ci->last_used_at = tick(f);
    ci->expires_at = tick(f);
    g_assert_true(einsora_store_insert_api_token(f->store, ci, &error));
    g_assert_no_error(error);

    got = find_api_token(f, laptop->token_sha256);
    assert_api_token_equal(got, laptop);
    g_assert_null(got->last_used_at);
    g_assert_null(got->expires_at);
    g_assert_null(got->revoked_at);
    g_clear_pointer(&got, einsora_api_token_free);
    got = find_api_token(f, ci->token_sha256);
    assert_api_token_equal(got, ci);

    missing = einsora_store_find_api_token(f->store, unknown_sha256, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(missing);
}

static void
test_api_token_duplicate(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraApiToken) laptop = add_api_token(f, ann, "laptop");
    g_autoptr(EinsoraApiToken) same_hash = api_token_new_for(f, ann, "other");
    g_autoptr(EinsoraApiToken) same_id = api_token_new_for(f, ann, "third");
    g_autoptr(GPtrArray) tokens = NULL;

    replace_string(&same_hash->token_sha256, g_strdup(laptop->token_sha256));
    g_assert_false(einsora_store_insert_api_token(f->store, same_hash, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    replace_string(&same_id->id, g_strdup(laptop->id));
    g_assert_false(einsora_store_insert_api_token(f->store, same_id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    tokens = list_api_tokens(f, acme->id, ann->id);
    g_assert_cmpuint(tokens->len, ==, 1);
}

/* A token's user must be in the token's tenant. */
static void
test_api_token_other_tenant_user(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraApiToken) token = api_token_new_for(f, ann, "sneaky");
    g_autofree gchar *unknown_user = new_id(f);
    g_autoptr(EinsoraApiToken) orphan = api_token_new_for(f, ann, "orphan");

    replace_string(&token->tenant_id, g_strdup(globex->id));
    g_assert_false(einsora_store_insert_api_token(f->store, token, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    replace_string(&orphan->user_id, g_strdup(unknown_user));
    g_assert_false(einsora_store_insert_api_token(f->store, orphan, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static gint
api_token_order_cmp(gconstpointer a, gconstpointer b)
{
    const EinsoraApiToken *ta = *(EinsoraApiToken *const *)a;
    const EinsoraApiToken *tb = *(EinsoraApiToken *const *)b;
    int cmp = g_strcmp0(ta->created_at, tb->created_at);

    return cmp != 0 ? cmp : g_strcmp0(ta->id, tb->id);
}

/* One user's tokens, oldest first, revoked ones too; nobody else's. */
static void
test_api_token_list(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) bob = add_user(f, acme->id, "bob@acme.example");
    g_autoptr(EinsoraApiToken) bobs = add_api_token(f, bob, "bob's");
    g_autoptr(GPtrArray) expected =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_api_token_free);
    g_autoptr(GPtrArray) got = NULL;
    g_autoptr(GPtrArray) as_globex = NULL;
    g_autofree gchar *early = tick(f);
    g_autofree gchar *late = tick(f);
    g_autofree gchar *revoked_at = tick(f);
    const char *times[] = {late, early, late, early};

    for (guint i = 0; i < G_N_ELEMENTS(times); i++) {
        g_autofree gchar *name = g_strdup_printf("token-%u", i);
        EinsoraApiToken *token = api_token_new_for(f, ann, name);
        replace_string(&token->created_at, g_strdup(times[i]));
        g_assert_true(einsora_store_insert_api_token(f->store, token, &error));
        g_assert_no_error(error);
        g_ptr_array_add(expected, token);
    }
    g_ptr_array_sort(expected, api_token_order_cmp);
    /* Revoked tokens stay listed. */
    {
        EinsoraApiToken *first = g_ptr_array_index(expected, 0);
        g_assert_true(einsora_store_revoke_api_token(f->store, acme->id, ann->id, first->id,
                                                     revoked_at, &error));
        g_assert_no_error(error);
        replace_string(&first->revoked_at, g_strdup(revoked_at));
    }

    got = list_api_tokens(f, acme->id, ann->id);
    g_assert_cmpuint(got->len, ==, expected->len);
    for (guint i = 0; i < got->len; i++)
        assert_api_token_equal(g_ptr_array_index(got, i), g_ptr_array_index(expected, i));
    g_clear_pointer(&got, g_ptr_array_unref);
    got = list_api_tokens(f, acme->id, bob->id);
    g_assert_cmpuint(got->len, ==, 1);
    assert_api_token_equal(g_ptr_array_index(got, 0), bobs);
    as_globex = list_api_tokens(f, globex->id, ann->id);
    g_assert_cmpuint(as_globex->len, ==, 0);
}

static void
test_api_token_revoke(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) bob = add_user(f, acme->id, "bob@acme.example");
    g_autoptr(EinsoraUser) gus = add_user(f, globex->id, "gus@globex.example");
    g_autoptr(EinsoraApiToken) token = add_api_token(f, ann, "laptop");
    g_autoptr(EinsoraApiToken) got = NULL;
    g_autofree gchar *first = tick(f);
    g_autofree gchar *second = tick(f);
    g_autofree gchar *unknown_id = new_id(f);

    /* Another user of the same tenant, another tenant, an unknown ID: not
     * found, and the token is untouched. */
    g_assert_false(
        einsora_store_revoke_api_token(f->store, acme->id, bob->id, token->id, first, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_false(
        einsora_store_revoke_api_token(f->store, globex->id, gus->id, token->id, first, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_false(
        einsora_store_revoke_api_token(f->store, globex->id, ann->id, token->id, first, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_false(
        einsora_store_revoke_api_token(f->store, acme->id, ann->id, unknown_id, first, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    got = find_api_token(f, token->token_sha256);
    assert_api_token_equal(got, token);
    g_clear_pointer(&got, einsora_api_token_free);

    g_assert_true(
        einsora_store_revoke_api_token(f->store, acme->id, ann->id, token->id, first, &error));
    g_assert_no_error(error);
    /* Twice succeeds and keeps the first time. */
    g_assert_true(
        einsora_store_revoke_api_token(f->store, acme->id, ann->id, token->id, second, &error));
    g_assert_no_error(error);
    /* Still found: callers check revoked_at. */
    got = find_api_token(f, token->token_sha256);
    replace_string(&token->revoked_at, g_strdup(first));
    assert_api_token_equal(got, token);
}

static void
test_api_token_touch(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraApiToken) token = add_api_token(f, ann, "laptop");
    g_autoptr(EinsoraApiToken) got = NULL;
    g_autofree gchar *earlier = tick(f);
    g_autofree gchar *later = tick(f);
    g_autofree gchar *unknown_id = new_id(f);

    g_assert_true(einsora_store_touch_api_token(f->store, token->id, later, &error));
    g_assert_no_error(error);
    /* A slower request finishing afterwards does not move it back. */
    g_assert_true(einsora_store_touch_api_token(f->store, token->id, earlier, &error));
    g_assert_no_error(error);
    got = find_api_token(f, token->token_sha256);
    replace_string(&token->last_used_at, g_strdup(later));
    assert_api_token_equal(got, token);

    g_assert_false(einsora_store_touch_api_token(f->store, unknown_id, later, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

/* Browser sessions */

static EinsoraSession *
session_new_for(Fixture *f, const EinsoraUser *user, const char *seed)
{
    EinsoraSession *session = einsora_session_new();
    g_autofree gchar *value = g_strdup_printf("ses_%s", seed);
    g_autofree gchar *csrf = g_strdup_printf("csrf_%s", seed);

    session->id = new_id(f);
    session->tenant_id = g_strdup(user->tenant_id);
    session->user_id = g_strdup(user->id);
    session->session_sha256 = sha256_of(value);
    session->csrf_sha256 = sha256_of(csrf);
    session->created_at = tick(f);
    session->expires_at = einsora_timestamp_format(f->now_us + 7 * G_TIME_SPAN_DAY);
    return session;
}

static EinsoraSession *
find_session_of(Fixture *f, const EinsoraSession *session)
{
    g_autoptr(GError) error = NULL;
    EinsoraSession *got = einsora_store_find_session(f->store, session->session_sha256, &error);

    g_assert_no_error(error);
    return got;
}

/* A password change ends every session of its user, not another's. */
static void
test_session_revoke_user(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) bob = add_user(f, acme->id, "bob@acme.example");
    g_autoptr(EinsoraSession) first = session_new_for(f, ann, "a1");
    g_autoptr(EinsoraSession) second = session_new_for(f, ann, "a2");
    g_autoptr(EinsoraSession) other = session_new_for(f, bob, "b1");
    g_autofree gchar *now = tick(f);
    EinsoraSession *sessions[] = {first, second, other};

    for (guint i = 0; i < G_N_ELEMENTS(sessions); i++)
        g_assert_true(einsora_store_insert_session(f->store, sessions[i], &error));
    g_assert_true(einsora_store_revoke_user_sessions(f->store, acme->id, ann->id, now, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < G_N_ELEMENTS(sessions); i++) {
        g_autoptr(EinsoraSession) got = find_session_of(f, sessions[i]);
        if (sessions[i] == other)
            g_assert_null(got->revoked_at);
        else
            g_assert_cmpstr(got->revoked_at, ==, now);
    }
}

static void
assert_session_equal(const EinsoraSession *a, const EinsoraSession *b)
{
    g_assert_cmpstr(a->id, ==, b->id);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->user_id, ==, b->user_id);
    g_assert_cmpstr(a->session_sha256, ==, b->session_sha256);
    g_assert_cmpstr(a->csrf_sha256, ==, b->csrf_sha256);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->expires_at, ==, b->expires_at);
    g_assert_cmpstr(a->revoked_at, ==, b->revoked_at);
}

static void
test_session_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraSession) session = session_new_for(f, ann, "one");
    g_autoptr(EinsoraSession) duplicate = session_new_for(f, ann, "two");
    g_autoptr(EinsoraSession) got = NULL;
    g_autofree gchar *unknown_sha256 = sha256_of("ses_unknown");

    g_assert_true(einsora_store_insert_session(f->store, session, &error));
    g_assert_no_error(error);
    got = einsora_store_find_session(f->store, session->session_sha256, &error);
    g_assert_no_error(error);
    assert_session_equal(got, session);
    g_clear_pointer(&got, einsora_session_free);

    got = einsora_store_find_session(f->store, unknown_sha256, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);

    replace_string(&duplicate->session_sha256, g_strdup(session->session_sha256));
    g_assert_false(einsora_store_insert_session(f->store, duplicate, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
}

static void
test_session_other_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraSession) sneaky = session_new_for(f, ann, "sneaky");
    g_autoptr(EinsoraSession) session = session_new_for(f, ann, "real");
    g_autoptr(EinsoraSession) got = NULL;
    g_autofree gchar *revoked_at = tick(f);

    /* A session's user must be in the session's tenant. */
    replace_string(&sneaky->tenant_id, g_strdup(globex->id));
    g_assert_false(einsora_store_insert_session(f->store, sneaky, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    g_assert_true(einsora_store_insert_session(f->store, session, &error));
    g_assert_no_error(error);
    g_assert_false(
        einsora_store_revoke_session(f->store, globex->id, session->id, revoked_at, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    got = einsora_store_find_session(f->store, session->session_sha256, &error);
    g_assert_no_error(error);
    assert_session_equal(got, session);
}

static void
test_session_revoke(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraSession) session = session_new_for(f, ann, "one");
    g_autoptr(EinsoraSession) got = NULL;
    g_autofree gchar *first = tick(f);
    g_autofree gchar *second = tick(f);
    g_autofree gchar *unknown_id = new_id(f);

    g_assert_true(einsora_store_insert_session(f->store, session, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_revoke_session(f->store, acme->id, session->id, first, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_revoke_session(f->store, acme->id, session->id, second, &error));
    g_assert_no_error(error);
    got = einsora_store_find_session(f->store, session->session_sha256, &error);
    g_assert_no_error(error);
    replace_string(&session->revoked_at, g_strdup(first));
    assert_session_equal(got, session);

    g_assert_false(einsora_store_revoke_session(f->store, acme->id, unknown_id, first, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

/* Idempotency keys */

static EinsoraIdempotencyRecord *
idempotency_record_new_for(Fixture *f, const char *tenant_id, const char *key, const char *body)
{
    EinsoraIdempotencyRecord *record = einsora_idempotency_record_new();

    record->tenant_id = g_strdup(tenant_id);
    record->key = g_strdup(key);
    record->request_sha256 = sha256_of(body);
    record->response_status = 202;
    record->response_body = g_strdup(body);
    record->created_at = tick(f);
    record->expires_at = einsora_timestamp_format(f->now_us + G_TIME_SPAN_DAY);
    return record;
}

static void
assert_idempotency_record_equal(const EinsoraIdempotencyRecord *a,
                                const EinsoraIdempotencyRecord *b)
{
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->key, ==, b->key);
    g_assert_cmpstr(a->request_sha256, ==, b->request_sha256);
    g_assert_cmpint(a->response_status, ==, b->response_status);
    g_assert_cmpstr(a->response_body, ==, b->response_body);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->expires_at, ==, b->expires_at);
}

static void
insert_idempotency_record(Fixture *f, const EinsoraIdempotencyRecord *record)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_store_insert_idempotency_record(f->store, record, &error));
    g_assert_no_error(error);
}

static EinsoraIdempotencyRecord *
get_idempotency_record(Fixture *f, const char *tenant_id, const char *key)
{
    g_autoptr(GError) error = NULL;
    EinsoraIdempotencyRecord *record =
        einsora_store_get_idempotency_record(f->store, tenant_id, key, &error);

    g_assert_no_error(error);
    g_assert_nonnull(record);
    return record;
}

static void
test_idempotency_round_trip(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraIdempotencyRecord) record =
        idempotency_record_new_for(f, acme->id, "key-1", "{\"id\": \"w1\"}");
    /* Keys are per tenant: another tenant may use the same one. */
    g_autoptr(EinsoraIdempotencyRecord) theirs =
        idempotency_record_new_for(f, globex->id, "key-1", "{\"id\": \"w2\"}");
    g_autoptr(EinsoraIdempotencyRecord) got = NULL;

    insert_idempotency_record(f, record);
    got = get_idempotency_record(f, acme->id, "key-1");
    assert_idempotency_record_equal(got, record);
    g_clear_pointer(&got, einsora_idempotency_record_free);

    got = einsora_store_get_idempotency_record(f->store, globex->id, "key-1", &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);
    got = einsora_store_get_idempotency_record(f->store, acme->id, "key-2", &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);

    insert_idempotency_record(f, theirs);
    got = get_idempotency_record(f, globex->id, "key-1");
    assert_idempotency_record_equal(got, theirs);
    g_clear_pointer(&got, einsora_idempotency_record_free);
    got = get_idempotency_record(f, acme->id, "key-1");
    assert_idempotency_record_equal(got, record);
}

static void
test_idempotency_duplicate(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraIdempotencyRecord) record =
        idempotency_record_new_for(f, acme->id, "key-1", "{\"first\": true}");
    g_autoptr(EinsoraIdempotencyRecord) again =
        idempotency_record_new_for(f, acme->id, "key-1", "{\"second\": true}");
    g_autoptr(EinsoraIdempotencyRecord) later = NULL;
    g_autoptr(EinsoraIdempotencyRecord) got = NULL;

    insert_idempotency_record(f, record);
    g_assert_false(einsora_store_insert_idempotency_record(f->store, again, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    got = get_idempotency_record(f, acme->id, "key-1");
    assert_idempotency_record_equal(got, record);
    g_clear_pointer(&got, einsora_idempotency_record_free);

    /* Once the first has expired, the key may be used again. */
    f->now_us += 2 * G_TIME_SPAN_DAY;
    later = idempotency_record_new_for(f, acme->id, "key-1", "{\"third\": true}");
    insert_idempotency_record(f, later);
    got = get_idempotency_record(f, acme->id, "key-1");
    assert_idempotency_record_equal(got, later);
}

static void
test_idempotency_unknown_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *tenant_id = new_id(f);
    g_autoptr(EinsoraIdempotencyRecord) record =
        idempotency_record_new_for(f, tenant_id, "key-1", "{}");

    g_assert_false(einsora_store_insert_idempotency_record(f->store, record, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
test_idempotency_delete_expired(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraIdempotencyRecord) old = idempotency_record_new_for(f, acme->id, "old", "{}");
    g_autoptr(EinsoraIdempotencyRecord) fresh = NULL;
    g_autoptr(EinsoraIdempotencyRecord) got = NULL;
    g_autofree gchar *now = NULL;

    insert_idempotency_record(f, old);
    f->now_us += G_TIME_SPAN_DAY / 2;
    fresh = idempotency_record_new_for(f, acme->id, "fresh", "{}");
    insert_idempotency_record(f, fresh);

    /* Exactly at expiry counts as expired. */
    now = g_strdup(old->expires_at);
    g_assert_true(einsora_store_delete_expired_idempotency_records(f->store, now, &error));
    g_assert_no_error(error);
    got = einsora_store_get_idempotency_record(f->store, acme->id, "old", &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
    g_clear_error(&error);
    got = get_idempotency_record(f, acme->id, "fresh");
    assert_idempotency_record_equal(got, fresh);

    g_assert_true(einsora_store_delete_expired_idempotency_records(f->store, now, &error));
    g_assert_no_error(error);
}

/* Access tickets */

static EinsoraAccessTicket *
access_ticket_new_for(Fixture *f, const EinsoraWorkload *workload, const char *secret,
                      gint64 ttl_us)
{
    EinsoraAccessTicket *ticket = einsora_access_ticket_new();

    ticket->hash = sha256_of(secret);
    ticket->tenant_id = g_strdup(workload->tenant_id);
    ticket->workload_id = g_strdup(workload->id);
    ticket->attempt = workload->attempt;
    ticket->created_by = g_strdup("ann@acme.example");
    ticket->created_at = tick(f);
    ticket->expires_at = einsora_timestamp_format(f->now_us + ttl_us);
    return ticket;
}

static void
assert_access_ticket_equal(const EinsoraAccessTicket *a, const EinsoraAccessTicket *b)
{
    g_assert_cmpstr(a->hash, ==, b->hash);
    g_assert_cmpstr(a->tenant_id, ==, b->tenant_id);
    g_assert_cmpstr(a->workload_id, ==, b->workload_id);
    g_assert_cmpint(a->attempt, ==, b->attempt);
    g_assert_cmpstr(a->created_by, ==, b->created_by);
    g_assert_cmpstr(a->created_at, ==, b->created_at);
    g_assert_cmpstr(a->expires_at, ==, b->expires_at);
}

/* Machine enrolments (docs/adr/0055). */

static EinsoraEnrolment *
enrolment_new_for(Fixture *f, const char *tenant_id, const char *secret, gint64 ttl_us)
{
    EinsoraEnrolment *enrolment = einsora_enrolment_new();

    enrolment->id = new_id(f);
    enrolment->tenant_id = g_strdup(tenant_id);
    enrolment->hash = sha256_of(secret);
    enrolment->name = g_strdup("lab-2");
    enrolment->region = g_strdup("home");
    enrolment->created_by = g_strdup("ann@acme.example");
    enrolment->created_at = tick(f);
    enrolment->expires_at = einsora_timestamp_format(f->now_us + ttl_us);
    return enrolment;
}

typedef struct {
    Fixture *f;
    const char *hash;
    const char *now;
    const char *machine_id;
    gboolean make_machine;
    EinsoraEnrolment *taken;
} EnrolTx;

/* What the server does with a token: take it, then make the machine it
 * names with the owner and region it fixed. */
static gboolean
enrol_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    EnrolTx *tx = user_data;
    g_autoptr(EinsoraMachine) machine = NULL;

    tx->taken = einsora_store_take_enrolment(store, tx->hash, tx->now, tx->machine_id, error);
    if (tx->taken == NULL || !tx->make_machine)
        return tx->taken != NULL;
    machine = machine_new_for(tx->f, tx->taken->tenant_id, tx->taken->name);
    replace_string(&machine->id, g_strdup(tx->machine_id));
    replace_string(&machine->region, g_strdup(tx->taken->region));
    machine->cert_fingerprint = g_strconcat("SHA256:", tx->hash, NULL);
    machine->cert_expires_at = g_strdup(tx->taken->expires_at);
    return einsora_store_insert_machine(store, machine, error);
}

static void
test_enrolment_take_once(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraEnrolment) enrolment =
        enrolment_new_for(f, acme->id, "enr_first", G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC);
    g_autofree gchar *now = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    EnrolTx tx = {f};

    g_assert_true(einsora_store_insert_enrolment(f->store, enrolment, &error));
    g_assert_no_error(error);
    now = tick(f);
    machine_id = new_id(f);
    tx = (EnrolTx){f, enrolment->hash, now, machine_id, TRUE, NULL};
    g_assert_true(einsora_store_in_transaction(f->store, enrol_tx, &tx, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(tx.taken->id, ==, enrolment->id);
    g_assert_cmpstr(tx.taken->tenant_id, ==, acme->id);
    g_assert_cmpstr(tx.taken->used_at, ==, now);
    g_assert_cmpstr(tx.taken->machine_id, ==, machine_id);
    g_clear_pointer(&tx.taken, einsora_enrolment_free);
    machine = einsora_store_get_machine(f->store, acme->id, machine_id, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(machine->name, ==, "lab-2");
    g_assert_true(g_str_has_prefix(machine->cert_fingerprint, "SHA256:"));
    g_assert_cmpstr(machine->cert_expires_at, ==, enrolment->expires_at);
    /* Its agent's certificate finds it, whoever asks; another doesn't. */
    {
        g_autoptr(EinsoraMachine) held =
            einsora_store_find_machine_by_certificate(f->store, machine->cert_fingerprint, &error);
        g_autoptr(EinsoraMachine) other = NULL;
        g_autofree gchar *unknown = g_strdup(machine->cert_fingerprint);

        g_assert_no_error(error);
        g_assert_cmpstr(held->id, ==, machine_id);
        g_assert_cmpstr(held->tenant_id, ==, acme->id);
        unknown[strlen(unknown) - 1] = unknown[strlen(unknown) - 1] == '0' ? '1' : '0';
        other = einsora_store_find_machine_by_certificate(f->store, unknown, &error);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_assert_null(other);
        g_clear_error(&error);
    }
    /* Revoked: only by its tenant, once; then its certificate finds nothing. */
    {
        g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
        g_autoptr(EinsoraMachine) gone = NULL;

        g_assert_false(
            einsora_store_clear_machine_certificate(f->store, globex->id, machine_id, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_clear_error(&error);
        g_assert_true(
            einsora_store_clear_machine_certificate(f->store, acme->id, machine_id, &error));
        g_assert_no_error(error);
        gone =
            einsora_store_find_machine_by_certificate(f->store, machine->cert_fingerprint, &error);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_assert_null(gone);
        g_clear_error(&error);
        g_assert_false(
            einsora_store_clear_machine_certificate(f->store, acme->id, machine_id, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_clear_error(&error);
    }
    /* Once: a second take of the same token finds nothing. */
    {
        g_autofree gchar *again = new_id(f);
        g_autoptr(EinsoraEnrolment) taken =
            einsora_store_take_enrolment(f->store, enrolment->hash, now, again, &error);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_assert_null(taken);
    }
}

/* Unknown, expired (exactly at expiry too): NOT_FOUND. A take whose
 * machine was never made is refused at commit and leaves the token
 * unused. A hash stored twice is a conflict; another tenant's is
 * refused. */
static void
test_enrolment_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraEnrolment) live =
        enrolment_new_for(f, acme->id, "enr_live", G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC);
    g_autoptr(EinsoraEnrolment) brief = enrolment_new_for(f, acme->id, "enr_brief", 0);
    g_autoptr(EinsoraEnrolment) orphan = enrolment_new_for(f, "no-such-tenant", "enr_orphan", 60);
    g_autofree gchar *unknown = sha256_of("enr_unknown");
    g_autofree gchar *now = NULL;
    g_autofree gchar *machine_id = new_id(f);
    EnrolTx tx;

    g_assert_true(einsora_store_insert_enrolment(f->store, live, &error));
    g_assert_true(einsora_store_insert_enrolment(f->store, brief, &error));
    g_assert_no_error(error);
    g_assert_false(einsora_store_insert_enrolment(f->store, live, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    g_assert_false(einsora_store_insert_enrolment(f->store, orphan, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    now = g_strdup(brief->expires_at);
    for (guint i = 0; i < 2; i++) {
        g_autoptr(EinsoraEnrolment) taken = einsora_store_take_enrolment(
            f->store, i == 0 ? unknown : brief->hash, now, machine_id, &error);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_assert_null(taken);
        g_clear_error(&error);
    }

    tx = (EnrolTx){f, live->hash, now, machine_id, FALSE, NULL};
    g_assert_false(einsora_store_in_transaction(f->store, enrol_tx, &tx, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    g_clear_pointer(&tx.taken, einsora_enrolment_free);
    tx = (EnrolTx){f, live->hash, now, machine_id, TRUE, NULL};
    g_assert_true(einsora_store_in_transaction(f->store, enrol_tx, &tx, &error));
    g_assert_no_error(error);
    g_clear_pointer(&tx.taken, einsora_enrolment_free);
}

static void
insert_access_ticket(Fixture *f, const EinsoraAccessTicket *ticket)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_store_insert_access_ticket(f->store, ticket, &error));
    g_assert_no_error(error);
}

/* Takes @hash at @now and expects it to be gone. */
static void
assert_not_takeable(Fixture *f, const char *hash, const char *now)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraAccessTicket) got =
        einsora_store_take_access_ticket(f->store, hash, now, &error);

    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(got);
}

static void
test_access_ticket_take_once(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = workload_new_for(f, acme->id, "notebook");
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    g_autoptr(EinsoraAccessTicket) got = NULL;
    g_autofree gchar *now = NULL;
    g_autofree gchar *unknown = sha256_of("tkt_unknown");

    workload->attempt = 3;
    insert_workload(f, workload);
    ticket = access_ticket_new_for(f, workload, "tkt_first", 60 * G_USEC_PER_SEC);
    insert_access_ticket(f, ticket);
    now = tick(f);

    assert_not_takeable(f, unknown, now);
    got = einsora_store_take_access_ticket(f->store, ticket->hash, now, &error);
    g_assert_no_error(error);
    g_assert_nonnull(got);
    assert_access_ticket_equal(got, ticket);
    g_assert_cmpint(got->attempt, ==, 3);
    /* One-time: taking it deleted it. */
    assert_not_takeable(f, ticket->hash, now);
}

/* Exactly at expiry is expired; an expired ticket is deleted when someone
 * tries it, so it stays gone even for a clock that goes back. */
static void
test_access_ticket_expired(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraAccessTicket) ticket =
        access_ticket_new_for(f, workload, "tkt_late", 60 * G_USEC_PER_SEC);
    g_autofree gchar *before = NULL;

    insert_access_ticket(f, ticket);
    before = tick(f);
    assert_not_takeable(f, ticket->hash, ticket->expires_at);
    assert_not_takeable(f, ticket->hash, before);
}

/* Every take (found or not) deletes the tickets that expired by then, and
 * only those. */
static void
test_access_ticket_housekeeping(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraAccessTicket) old = access_ticket_new_for(f, workload, "tkt_old", 10);
    g_autoptr(EinsoraAccessTicket) live =
        access_ticket_new_for(f, workload, "tkt_live", 60 * G_USEC_PER_SEC);
    g_autoptr(EinsoraAccessTicket) got = NULL;
    g_autofree gchar *unknown = sha256_of("tkt_unknown");
    g_autofree gchar *early = g_strdup(old->created_at);
    g_autofree gchar *now = NULL;

    insert_access_ticket(f, old);
    insert_access_ticket(f, live);
    now = tick(f);
    assert_not_takeable(f, unknown, now);
    /* The old one went with that take: even at a time it was valid, it is
     * not there. */
    assert_not_takeable(f, old->hash, early);
    got = einsora_store_take_access_ticket(f->store, live->hash, now, &error);
    g_assert_no_error(error);
    assert_access_ticket_equal(got, live);
}

/* Tickets are scoped like the timeline: one for another tenant's (or no)
 * workload is refused, as is a hash stored twice. */
static void
test_access_ticket_insert_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraAccessTicket) foreign =
        access_ticket_new_for(f, workload, "tkt_foreign", 60 * G_USEC_PER_SEC);
    g_autoptr(EinsoraAccessTicket) orphan =
        access_ticket_new_for(f, workload, "tkt_orphan", 60 * G_USEC_PER_SEC);
    g_autoptr(EinsoraAccessTicket) ticket =
        access_ticket_new_for(f, workload, "tkt_once", 60 * G_USEC_PER_SEC);
    g_autoptr(EinsoraAccessTicket) again = einsora_access_ticket_copy(ticket);
    g_autofree gchar *now = NULL;

    replace_string(&foreign->tenant_id, g_strdup(globex->id));
    g_assert_false(einsora_store_insert_access_ticket(f->store, foreign, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    replace_string(&orphan->workload_id, new_id(f));
    g_assert_false(einsora_store_insert_access_ticket(f->store, orphan, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    insert_access_ticket(f, ticket);
    g_assert_false(einsora_store_insert_access_ticket(f->store, again, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);

    now = tick(f);
    assert_not_takeable(f, foreign->hash, now);
    assert_not_takeable(f, orphan->hash, now);
    {
        g_autoptr(EinsoraAccessTicket) got =
            einsora_store_take_access_ticket(f->store, ticket->hash, now, &error);
        g_assert_no_error(error);
        assert_access_ticket_equal(got, ticket);
    }
}

/* Inside a caller's transaction the take is part of it: rolled back, the
 * ticket is there again. */
static void
test_access_ticket_take_in_transaction(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraAccessTicket) ticket =
        access_ticket_new_for(f, workload, "tkt_tx", 60 * G_USEC_PER_SEC);
    g_autofree gchar *now = NULL;

    insert_access_ticket(f, ticket);
    now = tick(f);
    g_assert_true(einsora_store_begin(f->store, &error));
    g_assert_no_error(error);
    {
        g_autoptr(EinsoraAccessTicket) got =
            einsora_store_take_access_ticket(f->store, ticket->hash, now, &error);
        g_assert_no_error(error);
        g_assert_nonnull(got);
    }
    einsora_store_rollback(f->store);
    {
        g_autoptr(EinsoraAccessTicket) got =
            einsora_store_take_access_ticket(f->store, ticket->hash, now, &error);
        g_assert_no_error(error);
        assert_access_ticket_equal(got, ticket);
    }
    assert_not_takeable(f, ticket->hash, now);
}

/* Only a SHA-256 fits the column: a secret in clear can't be stored. */
static void
test_access_ticket_schema(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    const char *const bad[] = {
        "INSERT INTO access_tickets (ticket_sha256, tenant_id, workload_id, attempt, created_by, "
        "created_at, expires_at) SELECT "
        "'tkt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        "AAAA', tenant_id, id, 0, 'x', created_at, created_at FROM workloads",
        "INSERT INTO access_tickets (ticket_sha256, tenant_id, workload_id, attempt, created_by, "
        "created_at, expires_at) SELECT "
        "'ABCDEF0000000000000000000000000000000000000000000000000000000000', tenant_id, id, 0, "
        "'x', created_at, created_at FROM workloads",
        "INSERT INTO access_tickets (ticket_sha256, tenant_id, workload_id, attempt, created_by, "
        "created_at, expires_at) SELECT "
        "'abcdef0000000000000000000000000000000000000000000000000000000000', tenant_id, id, -1, "
        "'x', created_at, created_at FROM workloads",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_test_message("running %s", bad[i]);
        g_assert_false(f->harness->raw_exec(f->store, bad[i], &error));
        g_assert_nonnull(error);
        g_clear_error(&error);
    }
}

/* The auth tables refuse rows that break their rules. */
static void
test_schema_auth_checks(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraApiToken) token = add_api_token(f, ann, "laptop");
    const char *const bad[] = {
        /* a password that is not an argon2id hash (say, in clear) */
        "UPDATE users SET password_hash = 'hunter2'",
        /* no such role */
        "UPDATE users SET role = 'admin'",
        /* a token that is not a SHA-256 hex digest */
        "UPDATE api_tokens SET token_sha256 = 'tsk_secret'",
        /* an empty email */
        "UPDATE users SET email = ''",
        /* statuses are HTTP statuses */
        "INSERT INTO idempotency_keys (tenant_id, key, request_sha256, response_status, "
        "response_body, created_at, expires_at) SELECT id, 'k', "
        "'0000000000000000000000000000000000000000000000000000000000000000', 99, '{}', "
        "created_at, created_at FROM tenants",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(EinsoraUser) got_user = NULL;
        g_autoptr(EinsoraApiToken) got_token = NULL;

        g_test_message("running %s", bad[i]);
        g_assert_false(f->harness->raw_exec(f->store, bad[i], &error));
        g_assert_nonnull(error);
        g_clear_error(&error);
        got_user = einsora_store_get_user(f->store, acme->id, ann->id, &error);
        g_assert_no_error(error);
        assert_user_equal(got_user, ann);
        got_token = find_api_token(f, token->token_sha256);
        assert_api_token_equal(got_token, token);
    }
}

/* Transactions */

typedef struct {
    Fixture *f;
    EinsoraTenant *tenant;
    EinsoraWorkload *workload;
    EinsoraWorkloadEvent *event;
    gboolean fail;
} WriteContext;

static gboolean
write_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    WriteContext *ctx = user_data;

    if (!einsora_store_insert_tenant(store, ctx->tenant, error) ||
        !einsora_store_insert_workload(store, ctx->workload, error) ||
        !einsora_store_append_event(store, ctx->event, error))
        return FALSE;
    if (!einsora_store_set_quota(store, ctx->tenant->id, "l40s-48gb", 2, error))
        return FALSE;
    if (ctx->fail) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED, "changed my mind");
        return FALSE;
    }
    return TRUE;
}

static void
write_context_init(Fixture *f, WriteContext *ctx, gboolean fail)
{
    g_autofree gchar *tenant_id = new_id(f);
    g_autofree gchar *created_at = tick(f);

    ctx->f = f;
    ctx->tenant = einsora_tenant_new(tenant_id, "acme", FALSE, created_at);
    ctx->workload = workload_new_for(f, tenant_id, "notebook");
    ctx->event =
        event_new_for(f, ctx->workload, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created");
    ctx->fail = fail;
}

static void
write_context_clear(WriteContext *ctx)
{
    g_clear_pointer(&ctx->tenant, einsora_tenant_free);
    g_clear_pointer(&ctx->workload, einsora_workload_free);
    g_clear_pointer(&ctx->event, einsora_workload_event_free);
}

static void
test_transaction_commit(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    WriteContext ctx;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(GPtrArray) events = NULL;
    gint64 gpus = 0;

    write_context_init(f, &ctx, FALSE);
    g_assert_true(einsora_store_in_transaction(f->store, write_tx, &ctx, &error));
    g_assert_no_error(error);

    tenant = einsora_store_get_tenant(f->store, ctx.tenant->id, &error);
    g_assert_no_error(error);
    assert_tenant_equal(tenant, ctx.tenant);
    workload = get_workload(f, ctx.tenant->id, ctx.workload->id);
    assert_workload_equal(workload, ctx.workload);
    events = list_events(f, ctx.tenant->id, ctx.workload->id);
    g_assert_cmpuint(events->len, ==, 1);
    g_assert_true(einsora_store_get_quota(f->store, ctx.tenant->id, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 2);
    write_context_clear(&ctx);
}

/* A write the store refuses (a duplicate key, a missing parent) changes
 * nothing, and the transaction goes on: a controller pass's group keeps
 * the other workloads' steps when one loses. */
static void
test_transaction_refused_write_goes_on(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) orphan = workload_new_for(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkload) second = workload_new_for(f, acme->id, "notebook");
    g_autoptr(EinsoraWorkloadEvent) created =
        event_new_for(f, second, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "created");
    g_autoptr(EinsoraWorkload) got = NULL;
    g_autoptr(GPtrArray) events = NULL;

    replace_string(&orphan->tenant_id, new_id(f));
    g_assert_true(einsora_store_begin(f->store, &error));
    g_assert_no_error(error);
    g_assert_false(einsora_store_insert_workload(f->store, workload, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    g_assert_false(einsora_store_insert_workload(f->store, orphan, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_true(einsora_store_insert_workload(f->store, second, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_append_event(f->store, created, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_commit(f->store, &error));
    g_assert_no_error(error);

    got = get_workload(f, acme->id, second->id);
    assert_workload_equal(got, second);
    events = list_events(f, acme->id, second->id);
    g_assert_cmpuint(events->len, ==, 1);
}

static void
test_transaction_rollback_on_false(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    WriteContext ctx;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(GPtrArray) list = NULL;
    gint64 gpus = -1;

    write_context_init(f, &ctx, TRUE);
    g_assert_false(einsora_store_in_transaction(f->store, write_tx, &ctx, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
    g_clear_error(&error);

    tenant = einsora_store_get_tenant(f->store, ctx.tenant->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(tenant);
    g_clear_error(&error);
    workload = einsora_store_get_workload(f->store, ctx.tenant->id, ctx.workload->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(workload);
    g_clear_error(&error);
    list = list_workloads(f, ctx.tenant->id, TRUE);
    g_assert_cmpuint(list->len, ==, 0);
    g_assert_true(einsora_store_get_quota(f->store, ctx.tenant->id, "l40s-48gb", &gpus, &error));
    g_assert_no_error(error);
    g_assert_cmpint(gpus, ==, 0);

    /* The store is usable afterwards: the same writes now commit. */
    ctx.fail = FALSE;
    g_assert_true(einsora_store_in_transaction(f->store, write_tx, &ctx, &error));
    g_assert_no_error(error);
    write_context_clear(&ctx);
}

static gboolean
nested_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    WriteContext *ctx = user_data;
    g_autoptr(GError) nested_error = NULL;

    if (!einsora_store_insert_tenant(store, ctx->tenant, error))
        return FALSE;
    /* A transaction inside this one is a programming error. */
    g_assert_false(einsora_store_in_transaction(store, write_tx, ctx, &nested_error));
    g_assert_nonnull(nested_error);
    return TRUE;
}

static void
test_transaction_nested_begin_fails(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) first = NULL;
    g_autoptr(EinsoraTenant) got = NULL;
    WriteContext ctx;

    g_assert_true(einsora_store_begin(f->store, &error));
    g_assert_no_error(error);
    first = add_tenant(f, "first", FALSE);
    g_assert_false(einsora_store_begin(f->store, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    /* The failed begin left the outer transaction alone; rolling it back
     * undoes the insert. */
    einsora_store_rollback(f->store);
    got = einsora_store_get_tenant(f->store, first->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    /* The same holds through einsora_store_in_transaction(). */
    write_context_init(f, &ctx, FALSE);
    g_assert_true(einsora_store_in_transaction(f->store, nested_tx, &ctx, &error));
    g_assert_no_error(error);
    got = einsora_store_get_tenant(f->store, ctx.tenant->id, &error);
    g_assert_no_error(error);
    assert_tenant_equal(got, ctx.tenant);
    write_context_clear(&ctx);
}

static void
test_transaction_commit_without_begin(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    g_assert_false(einsora_store_commit(f->store, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    /* A stray rollback is harmless. */
    einsora_store_rollback(f->store);
    g_assert_true(einsora_store_begin(f->store, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_commit(f->store, &error));
    g_assert_no_error(error);
}

/* The schema */

static gint
strcmp_ptr(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

static gchar *
join_sorted(const char *const *strv)
{
    g_autoptr(GPtrArray) sorted = g_ptr_array_new();

    for (guint i = 0; strv[i] != NULL; i++)
        g_ptr_array_add(sorted, (gpointer)strv[i]);
    g_ptr_array_sort(sorted, strcmp_ptr);
    g_ptr_array_add(sorted, NULL);
    return g_strjoinv(",", (gchar **)sorted->pdata);
}

static void
test_schema_columns(Fixture *f, gconstpointer data)
{
    for (guint i = 0; i < G_N_ELEMENTS(schema_columns); i++) {
        g_auto(GStrv) columns = f->harness->list_columns(f->store, schema_columns[i].table);
        g_autofree gchar *got = NULL;
        g_autofree gchar *want = join_sorted(schema_columns[i].columns);

        g_test_message("table %s", schema_columns[i].table);
        g_assert_nonnull(columns);
        got = join_sorted((const char *const *)columns);
        g_assert_cmpstr(got, ==, want);
    }
}

static void
test_schema_indexes(Fixture *f, gconstpointer data)
{
    g_auto(GStrv) indexes = f->harness->list_indexes(f->store);
    g_autofree gchar *got = NULL;
    g_autofree gchar *want = join_sorted(schema_indexes);

    g_assert_nonnull(indexes);
    got = join_sorted((const char *const *)indexes);
    g_assert_cmpstr(got, ==, want);
}

/* Rows that break the schema's rules are refused whoever writes them. */
static void
test_schema_checks(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    const char *const bad[] = {
        /* ID not 36 characters */
        "INSERT INTO tenants (id, name, trusted, created_at) VALUES "
        "('0190a000-0000-7000-8000-00000000000', 'short', 0, '2026-01-01T00:00:00.000000Z')",
        /* time not fixed-width */
        "INSERT INTO tenants (id, name, trusted, created_at) VALUES "
        "('0190a000-0000-7000-8000-000000000001', 'late', 0, '2026-01-01T00:00:00Z')",
        /* trusted is 0 or 1 */
        "INSERT INTO tenants (id, name, trusted, created_at) VALUES "
        "('0190a000-0000-7000-8000-000000000002', 'odd', 2, '2026-01-01T00:00:00.000000Z')",
        /* no such state */
        "UPDATE workloads SET state = 'paused'",
        /* no such kind */
        "UPDATE workloads SET kind = 'cluster'",
        /* negative GPUs */
        "UPDATE workloads SET gpus = -1",
        /* not a machine */
        "UPDATE workloads SET machine_id = '0190a000-0000-7000-8000-000000000003'",
        /* quotas cannot be negative */
        "INSERT INTO quotas (tenant_id, gpu_class, gpus, updated_at) "
        "SELECT id, 'l40s-48gb', -1, created_at FROM tenants",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(EinsoraWorkload) got = NULL;

        g_test_message("running %s", bad[i]);
        g_assert_false(f->harness->raw_exec(f->store, bad[i], &error));
        g_assert_nonnull(error);
        g_clear_error(&error);
        got = get_workload(f, acme->id, workload->id);
        assert_workload_equal(got, workload);
    }
}

/* Keyset pages */

/* Every page of the tenant's workloads, @limit at a time, joined. */
static GPtrArray *
walk_workload_pages(Fixture *f, const char *tenant_id, gboolean include_deleted, guint limit)
{
    GPtrArray *walked = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_free);
    g_autofree gchar *after_created_at = NULL;
    g_autofree gchar *after_id = NULL;

    for (;;) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) page = einsora_store_list_workloads_page(
            f->store, tenant_id, include_deleted, after_created_at, after_id, limit, &error);
        EinsoraWorkload *last;

        g_assert_no_error(error);
        g_assert_nonnull(page);
        g_assert_cmpuint(page->len, <=, limit);
        if (page->len == 0)
            return walked;
        last = g_ptr_array_index(page, page->len - 1);
        replace_string(&after_created_at, g_strdup(last->created_at));
        replace_string(&after_id, g_strdup(last->id));
        for (guint i = 0; i < page->len; i++)
            g_ptr_array_add(walked, einsora_workload_copy(g_ptr_array_index(page, i)));
    }
}

static void
test_workload_pages(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autofree gchar *same_time = NULL;

    /* Interleaved with another tenant's, and three created in the same
     * microsecond: the ID breaks the tie, so no row sits on two pages. */
    for (guint i = 0; i < 10; i++) {
        g_autofree gchar *name = g_strdup_printf("w-%u", i);
        g_autoptr(EinsoraWorkload) workload = workload_new_for(f, acme->id, name);
        g_autoptr(EinsoraWorkload) theirs = workload_new_for(f, globex->id, name);

        if (i >= 4 && i < 7) {
            if (same_time == NULL)
                same_time = g_strdup(workload->created_at);
            replace_string(&workload->created_at, g_strdup(same_time));
        }
        if (i == 8)
            workload->state = EINSORA_WORKLOAD_STATE_DELETED;
        insert_workload(f, workload);
        insert_workload(f, theirs);
    }
    for (guint limit = 1; limit <= 11; limit++) {
        for (guint with_deleted = 0; with_deleted <= 1; with_deleted++) {
            g_autoptr(GPtrArray) whole = list_workloads(f, acme->id, with_deleted);
            g_autoptr(GPtrArray) walked = walk_workload_pages(f, acme->id, with_deleted, limit);

            g_assert_cmpuint(walked->len, ==, with_deleted ? 10 : 9);
            g_assert_cmpuint(walked->len, ==, whole->len);
            for (guint i = 0; i < whole->len; i++)
                assert_workload_equal(g_ptr_array_index(walked, i), g_ptr_array_index(whole, i));
        }
    }
}

/* A page goes on from the last row it was given, whatever was inserted or
 * deleted since: no row twice, none skipped that was there throughout. */
static void
test_workload_pages_stable(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(GPtrArray) first = NULL;
    g_autoptr(GPtrArray) rest = NULL;
    g_autoptr(GPtrArray) before = NULL;
    g_autoptr(EinsoraWorkload) late = NULL;
    EinsoraWorkload *edge;
    EinsoraWorkload *gone;

    for (guint i = 0; i < 6; i++) {
        g_autofree gchar *name = g_strdup_printf("w-%u", i);
        g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, name);
    }
    before = list_workloads(f, acme->id, FALSE);
    first = einsora_store_list_workloads_page(f->store, acme->id, FALSE, NULL, NULL, 3, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(first->len, ==, 3);
    edge = g_ptr_array_index(first, 2);

    /* Meanwhile: the page's own last row and a row of the next page are
     * deleted, one is created, and one arrives dated before the edge (a
     * clock set back), which a position can't show and mustn't shift. */
    for (guint i = 2; i <= 3; i++) {
        g_autoptr(EinsoraWorkload) changed = einsora_workload_copy(g_ptr_array_index(before, i));
        changed->state = EINSORA_WORKLOAD_STATE_DELETED;
        g_assert_true(einsora_store_update_workload_state(
            f->store, changed, EINSORA_WORKLOAD_STATE_PENDING, changed->version, &error));
        g_assert_no_error(error);
    }
    gone = g_ptr_array_index(before, 3);
    late = add_workload(f, acme->id, "late");
    {
        g_autoptr(EinsoraWorkload) early = workload_new_for(f, acme->id, "early");
        replace_string(&early->created_at,
                       g_strdup(((EinsoraWorkload *)g_ptr_array_index(before, 0))->created_at));
        insert_workload(f, early);
    }

    rest = einsora_store_list_workloads_page(f->store, acme->id, FALSE, edge->created_at, edge->id,
                                             100, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(rest->len, ==, 3);
    assert_workload_equal(g_ptr_array_index(rest, 0), g_ptr_array_index(before, 4));
    assert_workload_equal(g_ptr_array_index(rest, 1), g_ptr_array_index(before, 5));
    assert_workload_equal(g_ptr_array_index(rest, 2), late);
    for (guint i = 0; i < rest->len; i++)
        g_assert_cmpstr(((EinsoraWorkload *)g_ptr_array_index(rest, i))->id, !=, gone->id);
}

static void
test_event_pages(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) globex = add_tenant(f, "globex", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "mine");
    g_autoptr(EinsoraWorkload) other = add_workload(f, acme->id, "other");
    g_autoptr(GPtrArray) whole = NULL;
    g_autoptr(GPtrArray) first = NULL;
    g_autoptr(GPtrArray) rest = NULL;
    g_autoptr(GPtrArray) theirs = NULL;
    g_autoptr(EinsoraWorkloadEvent) added = NULL;

    for (guint i = 0; i < 5; i++) {
        g_autoptr(EinsoraWorkloadEvent) event = event_new_for(
            f, workload, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "pending_capacity");
        g_autoptr(EinsoraWorkloadEvent) noise =
            event_new_for(f, other, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "pending_capacity");
        append_event(f, event);
        append_event(f, noise);
    }
    whole = list_events(f, acme->id, workload->id);
    g_assert_cmpuint(whole->len, ==, 5);
    first = einsora_store_list_events_page(f->store, acme->id, workload->id, 0, 2, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(first->len, ==, 2);
    assert_event_equal(g_ptr_array_index(first, 0), g_ptr_array_index(whole, 0));
    assert_event_equal(g_ptr_array_index(first, 1), g_ptr_array_index(whole, 1));

    /* Appended meanwhile: found at the end, nothing repeated. */
    added = event_new_for(f, workload, FALSE, 0, EINSORA_WORKLOAD_STATE_PENDING, "user_stopped");
    append_event(f, added);
    rest = einsora_store_list_events_page(
        f->store, acme->id, workload->id,
        ((EinsoraWorkloadEvent *)g_ptr_array_index(first, 1))->seq, 100, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(rest->len, ==, 4);
    for (guint i = 0; i < 3; i++)
        assert_event_equal(g_ptr_array_index(rest, i), g_ptr_array_index(whole, i + 2));
    assert_event_equal(g_ptr_array_index(rest, 3), added);

    /* Another tenant's page of it is not found, whatever the position. */
    theirs = einsora_store_list_events_page(f->store, globex->id, workload->id, 0, 100, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(theirs);
}

static void
test_api_token_pages(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraUser) ann = add_user(f, acme->id, "ann@acme.example");
    g_autoptr(EinsoraUser) bob = add_user(f, acme->id, "bob@acme.example");
    g_autoptr(GPtrArray) whole = NULL;
    g_autoptr(GPtrArray) walked =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_api_token_free);
    g_autofree gchar *after_created_at = NULL;
    g_autofree gchar *after_id = NULL;
    g_autofree gchar *same_time = tick(f);

    for (guint i = 0; i < 5; i++) {
        g_autofree gchar *name = g_strdup_printf("token-%u", i);
        g_autoptr(EinsoraApiToken) token = api_token_new_for(f, ann, name);
        g_autoptr(EinsoraApiToken) bobs = add_api_token(f, bob, name);

        /* Two in the same microsecond: the ID orders them. */
        if (i >= 2 && i < 4)
            replace_string(&token->created_at, g_strdup(same_time));
        g_assert_true(einsora_store_insert_api_token(f->store, token, &error));
        g_assert_no_error(error);
    }
    whole = list_api_tokens(f, acme->id, ann->id);
    g_assert_cmpuint(whole->len, ==, 5);
    for (;;) {
        g_autoptr(GPtrArray) page = einsora_store_list_api_tokens_page(
            f->store, acme->id, ann->id, after_created_at, after_id, 2, &error);
        EinsoraApiToken *last;

        g_assert_no_error(error);
        g_assert_cmpuint(page->len, <=, 2);
        if (page->len == 0)
            break;
        last = g_ptr_array_index(page, page->len - 1);
        replace_string(&after_created_at, g_strdup(last->created_at));
        replace_string(&after_id, g_strdup(last->id));
        for (guint i = 0; i < page->len; i++)
            g_ptr_array_add(walked, einsora_api_token_copy(g_ptr_array_index(page, i)));
    }
    g_assert_cmpuint(walked->len, ==, whole->len);
    for (guint i = 0; i < whole->len; i++) {
        EinsoraApiToken *token = g_ptr_array_index(walked, i);
        assert_api_token_equal(token, g_ptr_array_index(whole, i));
        g_assert_cmpstr(token->user_id, ==, ann->id);
    }
}

/* Usage accounting: what the metering step reads and writes. */

static EinsoraUsageRecord *
usage_record_new_for(Fixture *f, const EinsoraWorkload *workload, const char *gpu_class,
                     const char *hour_start, gint64 seconds)
{
    EinsoraUsageRecord *record = einsora_usage_record_new();

    record->id = new_id(f);
    record->tenant_id = g_strdup(workload->tenant_id);
    record->workload_id = g_strdup(workload->id);
    record->region = g_strdup(workload->region);
    record->gpu_class = g_strdup(gpu_class);
    record->hour_start = g_strdup(hour_start);
    record->seconds = seconds;
    record->gpu_seconds = seconds;
    record->created_at = tick(f);
    return record;
}

static GPtrArray *
usage_records_new(void)
{
    return g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_record_free);
}

static GPtrArray *
list_usage(Fixture *f, const char *tenant_id, const char *from, const char *to)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *records = einsora_store_list_usage_records(f->store, tenant_id, from, to, &error);

    g_assert_no_error(error);
    g_assert_nonnull(records);
    return records;
}

static void
replace_usage(Fixture *f, const EinsoraWorkload *workload, GPtrArray *records)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_store_replace_usage_records(f->store, workload->tenant_id, workload->id,
                                                      records, &error));
    g_assert_no_error(error);
}

#define HOUR_9 "2026-01-01T09:00:00.000000Z"
#define HOUR_10 "2026-01-01T10:00:00.000000Z"
#define HOUR_11 "2026-01-01T11:00:00.000000Z"
#define HOUR_12 "2026-01-01T12:00:00.000000Z"

/* A re-write keeps what it had (ID, created_at), takes the new seconds,
 * adds what is new and drops what the new set lacks; the same set twice
 * changes nothing. Two classes in one hour are two records. */
static void
test_usage_replace(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraWorkload) workload = add_workload(f, acme->id, "notebook");
    g_autoptr(GPtrArray) first = usage_records_new();
    g_autoptr(GPtrArray) second = usage_records_new();
    g_autoptr(GPtrArray) got = NULL;
    g_autoptr(GPtrArray) again = NULL;
    const EinsoraUsageRecord *r;

    g_ptr_array_add(first, usage_record_new_for(f, workload, "l40s-48gb", HOUR_9, 1200));
    g_ptr_array_add(first, usage_record_new_for(f, workload, "l40s-48gb", HOUR_10, 600));
    g_ptr_array_add(first, usage_record_new_for(f, workload, "cpu-4c-16g", HOUR_10, 300));
    replace_usage(f, workload, first);
    got = list_usage(f, acme->id, HOUR_9, HOUR_12);
    g_assert_cmpuint(got->len, ==, 3);

    /* 10:00 on l40s grows, 09:00 goes, 11:00 is new. */
    g_ptr_array_add(second, usage_record_new_for(f, workload, "l40s-48gb", HOUR_10, 3600));
    g_ptr_array_add(second, usage_record_new_for(f, workload, "cpu-4c-16g", HOUR_10, 300));
    g_ptr_array_add(second, usage_record_new_for(f, workload, "l40s-48gb", HOUR_11, 42));
    replace_usage(f, workload, second);
    again = list_usage(f, acme->id, HOUR_9, HOUR_12);
    g_assert_cmpuint(again->len, ==, 3);
    /* By hour, then workload, then class. */
    r = g_ptr_array_index(again, 0);
    g_assert_cmpstr(r->hour_start, ==, HOUR_10);
    g_assert_cmpstr(r->gpu_class, ==, "cpu-4c-16g");
    g_assert_cmpint(r->seconds, ==, 300);
    g_assert_cmpstr(r->id, ==, ((EinsoraUsageRecord *)g_ptr_array_index(first, 2))->id);
    r = g_ptr_array_index(again, 1);
    g_assert_cmpstr(r->hour_start, ==, HOUR_10);
    g_assert_cmpstr(r->gpu_class, ==, "l40s-48gb");
    g_assert_cmpint(r->seconds, ==, 3600);
    g_assert_cmpint(r->gpu_seconds, ==, 3600);
    g_assert_cmpstr(r->id, ==, ((EinsoraUsageRecord *)g_ptr_array_index(first, 1))->id);
    g_assert_cmpstr(r->created_at, ==,
                    ((EinsoraUsageRecord *)g_ptr_array_index(first, 1))->created_at);
    g_assert_cmpstr(r->tenant_id, ==, acme->id);
    g_assert_cmpstr(r->workload_id, ==, workload->id);
    g_assert_cmpstr(r->region, ==, "home");
    r = g_ptr_array_index(again, 2);
    g_assert_cmpstr(r->hour_start, ==, HOUR_11);
    g_assert_cmpint(r->seconds, ==, 42);
    g_assert_cmpstr(r->id, ==, ((EinsoraUsageRecord *)g_ptr_array_index(second, 2))->id);

    /* An empty set leaves the workload with nothing. */
    {
        g_autoptr(GPtrArray) none = usage_records_new();
        g_autoptr(GPtrArray) left = NULL;

        replace_usage(f, workload, none);
        left = list_usage(f, acme->id, HOUR_9, HOUR_12);
        g_assert_cmpuint(left->len, ==, 0);
    }
}

/* One workload's records are its own, and a tenant reads only its own,
 * in [from, to). */
static void
test_usage_scoped(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) north = add_tenant(f, "north", FALSE);
    g_autoptr(EinsoraWorkload) mine = add_workload(f, acme->id, "mine");
    g_autoptr(EinsoraWorkload) sibling = add_workload(f, acme->id, "sibling");
    g_autoptr(EinsoraWorkload) theirs = add_workload(f, north->id, "theirs");
    g_autoptr(GPtrArray) records = usage_records_new();
    g_autoptr(GPtrArray) sibling_records = usage_records_new();
    g_autoptr(GPtrArray) their_records = usage_records_new();
    g_autoptr(GPtrArray) stolen = usage_records_new();
    g_autoptr(GPtrArray) got = NULL;
    g_autoptr(GPtrArray) window = NULL;
    g_autoptr(GPtrArray) north_got = NULL;

    g_ptr_array_add(records, usage_record_new_for(f, mine, "l40s-48gb", HOUR_9, 100));
    g_ptr_array_add(records, usage_record_new_for(f, mine, "l40s-48gb", HOUR_11, 200));
    replace_usage(f, mine, records);
    g_ptr_array_add(sibling_records, usage_record_new_for(f, sibling, "l40s-48gb", HOUR_9, 300));
    replace_usage(f, sibling, sibling_records);
    g_ptr_array_add(their_records, usage_record_new_for(f, theirs, "l40s-48gb", HOUR_9, 400));
    replace_usage(f, theirs, their_records);

    /* Re-writing one workload leaves its sibling's alone. */
    replace_usage(f, mine, records);
    got = list_usage(f, acme->id, HOUR_9, HOUR_12);
    g_assert_cmpuint(got->len, ==, 3);
    for (guint i = 0; i < got->len; i++)
        g_assert_cmpstr(((EinsoraUsageRecord *)g_ptr_array_index(got, i))->tenant_id, ==, acme->id);
    window = list_usage(f, acme->id, HOUR_10, HOUR_11);
    g_assert_cmpuint(window->len, ==, 0);
    g_clear_pointer(&window, g_ptr_array_unref);
    window = list_usage(f, acme->id, HOUR_11, HOUR_12);
    g_assert_cmpuint(window->len, ==, 1);
    g_assert_cmpint(((EinsoraUsageRecord *)g_ptr_array_index(window, 0))->seconds, ==, 200);
    north_got = list_usage(f, north->id, HOUR_9, HOUR_12);
    g_assert_cmpuint(north_got->len, ==, 1);
    g_assert_cmpint(((EinsoraUsageRecord *)g_ptr_array_index(north_got, 0))->seconds, ==, 400);

    /* Another tenant's workload is not found, and nothing is written. */
    {
        EinsoraUsageRecord *record = usage_record_new_for(f, theirs, "l40s-48gb", HOUR_10, 1);
        replace_string(&record->tenant_id, g_strdup(acme->id));
        g_ptr_array_add(stolen, record);
    }
    g_assert_false(
        einsora_store_replace_usage_records(f->store, acme->id, theirs->id, stolen, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_pointer(&north_got, g_ptr_array_unref);
    north_got = list_usage(f, north->id, HOUR_9, HOUR_12);
    g_assert_cmpuint(north_got->len, ==, 1);
}

static void
test_metering_cursor(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *now = tick(f);
    gint64 seq = -1;

    g_assert_true(einsora_store_get_metering_cursor(f->store, "usage", &seq, &error));
    g_assert_no_error(error);
    g_assert_cmpint(seq, ==, 0);
    g_assert_true(einsora_store_set_metering_cursor(f->store, "usage", 17, now, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_set_metering_cursor(f->store, "usage", 42, now, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_get_metering_cursor(f->store, "usage", &seq, &error));
    g_assert_no_error(error);
    g_assert_cmpint(seq, ==, 42);
    g_assert_true(einsora_store_get_metering_cursor(f->store, "usage:elsewhere", &seq, &error));
    g_assert_no_error(error);
    g_assert_cmpint(seq, ==, 0);
}

static gboolean
lists_workload(GPtrArray *workloads, const char *id)
{
    for (guint i = 0; i < workloads->len; i++)
        if (g_strcmp0(((EinsoraWorkload *)g_ptr_array_index(workloads, i))->id, id) == 0)
            return TRUE;
    return FALSE;
}

/* What metering looks at: workloads of every tenant with an event after
 * a seq (deleted ones too), and those in a state. */
static void
test_workload_list_for_metering(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) acme = add_tenant(f, "acme", FALSE);
    g_autoptr(EinsoraTenant) north = add_tenant(f, "north", FALSE);
    g_autoptr(EinsoraWorkload) old = add_workload(f, acme->id, "old");
    g_autoptr(EinsoraWorkload) gone = workload_new_for(f, acme->id, "gone");
    g_autoptr(EinsoraWorkload) theirs = workload_new_for(f, north->id, "theirs");
    g_autoptr(EinsoraWorkloadEvent) old_event = event_new_for(
        f, old, FALSE, EINSORA_WORKLOAD_STATE_PENDING, EINSORA_WORKLOAD_STATE_PENDING, "created");
    g_autoptr(EinsoraWorkloadEvent) gone_event = NULL;
    g_autoptr(EinsoraWorkloadEvent) their_event = NULL;
    g_autoptr(GPtrArray) changed = NULL;
    g_autoptr(GPtrArray) running = NULL;
    g_autoptr(GPtrArray) all = NULL;
    gint64 seq = 0;

    gone->state = EINSORA_WORKLOAD_STATE_DELETED;
    insert_workload(f, gone);
    theirs->state = EINSORA_WORKLOAD_STATE_RUNNING;
    replace_string(&theirs->placed_class, g_strdup("l40s-48gb"));
    insert_workload(f, theirs);
    append_event(f, old_event);
    g_assert_true(einsora_store_last_event_seq(f->store, acme->id, &seq, &error));
    g_assert_no_error(error);
    gone_event = event_new_for(f, gone, TRUE, EINSORA_WORKLOAD_STATE_DELETING,
                               EINSORA_WORKLOAD_STATE_DELETED, "gone");
    append_event(f, gone_event);
    their_event = event_new_for(f, theirs, TRUE, EINSORA_WORKLOAD_STATE_PROVISIONING,
                                EINSORA_WORKLOAD_STATE_RUNNING, "ready");
    append_event(f, their_event);

    changed = einsora_store_list_workloads_with_events_after(f->store, seq, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(changed->len, ==, 2);
    g_assert_true(lists_workload(changed, gone->id));
    g_assert_true(lists_workload(changed, theirs->id));
    all = einsora_store_list_workloads_with_events_after(f->store, 0, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(all->len, ==, 3);
    /* Oldest first. */
    g_assert_cmpstr(((EinsoraWorkload *)g_ptr_array_index(all, 0))->id, ==, old->id);

    running =
        einsora_store_list_workloads_in_state(f->store, EINSORA_WORKLOAD_STATE_RUNNING, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(running->len, ==, 1);
    g_assert_cmpstr(((EinsoraWorkload *)g_ptr_array_index(running, 0))->id, ==, theirs->id);
}

static void
test_ready(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_store_check_ready(f->store, &error));
    g_assert_no_error(error);
}

typedef void (*ConformanceTestFunc)(Fixture *f, gconstpointer data);

static const struct {
    const char *path;
    ConformanceTestFunc func;
} conformance_tests[] = {
    {"tenant/round-trip", test_tenant_round_trip},
    {"tenant/duplicate-id-conflicts", test_tenant_duplicate_id},
    {"tenant/duplicate-name-conflicts", test_tenant_duplicate_name},
    {"machine/round-trip", test_machine_round_trip},
    {"machine/duplicate-id-conflicts", test_machine_duplicate_id},
    {"machine/unknown-tenant-not-found", test_machine_unknown_tenant},
    {"machine/other-tenant-not-found", test_machine_other_tenant},
    {"machine/list-order", test_machine_list_order},
    {"workload/round-trip", test_workload_round_trip},
    {"workload/duplicate-id-conflicts", test_workload_duplicate_id},
    {"workload/unknown-tenant-not-found", test_workload_unknown_tenant},
    {"workload/unknown-not-found", test_workload_unknown},
    {"workload/other-tenant-not-found", test_workload_other_tenant},
    {"workload/list-order", test_workload_list_order},
    {"workload/list-region", test_workload_list_region},
    {"lease/one-holder-at-a-time", test_lease},
    {"tenant/by-name", test_tenant_by_name},
    {"machine/hub-view", test_machine_hub_view},
    {"machine/agent-version-and-clock", test_machine_agent_health},
    {"workload/list-include-deleted", test_workload_list_include_deleted},
    {"workload/count-with-model", test_workload_count_with_model},
    {"workload/count-by-kind-and-state", test_workload_count_by_kind_and_state},
    {"workload/model-only-endpoints", test_workload_model_only_endpoints},
    {"workload/pages-walk-the-whole-list", test_workload_pages},
    {"workload/pages-stable-under-inserts-and-deletes", test_workload_pages_stable},
    {"cas/success-bumps-version", test_cas_success},
    {"cas/stale-version-conflicts", test_cas_stale_version},
    {"cas/wrong-state-conflicts", test_cas_wrong_state},
    {"cas/unknown-machine-not-found", test_cas_unknown_machine},
    {"quota/missing-is-zero", test_quota_missing_is_zero},
    {"quota/set-and-update", test_quota_set_and_update},
    {"quota/per-tenant", test_quota_per_tenant},
    {"quota/gpus-by-state", test_quota_gpus_by_state},
    {"event/round-trip-in-append-order", test_event_round_trip_and_order},
    {"event/duplicate-id-conflicts", test_event_duplicate_id},
    {"event/unknown-workload-not-found", test_event_unknown_workload},
    {"event/append-only", test_event_append_only},
    {"event/tenant-feed-scoped-ordered-paged", test_event_tenant_feed},
    {"event/timeline-pages-by-seq-scoped", test_event_pages},
    {"user/round-trip", test_user_round_trip},
    {"user/duplicate-email-conflicts", test_user_duplicate_email},
    {"user/unknown-tenant-not-found", test_user_unknown_tenant},
    {"user/other-tenant-not-found", test_user_other_tenant},
    {"user/list-all", test_user_list_all},
    {"user/disable-and-enable", test_user_disable},
    {"user/password", test_user_password},
    {"session/revoke-user", test_session_revoke_user},
    {"tenant/list-all", test_tenant_list_all},
    {"machine/sharing", test_machine_sharing},
    {"audit/trail", test_audit_trail},
    {"api-token/round-trip", test_api_token_round_trip},
    {"api-token/duplicate-conflicts", test_api_token_duplicate},
    {"api-token/other-tenant-user-not-found", test_api_token_other_tenant_user},
    {"api-token/list-own-oldest-first-with-revoked", test_api_token_list},
    {"api-token/pages-own-only", test_api_token_pages},
    {"api-token/revoke-own-only-keeps-first-time", test_api_token_revoke},
    {"api-token/touch-never-goes-back", test_api_token_touch},
    {"session/round-trip", test_session_round_trip},
    {"session/other-tenant-not-found", test_session_other_tenant},
    {"session/revoke-keeps-first-time", test_session_revoke},
    {"idempotency/round-trip-per-tenant", test_idempotency_round_trip},
    {"idempotency/duplicate-conflicts-until-expired", test_idempotency_duplicate},
    {"idempotency/unknown-tenant-not-found", test_idempotency_unknown_tenant},
    {"idempotency/delete-expired", test_idempotency_delete_expired},
    {"enrolment/take-once-makes-machine", test_enrolment_take_once},
    {"enrolment/unknown-expired-orphaned-refused", test_enrolment_refused},
    {"access-ticket/take-once", test_access_ticket_take_once},
    {"access-ticket/expired-not-found-and-deleted", test_access_ticket_expired},
    {"access-ticket/take-deletes-expired", test_access_ticket_housekeeping},
    {"access-ticket/other-tenant-unknown-duplicate-refused", test_access_ticket_insert_refused},
    {"access-ticket/take-joins-open-transaction", test_access_ticket_take_in_transaction},
    {"access-ticket/only-hashes-stored", test_access_ticket_schema},
    {"usage/replace-keeps-ids-updates-and-drops", test_usage_replace},
    {"usage/scoped-by-workload-tenant-and-hours", test_usage_scoped},
    {"usage/metering-cursor", test_metering_cursor},
    {"workload/list-for-metering", test_workload_list_for_metering},
    {"transaction/commit", test_transaction_commit},
    {"transaction/rollback-on-false", test_transaction_rollback_on_false},
    {"transaction/refused-write-goes-on", test_transaction_refused_write_goes_on},
    {"transaction/nested-begin-fails", test_transaction_nested_begin_fails},
    {"transaction/commit-without-begin-fails", test_transaction_commit_without_begin},
    {"schema/columns", test_schema_columns},
    {"schema/indexes", test_schema_indexes},
    {"schema/checks", test_schema_checks},
    {"schema/auth-checks", test_schema_auth_checks},
    {"ready", test_ready},
};

void
einsora_store_conformance_add_tests(const EinsoraStoreHarness *harness)
{
    g_return_if_fail(harness != NULL && harness->name != NULL && harness->open_fresh != NULL);

    for (guint i = 0; i < G_N_ELEMENTS(conformance_tests); i++) {
        g_autofree gchar *path =
            g_strdup_printf("/store/%s/%s", harness->name, conformance_tests[i].path);
        g_test_add(path, Fixture, harness, fixture_set_up, conformance_tests[i].func,
                   fixture_tear_down);
    }
}
