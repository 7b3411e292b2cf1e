#define G_LOG_DOMAIN "einsora-app"

#include "einsora-new-workload-dialog.h"

#include <glib/gi18n.h>

#include "einsora-format.h"
#include "einsora-json-member.h"

struct _EinsoraNewWorkloadDialog {
    AdwWindow parent_instance;
    GtkWidget *create_button;
    GtkRevealer *error_revealer;
    GtkLabel *error_label;
    AdwEntryRow *name_row;
    AdwComboRow *kind_row;
    AdwComboRow *class_row;
    AdwComboRow *image_row;
    AdwComboRow *model_row;
    AdwComboRow *region_row;
    AdwActionRow *quota_row;

    EinsoraClient *client;
    JsonObject *catalog;
    JsonArray *models;   /* the model store's, once it answered */
    gchar *models_error; /* why it didn't, if it didn't */
    gchar *model_text;   /* what the Model row says under its title */
    GCancellable *cancellable;
    gchar *idempotency_key; /* one per request: a retried create is one create */
    gchar *quota_text;
    gboolean updating; /* in update_choices(), which reads the rows it sets */
};

G_DEFINE_FINAL_TYPE(EinsoraNewWorkloadDialog, einsora_new_workload_dialog, ADW_TYPE_WINDOW)

enum { SIGNAL_CREATED, N_SIGNALS };
static guint signals[N_SIGNALS];

static gboolean
array_has_string(JsonArray *array, const char *value)
{
    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        if (json_node_get_value_type(node) == G_TYPE_STRING &&
            g_strcmp0(json_node_get_string(node), value) == 0)
            return TRUE;
    }
    return FALSE;
}

/* The catalog's object named @name in its list @list. */
static JsonObject *
find_named(EinsoraNewWorkloadDialog *self, const char *list, const char *name)
{
    JsonArray *array = einsora_json_member_array(self->catalog, list);

    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        if (JSON_NODE_HOLDS_OBJECT(node) &&
            g_strcmp0(einsora_json_member_string(json_node_get_object(node), "name"), name) == 0)
            return json_node_get_object(node);
    }
    return NULL;
}

static const char *
selected(AdwComboRow *row)
{
    GObject *item = adw_combo_row_get_selected_item(row);

    return item != NULL ? gtk_string_object_get_string(GTK_STRING_OBJECT(item)) : NULL;
}

static gboolean
is_endpoint(EinsoraNewWorkloadDialog *self)
{
    return g_strcmp0(selected(self->kind_row), "endpoint") == 0;
}

/* The store's model named @name. */
static JsonObject *
find_model(EinsoraNewWorkloadDialog *self, const char *name)
{
    for (guint i = 0; self->models != NULL && i < json_array_get_length(self->models); i++) {
        JsonNode *node = json_array_get_element(self->models, i);
        if (JSON_NODE_HOLDS_OBJECT(node) &&
            g_strcmp0(einsora_json_member_string(json_node_get_object(node), "name"), name) == 0)
            return json_node_get_object(node);
    }
    return NULL;
}

/* "4.1 GB · llama": what tells one model from another besides its name. */
static gchar *
model_detail(JsonObject *model)
{
    g_autofree gchar *size =
        g_format_size((guint64)MAX(einsora_json_member_int(model, "size", 0), 0));
    const char *architecture = einsora_json_member_string(model, "architecture");

    if (architecture == NULL || *architecture == '\0')
        return g_steal_pointer(&size);
    return g_strdup_printf("%s · %s", size, architecture);
}

static gboolean
same_choices(AdwComboRow *row, GPtrArray *names)
{
    GListModel *model = adw_combo_row_get_model(row);

    if (model == NULL || g_list_model_get_n_items(model) != names->len)
        return FALSE;
    for (guint i = 0; i < names->len; i++) {
        g_autoptr(GtkStringObject) item = g_list_model_get_item(model, i);
        if (g_strcmp0(gtk_string_object_get_string(item), g_ptr_array_index(names, i)) != 0)
            return FALSE;
    }
    return TRUE;
}

/* Replaces @row's choices, keeping the one chosen when it is still there.
 * The same choices are left as they are: a new model would rebuild the
 * row's list for nothing (and drop what the person chose). */
static void
set_choices(AdwComboRow *row, GPtrArray *names)
{
    g_autofree gchar *before = g_strdup(selected(row));
    g_autoptr(GtkStringList) list = NULL;
    guint keep = 0;

    if (same_choices(row, names))
        return;
    list = gtk_string_list_new(NULL);

    for (guint i = 0; i < names->len; i++) {
        gtk_string_list_append(list, g_ptr_array_index(names, i));
        if (g_strcmp0(g_ptr_array_index(names, i), before) == 0)
            keep = i;
    }
    adw_combo_row_set_model(row, G_LIST_MODEL(list));
    if (names->len > 0)
        adw_combo_row_set_selected(row, keep);
}

static void
show_error(EinsoraNewWorkloadDialog *self, const char *message)
{
    gtk_label_set_text(self->error_label, message != NULL ? message : "");
    gtk_revealer_set_reveal_child(self->error_revealer, message != NULL);
}

static void
update_class_details(EinsoraNewWorkloadDialog *self)
{
    JsonObject *class = find_named(self, "classes", selected(self->class_row));
    g_autofree gchar *capacity = NULL;
    gint64 gpus = einsora_json_member_int(class, "gpus", 0);
    gint64 quota = einsora_json_member_int(class, "quota", -1);
    gint64 held = einsora_json_member_int(class, "held", 0);

    g_clear_pointer(&self->quota_text, g_free);
    if (class == NULL) {
        adw_action_row_set_subtitle(ADW_ACTION_ROW(self->class_row), "");
        self->quota_text = g_strdup("");
    } else {
        capacity = einsora_format_capacity(einsora_json_member_int(class, "cpus", 0),
                                           einsora_json_member_int(class, "memory_mib", 0));
        if (gpus > 0) {
            g_autofree gchar *with_gpus = g_strdup_printf(
                g_dngettext(GETTEXT_PACKAGE, "%s · %d GPU", "%s · %d GPUs", (gulong)gpus), capacity,
                (int)gpus);
            g_free(capacity);
            capacity = g_steal_pointer(&with_gpus);
        }
        adw_action_row_set_subtitle(ADW_ACTION_ROW(self->class_row), capacity);
        if (gpus == 0 || quota < 0)
            self->quota_text = g_strdup(_("This class uses no GPU quota"));
        else
            /* TRANSLATORS: GPUs of the tenant's quota in use, the quota,
             * and how many the chosen class takes */
            self->quota_text = g_strdup_printf(_("%d of %d in use; this one takes %d"), (int)held,
                                               (int)quota, (int)gpus);
    }
    adw_action_row_set_subtitle(self->quota_row, self->quota_text);
}

static void
update_model_details(EinsoraNewWorkloadDialog *self)
{
    JsonObject *model = find_model(self, selected(self->model_row));

    g_clear_pointer(&self->model_text, g_free);
    if (model != NULL)
        self->model_text = model_detail(model);
    else if (self->models_error != NULL)
        /* TRANSLATORS: the API's own message follows */
        self->model_text =
            g_strdup_printf(_("The model store can't be read: %s"), self->models_error);
    else if (self->models == NULL)
        self->model_text = g_strdup(_("Reading the model store…"));
    else
        /* TRANSLATORS: "einsora models add NAME PATH" is a command: keep it as it is */
        self->model_text = g_strdup(_("No models yet: add one with einsora models add NAME PATH"));
    adw_action_row_set_subtitle(ADW_ACTION_ROW(self->model_row), self->model_text);
}

/* An image no machine here can run now is marked: it may still be
 * created (a machine may join), and it waits until one can. */
static void
update_image_details(EinsoraNewWorkloadDialog *self)
{
    JsonObject *image = find_named(self, "images", selected(self->image_row));
    JsonArray *drivers = einsora_json_member_array(image, "drivers");
    g_autoptr(GString) names = g_string_new(NULL);
    g_autofree gchar *text = NULL;

    if (image == NULL || !json_object_has_member(image, "runs_here") ||
        json_object_get_boolean_member_with_default(image, "runs_here", TRUE)) {
        adw_action_row_set_subtitle(ADW_ACTION_ROW(self->image_row), "");
        return;
    }
    for (guint i = 0; drivers != NULL && i < json_array_get_length(drivers); i++) {
        const char *name = json_array_get_string_element(drivers, i);
        if (name == NULL)
            continue;
        if (names->len > 0)
            g_string_append(names, ", ");
        g_string_append(names, name);
    }
    /* TRANSLATORS: %s is the drivers that run the image, e.g. "docker" */
    text = g_strdup_printf(_("No machine here can run it now (it runs on %s): it will wait until "
                             "one can"),
                           names->str);
    adw_action_row_set_subtitle(ADW_ACTION_ROW(self->image_row), text);
}

/* Create needs a kind and a class, and what the kind runs: a notebook an
 * image, an endpoint a model (its image is the server's choice). */
static void
update_create(EinsoraNewWorkloadDialog *self)
{
    gboolean ready = selected(self->kind_row) != NULL && selected(self->class_row) != NULL &&
                     selected(is_endpoint(self) ? self->model_row : self->image_row) != NULL;

    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.create", ready);
}

/* Whether some image serves @kind with a runtime for @accelerator. */
static gboolean
kind_runs_on(EinsoraNewWorkloadDialog *self, const char *kind, const char *accelerator)
{
    JsonArray *array = einsora_json_member_array(self->catalog, "images");

    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        JsonObject *object = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        if (array_has_string(einsora_json_member_array(object, "kinds"), kind) &&
            array_has_string(einsora_json_member_array(object, "accelerators"), accelerator))
            return TRUE;
    }
    return FALSE;
}

/* Classes offered in the chosen region that some image of the kind runs
 * on; images that serve the kind and have a runtime for the class's
 * accelerator. */
static void
update_choices(EinsoraNewWorkloadDialog *self)
{
    const char *kind = selected(self->kind_row);
    const char *region = selected(self->region_row);
    g_autoptr(GPtrArray) classes = g_ptr_array_new();
    g_autoptr(GPtrArray) images = g_ptr_array_new();
    JsonArray *array = einsora_json_member_array(self->catalog, "classes");
    JsonObject *class;
    const char *accelerator;

    self->updating = TRUE;
    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        JsonObject *object = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        const char *name = einsora_json_member_string(object, "name");
        if (name != NULL &&
            (region == NULL ||
             array_has_string(einsora_json_member_array(object, "regions"), region)) &&
            kind_runs_on(self, kind, einsora_json_member_string(object, "accelerator")))
            g_ptr_array_add(classes, (gpointer)name);
    }
    set_choices(self->class_row, classes);
    class = find_named(self, "classes", selected(self->class_row));
    accelerator = einsora_json_member_string(class, "accelerator");
    array = einsora_json_member_array(self->catalog, "images");
    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        JsonObject *object = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        const char *name = einsora_json_member_string(object, "name");
        if (name != NULL && array_has_string(einsora_json_member_array(object, "kinds"), kind) &&
            array_has_string(einsora_json_member_array(object, "accelerators"), accelerator))
            g_ptr_array_add(images, (gpointer)name);
    }
    set_choices(self->image_row, images);
    self->updating = FALSE;
    update_class_details(self);
    update_image_details(self);
    /* An endpoint's image is the server's pick for the class. */
    gtk_widget_set_visible(GTK_WIDGET(self->image_row), !is_endpoint(self));
    gtk_widget_set_visible(GTK_WIDGET(self->model_row), is_endpoint(self));
    update_model_details(self);
    update_create(self);
}

static void
on_choice(AdwComboRow *row, GParamSpec *pspec, EinsoraNewWorkloadDialog *self)
{
    /* The image list follows the kind and class; not the other way. The
     * model list is the store's, whatever the rest. */
    if (self->updating)
        return;
    if (row == self->model_row) {
        update_model_details(self);
        update_create(self);
    } else if (row != self->image_row) {
        update_choices(self);
    } else {
        update_image_details(self);
    }
}

static void
on_models(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraNewWorkloadDialog *self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    JsonArray *models = answer != NULL && JSON_NODE_HOLDS_OBJECT(answer)
                            ? einsora_json_member_array(json_node_get_object(answer), "models")
                            : NULL;
    g_autoptr(GPtrArray) names = g_ptr_array_new();

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_object_unref(self);
        return;
    }
    if (models == NULL) {
        self->models_error =
            g_strdup(error != NULL ? error->message : _("The daemon's answer isn't readable."));
    } else {
        self->models = json_array_ref(models);
        for (guint i = 0; i < json_array_get_length(models); i++) {
            JsonNode *node = json_array_get_element(models, i);
            const char *name = JSON_NODE_HOLDS_OBJECT(node)
                                   ? einsora_json_member_string(json_node_get_object(node), "name")
                                   : NULL;
            if (name != NULL)
                g_ptr_array_add(names, (gpointer)name);
        }
        set_choices(self->model_row, names);
    }
    update_model_details(self);
    update_create(self);
    g_object_unref(self);
}

/* The drop-down's items: the name, and under it the size. */
static void
on_model_item_setup(GtkSignalListItemFactory *factory, GtkListItem *item, gpointer user_data)
{
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
    GtkWidget *name = gtk_label_new(NULL);
    GtkWidget *detail = gtk_label_new(NULL);

    gtk_label_set_xalign(GTK_LABEL(name), 0);
    gtk_label_set_xalign(GTK_LABEL(detail), 0);
    gtk_widget_add_css_class(detail, "caption");
    gtk_widget_add_css_class(detail, "dim-label");
    gtk_box_append(GTK_BOX(box), name);
    gtk_box_append(GTK_BOX(box), detail);
    gtk_list_item_set_child(item, box);
}

static void
on_model_item_bind(GtkSignalListItemFactory *factory, GtkListItem *item, gpointer user_data)
{
    EinsoraNewWorkloadDialog *self = user_data;
    GtkWidget *name = gtk_widget_get_first_child(gtk_list_item_get_child(item));
    const char *model_name = gtk_string_object_get_string(gtk_list_item_get_item(item));
    JsonObject *model = find_model(self, model_name);
    g_autofree gchar *detail = model != NULL ? model_detail(model) : NULL;

    gtk_label_set_text(GTK_LABEL(name), model_name);
    gtk_label_set_text(GTK_LABEL(gtk_widget_get_next_sibling(name)), detail != NULL ? detail : "");
}

static char *
kind_label(GtkStringObject *item, gpointer user_data)
{
    return g_strdup(einsora_format_kind(gtk_string_object_get_string(item)));
}

static void
on_created(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraNewWorkloadDialog *self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_object_unref(self);
        return;
    }
    gtk_widget_set_sensitive(self->create_button, TRUE);
    if (answer == NULL || !JSON_NODE_HOLDS_OBJECT(answer)) {
        /* Answered and refused: a changed request is another request, with
         * a key of its own. Unanswered: the same key, so a retry of a create
         * that did happen can't make a second workload. */
        if (error != NULL && error->domain == EINSORA_CLIENT_ERROR &&
            einsora_client_error_get_status(error) != 0) {
            g_free(self->idempotency_key);
            self->idempotency_key = g_uuid_string_random();
        }
        show_error(self, error != NULL ? error->message : _("The daemon's answer isn't readable."));
        g_object_unref(self);
        return;
    }
    g_signal_emit(self, signals[SIGNAL_CREATED], 0, json_node_get_object(answer));
    gtk_window_close(GTK_WINDOW(self));
    g_object_unref(self);
}

static void
on_create(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraNewWorkloadDialog *self = EINSORA_NEW_WORKLOAD_DIALOG(widget);
    g_autofree gchar *name =
        g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(self->name_row))));

    show_error(self, NULL);
    gtk_widget_set_sensitive(self->create_button, FALSE);
    if (is_endpoint(self))
        einsora_client_create_endpoint_async(self->client, *name != '\0' ? name : NULL,
                                             selected(self->class_row), selected(self->model_row),
                                             selected(self->region_row), self->idempotency_key,
                                             self->cancellable, on_created, g_object_ref(self));
    else
        einsora_client_create_workload_async(
            self->client, selected(self->kind_row), *name != '\0' ? name : NULL,
            selected(self->class_row), selected(self->image_row), selected(self->region_row),
            self->idempotency_key, self->cancellable, on_created, g_object_ref(self));
}

static void
einsora_new_workload_dialog_dispose(GObject *object)
{
    EinsoraNewWorkloadDialog *self = EINSORA_NEW_WORKLOAD_DIALOG(object);

    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->client);
    g_clear_pointer(&self->catalog, json_object_unref);
    g_clear_pointer(&self->models, json_array_unref);
    g_clear_pointer(&self->models_error, g_free);
    g_clear_pointer(&self->model_text, g_free);
    g_clear_pointer(&self->idempotency_key, g_free);
    g_clear_pointer(&self->quota_text, g_free);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_NEW_WORKLOAD_DIALOG);
    G_OBJECT_CLASS(einsora_new_workload_dialog_parent_class)->dispose(object);
}

static void
einsora_new_workload_dialog_class_init(EinsoraNewWorkloadDialogClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_new_workload_dialog_dispose;
    gtk_widget_class_set_template_from_resource(
        widget_class, "/dev/einsora/Einsora/einsora-new-workload-dialog.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, create_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, error_revealer);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, error_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, name_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, kind_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, class_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, image_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, model_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, region_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNewWorkloadDialog, quota_row);
    gtk_widget_class_install_action(widget_class, "dialog.create", NULL, on_create);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Return, GDK_CONTROL_MASK,
                                        "dialog.create", NULL);
    /* The new workload, as the API answered it. */
    signals[SIGNAL_CREATED] = g_signal_new("created", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                           0, NULL, NULL, NULL, G_TYPE_NONE, 1, JSON_TYPE_OBJECT);
}

static void
einsora_new_workload_dialog_init(EinsoraNewWorkloadDialog *self)
{
    g_autoptr(GtkExpression) kind_expression = NULL;
    g_autoptr(GtkListItemFactory) model_factory = gtk_signal_list_item_factory_new();

    gtk_widget_init_template(GTK_WIDGET(self));
    self->cancellable = g_cancellable_new();
    self->idempotency_key = g_uuid_string_random();
    kind_expression = gtk_cclosure_expression_new(G_TYPE_STRING, NULL, 0, NULL,
                                                  G_CALLBACK(kind_label), NULL, NULL);
    adw_combo_row_set_expression(self->kind_row, kind_expression);
    g_signal_connect(model_factory, "setup", G_CALLBACK(on_model_item_setup), NULL);
    g_signal_connect(model_factory, "bind", G_CALLBACK(on_model_item_bind), self);
    adw_combo_row_set_list_factory(self->model_row, model_factory);
}

/* The names in the catalog's list @list ("kinds" holds plain strings). */
static GPtrArray *
names_of(EinsoraNewWorkloadDialog *self, const char *list, guint *default_index)
{
    GPtrArray *names = g_ptr_array_new();
    JsonArray *array = einsora_json_member_array(self->catalog, list);

    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        JsonObject *object = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        const char *name = object != NULL ? einsora_json_member_string(object, "name")
                           : json_node_get_value_type(node) == G_TYPE_STRING
                               ? json_node_get_string(node)
                               : NULL;
        JsonNode *is_default = object != NULL ? json_object_get_member(object, "default") : NULL;

        if (name == NULL)
            continue;
        if (default_index != NULL && is_default != NULL &&
            json_node_get_value_type(is_default) == G_TYPE_BOOLEAN &&
            json_node_get_boolean(is_default))
            *default_index = names->len;
        g_ptr_array_add(names, (gpointer)name);
    }
    return names;
}

EinsoraNewWorkloadDialog *
einsora_new_workload_dialog_new(GtkWindow *parent, EinsoraClient *client, JsonObject *catalog)
{
    EinsoraNewWorkloadDialog *self =
        g_object_new(EINSORA_TYPE_NEW_WORKLOAD_DIALOG, "transient-for", parent, NULL);
    g_autoptr(GPtrArray) kinds = NULL;
    g_autoptr(GPtrArray) regions = NULL;
    guint default_region = 0;

    self->client = g_object_ref(client);
    self->catalog = json_object_ref(catalog);
    kinds = names_of(self, "kinds", NULL);
    regions = names_of(self, "regions", &default_region);
    set_choices(self->kind_row, kinds);
    set_choices(self->region_row, regions);
    if (regions->len > 0)
        adw_combo_row_set_selected(self->region_row, default_region);
    update_choices(self);
    /* Read once, as the dialog opens: what an endpoint may serve. */
    einsora_client_request_async(self->client, "GET", "/v1/model-store", NULL, NULL,
                                 self->cancellable, on_models, g_object_ref(self));
    g_signal_connect_object(self->kind_row, "notify::selected", G_CALLBACK(on_choice), self, 0);
    g_signal_connect_object(self->class_row, "notify::selected", G_CALLBACK(on_choice), self, 0);
    g_signal_connect_object(self->region_row, "notify::selected", G_CALLBACK(on_choice), self, 0);
    g_signal_connect_object(self->model_row, "notify::selected", G_CALLBACK(on_choice), self, 0);
    g_signal_connect_object(self->image_row, "notify::selected", G_CALLBACK(on_choice), self, 0);
    return self;
}

static AdwComboRow *
row_named(EinsoraNewWorkloadDialog *self, const char *row)
{
    return g_str_equal(row, "kind")     ? self->kind_row
           : g_str_equal(row, "class")  ? self->class_row
           : g_str_equal(row, "image")  ? self->image_row
           : g_str_equal(row, "model")  ? self->model_row
           : g_str_equal(row, "region") ? self->region_row
                                        : NULL;
}

gboolean
einsora_new_workload_dialog_select(EinsoraNewWorkloadDialog *self, const char *row,
                                   const char *name)
{
    AdwComboRow *combo = row_named(self, row);
    GListModel *model = combo != NULL ? adw_combo_row_get_model(combo) : NULL;

    for (guint i = 0; model != NULL && i < g_list_model_get_n_items(model); i++) {
        g_autoptr(GtkStringObject) item = g_list_model_get_item(model, i);
        if (g_strcmp0(gtk_string_object_get_string(item), name) == 0) {
            adw_combo_row_set_selected(combo, i);
            return TRUE;
        }
    }
    return FALSE;
}

gchar **
einsora_new_workload_dialog_get_choices(EinsoraNewWorkloadDialog *self, const char *row)
{
    AdwComboRow *combo = row_named(self, row);
    GListModel *model = combo != NULL ? adw_combo_row_get_model(combo) : NULL;
    g_autoptr(GStrvBuilder) names = g_strv_builder_new();

    for (guint i = 0; model != NULL && i < g_list_model_get_n_items(model); i++) {
        g_autoptr(GtkStringObject) item = g_list_model_get_item(model, i);
        g_strv_builder_add(names, gtk_string_object_get_string(item));
    }
    return g_strv_builder_end(names);
}

gboolean
einsora_new_workload_dialog_has_read_models(EinsoraNewWorkloadDialog *self)
{
    return self->models != NULL || self->models_error != NULL;
}

const char *
einsora_new_workload_dialog_get_model_text(EinsoraNewWorkloadDialog *self)
{
    return self->model_text;
}

void
einsora_new_workload_dialog_set_name(EinsoraNewWorkloadDialog *self, const char *name)
{
    gtk_editable_set_text(GTK_EDITABLE(self->name_row), name);
}

const char *
einsora_new_workload_dialog_get_quota_text(EinsoraNewWorkloadDialog *self)
{
    return self->quota_text;
}

const char *
einsora_new_workload_dialog_get_error(EinsoraNewWorkloadDialog *self)
{
    if (!gtk_revealer_get_reveal_child(self->error_revealer))
        return NULL;
    return gtk_label_get_text(self->error_label);
}
