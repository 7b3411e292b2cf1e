#define G_LOG_DOMAIN "einsora-app"

#include "einsora-workload-list.h"

struct _EinsoraWorkloadList {
    GObject parent_instance;
    GPtrArray *items;          /* EinsoraWorkloadItem, newest first */
    GHashTable *machine_names; /* machine ID -> name */
};

static void einsora_workload_list_model_init(GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraWorkloadList, einsora_workload_list, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(G_TYPE_LIST_MODEL,
                                                    einsora_workload_list_model_init))

static GType
list_get_item_type(GListModel *model)
{
    return EINSORA_TYPE_WORKLOAD_ITEM;
}

static guint
list_get_n_items(GListModel *model)
{
    return EINSORA_WORKLOAD_LIST(model)->items->len;
}

static gpointer
list_get_item(GListModel *model, guint position)
{
    EinsoraWorkloadList *self = EINSORA_WORKLOAD_LIST(model);

    if (position >= self->items->len)
        return NULL;
    return g_object_ref(g_ptr_array_index(self->items, position));
}

static void
einsora_workload_list_model_init(GListModelInterface *iface)
{
    iface->get_item_type = list_get_item_type;
    iface->get_n_items = list_get_n_items;
    iface->get_item = list_get_item;
}

static void
einsora_workload_list_finalize(GObject *object)
{
    EinsoraWorkloadList *self = EINSORA_WORKLOAD_LIST(object);

    g_ptr_array_unref(self->items);
    g_hash_table_unref(self->machine_names);
    G_OBJECT_CLASS(einsora_workload_list_parent_class)->finalize(object);
}

static void
einsora_workload_list_class_init(EinsoraWorkloadListClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_workload_list_finalize;
}

static void
einsora_workload_list_init(EinsoraWorkloadList *self)
{
    self->items = g_ptr_array_new_with_free_func(g_object_unref);
    self->machine_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static void
name_machine(EinsoraWorkloadList *self, EinsoraWorkloadItem *item)
{
    const char *machine = einsora_workload_item_get_machine_id(item);

    einsora_workload_item_set_machine_name(
        item, machine != NULL ? g_hash_table_lookup(self->machine_names, machine) : NULL);
}

static void
name_machine_of(gpointer item, gpointer self)
{
    name_machine(self, item);
}

EinsoraWorkloadList *
einsora_workload_list_new(void)
{
    return g_object_new(EINSORA_TYPE_WORKLOAD_LIST, NULL);
}

/* Newest first: by creation time, then ID (UUIDv7s sort by time too). */
static gint
compare_newest_first(gconstpointer a, gconstpointer b)
{
    EinsoraWorkloadItem *x = *(EinsoraWorkloadItem *const *)a;
    EinsoraWorkloadItem *y = *(EinsoraWorkloadItem *const *)b;
    gint order =
        g_strcmp0(einsora_workload_item_get_created_at(y), einsora_workload_item_get_created_at(x));

    if (order != 0)
        return order;
    return g_strcmp0(einsora_workload_item_get_id(y), einsora_workload_item_get_id(x));
}

static gboolean
find(EinsoraWorkloadList *self, const char *id, guint *position)
{
    for (guint i = 0; id != NULL && i < self->items->len; i++)
        if (g_str_equal(einsora_workload_item_get_id(g_ptr_array_index(self->items, i)), id)) {
            *position = i;
            return TRUE;
        }
    return FALSE;
}

static gboolean
is_deleted(EinsoraWorkloadItem *item)
{
    return g_strcmp0(einsora_workload_item_get_state(item), "deleted") == 0;
}

void
einsora_workload_list_replace(EinsoraWorkloadList *self, JsonArray *workloads)
{
    g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_object_unref);
    guint removed = self->items->len;

    for (guint i = 0; workloads != NULL && i < json_array_get_length(workloads); i++) {
        JsonNode *node = json_array_get_element(workloads, i);
        EinsoraWorkloadItem *item;
        guint position;

        if (!JSON_NODE_HOLDS_OBJECT(node))
            continue;
        item = einsora_workload_item_new(json_node_get_object(node));
        if (item == NULL)
            continue;
        /* The same workload keeps its object, updated. */
        if (find(self, einsora_workload_item_get_id(item), &position)) {
            EinsoraWorkloadItem *known = g_ptr_array_index(self->items, position);

            einsora_workload_item_update(known, json_node_get_object(node));
            g_object_unref(item);
            item = g_object_ref(known);
        }
        if (is_deleted(item))
            g_object_unref(item);
        else
            g_ptr_array_add(items, item);
    }
    g_ptr_array_sort(items, compare_newest_first);
    g_ptr_array_foreach(items, name_machine_of, self);
    g_ptr_array_unref(self->items);
    self->items = g_steal_pointer(&items);
    g_list_model_items_changed(G_LIST_MODEL(self), 0, removed, self->items->len);
}

EinsoraWorkloadItem *
einsora_workload_list_upsert(EinsoraWorkloadList *self, JsonObject *workload)
{
    g_autoptr(EinsoraWorkloadItem) item = einsora_workload_item_new(workload);
    guint position = 0;

    if (item == NULL)
        return NULL;
    if (find(self, einsora_workload_item_get_id(item), &position)) {
        EinsoraWorkloadItem *known = g_ptr_array_index(self->items, position);

        einsora_workload_item_update(known, workload);
        name_machine(self, known);
        if (!is_deleted(known))
            return known;
        g_ptr_array_remove_index(self->items, position);
        g_list_model_items_changed(G_LIST_MODEL(self), position, 1, 0);
        return NULL;
    }
    if (is_deleted(item))
        return NULL;
    /* Where it sorts: almost always first, as the newest. */
    while (position < self->items->len &&
           compare_newest_first(&g_ptr_array_index(self->items, position), &item) < 0)
        position++;
    name_machine(self, item);
    g_ptr_array_insert(self->items, (gint)position, g_object_ref(item));
    g_list_model_items_changed(G_LIST_MODEL(self), position, 0, 1);
    return item;
}

EinsoraWorkloadItem *
einsora_workload_list_lookup(EinsoraWorkloadList *self, const char *id)
{
    guint position;

    if (!find(self, id, &position))
        return NULL;
    return g_ptr_array_index(self->items, position);
}

guint
einsora_workload_list_count_state(EinsoraWorkloadList *self, const char *state)
{
    guint count = 0;

    for (guint i = 0; i < self->items->len; i++)
        if (g_strcmp0(einsora_workload_item_get_state(g_ptr_array_index(self->items, i)), state) ==
            0)
            count++;
    return count;
}

void
einsora_workload_list_set_machines(EinsoraWorkloadList *self, JsonArray *machines)
{
    g_hash_table_remove_all(self->machine_names);
    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonNode *node = json_array_get_element(machines, i);
        JsonObject *machine = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        JsonNode *id = machine != NULL ? json_object_get_member(machine, "id") : NULL;
        JsonNode *name = machine != NULL ? json_object_get_member(machine, "name") : NULL;

        if (id != NULL && name != NULL && json_node_get_value_type(id) == G_TYPE_STRING &&
            json_node_get_value_type(name) == G_TYPE_STRING)
            g_hash_table_replace(self->machine_names, g_strdup(json_node_get_string(id)),
                                 g_strdup(json_node_get_string(name)));
    }
    g_ptr_array_foreach(self->items, name_machine_of, self);
}
