/* `einsora __complete` and the scripts `einsora completion` makes, names
 * where IDs go, what a mistyped class lists, `open --browser` without a
 * browser, and the man page's EXAMPLES run as written: the real einsora
 * (EINSORA_CLI) against the real daemon on loopback with the sim driver,
 * so notebooks reach running (docs/adr/0065). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"

static EinsoraTestDaemon *server;
static gchar *home;     /* HOME, XDG_DATA_HOME: empty */
static gchar *recorder; /* a BROWSER that writes its argument to recorded */
static gchar *recorded;

typedef struct {
    int status;
    gchar *out;
    gchar *err;
    gdouble seconds;
} Run;

static void
run_free(Run *run)
{
    g_free(run->out);
    g_free(run->err);
    g_free(run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Run, run_free)

static gchar *
cli_dir(void)
{
    return g_path_get_dirname(g_getenv("EINSORA_CLI"));
}

/* @argv (NULL-terminated) with the test daemon's server and token, PATH
 * finding this einsora first; @env: name, value pairs (NULL unsets). */
static Run *
run_env(const char *const *env, const char *const *argv)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *dir = cli_dir();
    g_autofree gchar *path = g_strdup_printf("%s:%s", dir, g_getenv("PATH"));
    g_autoptr(GTimer) timer = g_timer_new();
    Run *run = g_new0(Run, 1);

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", server->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", server->owner_token, TRUE);
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    g_subprocess_launcher_setenv(launcher, "HOME", home, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_DATA_HOME", home, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CONFIG_HOME", home, TRUE);
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    g_subprocess_launcher_setenv(launcher, "PATH", path, TRUE);
    g_subprocess_launcher_setenv(launcher, "BROWSER", recorder, TRUE);
    /* A daemon busy with other tests (or under the sanitizers) may take
     * more than a person's second; test_daemon_down checks that second. */
    g_subprocess_launcher_setenv(launcher, "EINSORA_COMPLETION_TIMEOUT_MS", "15000", TRUE);
    g_subprocess_launcher_set_cwd(launcher, home);
    for (guint i = 0; env != NULL && env[i] != NULL; i += 2) {
        if (env[i + 1] != NULL)
            g_subprocess_launcher_setenv(launcher, env[i], env[i + 1], TRUE);
        else
            g_subprocess_launcher_unsetenv(launcher, env[i]);
    }
    process = g_subprocess_launcher_spawnv(launcher, argv, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &run->out, &run->err, &error));
    g_assert_no_error(error);
    run->seconds = g_timer_elapsed(timer, NULL);
    g_assert_true(g_subprocess_get_if_exited(process));
    run->status = g_subprocess_get_exit_status(process);
    {
        g_autofree gchar *line = g_strjoinv(" ", (gchar **)argv);
        g_test_message("%s -> %d (%.2fs)\n%s%s", line, run->status, run->seconds, run->out,
                       run->err);
    }
    return run;
}

#define einsora(...)                                                                               \
    run_env(NULL, (const char *const[]){g_getenv("EINSORA_CLI"), __VA_ARGS__, NULL})
#define einsora_with(env, ...)                                                                     \
    run_env((env), (const char *const[]){g_getenv("EINSORA_CLI"), __VA_ARGS__, NULL})

static void
assert_ok(Run *run)
{
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==, "");
}

/* Whether @line is one of @text's lines. */
static gboolean
has_line(const char *text, const char *line)
{
    g_autofree gchar *wrapped = g_strdup_printf("\n%s", text);
    g_autofree gchar *needle = g_strdup_printf("\n%s\n", line);
    return strstr(wrapped, needle) != NULL;
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

static gchar *
launch(const char *name)
{
    g_autoptr(Run) run = einsora("--json", "launch", "--kind", "notebook", "--class", "cpu-1c-2g",
                                 "--image", "jupyter-notebook", "--name", name);
    g_autoptr(JsonNode) root = NULL;

    assert_ok(run);
    root = parse(run->out);
    return g_strdup(json_object_get_string_member(json_node_get_object(root), "id"));
}

static gchar *
state_of(const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);
    g_autoptr(EinsoraTestResponse) got =
        einsora_test_request(server, "GET", path, server->owner_token, NULL, NULL, NULL);

    g_assert_cmpuint(got->status, ==, 200);
    return g_strdup(einsora_test_response_string(got, "state"));
}

static void
wait_for_state(const char *id, const char *state)
{
    for (guint i = 0; i < 300; i++) {
        g_autofree gchar *now = state_of(id);
        if (g_str_equal(now, state))
            return;
        g_usleep(100 * 1000);
    }
    g_error("workload %s never reached %s", id, state);
}

/* Deletes @id and waits until it is gone: the sim machine is this one, and
 * a notebook that runs holds its CPUs (two, on a small one). */
static void
forget(const char *id)
{
    g_autofree gchar *state = state_of(id);

    if (!g_str_equal(state, "deleted") && !g_str_equal(state, "deleting")) {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
        g_autoptr(EinsoraTestResponse) got =
            einsora_test_request(server, "DELETE", path, server->owner_token, NULL, NULL, NULL);
        g_assert_cmpuint(got->status, <, 300);
    }
    wait_for_state(id, "deleted");
}

/* The command names `einsora --help` lists, each offered for an empty
 * word; a prefix narrows them. */
static void
test_commands(void)
{
    g_autoptr(Run) help = einsora("--help");
    g_autoptr(Run) all = einsora("__complete", "");
    g_autoptr(Run) la = einsora("__complete", "la");
    g_auto(GStrv) lines = NULL;
    gboolean listing = FALSE;
    guint commands = 0;

    assert_ok(help);
    assert_ok(all);
    lines = g_strsplit(help->out, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_equal(lines[i], "Commands:")) {
            listing = TRUE;
            continue;
        }
        if (listing && g_str_has_prefix(lines[i], "  ") && lines[i][2] != ' ') {
            g_autofree gchar *name = g_strndup(lines[i] + 2, strcspn(lines[i] + 2, " "));
            g_assert_true(has_line(all->out, name));
            commands++;
        } else if (listing && lines[i][0] != ' ') {
            listing = FALSE;
        }
    }
    g_assert_cmpuint(commands, >=, 20);
    g_assert_false(has_line(all->out, "__complete"));
    assert_ok(la);
    g_assert_cmpstr(la->out, ==, "launch\n");
    {
        g_autoptr(Run) sub = einsora("__complete", "--json", "tokens", "re");
        g_autoptr(Run) admin = einsora("__complete", "admin", "");
        g_autoptr(Run) shells = einsora("__complete", "completion", "");

        g_assert_cmpstr(sub->out, ==, "revoke\n");
        g_assert_cmpstr(admin->out, ==, "accounts\ntenants\nquota\n");
        g_assert_cmpstr(shells->out, ==, "bash\nzsh\nfish\n");
    }
}

/* Every long option `launch --help` prints is offered: a new option can't
 * miss completion. */
static void
test_launch_options(void)
{
    g_autoptr(Run) help = einsora("launch", "--help");
    g_autoptr(Run) offered = einsora("__complete", "launch", "--");
    g_autoptr(GRegex) option =
        g_regex_new("^  (?:-[a-zA-Z], )?(--[a-z][a-z-]*)", G_REGEX_MULTILINE, 0, NULL);
    g_autoptr(GMatchInfo) match = NULL;
    guint count = 0;

    assert_ok(help);
    assert_ok(offered);
    g_regex_match(option, help->out, 0, &match);
    while (g_match_info_matches(match)) {
        g_autofree gchar *name = g_match_info_fetch(match, 1);
        g_test_message("launch --help has %s", name);
        g_assert_true(has_line(offered->out, name));
        count++;
        g_match_info_next(match, NULL);
    }
    g_assert_cmpuint(count, >=, 10);
    {
        /* A short option, and a command's own after the globals. */
        g_autoptr(Run) open = einsora("__complete", "--json", "open", "-");
        g_assert_true(has_line(open->out, "-b"));
        g_assert_true(has_line(open->out, "--browser"));
        g_assert_true(has_line(open->out, "--server"));
    }
}

/* --class offers the daemon's classes, whichever way it is written. */
static void
test_class_values(void)
{
    g_autoptr(EinsoraTestResponse) catalog =
        einsora_test_request(server, "GET", "/v1/catalog", server->owner_token, NULL, NULL, NULL);
    JsonArray *classes =
        json_object_get_array_member(json_node_get_object(catalog->json), "classes");
    g_autoptr(Run) spaced = einsora("__complete", "launch", "--kind", "notebook", "--class", "");
    g_autoptr(Run) joined = einsora("__complete", "launch", "--class=cpu-2");
    g_autoptr(Run) split = einsora("__complete", "launch", "--class", "=", "cpu-2");
    g_autoptr(Run) images = einsora("__complete", "launch", "--image", "jupyter-n");

    assert_ok(spaced);
    g_assert_cmpuint(json_array_get_length(classes), >, 3);
    for (guint i = 0; i < json_array_get_length(classes); i++) {
        const char *name =
            json_object_get_string_member(json_array_get_object_element(classes, i), "name");
        g_assert_true(has_line(spaced->out, name));
    }
    g_assert_cmpstr(joined->out, ==, "--class=cpu-2c-4g\n");
    g_assert_cmpstr(split->out, ==, "cpu-2c-4g\n");
    g_assert_cmpstr(images->out, ==, "jupyter-notebook\n");
}

/* A workload's ID as the tables show it, and its name. */
static void
test_workload_values(void)
{
    g_autofree gchar *id = launch("completed-one");
    g_autoptr(Run) table = einsora("workloads");
    g_autoptr(Run) stop = einsora("__complete", "stop", "");
    g_autoptr(Run) named = einsora("__complete", "events", "completed-");
    g_auto(GStrv) lines = NULL;
    gboolean found = FALSE;

    assert_ok(stop);
    g_assert_true(has_line(stop->out, "completed-one"));
    g_assert_cmpstr(named->out, ==, "completed-one\n");
    lines = g_strsplit(stop->out, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strlen(lines[i]) >= 8 && g_str_has_prefix(id, lines[i])) {
            g_autofree gchar *row = g_strdup_printf("\n%s ", lines[i]);
            g_autofree gchar *wrapped = g_strdup_printf("\n%s", table->out);
            /* The same prefix as the table shows. */
            g_assert_nonnull(strstr(wrapped, row));
            found = TRUE;
        }
    }
    g_assert_true(found);
    {
        /* Past the short ID, the whole one. */
        g_autofree gchar *long_prefix = g_strndup(id, 20);
        g_autoptr(Run) whole = einsora("__complete", "stop", long_prefix);
        g_autofree gchar *expected = g_strdup_printf("%s\n", id);
        g_assert_cmpstr(whole->out, ==, expected);
    }
    forget(id);
}

/* With the daemon gone, or one that never answers: nothing, exit 0, no
 * message, at once. */
static void
test_daemon_down(void)
{
    g_autoptr(GSocketListener) silent = g_socket_listener_new();
    g_autoptr(GError) error = NULL;
    guint16 port = g_socket_listener_add_any_inet_port(silent, NULL, &error);
    g_autofree gchar *silent_url = g_strdup_printf("http://127.0.0.1:%u", port);
    const char *refused[] = {"EINSORA_SERVER", "http://127.0.0.1:9",
                             "EINSORA_COMPLETION_TIMEOUT_MS", NULL, NULL};
    const char *hanging[] = {"EINSORA_SERVER", silent_url, "EINSORA_COMPLETION_TIMEOUT_MS", NULL,
                             NULL};

    g_assert_no_error(error);
    {
        g_autoptr(Run) run = einsora_with(refused, "__complete", "stop", "");
        g_autoptr(Run) classes = einsora_with(refused, "__complete", "launch", "--class", "");
        assert_ok(run);
        g_assert_cmpstr(run->out, ==, "");
        g_assert_cmpfloat(run->seconds, <, 2.0);
        assert_ok(classes);
        g_assert_cmpstr(classes->out, ==, "");
    }
    {
        g_autoptr(Run) run = einsora_with(hanging, "__complete", "stop", "");
        g_autoptr(Run) commands = einsora_with(hanging, "__complete", "st");
        assert_ok(run);
        g_assert_cmpstr(run->out, ==, "");
        g_assert_cmpfloat(run->seconds, <, 3.0);
        /* What needs no daemon still completes. */
        g_assert_cmpstr(commands->out, ==, "start\nstop\n");
    }
}

/* The scripts meson made with `einsora completion SHELL`, to be installed. */
static const char *
script_path(const char *variable)
{
    const char *path = g_getenv(variable);
    g_assert_nonnull(path);
    return path;
}

/* The installed bash script in a real bash: COMPREPLY as bash fills it. */
static void
test_bash(void)
{
    g_autofree gchar *bash = g_find_program_in_path("bash");
    const struct {
        const char *words;
        int cword;
        const char *expected;
    } cases[] = {
        {"einsora la", 1, "launch\n"},
        {"einsora launch --class cpu-2", 3, "cpu-2c-4g\n"},
        {"einsora launch --class = cpu-2", 4, "cpu-2c-4g\n"},
        {"einsora launch --class =", 3, "=cpu-1c-2g\n"},
        {"einsora tokens cr", 2, "create\n"},
    };

    if (bash == NULL) {
        g_test_skip("no bash");
        return;
    }
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *script =
            g_strdup_printf("source \"$1\" && COMP_WORDS=(%s) && COMP_CWORD=%d && _einsora && "
                            "printf '%%s\\n' \"${COMPREPLY[@]}\" | head -n 1",
                            cases[i].words, cases[i].cword);
        g_autoptr(Run) run =
            run_env(NULL, (const char *const[]){bash, "-c", script, "bash",
                                                script_path("EINSORA_COMPLETION_BASH"), NULL});
        assert_ok(run);
        g_assert_cmpstr(run->out, ==, cases[i].expected);
    }
}

static void
test_zsh_and_fish(void)
{
    g_autofree gchar *zsh = g_find_program_in_path("zsh");
    g_autofree gchar *fish = g_find_program_in_path("fish");

    if (zsh == NULL || fish == NULL) {
        g_test_skip("no zsh or no fish");
        return;
    }
    {
        g_autoptr(Run) run = run_env(
            NULL, (const char *const[]){zsh, "-n", script_path("EINSORA_COMPLETION_ZSH"), NULL});
        assert_ok(run);
    }
    {
        g_autoptr(Run) run = run_env(
            NULL, (const char *const[]){fish, "-n", script_path("EINSORA_COMPLETION_FISH"), NULL});
        assert_ok(run);
    }
    {
        /* The zsh function with its words, compadd recording what it gets. */
        g_autofree gchar *command = g_strdup_printf(
            "compdef() { :; }; compadd() { shift; print -l -- \"$@\"; }; source %s; "
            "words=(einsora la); CURRENT=2; _einsora; "
            "words=(einsora launch --class=cpu-2); CURRENT=3; _einsora",
            script_path("EINSORA_COMPLETION_ZSH"));
        g_autoptr(Run) run = run_env(NULL, (const char *const[]){zsh, "-f", "-c", command, NULL});
        assert_ok(run);
        g_assert_cmpstr(run->out, ==, "launch\n--class=cpu-2c-4g\n");
    }
    {
        /* fish itself asks the script, as at a prompt. */
        g_autofree gchar *command =
            g_strdup_printf("source %s; complete -C 'einsora la'; complete -C 'einsora "
                            "launch --image jupyter-n'",
                            script_path("EINSORA_COMPLETION_FISH"));
        g_autoptr(Run) run =
            run_env(NULL, (const char *const[]){fish, "--no-config", "-c", command, NULL});
        assert_ok(run);
        g_assert_cmpstr(run->out, ==, "launch\njupyter-notebook\n");
    }
}

/* A name works where an ID goes; a name two live workloads share, or one
 * that is also another's ID prefix, is a usage error naming the IDs. */
static void
test_names(void)
{
    g_autofree gchar *solo = launch("by-name");
    g_autofree gchar *twin_1 = launch("twin");
    g_autofree gchar *twin_2 = launch("twin");
    g_autofree gchar *hexy = launch("beef");

    wait_for_state(solo, "running");
    {
        g_autoptr(Run) run = einsora("stop", "by-name");
        g_autofree gchar *expected = g_strdup_printf("Workload “by-name” (%s) is stopping\n", solo);
        assert_ok(run);
        g_assert_cmpstr(run->out, ==, expected);
    }
    {
        g_autoptr(Run) run = einsora("events", "by-name");
        assert_ok(run);
        g_assert_nonnull(strstr(run->out, "stopping"));
    }
    {
        g_autoptr(Run) run = einsora("events", "twin");
        g_assert_cmpint(run->status, ==, 2);
        g_assert_nonnull(strstr(run->err, "“twin” is the name of 2 workloads"));
        g_assert_nonnull(strstr(run->err, twin_1));
        g_assert_nonnull(strstr(run->err, twin_2));
        g_assert_cmpstr(run->out, ==, "");
    }
    {
        /* "beef" looks like a prefix, but no ID starts with it: the name. */
        g_autoptr(Run) run = einsora("--json", "export", "beef");
        assert_ok(run);
        g_assert_nonnull(strstr(run->out, hexy));
    }
    {
        /* A name that is another workload's ID prefix is both. */
        g_autofree gchar *prefix = g_strndup(solo, 13);
        g_autofree gchar *other = launch(prefix);
        g_autoptr(Run) run = einsora("events", prefix);

        g_assert_cmpint(run->status, ==, 2);
        g_assert_nonnull(strstr(run->err, other));
        g_assert_nonnull(strstr(run->err, solo));
        g_assert_nonnull(strstr(run->err, "give the whole ID"));
        forget(other);
    }
    forget(solo);
    forget(hexy);
    {
        /* Deleted by name; the name then goes to a live namesake. */
        g_autoptr(Run) deleted = einsora("delete", twin_1);
        g_autoptr(Run) again = einsora("delete", "twin");
        g_autofree gchar *expected = g_strdup_printf("Workload “twin” (%s) is deleting\n", twin_2);

        assert_ok(deleted);
        wait_for_state(twin_1, "deleted");
        assert_ok(again);
        g_assert_cmpstr(again->out, ==, expected);
        wait_for_state(twin_2, "deleted");
    }
    {
        /* Only deleted ones have it: the timeline is still there. */
        g_autoptr(Run) run = einsora("events", "twin");
        g_assert_cmpint(run->status, ==, 2);
        g_assert_nonnull(strstr(run->err, "is the name of 2 workloads"));
    }
    {
        g_autoptr(Run) run = einsora("events", "no-such-name");
        g_assert_cmpint(run->status, ==, 2);
        g_assert_nonnull(strstr(run->err, "is neither the name of one of your workloads"));
    }
}

/* A typo in the class or image: the message lists what is offered. */
static void
test_unknown_names(void)
{
    g_autoptr(Run) klass = einsora("launch", "--kind", "notebook", "--class", "cpu-1c-3g",
                                   "--image", "jupyter-notebook");
    g_autoptr(Run) image =
        einsora("launch", "--kind", "notebook", "--class", "cpu-1c-2g", "--image", "jupyter-nb");

    g_assert_cmpint(klass->status, ==, 1);
    g_assert_nonnull(strstr(klass->err, "einsora: invalid_request: unknown class “cpu-1c-3g”; "
                                        "classes offered: cpu-1c-2g, cpu-2c-4g, "));
    g_assert_nonnull(strstr(klass->err, "(einsora catalog lists them with your quota)"));
    g_assert_cmpint(image->status, ==, 1);
    g_assert_nonnull(strstr(image->err, "unknown image “jupyter-nb”; images offered: "));
    g_assert_nonnull(strstr(image->err, "jupyter-notebook"));
}

/* --browser that starts none exits 1 and says so; one that starts gets
 * the link, which is then not printed. */
static void
test_open_browser(void)
{
    g_autofree gchar *id = launch("browsed");
    const char *failing[] = {
        "BROWSER", "false:/nonexistent/browser", "DISPLAY", NULL, "WAYLAND_DISPLAY", NULL, NULL};
    const char *none[] = {"BROWSER", NULL, "DISPLAY", NULL, "WAYLAND_DISPLAY", NULL, NULL};

    wait_for_state(id, "running");
    {
        g_autoptr(Run) run = einsora_with(failing, "open", "--browser", "browsed");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "einsora: no browser could be started"));
        g_assert_cmpstr(run->out, ==, "");
    }
    {
        g_autoptr(Run) run = einsora_with(none, "open", "--browser", "browsed");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "no graphical session"));
    }
    {
        g_autoptr(Run) run = einsora("open", "-b", "browsed");
        g_autofree gchar *link = NULL;

        assert_ok(run);
        g_assert_cmpstr(run->out, ==, "");
        g_assert_true(g_file_get_contents(recorded, &link, NULL, NULL));
        g_assert_true(g_str_has_prefix(link, "http://"));
        g_assert_nonnull(strstr(link, "/_einsora/open?ticket="));
    }
    forget(id);
}

/* Each command line in the man page's EXAMPLES runs as written (in bash,
 * in order, against the sim driver, a few tries each while a notebook
 * starts or stops), and each class and image it names is in the default
 * catalog. */
static void
test_man_examples(void)
{
    g_autofree gchar *page_path =
        g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "docs", "einsora.1.md", NULL);
    g_autofree gchar *catalog_path =
        g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "catalog", "catalog.json", NULL);
    g_autofree gchar *page = NULL;
    g_autofree gchar *catalog_text = NULL;
    g_autoptr(JsonNode) catalog = NULL;
    g_autoptr(GHashTable) offered = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree gchar *bash = g_find_program_in_path("bash");
    g_auto(GStrv) lines = NULL;
    const char *section;
    guint examples = 0;

    g_assert_true(g_file_get_contents(page_path, &page, NULL, NULL));
    g_assert_true(g_file_get_contents(catalog_path, &catalog_text, NULL, NULL));
    catalog = parse(catalog_text);
    {
        const char *lists[] = {"classes", "images"};
        for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
            JsonArray *array =
                json_object_get_array_member(json_node_get_object(catalog), lists[l]);
            for (guint i = 0; i < json_array_get_length(array); i++)
                g_hash_table_add(offered, g_strdup(json_object_get_string_member(
                                              json_array_get_object_element(array, i), "name")));
        }
    }
    {
        /* Every name the page gives as a class or image: after --class or
         * --image, or in bold where it says which ("for example"). */
        g_autoptr(GRegex) named = g_regex_new(
            "(?:--class[ =]|--image[ =]|\\*\\*)((?:cpu|jupyter|nvidia|amd|apple|h100|h200|l40s|"
            "llama|mlx|ubuntu)-[a-z0-9.-]*[a-z0-9]|vllm)\\b",
            0, 0, NULL);
        g_autoptr(Run) help = einsora("launch", "--help");
        const char *texts[] = {page, help->out};
        guint names = 0;

        for (guint t = 0; t < G_N_ELEMENTS(texts); t++) {
            g_autoptr(GMatchInfo) match = NULL;
            g_regex_match(named, texts[t], 0, &match);
            while (g_match_info_matches(match)) {
                g_autofree gchar *name = g_match_info_fetch(match, 1);
                g_test_message("the page or --help names %s", name);
                g_assert_true(g_hash_table_contains(offered, name));
                names++;
                g_match_info_next(match, NULL);
            }
        }
        g_assert_cmpuint(names, >=, 4);
    }
    {
        /* --help's examples in the option texts: "cpu-2c-4g, l40s-48gb, …". */
        g_autoptr(Run) help = einsora("launch", "--help");
        const char *mentioned[] = {"cpu-2c-4g", "l40s-48gb", "jupyter-linux", "jupyter-notebook"};
        for (guint i = 0; i < G_N_ELEMENTS(mentioned); i++) {
            g_assert_nonnull(strstr(help->out, mentioned[i]));
            g_assert_true(g_hash_table_contains(offered, mentioned[i]));
        }
    }

    section = strstr(page, "\n# EXAMPLES\n");
    g_assert_nonnull(section);
    lines = g_strsplit(section + strlen("\n# EXAMPLES\n"), "\n", -1);
    for (guint i = 0; lines[i] != NULL && !g_str_has_prefix(lines[i], "# "); i++) {
        g_autofree gchar *script = NULL;
        gboolean done = FALSE;
        guint tries;

        if (!g_str_has_prefix(lines[i], "    "))
            continue;
        script = g_strdup_printf("set -e -o pipefail\n%s\n", lines[i] + 4);
        /* A launch runs once: tried again after the server made it, it
         * would make a second workload of that name. */
        tries = strstr(lines[i], "einsora launch") != NULL ? 1 : 60;
        for (guint attempt = 0; attempt < tries && !done; attempt++) {
            g_autoptr(Run) run = run_env(NULL, (const char *const[]){bash, "-c", script, NULL});
            done = run->status == 0 && g_str_equal(run->err, "");
            if (!done)
                g_usleep(250 * 1000);
        }
        if (!done)
            g_error("the man page's example doesn't work: %s", lines[i] + 4);
        examples++;
    }
    g_assert_cmpuint(examples, >=, 8);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    home = einsora_test_dir_new();
    recorded = g_build_filename(home, "browser-got", NULL);
    recorder = g_build_filename(home, "browser", NULL);
    {
        g_autofree gchar *script =
            g_strdup_printf("#!/bin/sh\nprintf '%%s' \"$1\" > '%s'\n", recorded);
        g_assert_true(g_file_set_contents(recorder, script, -1, NULL));
        g_assert_cmpint(g_chmod(recorder, 0700), ==, 0);
    }
    server = einsora_test_daemon_new();
    einsora_test_daemon_setenv(server, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(server, "EINSORA_CONTROLLER_INTERVAL", "1s");
    einsora_test_daemon_start(server);

    g_test_add_func("/cli/complete/commands", test_commands);
    g_test_add_func("/cli/complete/launch-options-from-help", test_launch_options);
    g_test_add_func("/cli/complete/class-and-image-values", test_class_values);
    g_test_add_func("/cli/complete/workload-ids-and-names", test_workload_values);
    g_test_add_func("/cli/complete/daemon-down-or-silent", test_daemon_down);
    g_test_add_func("/cli/complete/bash-script", test_bash);
    g_test_add_func("/cli/complete/zsh-and-fish-scripts", test_zsh_and_fish);
    g_test_add_func("/cli/names/stop-events-delete-export", test_names);
    g_test_add_func("/cli/launch/unknown-class-or-image-lists-offered", test_unknown_names);
    g_test_add_func("/cli/open/browser-failure-is-an-error", test_open_browser);
    g_test_add_func("/cli/man/examples-run-as-written", test_man_examples);
    status = g_test_run();

    einsora_test_daemon_stop(server);
    einsora_test_daemon_free(server);
    einsora_test_dir_remove(home);
    g_free(home);
    g_free(recorder);
    g_free(recorded);
    return status;
}
