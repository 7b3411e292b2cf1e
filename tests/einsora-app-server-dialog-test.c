/* "Connect to a Server…" under Xvfb (tests/run-under-xvfb.sh): the
 * dialog's rows and buttons as a person uses them, the daemon-url setting
 * (GSETTINGS_BACKEND=memory), the token kept by the file backend
 * (EINSORA_TOKEN_STORE=file, in a config directory of the test's own),
 * and app.reconnect, counted by the test's application. Signing in with
 * an email and a password runs against the real daemon on an address of
 * this machine that isn't loopback (so the dialog treats it as a Lab
 * server's), over TLS with its own certificate, trusted from the dialog
 * (docs/adr/0054). The main window's error page offers the dialog too. */
#include <adwaita.h>
#include <ifaddrs.h>
#include <locale.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>

#include "einsora-client.h"
#include "einsora-pinned-database.h"
#include "einsora-server-dialog.h"
#include "einsora-server-pins.h"
#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-token-store.h"
#include "einsora-window.h"

/* A sign-in hashes the password twice on the daemon: slow under the
 * sanitizers. */
#define WAIT_SECONDS 30
#define SERVER "https://lab.example.org:8443"
#define TOKEN "tok_dialog_5e1f0c2a9b7d4e3f"

static GtkApplication *app;
static GSettings *settings;
static gchar *config_dir;
static guint reconnects;

static void
on_reconnect(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    reconnects++;
}

static gboolean
on_deadline(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

/* Turns the main loop until @cond holds, WAIT_SECONDS at most. */
#define WAIT_FOR(cond)                                                                             \
    G_STMT_START                                                                                   \
    {                                                                                              \
        gboolean expired_ = FALSE;                                                                 \
        guint timer_ = g_timeout_add_seconds(WAIT_SECONDS, on_deadline, &expired_);                \
        while (!(cond) && !expired_)                                                               \
            g_main_context_iteration(NULL, TRUE);                                                  \
        if (!expired_)                                                                             \
            g_source_remove(timer_);                                                               \
        g_assert_true(cond);                                                                       \
    }                                                                                              \
    G_STMT_END

typedef struct {
    gboolean done;
    gchar *token;
    GError *error;
} Lookup;

static void
on_looked_up(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Lookup *lookup = user_data;

    lookup->token =
        einsora_token_store_lookup_finish(EINSORA_TOKEN_STORE(source), result, &lookup->error);
    lookup->done = TRUE;
}

static gchar *
kept_token(const char *server)
{
    g_autoptr(EinsoraTokenStore) store = einsora_token_store_new();
    Lookup lookup = {FALSE, NULL, NULL};

    einsora_token_store_lookup_async(store, server, NULL, on_looked_up, &lookup);
    WAIT_FOR(lookup.done);
    g_assert_no_error(lookup.error);
    return lookup.token;
}

static gboolean
count_frame(GtkWidget *widget, GdkFrameClock *clock, gpointer user_data)
{
    guint *frames = user_data;

    if (*frames > 0)
        (*frames)--;
    return *frames > 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/* A picture of @window (GTK's own renderer) in EINSORA_ARTIFACTS_DIR, if
 * that is set. */
static void
save_window(GtkWidget *window, const char *name)
{
    const char *dir = g_getenv("EINSORA_ARTIFACTS_DIR");
    g_autofree gchar *path = NULL;
    g_autoptr(GdkPaintable) paintable = NULL;
    g_autoptr(GskRenderNode) node = NULL;
    g_autoptr(GdkTexture) texture = NULL;
    GtkSnapshot *snapshot;
    guint frames = 3;
    int width, height;

    if (dir == NULL)
        return;
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    gtk_widget_add_tick_callback(window, count_frame, &frames, NULL);
    gtk_widget_queue_draw(window);
    WAIT_FOR(frames == 0);
    paintable = gtk_widget_paintable_new(window);
    snapshot = gtk_snapshot_new();
    width = gtk_widget_get_width(window);
    height = gtk_widget_get_height(window);
    gdk_paintable_snapshot(paintable, snapshot, width, height);
    node = gtk_snapshot_free_to_node(snapshot);
    g_assert_nonnull(node);
    texture = gsk_renderer_render_texture(gtk_native_get_renderer(GTK_NATIVE(window)), node,
                                          &GRAPHENE_RECT_INIT(0, 0, width, height));
    path = g_build_filename(dir, name, NULL);
    g_assert_true(gdk_texture_save_to_png(texture, path));
    g_test_message("screenshot: %s", path);
}

/* The error's revealer slides open before a picture of it is taken. */
static void
settle(void)
{
    gboolean waited = FALSE;

    g_timeout_add(500, on_deadline, &waited);
    WAIT_FOR(waited);
}

static GtkWindow *
parent_window(void)
{
    GtkWindow *parent = GTK_WINDOW(gtk_application_window_new(app));

    gtk_window_present(parent);
    return parent;
}

static void
on_destroyed(GtkWidget *dialog, gboolean *closed)
{
    *closed = TRUE;
}

/* Opens the dialog on @parent; @closed turns TRUE when it goes. */
static EinsoraServerDialog *
open_dialog(GtkWindow *parent, gboolean *closed)
{
    EinsoraServerDialog *dialog = einsora_server_dialog_new(parent, settings);

    *closed = FALSE;
    g_signal_connect(dialog, "destroy", G_CALLBACK(on_destroyed), closed);
    gtk_window_present(GTK_WINDOW(dialog));
    return dialog;
}

static void
press(EinsoraServerDialog *dialog, const char *action)
{
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(dialog), action, NULL));
}

static void
test_connect(void)
{
    GtkWindow *parent = parent_window();
    gboolean closed = FALSE;
    EinsoraServerDialog *dialog = open_dialog(parent, &closed);
    guint before = reconnects;
    g_autofree gchar *token = NULL;

    /* Not an address: said, and nothing changes. */
    einsora_server_dialog_set_url(dialog, "lab.example.org:8443");
    einsora_server_dialog_set_token(dialog, TOKEN);
    press(dialog, "dialog.connect");
    g_assert_nonnull(einsora_server_dialog_get_error(dialog));
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "https://"));
    g_assert_cmpuint(reconnects, ==, before);
    g_assert_null(kept_token(SERVER));

    /* A server with no token given, and none kept: asked for. */
    einsora_server_dialog_set_url(dialog, SERVER);
    einsora_server_dialog_set_token(dialog, "");
    press(dialog, "dialog.connect");
    WAIT_FOR(einsora_server_dialog_get_error(dialog) != NULL &&
             strstr(einsora_server_dialog_get_error(dialog), "API token") != NULL);
    g_assert_false(closed);
    save_window(GTK_WIDGET(dialog), "server-dialog.png");

    /* Half a sign-in, or a sign-in and a token: said, nothing sent. */
    einsora_server_dialog_set_url(dialog, SERVER);
    einsora_server_dialog_set_token(dialog, "");
    einsora_server_dialog_set_email(dialog, "dana@lab.example");
    press(dialog, "dialog.connect");
    g_assert_nonnull(einsora_server_dialog_get_error(dialog));
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "both your email"));
    einsora_server_dialog_set_email(dialog, "");
    einsora_server_dialog_set_password(dialog, "a password of hers");
    press(dialog, "dialog.connect");
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "both your email"));
    einsora_server_dialog_set_email(dialog, "dana@lab.example");
    einsora_server_dialog_set_token(dialog, TOKEN);
    press(dialog, "dialog.connect");
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "not both"));
    g_assert_false(closed);
    g_assert_cmpuint(reconnects, ==, before);
    g_assert_null(kept_token(SERVER));
    einsora_server_dialog_set_email(dialog, "");
    einsora_server_dialog_set_password(dialog, "");

    /* Address (as typed, with its slash) and token: kept, set, reconnected. */
    einsora_server_dialog_set_url(dialog, " " SERVER "/ ");
    einsora_server_dialog_set_token(dialog, TOKEN);
    press(dialog, "dialog.connect");
    WAIT_FOR(closed);
    g_assert_cmpuint(reconnects, ==, before + 1);
    {
        g_autofree gchar *url = g_settings_get_string(settings, "daemon-url");
        g_assert_cmpstr(url, ==, SERVER);
    }
    token = kept_token(SERVER);
    g_assert_cmpstr(token, ==, TOKEN);

    /* Again, the address filled in from the setting and no token typed:
     * the kept one is used. */
    dialog = open_dialog(parent, &closed);
    press(dialog, "dialog.connect");
    WAIT_FOR(closed);
    g_assert_cmpuint(reconnects, ==, before + 2);
    gtk_window_destroy(parent);
}

static void
test_this_machine(void)
{
    GtkWindow *parent = parent_window();
    gboolean closed = FALSE;
    EinsoraServerDialog *dialog;
    guint before = reconnects;
    g_autofree gchar *token = NULL;

    g_settings_set_string(settings, "daemon-url", SERVER);
    /* A loopback address is this machine's daemon: its own token. */
    dialog = open_dialog(parent, &closed);
    einsora_server_dialog_set_url(dialog, "http://127.0.0.1:8080");
    einsora_server_dialog_set_token(dialog, "tok_not_for_here");
    press(dialog, "dialog.connect");
    g_assert_nonnull(einsora_server_dialog_get_error(dialog));
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "own token"));
    g_assert_cmpuint(reconnects, ==, before);
    einsora_server_dialog_set_token(dialog, "");
    /* Nor is it signed in to with a password. */
    einsora_server_dialog_set_email(dialog, "dana@lab.example");
    einsora_server_dialog_set_password(dialog, "a password of hers");
    press(dialog, "dialog.connect");
    g_assert_nonnull(einsora_server_dialog_get_error(dialog));
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "own token"));
    g_assert_cmpuint(reconnects, ==, before);
    einsora_server_dialog_set_email(dialog, "");
    einsora_server_dialog_set_password(dialog, "");
    press(dialog, "dialog.connect");
    WAIT_FOR(closed);
    g_assert_cmpuint(reconnects, ==, before + 1);
    {
        g_autofree gchar *url = g_settings_get_string(settings, "daemon-url");
        g_assert_cmpstr(url, ==, "http://127.0.0.1:8080");
    }

    /* Use This Machine: the setting cleared, the kept token left be. */
    g_settings_set_string(settings, "daemon-url", SERVER);
    dialog = open_dialog(parent, &closed);
    press(dialog, "dialog.use-local");
    WAIT_FOR(closed);
    g_assert_cmpuint(reconnects, ==, before + 2);
    {
        g_autofree gchar *url = g_settings_get_string(settings, "daemon-url");
        g_assert_cmpstr(url, ==, "");
    }
    token = kept_token(SERVER);
    g_assert_cmpstr(token, ==, TOKEN);
    gtk_window_destroy(parent);
}

/* A button with @action_name under @widget that a person can see. */
static GtkWidget *
find_button(GtkWidget *widget, const char *action_name)
{
    if (GTK_IS_BUTTON(widget) &&
        g_strcmp0(gtk_actionable_get_action_name(GTK_ACTIONABLE(widget)), action_name) == 0 &&
        gtk_widget_is_drawable(widget))
        return widget;
    for (GtkWidget *child = gtk_widget_get_first_child(widget); child != NULL;
         child = gtk_widget_get_next_sibling(child)) {
        GtkWidget *found = find_button(child, action_name);
        if (found != NULL)
            return found;
    }
    return NULL;
}

/* A row titled @title under @widget that a person can see. */
static GtkWidget *
find_row(GtkWidget *widget, const char *title)
{
    if (ADW_IS_PREFERENCES_ROW(widget) &&
        g_strcmp0(adw_preferences_row_get_title(ADW_PREFERENCES_ROW(widget)), title) == 0 &&
        gtk_widget_is_drawable(widget))
        return widget;
    for (GtkWidget *child = gtk_widget_get_first_child(widget); child != NULL;
         child = gtk_widget_get_next_sibling(child)) {
        GtkWidget *found = find_row(child, title);
        if (found != NULL)
            return found;
    }
    return NULL;
}

/* An address of this machine that isn't loopback (IPv4), or NULL. */
static gchar *
own_address(void)
{
    struct ifaddrs *addresses = NULL;
    gchar *found = NULL;

    if (getifaddrs(&addresses) != 0)
        return NULL;
    for (struct ifaddrs *a = addresses; a != NULL && found == NULL; a = a->ifa_next) {
        g_autoptr(GSocketAddress) address = NULL;
        GInetAddress *inet;

        if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET ||
            (a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0)
            continue;
        address = g_socket_address_new_from_native(a->ifa_addr, sizeof(struct sockaddr_in));
        inet = g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address));
        if (!g_inet_address_get_is_loopback(inet) && !g_inet_address_get_is_link_local(inet))
            found = g_inet_address_to_string(inet);
    }
    freeifaddrs(addresses);
    return found;
}

/* GET /v1/me with @token: the account's email. */
static gchar *
subject_of(EinsoraTestDaemon *daemon, const char *token)
{
    g_autoptr(EinsoraTestResponse) me =
        einsora_test_request(daemon, "GET", "/v1/me", token, NULL, NULL, NULL);

    g_assert_cmpuint(me->status, ==, 200);
    return g_strdup(einsora_test_response_string(me, "subject"));
}

#define EMAIL "dana@lab.example"
#define PASSWORD "dana's first password"
#define NEW_PASSWORD "dana's second password"

/* Email and password against the real daemon (ADR 0054): its certificate
 * trusted from the dialog; a wrong password stores nothing; the right
 * one stores a token of this computer's own that answers as the account,
 * and connects; a password an admin reset shows New Password and asks
 * for one, and with it connects again. */
static void
test_sign_in(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = NULL;
    g_autofree gchar *address = own_address();
    g_autofree gchar *cert = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *account_token = NULL;
    g_autofree gchar *account_id = NULL;
    g_autofree gchar *first = NULL;
    g_autofree gchar *second = NULL;
    g_autofree gchar *temporary = NULL;
    g_autofree gchar *log = NULL;
    g_autoptr(GError) error = NULL;
    GtkWindow *parent;
    EinsoraServerDialog *dialog;
    gboolean closed = FALSE;
    guint before = reconnects;

    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here: install glib-networking");
        return;
    }
    /* Loopback is this machine's daemon, which takes no password. */
    if (address == NULL) {
        g_test_skip("this machine has no address but loopback");
        return;
    }
    daemon = einsora_test_daemon_new();
    daemon->listen = g_strdup_printf("%s:0", address);
    einsora_test_daemon_start(daemon);
    /* Off loopback the daemon speaks TLS with a certificate of its own. */
    g_assert_true(g_str_has_prefix(daemon->uri, "https://"));
    g_assert_false(einsora_client_server_is_local(daemon->uri));
    cert = g_build_filename(daemon->data_dir, "tls", "server.pem", NULL);
    {
        g_autoptr(GTlsCertificate) certificate = g_tls_certificate_new_from_file(cert, &error);
        g_autoptr(EinsoraPinnedDatabase) trust = NULL;

        g_assert_no_error(error);
        fingerprint = einsora_certificate_fingerprint(certificate);
        trust = einsora_pinned_database_new(fingerprint);
        soup_session_set_tls_database(daemon->session, G_TLS_DATABASE(trust));
    }
    /* An account with a password, as its owner sets one. */
    {
        g_autoptr(EinsoraTestResponse) created =
            einsora_test_request(daemon, "POST", "/v1/admin/accounts", daemon->owner_token, NULL,
                                 "{\"email\":\"" EMAIL "\",\"new_tenant\":\"danas\"}", NULL);
        g_autoptr(EinsoraTestResponse) set = NULL;

        g_assert_cmpuint(created->status, ==, 201);
        account_token = g_strdup(einsora_test_response_string(created, "secret"));
        account_id = g_strdup(json_object_get_string_member(
            json_object_get_object_member(json_node_get_object(created->json), "account"), "id"));
        set = einsora_test_request(daemon, "POST", "/v1/me/password", account_token, NULL,
                                   "{\"current_password\":\"\",\"new_password\":\"" PASSWORD "\"}",
                                   NULL);
        g_assert_cmpuint(set->status, ==, 204);
    }

    parent = parent_window();
    dialog = open_dialog(parent, &closed);
    einsora_server_dialog_set_url(dialog, daemon->uri);
    einsora_server_dialog_set_token(dialog, "");
    einsora_server_dialog_set_email(dialog, EMAIL);
    einsora_server_dialog_set_password(dialog, "not dana's password");
    /* Not trusted yet: its fingerprint said, nothing sent, trust offered. */
    g_assert_null(find_button(GTK_WIDGET(dialog), "dialog.trust-certificate"));
    press(dialog, "dialog.connect");
    WAIT_FOR(einsora_server_dialog_get_error(dialog) != NULL);
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), fingerprint));
    WAIT_FOR(find_button(GTK_WIDGET(dialog), "dialog.trust-certificate") != NULL);
    settle();
    save_window(GTK_WIDGET(dialog), "server-dialog-untrusted.png");
    /* Trusted: pinned as einsora login pins, and the wrong password
     * refused; no token kept, the dialog still open. */
    press(dialog, "dialog.trust-certificate");
    WAIT_FOR(einsora_server_dialog_get_error(dialog) != NULL &&
             strstr(einsora_server_dialog_get_error(dialog), "don’t sign in") != NULL);
    {
        g_autoptr(EinsoraServerPins) pins = einsora_server_pins_load(NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(einsora_server_pins_lookup(pins, daemon->uri), ==, fingerprint);
    }
    g_assert_null(find_button(GTK_WIDGET(dialog), "dialog.trust-certificate"));
    g_assert_false(closed);
    g_assert_cmpuint(reconnects, ==, before);
    g_assert_null(kept_token(daemon->uri));

    /* The right password: a token of this computer's own, kept, that
     * answers as the account; the daemon set, reconnected. */
    einsora_server_dialog_set_password(dialog, PASSWORD);
    press(dialog, "dialog.connect");
    WAIT_FOR(closed);
    g_assert_cmpuint(reconnects, ==, before + 1);
    {
        g_autofree gchar *url = g_settings_get_string(settings, "daemon-url");
        g_assert_cmpstr(url, ==, daemon->uri);
    }
    first = kept_token(daemon->uri);
    g_assert_nonnull(first);
    g_assert_cmpstr(first, !=, account_token);
    {
        g_autofree gchar *subject = subject_of(daemon, first);
        g_autofree gchar *name = g_strdup_printf("Einsora app on %s", g_get_host_name());
        g_autoptr(EinsoraTestResponse) tokens =
            einsora_test_request(daemon, "GET", "/v1/tokens", first, NULL, NULL, NULL);
        g_assert_cmpstr(subject, ==, EMAIL);
        g_assert_nonnull(strstr(tokens->body, name));
    }

    /* Reset by an admin: the temporary password shows New Password and
     * says why; the token kept stays until a sign-in succeeds. */
    {
        g_autofree gchar *path =
            g_strdup_printf("/v1/admin/accounts/%s/reset-password", account_id);
        g_autoptr(EinsoraTestResponse) reset =
            einsora_test_request(daemon, "POST", path, daemon->owner_token, NULL, NULL, NULL);
        g_assert_cmpuint(reset->status, ==, 200);
        temporary = g_strdup(einsora_test_response_string(reset, "password"));
        g_assert_nonnull(temporary);
    }
    dialog = open_dialog(parent, &closed);
    g_assert_null(find_row(GTK_WIDGET(dialog), "New Password"));
    einsora_server_dialog_set_email(dialog, EMAIL);
    einsora_server_dialog_set_password(dialog, temporary);
    press(dialog, "dialog.connect");
    WAIT_FOR(find_row(GTK_WIDGET(dialog), "New Password") != NULL);
    g_assert_nonnull(einsora_server_dialog_get_error(dialog));
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "admin reset your password"));
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "at least 8 characters"));
    settle();
    save_window(GTK_WIDGET(dialog), "server-dialog-new-password.png");
    g_assert_false(closed);
    g_assert_cmpuint(reconnects, ==, before + 1);
    second = kept_token(daemon->uri);
    g_assert_cmpstr(second, ==, first);
    g_clear_pointer(&second, g_free);
    /* Too short: the server's rule, said. */
    einsora_server_dialog_set_new_password(dialog, "short");
    press(dialog, "dialog.connect");
    WAIT_FOR(einsora_server_dialog_get_error(dialog) != NULL &&
             strstr(einsora_server_dialog_get_error(dialog), "admin reset") == NULL);
    g_assert_nonnull(strstr(einsora_server_dialog_get_error(dialog), "8 characters"));
    g_assert_false(closed);
    /* A new one: changed, signed in with it, a new token kept. */
    einsora_server_dialog_set_new_password(dialog, NEW_PASSWORD);
    press(dialog, "dialog.connect");
    WAIT_FOR(closed);
    g_assert_cmpuint(reconnects, ==, before + 2);
    second = kept_token(daemon->uri);
    g_assert_nonnull(second);
    g_assert_cmpstr(second, !=, first);
    {
        g_autofree gchar *subject = subject_of(daemon, second);
        g_assert_cmpstr(subject, ==, EMAIL);
    }
    gtk_window_destroy(parent);

    /* No password went to the daemon's log. */
    einsora_test_daemon_stop(daemon);
    log = einsora_test_daemon_read_log(daemon);
    g_assert_null(strstr(log, PASSWORD));
    g_assert_null(strstr(log, NEW_PASSWORD));
    g_assert_null(strstr(log, temporary));
    g_settings_reset(settings, "daemon-url");
}

static gboolean
menu_has_action(GMenuModel *menu, const char *action_name)
{
    for (int i = 0; i < g_menu_model_get_n_items(menu); i++) {
        g_autofree gchar *action = NULL;
        GMenuLinkIter *links;

        if (g_menu_model_get_item_attribute(menu, i, G_MENU_ATTRIBUTE_ACTION, "s", &action) &&
            g_str_equal(action, action_name))
            return TRUE;
        links = g_menu_model_iterate_item_links(menu, i);
        while (g_menu_link_iter_next(links)) {
            g_autoptr(GMenuModel) section = g_menu_link_iter_get_value(links);
            if (menu_has_action(section, action_name)) {
                g_object_unref(links);
                return TRUE;
            }
        }
        g_object_unref(links);
    }
    return FALSE;
}

/* Whether a menu button under @widget offers @action_name. */
static gboolean
menus_offer(GtkWidget *widget, const char *action_name)
{
    GMenuModel *menu =
        GTK_IS_MENU_BUTTON(widget) ? gtk_menu_button_get_menu_model(GTK_MENU_BUTTON(widget)) : NULL;

    if (menu != NULL && menu_has_action(menu, action_name))
        return TRUE;
    for (GtkWidget *child = gtk_widget_get_first_child(widget); child != NULL;
         child = gtk_widget_get_next_sibling(child))
        if (menus_offer(child, action_name))
            return TRUE;
    return FALSE;
}

/* A daemon that can't start leaves a way out on the error page, and the
 * main menu has one always; the window says which daemon it uses. */
static void
test_window_offers_it(void)
{
    g_autoptr(GListStore) workloads = g_list_store_new(G_TYPE_OBJECT);
    EinsoraWindow *window = einsora_window_new(app, G_LIST_MODEL(workloads), settings);

    gtk_window_present(GTK_WINDOW(window));
    einsora_window_show_error(window, "The daemon stopped before it was ready.");
    WAIT_FOR(find_button(GTK_WIDGET(window), "app.connect-server") != NULL);
    g_assert_true(gtk_widget_is_sensitive(find_button(GTK_WIDGET(window), "app.connect-server")));
    g_assert_nonnull(find_button(GTK_WIDGET(window), "app.reconnect"));
    /* Trust is offered only for a certificate that wasn't trusted. */
    g_assert_null(find_button(GTK_WIDGET(window), "app.trust-certificate"));
    einsora_window_show_untrusted(
        window,
        "https://lab.example.org:8443 presents a certificate this computer doesn’t trust. Its "
        "fingerprint is SHA256:0337f898a1e43681a8b72a6ec99a05cbf2331424442a9351eb11421788f8377e. "
        "Trust it only if it is the one einsora-daemon info prints on the server.",
        TRUE);
    WAIT_FOR(find_button(GTK_WIDGET(window), "app.trust-certificate") != NULL);
    {
        gboolean waited = FALSE;
        g_timeout_add(500, on_deadline, &waited);
        WAIT_FOR(waited);
    }
    save_window(GTK_WIDGET(window), "untrusted-certificate-page.png");
    einsora_window_show_error(window, "The daemon stopped before it was ready.");
    WAIT_FOR(find_button(GTK_WIDGET(window), "app.trust-certificate") == NULL);
    {
        /* The page's crossfade over. */
        gboolean waited = FALSE;
        g_timeout_add(500, on_deadline, &waited);
        WAIT_FOR(waited);
    }
    save_window(GTK_WIDGET(window), "server-dialog-error-page.png");

    /* The header's main menu. */
    g_assert_true(menus_offer(GTK_WIDGET(window), "app.connect-server"));

    einsora_window_set_server(window, SERVER, FALSE);
    g_assert_cmpstr(gtk_window_get_title(GTK_WINDOW(window)), ==, "Einsora — lab.example.org");
    einsora_window_set_server(window, "http://127.0.0.1:8080", TRUE);
    g_assert_cmpstr(gtk_window_get_title(GTK_WINDOW(window)), ==, "Einsora");
    gtk_window_destroy(GTK_WINDOW(window));
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    gboolean tap = FALSE;
    int status;
    /* The application's, as the window's buttons find them. */
    const GActionEntry actions[] = {{"reconnect", on_reconnect, NULL, NULL, NULL, {0}},
                                    {"connect-server", NULL, NULL, NULL, NULL, {0}}};

    /* Tokens go to a config directory of the test's own, in a file. */
    config_dir = einsora_test_dir_new();
    g_setenv("XDG_CONFIG_HOME", config_dir, TRUE);
    g_setenv("EINSORA_TOKEN_STORE", "file", TRUE);
    for (int i = 1; i < argc; i++)
        tap = tap || g_str_equal(argv[i], "--tap");
    g_test_init(&argc, &argv, NULL);
    gtk_disable_setlocale();
    setlocale(LC_ALL, "C.UTF-8");
    if (!gtk_init_check()) {
        if (tap)
            g_print("1..0 # SKIP no display (run it under tests/run-under-xvfb.sh)\n");
        else
            g_printerr("skipped: no display (run it under tests/run-under-xvfb.sh)\n");
        einsora_test_dir_remove(config_dir);
        return tap ? 0 : 77;
    }
    app = GTK_APPLICATION(g_object_new(
        ADW_TYPE_APPLICATION, "application-id", "dev.einsora.Einsora.ServerDialogTest", "flags",
        G_APPLICATION_NON_UNIQUE, "resource-base-path", "/dev/einsora/Einsora", NULL));
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_action_map_add_action_entries(G_ACTION_MAP(app), actions, G_N_ELEMENTS(actions), NULL);
    settings = g_settings_new("dev.einsora.Einsora");

    g_test_add_func("/app/server-dialog/connect", test_connect);
    g_test_add_func("/app/server-dialog/this-machine", test_this_machine);
    g_test_add_func("/app/server-dialog/sign-in", test_sign_in);
    g_test_add_func("/app/server-dialog/window-offers-it", test_window_offers_it);
    status = g_test_run();

    g_object_unref(settings);
    g_object_unref(app);
    einsora_test_dir_remove(config_dir);
    g_free(config_dir);
    return status;
}
