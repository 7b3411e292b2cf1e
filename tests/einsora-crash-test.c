/* kill -9 crash consistency (issue 8): a load generator creates, stops,
 * starts and deletes workloads on the real daemon (sim driver) while the
 * daemon is killed and restarted on the same port and data directory 20
 * times. Afterwards, read straight from the database: every acknowledged
 * create exists and no Idempotency-Key made two; each workload's state is
 * where its timeline ends; timelines have no gaps; the store is intact;
 * and nothing was stopped, started or deleted that nobody asked to be.
 *
 * And group-committed admission (issue 15, docs/adr/0028): big admission
 * passes killed at random points, the database checked after every kill:
 * each workload waiting or admitted whole, capacity never over-committed,
 * no event on the feed and no start by the agent that the store lacks,
 * timelines only ever appended to.
 *
 * On either store (EINSORA_TEST_STORE=postgres: the Postgres one), read
 * through einsora-test-daemon-sql, in SQL both dialects take. */
#include "einsora-test-daemon-sql.h"

#define JSON "application/json"
/* Under the sanitizers the daemon is tens of times slower (it unwinds
 * its stack at every allocation) and each restart replays the hub's
 * whole desired state: fewer kills there, all 20 in the plain tree. */
#if defined(__SANITIZE_ADDRESS__)
#define KILLS 5
#else
#define KILLS 20
#endif
#define LOOPS 4
/* Past this many workloads not yet asked to be deleted, deletes replace
 * creates, so the controller's passes stay short. */
#define LIVE_MAX 60
#define PROBLEMS_SHOWN 30
/* Admission groups: kills, workloads created before each (admitted in one
 * big pass after the restart), and the machine's CPUs, fewer than all of
 * them so later passes queue too (each is cpu-1c-2g: one CPU). */
#if defined(__SANITIZE_ADDRESS__)
#define GROUP_KILLS 3
#else
#define GROUP_KILLS 8
#endif
#define GROUP_BATCH 200
#define GROUP_CPUS 500

typedef enum {
    OP_CREATE,
    OP_STOP,
    OP_START,
    OP_DELETE,
    OP_COUNT,
} OpKind;

static const char *const op_names[] = {"create", "stop", "start", "delete"};

/* One create: its key (also the workload's name, so the database says
 * which key made which workload) and, once answered 201, its ID. */
typedef struct {
    gchar *key;
    gchar *body;
    gchar *id;
} Create;

/* What the load asked of one workload it knows the ID of. */
typedef struct {
    gchar *id;
    guint sent[OP_COUNT];
    guint acked[OP_COUNT];
} Known;

typedef struct {
    EinsoraTestDaemon *daemon;
    SoupSession *session;
    GRand *rand;
    GPtrArray *creates; /* Create* */
    GHashTable *known;  /* id -> Known* */
    GPtrArray *live;    /* ids not yet sent a delete */
    gboolean running;
    guint busy; /* loops with a request in flight */
    gboolean loop_busy[LOOPS];
    guint sent[OP_COUNT];
    guint acked[OP_COUNT];     /* 2xx */
    guint refused[OP_COUNT];   /* 4xx */
    guint uncertain[OP_COUNT]; /* no answer, or 5xx: may or may not have happened */
} Load;

typedef struct {
    Load *load;
    guint loop;
    OpKind kind;
    Create *create; /* OP_CREATE */
    Known *target;  /* the others */
} Op;

static void
create_free(Create *create)
{
    g_free(create->key);
    g_free(create->body);
    g_free(create->id);
    g_free(create);
}

static void
known_free(Known *known)
{
    g_free(known->id);
    g_free(known);
}

static Known *
known_add(Load *load, const char *id)
{
    Known *known = g_hash_table_lookup(load->known, id);

    if (known != NULL)
        return known;
    known = g_new0(Known, 1);
    known->id = g_strdup(id);
    g_hash_table_insert(load->known, known->id, known);
    g_ptr_array_add(load->live, g_strdup(id));
    return known;
}

static void loop_next(Load *load, guint loop);

static void
op_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Op *op = user_data;
    Load *load = op->load;
    SoupMessage *message = soup_session_get_async_result_message(SOUP_SESSION(source), result);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &error);
    guint status = bytes != NULL ? soup_message_get_status(message) : 0;

    if (bytes == NULL || status >= 500) {
        load->uncertain[op->kind]++;
    } else if (status >= 200 && status < 300) {
        load->acked[op->kind]++;
        if (op->kind == OP_CREATE) {
            g_autoptr(JsonParser) parser = json_parser_new();
            JsonObject *object;

            g_assert_cmpuint(status, ==, 201);
            g_assert_true(json_parser_load_from_data(parser, g_bytes_get_data(bytes, NULL),
                                                     (gssize)g_bytes_get_size(bytes), NULL));
            object = json_node_get_object(json_parser_get_root(parser));
            op->create->id = g_strdup(json_object_get_string_member(object, "id"));
            g_assert_cmpstr(json_object_get_string_member(object, "name"), ==, op->create->key);
            known_add(load, op->create->id);
        } else {
            op->target->acked[op->kind]++;
        }
    } else {
        /* A create's body is always valid, so only an action is refused
         * (409: not from this state; 404: deleted). */
        g_assert_cmpint(op->kind, !=, OP_CREATE);
        g_assert_true(status == 404 || status == 409);
        load->refused[op->kind]++;
    }
    load->loop_busy[op->loop] = FALSE;
    load->busy--;
    if (load->running)
        loop_next(load, op->loop);
    g_free(op);
}

static void
loop_next(Load *load, guint loop)
{
    Op *op = g_new0(Op, 1);
    g_autoptr(SoupMessage) message = NULL;
    g_autofree gchar *url = NULL;
    g_autofree gchar *bearer = g_strdup_printf("Bearer %s", load->daemon->owner_token);
    gint roll = g_rand_int_range(load->rand, 0, 100);

    op->load = load;
    op->loop = loop;
    if (load->live->len == 0 || (roll < 30 && load->live->len < LIVE_MAX))
        op->kind = OP_CREATE;
    else if (roll < 30 || roll >= 85)
        op->kind = OP_DELETE;
    else
        op->kind = roll < 60 ? OP_STOP : OP_START;

    if (op->kind == OP_CREATE) {
        Create *create = g_new0(Create, 1);
        g_autoptr(GBytes) payload = NULL;

        create->key = g_strdup_printf("crash-%u-%08x", load->creates->len, g_rand_int(load->rand));
        create->body =
            g_strdup_printf("{\"kind\":\"notebook\",\"name\":\"%s\","
                            "\"gpu_class\":\"cpu-2c-4g\",\"image\":\"jupyter-notebook\"}",
                            create->key);
        g_ptr_array_add(load->creates, create);
        op->create = create;
        url = g_strdup_printf("%s/v1/workloads", load->daemon->uri);
        message = soup_message_new("POST", url);
        soup_message_headers_replace(soup_message_get_request_headers(message), "Idempotency-Key",
                                     create->key);
        payload = g_bytes_new(create->body, strlen(create->body));
        soup_message_set_request_body_from_bytes(message, JSON, payload);
    } else {
        guint index = (guint)g_rand_int_range(load->rand, 0, (gint32)load->live->len);
        const char *id = g_ptr_array_index(load->live, index);

        op->target = g_hash_table_lookup(load->known, id);
        op->target->sent[op->kind]++;
        if (op->kind == OP_DELETE) {
            url = g_strdup_printf("%s/v1/workloads/%s", load->daemon->uri, id);
            message = soup_message_new("DELETE", url);
            /* Sometimes asked again, later; mostly gone from the load. */
            if (g_rand_int_range(load->rand, 0, 4) != 0)
                g_ptr_array_remove_index_fast(load->live, index);
        } else {
            url = g_strdup_printf("%s/v1/workloads/%s/%s", load->daemon->uri, id,
                                  op->kind == OP_STOP ? "stop" : "start");
            message = soup_message_new("POST", url);
        }
    }
    load->sent[op->kind]++;
    soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                 bearer);
    load->loop_busy[loop] = TRUE;
    load->busy++;
    soup_session_send_and_read_async(load->session, message, G_PRIORITY_DEFAULT, NULL, op_done, op);
}

static gboolean
quit_loop(gpointer user_data)
{
    g_main_loop_quit(user_data);
    return G_SOURCE_REMOVE;
}

/* Runs the load for @ms, then returns with its requests still in flight
 * (@keep_going) or once every one has an outcome. */
static void
run_load(Load *load, guint ms, gboolean keep_going)
{
    g_autoptr(GMainLoop) main_loop = g_main_loop_new(NULL, FALSE);

    load->running = TRUE;
    for (guint i = 0; i < LOOPS; i++) {
        if (!load->loop_busy[i])
            loop_next(load, i);
    }
    g_timeout_add(ms, quit_loop, main_loop);
    g_main_loop_run(main_loop);
    load->running = keep_going;
    if (keep_going)
        return;
    while (load->busy > 0)
        g_main_context_iteration(NULL, TRUE);
}

/* Problems, collected so that a failure shows all of them (the first
 * PROBLEMS_SHOWN), not only the first. */
typedef struct {
    guint count;
} Problems;

G_GNUC_PRINTF(2, 3)
static void
problem(Problems *problems, const char *format, ...)
{
    va_list args;
    g_autofree gchar *text = NULL;

    va_start(args, format);
    text = g_strdup_vprintf(format, args);
    va_end(args);
    if (problems->count++ < PROBLEMS_SHOWN)
        g_test_message("PROBLEM: %s", text);
}

/* An integer column, as both stores print it. */
static gint64
int_field(const char *text)
{
    gint64 value = 0;
    g_autoptr(GError) error = NULL;

    if (!g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, &value, &error))
        g_error("not an integer: \"%s\": %s", text, error->message);
    return value;
}

/* The store after a kill, settled: on Postgres, the killed daemon's
 * sessions gone, so that no COMMIT it sent lands between the check's
 * queries (each its own snapshot). On SQLite the kill ended every
 * writer. */
static void
wait_store_settled(EinsoraTestDaemon *daemon)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    if (!einsora_test_daemon_on_postgres())
        return;
    for (;;) {
        g_auto(GStrv) others = einsora_test_daemon_query_sql(
            daemon, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
                    "pid <> pg_backend_pid() AND backend_type = 'client backend'");

        if (others[0] == NULL)
            return;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(20 * 1000);
    }
}

/* SQLite's own checks of its file (PRAGMA integrity_check and the like):
 * @only_row, or no row at all when that's NULL. */
static void
assert_pragma_quiet(EinsoraTestDaemon *daemon, const char *pragma, const char *only_row,
                    Problems *problems)
{
    g_auto(GStrv) rows = einsora_test_daemon_query_rows(daemon, pragma);

    for (guint i = 0; rows[i] != NULL; i++) {
        if (only_row == NULL || g_strcmp0(rows[i], only_row) != 0)
            problem(problems, "%s: %s", pragma, rows[i]);
    }
    if (only_row != NULL && g_strv_length(rows) != 1)
        problem(problems, "%s returned %u rows", pragma, g_strv_length(rows));
}

/* The store as a whole. SQLite: its file intact (a kill lands in the
 * daemon's own writes), and no foreign key broken (SQLite checks them only
 * as far as the connection asks it to). Postgres: a killed client can't
 * tear the server's files, so there is no integrity_check to run; the
 * server enforces every foreign key itself at commit, so the check is that
 * it still does: each constraint validated, its triggers enabled. */
static void
check_store_intact(EinsoraTestDaemon *daemon, gboolean foreign_keys, Problems *problems)
{
    if (!einsora_test_daemon_on_postgres()) {
        assert_pragma_quiet(daemon, "PRAGMA integrity_check", "ok", problems);
        if (foreign_keys)
            assert_pragma_quiet(daemon, "PRAGMA foreign_key_check", NULL, problems);
        return;
    }
    if (foreign_keys) {
        g_auto(GStrv) loose = einsora_test_daemon_query_rows(
            daemon, "SELECT c.conrelid::regclass::text, c.conname FROM pg_constraint c WHERE "
                    "c.contype = 'f' AND (NOT c.convalidated OR EXISTS (SELECT 1 FROM "
                    "pg_trigger t WHERE t.tgconstraint = c.oid AND t.tgenabled = 'D'))");
        g_auto(GStrv) enforced = einsora_test_daemon_query_sql(
            daemon, "SELECT count(*) FROM pg_constraint WHERE contype = 'f'");

        for (guint i = 0; loose[i] != NULL; i++)
            problem(problems, "foreign key not enforced: %s", loose[i]);
        g_assert_nonnull(enforced[0]);
        if (int_field(enforced[0]) == 0)
            problem(problems, "the store has no foreign keys");
    }
}

/* What a transition into @to needs: who asks for it, and the reason the
 * service writes when they do (daemon/domain/einsora-reason.c). */
static gboolean
asked_for(const char *from, const char *to, OpKind *kind, const char **reason)
{
    if (g_strcmp0(to, "stopping") == 0) {
        *kind = OP_STOP;
        *reason = "stop requested by ";
        return TRUE;
    }
    if (g_strcmp0(to, "deleting") == 0) {
        *kind = OP_DELETE;
        *reason = "delete requested by ";
        return TRUE;
    }
    /* Back to pending from stopped or failed is a start; from nothing,
     * the create. */
    if (g_strcmp0(to, "pending") == 0 && from != NULL) {
        *kind = OP_START;
        *reason = "start requested by ";
        return TRUE;
    }
    return FALSE;
}

static void
check_database(Load *load)
{
    EinsoraTestDaemon *daemon = load->daemon;
    g_auto(GStrv) rows = NULL;
    Problems problems = {0};
    g_autoptr(GHashTable) states = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) by_name = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) keys = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) doubled = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree gchar *workload = NULL;
    g_autofree gchar *last_to = NULL;
    gint64 last_attempt = 0;
    guint events = 0, transitions = 0, notes = 0, timelines = 0;
    guint by_user[OP_COUNT] = {0};

    wait_store_settled(daemon);
    check_store_intact(daemon, TRUE, &problems);

    for (guint i = 0; i < load->creates->len; i++) {
        Create *create = g_ptr_array_index(load->creates, i);
        g_hash_table_insert(keys, create->key, create);
    }
    rows = einsora_test_daemon_query_rows(daemon, "SELECT id, name, state FROM workloads");
    for (guint r = 0; rows[r] != NULL; r++) {
        g_auto(GStrv) fields = einsora_test_row_fields(rows[r], 3);
        const char *id = fields[0];
        const char *name = fields[1];
        const char *other = g_hash_table_lookup(by_name, name);

        g_hash_table_insert(states, g_strdup(id), g_strdup(fields[2]));
        if (!g_hash_table_contains(keys, name))
            problem(&problems, "workload %s (%s) was made by no create of this test", id, name);
        if (other != NULL) {
            g_test_message("Idempotency-Key %s made two workloads: %s and %s", name, other, id);
            g_hash_table_add(doubled, g_strdup(name));
        } else
            g_hash_table_insert(by_name, g_strdup(name), g_strdup(id));
    }
    g_clear_pointer(&rows, g_strfreev);

    /* Every create was answered 201 in the end (the retry pass): exactly
     * its one workload exists. */
    for (guint i = 0; i < load->creates->len; i++) {
        Create *create = g_ptr_array_index(load->creates, i);
        const char *id = g_hash_table_lookup(by_name, create->key);

        if (create->id == NULL)
            problem(&problems, "create %s was never answered 201", create->key);
        else if (!g_hash_table_contains(states, create->id))
            problem(&problems, "acknowledged create %s (%s) is not in the database", create->id,
                    create->key);
        else if (g_strcmp0(id, create->id) != 0 && !g_hash_table_contains(doubled, create->key))
            problem(&problems, "create %s was answered %s but made %s", create->key, create->id,
                    id);
    }

    /* Timelines, each in seq order (the workload IDs in whatever order
     * the store's collation gives: each timeline's rows are together all
     * the same); the sentinel row closes the last. NULL reads as "", so
     * whether from_state is NULL is a column of its own. */
    rows = einsora_test_daemon_query_rows(
        daemon, "SELECT workload_id, seq, CASE WHEN from_state IS NULL THEN 1 ELSE 0 END, "
                "from_state, to_state, reason, attempt FROM workload_events ORDER BY "
                "workload_id, seq");
    for (guint r = 0;; r++) {
        gboolean row = rows[r] != NULL;
        g_auto(GStrv) fields = row ? einsora_test_row_fields(rows[r], 7) : NULL;
        const char *id = row ? fields[0] : NULL;
        gint64 seq = row ? int_field(fields[1]) : 0;
        const char *from = row && int_field(fields[2]) == 0 ? fields[3] : NULL;
        const char *to = row ? fields[4] : NULL;
        const char *reason = row ? fields[5] : NULL;
        gint64 attempt = row ? int_field(fields[6]) : 0;
        OpKind kind;
        const char *want_reason;

        if (workload != NULL && g_strcmp0(id, workload) != 0) {
            const char *state = g_hash_table_lookup(states, workload);
            if (g_strcmp0(state, last_to) != 0)
                problem(&problems, "workload %s is %s but its timeline ends at %s", workload,
                        state != NULL ? state : "(no row)", last_to);
            g_hash_table_remove(states, workload);
            g_clear_pointer(&workload, g_free);
        }
        if (!row)
            break;
        events++;
        if (workload == NULL) {
            timelines++;
            workload = g_strdup(id);
            if (from != NULL || g_strcmp0(to, "pending") != 0 ||
                !g_str_has_prefix(reason, "created by "))
                problem(&problems,
                        "workload %s's timeline starts at seq %" G_GINT64_FORMAT
                        " with %s -> %s (%s), not its creation",
                        id, seq, from != NULL ? from : "NULL", to, reason);
        } else {
            if (g_strcmp0(from, last_to) != 0)
                problem(&problems,
                        "workload %s: a gap at seq %" G_GINT64_FORMAT ": %s -> %s after %s", id,
                        seq, from != NULL ? from : "NULL", to, last_to);
            if (attempt < last_attempt)
                problem(&problems,
                        "workload %s: attempt %" G_GINT64_FORMAT " after %" G_GINT64_FORMAT
                        " at seq %" G_GINT64_FORMAT,
                        id, attempt, last_attempt, seq);
            if (g_strcmp0(from, to) == 0)
                notes++;
            else
                transitions++;
        }
        if (g_strcmp0(from, to) != 0) {
            Known *known = g_hash_table_lookup(load->known, id);
            if (asked_for(from, to, &kind, &want_reason)) {
                by_user[kind]++;
                if (!g_str_has_prefix(reason, want_reason))
                    problem(&problems,
                            "workload %s: %s -> %s at seq %" G_GINT64_FORMAT " says \"%s\"", id,
                            from, to, seq, reason);
                /* Sent, whatever the answer: libsoup sends an idempotent
                 * DELETE again when its connection dies unanswered, and
                 * the second may find the first's work done (404). */
                if (known == NULL || known->sent[kind] == 0)
                    problem(&problems, "workload %s: %s -> %s (\"%s\") but nobody sent a %s", id,
                            from, to, reason, op_names[kind]);
            }
            /* Stopped and deleted only ever follow what was asked for. */
            if ((g_strcmp0(to, "stopped") == 0 && g_strcmp0(from, "stopping") != 0) ||
                (g_strcmp0(to, "deleted") == 0 && g_strcmp0(from, "deleting") != 0))
                problem(&problems, "workload %s: %s -> %s at seq %" G_GINT64_FORMAT, id, from, to,
                        seq);
        }
        g_free(last_to);
        last_to = g_strdup(to);
        last_attempt = attempt;
    }
    g_clear_pointer(&rows, g_strfreev);
    {
        GHashTableIter iter;
        gpointer id;
        g_hash_table_iter_init(&iter, states);
        while (g_hash_table_iter_next(&iter, &id, NULL))
            problem(&problems, "workload %s has no timeline", (const char *)id);
    }

    /* An acknowledged delete stays done: nothing leads out of deleting. */
    {
        GHashTableIter iter;
        gpointer value;
        guint deletes = 0;
        g_autoptr(GHashTable) final =
            g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

        rows = einsora_test_daemon_query_rows(daemon, "SELECT id, state FROM workloads");
        for (guint r = 0; rows[r] != NULL; r++) {
            g_auto(GStrv) fields = einsora_test_row_fields(rows[r], 2);
            g_hash_table_insert(final, g_strdup(fields[0]), g_strdup(fields[1]));
        }
        g_clear_pointer(&rows, g_strfreev);
        g_hash_table_iter_init(&iter, load->known);
        while (g_hash_table_iter_next(&iter, NULL, &value)) {
            Known *known = value;
            const char *state = g_hash_table_lookup(final, known->id);
            if (known->acked[OP_DELETE] == 0)
                continue;
            deletes++;
            if (g_strcmp0(state, "deleting") != 0 && g_strcmp0(state, "deleted") != 0)
                problem(&problems, "workload %s: delete acknowledged but it is %s", known->id,
                        state);
        }
        g_test_message("acknowledged deletes checked: %u", deletes);
    }

    g_test_message("database: %u workloads, %u events checked (%u transitions, %u notes); "
                   "user transitions: %u stop, %u start, %u delete",
                   timelines, events, transitions, notes, by_user[OP_STOP], by_user[OP_START],
                   by_user[OP_DELETE]);
    if (problems.count > PROBLEMS_SHOWN)
        g_test_message("... and %u more problems", problems.count - PROBLEMS_SHOWN);
    g_assert_cmpuint(problems.count, ==, 0);
    /* One workload per Idempotency-Key, whatever the kills: the key's
     * record is saved in the create's own transaction. */
    g_assert_cmpuint(g_hash_table_size(doubled), ==, 0);
}

/* Every create again, with its key and body: the answer is the one
 * workload it made, or makes it now if the first never got through. */
static void
retry_creates(Load *load)
{
    guint replayed = 0, made = 0;

    for (guint i = 0; i < load->creates->len; i++) {
        Create *create = g_ptr_array_index(load->creates, i);
        const char *headers[] = {"Idempotency-Key", create->key, NULL};
        g_autoptr(EinsoraTestResponse) response =
            einsora_test_request(load->daemon, "POST", "/v1/workloads", load->daemon->owner_token,
                                 JSON, create->body, headers);
        const char *id = einsora_test_response_string(response, "id");

        g_assert_cmpuint(response->status, ==, 201);
        g_assert_nonnull(id);
        if (create->id != NULL) {
            /* Acknowledged: the same workload, replayed. */
            g_assert_cmpstr(id, ==, create->id);
            g_assert_cmpstr(soup_message_headers_get_one(response->headers, "Idempotent-Replayed"),
                            ==, "true");
            continue;
        }
        if (g_strcmp0(soup_message_headers_get_one(response->headers, "Idempotent-Replayed"),
                      "true") == 0)
            replayed++;
        else
            made++;
        create->id = g_strdup(id);
    }
    g_test_message("unanswered creates retried: %u had happened (replayed), %u had not (made now)",
                   replayed, made);
}

static void
test_kill_9_loop(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autoptr(GUri) uri = NULL;
    Load load = {0};
    guint64 seed = g_test_rand_int();

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "100ms");
    /* Starts and stops take a while, so some are on their way at a kill. */
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_START_DELAY_MS", "200");
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_STOP_DELAY_MS", "200");
    /* Room for every workload the load keeps. */
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_CPUS", "1024");
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_MEMORY_MIB", "1048576");
    einsora_test_daemon_start(daemon);
    uri = g_uri_parse(daemon->uri, G_URI_FLAGS_NONE, NULL);
    g_assert_nonnull(uri);
    daemon->listen = g_strdup_printf("127.0.0.1:%d", g_uri_get_port(uri));

    g_test_message("seed %" G_GUINT64_FORMAT, seed);
    load.daemon = daemon;
    load.session = soup_session_new_with_options("timeout", 10, "max-conns-per-host", LOOPS, NULL);
    load.rand = g_rand_new_with_seed((guint32)seed);
    load.creates = g_ptr_array_new_with_free_func((GDestroyNotify)create_free);
    load.known = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)known_free);
    load.live = g_ptr_array_new_with_free_func(g_free);

    for (guint kill = 0; kill < KILLS; kill++) {
        /* The kill lands while requests are in flight. */
        run_load(&load, (guint)g_rand_int_range(load.rand, 500, 2001), TRUE);
        einsora_test_daemon_kill(daemon);
        einsora_test_daemon_start(daemon);
    }
    run_load(&load, 500, FALSE);
    retry_creates(&load);
    einsora_test_daemon_stop(daemon);

    for (guint kind = 0; kind < OP_COUNT; kind++)
        g_test_message("%s: %u sent, %u acknowledged, %u refused, %u unanswered", op_names[kind],
                       load.sent[kind], load.acked[kind], load.refused[kind], load.uncertain[kind]);
    g_test_message("kills: %u; creates: %u", KILLS, load.creates->len);
    check_database(&load);

    g_clear_object(&load.session);
    g_rand_free(load.rand);
    g_ptr_array_unref(load.creates);
    g_hash_table_unref(load.known);
    g_ptr_array_unref(load.live);
}

/* Admission groups under kill -9 */

/* The change feed as a client holds it: every event it carried. */
typedef struct {
    GHashTable *seen; /* event ID -> workload ID */
    GCancellable *cancel;
    GDataInputStream *lines;
    gboolean open;
} Feed;

static void feed_read_next(Feed *feed);

static void
on_feed_line(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Feed *feed = user_data;
    g_autofree gchar *line =
        g_data_input_stream_read_line_finish_utf8(G_DATA_INPUT_STREAM(source), result, NULL, NULL);

    if (line == NULL) {
        /* The daemon was killed (or the test cancelled): the feed ends. */
        feed->open = FALSE;
        return;
    }
    if (g_str_has_prefix(line, "data: ")) {
        g_autoptr(JsonParser) parser = json_parser_new();
        JsonObject *event;

        g_assert_true(json_parser_load_from_data(parser, line + strlen("data: "), -1, NULL));
        event = json_node_get_object(json_parser_get_root(parser));
        g_hash_table_insert(feed->seen, g_strdup(json_object_get_string_member(event, "id")),
                            g_strdup(json_object_get_string_member(event, "workload_id")));
    }
    feed_read_next(feed);
}

static void
feed_read_next(Feed *feed)
{
    g_data_input_stream_read_line_async(feed->lines, G_PRIORITY_DEFAULT, feed->cancel, on_feed_line,
                                        feed);
}

static void
on_feed_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Feed *feed = user_data;
    g_autoptr(GInputStream) body = soup_session_send_finish(SOUP_SESSION(source), result, NULL);

    if (body == NULL) {
        feed->open = FALSE;
        return;
    }
    feed->lines = g_data_input_stream_new(body);
    feed_read_next(feed);
}

static void
feed_open(Feed *feed, SoupSession *session, EinsoraTestDaemon *daemon)
{
    g_autofree gchar *url = g_strdup_printf("%s/v1/events?follow=true", daemon->uri);
    g_autofree gchar *bearer = g_strdup_printf("Bearer %s", daemon->owner_token);
    g_autoptr(SoupMessage) message = soup_message_new("GET", url);

    soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                 bearer);
    feed->cancel = g_cancellable_new();
    feed->open = TRUE;
    soup_session_send_async(session, message, G_PRIORITY_DEFAULT, feed->cancel, on_feed_sent, feed);
}

/* Waits for the feed to notice its daemon is gone. */
static void
feed_close(Feed *feed)
{
    g_cancellable_cancel(feed->cancel);
    while (feed->open)
        g_main_context_iteration(NULL, TRUE);
    g_clear_object(&feed->lines);
    g_clear_object(&feed->cancel);
}

/* Runs the main loop (the feed reads) for @ms. */
static void
run_for(guint ms)
{
    g_autoptr(GMainLoop) main_loop = g_main_loop_new(NULL, FALSE);

    g_timeout_add(ms, quit_loop, main_loop);
    g_main_loop_run(main_loop);
}

/* The workloads the agent has started since the log was @offset long
 * ("workload <id>: start with sim"); moves @offset to the end. */
static void
collect_starts(EinsoraTestDaemon *daemon, gsize *offset, GHashTable *started)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(daemon);
    const char *at = log + MIN(*offset, strlen(log));
    const char *mark = "workload ";

    while ((at = strstr(at, mark)) != NULL) {
        const char *id = at + strlen(mark);
        at = id;
        if (strlen(id) > 36 && g_str_has_prefix(id + 36, ": start with sim"))
            g_hash_table_add(started, g_strndup(id, 36));
    }
    *offset = strlen(log);
}

/* What the database says after a kill, checked against what anyone
 * outside was told; @events (event ID -> "workload to seq") is what the
 * last check saw, and becomes this one's. */
static void
check_groups(EinsoraTestDaemon *daemon, Feed *feed, GHashTable *started, GHashTable **events,
             guint *admitted_out)
{
    g_auto(GStrv) rows = NULL;
    Problems problems = {0};
    g_autoptr(GHashTable) now = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) admissions = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    GHashTableIter iter;
    gpointer key, value;
    guint holding = 0, admitted = 0, waiting = 0;

    wait_store_settled(daemon);
    check_store_intact(daemon, FALSE, &problems);

    rows = einsora_test_daemon_query_rows(
        daemon, "SELECT id, workload_id, to_state, seq FROM workload_events");
    for (guint r = 0; rows[r] != NULL; r++) {
        g_auto(GStrv) fields = einsora_test_row_fields(rows[r], 4);
        const char *id = fields[0];
        const char *workload = fields[1];
        const char *to = fields[2];

        g_hash_table_insert(
            now, g_strdup(id),
            g_strdup_printf("%s %s %" G_GINT64_FORMAT, workload, to, int_field(fields[3])));
        if (g_strcmp0(to, "provisioning") == 0) {
            gint64 count = GPOINTER_TO_INT(g_hash_table_lookup(admissions, workload));
            g_hash_table_insert(admissions, g_strdup(workload), GINT_TO_POINTER(count + 1));
        }
    }
    g_clear_pointer(&rows, g_strfreev);

    /* Append-only: every event seen before is still there, unchanged. */
    g_hash_table_iter_init(&iter, *events);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        const char *still = g_hash_table_lookup(now, key);
        if (g_strcmp0(still, value) != 0)
            problem(&problems, "event %s was \"%s\", is now \"%s\"", (const char *)key,
                    (const char *)value, still != NULL ? still : "gone");
    }
    /* Nothing on the feed that the store doesn't have. */
    g_hash_table_iter_init(&iter, feed->seen);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        if (!g_hash_table_contains(now, key))
            problem(&problems, "the feed carried event %s of workload %s; the store lacks it",
                    (const char *)key, (const char *)value);
    }
    /* Nothing started that the store doesn't have admitted. */
    g_hash_table_iter_init(&iter, started);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (!g_hash_table_contains(admissions, key))
            problem(&problems, "the agent started %s, which the store never admitted",
                    (const char *)key);
    }

    /* Each workload waits unplaced, or is admitted whole: its placement,
     * its attempt and one admission in its timeline per attempt. Placed:
     * none of the three NULL (NULL reads as "", so the store says). The
     * last event's state is "" when there is none: never a state. */
    rows = einsora_test_daemon_query_rows(
        daemon, "SELECT w.id, w.state, CASE WHEN w.placed_class IS NOT NULL AND w.machine_id "
                "IS NOT NULL AND w.driver IS NOT NULL THEN 1 ELSE 0 END, w.attempt, (SELECT "
                "e.to_state FROM workload_events e WHERE e.workload_id = w.id ORDER BY e.seq "
                "DESC LIMIT 1) FROM workloads w");
    for (guint r = 0; rows[r] != NULL; r++) {
        g_auto(GStrv) fields = einsora_test_row_fields(rows[r], 5);
        const char *id = fields[0];
        const char *state = fields[1];
        gboolean placed = int_field(fields[2]) == 1;
        gint64 attempt = int_field(fields[3]);
        const char *last = fields[4][0] != '\0' ? fields[4] : NULL;
        gint64 times = GPOINTER_TO_INT(g_hash_table_lookup(admissions, id));

        if (g_strcmp0(state, last) != 0)
            problem(&problems, "workload %s is %s but its timeline ends at %s", id, state, last);
        if (g_strcmp0(state, "pending") == 0 || g_strcmp0(state, "queued") == 0) {
            waiting++;
            if (placed || attempt != 0 || times != 0)
                problem(&problems,
                        "workload %s is %s but placed %d, attempt %" G_GINT64_FORMAT
                        ", %" G_GINT64_FORMAT " admissions",
                        id, state, placed, attempt, times);
        } else if (g_strcmp0(state, "provisioning") == 0 || g_strcmp0(state, "running") == 0) {
            admitted++;
            holding++;
            if (!placed || attempt != 1 || times != 1)
                problem(&problems,
                        "workload %s is %s but placed %d, attempt %" G_GINT64_FORMAT
                        ", %" G_GINT64_FORMAT " admissions",
                        id, state, placed, attempt, times);
        } else {
            problem(&problems, "workload %s is %s, which nobody asked for", id, state);
        }
    }
    if (holding > GROUP_CPUS)
        problem(&problems, "%u workloads of one CPU each hold a machine of %u", holding,
                GROUP_CPUS);
    g_test_message("after the kill: %u admitted, %u waiting, %u events (%u on the feed), "
                   "%u started by the agent",
                   admitted, waiting, g_hash_table_size(now), g_hash_table_size(feed->seen),
                   g_hash_table_size(started));
    if (problems.count > PROBLEMS_SHOWN)
        g_test_message("... and %u more problems", problems.count - PROBLEMS_SHOWN);
    g_assert_cmpuint(problems.count, ==, 0);
    g_hash_table_unref(*events);
    *events = g_steal_pointer(&now);
    *admitted_out = admitted;
}

static void
create_batch(EinsoraTestDaemon *daemon, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autoptr(EinsoraTestResponse) response = einsora_test_request(
            daemon, "POST", "/v1/workloads", daemon->owner_token, JSON,
            "{\"kind\": \"notebook\", \"gpu_class\": \"cpu-1c-2g\", \"image\": "
            "\"jupyter-notebook\"}",
            NULL);
        g_assert_cmpuint(response->status, ==, 201);
    }
}

static void
test_kill_9_admission_groups(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autoptr(SoupSession) session = soup_session_new();
    g_autoptr(GHashTable) events = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) started = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GUri) uri = NULL;
    g_autofree gchar *cpus = g_strdup_printf("%d", GROUP_CPUS);
    Feed feed = {g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)};
    GRand *rand = g_rand_new_with_seed(g_test_rand_int());
    gsize log_offset = 0;
    guint admitted = 0;
    gint64 deadline;

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_START_DELAY_MS", "100");
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_CPUS", cpus);
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_MEMORY_MIB", "1048576");
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_start(daemon);
    uri = g_uri_parse(daemon->uri, G_URI_FLAGS_NONE, NULL);
    daemon->listen = g_strdup_printf("127.0.0.1:%d", g_uri_get_port(uri));

    for (guint kill = 0; kill < GROUP_KILLS; kill++) {
        /* A batch the controller leaves alone (60 min between passes)... */
        create_batch(daemon, GROUP_BATCH);
        einsora_test_daemon_kill(daemon);
        /* ...until a restart with passes every 100 ms: the first admits
         * the whole batch, in groups; the kill lands somewhere in or
         * around it. */
        einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "100ms");
        einsora_test_daemon_start(daemon);
        feed_open(&feed, session, daemon);
        run_for((guint)g_rand_int_range(rand, 0, 600));
        einsora_test_daemon_kill(daemon);
        feed_close(&feed);
        collect_starts(daemon, &log_offset, started);
        check_groups(daemon, &feed, started, &events, &admitted);
        einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
        einsora_test_daemon_start(daemon);
    }

    /* Whatever a kill lost is decided again: in the end every workload
     * that fits is admitted, and the rest wait. */
    einsora_test_daemon_kill(daemon);
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "100ms");
    einsora_test_daemon_start(daemon);
    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (admitted < MIN(GROUP_KILLS * GROUP_BATCH, GROUP_CPUS)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        run_for(200);
        {
            g_autoptr(EinsoraTestResponse) response = einsora_test_request(
                daemon, "GET", "/v1/workloads", daemon->owner_token, NULL, NULL, NULL);
            JsonArray *items =
                json_object_get_array_member(json_node_get_object(response->json), "workloads");
            admitted = 0;
            for (guint i = 0; i < json_array_get_length(items); i++) {
                const char *state =
                    json_object_get_string_member(json_array_get_object_element(items, i), "state");
                admitted +=
                    g_strcmp0(state, "provisioning") == 0 || g_strcmp0(state, "running") == 0;
            }
        }
    }
    einsora_test_daemon_stop(daemon);
    collect_starts(daemon, &log_offset, started);
    check_groups(daemon, &feed, started, &events, &admitted);
    g_assert_cmpuint(admitted, ==, MIN(GROUP_KILLS * GROUP_BATCH, GROUP_CPUS));
    g_hash_table_unref(feed.seen);
    g_rand_free(rand);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/crash/kill-9-loop/keeps-every-invariant", test_kill_9_loop);
    g_test_add_func("/crash/kill-9-loop/admission-groups", test_kill_9_admission_groups);
    return g_test_run();
}
