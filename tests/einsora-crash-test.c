/* kill -9 crash consistency (issue 8): a load generator creates, stops,
 * starts and deletes workloads on the real daemon (sim driver) while the
 * daemon is killed and restarted on the same port and data directory 20
 * times. Afterwards, read straight from the database: every acknowledged
 * create exists and no Idempotency-Key made two; each workload's state is
 * where its timeline ends; timelines have no gaps; the file is intact; and
 * nothing was stopped, started or deleted that nobody asked to be. */
#include <sqlite3.h>

#include "einsora-test-daemon.h"

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

static void
assert_pragma_quiet(sqlite3 *db, const char *pragma, const char *only_row, Problems *problems)
{
    sqlite3_stmt *stmt = NULL;
    guint rows = 0;

    g_assert_cmpint(sqlite3_prepare_v2(db, pragma, -1, &stmt, NULL), ==, SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(stmt, 0);
        rows++;
        if (only_row == NULL || g_strcmp0(text, only_row) != 0)
            problem(problems, "%s: %s", pragma, text != NULL ? text : "(a row)");
    }
    sqlite3_finalize(stmt);
    if (only_row != NULL && rows != 1)
        problem(problems, "%s returned %u rows", pragma, rows);
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
check_database(Load *load, const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
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

    g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    assert_pragma_quiet(db, "PRAGMA integrity_check", "ok", &problems);
    assert_pragma_quiet(db, "PRAGMA foreign_key_check", NULL, &problems);

    for (guint i = 0; i < load->creates->len; i++) {
        Create *create = g_ptr_array_index(load->creates, i);
        g_hash_table_insert(keys, create->key, create);
    }
    g_assert_cmpint(
        sqlite3_prepare_v2(db, "SELECT id, name, state FROM workloads", -1, &stmt, NULL), ==,
        SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(stmt, 0);
        const char *name = (const char *)sqlite3_column_text(stmt, 1);
        const char *other = g_hash_table_lookup(by_name, name);

        g_hash_table_insert(states, g_strdup(id),
                            g_strdup((const char *)sqlite3_column_text(stmt, 2)));
        if (!g_hash_table_contains(keys, name))
            problem(&problems, "workload %s (%s) was made by no create of this test", id, name);
        if (other != NULL) {
            g_test_message("Idempotency-Key %s made two workloads: %s and %s", name, other, id);
            g_hash_table_add(doubled, g_strdup(name));
        } else
            g_hash_table_insert(by_name, g_strdup(name), g_strdup(id));
    }
    sqlite3_finalize(stmt);

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

    /* Timelines, each in seq order; the sentinel row closes the last. */
    g_assert_cmpint(sqlite3_prepare_v2(db,
                                       "SELECT workload_id, seq, from_state, to_state, reason, "
                                       "attempt FROM workload_events ORDER BY workload_id, seq",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    for (;;) {
        gboolean row = sqlite3_step(stmt) == SQLITE_ROW;
        const char *id = row ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
        gint64 seq = row ? sqlite3_column_int64(stmt, 1) : 0;
        const char *from = row ? (const char *)sqlite3_column_text(stmt, 2) : NULL;
        const char *to = row ? (const char *)sqlite3_column_text(stmt, 3) : NULL;
        const char *reason = row ? (const char *)sqlite3_column_text(stmt, 4) : NULL;
        gint64 attempt = row ? sqlite3_column_int64(stmt, 5) : 0;
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
    sqlite3_finalize(stmt);
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

        g_assert_cmpint(sqlite3_prepare_v2(db, "SELECT id, state FROM workloads", -1, &stmt, NULL),
                        ==, SQLITE_OK);
        while (sqlite3_step(stmt) == SQLITE_ROW)
            g_hash_table_insert(final, g_strdup((const char *)sqlite3_column_text(stmt, 0)),
                                g_strdup((const char *)sqlite3_column_text(stmt, 1)));
        sqlite3_finalize(stmt);
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
    sqlite3_close(db);

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
    g_autofree gchar *db = NULL;
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
    db = g_build_filename(daemon->data_dir, "einsora.db", NULL);
    check_database(&load, db);

    g_clear_object(&load.session);
    g_rand_free(load.rand);
    g_ptr_array_unref(load.creates);
    g_hash_table_unref(load.known);
    g_ptr_array_unref(load.live);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/crash/kill-9-loop/keeps-every-invariant", test_kill_9_loop);
    return g_test_run();
}
