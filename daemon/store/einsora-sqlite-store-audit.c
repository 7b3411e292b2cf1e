/* The audit trail: what admins changed, per tenant (docs/adr/0049). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

#define AUDIT_COLUMNS "id, tenant_id, at, actor, actor_user_id, action, target, detail"

static EinsoraAuditEvent *
audit_event_from_row(sqlite3_stmt *stmt)
{
    EinsoraAuditEvent *event = einsora_audit_event_new();

    event->id = column_strdup(stmt, 0);
    event->tenant_id = column_strdup(stmt, 1);
    event->at = column_strdup(stmt, 2);
    event->actor = column_strdup(stmt, 3);
    event->actor_user_id = column_strdup(stmt, 4);
    event->action = column_strdup(stmt, 5);
    event->target = column_strdup(stmt, 6);
    event->detail = column_strdup(stmt, 7);
    return event;
}

gboolean
einsora_sqlite_store_insert_audit_event(EinsoraStore *store, const EinsoraAuditEvent *event,
                                        GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO audit_events (" AUDIT_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, event->id);
    bind_text(stmt, 2, event->tenant_id);
    bind_text(stmt, 3, event->at);
    bind_text(stmt, 4, event->actor);
    bind_text(stmt, 5, event->actor_user_id);
    bind_text(stmt, 6, event->action);
    bind_text(stmt, 7, event->target);
    bind_text(stmt, 8, event->detail);
    return einsora_sqlite_store_step_write(self, stmt, "an audit event with this ID exists",
                                           "no such tenant", error);
}

GPtrArray *
einsora_sqlite_store_list_audit_events(EinsoraStore *store, const char *tenant_id, guint limit,
                                       GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* The latest @limit, given back oldest first. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self,
                "SELECT * FROM (SELECT " AUDIT_COLUMNS " FROM audit_events WHERE tenant_id = ?1 "
                "ORDER BY at DESC, id DESC LIMIT ?2) ORDER BY at, id",
                error);
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_audit_event_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    sqlite3_bind_int64(stmt, 2, limit);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(events, audit_event_from_row(stmt));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&events);
}
