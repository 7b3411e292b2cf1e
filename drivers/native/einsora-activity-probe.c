#define G_LOG_DOMAIN "einsora-native"

#include "einsora-activity-probe.h"

#include <json-glib/json-glib.h>

#define TIMEOUT_MS 5000
/* Jupyter's answers are small: a kernel is a few hundred bytes. */
#define MAX_ANSWER_BYTES (1024 * 1024)

struct _EinsoraActivityProbe {
    EinsoraSandboxServer *server;
    EinsoraActivityChanged changed;
    gpointer user_data;
    EinsoraWorkloadActivity activity;
    GCancellable *cancellable;
    GSource *timer;
    GBytes *status; /* the first answer of a read in flight */
    gboolean reading;
};

static void ask(EinsoraActivityProbe *probe);

static guint
interval_ms(void)
{
    const char *text = g_getenv(EINSORA_ACTIVITY_INTERVAL_VARIABLE);
    guint64 value = 0;

    if (text != NULL && g_ascii_string_to_unsigned(text, 10, 10, G_MAXUINT, &value, NULL))
        return (guint)value;
    return EINSORA_ACTIVITY_INTERVAL_MS_DEFAULT;
}

static gint64
time_ms(JsonObject *object)
{
    const char *text = json_object_get_string_member_with_default(object, "last_activity", NULL);
    g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
    g_autoptr(GDateTime) when = text != NULL ? g_date_time_new_from_iso8601(text, utc) : NULL;

    if (when == NULL)
        return 0;
    return g_date_time_to_unix(when) * 1000 + g_date_time_get_microsecond(when) / 1000;
}

static JsonNode *
parse(GBytes *bytes, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    gsize size = 0;
    const char *data = g_bytes_get_data(bytes, &size);

    if (!json_parser_load_from_data(parser, data, (gssize)size, error))
        return NULL;
    return json_parser_get_root(parser) != NULL ? json_node_copy(json_parser_get_root(parser))
                                                : NULL;
}

gboolean
einsora_activity_parse_jupyter(GBytes *status, GBytes *kernels, EinsoraWorkloadActivity *activity,
                               GError **error)
{
    g_autoptr(JsonNode) status_node = parse(status, error);
    g_autoptr(JsonNode) kernels_node = NULL;
    EinsoraWorkloadActivity read = {0};
    JsonArray *list;

    if (status_node == NULL)
        return FALSE;
    kernels_node = parse(kernels, error);
    if (kernels_node == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(status_node) || !JSON_NODE_HOLDS_ARRAY(kernels_node)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "its server's status isn't Jupyter's");
        return FALSE;
    }
    read.last_active_ms = time_ms(json_node_get_object(status_node));
    list = json_node_get_array(kernels_node);
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonNode *node = json_array_get_element(list, i);
        JsonObject *kernel;

        if (!JSON_NODE_HOLDS_OBJECT(node))
            continue;
        kernel = json_node_get_object(node);
        /* Starting counts as busy: it is about to run something. */
        if (g_strcmp0(json_object_get_string_member_with_default(kernel, "execution_state", ""),
                      "idle") != 0)
            read.busy_kernels = MIN(read.busy_kernels + 1, EINSORA_ACTIVITY_MAX_KERNELS);
        read.last_active_ms = MAX(read.last_active_ms, time_ms(kernel));
    }
    *activity = read;
    return TRUE;
}

static gboolean
on_timer(gpointer user_data)
{
    EinsoraActivityProbe *probe = user_data;

    ask(probe);
    return G_SOURCE_CONTINUE;
}

static void
done_reading(EinsoraActivityProbe *probe)
{
    probe->reading = FALSE;
    g_clear_pointer(&probe->status, g_bytes_unref);
}

static void
on_kernels(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraActivityProbe *probe = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) kernels =
        einsora_sandbox_server_get_finish(EINSORA_SANDBOX_SERVER(source), result, &error);
    EinsoraWorkloadActivity read = {0};

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* freed: nothing of it may be touched */
    if (kernels == NULL || !einsora_activity_parse_jupyter(probe->status, kernels, &read, &error)) {
        g_debug("activity not read: %s", error->message);
        done_reading(probe);
        return;
    }
    done_reading(probe);
    if (read.busy_kernels != probe->activity.busy_kernels ||
        read.last_active_ms != probe->activity.last_active_ms) {
        probe->activity = read;
        probe->changed(probe->user_data);
    }
}

static void
on_status(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraActivityProbe *probe = user_data;
    g_autoptr(GError) error = NULL;
    GBytes *status =
        einsora_sandbox_server_get_finish(EINSORA_SANDBOX_SERVER(source), result, &error);

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    if (status == NULL) {
        g_debug("activity not read: %s", error->message);
        done_reading(probe);
        return;
    }
    probe->status = status;
    /* Asking is no use: Jupyter counts API calls as activity unless
     * told not to (/api/status never counts). */
    einsora_sandbox_server_get_async(probe->server, "/api/kernels?no_track_activity=1", TIMEOUT_MS,
                                     MAX_ANSWER_BYTES, probe->cancellable, on_kernels, probe);
}

static void
ask(EinsoraActivityProbe *probe)
{
    if (probe->reading)
        return;
    probe->reading = TRUE;
    einsora_sandbox_server_get_async(probe->server, "/api/status", TIMEOUT_MS, MAX_ANSWER_BYTES,
                                     probe->cancellable, on_status, probe);
}

EinsoraActivityProbe *
einsora_activity_probe_new(EinsoraSandboxServer *server, EinsoraActivityChanged changed,
                           gpointer user_data)
{
    EinsoraActivityProbe *probe = g_new0(EinsoraActivityProbe, 1);

    probe->server = g_object_ref(server);
    probe->changed = changed;
    probe->user_data = user_data;
    probe->cancellable = g_cancellable_new();
    probe->timer = g_timeout_source_new(interval_ms());
    g_source_set_callback(probe->timer, on_timer, probe, NULL);
    g_source_attach(probe->timer, g_main_context_get_thread_default());
    ask(probe);
    return probe;
}

void
einsora_activity_probe_free(EinsoraActivityProbe *probe)
{
    if (probe == NULL)
        return;
    /* The reads in flight end cancelled and touch nothing of it. */
    g_cancellable_cancel(probe->cancellable);
    g_object_unref(probe->cancellable);
    g_source_destroy(probe->timer);
    g_source_unref(probe->timer);
    g_clear_pointer(&probe->status, g_bytes_unref);
    g_object_unref(probe->server);
    g_free(probe);
}

EinsoraWorkloadActivity
einsora_activity_probe_get(EinsoraActivityProbe *probe)
{
    return probe->activity;
}
