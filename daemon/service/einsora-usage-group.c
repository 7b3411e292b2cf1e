#define G_LOG_DOMAIN "einsora-service"

#include "einsora-usage-group.h"

G_DEFINE_BOXED_TYPE(EinsoraUsageGroup, einsora_usage_group, einsora_usage_group_copy,
                    einsora_usage_group_free)

static const char *const grouping_names[] = {
    [EINSORA_USAGE_BY_CLASS] = "class",
    [EINSORA_USAGE_BY_WORKLOAD] = "workload",
    [EINSORA_USAGE_BY_DAY] = "day",
};

const char *
einsora_usage_grouping_to_string(EinsoraUsageGrouping grouping)
{
    if ((guint)grouping >= G_N_ELEMENTS(grouping_names))
        return NULL;
    return grouping_names[grouping];
}

gboolean
einsora_usage_grouping_from_string(const char *str, EinsoraUsageGrouping *grouping)
{
    for (guint i = 0; i < G_N_ELEMENTS(grouping_names); i++) {
        if (g_strcmp0(str, grouping_names[i]) == 0) {
            *grouping = (EinsoraUsageGrouping)i;
            return TRUE;
        }
    }
    return FALSE;
}

EinsoraUsageGroup *
einsora_usage_group_new(const char *key)
{
    EinsoraUsageGroup *group = g_new0(EinsoraUsageGroup, 1);

    group->key = g_strdup(key);
    return group;
}

EinsoraUsageGroup *
einsora_usage_group_copy(const EinsoraUsageGroup *group)
{
    EinsoraUsageGroup *copy = einsora_usage_group_new(group->key);

    copy->name = g_strdup(group->name);
    copy->kind = g_strdup(group->kind);
    copy->seconds = group->seconds;
    copy->gpu_seconds = group->gpu_seconds;
    if (group->classes != NULL) {
        copy->classes = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_group_free);
        for (guint i = 0; i < group->classes->len; i++)
            g_ptr_array_add(copy->classes,
                            einsora_usage_group_copy(g_ptr_array_index(group->classes, i)));
    }
    return copy;
}

void
einsora_usage_group_free(EinsoraUsageGroup *group)
{
    if (group == NULL)
        return;
    g_free(group->key);
    g_free(group->name);
    g_free(group->kind);
    g_clear_pointer(&group->classes, g_ptr_array_unref);
    g_free(group);
}
