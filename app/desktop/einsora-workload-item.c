#define G_LOG_DOMAIN "einsora-app"

#include "einsora-workload-item.h"

#include "einsora-json-member.h"

struct _EinsoraWorkloadItem {
    GObject parent_instance;
    gchar *id;
    gchar *name;
    gchar *kind;
    gchar *model;
    gchar *state;
    gchar *gpu_class;
    gchar *placed_class;
    gchar *image;
    gchar *region;
    gchar *machine_id;
    gchar *machine_name;
    gchar *driver;
    gchar *created_at;
    gint64 version;
};

G_DEFINE_FINAL_TYPE(EinsoraWorkloadItem, einsora_workload_item, G_TYPE_OBJECT)

enum {
    PROP_0,
    PROP_ID,
    PROP_NAME,
    PROP_KIND,
    PROP_MODEL,
    PROP_STATE,
    PROP_CLASS,
    PROP_IMAGE,
    PROP_REGION,
    PROP_MACHINE_ID,
    PROP_MACHINE_NAME,
    PROP_DRIVER,
    PROP_CREATED_AT,
    N_PROPS
};

static GParamSpec *props[N_PROPS];

static void
einsora_workload_item_finalize(GObject *object)
{
    EinsoraWorkloadItem *self = EINSORA_WORKLOAD_ITEM(object);

    g_free(self->id);
    g_free(self->name);
    g_free(self->kind);
    g_free(self->model);
    g_free(self->state);
    g_free(self->gpu_class);
    g_free(self->placed_class);
    g_free(self->image);
    g_free(self->region);
    g_free(self->machine_id);
    g_free(self->machine_name);
    g_free(self->driver);
    g_free(self->created_at);
    G_OBJECT_CLASS(einsora_workload_item_parent_class)->finalize(object);
}

static void
einsora_workload_item_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    EinsoraWorkloadItem *self = EINSORA_WORKLOAD_ITEM(object);

    switch (prop_id) {
    case PROP_ID:
        g_value_set_string(value, self->id);
        break;
    case PROP_NAME:
        g_value_set_string(value, self->name);
        break;
    case PROP_KIND:
        g_value_set_string(value, self->kind);
        break;
    case PROP_MODEL:
        g_value_set_string(value, self->model);
        break;
    case PROP_STATE:
        g_value_set_string(value, self->state);
        break;
    case PROP_CLASS:
        g_value_set_string(value, einsora_workload_item_get_class(self));
        break;
    case PROP_IMAGE:
        g_value_set_string(value, self->image);
        break;
    case PROP_REGION:
        g_value_set_string(value, self->region);
        break;
    case PROP_MACHINE_ID:
        g_value_set_string(value, self->machine_id);
        break;
    case PROP_MACHINE_NAME:
        g_value_set_string(value, self->machine_name);
        break;
    case PROP_DRIVER:
        g_value_set_string(value, self->driver);
        break;
    case PROP_CREATED_AT:
        g_value_set_string(value, self->created_at);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_workload_item_class_init(EinsoraWorkloadItemClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    const GParamFlags flags = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

    object_class->finalize = einsora_workload_item_finalize;
    object_class->get_property = einsora_workload_item_get_property;
    props[PROP_ID] = g_param_spec_string("id", NULL, NULL, NULL, flags);
    props[PROP_NAME] = g_param_spec_string("name", NULL, NULL, NULL, flags);
    props[PROP_KIND] = g_param_spec_string("kind", NULL, NULL, NULL, flags);
    /* An endpoint's model (absent for other kinds). */
    props[PROP_MODEL] = g_param_spec_string("model", NULL, NULL, NULL, flags);
    props[PROP_STATE] = g_param_spec_string("state", NULL, NULL, NULL, flags);
    props[PROP_CLASS] = g_param_spec_string("class", NULL, NULL, NULL, flags);
    props[PROP_IMAGE] = g_param_spec_string("image", NULL, NULL, NULL, flags);
    props[PROP_REGION] = g_param_spec_string("region", NULL, NULL, NULL, flags);
    props[PROP_MACHINE_ID] = g_param_spec_string("machine-id", NULL, NULL, NULL, flags);
    props[PROP_MACHINE_NAME] = g_param_spec_string("machine-name", NULL, NULL, NULL, flags);
    props[PROP_DRIVER] = g_param_spec_string("driver", NULL, NULL, NULL, flags);
    props[PROP_CREATED_AT] = g_param_spec_string("created-at", NULL, NULL, NULL, flags);
    g_object_class_install_properties(object_class, N_PROPS, props);
}

static void
einsora_workload_item_init(EinsoraWorkloadItem *self)
{
}

/* Sets *field to @value; TRUE if it changed. */
static gboolean
take_string(gchar **field, const char *value)
{
    if (g_strcmp0(*field, value) == 0)
        return FALSE;
    g_free(*field);
    *field = g_strdup(value);
    return TRUE;
}

static void
take_fields(EinsoraWorkloadItem *self, JsonObject *workload, gboolean notify)
{
    const char *old_class = einsora_workload_item_get_class(self);
    g_autofree gchar *class_before = g_strdup(old_class);
    struct {
        gchar **field;
        const char *member;
        guint prop;
    } fields[] = {
        {&self->name, "name", PROP_NAME},
        {&self->kind, "kind", PROP_KIND},
        {&self->model, "model", PROP_MODEL},
        {&self->state, "state", PROP_STATE},
        {&self->gpu_class, "gpu_class", 0},
        {&self->placed_class, "placed_class", 0},
        {&self->image, "image", PROP_IMAGE},
        {&self->region, "region", PROP_REGION},
        {&self->machine_id, "machine_id", PROP_MACHINE_ID},
        {&self->driver, "driver", PROP_DRIVER},
        {&self->created_at, "created_at", PROP_CREATED_AT},
    };

    self->version = einsora_json_member_int(workload, "version", 0);
    g_object_freeze_notify(G_OBJECT(self));
    for (gsize i = 0; i < G_N_ELEMENTS(fields); i++)
        if (take_string(fields[i].field, einsora_json_member_string(workload, fields[i].member)) &&
            notify && fields[i].prop != 0)
            g_object_notify_by_pspec(G_OBJECT(self), props[fields[i].prop]);
    if (notify && g_strcmp0(class_before, einsora_workload_item_get_class(self)) != 0)
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_CLASS]);
    g_object_thaw_notify(G_OBJECT(self));
}

EinsoraWorkloadItem *
einsora_workload_item_new(JsonObject *workload)
{
    const char *id = einsora_json_member_string(workload, "id");
    EinsoraWorkloadItem *self;

    if (id == NULL)
        return NULL;
    self = g_object_new(EINSORA_TYPE_WORKLOAD_ITEM, NULL);
    self->id = g_strdup(id);
    take_fields(self, workload, FALSE);
    return self;
}

gboolean
einsora_workload_item_update(EinsoraWorkloadItem *self, JsonObject *workload)
{
    g_return_val_if_fail(EINSORA_IS_WORKLOAD_ITEM(self), FALSE);

    if (g_strcmp0(einsora_json_member_string(workload, "id"), self->id) != 0)
        return FALSE;
    /* Answers can cross: an older copy never undoes a newer one. */
    if (einsora_json_member_int(workload, "version", 0) < self->version)
        return FALSE;
    take_fields(self, workload, TRUE);
    return TRUE;
}

const char *
einsora_workload_item_get_id(EinsoraWorkloadItem *self)
{
    return self->id;
}

const char *
einsora_workload_item_get_name(EinsoraWorkloadItem *self)
{
    return self->name;
}

const char *
einsora_workload_item_get_kind(EinsoraWorkloadItem *self)
{
    return self->kind;
}

const char *
einsora_workload_item_get_model(EinsoraWorkloadItem *self)
{
    return self->model;
}

gboolean
einsora_workload_item_is_endpoint(EinsoraWorkloadItem *self)
{
    return g_strcmp0(self->kind, "endpoint") == 0;
}

const char *
einsora_workload_item_get_state(EinsoraWorkloadItem *self)
{
    return self->state;
}

const char *
einsora_workload_item_get_class(EinsoraWorkloadItem *self)
{
    return self->placed_class != NULL ? self->placed_class : self->gpu_class;
}

const char *
einsora_workload_item_get_image(EinsoraWorkloadItem *self)
{
    return self->image;
}

const char *
einsora_workload_item_get_region(EinsoraWorkloadItem *self)
{
    return self->region;
}

const char *
einsora_workload_item_get_machine_id(EinsoraWorkloadItem *self)
{
    return self->machine_id;
}

const char *
einsora_workload_item_get_driver(EinsoraWorkloadItem *self)
{
    return self->driver;
}

const char *
einsora_workload_item_get_created_at(EinsoraWorkloadItem *self)
{
    return self->created_at;
}

gint64
einsora_workload_item_get_version(EinsoraWorkloadItem *self)
{
    return self->version;
}

const char *
einsora_workload_item_get_machine_name(EinsoraWorkloadItem *self)
{
    return self->machine_name;
}

void
einsora_workload_item_set_machine_name(EinsoraWorkloadItem *self, const char *name)
{
    if (take_string(&self->machine_name, name))
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MACHINE_NAME]);
}
