/* The real `einsora` binary (EINSORA_CLI) against the real einsora-daemon
 * on a free loopback port. Tenant A is Solo's first-run owner; B and C are
 * accounts made with `einsora-daemon account create`; C is kept for the
 * golden tables, so nothing else shows in them. Every run checks that no
 * known secret is in what the CLI printed.
 *
 * EINSORA_UPDATE_GOLDEN=1 rewrites tests/golden/ from this run. */
#include <sqlite3.h>

#include "einsora-cli.h"
#include "einsora-test-daemon-sql.h"
#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-test-workload-rows.h"

#define JSON "application/json"

/* Tenant D's workloads, written straight into SQLite: more than one of
 * the API's largest pages. */
#define D_WORKLOADS 1234

static EinsoraTestDaemon *server_daemon;
static gchar *token_b;
static gchar *token_c;
static gchar *token_d;
static gchar *token_e;    /* tenant E: the usage tables' */
static gchar *empty_home; /* an XDG_DATA_HOME without a token file */
static GPtrArray *secrets;

typedef struct {
    int status;
    GBytes *out;
    gchar *out_text;
    gchar *err;
} CliRun;

static void
cli_run_free(CliRun *run)
{
    if (run == NULL)
        return;
    g_bytes_unref(run->out);
    g_free(run->out_text);
    g_free(run->err);
    g_free(run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliRun, cli_run_free)

static const char *
cli_path(void)
{
    const char *path = g_getenv("EINSORA_CLI");
    g_assert_nonnull(path);
    return path;
}

/* An empty GBytes has no data pointer at all. */
static gchar *
bytes_to_text(GBytes *bytes)
{
    gsize size = 0;
    const char *data = g_bytes_get_data(bytes, &size);
    return size > 0 ? g_strndup(data, size) : g_strdup("");
}

/* Runs einsora with @argv (NULL-terminated). The environment names the
 * test daemon and tenant A's token unless @env (NULL-terminated name,
 * value pairs; a NULL value unsets) says otherwise. */
static CliRun *
run_cli_env(const char *const *env, const char *const *argv)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GBytes) err = NULL;
    g_autoptr(GError) error = NULL;
    CliRun *run = g_new0(CliRun, 1);

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", server_daemon->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", server_daemon->owner_token, TRUE);
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    g_subprocess_launcher_setenv(launcher, "XDG_DATA_HOME", empty_home, TRUE);
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    g_subprocess_launcher_setenv(launcher, "TZ", "UTC", TRUE);
    for (guint i = 0; env != NULL && env[i] != NULL; i += 2) {
        if (env[i + 1] != NULL)
            g_subprocess_launcher_setenv(launcher, env[i], env[i + 1], TRUE);
        else
            g_subprocess_launcher_unsetenv(launcher, env[i]);
    }
    g_ptr_array_add(args, (gpointer)cli_path());
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add(args, (gpointer)argv[i]);
    g_ptr_array_add(args, NULL);

    process = g_subprocess_launcher_spawnv(launcher, (const char *const *)args->pdata, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate(process, NULL, NULL, &run->out, &err, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    run->status = g_subprocess_get_exit_status(process);
    run->out_text = bytes_to_text(run->out);
    run->err = bytes_to_text(err);

    {
        g_autofree gchar *command = g_strjoinv(" ", (gchar **)argv);
        /* At most 4 KiB of it: meson's TAP reader gives up on a line of
         * half a megabyte (a long list's --json). */
        g_test_message("einsora %s -> %d\n%.4096s%s", command, run->status, run->out_text,
                       run->err);
    }
    /* Never a token in what the CLI prints. */
    for (guint i = 0; i < secrets->len; i++) {
        const char *secret = g_ptr_array_index(secrets, i);
        if (strstr(run->out_text, secret) != NULL || strstr(run->err, secret) != NULL)
            g_error("the CLI printed secret #%u", i);
    }
    return run;
}

#define run_cli(...) run_cli_env(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define run_cli_with(env, ...) run_cli_env((env), (const char *const[]){__VA_ARGS__, NULL})

static void
assert_ok(CliRun *run)
{
    if (run->status != 0)
        g_test_message("stderr: %s", run->err);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==, "");
}

/* Exit status 1 and "einsora: CODE: ..." on stderr, with the server's
 * request ID when the server answered. */
static void
assert_api_error(CliRun *run, const char *code, gboolean with_request)
{
    g_autofree gchar *prefix = g_strdup_printf("einsora: %s: ", code);

    g_assert_cmpint(run->status, ==, 1);
    g_assert_true(g_str_has_prefix(run->err, prefix));
    g_assert_true(g_str_has_suffix(run->err, "\n"));
    g_assert_cmpint(strstr(run->err, " (request ") != NULL, ==, with_request);
    g_assert_cmpstr(run->out_text, ==, "");
}

static void
assert_usage_error(CliRun *run, const char *text)
{
    g_assert_cmpint(run->status, ==, 2);
    g_assert_true(g_str_has_prefix(run->err, "einsora: "));
    g_assert_nonnull(strstr(run->err, text));
    g_assert_nonnull(strstr(run->err, "--help"));
    g_assert_cmpstr(run->out_text, ==, "");
}

static JsonNode *
parse(const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;

    json_parser_load_from_data(parser, text, -1, &error);
    g_assert_no_error(error);
    return json_node_copy(json_parser_get_root(parser));
}

/* Launches a CPU notebook as @token's tenant; returns its ID. */
static gchar *
launch(const char *token, const char *name)
{
    const char *env[] = {"EINSORA_TOKEN", token, NULL};
    g_autoptr(CliRun) run =
        run_cli_with(env, "--json", "launch", "--kind", "notebook", "--class", "cpu-2c-4g",
                     "--image", "jupyter-notebook", "--name", name);
    g_autoptr(JsonNode) root = NULL;

    assert_ok(run);
    root = parse(run->out_text);
    return g_strdup(json_object_get_string_member(json_node_get_object(root), "id"));
}

/* The first column of the table row whose text has " @name ": the short ID
 * the user sees. */
static gchar *
shown_id(const char *table, const char *name)
{
    g_auto(GStrv) lines = g_strsplit(table, "\n", -1);
    g_autofree gchar *needle = g_strdup_printf("  %s  ", name);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (strstr(lines[i], needle) != NULL) {
            const char *space = strchr(lines[i], ' ');
            return g_strndup(lines[i], (gsize)(space - lines[i]));
        }
    }
    g_error("no row for %s in:\n%s", name, table);
    return NULL;
}

static const char *
state_of(const char *id)
{
    static gchar *state;
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);
    g_autoptr(EinsoraTestResponse) got = einsora_test_request(
        server_daemon, "GET", path, server_daemon->owner_token, NULL, NULL, NULL);

    g_assert_cmpuint(got->status, ==, 200);
    g_free(state);
    state = g_strdup(einsora_test_response_string(got, "state"));
    return state;
}

static gchar *
replace(const char *pattern, const char *text, const char *with)
{
    g_autoptr(GRegex) regex = g_regex_new(pattern, G_REGEX_MULTILINE, 0, NULL);
    g_assert_nonnull(regex);
    return g_regex_replace_literal(regex, text, -1, 0, with, 0, NULL);
}

/* IDs and times change every run: the first column (the ID, however many
 * characters it takes) and every time become fixed text of one width. */
static gchar *
normalize(const char *table)
{
    g_autofree gchar *heading = replace("^ID +", table, "ID    ");
    g_autofree gchar *ids = replace("^[0-9a-f]{8}[0-9a-f-]* +", heading, "<id>  ");
    g_autofree gchar *times = replace("[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}", ids,
                                      "YYYY-MM-DD hh:mm:ss");
    return replace("tsk_[A-Za-z0-9_-]+", times, "tsk_XXXX");
}

static void
assert_golden(const char *name, const char *text)
{
    const char *root = g_getenv("EINSORA_SOURCE_ROOT");
    g_autofree gchar *path = NULL;
    g_autofree gchar *expected = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_nonnull(root);
    path = g_build_filename(root, "tests", "golden", name, NULL);
    if (g_strcmp0(g_getenv("EINSORA_UPDATE_GOLDEN"), "1") == 0) {
        g_assert_true(g_file_set_contents(path, text, -1, &error));
        g_test_message("rewrote %s", path);
        return;
    }
    g_assert_true(g_file_get_contents(path, &expected, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(text, ==, expected);
}

static void
test_help(void)
{
    const char *const commands[][3] = {
        {"workloads", NULL, NULL},  {"launch", NULL, NULL},     {"start", NULL, NULL},
        {"stop", NULL, NULL},       {"delete", NULL, NULL},     {"events", NULL, NULL},
        {"export", NULL, NULL},     {"machines", NULL, NULL},   {"catalog", NULL, NULL},
        {"usage", NULL, NULL},      {"tokens", NULL, NULL},     {"tokens", "list", NULL},
        {"tokens", "create", NULL}, {"tokens", "revoke", NULL}, {"me", NULL, NULL},
    };
    /* --help needs neither a server nor a token. */
    const char *env[] = {"EINSORA_SERVER", NULL, "EINSORA_TOKEN", NULL, NULL};

    {
        g_autoptr(CliRun) run = run_cli_with(env, "--help");
        assert_ok(run);
        g_assert_nonnull(strstr(run->out_text, "Usage:\n  einsora [OPTION"));
        for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
            g_autofree gchar *line = g_strdup_printf("\n  %s ", commands[i][0]);
            g_assert_nonnull(strstr(run->out_text, line));
        }
    }
    for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
        const char *argv[] = {commands[i][0], commands[i][1] != NULL ? commands[i][1] : "--help",
                              commands[i][1] != NULL ? "--help" : NULL, NULL};
        g_autoptr(CliRun) run = run_cli_env(env, argv);
        g_autofree gchar *usage = g_strdup_printf("Usage:\n  einsora %s%s%s [OPTION",
                                                  commands[i][0], commands[i][1] != NULL ? " " : "",
                                                  commands[i][1] != NULL ? commands[i][1] : "");

        assert_ok(run);
        g_assert_nonnull(strstr(run->out_text, usage));
        g_assert_nonnull(strstr(run->out_text, "--json"));
    }
    {
        g_autoptr(CliRun) run = run_cli_with(env, "launch", "--help");
        g_assert_nonnull(strstr(run->out_text, "--class=CLASS"));
    }
}

static void
test_usage_errors(void)
{
    const struct {
        const char *argv[8];
        const char *message;
    } cases[] = {
        {{NULL}, "no command given"},
        {{"frobnicate"}, "unknown command “frobnicate”"},
        {{"tokens", "frobnicate"}, "unknown command “frobnicate”"},
        {{"launch", "--kind", "notebook", "--image", "jupyter-notebook"}, "missing --class"},
        {{"launch", "--class", "cpu-2c-4g", "--image", "jupyter-notebook"}, "missing --kind"},
        {{"workloads", "--bogus"}, "--bogus"},
        {{"workloads", "extra"}, "unexpected argument “extra”"},
        {{"start"}, "missing ID"},
        {{"stop", "a", "b"}, "unexpected argument “b”"},
        {{"events", "xyz"}, "“xyz” is neither the name of one of your workloads nor an ID prefix"},
        {{"delete", "01a"}, "at least 4 hex digits"},
        {{"tokens", "create"}, "missing NAME"},
        {{"catalog", "extra"}, "unexpected argument “extra”"},
        {{"--server", "ftp://example.com", "me"}, "not an http:// or https:// URL"},
        {{"launch", "--kind", "notebook", "--class", "cpu-2c-4g", "--idle-timeout", "soon"},
         "--idle-timeout takes off or a duration like 30m, 2h or 1d, not “soon”"},
        {{"logs"}, "missing ID"},
        {{"logs", "--tail", "-3", "0190"}, "--tail and --attempt take a positive number"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(CliRun) run = run_cli_env(NULL, cases[i].argv);
        assert_usage_error(run, cases[i].message);
    }
    {
        const char *env[] = {"EINSORA_TOKEN", "", NULL};
        g_autoptr(CliRun) run = run_cli_with(env, "me");
        assert_usage_error(run, "EINSORA_TOKEN (--token) is empty");
    }
}

static void
test_launch_and_list(void)
{
    g_autoptr(CliRun) launched = run_cli("launch", "--kind", "notebook", "--class", "cpu-2c-4g",
                                         "--image", "jupyter-notebook", "--name", "listed-one");
    g_autoptr(CliRun) table = run_cli("workloads");
    g_autoptr(CliRun) json = run_cli("workloads", "--json");
    g_autoptr(EinsoraTestResponse) direct = einsora_test_request(
        server_daemon, "GET", "/v1/workloads", server_daemon->owner_token, NULL, NULL, NULL);
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *short_id = NULL;
    g_autofree gchar *id = NULL;
    JsonArray *workloads;

    assert_ok(launched);
    g_assert_true(g_str_has_prefix(launched->out_text, "Created workload “listed-one”\n"));
    g_assert_nonnull(strstr(launched->out_text, "State:   pending\n"));
    /* An idle limit, in the request and in the answer. */
    {
        g_autoptr(CliRun) idle =
            run_cli("--json", "launch", "--kind", "notebook", "--class", "cpu-2c-4g", "--image",
                    "jupyter-notebook", "--name", "idle-one", "--idle-timeout", "90m");
        g_autoptr(JsonNode) answer = NULL;

        assert_ok(idle);
        answer = parse(idle->out_text);
        g_assert_cmpint(json_object_get_int_member(json_node_get_object(answer), "idle_timeout"),
                        ==, 5400);
    }

    assert_ok(table);
    g_assert_true(g_str_has_prefix(table->out_text, "ID "));
    g_assert_nonnull(strstr(table->out_text, "  NAME "));
    short_id = shown_id(table->out_text, "listed-one");
    g_assert_cmpuint(strlen(short_id), >=, 8);

    /* --json is the API's own JSON, as it came. */
    assert_ok(json);
    g_assert_true(g_str_has_suffix(json->out_text, "}\n"));
    g_assert_cmpuint(g_bytes_get_size(json->out), ==, strlen(direct->body) + 1);
    root = parse(json->out_text);
    workloads = json_object_get_array_member(json_node_get_object(root), "workloads");
    for (guint i = 0; i < json_array_get_length(workloads); i++) {
        JsonObject *workload = json_array_get_object_element(workloads, i);
        if (g_strcmp0(json_object_get_string_member(workload, "name"), "listed-one") == 0)
            id = g_strdup(json_object_get_string_member(workload, "id"));
    }
    g_assert_nonnull(id);
    g_assert_true(g_str_has_prefix(id, short_id));
    g_assert_nonnull(strstr(launched->out_text, id));
}

/* A list longer than a page: the table and --json show it whole, as the
 * CLI follows next_cursor; --json is one object of the API's shape. */
static void
test_list_follows_cursors(void)
{
    const char *const as_d[] = {"EINSORA_TOKEN", token_d, NULL};
    g_autoptr(CliRun) table = run_cli_with(as_d, "workloads");
    g_autoptr(CliRun) json = run_cli_with(as_d, "--json", "workloads");
    g_auto(GStrv) lines = NULL;
    g_autoptr(JsonNode) root = NULL;
    JsonArray *workloads;

    assert_ok(table);
    lines = g_strsplit(table->out_text, "\n", -1);
    /* The header, a row each, and the empty string after the last "\n". */
    g_assert_cmpuint(g_strv_length(lines), ==, D_WORKLOADS + 2);
    g_assert_nonnull(strstr(lines[1], "page-00000"));
    g_assert_nonnull(strstr(lines[D_WORKLOADS], "page-01233"));

    assert_ok(json);
    root = parse(json->out_text);
    workloads = json_object_get_array_member(json_node_get_object(root), "workloads");
    g_assert_cmpuint(json_array_get_length(workloads), ==, D_WORKLOADS);
    g_assert_true(
        JSON_NODE_HOLDS_NULL(json_object_get_member(json_node_get_object(root), "next_cursor")));
}

static gint64
count_cli_keys(const char *workload_id)
{
    g_autofree gchar *db = g_build_filename(server_daemon->data_dir, "einsora.db", NULL);
    sqlite3 *handle = NULL;
    sqlite3_stmt *statement = NULL;
    gint64 count;

    g_assert_cmpint(sqlite3_open_v2(db, &handle, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    g_assert_cmpint(sqlite3_prepare_v2(handle,
                                       "SELECT count(*) FROM idempotency_keys WHERE key LIKE "
                                       "'einsora-cli-%' AND instr(response_body, ?1) > 0",
                                       -1, &statement, NULL),
                    ==, SQLITE_OK);
    sqlite3_bind_text(statement, 1, workload_id != NULL ? workload_id : "", -1, SQLITE_TRANSIENT);
    g_assert_cmpint(sqlite3_step(statement), ==, SQLITE_ROW);
    count = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    sqlite3_close(handle);
    return count;
}

static void
test_launch_idempotency_key(void)
{
    gint64 before = count_cli_keys(NULL);
    g_autofree gchar *one = launch(server_daemon->owner_token, "keyed-one");
    g_autofree gchar *two = launch(server_daemon->owner_token, "keyed-one");

    /* Each invocation sends a key of its own, which the server remembered
     * with the workload it created: the same request twice is two
     * workloads, while a repeat inside one invocation would be one. */
    g_assert_cmpstr(one, !=, two);
    g_assert_cmpint(count_cli_keys(one), ==, 1);
    g_assert_cmpint(count_cli_keys(two), ==, 1);
    g_assert_cmpint(count_cli_keys(NULL), ==, before + 2);
}

static void
test_golden_tables(void)
{
    const char *env[] = {"EINSORA_TOKEN", token_c, NULL};
    g_autofree gchar *first = launch(token_c, "golden-a");
    g_autofree gchar *second = NULL;
    g_autofree gchar *table = NULL;
    g_autofree gchar *events = NULL;

    {
        g_autoptr(CliRun) run =
            run_cli_with(env, "launch", "--kind", "notebook", "--class", "cpu-4c-16g", "--image",
                         "jupyter-notebook", "--name", "golden-b", "--region", "local");
        g_autoptr(JsonNode) root = NULL;
        g_autoptr(CliRun) json = NULL;
        assert_ok(run);
        json = run_cli_with(env, "--json", "workloads");
        root = parse(json->out_text);
        second = g_strdup(json_object_get_string_member(
            json_array_get_object_element(
                json_object_get_array_member(json_node_get_object(root), "workloads"), 1),
            "id"));
    }
    {
        g_autoptr(CliRun) run = run_cli_with(env, "delete", second);
        assert_ok(run);
    }
    {
        g_autoptr(CliRun) run = run_cli_with(env, "workloads");
        assert_ok(run);
        table = normalize(run->out_text);
        assert_golden("workloads.txt", table);
    }
    {
        g_autoptr(CliRun) run = run_cli_with(env, "events", second);
        assert_ok(run);
        events = normalize(run->out_text);
        assert_golden("events.txt", events);
    }
    {
        /* A tenant with nothing to show says so. */
        g_autoptr(CliRun) run = run_cli_with(env, "machines");
        assert_ok(run);
        g_assert_cmpstr(run->out_text, ==, "No machines.\n");
    }
}

static void
test_short_ids(void)
{
    g_autofree gchar *id = launch(server_daemon->owner_token, "short-one");
    g_autofree gchar *prefix = NULL;
    g_autoptr(CliRun) table = run_cli("workloads");

    /* The ID as the table shows it works wherever an ID is taken. */
    prefix = shown_id(table->out_text, "short-one");
    g_assert_true(g_str_has_prefix(id, prefix));
    {
        /* Pending can't stop: the server's answer proves the prefix
         * reached the right workload. */
        g_autoptr(CliRun) run = run_cli("stop", prefix);
        assert_api_error(run, "invalid_transition", TRUE);
    }
    {
        g_autoptr(CliRun) run = run_cli("start", prefix);
        g_autofree gchar *expected = g_strdup_printf("Workload “short-one” (%s) is pending\n", id);
        assert_ok(run);
        g_assert_cmpstr(run->out_text, ==, expected);
    }
    {
        /* Hyphens and case don't matter in a prefix. */
        g_autofree gchar *bare = replace("-", id, "");
        g_autofree gchar *upper = g_ascii_strup(bare, 24);
        g_autoptr(CliRun) run = run_cli("events", upper);

        assert_ok(run);
        g_assert_nonnull(strstr(run->out_text, "  pending  "));
    }
    {
        g_autoptr(CliRun) run = run_cli("delete", prefix);
        g_autofree gchar *expected = g_strdup_printf("Workload “short-one” (%s) is deleting\n", id);
        assert_ok(run);
        g_assert_cmpstr(run->out_text, ==, expected);
        g_assert_cmpstr(state_of(id), ==, "deleting");
    }
    {
        g_autoptr(CliRun) run = run_cli("events", prefix);
        assert_ok(run);
        g_assert_true(g_str_has_prefix(run->out_text, "TIME "));
        g_assert_nonnull(strstr(run->out_text, "  -        pending   created by owner@localhost"));
        g_assert_nonnull(strstr(run->out_text, "  pending  deleting  delete requested by"));
    }
}

static void
test_ambiguous_and_unknown_prefix(void)
{
    g_autofree gchar *one = launch(server_daemon->owner_token, "twin-1");
    g_autofree gchar *two = launch(server_daemon->owner_token, "twin-2");
    guint common = 0;

    /* UUIDv7s made a moment apart share their leading (time) digits. */
    while (one[common] != '\0' && one[common] == two[common])
        common++;
    if (common >= 4) {
        g_autofree gchar *shared = g_strndup(one, common);
        g_autoptr(CliRun) run = run_cli("events", shared);
        assert_usage_error(run, "ambiguous ID prefix");
        g_assert_nonnull(strstr(run->err, one));
        g_assert_nonnull(strstr(run->err, two));
    } else {
        g_test_message("the two IDs share only %u characters; no ambiguous prefix to try", common);
    }
    {
        g_autoptr(CliRun) run = run_cli("events", "ffffffff");
        assert_api_error(run, "not_found", FALSE);
        g_assert_nonnull(strstr(run->err, "ffffffff"));
    }
    {
        /* A whole ID goes to the server, which answers for itself. */
        g_autoptr(CliRun) run = run_cli("stop", "01a226b8-0000-7000-8000-000000000000");
        assert_api_error(run, "not_found", TRUE);
    }
}

/* `einsora open` asks for the one-time link; a workload that isn't a
 * running notebook gets the API's own refusal. */
static void
test_open_refused_unless_running(void)
{
    g_autoptr(CliRun) launched =
        run_cli("--json", "launch", "--kind", "notebook", "--class", "cpu-1c-2g", "--image",
                "jupyter-linux", "--name", "never-runs");
    g_autoptr(JsonNode) root = parse(launched->out_text);
    const char *id = json_object_get_string_member(json_node_get_object(root), "id");
    g_autoptr(CliRun) run = run_cli("open", id);

    g_assert_cmpint(launched->status, ==, 0);
    assert_api_error(run, "conflict", TRUE);
    g_assert_nonnull(strstr(run->err, "only a running notebook can be opened"));
}

static gchar *
mask_exported_at(const char *text)
{
    return replace("\"exported_at\":\"[^\"]*\"", text, "\"exported_at\":\"*\"");
}

static void
test_export_exact_bytes(void)
{
    g_autofree gchar *id = launch(server_daemon->owner_token, "exported \"quoted\" é");
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/export", id);
    g_autofree gchar *prefix = g_strndup(id, 23);
    g_autoptr(CliRun) run = run_cli("export", prefix);
    g_autoptr(EinsoraTestResponse) direct = einsora_test_request(
        server_daemon, "GET", path, server_daemon->owner_token, NULL, NULL, NULL);
    g_autoptr(CliRun) json = run_cli("--json", "export", id);
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *cli_masked = NULL;
    g_autofree gchar *api_masked = NULL;
    g_autofree gchar *json_masked = NULL;

    assert_ok(run);
    g_assert_cmpuint(direct->status, ==, 200);
    /* The bytes the API sent: nothing added, nothing reformatted. Only
     * exported_at (the server's clock, fixed width) may differ. */
    g_assert_cmpuint(g_bytes_get_size(run->out), ==, strlen(direct->body));
    g_assert_true(g_str_has_suffix(run->out_text, "}"));
    root = parse(run->out_text);
    g_assert_cmpstr(
        json_object_get_string_member(
            json_object_get_object_member(json_node_get_object(root), "workload"), "id"),
        ==, id);
    cli_masked = mask_exported_at(run->out_text);
    api_masked = mask_exported_at(direct->body);
    g_assert_cmpstr(cli_masked, !=, run->out_text);
    g_assert_cmpstr(cli_masked, ==, api_masked);
    /* --json changes nothing for export. */
    assert_ok(json);
    json_masked = mask_exported_at(json->out_text);
    g_assert_cmpstr(json_masked, ==, api_masked);
}

static void
test_api_errors(void)
{
    {
        const char *env[] = {"EINSORA_TOKEN", token_b, NULL};
        g_autoptr(CliRun) run = run_cli_with(env, "launch", "--kind", "notebook", "--class",
                                             "l40s-48gb", "--image", "jupyter-notebook");
        assert_api_error(run, "quota_exceeded", TRUE);
    }
    {
        g_autoptr(CliRun) run = run_cli("events", "01a226b8-0000-7000-8000-000000000000");
        g_autofree gchar *request_id = NULL;
        const char *start;

        assert_api_error(run, "not_found", TRUE);
        /* The request ID is the server's, as the operator's log has it. */
        start = strstr(run->err, " (request ") + strlen(" (request ");
        request_id = g_strndup(start, strcspn(start, ")"));
        g_assert_true(g_uuid_string_is_valid(request_id));
        {
            g_autofree gchar *log = einsora_test_daemon_read_log(server_daemon);
            g_assert_nonnull(strstr(log, request_id));
        }
    }
    {
        const char *env[] = {"EINSORA_TOKEN", "tsk_not_a_real_token", NULL};
        g_autoptr(CliRun) run = run_cli_with(env, "workloads");
        assert_api_error(run, "unauthenticated", TRUE);
        g_assert_null(strstr(run->err, "tsk_not_a_real_token"));
    }
    {
        /* Nobody listens on port 1. */
        g_autoptr(CliRun) run = run_cli("--server", "http://127.0.0.1:1", "workloads");
        assert_api_error(run, "unreachable", FALSE);
    }
}

static const char *
subject_of(CliRun *run)
{
    static gchar *subject;
    g_autoptr(JsonNode) root = NULL;

    assert_ok(run);
    root = parse(run->out_text);
    g_free(subject);
    subject = g_strdup(json_object_get_string_member(json_node_get_object(root), "subject"));
    return subject;
}

/* The local token file is never sent to a server elsewhere. */
static void
test_token_file_stays_local(void)
{
    const char *env[] = {
        "EINSORA_TOKEN",       NULL, "EINSORA_DATA_DIR", server_daemon->data_dir, "EINSORA_SERVER",
        "http://192.0.2.1:9/", NULL};
    g_autoptr(CliRun) run = run_cli_with(env, "me");

    g_assert_cmpint(run->status, ==, 1);
    g_assert_nonnull(strstr(run->err, "only for this machine's daemon"));
}

static void
test_token_sources(void)
{
    g_autofree gchar *home = einsora_test_dir_new();
    g_autofree gchar *home_dir = g_build_filename(home, "einsora", NULL);
    g_autofree gchar *home_token = g_build_filename(home_dir, "token", NULL);
    g_autoptr(GError) error = NULL;

    {
        /* EINSORA_TOKEN. */
        const char *env[] = {"EINSORA_TOKEN", token_b, NULL};
        g_autoptr(CliRun) run = run_cli_with(env, "--json", "me");
        g_assert_cmpstr(subject_of(run), ==, "bob@globex.example");
    }
    {
        /* --token wins over EINSORA_TOKEN, before or after the command. */
        const char *env[] = {"EINSORA_TOKEN", token_b, NULL};
        g_autoptr(CliRun) before = run_cli_with(env, "--token", token_c, "--json", "me");
        g_autoptr(CliRun) after = run_cli_with(env, "me", "--json", "--token", token_c);
        g_assert_cmpstr(subject_of(before), ==, "carol@initech.example");
        g_assert_cmpstr(subject_of(after), ==, "carol@initech.example");
    }
    {
        /* No token given: the token file in EINSORA_DATA_DIR, or in
         * --data-dir, which wins. */
        const char *env[] = {"EINSORA_TOKEN", NULL, "EINSORA_DATA_DIR", server_daemon->data_dir,
                             NULL};
        const char *nowhere[] = {"EINSORA_TOKEN", NULL, "EINSORA_DATA_DIR", home, NULL};
        g_autoptr(CliRun) from_env = run_cli_with(env, "--json", "me");
        g_autoptr(CliRun) from_option =
            run_cli_with(nowhere, "--data-dir", server_daemon->data_dir, "--json", "me");
        g_autoptr(CliRun) human = run_cli_with(env, "me");
        g_assert_cmpstr(subject_of(from_env), ==, "owner@localhost");
        g_assert_cmpstr(subject_of(from_option), ==, "owner@localhost");
        assert_ok(human);
        g_assert_nonnull(strstr(human->out_text, "Subject:         owner@localhost\n"));
    }
    {
        /* Else the user's data directory: $XDG_DATA_HOME/einsora/token. */
        const char *env[] = {"EINSORA_TOKEN", NULL, "XDG_DATA_HOME", home, NULL};
        g_autofree gchar *contents = g_strdup_printf("%s\n", token_b);
        g_autoptr(CliRun) missing = run_cli_with(env, "me");

        g_assert_cmpint(missing->status, ==, 1);
        g_assert_true(g_str_has_prefix(missing->err, "einsora: no API token"));
        g_assert_nonnull(strstr(missing->err, home_token));

        g_assert_cmpint(g_mkdir_with_parents(home_dir, 0700), ==, 0);
        g_assert_true(g_file_set_contents(home_token, contents, -1, &error));
        g_assert_no_error(error);
        {
            g_autoptr(CliRun) run = run_cli_with(env, "--json", "me");
            g_assert_cmpstr(subject_of(run), ==, "bob@globex.example");
        }
    }
    einsora_test_dir_remove(home);
}

static void
test_tokens(void)
{
    g_autoptr(CliRun) created = run_cli("tokens", "create", "ci bot");
    g_auto(GStrv) lines = NULL;
    g_autofree gchar *secret = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *prefix = NULL;
    g_autoptr(CliRun) listed = NULL;
    g_autoptr(CliRun) json = NULL;
    g_autoptr(JsonNode) root = NULL;
    JsonArray *tokens;

    assert_ok(created);
    g_assert_true(g_str_has_prefix(created->out_text, "Created API token “ci bot” ("));
    /* The secret is the last line, printed once. */
    lines = g_strsplit(created->out_text, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    secret = g_strdup(lines[1]);
    g_assert_true(g_str_has_prefix(secret, "tsk_"));
    g_assert_null(strstr(strstr(created->out_text, secret) + 1, secret));
    {
        const char *start = strstr(created->out_text, " (") + 2;
        id = g_strndup(start, strcspn(start, ")"));
        g_assert_true(g_uuid_string_is_valid(id));
    }
    g_ptr_array_add(secrets, g_strdup(secret));

    /* The new token works; the list has it, but never its secret (the run
     * helper checks that for every run from now on). */
    {
        const char *env[] = {"EINSORA_TOKEN", secret, NULL};
        g_autoptr(CliRun) run = run_cli_with(env, "--json", "me");
        g_assert_cmpstr(subject_of(run), ==, "owner@localhost");
    }
    listed = run_cli("tokens");
    assert_ok(listed);
    g_assert_true(g_str_has_prefix(listed->out_text, "ID "));
    g_assert_nonnull(strstr(listed->out_text, "  ci bot  "));
    prefix = shown_id(listed->out_text, "ci bot");
    json = run_cli("tokens", "list", "--json");
    assert_ok(json);
    root = parse(json->out_text);
    tokens = json_object_get_array_member(json_node_get_object(root), "tokens");
    g_assert_cmpuint(json_array_get_length(tokens), >=, 2);
    g_assert_nonnull(strstr(json->out_text, id));

    /* Revoked by the short ID the list shows: the token stops working and
     * is listed as revoked. */
    {
        g_autoptr(CliRun) run = run_cli("tokens", "revoke", prefix);
        g_autofree gchar *expected = g_strdup_printf("Revoked API token %s\n", id);
        assert_ok(run);
        g_assert_cmpstr(run->out_text, ==, expected);
    }
    {
        const char *env[] = {"EINSORA_TOKEN", secret, NULL};
        g_autoptr(CliRun) run = run_cli_with(env, "me");
        assert_api_error(run, "unauthenticated", TRUE);
    }
    {
        g_autoptr(CliRun) run = run_cli("tokens", "list");
        g_auto(GStrv) rows = g_strsplit(run->out_text, "\n", -1);
        gboolean seen = FALSE;

        assert_ok(run);
        for (guint i = 0; rows[i] != NULL; i++) {
            if (strstr(rows[i], "  ci bot  ") != NULL) {
                g_assert_true(g_str_has_suffix(rows[i], "  revoked"));
                seen = TRUE;
            }
        }
        g_assert_true(seen);
    }
    {
        g_autoptr(CliRun) run = run_cli("tokens", "revoke", "ffffffff");
        assert_api_error(run, "not_found", FALSE);
    }
}

static void
test_cross_tenant(void)
{
    g_autofree gchar *id = launch(server_daemon->owner_token, "tenant-a-only");
    g_autofree gchar *prefix = g_strndup(id, 8);
    const char *env[] = {"EINSORA_TOKEN", token_b, NULL};
    const char *commands[] = {"events", "export", "stop", "start", "delete"};

    /* With B's token, A's workload doesn't exist: by whole ID (the
     * server's 404) or by prefix (not among B's workloads). */
    for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
        g_autoptr(CliRun) whole = run_cli_with(env, commands[i], id);
        g_autoptr(CliRun) by_prefix = run_cli_with(env, commands[i], prefix);
        assert_api_error(whole, "not_found", TRUE);
        assert_api_error(by_prefix, "not_found", FALSE);
    }
    g_assert_cmpstr(state_of(id), ==, "pending");
    {
        g_autoptr(CliRun) run = run_cli_with(env, "--json", "workloads", "--all");
        assert_ok(run);
        g_assert_null(strstr(run->out_text, id));
    }
}

static void
test_machines(void)
{
    g_autoptr(CliRun) json = run_cli("machines", "--json");
    g_autoptr(CliRun) table = run_cli("machines");
    g_autoptr(JsonNode) root = NULL;
    JsonArray *machines;

    assert_ok(json);
    root = parse(json->out_text);
    machines = json_object_get_array_member(json_node_get_object(root), "machines");
    g_assert_nonnull(machines);
    assert_ok(table);
    if (json_array_get_length(machines) == 0)
        g_assert_cmpstr(table->out_text, ==, "No machines.\n");
    else
        g_assert_true(g_str_has_prefix(table->out_text, "ID "));
}

#define FAR_BOX "0190b5d2-7c4e-7abc-8def-00000000f001"
#define IN_STEP "0190b5d2-7c4e-7abc-8def-00000000f002"
#define SILENT "0190b5d2-7c4e-7abc-8def-00000000f003"

/* Three machines of @tenant_id, written into the stopped daemon's store
 * as their agents' last syncs left them (docs/adr/0057): one whose clock
 * was 95.4 s behind, one in step, one whose agent never said. Their
 * region is no hub's, so nothing syncs them over. */
static void
insert_reporting_machines(const char *tenant_id)
{
    g_autofree gchar *db = g_build_filename(server_daemon->data_dir, "einsora.db", NULL);
    char *sql = sqlite3_mprintf(
        "INSERT INTO machines (id, tenant_id, name, region, os, cpus, memory_mib, sharing, "
        "last_seen_at, created_at, agent_version, clock_offset_ms) VALUES "
        "(%Q, %Q, 'far-box', 'elsewhere', 'linux', 8, 16384, 'private', "
        "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000001Z', '0.0.9', 95400), "
        "(%Q, %Q, 'in-step', 'elsewhere', 'linux', 8, 16384, 'private', "
        "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000002Z', '0.1.0', -120), "
        "(%Q, %Q, 'silent', 'elsewhere', 'linux', 8, 16384, 'private', NULL, "
        "'2026-01-01T00:00:00.000003Z', NULL, NULL);",
        FAR_BOX, tenant_id, IN_STEP, tenant_id, SILENT, tenant_id);
    sqlite3 *handle = NULL;

    g_assert_cmpint(sqlite3_open(db, &handle), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    g_assert_cmpint(sqlite3_exec(handle, sql, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_free(sql);
    sqlite3_close(handle);
}

/* The row of @table that holds @text. */
static gchar *
row_naming(const char *table, const char *text)
{
    g_auto(GStrv) lines = g_strsplit(table, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (strstr(lines[i], text) != NULL)
            return g_strdup(lines[i]);
    }
    g_error("no row with \"%s\" in:\n%s", text, table);
    return NULL;
}

/* The table shows each machine's agent version, and how far its clock
 * is off when it is past the server's bound; --json has the same. */
static void
test_machines_agent(void)
{
    const char *env[] = {"EINSORA_TOKEN", token_d, NULL};
    g_autoptr(CliRun) table = run_cli_with(env, "machines");
    g_autoptr(CliRun) json = run_cli_with(env, "--json", "machines");
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *far = NULL;
    g_autofree gchar *in_step = NULL;
    g_autofree gchar *silent = NULL;
    JsonArray *machines;

    assert_ok(table);
    g_assert_nonnull(strstr(table->out_text, "AGENT"));
    far = row_naming(table->out_text, " far-box ");
    in_step = row_naming(table->out_text, " in-step ");
    silent = row_naming(table->out_text, " silent ");
    g_assert_true(g_str_has_suffix(far, "0.0.9, clock off by 95s"));
    g_assert_true(g_str_has_suffix(in_step, " 0.1.0"));
    g_assert_null(strstr(in_step, "clock"));
    g_assert_true(g_str_has_suffix(silent, " -"));

    assert_ok(json);
    root = parse(json->out_text);
    machines = json_object_get_array_member(json_node_get_object(root), "machines");
    g_assert_cmpuint(json_array_get_length(machines), ==, 3);
    {
        JsonObject *agent =
            json_object_get_object_member(json_array_get_object_element(machines, 0), "agent");
        g_assert_cmpstr(json_object_get_string_member(agent, "version"), ==, "0.0.9");
        g_assert_cmpint(json_object_get_int_member(agent, "clock_offset_ms"), ==, 95400);
        g_assert_true(json_object_get_boolean_member(agent, "clock_skewed"));
    }
    g_assert_true(json_object_get_null_member(json_array_get_object_element(machines, 2), "agent"));
}

/* The row of @table whose first column is @name. */
static gchar *
table_row(const char *table, const char *name)
{
    g_auto(GStrv) lines = g_strsplit(table, "\n", -1);
    g_autofree gchar *prefix = g_strdup_printf("%s ", name);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix(lines[i], prefix))
            return g_strdup(lines[i]);
    }
    g_error("no row for %s in:\n%s", name, table);
    return NULL;
}

static void
test_catalog(void)
{
    const char *env_c[] = {"EINSORA_TOKEN", token_c, NULL};

    {
        /* Tenant C has no GPU quota: 0 of every GPU class. */
        g_autoptr(CliRun) run = run_cli_with(env_c, "catalog");
        assert_ok(run);
        assert_golden("catalog.txt", run->out_text);
    }
    {
        /* --json is the API's own answer, as it came. */
        g_autoptr(CliRun) json = run_cli("catalog", "--json");
        g_autoptr(EinsoraTestResponse) direct = einsora_test_request(
            server_daemon, "GET", "/v1/catalog", server_daemon->owner_token, NULL, NULL, NULL);
        g_autofree gchar *expected = g_strdup_printf("%s\n", direct->body);

        assert_ok(json);
        g_assert_cmpuint(direct->status, ==, 200);
        g_assert_cmpstr(json->out_text, ==, expected);
    }
    {
        /* The owner's quota (Solo's 64), and what a new GPU notebook
         * holds of it. */
        g_autoptr(CliRun) before = run_cli("catalog");
        g_autoptr(CliRun) launched =
            run_cli("launch", "--kind", "notebook", "--class", "nvidia-l4-24gb", "--image",
                    "jupyter-linux", "--name", "catalog-gpu");
        g_autoptr(CliRun) after = run_cli("catalog");
        g_autofree gchar *row_before = NULL;
        g_autofree gchar *row_after = NULL;
        g_autofree gchar *cpu_row = NULL;

        assert_ok(before);
        assert_ok(launched);
        assert_ok(after);
        row_before = table_row(before->out_text, "nvidia-l4-24gb");
        row_after = table_row(after->out_text, "nvidia-l4-24gb");
        g_assert_true(g_regex_match_simple("  0 +64$", row_before, 0, 0));
        g_assert_true(g_regex_match_simple("  1 +64$", row_after, 0, 0));
        cpu_row = table_row(after->out_text, "cpu-2c-4g");
        g_assert_true(g_regex_match_simple("  - +-$", cpu_row, 0, 0));
    }
}

/* G_DEFINE_QUARK stringifies its tokens, so a formatter's spaces would be
 * in the name (they once were: "einsora - cli - error - quark"). */
static void
test_error_domain_name(void)
{
    const char *name = g_quark_to_string(EINSORA_CLI_ERROR);

    g_assert_cmpstr(name, ==, "einsora-cli-error-quark");
    g_assert_null(strchr(name, ' '));
}

/* The model store: add the small valid GGUF, see it listed, launch an
 * endpoint on it (its image the one serving CPU classes), and the model
 * it serves can't be removed. */
static void
test_models(void)
{
    g_autofree gchar *seed = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "fuzz",
                                              "corpus", "gguf", "seed-00", NULL);
    g_autoptr(CliRun) empty = run_cli("models");
    g_autoptr(CliRun) added = run_cli("models", "add", "tiny-cli", seed);
    g_autoptr(CliRun) bad_name = run_cli("models", "add", "Tiny", seed);
    g_autoptr(CliRun) not_a_model = run_cli("models", "add", "nope", cli_path());
    g_autoptr(CliRun) listed = run_cli("models", "list");
    g_autoptr(CliRun) launched = run_cli("launch", "--kind", "endpoint", "--class", "cpu-2c-4g",
                                         "--model", "tiny-cli", "--name", "cli-endpoint");
    g_autoptr(CliRun) neither = run_cli("launch", "--kind", "endpoint", "--class", "cpu-2c-4g");
    g_autoptr(CliRun) in_use = run_cli("models", "remove", "tiny-cli");
    g_autoptr(CliRun) spare = run_cli("models", "add", "tiny-spare", seed);
    g_autoptr(CliRun) removed = run_cli("models", "remove", "tiny-spare");
    g_autoptr(CliRun) removed_twice = run_cli("models", "remove", "tiny-spare");
    g_autoptr(CliRun) after = run_cli("models", "list");

    g_assert_cmpint(empty->status, ==, 0);
    g_assert_nonnull(strstr(empty->out_text, "No models."));
    g_assert_cmpint(added->status, ==, 0);
    g_assert_true(g_str_has_prefix(added->out_text, "Added model tiny-cli (sha256:"));
    g_assert_cmpint(bad_name->status, ==, 1);
    g_assert_nonnull(strstr(bad_name->err, "name must be"));
    /* Not a GGUF file (the CLI's own binary): the validator says why. */
    g_assert_cmpint(not_a_model->status, ==, 1);
    g_assert_nonnull(strstr(not_a_model->err, "not a usable GGUF model"));
    g_assert_cmpint(listed->status, ==, 0);
    g_assert_nonnull(strstr(listed->out_text, "tiny-cli"));
    g_assert_nonnull(strstr(listed->out_text, "llama"));
    g_assert_null(strstr(listed->out_text, "nope"));
    g_assert_cmpint(launched->status, ==, 0);
    g_assert_nonnull(strstr(launched->out_text, "llama-cpp"));
    g_assert_nonnull(strstr(launched->out_text, "Model:"));
    g_assert_cmpint(neither->status, ==, 2);
    g_assert_nonnull(strstr(neither->err, "--model"));
    g_assert_cmpint(in_use->status, ==, 1);
    g_assert_nonnull(strstr(in_use->err, "conflict"));
    /* Progress goes to stderr while the import runs, never to stdout. */
    g_assert_nonnull(strstr(added->err, "importing:"));
    g_assert_null(strstr(added->out_text, "importing:"));
    g_assert_cmpint(spare->status, ==, 0);
    g_assert_cmpint(removed->status, ==, 0);
    g_assert_cmpint(removed_twice->status, ==, 1);
    g_assert_nonnull(strstr(removed_twice->err, "tiny-spare"));
    g_assert_cmpint(after->status, ==, 0);
    g_assert_null(strstr(after->out_text, "tiny-spare"));
    g_assert_nonnull(strstr(after->out_text, "tiny-cli"));
}

/* Tenant E's history, written into the store before the daemon started
 * (its metering step's first pass runs before it listens): a CPU notebook
 * that ran 3.5 h across midnight, a GPU one that failed after 2.5 h. */
#define USAGE_ANALYSIS "0190b5d2-7c4e-7abc-8def-00000000e001"
#define USAGE_TRAIN "0190b5d2-7c4e-7abc-8def-00000000e002"

static void
insert_usage_history(const char *tenant_id)
{
    const char *const analysis[] = {
        "pending 2026-02-10T22:00:00.000000Z", "provisioning 2026-02-10T22:10:00.000000Z",
        "running 2026-02-10T22:15:00.000000Z", "stopping 2026-02-11T01:45:00.000000Z",
        "stopped 2026-02-11T01:46:00.000000Z", NULL};
    const char *const train[] = {
        "pending 2026-02-11T09:00:00.000000Z", "provisioning 2026-02-11T09:00:30.000000Z",
        "running 2026-02-11T09:01:00.000000Z", "failed 2026-02-11T11:31:00.000000Z", NULL};

    einsora_test_insert_history(server_daemon->data_dir,
                                einsora_test_daemon_database_url(server_daemon), tenant_id,
                                USAGE_ANALYSIS, "analysis", "cpu-2c-4g", analysis);
    einsora_test_insert_history(server_daemon->data_dir,
                                einsora_test_daemon_database_url(server_daemon), tenant_id,
                                USAGE_TRAIN, "train", "nvidia-l4-24gb", train);
}

static void
test_usage(void)
{
    const char *env_e[] = {"EINSORA_TOKEN", token_e, NULL};
    const char *env_c[] = {"EINSORA_TOKEN", token_c, NULL};
    const struct {
        const char *by;
        const char *golden;
    } tables[] = {
        {"class", "usage-class.txt"},
        {"workload", "usage-workload.txt"},
        {"day", "usage-day.txt"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(tables); i++) {
        g_autoptr(CliRun) run = run_cli_with(env_e, "usage", "--from", "2026-02-01", "--to",
                                             "2026-03-01", "--by", tables[i].by);
        assert_ok(run);
        assert_golden(tables[i].golden, run->out_text);
    }
    {
        /* The default is by class. */
        g_autoptr(CliRun) by_class = run_cli_with(env_e, "usage", "--from", "2026-02-01", "--to",
                                                  "2026-03-01", "--by", "class");
        g_autoptr(CliRun) plain =
            run_cli_with(env_e, "usage", "--from", "2026-02-01", "--to", "2026-03-01");
        assert_ok(plain);
        g_assert_cmpstr(plain->out_text, ==, by_class->out_text);
    }
    {
        /* --json is the API's own answer. */
        g_autoptr(CliRun) json = run_cli_with(env_e, "usage", "--from", "2026-02-11T09:30:00Z",
                                              "--to", "2026-02-11T10:00:00Z", "--json");
        g_autoptr(EinsoraTestResponse) direct = einsora_test_request(
            server_daemon, "GET",
            "/v1/usage?from=2026-02-11T09%3A30%3A00Z&to=2026-02-11T10%3A00%3A00Z", token_e, NULL,
            NULL, NULL);
        g_autofree gchar *expected = g_strdup_printf("%s\n", direct->body);

        assert_ok(json);
        g_assert_cmpuint(direct->status, ==, 200);
        g_assert_cmpstr(json->out_text, ==, expected);
    }
    {
        /* Another tenant has none of it. */
        g_autoptr(CliRun) run =
            run_cli_with(env_c, "usage", "--from", "2026-02-01", "--to", "2026-03-01");
        assert_ok(run);
        g_assert_cmpstr(run->out_text, ==, "No usage in that time.\n");
    }
    {
        g_autoptr(CliRun) bad_by = run_cli_with(env_e, "usage", "--by", "tenant");
        g_autoptr(CliRun) bad_from = run_cli_with(env_e, "usage", "--from", "last tuesday");
        g_autoptr(CliRun) extra = run_cli_with(env_e, "usage", "everything");

        g_assert_cmpint(bad_by->status, ==, 2);
        g_assert_nonnull(strstr(bad_by->err, "--by"));
        g_assert_cmpint(bad_from->status, ==, 1);
        g_assert_nonnull(strstr(bad_from->err, "invalid_request"));
        g_assert_cmpint(extra->status, ==, 2);
    }
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    secrets = g_ptr_array_new_with_free_func(g_free);
    /* A still world: states change only by the CLI's own requests, so the
     * tables and the golden files hold still (a controller, once wired,
     * reconciles an hour from now, and nothing wakes it sooner). */
    g_setenv("EINSORA_CONTROLLER_INTERVAL", "3600s", TRUE);
    g_setenv("EINSORA_CONTROLLER_WAKE", "off", TRUE);
    server_daemon = einsora_test_daemon_new();
    empty_home = einsora_test_dir_new();
    /* First run makes the owner and its token file; then an operator adds
     * tenants B and C while the daemon is stopped, and it starts again. */
    einsora_test_daemon_start(server_daemon);
    einsora_test_daemon_stop(server_daemon);
    token_b =
        einsora_test_daemon_create_account(server_daemon, "globex", "bob@globex.example", NULL);
    token_c =
        einsora_test_daemon_create_account(server_daemon, "initech", "carol@initech.example", NULL);
    token_d =
        einsora_test_daemon_create_account(server_daemon, "dunder", "dee@dunder.example", NULL);
    token_e =
        einsora_test_daemon_create_account(server_daemon, "vandelay", "eve@vandelay.example", NULL);
    einsora_test_daemon_start(server_daemon);
    {
        g_autoptr(EinsoraTestResponse) me =
            einsora_test_request(server_daemon, "GET", "/v1/me", token_d, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) me_e =
            einsora_test_request(server_daemon, "GET", "/v1/me", token_e, NULL, NULL, NULL);
        g_autofree gchar *tenant_d = g_strdup(einsora_test_response_string(me, "tenant_id"));

        einsora_test_daemon_stop(server_daemon);
        einsora_test_insert_workloads(server_daemon, tenant_d, D_WORKLOADS, "page");
        insert_reporting_machines(tenant_d);
        insert_usage_history(einsora_test_response_string(me_e, "tenant_id"));
        einsora_test_daemon_start(server_daemon);
    }
    g_ptr_array_add(secrets, g_strdup(server_daemon->owner_token));
    g_ptr_array_add(secrets, g_strdup(token_b));
    g_ptr_array_add(secrets, g_strdup(token_c));
    g_ptr_array_add(secrets, g_strdup(token_d));
    g_ptr_array_add(secrets, g_strdup(token_e));

    g_test_add_func("/cli/errors/domain-name-has-no-spaces", test_error_domain_name);
    g_test_add_func("/cli/help/every-command", test_help);
    g_test_add_func("/cli/usage/exit-status-2", test_usage_errors);
    g_test_add_func("/cli/workloads/launch-then-list-table-and-json", test_launch_and_list);
    g_test_add_func("/cli/workloads/list-follows-cursors", test_list_follows_cursors);
    g_test_add_func("/cli/workloads/open-refused-unless-running", test_open_refused_unless_running);
    g_test_add_func("/cli/launch/idempotency-key-per-invocation", test_launch_idempotency_key);
    g_test_add_func("/cli/golden/workloads-and-events", test_golden_tables);
    g_test_add_func("/cli/short-id/start-stop-delete-events", test_short_ids);
    g_test_add_func("/cli/short-id/ambiguous-and-unknown", test_ambiguous_and_unknown_prefix);
    g_test_add_func("/cli/export/exact-api-bytes", test_export_exact_bytes);
    g_test_add_func("/cli/errors/exit-status-1-with-api-code", test_api_errors);
    g_test_add_func("/cli/token/env-option-data-dir-file", test_token_sources);
    g_test_add_func("/cli/token/file-only-for-local-daemon", test_token_file_stays_local);
    g_test_add_func("/cli/tokens/create-list-revoke", test_tokens);
    g_test_add_func("/cli/tenancy/other-tenant-is-not-found", test_cross_tenant);
    g_test_add_func("/cli/machines/list", test_machines);
    g_test_add_func("/cli/machines/agent-version-and-clock", test_machines_agent);
    g_test_add_func("/cli/catalog/classes-with-quota", test_catalog);
    g_test_add_func("/cli/usage/tables-by-class-workload-day", test_usage);
    g_test_add_func("/cli/models/add-list-launch-remove", test_models);
    status = g_test_run();

    einsora_test_daemon_stop(server_daemon);
    einsora_test_daemon_free(server_daemon);
    einsora_test_dir_remove(empty_home);
    g_free(empty_home);
    g_free(token_b);
    g_free(token_c);
    g_free(token_d);
    g_free(token_e);
    g_ptr_array_unref(secrets);
    return status;
}
