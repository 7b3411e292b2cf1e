/* The networked agent's local store (agent/einsora-agent-local-store.c):
 * reports survive a restart in order and go once acknowledged; numbers
 * only grow, across compactions; a torn last append is dropped and the
 * file cut back, while damage before the end fails the open and keeps
 * the file; the outbox is bounded; the desired state is replaced whole. */
#include <glib/gstdio.h>
#include <string.h>

#include "einsora-agent-local-store.h"
#include "einsora-test-dir.h"

static EinsoraWorkloadStatus *
status_new(const char *id, gint64 attempt, EinsoraStatusCode code, gint64 generation)
{
    EinsoraWorkloadStatus *status = einsora_workload_status_new();

    status->workload_id = g_strdup(id);
    status->attempt = attempt;
    status->mode = EINSORA_WORKLOAD_MODE_RUN;
    status->code = code;
    status->applied_generation = generation;
    return status;
}

static void
append(EinsoraAgentLocalStore *store, gint64 attempt, guint64 expected_seq)
{
    g_autoptr(EinsoraWorkloadStatus) status =
        status_new("01900000-0000-7000-8000-000000000001", attempt, EINSORA_STATUS_CODE_RUNNING, 7);
    g_autoptr(GError) error = NULL;
    guint64 seq = 0;

    g_assert_true(einsora_agent_local_store_append(store, status, &seq, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(seq, ==, expected_seq);
}

static void
assert_pending(EinsoraAgentLocalStore *store, const guint64 *seqs, guint n)
{
    g_autoptr(GPtrArray) pending = einsora_agent_local_store_pending(store);

    g_assert_cmpuint(pending->len, ==, n);
    for (guint i = 0; i < n; i++) {
        const EinsoraOutboxRecord *record = g_ptr_array_index(pending, i);
        g_assert_cmpuint(record->seq, ==, seqs[i]);
        g_assert_cmpint(record->status->attempt, ==, (gint64)seqs[i]);
        g_assert_cmpint(record->status->applied_generation, ==, 7);
    }
}

static EinsoraAgentLocalStore *
open_store(const char *dir)
{
    g_autoptr(GError) error = NULL;
    EinsoraAgentLocalStore *store = einsora_agent_local_store_open(dir, &error);

    g_assert_no_error(error);
    g_assert_nonnull(store);
    return store;
}

static void
test_replay_and_acknowledge(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *store_dir = g_build_filename(dir, "agent", NULL);
    g_autoptr(GError) error = NULL;

    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(store_dir);
        append(store, 1, 1);
        append(store, 2, 2);
        append(store, 3, 3);
    }
    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(store_dir);
        assert_pending(store, (const guint64[]){1, 2, 3}, 3);
        g_assert_true(einsora_agent_local_store_acknowledge(store, 2, &error));
        g_assert_no_error(error);
        assert_pending(store, (const guint64[]){3}, 1);
        append(store, 4, 4);
    }
    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(store_dir);
        assert_pending(store, (const guint64[]){3, 4}, 2);
        g_assert_true(einsora_agent_local_store_acknowledge(store, 4, &error));
        assert_pending(store, NULL, 0);
    }
    /* Empty after compaction, the numbers still grow: an old report can't
     * come back under a new number. */
    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(store_dir);
        assert_pending(store, NULL, 0);
        append(store, 5, 5);
    }
    einsora_test_dir_remove(dir);
}

static void
test_torn_and_damaged(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *log = g_build_filename(dir, "outbox.log", NULL);
    g_autofree gchar *whole = NULL;
    g_autoptr(GError) error = NULL;
    gsize length = 0;

    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(dir);
        append(store, 1, 1);
        append(store, 2, 2);
    }
    g_assert_true(g_file_get_contents(log, &whole, &length, NULL));
    /* A crash in the middle of the third append. */
    {
        g_autofree gchar *torn = g_strconcat(whole, "3 abc {\"workload_id\":", NULL);
        g_assert_true(g_file_set_contents(log, torn, -1, NULL));
    }
    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(dir);
        g_autofree gchar *after = NULL;
        assert_pending(store, (const guint64[]){1, 2}, 2);
        g_assert_true(g_file_get_contents(log, &after, NULL, NULL));
        g_assert_cmpstr(after, ==, whole);
        append(store, 3, 3);
    }
    {
        g_autoptr(EinsoraAgentLocalStore) store = open_store(dir);
        assert_pending(store, (const guint64[]){1, 2, 3}, 3);
    }
    /* A changed byte in the first record: refused, the file left alone. */
    {
        g_autofree gchar *contents = NULL;
        g_autofree gchar *after = NULL;
        g_autoptr(EinsoraAgentLocalStore) store = NULL;
        gchar *attempt;

        g_assert_true(g_file_get_contents(log, &contents, NULL, NULL));
        attempt = strstr(contents, "\"attempt\":1");
        g_assert_nonnull(attempt);
        attempt[strlen("\"attempt\":")] = '9';
        g_assert_true(g_file_set_contents(log, contents, -1, NULL));
        store = einsora_agent_local_store_open(dir, &error);
        g_assert_null(store);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        g_assert_nonnull(strstr(error->message, "checksum"));
        g_assert_true(g_file_get_contents(log, &after, NULL, NULL));
        g_assert_cmpstr(after, ==, contents);
    }
    einsora_test_dir_remove(dir);
}

static void
test_bounded(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(EinsoraAgentLocalStore) store = open_store(dir);
    g_autoptr(EinsoraWorkloadStatus) status =
        status_new("01900000-0000-7000-8000-000000000001", 1, EINSORA_STATUS_CODE_RUNNING, 7);
    g_autoptr(GError) error = NULL;

    for (guint i = 0; i < EINSORA_AGENT_OUTBOX_MAX; i++)
        g_assert_true(einsora_agent_local_store_append(store, status, NULL, NULL));
    g_assert_false(einsora_agent_local_store_append(store, status, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE);
    g_clear_error(&error);
    g_assert_true(einsora_agent_local_store_acknowledge(store, 10, &error));
    g_assert_true(einsora_agent_local_store_append(store, status, NULL, &error));
    g_assert_no_error(error);
    einsora_test_dir_remove(dir);
}

static void
test_desired_state(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(EinsoraAgentLocalStore) store = open_store(dir);
    g_autoptr(EinsoraDesiredState) state = einsora_desired_state_new();
    g_autoptr(EinsoraDesiredState) loaded = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_null(einsora_agent_local_store_load_desired(store, &error));
    g_assert_no_error(error);
    state->machine_id = g_strdup("01900000-0000-7000-8000-00000000000a");
    state->generation = 12;
    g_assert_true(einsora_agent_local_store_save_desired(store, state, &error));
    state->generation = 13;
    g_assert_true(einsora_agent_local_store_save_desired(store, state, &error));
    g_assert_no_error(error);
    loaded = einsora_agent_local_store_load_desired(store, &error);
    g_assert_no_error(error);
    g_assert_nonnull(loaded);
    g_assert_cmpint(loaded->generation, ==, 13);
    g_assert_true(einsora_desired_state_same_content(loaded, state));
    einsora_test_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/agent-local-store/replay-and-acknowledge", test_replay_and_acknowledge);
    g_test_add_func("/agent-local-store/torn-and-damaged", test_torn_and_damaged);
    g_test_add_func("/agent-local-store/bounded", test_bounded);
    g_test_add_func("/agent-local-store/desired-state", test_desired_state);
    return g_test_run();
}
