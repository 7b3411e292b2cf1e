#define G_LOG_DOMAIN "einsora-app"

#include "einsora-tray.h"

#include <glib/gi18n.h>
#include <string.h>
#include <unistd.h>

#include "einsora-workload-item.h"

#define TRAY_ID "dev.einsora.Einsora"
#define ITEM_PATH "/StatusNotifierItem"
#define ITEM_INTERFACE "org.kde.StatusNotifierItem"
#define MENU_PATH "/MenuBar"
#define MENU_INTERFACE "com.canonical.dbusmenu"
#define WATCHER_NAME "org.kde.StatusNotifierWatcher"
#define WATCHER_PATH "/StatusNotifierWatcher"
#define WATCHER_INTERFACE "org.kde.StatusNotifierWatcher"
#define INVALID_ARGS "org.freedesktop.DBus.Error.InvalidArgs"

/* The interfaces as KDE's StatusNotifierItem specification and
 * libdbusmenu's com.canonical.dbusmenu.xml define them. */
static const char introspection_xml[] =
    "<node>"
    "  <interface name='org.kde.StatusNotifierItem'>"
    "    <property name='Category' type='s' access='read'/>"
    "    <property name='Id' type='s' access='read'/>"
    "    <property name='Title' type='s' access='read'/>"
    "    <property name='Status' type='s' access='read'/>"
    "    <property name='WindowId' type='i' access='read'/>"
    "    <property name='IconThemePath' type='s' access='read'/>"
    "    <property name='IconName' type='s' access='read'/>"
    "    <property name='IconPixmap' type='a(iiay)' access='read'/>"
    "    <property name='OverlayIconName' type='s' access='read'/>"
    "    <property name='OverlayIconPixmap' type='a(iiay)' access='read'/>"
    "    <property name='AttentionIconName' type='s' access='read'/>"
    "    <property name='AttentionIconPixmap' type='a(iiay)' access='read'/>"
    "    <property name='AttentionMovieName' type='s' access='read'/>"
    "    <property name='ToolTip' type='(sa(iiay)ss)' access='read'/>"
    "    <property name='Menu' type='o' access='read'/>"
    "    <property name='ItemIsMenu' type='b' access='read'/>"
    "    <method name='ContextMenu'>"
    "      <arg name='x' type='i' direction='in'/>"
    "      <arg name='y' type='i' direction='in'/>"
    "    </method>"
    "    <method name='Activate'>"
    "      <arg name='x' type='i' direction='in'/>"
    "      <arg name='y' type='i' direction='in'/>"
    "    </method>"
    "    <method name='SecondaryActivate'>"
    "      <arg name='x' type='i' direction='in'/>"
    "      <arg name='y' type='i' direction='in'/>"
    "    </method>"
    "    <method name='Scroll'>"
    "      <arg name='delta' type='i' direction='in'/>"
    "      <arg name='orientation' type='s' direction='in'/>"
    "    </method>"
    "    <signal name='NewTitle'/>"
    "    <signal name='NewIcon'/>"
    "    <signal name='NewAttentionIcon'/>"
    "    <signal name='NewOverlayIcon'/>"
    "    <signal name='NewToolTip'/>"
    "    <signal name='NewStatus'>"
    "      <arg name='status' type='s'/>"
    "    </signal>"
    "  </interface>"
    "  <interface name='com.canonical.dbusmenu'>"
    "    <property name='Version' type='u' access='read'/>"
    "    <property name='TextDirection' type='s' access='read'/>"
    "    <property name='Status' type='s' access='read'/>"
    "    <property name='IconThemePath' type='as' access='read'/>"
    "    <method name='GetLayout'>"
    "      <arg name='parentId' type='i' direction='in'/>"
    "      <arg name='recursionDepth' type='i' direction='in'/>"
    "      <arg name='propertyNames' type='as' direction='in'/>"
    "      <arg name='revision' type='u' direction='out'/>"
    "      <arg name='layout' type='(ia{sv}av)' direction='out'/>"
    "    </method>"
    "    <method name='GetGroupProperties'>"
    "      <arg name='ids' type='ai' direction='in'/>"
    "      <arg name='propertyNames' type='as' direction='in'/>"
    "      <arg name='properties' type='a(ia{sv})' direction='out'/>"
    "    </method>"
    "    <method name='GetProperty'>"
    "      <arg name='id' type='i' direction='in'/>"
    "      <arg name='name' type='s' direction='in'/>"
    "      <arg name='value' type='v' direction='out'/>"
    "    </method>"
    "    <method name='Event'>"
    "      <arg name='id' type='i' direction='in'/>"
    "      <arg name='eventId' type='s' direction='in'/>"
    "      <arg name='data' type='v' direction='in'/>"
    "      <arg name='timestamp' type='u' direction='in'/>"
    "    </method>"
    "    <method name='EventGroup'>"
    "      <arg name='events' type='a(isvu)' direction='in'/>"
    "      <arg name='idErrors' type='ai' direction='out'/>"
    "    </method>"
    "    <method name='AboutToShow'>"
    "      <arg name='id' type='i' direction='in'/>"
    "      <arg name='needUpdate' type='b' direction='out'/>"
    "    </method>"
    "    <method name='AboutToShowGroup'>"
    "      <arg name='ids' type='ai' direction='in'/>"
    "      <arg name='updatesNeeded' type='ai' direction='out'/>"
    "      <arg name='idErrors' type='ai' direction='out'/>"
    "    </method>"
    "    <signal name='ItemsPropertiesUpdated'>"
    "      <arg name='updatedProps' type='a(ia{sv})'/>"
    "      <arg name='removedProps' type='a(ias)'/>"
    "    </signal>"
    "    <signal name='LayoutUpdated'>"
    "      <arg name='revision' type='u'/>"
    "      <arg name='parent' type='i'/>"
    "    </signal>"
    "    <signal name='ItemActivationRequested'>"
    "      <arg name='id' type='i'/>"
    "      <arg name='timestamp' type='u'/>"
    "    </signal>"
    "  </interface>"
    "</node>";

/* Menu item IDs. A notebook's ID is handed out the first time it shows
 * and stays its own for the tray's life, so a click on a menu a host
 * drew a moment ago still means that notebook or nothing. */
enum {
    MENU_ROOT = 0,
    MENU_COUNT = 1,
    MENU_SEPARATOR_TOP = 2,
    MENU_SEPARATOR_BOTTOM = 3,
    MENU_SHOW = 4,
    MENU_QUIT = 5,
    MENU_FIRST_WORKLOAD = 100,
};

typedef struct {
    gint id;
    gchar *workload_id;   /* of an "Open …" item */
    GVariant *properties; /* a{sv}, only values that differ from the defaults */
} MenuEntry;

static void
menu_entry_free(MenuEntry *entry)
{
    g_free(entry->workload_id);
    g_variant_unref(entry->properties);
    g_free(entry);
}

struct _EinsoraTray {
    GObject parent_instance;
    GDBusConnection *bus;
    GListModel *workloads;
    gchar *icon_name;
    GPtrArray *watched;   /* EinsoraWorkloadItem: the model's items, followed */
    GHashTable *menu_ids; /* workload ID -> menu item ID */
    gint next_menu_id;
    GPtrArray *menu; /* MenuEntry: the root's children, in order */
    guint revision;  /* of the menu's layout */
    guint n_running;
    GDBusNodeInfo *node_info;
    guint item_registration;
    guint menu_registration;
    guint watcher_watch;
    guint watcher_signals;
    gchar *watcher_owner;
    GCancellable *watcher_cancellable; /* of calls to the current watcher */
    gboolean registered;               /* the current watcher took the item */
    gboolean host_registered;          /* ... and says a host shows items */
    gboolean available;
    /* The name the item is registered by: a watcher drops the item when
     * its owner lets it go (dispose), which the unique name never does
     * while the app runs. */
    gchar *item_name;
    guint item_name_owner;
    /* Whether the bus gave that name: until it answers, a watcher waits;
     * where it refuses (a sandbox that may own no such name), the item
     * goes by its unique name, as libappindicator's do. */
    enum { NAME_ASKED, NAME_OWNED, NAME_REFUSED } item_name_state;
    gboolean registering; /* asked the current watcher to take the item */
};

G_DEFINE_FINAL_TYPE(EinsoraTray, einsora_tray, G_TYPE_OBJECT)

enum { PROP_0, PROP_AVAILABLE, N_PROPS };
static GParamSpec *props[N_PROPS];

enum { SIGNAL_OPEN_WORKLOAD, SIGNAL_SHOW_WINDOW, SIGNAL_QUIT, N_SIGNALS };
static guint signals[N_SIGNALS];

/* The menu, the tooltip and the status */

static const char *
title(void)
{
    return _("Einsora");
}

static gchar *
count_text(guint n_running)
{
    /* Translators: the tray's tooltip and the first line of its menu: how
     * many workloads (notebooks and others) are running now. */
    return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%u running", "%u running", n_running),
                           n_running);
}

/* Active while anything runs; Passive (the spec's "idle") otherwise. */
static const char *
status(EinsoraTray *self)
{
    return self->n_running > 0 ? "Active" : "Passive";
}

/* dbusmenu labels take "_" as a mnemonic mark; a name's own are doubled. */
static gchar *
escape_mnemonics(const char *text)
{
    g_auto(GStrv) parts = g_strsplit(text, "_", -1);

    return g_strjoinv("__", parts);
}

static gboolean
is_running(EinsoraWorkloadItem *item)
{
    return g_strcmp0(einsora_workload_item_get_state(item), "running") == 0;
}

static gint
menu_id_for(EinsoraTray *self, const char *workload_id)
{
    gpointer known;

    if (g_hash_table_lookup_extended(self->menu_ids, workload_id, NULL, &known))
        return GPOINTER_TO_INT(known);
    g_hash_table_insert(self->menu_ids, g_strdup(workload_id), GINT_TO_POINTER(self->next_menu_id));
    return self->next_menu_id++;
}

static void
add_entry(GPtrArray *menu, gint id, const char *workload_id, GVariantBuilder *properties)
{
    MenuEntry *entry = g_new0(MenuEntry, 1);

    entry->id = id;
    entry->workload_id = g_strdup(workload_id);
    entry->properties = g_variant_ref_sink(g_variant_builder_end(properties));
    g_ptr_array_add(menu, entry);
}

static void
add_label(GPtrArray *menu, gint id, const char *workload_id, const char *label, gboolean enabled)
{
    g_auto(GVariantBuilder) properties = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE_VARDICT);

    g_variant_builder_add(&properties, "{sv}", "label", g_variant_new_string(label));
    if (!enabled)
        g_variant_builder_add(&properties, "{sv}", "enabled", g_variant_new_boolean(FALSE));
    add_entry(menu, id, workload_id, &properties);
}

static void
add_separator(GPtrArray *menu, gint id)
{
    g_auto(GVariantBuilder) properties = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE_VARDICT);

    g_variant_builder_add(&properties, "{sv}", "type", g_variant_new_string("separator"));
    add_entry(menu, id, NULL, &properties);
}

/* "N running", a separator, "Open <name>" for each running notebook
 * (newest first, as the list has them) and a separator after them, then
 * "Show Einsora" and "Quit". */
static GPtrArray *
build_menu(EinsoraTray *self, guint n_running)
{
    GPtrArray *menu = g_ptr_array_new_with_free_func((GDestroyNotify)menu_entry_free);
    g_autofree gchar *count = count_text(n_running);
    gboolean any = FALSE;

    add_label(menu, MENU_COUNT, NULL, count, FALSE);
    add_separator(menu, MENU_SEPARATOR_TOP);
    for (guint i = 0; i < self->watched->len; i++) {
        EinsoraWorkloadItem *item = g_ptr_array_index(self->watched, i);
        const char *id = einsora_workload_item_get_id(item);
        const char *name = einsora_workload_item_get_name(item);
        g_autofree gchar *escaped = NULL;
        g_autofree gchar *label = NULL;

        if (!is_running(item) || g_strcmp0(einsora_workload_item_get_kind(item), "notebook") != 0)
            continue;
        escaped = escape_mnemonics(name != NULL && *name != '\0' ? name : id);
        /* Translators: a tray menu item that opens a running notebook; %s
         * is the notebook's name. */
        label = g_strdup_printf(_("Open %s"), escaped);
        add_label(menu, menu_id_for(self, id), id, label, TRUE);
        any = TRUE;
    }
    if (any)
        add_separator(menu, MENU_SEPARATOR_BOTTOM);
    add_label(menu, MENU_SHOW, NULL, _("Show Einsora"), TRUE);
    add_label(menu, MENU_QUIT, NULL, _("Quit"), TRUE);
    return menu;
}

static gboolean
same_layout(GPtrArray *a, GPtrArray *b)
{
    if (a->len != b->len)
        return FALSE;
    for (guint i = 0; i < a->len; i++)
        if (((MenuEntry *)g_ptr_array_index(a, i))->id !=
            ((MenuEntry *)g_ptr_array_index(b, i))->id)
            return FALSE;
    return TRUE;
}

static void
emit(EinsoraTray *self, const char *path, const char *interface, const char *name,
     GVariant *parameters)
{
    g_autoptr(GError) error = NULL;

    if (self->item_registration == 0) {
        if (parameters != NULL)
            g_variant_unref(g_variant_ref_sink(parameters));
        return;
    }
    if (!g_dbus_connection_emit_signal(self->bus, NULL, path, interface, name, parameters, &error))
        g_debug("tray: %s not sent: %s", name, error->message);
}

/* Tells hosts what changed: the layout (items came or went), or only
 * some items' properties (a count or a name). */
static void
update_menu(EinsoraTray *self, GPtrArray *menu)
{
    g_auto(GVariantBuilder) changed = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("a(ia{sv})"));
    gboolean any = FALSE;

    if (!same_layout(self->menu, menu)) {
        g_ptr_array_unref(self->menu);
        self->menu = g_ptr_array_ref(menu);
        self->revision++;
        emit(self, MENU_PATH, MENU_INTERFACE, "LayoutUpdated",
             g_variant_new("(ui)", self->revision, MENU_ROOT));
        return;
    }
    for (guint i = 0; i < menu->len; i++) {
        MenuEntry *old = g_ptr_array_index(self->menu, i);
        MenuEntry *fresh = g_ptr_array_index(menu, i);

        if (g_variant_equal(old->properties, fresh->properties))
            continue;
        g_variant_builder_add(&changed, "(i@a{sv})", fresh->id, fresh->properties);
        any = TRUE;
    }
    g_ptr_array_unref(self->menu);
    self->menu = g_ptr_array_ref(menu);
    if (any)
        emit(self, MENU_PATH, MENU_INTERFACE, "ItemsPropertiesUpdated",
             g_variant_new("(a(ia{sv})a(ias))", &changed, NULL));
}

static void
update(EinsoraTray *self)
{
    g_autoptr(GPtrArray) menu = NULL;
    guint n_running = 0;

    for (guint i = 0; i < self->watched->len; i++)
        if (is_running(g_ptr_array_index(self->watched, i)))
            n_running++;
    menu = build_menu(self, n_running);
    update_menu(self, menu);
    if (n_running != self->n_running) {
        const char *before = status(self);

        self->n_running = n_running;
        emit(self, ITEM_PATH, ITEM_INTERFACE, "NewToolTip", NULL);
        if (!g_str_equal(before, status(self)))
            emit(self, ITEM_PATH, ITEM_INTERFACE, "NewStatus", g_variant_new("(s)", status(self)));
    }
}

/* Following the workload list */

static void
on_item_notify(EinsoraWorkloadItem *item, GParamSpec *pspec, EinsoraTray *self)
{
    update(self);
}

static void
on_items_changed(GListModel *model, guint position, guint removed, guint added, EinsoraTray *self)
{
    for (guint i = 0; i < removed; i++)
        g_signal_handlers_disconnect_by_data(g_ptr_array_index(self->watched, position + i), self);
    g_ptr_array_remove_range(self->watched, position, removed);
    for (guint i = 0; i < added; i++) {
        EinsoraWorkloadItem *item = g_list_model_get_item(model, position + i);

        g_signal_connect(item, "notify::state", G_CALLBACK(on_item_notify), self);
        g_signal_connect(item, "notify::name", G_CALLBACK(on_item_notify), self);
        g_signal_connect(item, "notify::kind", G_CALLBACK(on_item_notify), self);
        g_ptr_array_insert(self->watched, (gint)(position + i), item);
    }
    update(self);
}

/* The StatusNotifierItem */

static GVariant *
empty_pixmaps(void)
{
    return g_variant_new_array(G_VARIANT_TYPE("(iiay)"), NULL, 0);
}

static GVariant *
item_get_property(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                  const gchar *interface_name, const gchar *property_name, GError **error,
                  gpointer user_data)
{
    EinsoraTray *self = user_data;

    if (g_str_equal(property_name, "Category"))
        return g_variant_new_string("ApplicationStatus");
    if (g_str_equal(property_name, "Id"))
        return g_variant_new_string(TRAY_ID);
    if (g_str_equal(property_name, "Title"))
        return g_variant_new_string(title());
    if (g_str_equal(property_name, "Status"))
        return g_variant_new_string(status(self));
    if (g_str_equal(property_name, "WindowId"))
        return g_variant_new_int32(0);
    if (g_str_equal(property_name, "IconName"))
        return g_variant_new_string(self->icon_name);
    if (g_str_equal(property_name, "IconThemePath") ||
        g_str_equal(property_name, "OverlayIconName") ||
        g_str_equal(property_name, "AttentionIconName") ||
        g_str_equal(property_name, "AttentionMovieName"))
        return g_variant_new_string("");
    if (g_str_has_suffix(property_name, "Pixmap"))
        return empty_pixmaps();
    if (g_str_equal(property_name, "ToolTip")) {
        g_autofree gchar *text = count_text(self->n_running);

        return g_variant_new("(s@a(iiay)ss)", self->icon_name, empty_pixmaps(), title(), text);
    }
    if (g_str_equal(property_name, "Menu"))
        return g_variant_new_object_path(MENU_PATH);
    if (g_str_equal(property_name, "ItemIsMenu"))
        return g_variant_new_boolean(TRUE);
    g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_PROPERTY, "No property %s",
                property_name);
    return NULL;
}

static void
item_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                 const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                 GDBusMethodInvocation *invocation, gpointer user_data)
{
    EinsoraTray *self = user_data;

    /* ItemIsMenu: hosts show the menu themselves; a host that calls
     * Activate anyway gets the window. ContextMenu (a menu drawn by the
     * app), SecondaryActivate and Scroll have nothing to do. */
    g_dbus_method_invocation_return_value(invocation, NULL);
    if (g_str_equal(method_name, "Activate"))
        g_signal_emit(self, signals[SIGNAL_SHOW_WINDOW], 0);
}

static const GDBusInterfaceVTable item_vtable = {
    .method_call = item_method_call,
    .get_property = item_get_property,
};

/* The menu (com.canonical.dbusmenu) */

/* (transfer none) The root's properties. */
static GVariant *
root_properties(void)
{
    static GVariant *properties;

    if (properties == NULL) {
        g_auto(GVariantBuilder) builder = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE_VARDICT);

        g_variant_builder_add(&builder, "{sv}", "children-display",
                              g_variant_new_string("submenu"));
        properties = g_variant_ref_sink(g_variant_builder_end(&builder));
    }
    return properties;
}

/* (transfer none) (nullable) An item's properties, the root's included. */
static GVariant *
lookup_properties(EinsoraTray *self, gint id, MenuEntry **entry_out)
{
    if (entry_out != NULL)
        *entry_out = NULL;
    if (id == MENU_ROOT)
        return root_properties();
    for (guint i = 0; i < self->menu->len; i++) {
        MenuEntry *entry = g_ptr_array_index(self->menu, i);

        if (entry->id == id) {
            if (entry_out != NULL)
                *entry_out = entry;
            return entry->properties;
        }
    }
    return NULL;
}

/* The properties @names asks for (all when it is empty). */
static GVariant *
filter_properties(GVariant *properties, const char *const *names)
{
    g_auto(GVariantBuilder) builder = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE_VARDICT);
    GVariantIter iter;
    const char *key;
    GVariant *value;

    if (names == NULL || names[0] == NULL)
        return properties;
    g_variant_iter_init(&iter, properties);
    while (g_variant_iter_next(&iter, "{&sv}", &key, &value)) {
        if (g_strv_contains(names, key))
            g_variant_builder_add(&builder, "{sv}", key, value);
        g_variant_unref(value);
    }
    return g_variant_builder_end(&builder);
}

static GVariant *
layout_of(gint id, GVariant *properties, const char *const *names, GVariantBuilder *children)
{
    g_auto(GVariantBuilder) none = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("av"));

    return g_variant_new("(i@a{sv}av)", id, filter_properties(properties, names),
                         children != NULL ? children : &none);
}

static void
menu_get_layout(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation)
{
    g_autofree const char **names = NULL;
    g_auto(GVariantBuilder) children = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("av"));
    gint parent, depth;
    GVariant *properties;
    GVariant *layout;

    g_variant_get(parameters, "(ii^a&s)", &parent, &depth, &names);
    properties = lookup_properties(self, parent, NULL);
    if (properties == NULL) {
        g_dbus_method_invocation_return_dbus_error(invocation, INVALID_ARGS, "No such menu item");
        return;
    }
    /* Only the root has children; depth 0 asks for none. */
    if (parent == MENU_ROOT && depth != 0)
        for (guint i = 0; i < self->menu->len; i++) {
            MenuEntry *entry = g_ptr_array_index(self->menu, i);

            g_variant_builder_add(&children, "v",
                                  layout_of(entry->id, entry->properties, names, NULL));
        }
    layout = layout_of(parent, properties, names, parent == MENU_ROOT ? &children : NULL);
    g_dbus_method_invocation_return_value(invocation,
                                          g_variant_new("(u@(ia{sv}av))", self->revision, layout));
}

static void
menu_get_group_properties(EinsoraTray *self, GVariant *parameters,
                          GDBusMethodInvocation *invocation)
{
    g_autoptr(GVariant) ids = NULL;
    g_autofree const char **names = NULL;
    g_auto(GVariantBuilder) result = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("a(ia{sv})"));
    gsize n_ids = 0;
    const gint32 *id = NULL;

    g_variant_get(parameters, "(@ai^a&s)", &ids, &names);
    id = g_variant_get_fixed_array(ids, &n_ids, sizeof(gint32));
    if (n_ids == 0) {
        /* None asked for: all of them. */
        g_variant_builder_add(&result, "(i@a{sv})", MENU_ROOT,
                              filter_properties(root_properties(), names));
        for (guint i = 0; i < self->menu->len; i++) {
            MenuEntry *entry = g_ptr_array_index(self->menu, i);

            g_variant_builder_add(&result, "(i@a{sv})", entry->id,
                                  filter_properties(entry->properties, names));
        }
    }
    for (gsize i = 0; i < n_ids; i++) {
        GVariant *properties = lookup_properties(self, id[i], NULL);

        if (properties != NULL)
            g_variant_builder_add(&result, "(i@a{sv})", id[i],
                                  filter_properties(properties, names));
    }
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(a(ia{sv}))", &result));
}

static void
menu_get_property(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation)
{
    g_autoptr(GVariant) value = NULL;
    const char *name;
    GVariant *properties;
    gint id;

    g_variant_get(parameters, "(i&s)", &id, &name);
    properties = lookup_properties(self, id, NULL);
    if (properties != NULL)
        value = g_variant_lookup_value(properties, name, NULL);
    if (value == NULL) {
        g_dbus_method_invocation_return_dbus_error(invocation, INVALID_ARGS,
                                                   "No such menu item or property");
        return;
    }
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(v)", value));
}

/* What a click on item @id asks of the app: a signal to emit later,
 * once the host has its answer. */
typedef struct {
    guint signal;
    gchar *workload_id;
} Click;

static void
click_clear(Click *click)
{
    g_free(click->workload_id);
}

static gboolean
clicked(EinsoraTray *self, gint id, GArray *clicks)
{
    MenuEntry *entry = NULL;
    Click click = {0};

    if (lookup_properties(self, id, &entry) == NULL)
        return FALSE;
    if (id == MENU_SHOW)
        click.signal = SIGNAL_SHOW_WINDOW;
    else if (id == MENU_QUIT)
        click.signal = SIGNAL_QUIT;
    else if (entry != NULL && entry->workload_id != NULL) {
        click.signal = SIGNAL_OPEN_WORKLOAD;
        click.workload_id = g_strdup(entry->workload_id);
    } else
        return TRUE; /* the count, a separator, the root */
    g_array_append_val(clicks, click);
    return TRUE;
}

static void
emit_clicks(EinsoraTray *self, GArray *clicks)
{
    g_object_ref(self);
    for (guint i = 0; i < clicks->len; i++) {
        Click *click = &g_array_index(clicks, Click, i);

        if (click->signal == SIGNAL_OPEN_WORKLOAD)
            g_signal_emit(self, signals[SIGNAL_OPEN_WORKLOAD], 0, click->workload_id);
        else
            g_signal_emit(self, signals[click->signal], 0);
    }
    g_object_unref(self);
}

static GArray *
clicks_new(void)
{
    GArray *clicks = g_array_new(FALSE, TRUE, sizeof(Click));

    g_array_set_clear_func(clicks, (GDestroyNotify)click_clear);
    return clicks;
}

static void
menu_event(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation)
{
    g_autoptr(GArray) clicks = clicks_new();
    g_autoptr(GVariant) data = NULL;
    const char *event;
    guint32 timestamp;
    gint id;

    g_variant_get(parameters, "(i&s@vu)", &id, &event, &data, &timestamp);
    if (lookup_properties(self, id, NULL) == NULL) {
        g_dbus_method_invocation_return_dbus_error(invocation, INVALID_ARGS, "No such menu item");
        return;
    }
    /* "opened", "closed" and "hovered" change nothing here. */
    if (g_str_equal(event, "clicked"))
        clicked(self, id, clicks);
    g_dbus_method_invocation_return_value(invocation, NULL);
    emit_clicks(self, clicks);
}

static void
menu_event_group(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation)
{
    g_autoptr(GArray) clicks = clicks_new();
    g_auto(GVariantBuilder) errors = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("ai"));
    g_autoptr(GVariantIter) iter = NULL;
    const char *event;
    GVariant *data;
    guint32 timestamp;
    gsize n_events, n_errors = 0;
    gint id;

    g_variant_get(parameters, "(a(isvu))", &iter);
    n_events = g_variant_iter_n_children(iter);
    while (g_variant_iter_next(iter, "(i&svu)", &id, &event, &data, &timestamp)) {
        gboolean known = lookup_properties(self, id, NULL) != NULL;

        if (known && g_str_equal(event, "clicked"))
            clicked(self, id, clicks);
        if (!known) {
            g_variant_builder_add(&errors, "i", id);
            n_errors++;
        }
        g_variant_unref(data);
    }
    /* As libdbusmenu: an error only when no event named a known item. */
    if (n_events > 0 && n_errors == n_events) {
        g_dbus_method_invocation_return_dbus_error(invocation, INVALID_ARGS, "No such menu items");
        return;
    }
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(ai)", &errors));
    emit_clicks(self, clicks);
}

static void
menu_about_to_show(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation)
{
    gint id;

    g_variant_get(parameters, "(i)", &id);
    if (lookup_properties(self, id, NULL) == NULL) {
        g_dbus_method_invocation_return_dbus_error(invocation, INVALID_ARGS, "No such menu item");
        return;
    }
    /* The menu is always up to date: LayoutUpdated says when it changed. */
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(b)", FALSE));
}

static void
menu_about_to_show_group(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation)
{
    g_autoptr(GVariant) ids = NULL;
    g_auto(GVariantBuilder) updates = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("ai"));
    g_auto(GVariantBuilder) errors = G_VARIANT_BUILDER_INIT(G_VARIANT_TYPE("ai"));
    gsize n_ids = 0;
    const gint32 *id;

    g_variant_get(parameters, "(@ai)", &ids);
    id = g_variant_get_fixed_array(ids, &n_ids, sizeof(gint32));
    for (gsize i = 0; i < n_ids; i++)
        if (lookup_properties(self, id[i], NULL) == NULL)
            g_variant_builder_add(&errors, "i", id[i]);
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(aiai)", &updates, &errors));
}

static void
menu_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                 const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                 GDBusMethodInvocation *invocation, gpointer user_data)
{
    static const struct {
        const char *name;
        void (*handle)(EinsoraTray *self, GVariant *parameters, GDBusMethodInvocation *invocation);
    } methods[] = {
        {"GetLayout", menu_get_layout},
        {"GetGroupProperties", menu_get_group_properties},
        {"GetProperty", menu_get_property},
        {"Event", menu_event},
        {"EventGroup", menu_event_group},
        {"AboutToShow", menu_about_to_show},
        {"AboutToShowGroup", menu_about_to_show_group},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(methods); i++)
        if (g_str_equal(method_name, methods[i].name)) {
            methods[i].handle(user_data, parameters, invocation);
            return;
        }
    g_dbus_method_invocation_return_error(invocation, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD,
                                          "No method %s", method_name);
}

/* The menu's direction follows the language's, as GTK's own translation
 * of "default:LTR" says it (GLib calls only: no GTK here). */
static const char *
text_direction(void)
{
    return g_str_equal(g_dgettext("gtk40", "default:LTR"), "default:RTL") ? "rtl" : "ltr";
}

static GVariant *
menu_get_dbus_property(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                       const gchar *interface_name, const gchar *property_name, GError **error,
                       gpointer user_data)
{
    if (g_str_equal(property_name, "Version"))
        return g_variant_new_uint32(3);
    if (g_str_equal(property_name, "TextDirection"))
        return g_variant_new_string(text_direction());
    if (g_str_equal(property_name, "Status"))
        return g_variant_new_string("normal");
    if (g_str_equal(property_name, "IconThemePath"))
        return g_variant_new_strv(NULL, 0);
    g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_PROPERTY, "No property %s",
                property_name);
    return NULL;
}

static const GDBusInterfaceVTable menu_vtable = {
    .method_call = menu_method_call,
    .get_property = menu_get_dbus_property,
};

/* The StatusNotifierWatcher */

static void
set_available(EinsoraTray *self, gboolean available)
{
    if (self->available == available)
        return;
    self->available = available;
    g_debug("tray: %s", available ? "shown by a StatusNotifierHost" : "not shown");
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_AVAILABLE]);
}

/* Forgets the watcher: its calls still under way no longer count. */
static void
reset_watcher(EinsoraTray *self)
{
    if (self->watcher_cancellable != NULL)
        g_cancellable_cancel(self->watcher_cancellable);
    g_clear_object(&self->watcher_cancellable);
    g_clear_pointer(&self->watcher_owner, g_free);
    self->registering = FALSE;
    self->registered = FALSE;
    self->host_registered = FALSE;
}

static void
on_host_registered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) answer =
        g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);
    g_autoptr(GVariant) value = NULL;
    EinsoraTray *self = user_data;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* @self may be gone */
    if (answer == NULL) {
        g_message("tray: the StatusNotifierWatcher did not say whether a host shows items: %s",
                  error->message);
        return;
    }
    g_variant_get(answer, "(v)", &value);
    self->host_registered =
        g_variant_is_of_type(value, G_VARIANT_TYPE_BOOLEAN) && g_variant_get_boolean(value);
    set_available(self, self->registered && self->host_registered);
}

static void
ask_host_registered(EinsoraTray *self)
{
    g_dbus_connection_call(
        self->bus, self->watcher_owner, WATCHER_PATH, "org.freedesktop.DBus.Properties", "Get",
        g_variant_new("(ss)", WATCHER_INTERFACE, "IsStatusNotifierHostRegistered"),
        G_VARIANT_TYPE("(v)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, self->watcher_cancellable,
        on_host_registered, self);
}

static void
on_registered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) answer =
        g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);
    EinsoraTray *self = user_data;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* @self may be gone */
    if (answer == NULL) {
        g_message("tray: the StatusNotifierWatcher refused the item: %s", error->message);
        return;
    }
    self->registered = TRUE;
    ask_host_registered(self);
}

/* Asks the current watcher to take the item, once the bus has said
 * which name it goes by. A bus name: the watcher looks for the item at
 * /StatusNotifierItem. */
static void
register_item(EinsoraTray *self)
{
    const char *name = self->item_name_state == NAME_OWNED
                           ? self->item_name
                           : g_dbus_connection_get_unique_name(self->bus);

    if (self->watcher_owner == NULL || self->registering || self->item_name_state == NAME_ASKED)
        return;
    self->registering = TRUE;
    g_dbus_connection_call(self->bus, self->watcher_owner, WATCHER_PATH, WATCHER_INTERFACE,
                           "RegisterStatusNotifierItem", g_variant_new("(s)", name), NULL,
                           G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, self->watcher_cancellable,
                           on_registered, self);
}

static void
on_item_name_acquired(GDBusConnection *bus, const gchar *name, gpointer user_data)
{
    EinsoraTray *self = user_data;

    self->item_name_state = NAME_OWNED;
    register_item(self);
}

static void
on_item_name_lost(GDBusConnection *bus, const gchar *name, gpointer user_data)
{
    EinsoraTray *self = user_data;

    /* Lost after it was owned: the connection is closing; nothing to do. */
    if (self->item_name_state != NAME_ASKED)
        return;
    g_message("tray: the bus refused the name %s; the item goes by %s", name,
              g_dbus_connection_get_unique_name(self->bus));
    self->item_name_state = NAME_REFUSED;
    register_item(self);
}

static void
on_watcher_appeared(GDBusConnection *bus, const gchar *name, const gchar *owner, gpointer user_data)
{
    EinsoraTray *self = user_data;

    reset_watcher(self);
    set_available(self, FALSE);
    self->watcher_owner = g_strdup(owner);
    self->watcher_cancellable = g_cancellable_new();
    register_item(self);
}

static void
on_watcher_vanished(GDBusConnection *bus, const gchar *name, gpointer user_data)
{
    EinsoraTray *self = user_data;

    reset_watcher(self);
    set_available(self, FALSE);
}

static void
on_watcher_signal(GDBusConnection *bus, const gchar *sender, const gchar *object_path,
                  const gchar *interface_name, const gchar *signal_name, GVariant *parameters,
                  gpointer user_data)
{
    EinsoraTray *self = user_data;

    if (!self->registered)
        return;
    if (g_str_equal(signal_name, "StatusNotifierHostRegistered")) {
        self->host_registered = TRUE;
        set_available(self, TRUE);
    } else if (g_str_equal(signal_name, "StatusNotifierHostUnregistered")) {
        /* One host left; others may remain. */
        ask_host_registered(self);
    }
}

/* The object */

static void
einsora_tray_dispose(GObject *object)
{
    EinsoraTray *self = EINSORA_TRAY(object);

    reset_watcher(self);
    if (self->watcher_watch != 0)
        g_bus_unwatch_name(self->watcher_watch);
    self->watcher_watch = 0;
    if (self->watcher_signals != 0)
        g_dbus_connection_signal_unsubscribe(self->bus, self->watcher_signals);
    self->watcher_signals = 0;
    if (self->item_registration != 0)
        g_dbus_connection_unregister_object(self->bus, self->item_registration);
    self->item_registration = 0;
    if (self->menu_registration != 0)
        g_dbus_connection_unregister_object(self->bus, self->menu_registration);
    self->menu_registration = 0;
    if (self->item_name_owner != 0)
        g_bus_unown_name(self->item_name_owner);
    self->item_name_owner = 0;
    if (self->workloads != NULL)
        g_signal_handlers_disconnect_by_data(self->workloads, self);
    for (guint i = 0; self->watched != NULL && i < self->watched->len; i++)
        g_signal_handlers_disconnect_by_data(g_ptr_array_index(self->watched, i), self);
    g_clear_pointer(&self->watched, g_ptr_array_unref);
    g_clear_object(&self->workloads);
    g_clear_object(&self->bus);
    G_OBJECT_CLASS(einsora_tray_parent_class)->dispose(object);
}

static void
einsora_tray_finalize(GObject *object)
{
    EinsoraTray *self = EINSORA_TRAY(object);

    g_free(self->icon_name);
    g_free(self->item_name);
    g_hash_table_unref(self->menu_ids);
    g_ptr_array_unref(self->menu);
    g_clear_pointer(&self->node_info, g_dbus_node_info_unref);
    G_OBJECT_CLASS(einsora_tray_parent_class)->finalize(object);
}

static void
einsora_tray_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    EinsoraTray *self = EINSORA_TRAY(object);

    switch (prop_id) {
    case PROP_AVAILABLE:
        g_value_set_boolean(value, self->available);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_tray_class_init(EinsoraTrayClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->dispose = einsora_tray_dispose;
    object_class->finalize = einsora_tray_finalize;
    object_class->get_property = einsora_tray_get_property;
    props[PROP_AVAILABLE] =
        g_param_spec_boolean("available", NULL, NULL, FALSE,
                             G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(object_class, N_PROPS, props);
    signals[SIGNAL_OPEN_WORKLOAD] =
        g_signal_new("open-workload", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
    signals[SIGNAL_SHOW_WINDOW] =
        g_signal_new("show-window", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 0);
    signals[SIGNAL_QUIT] = g_signal_new("quit", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                        NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
einsora_tray_init(EinsoraTray *self)
{
    self->watched = g_ptr_array_new_with_free_func(g_object_unref);
    self->menu_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->next_menu_id = MENU_FIRST_WORKLOAD;
    self->menu = g_ptr_array_new_with_free_func((GDestroyNotify)menu_entry_free);
}

EinsoraTray *
einsora_tray_new(GDBusConnection *bus, GListModel *workloads, const char *icon_name)
{
    EinsoraTray *self;

    g_return_val_if_fail(G_IS_DBUS_CONNECTION(bus), NULL);
    g_return_val_if_fail(G_IS_LIST_MODEL(workloads), NULL);
    g_return_val_if_fail(icon_name != NULL, NULL);
    self = g_object_new(EINSORA_TYPE_TRAY, NULL);
    self->bus = g_object_ref(bus);
    self->workloads = g_object_ref(workloads);
    self->icon_name = g_strdup(icon_name);
    g_signal_connect(workloads, "items-changed", G_CALLBACK(on_items_changed), self);
    on_items_changed(workloads, 0, 0, g_list_model_get_n_items(workloads), self);
    return self;
}

gboolean
einsora_tray_start(EinsoraTray *self, GError **error)
{
    static guint instances;
    GDBusInterfaceInfo *item_info, *menu_info;

    g_return_val_if_fail(EINSORA_IS_TRAY(self), FALSE);
    g_return_val_if_fail(self->item_registration == 0, FALSE);
    if (g_dbus_connection_get_unique_name(self->bus) == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            "The tray needs a message bus connection");
        return FALSE;
    }
    if (self->node_info == NULL)
        self->node_info = g_dbus_node_info_new_for_xml(introspection_xml, error);
    if (self->node_info == NULL)
        return FALSE;
    item_info = g_dbus_node_info_lookup_interface(self->node_info, ITEM_INTERFACE);
    menu_info = g_dbus_node_info_lookup_interface(self->node_info, MENU_INTERFACE);
    self->menu_registration = g_dbus_connection_register_object(self->bus, MENU_PATH, menu_info,
                                                                &menu_vtable, self, NULL, error);
    if (self->menu_registration == 0)
        return FALSE;
    self->item_registration = g_dbus_connection_register_object(self->bus, ITEM_PATH, item_info,
                                                                &item_vtable, self, NULL, error);
    if (self->item_registration == 0) {
        g_dbus_connection_unregister_object(self->bus, self->menu_registration);
        self->menu_registration = 0;
        return FALSE;
    }
    /* As the specification names items: one per process and instance. */
    self->item_name =
        g_strdup_printf("org.kde.StatusNotifierItem-%d-%u", (int)getpid(), ++instances);
    self->item_name_state = NAME_ASKED;
    self->item_name_owner = g_bus_own_name_on_connection(
        self->bus, self->item_name, G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE, on_item_name_acquired,
        on_item_name_lost, self, NULL);
    self->watcher_signals = g_dbus_connection_signal_subscribe(
        self->bus, WATCHER_NAME, WATCHER_INTERFACE, NULL, WATCHER_PATH, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_watcher_signal, self, NULL);
    self->watcher_watch =
        g_bus_watch_name_on_connection(self->bus, WATCHER_NAME, G_BUS_NAME_WATCHER_FLAGS_NONE,
                                       on_watcher_appeared, on_watcher_vanished, self, NULL);
    return TRUE;
}

gboolean
einsora_tray_is_available(EinsoraTray *self)
{
    g_return_val_if_fail(EINSORA_IS_TRAY(self), FALSE);
    return self->available;
}
