/* Machine enrolments: one-time tokens for agents that join over the
 * network (docs/adr/0055). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns enrolment_from_row reads, in its order. */
#define ENROLMENT_COLUMNS                                                                          \
    "id, tenant_id, token_sha256, name, region, created_by, created_at, expires_at, used_at, "     \
    "machine_id"

static EinsoraEnrolment *
enrolment_from_row(sqlite3_stmt *stmt)
{
    EinsoraEnrolment *enrolment = einsora_enrolment_new();

    enrolment->id = column_strdup(stmt, 0);
    enrolment->tenant_id = column_strdup(stmt, 1);
    enrolment->hash = column_strdup(stmt, 2);
    enrolment->name = column_strdup(stmt, 3);
    enrolment->region = column_strdup(stmt, 4);
    enrolment->created_by = column_strdup(stmt, 5);
    enrolment->created_at = column_strdup(stmt, 6);
    enrolment->expires_at = column_strdup(stmt, 7);
    enrolment->used_at = column_strdup(stmt, 8);
    enrolment->machine_id = column_strdup(stmt, 9);
    return enrolment;
}

gboolean
einsora_sqlite_store_insert_enrolment(EinsoraStore *store, const EinsoraEnrolment *enrolment,
                                      GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        einsora_sqlite_store_prepare_write(self,
                                           "INSERT INTO machine_enrolments (" ENROLMENT_COLUMNS ") "
                                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, NULL)",
                                           error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, enrolment->id);
    bind_text(stmt, 2, enrolment->tenant_id);
    bind_text(stmt, 3, enrolment->hash);
    bind_text(stmt, 4, enrolment->name);
    bind_text(stmt, 5, enrolment->region);
    bind_text(stmt, 6, enrolment->created_by);
    bind_text(stmt, 7, enrolment->created_at);
    bind_text(stmt, 8, enrolment->expires_at);
    return einsora_sqlite_store_step_write(self, stmt, "an enrolment with this hash already exists",
                                           "no such tenant", error);
}

EinsoraEnrolment *
einsora_sqlite_store_take_enrolment(EinsoraStore *store, const char *token_sha256, const char *now,
                                    const char *machine_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* One statement: of two racing takes only the one whose UPDATE
     * returns the row has it. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE machine_enrolments SET used_at = ?2, machine_id = ?3 "
        "WHERE token_sha256 = ?1 AND used_at IS NULL AND expires_at > ?2 "
        "RETURNING " ENROLMENT_COLUMNS,
        error);
    g_autoptr(EinsoraEnrolment) taken = NULL;
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, token_sha256);
    bind_text(stmt, 2, now);
    bind_text(stmt, 3, machine_id);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        taken = enrolment_from_row(stmt);
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    if (taken == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such enrolment, or it was used or expired");
        return NULL;
    }
    return g_steal_pointer(&taken);
}
