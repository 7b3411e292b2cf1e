/* The conformance suite every EinsoraStore implementation must pass: tenant
 * scoping, compare-and-swap, the append-only timeline, transactions, and
 * the schema. A store's test registers it with a harness that opens fresh,
 * migrated stores. */
#pragma once

#include <glib.h>

#include "einsora-store.h"

G_BEGIN_DECLS

typedef struct {
    const char *name; /* tests are named /store/<name>/... */
    /* A new, empty, fully migrated store; the harness cleans up whatever
     * backs it when the store is finalized. */
    EinsoraStore *(*open_fresh)(gpointer data, GError **error);
    /* Runs SQL as is, outside the store's methods. */
    gboolean (*raw_exec)(EinsoraStore *store, const char *sql, GError **error);
    /* The column names of @table, and the names of the explicitly created
     * indexes (not those a store makes for primary keys by itself). */
    GStrv (*list_columns)(EinsoraStore *store, const char *table);
    GStrv (*list_indexes)(EinsoraStore *store);
    gpointer data;
} EinsoraStoreHarness;

/* @harness must outlive the tests (g_test_run()). */
void einsora_store_conformance_add_tests(const EinsoraStoreHarness *harness);

/* The tables of the schema, NULL-terminated, for a store's own checks. */
const char *const *einsora_store_conformance_tables(void);

G_END_DECLS
