/* One row of a usage report (GET /v1/usage): the seconds a tenant's
 * workloads spent in metered states within the report's hours, summed by
 * class, by workload or by UTC day (docs/adr/0042). Usage, never money. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef enum {
    EINSORA_USAGE_BY_CLASS,
    EINSORA_USAGE_BY_WORKLOAD,
    EINSORA_USAGE_BY_DAY,
} EinsoraUsageGrouping;

const char *einsora_usage_grouping_to_string(EinsoraUsageGrouping grouping);
gboolean einsora_usage_grouping_from_string(const char *str, EinsoraUsageGrouping *grouping);

typedef struct {
    /* The class, the workload's ID, or the day ("2026-01-01"). */
    gchar *key;
    /* By workload: its name and kind (it may be deleted since); else NULL. */
    gchar *name;
    gchar *kind;
    gint64 seconds;
    gint64 gpu_seconds;
    /* By day: the day's amounts by class (EinsoraUsageGroup, by name), for
     * a chart of days stacked by class; else NULL. */
    GPtrArray *classes;
} EinsoraUsageGroup;

#define EINSORA_TYPE_USAGE_GROUP (einsora_usage_group_get_type())
GType einsora_usage_group_get_type(void);

EinsoraUsageGroup *einsora_usage_group_new(const char *key);
EinsoraUsageGroup *einsora_usage_group_copy(const EinsoraUsageGroup *group);
void einsora_usage_group_free(EinsoraUsageGroup *group);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraUsageGroup, einsora_usage_group_free)

G_END_DECLS
