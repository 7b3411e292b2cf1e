/* Completion from the command tables and option entries themselves (see
 * einsora-cli-complete.h). Values that live on the server (classes,
 * images, models, workloads) are asked for with a short deadline: a
 * daemon that is down or slow completes nothing, silently. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli-complete.h"

#include <stdio.h>
#include <string.h>

#include "einsora-short-id.h"

/* A person is waiting at a prompt: a second, then nothing
 * (EINSORA_COMPLETION_TIMEOUT_MS for a slow link, and for tests on a
 * loaded machine). */
#define COMPLETION_TIMEOUT_MS 1000

static guint
completion_timeout_ms(void)
{
    const char *text = g_getenv("EINSORA_COMPLETION_TIMEOUT_MS");
    guint64 ms;

    if (text != NULL && g_ascii_string_to_unsigned(text, 10, 1, 60000, &ms, NULL))
        return (guint)ms;
    return COMPLETION_TIMEOUT_MS;
}

struct _EinsoraCliCompletion {
    gchar *current;
    GPtrArray *candidates; /* in the order found, each once */
    GHashTable *seen;
    GPtrArray *argvs; /* the argument arrays handed back, freed with us */
};

EinsoraCliCompletion *
einsora_cli_completion_new(const char *current)
{
    EinsoraCliCompletion *self = g_new0(EinsoraCliCompletion, 1);

    self->current = g_strdup(current != NULL ? current : "");
    self->candidates = g_ptr_array_new_with_free_func(g_free);
    self->seen = g_hash_table_new(g_str_hash, g_str_equal);
    self->argvs = g_ptr_array_new_with_free_func(g_free);
    return self;
}

void
einsora_cli_completion_free(EinsoraCliCompletion *self)
{
    if (self == NULL)
        return;
    g_hash_table_unref(self->seen);
    g_ptr_array_unref(self->candidates);
    g_ptr_array_unref(self->argvs);
    g_free(self->current);
    g_free(self);
}

static void
add(EinsoraCliCompletion *self, const char *prefix, const char *candidate)
{
    gchar *text = g_strconcat(prefix != NULL ? prefix : "", candidate, NULL);

    /* One a line: a candidate with a newline can't be one. */
    if (*candidate == '\0' || strchr(text, '\n') != NULL ||
        g_hash_table_contains(self->seen, text)) {
        g_free(text);
        return;
    }
    g_ptr_array_add(self->candidates, text);
    g_hash_table_add(self->seen, text);
}

void
einsora_cli_completion_print(EinsoraCliCompletion *self)
{
    for (guint i = 0; i < self->candidates->len; i++) {
        const char *candidate = g_ptr_array_index(self->candidates, i);
        if (g_str_has_prefix(candidate, self->current))
            printf("%s\n", candidate);
    }
    fflush(stdout);
}

static gboolean
stop(GError **error)
{
    g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_COMPLETED, "completed");
    return FALSE;
}

static gboolean
takes_argument(const GOptionEntry *entry)
{
    return entry->arg != G_OPTION_ARG_NONE && (entry->flags & G_OPTION_FLAG_NO_ARG) == 0;
}

static const GOptionEntry *
find_long(const GOptionEntry *entries, const char *name, gsize length)
{
    for (const GOptionEntry *e = entries; e->long_name != NULL; e++) {
        if (strlen(e->long_name) == length && strncmp(e->long_name, name, length) == 0)
            return e;
    }
    return NULL;
}

static const GOptionEntry *
find_short(const GOptionEntry *entries, char name)
{
    for (const GOptionEntry *e = entries; e->long_name != NULL; e++) {
        if (e->short_name == name)
            return e;
    }
    return NULL;
}

/* The global options' values count even while completing: the server
 * and token they name are the ones asked. */
static void
remember(EinsoraCli *cli, const GOptionEntry *entry, const char *value)
{
    const struct {
        const char *name;
        gchar **into;
    } globals[] = {
        {"server", &cli->options.server},
        {"token", &cli->options.token},
        {"data-dir", &cli->options.data_dir},
    };

    for (guint i = 0; i < G_N_ELEMENTS(globals); i++) {
        if (g_str_equal(entry->long_name, globals[i].name)) {
            g_free(*globals[i].into);
            *globals[i].into = g_strdup(value);
        }
    }
}

static void
on_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static gboolean
on_deadline(gpointer user_data)
{
    g_cancellable_cancel(user_data);
    return G_SOURCE_REMOVE;
}

/* GET @path (NULL: every workload, deleted ones too), or NULL when the
 * daemon can't answer within the deadline. */
static JsonNode *
fetch_quickly(EinsoraCli *cli, const char *path)
{
    EinsoraClient *client = einsora_cli_get_client(cli, NULL);
    g_autoptr(GCancellable) cancellable = NULL;
    g_autoptr(GSource) deadline = NULL;
    g_autoptr(GAsyncResult) result = NULL;
    JsonNode *root;

    if (client == NULL)
        return NULL;
    cancellable = g_cancellable_new();
    deadline = g_timeout_source_new(completion_timeout_ms());
    g_source_set_callback(deadline, on_deadline, cancellable, NULL);
    g_source_attach(deadline, NULL);
    if (path == NULL)
        einsora_client_list_workloads_async(client, TRUE, cancellable, on_answer, &result);
    else
        einsora_client_request_async(client, "GET", path, NULL, NULL, cancellable, on_answer,
                                     &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    g_source_destroy(deadline);
    root = einsora_client_request_finish(client, result, NULL, NULL);
    return root;
}

/* Each @member string of the objects in @root's @list (or each string). */
static void
add_listed(EinsoraCliCompletion *self, const char *prefix, JsonNode *root, const char *list,
           const char *member)
{
    JsonNode *node = root != NULL && JSON_NODE_HOLDS_OBJECT(root)
                         ? json_object_get_member(json_node_get_object(root), list)
                         : NULL;
    JsonArray *array;

    if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
        return;
    array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonNode *element = json_array_get_element(array, i);
        const char *value = NULL;

        if (member == NULL && JSON_NODE_HOLDS_VALUE(element) &&
            json_node_get_value_type(element) == G_TYPE_STRING)
            value = json_node_get_string(element);
        else if (member != NULL && JSON_NODE_HOLDS_OBJECT(element))
            value = einsora_cli_get_string(json_node_get_object(element), member);
        if (value != NULL)
            add(self, prefix, value);
    }
}

/* The value of @entry: what the catalog or the model store offers, for the
 * options that name one. */
static void
complete_value(EinsoraCli *cli, const GOptionEntry *entry, const char *prefix)
{
    static const struct {
        const char *option;
        const char *path;
        const char *list;
        const char *member;
    } sources[] = {
        {"class", "/v1/catalog", "classes", "name"}, {"fallback", "/v1/catalog", "classes", "name"},
        {"image", "/v1/catalog", "images", "name"},  {"region", "/v1/catalog", "regions", "name"},
        {"kind", "/v1/catalog", "kinds", NULL},      {"model", "/v1/models", "models", "name"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(sources); i++) {
        if (g_str_equal(entry->long_name, sources[i].option)) {
            g_autoptr(JsonNode) root = fetch_quickly(cli, sources[i].path);
            add_listed(cli->completion, prefix, root, sources[i].list, sources[i].member);
            return;
        }
    }
}

static gboolean
is_gone(JsonObject *workload)
{
    const char *state = einsora_cli_get_string(workload, "state");
    return g_strcmp0(state, "deleted") == 0 || g_strcmp0(state, "deleting") == 0;
}

/* The caller's live workloads: their IDs as the tables show them (the
 * whole ID once the word is longer), and their names. */
static void
complete_workloads(EinsoraCli *cli)
{
    EinsoraCliCompletion *self = cli->completion;
    g_autoptr(JsonNode) root = fetch_quickly(cli, NULL);
    JsonNode *node = root != NULL && JSON_NODE_HOLDS_OBJECT(root)
                         ? json_object_get_member(json_node_get_object(root), "workloads")
                         : NULL;
    JsonArray *workloads;
    guint length;

    if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
        return;
    workloads = json_node_get_array(node);
    length = einsora_cli_short_id_length(workloads);
    for (guint i = 0; i < json_array_get_length(workloads); i++) {
        JsonObject *workload = json_array_get_object_element(workloads, i);
        const char *id = workload != NULL ? einsora_cli_get_string(workload, "id") : NULL;
        const char *name = workload != NULL ? einsora_cli_get_string(workload, "name") : NULL;

        if (id == NULL || is_gone(workload))
            continue;
        if (strlen(self->current) >= length && einsora_short_id_matches(id, self->current))
            add(self, NULL, id);
        else {
            g_autofree gchar *shown = g_strndup(id, length);
            add(self, NULL, shown);
        }
        if (name != NULL)
            add(self, NULL, name);
    }
}

static void
complete_options(EinsoraCliCompletion *self, const GOptionEntry *entries)
{
    for (const GOptionEntry *e = entries; e->long_name != NULL; e++) {
        g_autofree gchar *long_name = NULL;

        if ((e->flags & G_OPTION_FLAG_HIDDEN) != 0)
            continue;
        long_name = g_strconcat("--", e->long_name, NULL);
        add(self, NULL, long_name);
        if (e->short_name != '\0') {
            gchar short_name[] = {'-', e->short_name, '\0'};
            add(self, NULL, short_name);
        }
    }
    add(self, NULL, "--help");
}

/* @argv from its first word, then from @from on: what a strict parse
 * leaves for the subcommand. */
static void
keep_from(EinsoraCliCompletion *self, int from, int *argc, char ***argv)
{
    char **kept = g_new0(char *, (gsize)(*argc - from) + 2);

    kept[0] = (*argv)[0];
    for (int i = from; i < *argc; i++)
        kept[i - from + 1] = (*argv)[i];
    g_ptr_array_add(self->argvs, kept);
    *argc = *argc - from + 1;
    *argv = kept;
}

gboolean
einsora_cli_completion_parse(EinsoraCli *cli, const EinsoraCliCommand *command,
                             const GOptionEntry *entries, const EinsoraCliCommand *subcommands,
                             gboolean strict, int *argc, char ***argv, GError **error)
{
    EinsoraCliCompletion *self = cli->completion;
    const char *current = self->current;
    gboolean options_end = FALSE;
    guint positionals = 0;

    for (int i = 1; i < *argc; i++) {
        const char *word = (*argv)[i];
        const GOptionEntry *entry = NULL;
        const char *value = NULL;

        if (!options_end && g_str_equal(word, "--")) {
            options_end = TRUE;
            continue;
        }
        if (!options_end && word[0] == '-' && word[1] != '\0') {
            if (word[1] == '-') {
                const char *equals = strchr(word, '=');
                entry = find_long(entries, word + 2,
                                  equals != NULL ? (gsize)(equals - word - 2) : strlen(word + 2));
                value = equals != NULL ? equals + 1 : NULL;
            } else {
                for (const char *c = word + 1; *c != '\0'; c++) {
                    entry = find_short(entries, *c);
                    if (entry != NULL && takes_argument(entry)) {
                        value = c[1] != '\0' ? c + 1 : NULL;
                        break;
                    }
                }
            }
            if (entry == NULL || !takes_argument(entry))
                continue;
            if (value == NULL) {
                /* bash splits "--class=x" at the "=". */
                if (i + 1 < *argc && g_str_equal((*argv)[i + 1], "="))
                    i++;
                if (i + 1 >= *argc) {
                    complete_value(cli, entry, NULL);
                    return stop(error);
                }
                value = (*argv)[++i];
            }
            remember(cli, entry, value);
            continue;
        }
        if (strict) {
            keep_from(self, i, argc, argv);
            return TRUE;
        }
        positionals++;
    }

    if (!options_end && g_str_has_prefix(current, "--") && strchr(current, '=') != NULL) {
        const char *equals = strchr(current, '=');
        const GOptionEntry *entry = find_long(entries, current + 2, (gsize)(equals - current - 2));

        if (entry != NULL && takes_argument(entry)) {
            g_autofree gchar *prefix = g_strndup(current, (gsize)(equals - current) + 1);
            complete_value(cli, entry, prefix);
        }
        return stop(error);
    }
    if (!options_end && current[0] == '-') {
        complete_options(self, entries);
        return stop(error);
    }
    if (subcommands != NULL) {
        for (const EinsoraCliCommand *c = subcommands; c->name != NULL; c++)
            add(self, NULL, c->name);
    } else if (positionals == 0 && command->argument == EINSORA_CLI_ARGUMENT_WORKLOAD) {
        complete_workloads(cli);
    } else if (positionals == 0 && command->argument == EINSORA_CLI_ARGUMENT_SHELL) {
        add(self, NULL, "bash");
        add(self, NULL, "zsh");
        add(self, NULL, "fish");
    }
    return stop(error);
}
