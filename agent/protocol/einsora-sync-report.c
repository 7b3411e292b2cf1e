#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-sync-report.h"

#include "einsora-json-read.h"
#include "einsora-protocol.h"
#include "einsora-timestamp.h"

G_DEFINE_BOXED_TYPE(EinsoraSyncReport, einsora_sync_report, einsora_sync_report_copy,
                    einsora_sync_report_free)

static void
replayed_status_free(EinsoraReplayedStatus *replayed)
{
    einsora_workload_status_free(replayed->status);
    g_free(replayed);
}

void
einsora_sync_report_add_replay(EinsoraSyncReport *report, gint64 seq,
                               const EinsoraWorkloadStatus *status)
{
    EinsoraReplayedStatus *replayed = g_new0(EinsoraReplayedStatus, 1);

    replayed->seq = seq;
    replayed->status = einsora_workload_status_copy(status);
    g_ptr_array_add(report->replay, replayed);
}

EinsoraSyncReport *
einsora_sync_report_new(void)
{
    EinsoraSyncReport *report = g_new0(EinsoraSyncReport, 1);

    report->replay = g_ptr_array_new_with_free_func((GDestroyNotify)replayed_status_free);

    report->statuses = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_status_free);
    return report;
}

EinsoraSyncReport *
einsora_sync_report_copy(const EinsoraSyncReport *report)
{
    EinsoraSyncReport *copy = g_new0(EinsoraSyncReport, 1);

    *copy = *report;
    copy->machine_id = g_strdup(report->machine_id);
    copy->agent_version = g_strdup(report->agent_version);
    copy->sent_at = g_strdup(report->sent_at);
    copy->statuses =
        g_ptr_array_new_full(report->statuses->len, (GDestroyNotify)einsora_workload_status_free);
    for (guint i = 0; i < report->statuses->len; i++)
        g_ptr_array_add(copy->statuses, einsora_workload_status_copy(report->statuses->pdata[i]));
    copy->inventory = report->inventory != NULL ? einsora_inventory_copy(report->inventory) : NULL;
    copy->replay = g_ptr_array_new_with_free_func((GDestroyNotify)replayed_status_free);
    for (guint i = 0; i < report->replay->len; i++) {
        const EinsoraReplayedStatus *replayed = report->replay->pdata[i];
        einsora_sync_report_add_replay(copy, replayed->seq, replayed->status);
    }
    return copy;
}

void
einsora_sync_report_free(EinsoraSyncReport *report)
{
    if (report == NULL)
        return;
    g_free(report->machine_id);
    g_free(report->agent_version);
    g_free(report->sent_at);
    g_clear_pointer(&report->statuses, g_ptr_array_unref);
    g_clear_pointer(&report->replay, g_ptr_array_unref);
    g_clear_pointer(&report->inventory, einsora_inventory_free);
    g_free(report);
}

JsonNode *
einsora_sync_report_to_json(const EinsoraSyncReport *report)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "machine_id", report->machine_id);
    einsora_json_add_int(builder, "applied_generation", report->applied_generation);
    json_builder_set_member_name(builder, "statuses");
    json_builder_begin_array(builder);
    for (guint i = 0; i < report->statuses->len; i++)
        json_builder_add_value(builder,
                               einsora_workload_status_to_json(report->statuses->pdata[i]));
    json_builder_end_array(builder);
    /* Left out, not null, when unchanged: one way to say it. */
    if (report->inventory != NULL) {
        json_builder_set_member_name(builder, "inventory");
        json_builder_add_value(builder, einsora_inventory_to_json(report->inventory));
    }
    einsora_json_add_string(builder, "agent_version", report->agent_version);
    einsora_json_add_string(builder, "sent_at", report->sent_at);
    if (report->tunnels) {
        json_builder_set_member_name(builder, "tunnels");
        json_builder_add_boolean_value(builder, TRUE);
    }
    /* Left out when empty, as from the in-process agent. */
    if (report->replay->len > 0) {
        json_builder_set_member_name(builder, "replay");
        json_builder_begin_array(builder);
        for (guint i = 0; i < report->replay->len; i++) {
            const EinsoraReplayedStatus *replayed = report->replay->pdata[i];

            json_builder_begin_object(builder);
            einsora_json_add_int(builder, "seq", replayed->seq);
            json_builder_set_member_name(builder, "status");
            json_builder_add_value(builder, einsora_workload_status_to_json(replayed->status));
            json_builder_end_object(builder);
        }
        json_builder_end_array(builder);
    }
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

static gboolean
read_statuses(JsonObject *object, GPtrArray *statuses, GError **error)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    JsonArray *array;

    if (!einsora_json_read_array(object, "statuses", EINSORA_PROTOCOL_MAX_WORKLOADS, &array, error))
        return FALSE;
    for (guint i = 0; i < json_array_get_length(array); i++) {
        EinsoraWorkloadStatus *status =
            einsora_workload_status_from_json(json_array_get_element(array, i), error);

        if (status == NULL) {
            g_prefix_error(error, "statuses[%u]: ", i);
            return FALSE;
        }
        g_ptr_array_add(statuses, status);
        /* Two statuses for one workload would leave the hub to guess. */
        if (!g_hash_table_add(seen, status->workload_id))
            return einsora_json_invalid(error, "statuses[%u]: \"workload_id\" %s is listed twice",
                                        i, status->workload_id);
    }
    return TRUE;
}

/* Refused rather than dropped, as every other malformed member: an agent
 * that sends one is broken, and a refused sync says so where a dropped
 * field would pass unseen. */
static gboolean
read_agent_version(JsonObject *object, gchar **out, GError **error)
{
    g_autofree gchar *version = NULL;

    if (!einsora_json_read_string(object, "agent_version", FALSE, &version, error))
        return FALSE;
    if (version == NULL)
        return TRUE;
    if (strlen(version) > EINSORA_PROTOCOL_MAX_AGENT_VERSION)
        return einsora_json_invalid(error, "\"agent_version\" is longer than %d bytes",
                                    EINSORA_PROTOCOL_MAX_AGENT_VERSION);
    /* Printed in lists and logs as it is: nothing that could pass for
     * something else there. */
    for (const char *p = version; *p != '\0'; p++) {
        if ((guchar)*p <= ' ' || (guchar)*p > '~')
            return einsora_json_invalid(error, "\"agent_version\" may hold only printable ASCII "
                                               "without spaces");
    }
    *out = g_steal_pointer(&version);
    return TRUE;
}

static gboolean
read_sent_at(JsonObject *object, gchar **out, GError **error)
{
    g_autofree gchar *sent_at = NULL;

    if (!einsora_json_read_string(object, "sent_at", FALSE, &sent_at, error))
        return FALSE;
    if (sent_at != NULL && !einsora_timestamp_parse(sent_at, NULL, NULL))
        return einsora_json_invalid(error, "\"sent_at\" is not a timestamp like "
                                           "2026-11-29T09:06:36.123456Z");
    *out = g_steal_pointer(&sent_at);
    return TRUE;
}

/* Optional; numbered from 1, each above the one before. */
static gboolean
read_replay(JsonObject *object, EinsoraSyncReport *report, GError **error)
{
    static const char *const members[] = {"seq", "status", NULL};
    JsonArray *array;
    gint64 last = 0;

    if (!json_object_has_member(object, "replay"))
        return TRUE;
    if (!einsora_json_read_array(object, "replay", EINSORA_PROTOCOL_MAX_REPLAY, &array, error))
        return FALSE;
    for (guint i = 0; i < json_array_get_length(array); i++) {
        g_autoptr(EinsoraWorkloadStatus) status = NULL;
        JsonObject *record;
        gint64 seq;

        if (!einsora_json_read_object(json_array_get_element(array, i), "a replayed status",
                                      members, &record, error) ||
            !einsora_json_read_int(record, "seq", G_MAXINT64, &seq, error)) {
            g_prefix_error(error, "replay[%u]: ", i);
            return FALSE;
        }
        if (seq <= last)
            return einsora_json_invalid(
                error, "replay[%u]: \"seq\" %" G_GINT64_FORMAT " doesn't follow %" G_GINT64_FORMAT,
                i, seq, last);
        status = einsora_workload_status_from_json(json_object_get_member(record, "status"), error);
        if (status == NULL) {
            g_prefix_error(error, "replay[%u].status: ", i);
            return FALSE;
        }
        einsora_sync_report_add_replay(report, seq, status);
        last = seq;
    }
    return TRUE;
}

/* Optional; true when present at all would be too loose: a boolean. */
static gboolean
read_tunnels(JsonObject *object, gboolean *out, GError **error)
{
    JsonNode *node = json_object_get_member(object, "tunnels");

    if (node == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_BOOLEAN)
        return einsora_json_invalid(error, "\"tunnels\" must be true or false");
    *out = json_node_get_boolean(node);
    return TRUE;
}

EinsoraSyncReport *
einsora_sync_report_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {
        "machine_id",
        "applied_generation",
        "statuses",
        "inventory",
        "agent_version",
        "sent_at",
        "replay",
        "tunnels",
        NULL,
    };
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_new();
    JsonObject *object;
    JsonNode *inventory;

    if (!einsora_json_read_object(node, "a sync report", members, &object, error) ||
        !einsora_json_read_uuid(object, "machine_id", &report->machine_id, error) ||
        !einsora_json_read_int(object, "applied_generation", G_MAXINT64,
                               &report->applied_generation, error) ||
        !read_statuses(object, report->statuses, error) ||
        !read_agent_version(object, &report->agent_version, error) ||
        !read_sent_at(object, &report->sent_at, error) || !read_replay(object, report, error) ||
        !read_tunnels(object, &report->tunnels, error))
        return NULL;
    inventory = json_object_get_member(object, "inventory");
    if (inventory != NULL) {
        report->inventory = einsora_inventory_from_json(inventory, error);
        if (report->inventory == NULL) {
            g_prefix_error(error, "inventory: ");
            return NULL;
        }
    }
    return g_steal_pointer(&report);
}
