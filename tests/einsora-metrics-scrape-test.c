/* GET /metrics on the real einsora-daemon (sim driver): who may scrape
 * it, and what it answers, read by a strict parser of Prometheus' text
 * format 0.0.4 (and by promtool when this machine has it: Debian's
 * prometheus package ships it). The values move: a launch is an
 * admission, a request through the access proxy is counted. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "einsora-test-daemon.h"

#define JSON "application/json"

static EinsoraTestDaemon *server;
static gchar *other_token; /* another tenant's */

/* The strict parser */

typedef struct {
    gchar *type;   /* as TYPE said */
    gboolean help; /* HELP seen */
    gboolean samples;
} Family;

typedef struct {
    GHashTable *families; /* name -> Family */
    GHashTable *values;   /* canonical series name -> gdouble* */
    /* Histograms: "family{labels without le}" -> GArray of (le, count) pairs */
    GHashTable *buckets;
} Exposition;

static void
family_free(Family *family)
{
    g_free(family->type);
    g_free(family);
}

static void
exposition_free(Exposition *exposition)
{
    g_hash_table_unref(exposition->families);
    g_hash_table_unref(exposition->values);
    g_hash_table_unref(exposition->buckets);
    g_free(exposition);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Exposition, exposition_free)

static gboolean
is_name(const char *name, gboolean colons)
{
    if (*name == '\0' || g_ascii_isdigit(*name))
        return FALSE;
    for (const char *c = name; *c != '\0'; c++) {
        if (!g_ascii_isalnum(*c) && *c != '_' && !(colons && *c == ':'))
            return FALSE;
    }
    return TRUE;
}

/* A sample's value: a float in the C locale, or the format's specials. */
static gboolean
parse_value(const char *text, double *value)
{
    char *end = NULL;

    if (g_str_equal(text, "+Inf") || g_str_equal(text, "-Inf") || g_str_equal(text, "NaN")) {
        *value = g_str_equal(text, "+Inf") ? INFINITY : g_str_equal(text, "-Inf") ? -INFINITY : NAN;
        return TRUE;
    }
    if (*text == '\0' || g_ascii_isspace(*text))
        return FALSE;
    errno = 0;
    *value = g_ascii_strtod(text, &end);
    return errno == 0 && *end == '\0';
}

/* HELP text may escape only backslash and newline. */
static gboolean
help_escapes_valid(const char *text)
{
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '\\') {
            if (c[1] != '\\' && c[1] != 'n')
                return FALSE;
            c++;
        }
    }
    return TRUE;
}

typedef struct {
    gchar *name;
    gchar *value;
} Label;

static void
label_clear(Label *label)
{
    g_free(label->name);
    g_free(label->value);
}

static int
label_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(((const Label *)a)->name, ((const Label *)b)->name);
}

/* {a="x",b="y"}: names valid, values quoted with \\ \" \n only, no
 * trailing comma, no name twice. Returns where it ended, or NULL. */
static const char *
parse_labels(const char *p, GArray *labels)
{
    g_assert_true(*p == '{');
    p++;
    if (*p == '}')
        return NULL; /* we never write an empty set */
    for (;;) {
        const char *start = p;
        Label label = {NULL, NULL};
        GString *value = g_string_new(NULL);

        while (g_ascii_isalnum(*p) || *p == '_')
            p++;
        label.name = g_strndup(start, p - start);
        if (!is_name(label.name, FALSE) || g_str_has_prefix(label.name, "__") || *p != '=' ||
            p[1] != '"') {
            g_free(label.name);
            g_string_free(value, TRUE);
            return NULL;
        }
        p += 2;
        while (*p != '"') {
            if (*p == '\0' || *p == '\n') {
                g_free(label.name);
                g_string_free(value, TRUE);
                return NULL;
            }
            if (*p == '\\') {
                if (p[1] == '\\' || p[1] == '"')
                    g_string_append_c(value, p[1]);
                else if (p[1] == 'n')
                    g_string_append_c(value, '\n');
                else {
                    g_free(label.name);
                    g_string_free(value, TRUE);
                    return NULL;
                }
                p += 2;
                continue;
            }
            g_string_append_c(value, *p++);
        }
        p++;
        label.value = g_string_free(value, FALSE);
        for (guint i = 0; i < labels->len; i++)
            g_assert_cmpstr(g_array_index(labels, Label, i).name, !=, label.name);
        g_array_append_val(labels, label);
        if (*p == '}')
            return p + 1;
        if (*p != ',' || p[1] == '}')
            return NULL;
        p++;
    }
}

static gchar *
series_key(const char *name, GArray *labels, gboolean without_le)
{
    GString *key = g_string_new(name);
    gboolean any = FALSE;

    g_array_sort(labels, label_cmp);
    for (guint i = 0; i < labels->len; i++) {
        const Label *label = &g_array_index(labels, Label, i);
        if (without_le && g_str_equal(label->name, "le"))
            continue;
        g_string_append_printf(key, "%s%s=\"%s\"", any ? "," : "{", label->name, label->value);
        any = TRUE;
    }
    if (any)
        g_string_append_c(key, '}');
    return g_string_free(key, FALSE);
}

/* The family a sample's name belongs to: itself, or for a histogram
 * the name without _bucket, _sum or _count. */
static gchar *
family_of(Exposition *exposition, const char *name, const char **suffix)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};

    *suffix = "";
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        if (g_str_has_suffix(name, suffixes[i])) {
            g_autofree gchar *base = g_strndup(name, strlen(name) - strlen(suffixes[i]));
            Family *family = g_hash_table_lookup(exposition->families, base);
            if (family != NULL && g_strcmp0(family->type, "histogram") == 0) {
                *suffix = suffixes[i];
                return g_steal_pointer(&base);
            }
        }
    }
    return g_strdup(name);
}

static Exposition *
parse_exposition(const char *text)
{
    Exposition *exposition = g_new0(Exposition, 1);
    g_auto(GStrv) lines = NULL;
    g_autofree gchar *current = NULL; /* the family whose lines these are */
    guint n;

    exposition->families =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)family_free);
    exposition->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    exposition->buckets =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref);
    g_assert_true(g_utf8_validate(text, -1, NULL));
    g_assert_true(g_str_has_suffix(text, "\n"));
    lines = g_strsplit(text, "\n", -1);
    n = g_strv_length(lines) - 1; /* the last is after the final newline */
    for (guint i = 0; i < n; i++) {
        const char *line = lines[i];

        g_test_message("%s", line);
        g_assert_cmpstr(line, !=, "");
        if (g_str_has_prefix(line, "# HELP ") || g_str_has_prefix(line, "# TYPE ")) {
            g_auto(GStrv) parts = g_strsplit(line + 7, " ", 2);
            Family *family;

            g_assert_nonnull(parts[0]);
            g_assert_nonnull(parts[1]);
            g_assert_true(is_name(parts[0], TRUE));
            family = g_hash_table_lookup(exposition->families, parts[0]);
            if (family == NULL) {
                family = g_new0(Family, 1);
                g_hash_table_insert(exposition->families, g_strdup(parts[0]), family);
            }
            /* Before its samples; once each. */
            g_assert_false(family->samples);
            if (line[2] == 'H') {
                g_assert_false(family->help);
                g_assert_true(help_escapes_valid(parts[1]));
                family->help = TRUE;
            } else {
                static const char *const types[] = {"counter", "gauge",   "histogram",
                                                    "summary", "untyped", NULL};
                g_assert_null(family->type);
                g_assert_true(g_strv_contains(types, parts[1]));
                family->type = g_strdup(parts[1]);
            }
            g_free(current);
            current = g_strdup(parts[0]);
            continue;
        }
        /* Any other comment is allowed by the format, but never written. */
        g_assert_false(line[0] == '#');
        {
            g_autoptr(GArray) labels = g_array_new(FALSE, TRUE, sizeof(Label));
            const char *p = line;
            const char *suffix = NULL;
            g_autofree gchar *family_name = NULL;
            g_autofree gchar *name = NULL;
            g_autofree gchar *key = NULL;
            Family *family;
            double value;

            g_array_set_clear_func(labels, (GDestroyNotify)label_clear);
            while (g_ascii_isalnum(*p) || *p == '_' || *p == ':')
                p++;
            name = g_strndup(line, p - line);
            g_assert_true(is_name(name, TRUE));
            if (*p == '{') {
                p = parse_labels(p, labels);
                if (p == NULL)
                    g_error("labels not as the format writes them: %s", line);
            }
            /* One space, the value, and no timestamp (never written). */
            g_assert_cmpint(*p, ==, ' ');
            p++;
            g_assert_null(strchr(p, ' '));
            g_assert_true(parse_value(p, &value));

            family_name = family_of(exposition, name, &suffix);
            family = g_hash_table_lookup(exposition->families, family_name);
            /* TYPE (and HELP) first, and each family's lines together. */
            g_assert_nonnull(family);
            g_assert_nonnull(family->type);
            g_assert_true(family->help);
            g_assert_cmpstr(current, ==, family_name);
            family->samples = TRUE;
            if (g_str_equal(family->type, "counter"))
                g_assert_cmpfloat(value, >=, 0);
            for (guint j = 0; j < labels->len; j++) {
                if (g_str_equal(g_array_index(labels, Label, j).name, "le"))
                    g_assert_cmpstr(suffix, ==, "_bucket");
            }
            key = series_key(name, labels, FALSE);
            g_assert_false(g_hash_table_contains(exposition->values, key));
            g_hash_table_insert(exposition->values, g_strdup(key), g_memdup2(&value, sizeof value));
            if (g_str_equal(suffix, "_bucket")) {
                g_autofree gchar *base = series_key(family_name, labels, TRUE);
                GArray *buckets = g_hash_table_lookup(exposition->buckets, base);
                const char *le = NULL;
                double pair[2];

                for (guint j = 0; j < labels->len; j++) {
                    if (g_str_equal(g_array_index(labels, Label, j).name, "le"))
                        le = g_array_index(labels, Label, j).value;
                }
                g_assert_nonnull(le);
                g_assert_true(parse_value(le, &pair[0]));
                pair[1] = value;
                if (buckets == NULL) {
                    buckets = g_array_new(FALSE, FALSE, sizeof pair);
                    g_hash_table_insert(exposition->buckets, g_steal_pointer(&base), buckets);
                }
                g_array_append_val(buckets, pair);
            }
        }
    }
    /* Every histogram: buckets in increasing le with cumulative counts,
     * ending at +Inf, which is its _count; _sum there too. */
    {
        GHashTableIter iter;
        gpointer key, value;

        g_hash_table_iter_init(&iter, exposition->buckets);
        while (g_hash_table_iter_next(&iter, &key, &value)) {
            GArray *buckets = value;
            const char *series = key;
            const char *brace = strchr(series, '{');
            g_autofree gchar *family =
                g_strndup(series, brace != NULL ? (gsize)(brace - series) : strlen(series));
            g_autofree gchar *count_key =
                g_strdup_printf("%s_count%s", family, brace != NULL ? brace : "");
            g_autofree gchar *sum_key =
                g_strdup_printf("%s_sum%s", family, brace != NULL ? brace : "");
            const double *count = g_hash_table_lookup(exposition->values, count_key);
            const double *last = &g_array_index(buckets, double, 2 * (buckets->len - 1));

            g_test_message("histogram %s: %u buckets", series, buckets->len);
            g_assert_nonnull(count);
            g_assert_nonnull(g_hash_table_lookup(exposition->values, sum_key));
            for (guint i = 1; i < buckets->len; i++) {
                const double *before = &g_array_index(buckets, double, 2 * (i - 1));
                const double *bucket = &g_array_index(buckets, double, 2 * i);
                g_assert_cmpfloat(bucket[0], >, before[0]);
                g_assert_cmpfloat(bucket[1], >=, before[1]);
            }
            g_assert_true(isinf(last[0]) && last[0] > 0);
            g_assert_cmpfloat(last[1], ==, *count);
        }
        /* And every histogram family has its buckets. */
        g_hash_table_iter_init(&iter, exposition->families);
        while (g_hash_table_iter_next(&iter, &key, &value)) {
            const Family *family = value;
            g_assert_nonnull(family->type);
            g_assert_true(family->help);
        }
    }
    return exposition;
}

static double
value_of(Exposition *exposition, const char *series)
{
    const double *value = g_hash_table_lookup(exposition->values, series);

    if (value == NULL)
        g_error("no series %s in the exposition", series);
    return *value;
}

/* promtool, when installed (Debian's prometheus package), or named by
 * EINSORA_PROMTOOL: a second, independent reading. */
static void
check_with_promtool(const char *text)
{
    const char *named = g_getenv("EINSORA_PROMTOOL");
    g_autofree gchar *promtool =
        named != NULL ? g_strdup(named) : g_find_program_in_path("promtool");
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;

    if (promtool == NULL) {
        g_test_message("promtool isn't installed (apt-get install prometheus): only the strict "
                       "parser read it");
        return;
    }
    process = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                   G_SUBPROCESS_FLAGS_STDERR_MERGE,
                               &error, promtool, "check", "metrics", NULL);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, text, NULL, &out, &err, &error));
    g_assert_no_error(error);
    g_test_message("promtool check metrics: %s", out);
    /* It lints too (names, units, _total): any remark is a failure here. */
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
    g_assert_cmpstr(out, ==, "");
}

/* Requests */

static EinsoraTestResponse *
scrape(const char *token, const char *const *headers)
{
    return einsora_test_request(server, "GET", "/metrics", token, NULL, NULL, headers);
}

static Exposition *
scrape_owner(void)
{
    g_autoptr(EinsoraTestResponse) response = scrape(server->owner_token, NULL);

    g_assert_cmpuint(response->status, ==, 200);
    g_assert_cmpstr(soup_message_headers_get_one(response->headers, "Content-Type"), ==,
                    "text/plain; version=0.0.4; charset=utf-8");
    /* No secret in what a scraper stores. */
    g_assert_null(strstr(response->body, server->owner_token));
    g_assert_null(strstr(response->body, "tsk_"));
    return parse_exposition(response->body);
}

static void
wait_for_state(const char *id, const char *state)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response =
            einsora_test_request(server, "GET", path, server->owner_token, JSON, NULL, NULL);
        const char *now = einsora_test_response_string(response, "state");
        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s, after 30 s", id, now, state);
        g_usleep(50 * 1000);
    }
}

/* GET /v1/models through the access proxy with the owner's token: an
 * endpoint request the proxy answers itself. */
static guint
through_the_proxy(void)
{
    g_autofree gchar *uri = g_strdup_printf("http://127.0.0.1:%u/v1/models", server->access_port);
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autofree gchar *bearer = g_strdup_printf("Bearer %s", server->owner_token);
    g_autoptr(GBytes) body = NULL;
    g_autoptr(GError) error = NULL;

    soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                 bearer);
    body = soup_session_send_and_read(server->session, message, NULL, &error);
    g_assert_no_error(error);
    return soup_message_get_status(message);
}

/* Tests */

static void
test_refused_without_the_owner(void)
{
    g_autoptr(EinsoraTestResponse) anonymous = scrape(NULL, NULL);
    g_autoptr(EinsoraTestResponse) other = scrape(other_token, NULL);
    g_autoptr(EinsoraTestResponse) wrong = scrape("tsk_not-a-token", NULL);

    g_assert_cmpuint(anonymous->status, ==, 401);
    g_assert_cmpstr(einsora_test_response_error_code(anonymous), ==, "unauthenticated");
    g_assert_cmpuint(wrong->status, ==, 401);
    /* Machine-wide numbers (every tenant's workloads): not another
     * tenant's to read. */
    g_assert_cmpuint(other->status, ==, 403);
    g_assert_cmpstr(einsora_test_response_error_code(other), ==, "forbidden");
    g_assert_null(strstr(other->body, "einsora_"));
}

static void
test_every_family_strictly(void)
{
    g_autoptr(EinsoraTestResponse) response = NULL;
    g_autoptr(Exposition) exposition = NULL;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    static const char *const families[] = {
        "einsora_build_info",
        "einsora_store_transaction_duration_seconds",
        "einsora_hub_syncs_held",
        "einsora_hub_syncs_answered_total",
        "einsora_controller_pass_duration_seconds",
        "einsora_admissions_total",
        "einsora_admission_wait_seconds",
        "einsora_workloads",
        "einsora_proxy_requests_total",
        "einsora_proxy_request_duration_seconds",
        "einsora_proxy_websocket_relays_open",
    };

    /* Once the controller has made its first pass (200 ms in). */
    for (;;) {
        response = scrape(server->owner_token, NULL);
        g_assert_cmpuint(response->status, ==, 200);
        exposition = parse_exposition(response->body);
        if (value_of(exposition, "einsora_controller_pass_duration_seconds_count") >= 1)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_clear_pointer(&exposition, exposition_free);
        g_clear_pointer(&response, einsora_test_response_free);
        g_usleep(100 * 1000);
    }
    for (guint i = 0; i < G_N_ELEMENTS(families); i++) {
        if (!g_hash_table_contains(exposition->families, families[i]))
            g_error("no %s in /metrics", families[i]);
    }
    g_assert_cmpuint(g_hash_table_size(exposition->families), ==, G_N_ELEMENTS(families));
    g_assert_cmpfloat(value_of(exposition, "einsora_build_info{version=\"" EINSORA_VERSION "\"}"),
                      ==, 1);
    /* The in-process agent's sync waits on the hub most of the time. */
    g_assert_cmpfloat(value_of(exposition, "einsora_hub_syncs_held"), <=, 1);
    g_assert_cmpfloat(value_of(exposition, "einsora_hub_syncs_answered_total{answer=\"changed\"}"),
                      >=, 1);
    g_assert_cmpfloat(value_of(exposition, "einsora_controller_pass_duration_seconds_count"), >=,
                      1);
    check_with_promtool(response->body);
}

static void
test_values_move(void)
{
    g_autoptr(Exposition) before = scrape_owner();
    g_autoptr(Exposition) after = NULL;
    g_autoptr(EinsoraTestResponse) created = einsora_test_request(
        server, "POST", "/v1/workloads", server->owner_token, JSON,
        "{\"kind\":\"notebook\",\"name\":\"counted\",\"gpu_class\":\"cpu-2c-4g\","
        "\"image\":\"jupyter-notebook\"}",
        NULL);
    const char *admitted = "einsora_admissions_total{kind=\"notebook\"}";
    const char *running = "einsora_workloads{kind=\"notebook\",state=\"running\"}";
    const char *proxied = "einsora_proxy_requests_total{code=\"2xx\",kind=\"endpoint\"}";
    const char *committed = "einsora_store_transaction_duration_seconds_count{outcome=\"commit\"}";

    g_assert_cmpuint(created->status, ==, 201);
    wait_for_state(einsora_test_response_string(created, "id"), "running");
    g_assert_cmpuint(through_the_proxy(), ==, 200);

    after = scrape_owner();
    g_assert_cmpfloat(value_of(after, admitted), ==, value_of(before, admitted) + 1);
    g_assert_cmpfloat(value_of(after, "einsora_admission_wait_seconds_count"), ==,
                      value_of(before, "einsora_admission_wait_seconds_count") + 1);
    g_assert_cmpfloat(value_of(after, running), ==, value_of(before, running) + 1);
    g_assert_cmpfloat(value_of(after, "einsora_workloads{kind=\"endpoint\",state=\"running\"}"), ==,
                      0);
    g_assert_cmpfloat(value_of(after, proxied), ==, value_of(before, proxied) + 1);
    g_assert_cmpfloat(
        value_of(after, "einsora_proxy_request_duration_seconds_count{kind=\"endpoint\"}"), ==,
        value_of(before, "einsora_proxy_request_duration_seconds_count{kind=\"endpoint\"}") + 1);
    g_assert_cmpfloat(value_of(after, "einsora_controller_pass_duration_seconds_count"), >,
                      value_of(before, "einsora_controller_pass_duration_seconds_count"));
    /* The create, the admission and the steps after it, each committed. */
    g_assert_cmpfloat(value_of(after, committed), >=, value_of(before, committed) + 3);
}

/* EINSORA_METRICS_OPEN=loopback: a local scraper without credentials is
 * answered; credentials are still checked when sent, and a request a
 * proxy says it forwarded isn't taken as local. */
static void
test_open_to_loopback(void)
{
    const char *const forwarded[] = {"X-Forwarded-For", "203.0.113.9", NULL};
    const char *const forwarded_rfc[] = {"Forwarded", "for=203.0.113.9", NULL};

    einsora_test_daemon_stop(server);
    einsora_test_daemon_setenv(server, "EINSORA_METRICS_OPEN", "loopback");
    einsora_test_daemon_start(server);
    {
        g_autoptr(EinsoraTestResponse) anonymous = scrape(NULL, NULL);
        g_autoptr(EinsoraTestResponse) other = scrape(other_token, NULL);
        g_autoptr(EinsoraTestResponse) via_proxy = scrape(NULL, forwarded);
        g_autoptr(EinsoraTestResponse) via_rfc_proxy = scrape(NULL, forwarded_rfc);
        g_autoptr(Exposition) exposition = NULL;

        g_assert_cmpuint(anonymous->status, ==, 200);
        exposition = parse_exposition(anonymous->body);
        g_assert_true(g_hash_table_contains(exposition->families, "einsora_workloads"));
        g_assert_cmpuint(other->status, ==, 403);
        g_assert_cmpuint(via_proxy->status, ==, 401);
        g_assert_cmpuint(via_rfc_proxy->status, ==, 401);
    }
    einsora_test_daemon_stop(server);
    {
        /* A value it doesn't know stops the daemon, naming the setting. */
        g_autoptr(GError) error = NULL;
        g_autofree gchar *err = NULL;
        g_autoptr(GSubprocess) process = NULL;
        g_autoptr(GSubprocessLauncher) launcher =
            g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_PIPE);

        g_subprocess_launcher_setenv(launcher, "EINSORA_METRICS_OPEN", "everyone", TRUE);
        g_subprocess_launcher_setenv(launcher, "EINSORA_DATA_DIR", server->data_dir, TRUE);
        process = g_subprocess_launcher_spawn(launcher, &error, einsora_test_daemon_path(),
                                              "migrate", NULL);
        g_assert_no_error(error);
        g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, NULL, &err, &error));
        g_assert_false(g_subprocess_get_successful(process));
        g_assert_nonnull(strstr(err, "EINSORA_METRICS_OPEN (--metrics-open)"));
    }
    einsora_test_daemon_setenv(server, "EINSORA_METRICS_OPEN", "off");
    einsora_test_daemon_start(server);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    server = einsora_test_daemon_new();
    einsora_test_daemon_setenv(server, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(server, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    einsora_test_daemon_setenv(server, "EINSORA_SIM_CPUS", "64");
    einsora_test_daemon_setenv(server, "EINSORA_SIM_MEMORY_MIB", "262144");
    /* The owner is made at the first start; another tenant beside it. */
    einsora_test_daemon_start(server);
    einsora_test_daemon_stop(server);
    other_token = einsora_test_daemon_create_account(server, "globex", "bob@globex.example", NULL);
    einsora_test_daemon_start(server);
    g_test_add_func("/metrics/scrape/refused-without-the-owner", test_refused_without_the_owner);
    g_test_add_func("/metrics/scrape/every-family-strictly", test_every_family_strictly);
    g_test_add_func("/metrics/scrape/values-move", test_values_move);
    g_test_add_func("/metrics/scrape/open-to-loopback", test_open_to_loopback);
    status = g_test_run();
    einsora_test_daemon_stop(server);
    einsora_test_daemon_free(server);
    g_free(other_token);
    return status;
}
