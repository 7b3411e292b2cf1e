/* The tray icon (EinsoraTray) on a private session bus: a stand-in
 * StatusNotifierWatcher that records registrations, and a second
 * connection that acts as the host, reading the item and its menu and
 * clicking as a panel would. No display needed. */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <locale.h>
#include <unistd.h>

#include "einsora-tray.h"
#include "einsora-workload-list.h"

#define ITEM_PATH "/StatusNotifierItem"
#define ITEM_INTERFACE "org.kde.StatusNotifierItem"
#define MENU_INTERFACE "com.canonical.dbusmenu"
#define WATCHER_NAME "org.kde.StatusNotifierWatcher"
#define WATCHER_PATH "/StatusNotifierWatcher"

static const char watcher_xml[] =
    "<node>"
    "  <interface name='org.kde.StatusNotifierWatcher'>"
    "    <method name='RegisterStatusNotifierItem'>"
    "      <arg name='service' type='s' direction='in'/>"
    "    </method>"
    "    <method name='RegisterStatusNotifierHost'>"
    "      <arg name='service' type='s' direction='in'/>"
    "    </method>"
    "    <property name='RegisteredStatusNotifierItems' type='as' access='read'/>"
    "    <property name='IsStatusNotifierHostRegistered' type='b' access='read'/>"
    "    <property name='ProtocolVersion' type='i' access='read'/>"
    "    <signal name='StatusNotifierItemRegistered'><arg type='s'/></signal>"
    "    <signal name='StatusNotifierItemUnregistered'><arg type='s'/></signal>"
    "    <signal name='StatusNotifierHostRegistered'/>"
    "    <signal name='StatusNotifierHostUnregistered'/>"
    "  </interface>"
    "</node>";

typedef struct {
    GTestDBus *dbus;
    GDBusConnection *app_bus;     /* the tray's */
    GDBusConnection *host_bus;    /* the panel's */
    GDBusConnection *watcher_bus; /* the watcher's */
    GDBusNodeInfo *watcher_info;
    guint watcher_object;
    gboolean host_registered; /* what the watcher answers */
    guint host_queries;       /* ...and how often it was asked */
    GPtrArray *registrations; /* "sender service" */
    guint host_signals;
    GPtrArray *signals; /* the item's and menu's D-Bus signals, by name */
    guint last_revision;
    EinsoraWorkloadList *list;
    EinsoraTray *tray;
    GPtrArray *opened; /* workload IDs */
    guint shown;
    guint quits;
    guint available_changes;
} Fixture;

static gboolean
on_deadline(gpointer data)
{
    *(gboolean *)data = TRUE;
    return G_SOURCE_REMOVE;
}

/* Runs the main loop until @cond holds, for 10 s at most. */
#define WAIT_FOR(cond)                                                                             \
    G_STMT_START                                                                                   \
    {                                                                                              \
        gboolean expired_ = FALSE;                                                                 \
        guint timer_ = g_timeout_add_seconds(10, on_deadline, &expired_);                          \
        while (!(cond) && !expired_)                                                               \
            g_main_context_iteration(NULL, TRUE);                                                  \
        if (!expired_)                                                                             \
            g_source_remove(timer_);                                                               \
        g_assert_true(cond);                                                                       \
    }                                                                                              \
    G_STMT_END

static JsonObject *
workload(const char *id, const char *name, const char *kind, const char *state, gint64 version,
         const char *created_at)
{
    g_autofree gchar *text = g_strdup_printf(
        "{\"id\": \"%s\", \"name\": \"%s\", \"kind\": \"%s\", \"state\": \"%s\","
        " \"gpu_class\": \"cpu-1c-2g\", \"image\": \"jupyter-linux\", \"region\": \"local\","
        " \"created_at\": \"%s\", \"version\": %" G_GINT64_FORMAT "}",
        id, name, kind, state, created_at, version);
    g_autoptr(JsonNode) node = json_from_string(text, NULL);

    g_assert_nonnull(node);
    return json_object_ref(json_node_get_object(node));
}

static void
upsert(Fixture *f, const char *id, const char *name, const char *kind, const char *state,
       gint64 version, const char *created_at)
{
    g_autoptr(JsonObject) object = workload(id, name, kind, state, version, created_at);

    einsora_workload_list_upsert(f->list, object);
}

/* The watcher */

static void
watcher_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                    const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                    GDBusMethodInvocation *invocation, gpointer user_data)
{
    Fixture *f = user_data;
    const char *service;

    g_variant_get(parameters, "(&s)", &service);
    if (g_str_equal(method_name, "RegisterStatusNotifierItem")) {
        g_ptr_array_add(f->registrations, g_strdup_printf("%s %s", sender, service));
        g_dbus_connection_emit_signal(connection, NULL, WATCHER_PATH, WATCHER_NAME,
                                      "StatusNotifierItemRegistered", g_variant_new("(s)", service),
                                      NULL);
    }
    g_dbus_method_invocation_return_value(invocation, NULL);
}

static GVariant *
watcher_get_property(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                     const gchar *interface_name, const gchar *property_name, GError **error,
                     gpointer user_data)
{
    Fixture *f = user_data;

    if (g_str_equal(property_name, "IsStatusNotifierHostRegistered")) {
        f->host_queries++;
        return g_variant_new_boolean(f->host_registered);
    }
    if (g_str_equal(property_name, "ProtocolVersion"))
        return g_variant_new_int32(0);
    return g_variant_new_strv(NULL, 0);
}

static const GDBusInterfaceVTable watcher_vtable = {
    .method_call = watcher_method_call,
    .get_property = watcher_get_property,
};

static void
bus_call(GDBusConnection *bus, const char *method, GVariant *parameters, guint32 expected)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) reply = NULL;
    guint32 answer = 0;

    /* The bus daemon answers by itself: a blocking call is fine. */
    reply = g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
        parameters, G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
    g_assert_no_error(error);
    g_variant_get(reply, "(u)", &answer);
    g_assert_cmpuint(answer, ==, expected);
}

static void
watcher_appear(Fixture *f)
{
    /* DBUS_NAME_FLAG_DO_NOT_QUEUE; 1: now the primary owner. */
    bus_call(f->watcher_bus, "RequestName", g_variant_new("(su)", WATCHER_NAME, 4), 1);
}

static void
watcher_vanish(Fixture *f)
{
    /* 1: released. */
    bus_call(f->watcher_bus, "ReleaseName", g_variant_new("(s)", WATCHER_NAME), 1);
}

static void
watcher_host(Fixture *f, gboolean registered)
{
    f->host_registered = registered;
    g_dbus_connection_emit_signal(
        f->watcher_bus, NULL, WATCHER_PATH, WATCHER_NAME,
        registered ? "StatusNotifierHostRegistered" : "StatusNotifierHostUnregistered", NULL, NULL);
}

/* The host */

typedef struct {
    GVariant *reply;
    GError *error;
    gboolean done;
} Call;

static void
on_call(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Call *call = user_data;

    call->reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &call->error);
    call->done = TRUE;
}

/* A call from the host to the tray. Asynchronous, with the loop running:
 * the tray answers on this thread's main context. */
static GVariant *
host_call(Fixture *f, const char *path, const char *interface, const char *method,
          GVariant *parameters, const char *reply_type, GError **error)
{
    Call call = {0};

    g_dbus_connection_call(f->host_bus, g_dbus_connection_get_unique_name(f->app_bus), path,
                           interface, method, parameters,
                           reply_type != NULL ? G_VARIANT_TYPE(reply_type) : NULL,
                           G_DBUS_CALL_FLAGS_NO_AUTO_START, 5000, NULL, on_call, &call);
    WAIT_FOR(call.done);
    if (call.error != NULL)
        g_propagate_error(error, call.error);
    return call.reply;
}

static GVariant *
host_call_ok(Fixture *f, const char *path, const char *interface, const char *method,
             GVariant *parameters, const char *reply_type)
{
    g_autoptr(GError) error = NULL;
    GVariant *reply = host_call(f, path, interface, method, parameters, reply_type, &error);

    g_assert_no_error(error);
    return reply;
}

/* (transfer full) A property of the item or its menu, unboxed. */
static GVariant *
get_property(Fixture *f, const char *path, const char *interface, const char *name)
{
    g_autoptr(GVariant) reply = host_call_ok(f, path, "org.freedesktop.DBus.Properties", "Get",
                                             g_variant_new("(ss)", interface, name), "(v)");
    GVariant *value = NULL;

    g_variant_get(reply, "(v)", &value);
    return value;
}

static gchar *
menu_path(Fixture *f)
{
    g_autoptr(GVariant) menu = get_property(f, ITEM_PATH, ITEM_INTERFACE, "Menu");

    g_assert_true(g_variant_is_of_type(menu, G_VARIANT_TYPE_OBJECT_PATH));
    return g_variant_dup_string(menu, NULL);
}

/* The root's children as one line: labels, "---" for separators, and
 * "(off)" after a disabled item. */
static gchar *
menu_text(Fixture *f, guint *revision)
{
    g_autofree gchar *path = menu_path(f);
    g_autoptr(GVariant) reply = host_call_ok(f, path, MENU_INTERFACE, "GetLayout",
                                             g_variant_new("(iias)", 0, -1, NULL), NULL);
    g_autoptr(GVariant) root = NULL;
    g_autoptr(GVariant) root_properties = NULL;
    g_autoptr(GVariantIter) children = NULL;
    g_autoptr(GString) text = g_string_new(NULL);
    const char *display = NULL;
    GVariant *child;
    gint id;

    g_assert_true(g_variant_is_of_type(reply, G_VARIANT_TYPE("(u(ia{sv}av))")));
    g_variant_get(reply, "(u@(ia{sv}av))", revision, &root);
    g_variant_get(root, "(i@a{sv}av)", &id, &root_properties, &children);
    g_assert_cmpint(id, ==, 0);
    g_assert_true(g_variant_lookup(root_properties, "children-display", "&s", &display));
    g_assert_cmpstr(display, ==, "submenu");
    while (g_variant_iter_next(children, "v", &child)) {
        g_autoptr(GVariant) properties = NULL;
        g_autoptr(GVariantIter) grandchildren = NULL;
        const char *type = NULL;
        const char *label = NULL;
        gboolean enabled = TRUE;

        g_variant_get(child, "(i@a{sv}av)", &id, &properties, &grandchildren);
        g_assert_cmpuint(g_variant_iter_n_children(grandchildren), ==, 0);
        if (text->len > 0)
            g_string_append_c(text, '|');
        if (g_variant_lookup(properties, "type", "&s", &type) && g_str_equal(type, "separator"))
            g_string_append(text, "---");
        else if (g_variant_lookup(properties, "label", "&s", &label))
            g_string_append(text, label);
        if (g_variant_lookup(properties, "enabled", "b", &enabled) && !enabled)
            g_string_append(text, " (off)");
        g_variant_unref(child);
    }
    return g_string_free(g_steal_pointer(&text), FALSE);
}

/* The ID of the root's child labelled @label, or -1. */
static gint
menu_id(Fixture *f, const char *label)
{
    g_autofree gchar *path = menu_path(f);
    g_autoptr(GVariant) reply =
        host_call_ok(f, path, MENU_INTERFACE, "GetLayout",
                     g_variant_new("(ii^as)", 0, 1, (const char *const[]){"label", NULL}), NULL);
    g_autoptr(GVariantIter) children = NULL;
    GVariant *child;
    gint found = -1;

    g_variant_get(reply, "(u(ia{sv}av))", NULL, NULL, NULL, &children);
    while (g_variant_iter_next(children, "v", &child)) {
        g_autoptr(GVariant) properties = NULL;
        g_autoptr(GVariantIter) grandchildren = NULL;
        const char *text = NULL;
        gint id;

        g_variant_get(child, "(i@a{sv}av)", &id, &properties, &grandchildren);
        if (g_variant_lookup(properties, "label", "&s", &text) && g_str_equal(text, label))
            found = id;
        g_variant_unref(child);
    }
    return found;
}

static void
click(Fixture *f, gint id, GError **error)
{
    g_autofree gchar *path = menu_path(f);
    g_autoptr(GVariant) reply =
        host_call(f, path, MENU_INTERFACE, "Event",
                  g_variant_new("(isvu)", id, "clicked", g_variant_new_int32(0), 0), "()", error);
}

static guint
count_signals(Fixture *f, const char *name)
{
    guint n = 0;

    for (guint i = 0; i < f->signals->len; i++)
        if (g_str_equal(g_ptr_array_index(f->signals, i), name))
            n++;
    return n;
}

static void
on_tray_signal(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
               const gchar *interface_name, const gchar *signal_name, GVariant *parameters,
               gpointer user_data)
{
    Fixture *f = user_data;

    g_ptr_array_add(f->signals, g_strdup(signal_name));
    if (g_str_equal(signal_name, "LayoutUpdated"))
        g_variant_get(parameters, "(ui)", &f->last_revision, NULL);
}

/* The fixture */

static GDBusConnection *
connect_bus(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    GDBusConnection *bus =
        g_dbus_connection_new_for_address_sync(g_test_dbus_get_bus_address(f->dbus),
                                               G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                   G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                               NULL, NULL, &error);

    g_assert_no_error(error);
    return bus;
}

static void
on_open_workload(EinsoraTray *tray, const char *id, Fixture *f)
{
    g_ptr_array_add(f->opened, g_strdup(id));
}

static void
on_show_window(EinsoraTray *tray, Fixture *f)
{
    f->shown++;
}

static void
on_quit(EinsoraTray *tray, Fixture *f)
{
    f->quits++;
}

static void
on_available(EinsoraTray *tray, GParamSpec *pspec, Fixture *f)
{
    f->available_changes++;
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    f->dbus = g_test_dbus_new(G_TEST_DBUS_NONE);
    g_test_dbus_up(f->dbus);
    f->app_bus = connect_bus(f);
    f->host_bus = connect_bus(f);
    f->watcher_bus = connect_bus(f);
    f->registrations = g_ptr_array_new_with_free_func(g_free);
    f->signals = g_ptr_array_new_with_free_func(g_free);
    f->opened = g_ptr_array_new_with_free_func(g_free);
    f->host_registered = TRUE;
    f->watcher_info = g_dbus_node_info_new_for_xml(watcher_xml, &error);
    g_assert_no_error(error);
    f->watcher_object = g_dbus_connection_register_object(f->watcher_bus, WATCHER_PATH,
                                                          f->watcher_info->interfaces[0],
                                                          &watcher_vtable, f, NULL, &error);
    g_assert_no_error(error);
    f->host_signals = g_dbus_connection_signal_subscribe(
        f->host_bus, g_dbus_connection_get_unique_name(f->app_bus), NULL, NULL, NULL, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_tray_signal, f, NULL);

    /* Newest first: a, b, c, d. Two notebooks run. */
    f->list = einsora_workload_list_new();
    upsert(f, "d", "nb-d", "notebook", "pending", 1, "2026-11-29T09:00:00.000000Z");
    upsert(f, "c", "nb-c", "notebook", "stopped", 4, "2026-11-29T10:00:00.000000Z");
    upsert(f, "b", "nb-b", "notebook", "running", 3, "2026-11-29T11:00:00.000000Z");
    upsert(f, "a", "nb-a", "notebook", "running", 3, "2026-11-29T12:00:00.000000Z");
    f->tray = einsora_tray_new(f->app_bus, G_LIST_MODEL(f->list), "dev.einsora.Einsora");
    g_signal_connect(f->tray, "open-workload", G_CALLBACK(on_open_workload), f);
    g_signal_connect(f->tray, "show-window", G_CALLBACK(on_show_window), f);
    g_signal_connect(f->tray, "quit", G_CALLBACK(on_quit), f);
    g_signal_connect(f->tray, "notify::available", G_CALLBACK(on_available), f);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->tray);
    g_clear_object(&f->list);
    g_dbus_connection_signal_unsubscribe(f->host_bus, f->host_signals);
    g_dbus_connection_unregister_object(f->watcher_bus, f->watcher_object);
    g_dbus_node_info_unref(f->watcher_info);
    g_dbus_connection_close_sync(f->app_bus, NULL, NULL);
    g_dbus_connection_close_sync(f->host_bus, NULL, NULL);
    g_dbus_connection_close_sync(f->watcher_bus, NULL, NULL);
    /* Let queued callbacks (cancelled calls, signals) run and let go. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_clear_object(&f->app_bus);
    g_clear_object(&f->host_bus);
    g_clear_object(&f->watcher_bus);
    g_test_dbus_down(f->dbus);
    g_clear_object(&f->dbus);
    g_ptr_array_unref(f->registrations);
    g_ptr_array_unref(f->signals);
    g_ptr_array_unref(f->opened);
}

static void
start(Fixture *f)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_tray_start(f->tray, &error));
    g_assert_no_error(error);
}

/* The tests */

static void
test_registers(Fixture *f, gconstpointer data)
{
    /* By a name of its own (docs/adr/0066): a watcher drops the item when
     * the name goes, as it does when the tray does. */
    g_autofree gchar *expected =
        g_strdup_printf("%s org.kde.StatusNotifierItem-%d-",
                        g_dbus_connection_get_unique_name(f->app_bus), (int)getpid());
    g_autoptr(GVariant) item_reply = NULL;
    g_autoptr(GVariant) item = NULL;
    g_autoptr(GVariant) menu_reply = NULL;
    g_autoptr(GVariant) menu = NULL;
    g_autoptr(GVariant) tooltip = NULL;
    g_autoptr(GVariant) pixmaps = NULL;
    g_autofree gchar *path = NULL;
    const char *s = NULL, *icon = NULL, *title = NULL, *text = NULL;
    gboolean is_menu = FALSE;
    guint32 version = 0;

    watcher_appear(f);
    g_assert_false(einsora_tray_is_available(f->tray));
    start(f);
    WAIT_FOR(f->registrations->len == 1);
    g_assert_true(g_str_has_prefix(g_ptr_array_index(f->registrations, 0), expected));
    WAIT_FOR(einsora_tray_is_available(f->tray));
    g_assert_cmpuint(f->available_changes, ==, 1);

    /* What a host reads of the item. */
    item_reply = host_call_ok(f, ITEM_PATH, "org.freedesktop.DBus.Properties", "GetAll",
                              g_variant_new("(s)", ITEM_INTERFACE), "(a{sv})");
    g_variant_get(item_reply, "(@a{sv})", &item);
    g_assert_true(g_variant_lookup(item, "Category", "&s", &s));
    g_assert_cmpstr(s, ==, "ApplicationStatus");
    g_assert_true(g_variant_lookup(item, "Id", "&s", &s));
    g_assert_cmpstr(s, ==, "dev.einsora.Einsora");
    g_assert_true(g_variant_lookup(item, "Title", "&s", &s));
    g_assert_cmpstr(s, ==, "Einsora");
    g_assert_true(g_variant_lookup(item, "Status", "&s", &s));
    g_assert_cmpstr(s, ==, "Active");
    g_assert_true(g_variant_lookup(item, "IconName", "&s", &s));
    g_assert_cmpstr(s, ==, "dev.einsora.Einsora");
    g_assert_true(g_variant_lookup(item, "Menu", "&o", &s));
    g_assert_cmpstr(s, ==, "/MenuBar");
    g_assert_true(g_variant_lookup(item, "ItemIsMenu", "b", &is_menu));
    g_assert_true(is_menu);
    tooltip = g_variant_lookup_value(item, "ToolTip", G_VARIANT_TYPE("(sa(iiay)ss)"));
    g_assert_nonnull(tooltip);
    g_variant_get(tooltip, "(&s@a(iiay)&s&s)", &icon, &pixmaps, &title, &text);
    g_assert_cmpstr(icon, ==, "dev.einsora.Einsora");
    g_assert_cmpstr(title, ==, "Einsora");
    g_assert_cmpstr(text, ==, "2 running");

    /* ...and of its menu. */
    path = menu_path(f);
    menu_reply = host_call_ok(f, path, "org.freedesktop.DBus.Properties", "GetAll",
                              g_variant_new("(s)", MENU_INTERFACE), "(a{sv})");
    g_variant_get(menu_reply, "(@a{sv})", &menu);
    g_assert_true(g_variant_lookup(menu, "Version", "u", &version));
    g_assert_cmpuint(version, ==, 3);
    g_assert_true(g_variant_lookup(menu, "TextDirection", "&s", &s));
    g_assert_cmpstr(s, ==, "ltr");
    g_assert_true(g_variant_lookup(menu, "Status", "&s", &s));
    g_assert_cmpstr(s, ==, "normal");
}

/* Where the bus refuses the item its own name (a sandbox may own no
 * org.kde.StatusNotifierItem-* names), it goes by its unique name. */
static void
test_registers_by_unique_name(Fixture *f, gconstpointer data)
{
    const char *unique = g_dbus_connection_get_unique_name(f->app_bus);
    g_autofree gchar *expected = g_strdup_printf("%s %s", unique, unique);
    g_autoptr(GVariant) id = NULL;

    /* Every name this process's trays would ask for, held elsewhere. */
    for (guint instance = 1; instance <= 64; instance++) {
        g_autofree gchar *name =
            g_strdup_printf("org.kde.StatusNotifierItem-%d-%u", (int)getpid(), instance);

        bus_call(f->host_bus, "RequestName", g_variant_new("(su)", name, 4), 1);
    }
    watcher_appear(f);
    start(f);
    WAIT_FOR(f->registrations->len == 1);
    g_assert_cmpstr(g_ptr_array_index(f->registrations, 0), ==, expected);
    WAIT_FOR(einsora_tray_is_available(f->tray));
    id = get_property(f, ITEM_PATH, ITEM_INTERFACE, "Id");
    g_assert_cmpstr(g_variant_get_string(id, NULL), ==, "dev.einsora.Einsora");
    /* A watcher that comes later is told the same. */
    watcher_vanish(f);
    WAIT_FOR(!einsora_tray_is_available(f->tray));
    watcher_appear(f);
    WAIT_FOR(f->registrations->len == 2);
    g_assert_cmpstr(g_ptr_array_index(f->registrations, 1), ==, expected);
}

static void
test_menu(Fixture *f, gconstpointer data)
{
    g_autofree gchar *text = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(GVariant) group = NULL;
    g_autoptr(GVariant) single = NULL;
    g_autoptr(GVariant) value = NULL;
    g_autoptr(GVariant) shallow = NULL;
    g_autoptr(GVariant) about = NULL;
    g_autoptr(GVariant) item = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariantIter) children = NULL;
    guint revision = 0;
    gint open_a, open_b;
    gint id = -1;
    const char *label = NULL;

    start(f);
    text = menu_text(f, &revision);
    g_assert_cmpstr(text, ==, "2 running (off)|---|Open nb-a|Open nb-b|---|Show Einsora|Quit");
    g_assert_cmpuint(revision, >, 0);
    open_a = menu_id(f, "Open nb-a");
    open_b = menu_id(f, "Open nb-b");
    g_assert_cmpint(open_a, >, 0);
    g_assert_cmpint(open_b, >, 0);
    g_assert_cmpint(open_a, !=, open_b);

    /* Depth 0: the root alone. */
    path = menu_path(f);
    shallow = host_call_ok(f, path, MENU_INTERFACE, "GetLayout",
                           g_variant_new("(iias)", 0, 0, NULL), NULL);
    g_variant_get(shallow, "(u(ia{sv}av))", NULL, NULL, NULL, &children);
    g_assert_cmpuint(g_variant_iter_n_children(children), ==, 0);

    /* One item, and one property. */
    group = host_call_ok(
        f, path, MENU_INTERFACE, "GetGroupProperties",
        g_variant_new("(@ai^as)",
                      g_variant_new_fixed_array(G_VARIANT_TYPE_INT32, &open_b, 1, sizeof(gint32)),
                      (const char *const[]){"label", NULL}),
        "(a(ia{sv}))");
    {
        g_autoptr(GVariant) list = g_variant_get_child_value(group, 0);
        g_autoptr(GVariant) properties = NULL;

        g_assert_cmpuint(g_variant_n_children(list), ==, 1);
        g_variant_get_child(list, 0, "(i@a{sv})", &id, &properties);
        g_assert_cmpint(id, ==, open_b);
        g_assert_true(g_variant_lookup(properties, "label", "&s", &label));
        g_assert_cmpstr(label, ==, "Open nb-b");
        g_assert_cmpuint(g_variant_n_children(properties), ==, 1);
    }
    single = host_call_ok(f, path, MENU_INTERFACE, "GetProperty",
                          g_variant_new("(is)", open_a, "label"), "(v)");
    g_variant_get(single, "(v)", &value);
    g_assert_cmpstr(g_variant_get_string(value, NULL), ==, "Open nb-a");

    about = host_call_ok(f, path, MENU_INTERFACE, "AboutToShow", g_variant_new("(i)", 0), "(b)");
    item = host_call(f, path, MENU_INTERFACE, "GetLayout", g_variant_new("(iias)", 999, -1, NULL),
                     NULL, &error);
    g_assert_null(item);
    g_assert_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
}

static void
test_clicks(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) activated = NULL;
    g_autoptr(GVariant) group = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(GVariantBuilder) events = g_variant_builder_new(G_VARIANT_TYPE("a(isvu)"));
    g_autoptr(GVariant) hovered = NULL;
    gint open_a, open_b, show, quit, count;

    start(f);
    open_a = menu_id(f, "Open nb-a");
    open_b = menu_id(f, "Open nb-b");
    show = menu_id(f, "Show Einsora");
    quit = menu_id(f, "Quit");
    count = menu_id(f, "2 running");

    click(f, open_b, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(f->opened->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(f->opened, 0), ==, "b");
    g_assert_cmpuint(f->shown, ==, 0);
    g_assert_cmpuint(f->quits, ==, 0);

    click(f, show, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(f->shown, ==, 1);

    /* Activate (a host that ignores ItemIsMenu) shows the window too. */
    activated =
        host_call_ok(f, ITEM_PATH, ITEM_INTERFACE, "Activate", g_variant_new("(ii)", 5, 5), "()");
    g_assert_cmpuint(f->shown, ==, 2);

    /* The count is a label; hovering is no click. */
    click(f, count, &error);
    g_assert_no_error(error);
    path = menu_path(f);
    hovered =
        host_call_ok(f, path, MENU_INTERFACE, "Event",
                     g_variant_new("(isvu)", open_a, "hovered", g_variant_new_int32(0), 0), "()");
    g_assert_cmpuint(f->opened->len, ==, 1);
    g_assert_cmpuint(f->quits, ==, 0);

    /* An item that isn't there is an error, and nothing happens. */
    click(f, 4242, &error);
    g_assert_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
    g_clear_error(&error);

    /* A group: the unknown ID comes back, the rest happen. */
    g_variant_builder_add(events, "(isvu)", open_a, "clicked", g_variant_new_int32(0), 0);
    g_variant_builder_add(events, "(isvu)", 4242, "clicked", g_variant_new_int32(0), 0);
    group = host_call_ok(f, path, MENU_INTERFACE, "EventGroup", g_variant_new("(a(isvu))", events),
                         "(ai)");
    {
        g_autoptr(GVariant) errors = g_variant_get_child_value(group, 0);
        gsize n = 0;
        const gint32 *ids = g_variant_get_fixed_array(errors, &n, sizeof(gint32));

        g_assert_cmpuint(n, ==, 1);
        g_assert_cmpint(ids[0], ==, 4242);
    }
    g_assert_cmpuint(f->opened->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(f->opened, 1), ==, "a");

    click(f, quit, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(f->quits, ==, 1);
    g_assert_cmpuint(f->opened->len, ==, 2);
}

static void
test_follows_model(Fixture *f, gconstpointer data)
{
    g_autofree gchar *before = NULL;
    g_autofree gchar *started = NULL;
    g_autofree gchar *stale = NULL;
    g_autofree gchar *endpoint = NULL;
    g_autofree gchar *renamed = NULL;
    g_autofree gchar *idle = NULL;
    g_autoptr(GVariant) tooltip = NULL;
    g_autoptr(GVariant) status = NULL;
    g_autoptr(GError) error = NULL;
    const char *text = NULL;
    guint revision = 0, now = 0;
    guint layouts, tooltips, properties;
    gint open_c, open_b;

    start(f);
    before = menu_text(f, &revision);
    g_assert_cmpstr(before, ==, "2 running (off)|---|Open nb-a|Open nb-b|---|Show Einsora|Quit");
    open_b = menu_id(f, "Open nb-b");

    /* c starts: a new item, a new count, a new tooltip. */
    upsert(f, "c", "nb-c", "notebook", "running", 6, "2026-11-29T10:00:00.000000Z");
    WAIT_FOR(count_signals(f, "LayoutUpdated") == 1 && count_signals(f, "NewToolTip") == 1);
    g_assert_cmpuint(f->last_revision, >, revision);
    started = menu_text(f, &now);
    g_assert_cmpuint(now, ==, f->last_revision);
    g_assert_cmpstr(started, ==,
                    "3 running (off)|---|Open nb-a|Open nb-b|Open nb-c|---|Show Einsora|Quit");
    tooltip = get_property(f, ITEM_PATH, ITEM_INTERFACE, "ToolTip");
    g_variant_get(tooltip, "(&sa(iiay)&s&s)", NULL, NULL, NULL, &text);
    g_assert_cmpstr(text, ==, "3 running");
    open_c = menu_id(f, "Open nb-c");

    /* An older copy changes nothing, and says nothing. */
    layouts = count_signals(f, "LayoutUpdated");
    tooltips = count_signals(f, "NewToolTip");
    upsert(f, "c", "nb-c", "notebook", "stopped", 5, "2026-11-29T10:00:00.000000Z");
    stale = menu_text(f, &now); /* a round trip: signals sent before it have arrived */
    g_assert_cmpstr(stale, ==, started);
    g_assert_cmpuint(count_signals(f, "LayoutUpdated"), ==, layouts);
    g_assert_cmpuint(count_signals(f, "NewToolTip"), ==, tooltips);

    /* A running endpoint counts, but there is nothing to open: only the
     * count's properties change. */
    upsert(f, "e", "svc", "endpoint", "running", 2, "2026-11-29T13:00:00.000000Z");
    WAIT_FOR(count_signals(f, "ItemsPropertiesUpdated") == 1);
    endpoint = menu_text(f, &now);
    g_assert_cmpstr(endpoint, ==,
                    "4 running (off)|---|Open nb-a|Open nb-b|Open nb-c|---|Show Einsora|Quit");
    g_assert_cmpuint(count_signals(f, "LayoutUpdated"), ==, layouts);

    /* A name with an underscore keeps it (doubled: not a mnemonic). */
    upsert(f, "c", "my_nb", "notebook", "running", 7, "2026-11-29T10:00:00.000000Z");
    WAIT_FOR(count_signals(f, "ItemsPropertiesUpdated") == 2);
    renamed = menu_text(f, &now);
    g_assert_cmpstr(renamed, ==,
                    "4 running (off)|---|Open nb-a|Open nb-b|Open my__nb|---|Show Einsora|Quit");
    g_assert_cmpint(menu_id(f, "Open my__nb"), ==, open_c);

    /* All stop: no notebook items, and the item goes Passive. */
    upsert(f, "a", "nb-a", "notebook", "stopping", 4, "2026-11-29T12:00:00.000000Z");
    upsert(f, "b", "nb-b", "notebook", "stopped", 4, "2026-11-29T11:00:00.000000Z");
    upsert(f, "c", "my_nb", "notebook", "failed", 8, "2026-11-29T10:00:00.000000Z");
    upsert(f, "e", "svc", "endpoint", "deleted", 3, "2026-11-29T13:00:00.000000Z");
    WAIT_FOR(count_signals(f, "NewStatus") == 1);
    idle = menu_text(f, &now);
    g_assert_cmpstr(idle, ==, "0 running (off)|---|Show Einsora|Quit");
    status = get_property(f, ITEM_PATH, ITEM_INTERFACE, "Status");
    g_assert_cmpstr(g_variant_get_string(status, NULL), ==, "Passive");

    /* A menu a host drew before: b's item is gone, its click does nothing. */
    click(f, open_b, &error);
    g_assert_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
    g_assert_cmpuint(f->opened->len, ==, 0);
    /* Three property updates: two above, and the count going to 0
     * when the endpoint left (the layout stayed). */
    properties = count_signals(f, "ItemsPropertiesUpdated");
    g_assert_cmpuint(properties, ==, 3);
}

static void
test_watcher_comes_and_goes(Fixture *f, gconstpointer data)
{
    g_autofree gchar *text = NULL;
    guint revision;

    /* No watcher: nothing to register with, nothing shows the item. */
    start(f);
    text = menu_text(f, &revision);
    g_assert_cmpuint(f->registrations->len, ==, 0);
    g_assert_false(einsora_tray_is_available(f->tray));

    watcher_appear(f);
    WAIT_FOR(f->registrations->len == 1);
    WAIT_FOR(einsora_tray_is_available(f->tray));

    watcher_vanish(f);
    WAIT_FOR(!einsora_tray_is_available(f->tray));

    /* A new watcher (the panel restarted): the item registers again. */
    watcher_appear(f);
    WAIT_FOR(f->registrations->len == 2);
    WAIT_FOR(einsora_tray_is_available(f->tray));
    g_assert_cmpuint(f->available_changes, ==, 3);

    /* The last host leaves, and one comes back. */
    watcher_host(f, FALSE);
    WAIT_FOR(!einsora_tray_is_available(f->tray));
    watcher_host(f, TRUE);
    WAIT_FOR(einsora_tray_is_available(f->tray));
    g_assert_cmpuint(f->registrations->len, ==, 2);
}

static void
test_no_host(Fixture *f, gconstpointer data)
{
    g_autofree gchar *text = NULL;
    guint revision;

    /* A watcher with no host showing items: registered, not available. */
    f->host_registered = FALSE;
    watcher_appear(f);
    start(f);
    WAIT_FOR(f->registrations->len == 1);
    /* The tray asks the watcher after registering; a round trip to the
     * tray after that lets it read the answer. */
    WAIT_FOR(f->host_queries == 1);
    text = menu_text(f, &revision);
    g_assert_false(einsora_tray_is_available(f->tray));
    watcher_host(f, TRUE);
    WAIT_FOR(einsora_tray_is_available(f->tray));
}

int
main(int argc, char **argv)
{
    g_setenv("LC_ALL", "C.UTF-8", TRUE);
    setlocale(LC_ALL, "");
    g_test_init(&argc, &argv, NULL);
    g_test_add("/app/tray/registers-with-watcher", Fixture, NULL, fixture_set_up, test_registers,
               fixture_tear_down);
    g_test_add("/app/tray/registers-by-unique-name-when-refused", Fixture, NULL, fixture_set_up,
               test_registers_by_unique_name, fixture_tear_down);
    g_test_add("/app/tray/menu-lists-running-notebooks", Fixture, NULL, fixture_set_up, test_menu,
               fixture_tear_down);
    g_test_add("/app/tray/clicks-emit-signals", Fixture, NULL, fixture_set_up, test_clicks,
               fixture_tear_down);
    g_test_add("/app/tray/follows-the-list", Fixture, NULL, fixture_set_up, test_follows_model,
               fixture_tear_down);
    g_test_add("/app/tray/watcher-comes-and-goes", Fixture, NULL, fixture_set_up,
               test_watcher_comes_and_goes, fixture_tear_down);
    g_test_add("/app/tray/no-host-not-available", Fixture, NULL, fixture_set_up, test_no_host,
               fixture_tear_down);
    return g_test_run();
}
