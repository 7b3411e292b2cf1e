/* GET /v1/usage: the caller's tenant's usage (docs/adr/0042), the
 * seconds its workloads spent in metered states, by class, workload or
 * UTC day, over whole hours. Only the caller's own tenant's: there is no
 * parameter that names another. Usage, never money. */
#define G_LOG_DOMAIN "einsora-api"

#include <string.h>

#include "einsora-api-routes.h"
#include "einsora-error.h"

#define DAY_US (G_GINT64_CONSTANT(86400) * G_USEC_PER_SEC)
/* Without from: the 30 days before to. */
#define DEFAULT_SPAN_US (30 * DAY_US)

/* A day ("2026-01-01", its UTC midnight) or an RFC 3339 time. */
static gboolean
parse_when(const char *name, const char *text, gint64 *us, GError **error)
{
    g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
    g_autoptr(GDateTime) when = NULL;

    if (strlen(text) == 10 && g_regex_match_simple("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", text, 0, 0)) {
        g_autofree gchar *midnight = g_strdup_printf("%sT00:00:00Z", text);
        when = g_date_time_new_from_iso8601(midnight, utc);
    } else if (strchr(text, 'T') != NULL || strchr(text, 't') != NULL) {
        when = g_date_time_new_from_iso8601(text, utc);
    }
    if (when == NULL || g_date_time_get_year(when) < 1970) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "%s must be a day (as 2026-12-01) or a time (RFC 3339, as "
                    "2026-12-01T14:00:00Z); \"%s\" is neither",
                    name, text);
        return FALSE;
    }
    *us = g_date_time_to_unix(when) * G_USEC_PER_SEC + g_date_time_get_microsecond(when);
    return TRUE;
}

typedef struct {
    gint64 from_us;
    gint64 to_us;
    EinsoraUsageGrouping grouping;
} UsageQuery;

static gboolean
read_query(EinsoraApiServer *server, EinsoraApiRequest *request, UsageQuery *query, GError **error)
{
    const char *text = einsora_api_request_get_query(request);
    g_autoptr(GHashTable) params = NULL;
    const char *from = NULL;
    const char *to = NULL;
    const char *group_by = NULL;

    if (text != NULL)
        params = g_uri_parse_params(text, -1, "&", G_URI_PARAMS_NONE, NULL);
    if (params != NULL) {
        from = g_hash_table_lookup(params, "from");
        to = g_hash_table_lookup(params, "to");
        group_by = g_hash_table_lookup(params, "group_by");
    }
    query->grouping = EINSORA_USAGE_BY_CLASS;
    if (group_by != NULL && !einsora_usage_grouping_from_string(group_by, &query->grouping)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "group_by must be class, workload or day; \"%s\" is none of them", group_by);
        return FALSE;
    }
    query->to_us = einsora_api_server_now(server);
    if (to != NULL && !parse_when("to", to, &query->to_us, error))
        return FALSE;
    query->from_us = MAX(query->to_us - DEFAULT_SPAN_US, 0);
    if (from != NULL && !parse_when("from", from, &query->from_us, error))
        return FALSE;
    return TRUE;
}

static double
hours_of(gint64 seconds)
{
    /* Two decimals: what a person reads; seconds are the exact figure. */
    return (double)((seconds + 18) / 36) / 100.0;
}

static void
add_amounts(JsonBuilder *builder, gint64 seconds, gint64 gpu_seconds)
{
    json_builder_set_member_name(builder, "seconds");
    json_builder_add_int_value(builder, seconds);
    json_builder_set_member_name(builder, "hours");
    json_builder_add_double_value(builder, hours_of(seconds));
    json_builder_set_member_name(builder, "gpu_seconds");
    json_builder_add_int_value(builder, gpu_seconds);
    json_builder_set_member_name(builder, "gpu_hours");
    json_builder_add_double_value(builder, hours_of(gpu_seconds));
}

void
einsora_api_usage_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) groups = NULL;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) node = NULL;
    g_autofree gchar *from = NULL;
    g_autofree gchar *to = NULL;
    UsageQuery query;
    gint64 from_hour = 0;
    gint64 to_hour = 0;
    gint64 seconds = 0;
    gint64 gpu_seconds = 0;

    if (!read_query(server, request, &query, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    groups = einsora_service_usage(einsora_api_server_get_service(server),
                                   einsora_api_request_get_actor(request)->tenant_id, query.from_us,
                                   query.to_us, query.grouping, &from_hour, &to_hour, &error);
    if (groups == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    from = einsora_timestamp_format(from_hour);
    to = einsora_timestamp_format(to_hour);

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "from");
    json_builder_add_string_value(builder, from);
    json_builder_set_member_name(builder, "to");
    json_builder_add_string_value(builder, to);
    json_builder_set_member_name(builder, "group_by");
    json_builder_add_string_value(builder, einsora_usage_grouping_to_string(query.grouping));
    json_builder_set_member_name(builder, "groups");
    json_builder_begin_array(builder);
    for (guint i = 0; i < groups->len; i++) {
        const EinsoraUsageGroup *group = g_ptr_array_index(groups, i);

        json_builder_begin_object(builder);
        switch (query.grouping) {
        case EINSORA_USAGE_BY_CLASS:
            json_builder_set_member_name(builder, "gpu_class");
            json_builder_add_string_value(builder, group->key);
            break;
        case EINSORA_USAGE_BY_WORKLOAD:
            json_builder_set_member_name(builder, "workload_id");
            json_builder_add_string_value(builder, group->key);
            json_builder_set_member_name(builder, "name");
            json_builder_add_string_value(builder, group->name);
            json_builder_set_member_name(builder, "kind");
            json_builder_add_string_value(builder, group->kind);
            break;
        case EINSORA_USAGE_BY_DAY:
            json_builder_set_member_name(builder, "day");
            json_builder_add_string_value(builder, group->key);
            break;
        }
        add_amounts(builder, group->seconds, group->gpu_seconds);
        if (group->classes != NULL) {
            json_builder_set_member_name(builder, "classes");
            json_builder_begin_array(builder);
            for (guint j = 0; j < group->classes->len; j++) {
                const EinsoraUsageGroup *class = g_ptr_array_index(group->classes, j);
                json_builder_begin_object(builder);
                json_builder_set_member_name(builder, "gpu_class");
                json_builder_add_string_value(builder, class->key);
                add_amounts(builder, class->seconds, class->gpu_seconds);
                json_builder_end_object(builder);
            }
            json_builder_end_array(builder);
        }
        json_builder_end_object(builder);
        seconds += group->seconds;
        gpu_seconds += group->gpu_seconds;
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "total");
    json_builder_begin_object(builder);
    add_amounts(builder, seconds, gpu_seconds);
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    node = json_builder_get_root(builder);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
