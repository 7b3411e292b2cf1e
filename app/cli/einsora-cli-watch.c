/* einsora watch: the change feed (GET /v1/events?follow=true), one line
 * per event as it happens, until interrupted. It follows the feed through
 * EinsoraEventFeed, which reconnects by itself and resumes where it was:
 * no event is printed twice or missed while the daemon restarts. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib-unix.h>
#include <glib/gi18n.h>
#include <signal.h>

#include "einsora-short-id.h"
#include "einsora-table.h"

typedef struct {
    EinsoraClient *client;
    gchar *workload_id; /* only its events; NULL: all */
    GHashTable *names;  /* workload ID -> name as shown */
    guint id_length;    /* tells apart every workload ID in names */
    GMainLoop *loop;
    GError *error; /* why it stopped, when it wasn't interrupted */
    gboolean json;
    gboolean was_connected;
} Watch;

/* Short IDs are as long as it takes to tell apart every workload known
 * when the line is printed (IDs made within a minute share 8
 * characters), as in the tables of other commands. */
static void
update_id_length(Watch *watch)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new();
    GHashTableIter iter;
    gpointer id;

    g_hash_table_iter_init(&iter, watch->names);
    while (g_hash_table_iter_next(&iter, &id, NULL))
        g_ptr_array_add(ids, id);
    watch->id_length = einsora_short_id_length(ids);
}

/* Names come from one list at the start; a workload created since is
 * asked for once. A name that can't be had shows as "-". */
static const char *
workload_name(Watch *watch, const char *id)
{
    const char *known = g_hash_table_lookup(watch->names, id);
    g_autoptr(JsonNode) root = NULL;
    gchar *name;

    if (known != NULL)
        return known;
    root = einsora_client_get_workload(watch->client, id, TRUE, NULL, NULL);
    name = root != NULL && JSON_NODE_HOLDS_OBJECT(root)
               ? einsora_cli_shown(json_node_get_object(root), "name")
               : g_strdup("-");
    g_hash_table_insert(watch->names, g_strdup(id), name);
    update_id_length(watch);
    return name;
}

/* Also what says at once that the server can't be reached, or refuses
 * the token: the feed itself would only keep trying. */
static gboolean
remember_names(Watch *watch, GError **error)
{
    g_autoptr(JsonNode) root = einsora_client_list_workloads(watch->client, TRUE, NULL, error);
    JsonArray *workloads = root != NULL ? einsora_cli_get_array(root, "workloads", error) : NULL;

    if (workloads == NULL)
        return FALSE;
    for (guint i = 0; i < json_array_get_length(workloads); i++) {
        JsonObject *workload = json_array_get_object_element(workloads, i);
        const char *id = workload != NULL ? einsora_cli_get_string(workload, "id") : NULL;

        if (id != NULL)
            g_hash_table_insert(watch->names, g_strdup(id), einsora_cli_shown(workload, "name"));
    }
    update_id_length(watch);
    return TRUE;
}

static void
stop_with(Watch *watch, GError *error)
{
    if (watch->error == NULL && error != NULL)
        watch->error = g_error_copy(error);
    g_main_loop_quit(watch->loop);
}

static void
on_event(EinsoraEventFeed *feed, JsonObject *event, gpointer user_data)
{
    Watch *watch = user_data;
    const char *id = einsora_cli_get_string(event, "workload_id");
    g_autoptr(GError) error = NULL;
    g_autofree gchar *line = NULL;

    if (id == NULL || (watch->workload_id != NULL && g_strcmp0(id, watch->workload_id) != 0))
        return;
    if (watch->json) {
        g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), event);
        g_autofree gchar *text = json_to_string(node, FALSE);

        line = g_strdup_printf("%s\n", text);
    } else {
        g_autofree gchar *time =
            einsora_cli_format_time(einsora_cli_get_string(event, "created_at"));
        const char *name = workload_name(watch, id);
        g_autofree gchar *short_id = g_strndup(id, watch->id_length);
        g_autofree gchar *from = einsora_cli_shown(event, "from_state");
        g_autofree gchar *to = einsora_cli_shown(event, "to_state");
        g_autofree gchar *reason = einsora_cli_shown(event, "reason");

        /* TRANSLATORS: time, short workload ID, name, from state, to state,
         * reason: 2026-01-02 03:04:05  01a226bf  lab  queued → provisioning  admitted: … */
        line = g_strdup_printf(_("%s  %s  %s  %s → %s  %s\n"), time != NULL ? time : "-", short_id,
                               name, from, to, reason);
    }
    if (!einsora_cli_write_text(line, &error))
        stop_with(watch, error);
}

static void
on_connected(EinsoraEventFeed *feed, GParamSpec *pspec, gpointer user_data)
{
    Watch *watch = user_data;

    /* Said on standard error: standard output holds only events. */
    if (einsora_event_feed_get_connected(feed)) {
        if (!watch->was_connected)
            g_printerr(_("Watching for events (Ctrl+C to stop)…\n"));
        else
            g_printerr(_("einsora: connected again\n"));
        watch->was_connected = TRUE;
    } else if (watch->was_connected) {
        g_printerr(_("einsora: lost the connection to the daemon; trying again…\n"));
    }
}

static void
on_failed(EinsoraEventFeed *feed, GError *error, gpointer user_data)
{
    stop_with(user_data, error);
}

static gboolean
on_interrupt(gpointer user_data)
{
    stop_with(user_data, NULL);
    return G_SOURCE_CONTINUE;
}

gboolean
einsora_cli_watch(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    gboolean from_start = FALSE;
    const GOptionEntry entries[] = {
        {"from-start", 0, 0, G_OPTION_ARG_NONE, &from_start,
         N_("Print every event there already is first, oldest first"), NULL},
        {NULL},
    };
    g_autoptr(EinsoraEventFeed) feed = NULL;
    g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    g_autofree gchar *workload_id = NULL;
    Watch watch = {0};
    guint sigint;
    guint sigterm;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error))
        return FALSE;
    if (argc > 2) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("unexpected argument “%s”"), argv[2]);
        return FALSE;
    }
    watch.client = einsora_cli_get_client(cli, error);
    if (watch.client == NULL)
        return FALSE;
    if (argc == 2) {
        workload_id = einsora_cli_resolve_workload(cli, argv[1], error);
        if (workload_id == NULL)
            return FALSE;
    }
    watch.workload_id = workload_id;
    watch.names = names;
    watch.loop = loop;
    watch.json = cli->options.json;
    if (!remember_names(&watch, error))
        return FALSE;

    feed = einsora_client_new_event_feed(watch.client);
    g_signal_connect(feed, "event", G_CALLBACK(on_event), &watch);
    g_signal_connect(feed, "notify::connected", G_CALLBACK(on_connected), &watch);
    g_signal_connect(feed, "failed", G_CALLBACK(on_failed), &watch);
    sigint = g_unix_signal_add(SIGINT, on_interrupt, &watch);
    sigterm = g_unix_signal_add(SIGTERM, on_interrupt, &watch);
    /* "0": before the first event there is; NULL: from now. */
    einsora_event_feed_start(feed, from_start ? "0" : NULL);
    g_main_loop_run(loop);

    g_signal_handlers_disconnect_by_data(feed, &watch);
    einsora_event_feed_stop(feed);
    g_source_remove(sigint);
    g_source_remove(sigterm);
    if (watch.error != NULL) {
        g_propagate_error(error, watch.error);
        return FALSE;
    }
    return TRUE;
}
