/* einsora-daemon: wiring only. Settings come from EINSORA_* variables and
 * the matching options; every one is checked before anything starts, and a
 * bad value stops the daemon with a message naming the setting. */
#define G_LOG_DOMAIN "einsora-daemon"

#include <errno.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "einsora-access-proxy.h"
#include "einsora-agent.h"
#include "einsora-api-server.h"
#include "einsora-auth.h"
#include "einsora-catalog.h"
#include "einsora-controller.h"
#include "einsora-agent-join.h"
#include "einsora-remote-hub.h"
#include "einsora-agent-tunnel.h"
#include "einsora-daemon-tls.h"
#include "einsora-meter.h"
#include "einsora-docker-driver.h"
#include "einsora-docker-engine.h"
#include "einsora-docker-probe.h"
#include "einsora-host-lock.h"
#include "einsora-http-edge.h"
#include "einsora-hub.h"
#include "einsora-linux-inventory.h"
#include "einsora-local-machine.h"
#include "einsora-metrics.h"
#include "einsora-native-driver.h"
#include "einsora-sim-driver.h"
#include "einsora-service.h"
#include "einsora-service-notify.h"
#include "einsora-pg-store.h"
#include "einsora-sqlite-store.h"
#include "einsora-timestamp.h"
#include "einsora-tls-identity.h"
#include "einsora-uuid.h"

#define DATABASE_NAME "einsora.db"
/* On one's own machine capacity is the real limit; the quota only keeps a
 * runaway script from queueing without end. */
#define SOLO_GPUS_PER_CLASS 64

typedef struct {
    gchar *data_dir;
    /* EINSORA_DATABASE_URL: the Postgres store instead of the data
     * directory's SQLite file. It may hold a password, so it is read from
     * the environment only (never a flag, which ps shows), removed from
     * it at once (workloads inherit nothing of it), and never logged. */
    gchar *database_url;
    /* EINSORA_ROLE (--role): which parts run here (docs/adr/0062). */
    gchar *role;
    gboolean runs_machine; /* the controller, the hub, this machine, the access proxy */
    gboolean runs_meter;
    gboolean runs_api;
    gchar *api_addr;
    gchar *access_addr;
    gchar *region;
    gchar *catalog;
    gchar *controller_interval;
    gchar *controller_wake;
    gchar *metering_interval;
    gchar *idle_timeout;
    gchar *aging_after;
    gchar *machine_owner;
    gchar *drivers;
    gchar *agent_state_dir;
    gchar *agent_run_dir;
    gchar *notebook_network;
    gchar *llama_server;
    gchar *docker_host;
    gchar *docker_socket; /* from docker_host */
    gchar *metrics_open;
    gchar *tls;
    gchar *tls_cert;
    gchar *tls_key;
    EinsoraTlsMode tls_mode;
    gint64 controller_interval_us;
    gint64 idle_timeout_s; /* 0: none */
    gint64 aging_after_us; /* 0: no aging */
    gboolean wakes_controller;
    gint64 metering_interval_us;
} EinsoraDaemonSettings;

/* The drivers EINSORA_DRIVERS may name; without it, the daemon uses the
 * real ones that work here (sim only ever when asked). */

/* A test's setting in milliseconds, or 0 when unset or not a number. */
static gint64
test_milliseconds(const char *name)
{
    const char *text = g_getenv(name);
    guint64 value = 0;

    if (text == NULL || !g_ascii_string_to_unsigned(text, 10, 1, G_MAXINT32, &value, NULL))
        return 0;
    return (gint64)value;
}

static const char *const known_drivers[] = {"sim", EINSORA_NATIVE_DRIVER_NAME,
                                            EINSORA_DOCKER_DRIVER_NAME, NULL};
#define PROBE_TIMEOUT_MS 30000

static void
settings_clear(EinsoraDaemonSettings *settings)
{
    g_clear_pointer(&settings->data_dir, g_free);
    if (settings->database_url != NULL)
        explicit_bzero(settings->database_url, strlen(settings->database_url));
    g_clear_pointer(&settings->database_url, g_free);
    g_clear_pointer(&settings->role, g_free);
    g_clear_pointer(&settings->api_addr, g_free);
    g_clear_pointer(&settings->access_addr, g_free);
    g_clear_pointer(&settings->region, g_free);
    g_clear_pointer(&settings->catalog, g_free);
    g_clear_pointer(&settings->controller_interval, g_free);
    g_clear_pointer(&settings->controller_wake, g_free);
    g_clear_pointer(&settings->metering_interval, g_free);
    g_clear_pointer(&settings->idle_timeout, g_free);
    g_clear_pointer(&settings->aging_after, g_free);
    g_clear_pointer(&settings->machine_owner, g_free);
    g_clear_pointer(&settings->drivers, g_free);
    g_clear_pointer(&settings->agent_state_dir, g_free);
    g_clear_pointer(&settings->agent_run_dir, g_free);
    g_clear_pointer(&settings->notebook_network, g_free);
    g_clear_pointer(&settings->llama_server, g_free);
    g_clear_pointer(&settings->docker_host, g_free);
    g_clear_pointer(&settings->docker_socket, g_free);
    g_clear_pointer(&settings->metrics_open, g_free);
    g_clear_pointer(&settings->tls, g_free);
    g_clear_pointer(&settings->tls_cert, g_free);
    g_clear_pointer(&settings->tls_key, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(EinsoraDaemonSettings, settings_clear)

/* An option wins over its variable; an empty value is a mistake, not a
 * request for the default. */
static gboolean
resolve_setting(gchar **value, const char *variable, const char *option, const char *fallback,
                GError **error)
{
    const char *env = g_getenv(variable);

    if (*value == NULL && env != NULL)
        *value = g_strdup(env);
    if (*value != NULL && **value == '\0') {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s (%s) is set but empty",
                    variable, option);
        return FALSE;
    }
    if (*value == NULL && fallback != NULL)
        *value = g_strdup(fallback);
    return TRUE;
}

/* The parts a role runs (docs/adr/0062). Several processes, on one host
 * or several, share one Postgres: only there do they hear each other's
 * events, so a role other than all needs EINSORA_DATABASE_URL. */
static gboolean
resolve_role(EinsoraDaemonSettings *settings, GError **error)
{
    const char *role = settings->role;

    settings->runs_api = !g_str_equal(role, "metering");
    settings->runs_machine = g_str_equal(role, "all") || g_str_equal(role, "controller");
    settings->runs_meter = g_str_equal(role, "all") || g_str_equal(role, "metering");
    if (!g_str_equal(role, "all") && !g_str_equal(role, "api") &&
        !g_str_equal(role, "controller") && !g_str_equal(role, "metering")) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_ROLE (--role): \"%s\" is none of api, controller, metering and all",
                    role);
        return FALSE;
    }
    if (!g_str_equal(role, "all") && settings->database_url == NULL) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_ROLE (--role) %s shares the work with other processes, which needs "
                    "the store they share: set EINSORA_DATABASE_URL to a PostgreSQL database",
                    role);
        return FALSE;
    }
    return TRUE;
}

static gboolean
check_address(const char *value, const char *variable, const char *option, GError **error)
{
    g_autoptr(GError) local_error = NULL;
    g_autoptr(GInetSocketAddress) parsed = einsora_http_address_parse(value, &local_error);

    if (parsed == NULL) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s (%s): %s", variable,
                    option, local_error->message);
        return FALSE;
    }
    return TRUE;
}

/* Whether @value (checked by check_address) can be listened on, asked
 * before the store is opened or anything started, so that a port in use
 * stops the daemon with nothing changed. Port 0 (any free one) always
 * can. */
static gboolean
check_can_listen(const char *value, const char *variable, const char *option, GError **error)
{
    g_autoptr(GInetSocketAddress) address = einsora_http_address_parse(value, NULL);
    g_autoptr(GSocket) socket = NULL;
    g_autoptr(GError) local_error = NULL;

    if (g_inet_socket_address_get_port(address) == 0)
        return TRUE;
    socket = einsora_http_listen_socket_new(address, &local_error);
    if (socket != NULL) {
        g_socket_close(socket, NULL);
        return TRUE;
    }
    if (g_error_matches(local_error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE))
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
                    "%s (%s): %s is already in use: another program (another einsora-daemon?) "
                    "listens there",
                    variable, option, value);
    else
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s (%s): can't listen on %s: %s",
                    variable, option, value, local_error->message);
    return FALSE;
}

/* "250ms", "5s", "2m": the forms an operator writes. */
static gboolean
parse_duration(const char *text, gint64 *us)
{
    static const struct {
        const char *suffix;
        gint64 scale;
    } units[] = {{"ms", 1000},
                 {"s", G_USEC_PER_SEC},
                 {"m", G_GINT64_CONSTANT(60) * G_USEC_PER_SEC},
                 {"h", G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC}};
    char *end = NULL;
    guint64 number;

    if (!g_ascii_isdigit(*text))
        return FALSE;
    errno = 0;
    number = g_ascii_strtoull(text, &end, 10);
    if (errno != 0 || number > 3600000)
        return FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(units); i++) {
        if (g_strcmp0(end, units[i].suffix) == 0) {
            *us = (gint64)number * units[i].scale;
            return TRUE;
        }
    }
    return FALSE;
}

static gboolean
resolve_settings(EinsoraDaemonSettings *settings, GError **error)
{
    g_autofree gchar *default_data_dir = g_build_filename(g_get_user_data_dir(), "einsora", NULL);
    /* Short, for socket paths (macOS allows 104 bytes): ~/.einsora/run. */
    g_autofree gchar *default_run_dir = g_build_filename(g_get_home_dir(), ".einsora", "run", NULL);

    if (g_getenv("EINSORA_DATABASE_URL") != NULL) {
        settings->database_url = g_strdup(g_getenv("EINSORA_DATABASE_URL"));
        g_unsetenv("EINSORA_DATABASE_URL");
        if (settings->database_url[0] == '\0') {
            g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                                "EINSORA_DATABASE_URL is empty: unset it for the data "
                                "directory's SQLite file, or give a PostgreSQL connection string");
            return FALSE;
        }
    }
    if (!resolve_setting(&settings->data_dir, "EINSORA_DATA_DIR", "--data-dir", default_data_dir,
                         error) ||
        !resolve_setting(&settings->role, "EINSORA_ROLE", "--role", "all", error) ||
        !resolve_setting(&settings->api_addr, "EINSORA_API_ADDR", "--listen", "127.0.0.1:8080",
                         error) ||
        !resolve_setting(&settings->access_addr, "EINSORA_ACCESS_ADDR", "--access-listen",
                         "127.0.0.1:8090", error) ||
        !resolve_setting(&settings->region, "EINSORA_REGION", "--region", NULL, error) ||
        !resolve_setting(&settings->catalog, "EINSORA_CATALOG", "--catalog", NULL, error) ||
        !resolve_setting(&settings->controller_interval, "EINSORA_CONTROLLER_INTERVAL",
                         "--controller-interval", "5s", error) ||
        !resolve_setting(&settings->controller_wake, "EINSORA_CONTROLLER_WAKE", "--controller-wake",
                         "on", error) ||
        !resolve_setting(&settings->metering_interval, "EINSORA_METERING_INTERVAL",
                         "--metering-interval", "60s", error) ||
        !resolve_setting(&settings->aging_after, "EINSORA_AGING_AFTER", "--aging-after", "10m",
                         error) ||
        !resolve_setting(&settings->idle_timeout, "EINSORA_IDLE_TIMEOUT", "--idle-timeout", "off",
                         error) ||
        !resolve_setting(&settings->machine_owner, "EINSORA_MACHINE_OWNER", "--machine-owner",
                         "local", error) ||
        !resolve_setting(&settings->agent_state_dir, "EINSORA_AGENT_STATE_DIR", "--agent-state-dir",
                         NULL, error) ||
        !resolve_setting(&settings->agent_run_dir, "EINSORA_AGENT_RUN_DIR", "--agent-run-dir",
                         default_run_dir, error) ||
        !resolve_setting(&settings->notebook_network, "EINSORA_NOTEBOOK_NETWORK",
                         "--notebook-network", "none", error) ||
        !resolve_setting(&settings->llama_server, "EINSORA_LLAMA_SERVER", "--llama-server", NULL,
                         error) ||
        !resolve_setting(&settings->docker_host, "EINSORA_DOCKER_HOST", "--docker-host",
                         "unix://" EINSORA_DOCKER_DEFAULT_SOCKET, error) ||
        !resolve_setting(&settings->metrics_open, "EINSORA_METRICS_OPEN", "--metrics-open", "off",
                         error) ||
        !resolve_setting(&settings->tls, "EINSORA_TLS", "--tls", "auto", error) ||
        !resolve_setting(&settings->tls_cert, "EINSORA_TLS_CERT", "--tls-cert", NULL, error) ||
        !resolve_setting(&settings->tls_key, "EINSORA_TLS_KEY", "--tls-key", NULL, error))
        return FALSE;
    if (!einsora_tls_mode_parse(settings->tls, &settings->tls_mode)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_TLS (--tls): \"%s\" is none of auto, on and plain-behind-tls-proxy",
                    settings->tls);
        return FALSE;
    }
    if (!g_str_equal(settings->metrics_open, "off") &&
        !g_str_equal(settings->metrics_open, "loopback")) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_METRICS_OPEN (--metrics-open): \"%s\" is neither off nor loopback",
                    settings->metrics_open);
        return FALSE;
    }
    {
        g_autoptr(GError) local_error = NULL;
        settings->docker_socket =
            einsora_docker_engine_socket_from_host(settings->docker_host, &local_error);
        if (settings->docker_socket == NULL) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "EINSORA_DOCKER_HOST (--docker-host): %s", local_error->message);
            return FALSE;
        }
    }
    if (settings->llama_server != NULL && !g_path_is_absolute(settings->llama_server)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_LLAMA_SERVER (--llama-server): \"%s\" is not an absolute path",
                    settings->llama_server);
        return FALSE;
    }
    if (!g_str_equal(settings->notebook_network, "none") &&
        !g_str_equal(settings->notebook_network, "outbound")) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_NOTEBOOK_NETWORK (--notebook-network): \"%s\" is neither none nor "
                    "outbound",
                    settings->notebook_network);
        return FALSE;
    }
    if (!g_path_is_absolute(settings->agent_run_dir)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_AGENT_RUN_DIR (--agent-run-dir): \"%s\" is not an absolute path",
                    settings->agent_run_dir);
        return FALSE;
    }
    /* No drivers is a valid choice (the machine shows, workloads wait), so
     * an empty EINSORA_DRIVERS means none rather than a mistake. */
    if (settings->drivers == NULL)
        settings->drivers = g_strdup(g_getenv("EINSORA_DRIVERS"));
    if (settings->drivers != NULL) {
        g_auto(GStrv) names = g_strsplit(settings->drivers, ",", -1);
        for (guint i = 0; names[i] != NULL; i++) {
            if (*names[i] != '\0' &&
                !g_strv_contains((const char *const *)known_drivers, names[i])) {
                g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "EINSORA_DRIVERS (--drivers): \"%s\" is not a driver this "
                            "einsora-daemon has (sim, %s, %s)",
                            names[i], EINSORA_NATIVE_DRIVER_NAME, EINSORA_DOCKER_DRIVER_NAME);
                return FALSE;
            }
        }
    }
    if (!g_path_is_absolute(settings->data_dir)) {
        gchar *absolute = g_canonicalize_filename(settings->data_dir, NULL);
        g_free(settings->data_dir);
        settings->data_dir = absolute;
    }
    /* The machine ID lives next to the database unless told otherwise. */
    if (settings->agent_state_dir == NULL)
        settings->agent_state_dir = g_strdup(settings->data_dir);
    if (!check_address(settings->api_addr, "EINSORA_API_ADDR", "--listen", error) ||
        !check_address(settings->access_addr, "EINSORA_ACCESS_ADDR", "--access-listen", error))
        return FALSE;
    /* A browser's cookie and one-time tickets cross to the access proxy:
     * off loopback only over TLS of its own (docs/adr/0053). */
    if (settings->tls_mode == EINSORA_TLS_PLAIN_BEHIND_TLS_PROXY &&
        !einsora_address_is_loopback(settings->access_addr)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_ACCESS_ADDR (--access-listen): \"%s\" is not a loopback address, "
                    "and with EINSORA_TLS=plain-behind-tls-proxy the access proxy has no TLS: "
                    "keep it on loopback, or let the daemon end TLS",
                    settings->access_addr);
        return FALSE;
    }
    if (!parse_duration(settings->controller_interval, &settings->controller_interval_us) ||
        settings->controller_interval_us < 100 * 1000 ||
        settings->controller_interval_us > G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_CONTROLLER_INTERVAL (--controller-interval): \"%s\" is not a "
                    "duration between 100ms and 60m, like 5s",
                    settings->controller_interval);
        return FALSE;
    }
    if (!g_str_equal(settings->controller_wake, "on") &&
        !g_str_equal(settings->controller_wake, "off")) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_CONTROLLER_WAKE (--controller-wake): \"%s\" is neither on nor off",
                    settings->controller_wake);
        return FALSE;
    }
    settings->wakes_controller = g_str_equal(settings->controller_wake, "on");
    if (!resolve_role(settings, error))
        return FALSE;
    if (!parse_duration(settings->metering_interval, &settings->metering_interval_us) ||
        settings->metering_interval_us < 100 * 1000 ||
        settings->metering_interval_us > G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_METERING_INTERVAL (--metering-interval): \"%s\" is not a "
                    "duration between 100ms and 60m, like 60s",
                    settings->metering_interval);
        return FALSE;
    }
    /* docs/adr/0051: off, or from a second to a day. */
    if (!g_str_equal(settings->aging_after, "off") &&
        (!parse_duration(settings->aging_after, &settings->aging_after_us) ||
         settings->aging_after_us < G_USEC_PER_SEC ||
         settings->aging_after_us > G_GINT64_CONSTANT(86400) * G_USEC_PER_SEC)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_AGING_AFTER (--aging-after): \"%s\" is neither off nor a duration "
                    "from 1s to 24h, like 10m",
                    settings->aging_after);
        return FALSE;
    }
    /* Off unless set (docs/adr/0044). */
    if (!g_str_equal(settings->idle_timeout, "off")) {
        gint64 us = 0;
        if (!parse_duration(settings->idle_timeout, &us) || us < G_USEC_PER_SEC ||
            us / G_USEC_PER_SEC > EINSORA_IDLE_TIMEOUT_MAX_S) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "EINSORA_IDLE_TIMEOUT (--idle-timeout): \"%s\" is neither off nor a "
                        "duration from 1s to a year, like 1h",
                        settings->idle_timeout);
            return FALSE;
        }
        settings->idle_timeout_s = us / G_USEC_PER_SEC;
    }
    if (!g_regex_match_simple("^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$", settings->machine_owner, 0,
                              0)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "EINSORA_MACHINE_OWNER (--machine-owner): \"%s\" is not a tenant name",
                    settings->machine_owner);
        return FALSE;
    }
    return TRUE;
}

/* The data directory is private to this user: created 0700. It holds the
 * owner's API token and TLS keys whichever store is used. */
static gboolean
make_data_dir(const EinsoraDaemonSettings *settings, GError **error)
{
    if (g_mkdir_with_parents(settings->data_dir, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                    "EINSORA_DATA_DIR (--data-dir): can't create %s: %s", settings->data_dir,
                    g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

/* After the store is open: the SQLite store has refused a directory
 * others can write; they mustn't read it either. */
static gboolean
keep_data_dir_private(const EinsoraDaemonSettings *settings, GError **error)
{
    struct stat st;

    if (stat(settings->data_dir, &st) == 0 && (st.st_mode & 0077) != 0) {
        if (chmod(settings->data_dir, 0700) != 0) {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                        "EINSORA_DATA_DIR (--data-dir): can't make %s private: %s",
                        settings->data_dir, g_strerror(errno));
            return FALSE;
        }
        g_message("made %s private (0700): it holds the API token", settings->data_dir);
    }
    return TRUE;
}

static EinsoraStore *
open_pg_store(const EinsoraDaemonSettings *settings, EinsoraMetrics *metrics, GError **error)
{
    g_autoptr(EinsoraPgStore) store = einsora_pg_store_open(settings->database_url, error);

    if (store == NULL || !einsora_pg_store_migrate(store, einsora_now_real(NULL), error)) {
        g_prefix_error(error, "EINSORA_DATABASE_URL: ");
        return NULL;
    }
    if (metrics != NULL)
        einsora_pg_store_set_metrics(store, metrics);
    return EINSORA_STORE(g_steal_pointer(&store));
}

static EinsoraStore *
open_sqlite_store(const EinsoraDaemonSettings *settings, EinsoraMetrics *metrics, GError **error)
{
    g_autofree gchar *path = g_build_filename(settings->data_dir, DATABASE_NAME, NULL);
    g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, error);

    if (store == NULL) {
        g_prefix_error(error, "EINSORA_DATA_DIR (--data-dir): ");
        return NULL;
    }
    if (!einsora_sqlite_store_migrate(store, einsora_now_real(NULL), error))
        return NULL;
    einsora_sqlite_store_set_clock(store, einsora_now_real, NULL);
    if (metrics != NULL)
        einsora_sqlite_store_set_metrics(store, metrics);
    return EINSORA_STORE(g_steal_pointer(&store));
}

/* The store, migrated: Postgres when EINSORA_DATABASE_URL names one
 * (docs/adr/0061), else the data directory's SQLite file. @metrics may be
 * NULL. */
static EinsoraStore *
open_store(const EinsoraDaemonSettings *settings, EinsoraMetrics *metrics, GError **error)
{
    g_autoptr(EinsoraStore) store = NULL;

    if (!make_data_dir(settings, error))
        return NULL;
    if (settings->database_url != NULL)
        store = open_pg_store(settings, metrics, error);
    else
        store = open_sqlite_store(settings, metrics, error);
    if (store == NULL || !keep_data_dir_private(settings, error))
        return NULL;
    return g_steal_pointer(&store);
}

/* This machine's side of Solo: the hub (the agent backend), the
 * controller of the region over it, and the in-process agent with the
 * drivers EINSORA_DRIVERS names. */
typedef struct {
    EinsoraHostLock *lock;
    EinsoraHostLock *run_lock; /* the run directory's, while linux-native runs */
    EinsoraHub *hub;
    EinsoraController *controller;
    EinsoraAgent *agent;
    /* What the agent reports; a driver joins its list once probed. */
    EinsoraInventory *inventory;
    /* A probe whose driver was asked for by name failed: the daemon
     * stops with this, as it would have at start. */
    GMainLoop *loop;
    GError *fatal;
    GCancellable *probing;
    /* Made when asked for, or when its socket is there; offered once
     * the Engine answers. */
    gboolean docker_made;
} LocalMachine;

static void
local_machine_clear(LocalMachine *machine)
{
    if (machine->probing != NULL)
        g_cancellable_cancel(machine->probing);
    g_clear_object(&machine->probing);
    g_clear_error(&machine->fatal);
    g_clear_pointer(&machine->loop, g_main_loop_unref);
    g_clear_pointer(&machine->inventory, einsora_inventory_free);
    g_clear_object(&machine->agent);
    g_clear_object(&machine->controller);
    g_clear_object(&machine->hub);
    g_clear_object(&machine->run_lock);
    g_clear_object(&machine->lock);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(LocalMachine, local_machine_clear)

/* The sim driver runs nothing, so a development machine may pretend to
 * have more room than it has (EINSORA_SIM_CPUS, EINSORA_SIM_MEMORY_MIB),
 * to exercise placement with many workloads. */
static gboolean
pretend_capacity(EinsoraInventory *inventory, GError **error)
{
    const struct {
        const char *variable;
        gint64 *value;
    } overrides[] = {
        {"EINSORA_SIM_CPUS", &inventory->cpus},
        {"EINSORA_SIM_MEMORY_MIB", &inventory->memory_mib},
    };

    for (guint i = 0; i < G_N_ELEMENTS(overrides); i++) {
        const char *text = g_getenv(overrides[i].variable);
        guint64 number = 0;
        if (text == NULL)
            continue;
        if (!g_ascii_string_to_unsigned(text, 10, 1, 1 << 20, &number, NULL)) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "%s: \"%s\" is not a number from 1 to 1048576", overrides[i].variable,
                        text);
            return FALSE;
        }
        *overrides[i].value = (gint64)number;
    }
    return TRUE;
}

static gboolean
wants_driver(const EinsoraDaemonSettings *settings, const char *name)
{
    g_auto(GStrv) names = NULL;

    if (settings->drivers == NULL)
        return !g_str_equal(name, "sim"); /* the real ones, when they work */
    names = g_strsplit(settings->drivers, ",", -1);
    return g_strv_contains((const char *const *)names, name);
}

/* The native driver's probe runs Jupyter in bubblewrap (about half a
 * second), so it runs after the daemon is ready: the driver is made at
 * once (it adopts the notebooks still running from before) but offered
 * for placement only once its probe passes (docs/adr/0029). */
typedef struct {
    LocalMachine *machine;
    gboolean asked_for; /* by name, or by outbound networking: a failure is fatal */
    gboolean outbound;
} NativeProbe;

static void
offer_driver(LocalMachine *machine, const char *name)
{
    GStrvBuilder *names = g_strv_builder_new();
    g_auto(GStrv) drivers = NULL;

    g_strv_builder_addv(names, (const char **)machine->inventory->drivers);
    g_strv_builder_add(names, name);
    drivers = g_strv_builder_end(names);
    g_strv_builder_unref(names);
    g_strfreev(machine->inventory->drivers);
    machine->inventory->drivers = g_steal_pointer(&drivers);
    /* The agent reports it at once; the hub's report wakes the controller,
     * which admits what waited for it. */
    einsora_agent_set_inventory(machine->agent, machine->inventory);
}

static void
on_native_probed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autofree NativeProbe *probe = user_data;
    LocalMachine *machine = probe->machine;
    g_autoptr(GError) error = NULL;

    if (einsora_native_driver_probe_finish(result, &error)) {
        g_message("the %s driver works here: it is offered for placement now",
                  EINSORA_NATIVE_DRIVER_NAME);
        offer_driver(machine, EINSORA_NATIVE_DRIVER_NAME);
        return;
    }
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* stopping: @machine may be gone */
    if (probe->asked_for) {
        /* Asked for by name: a setting that can't work stops the daemon. */
        if (probe->outbound)
            g_set_error(&machine->fatal, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        "EINSORA_NOTEBOOK_NETWORK (--notebook-network) is outbound, but %s",
                        error->message);
        else
            g_set_error(&machine->fatal, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        "EINSORA_DRIVERS (--drivers): %s doesn't work here: %s",
                        EINSORA_NATIVE_DRIVER_NAME, error->message);
        g_main_loop_quit(machine->loop);
        return;
    }
    g_message("the %s driver doesn't work here: %s", EINSORA_NATIVE_DRIVER_NAME, error->message);
    if (machine->inventory->drivers[0] == NULL)
        g_message("this machine has no driver that works: workloads placed here wait until it "
                  "has one");
}

/* Endpoints need llama-server as notebooks need Jupyter; without it the
 * driver still runs notebooks, and an endpoint placed here fails with
 * that reason. */
static void
on_endpoints_probed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *version = einsora_native_driver_probe_endpoints_finish(result, &error);

    if (version != NULL)
        g_message("endpoints can run here: llama-server %s works in bubblewrap", version);
    else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_message("endpoints can't run here: %s", error->message);
}

/* The docker driver is made at start (it adopts the containers still
 * running) and offered once the Engine answers its ping. */
typedef struct {
    LocalMachine *machine;
    gboolean asked_for;
    gchar *socket_path;
} DockerProbe;

static void
on_docker_probed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    DockerProbe *probe = user_data;
    LocalMachine *machine = probe->machine;
    g_autoptr(GError) error = NULL;
    gboolean answers = einsora_docker_probe_finish(result, &error);
    g_autofree gchar *socket_path = probe->socket_path;
    gboolean asked_for = probe->asked_for;

    g_free(probe);
    if (answers) {
        g_message("the %s driver works here (the Docker Engine answers on %s): it is offered for "
                  "placement now",
                  EINSORA_DOCKER_DRIVER_NAME, socket_path);
        offer_driver(machine, EINSORA_DOCKER_DRIVER_NAME);
        return;
    }
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* stopping: @machine may be gone */
    if (asked_for) {
        g_set_error(&machine->fatal, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                    "EINSORA_DRIVERS (--drivers): %s doesn't work here: %s",
                    EINSORA_DOCKER_DRIVER_NAME, error->message);
        g_main_loop_quit(machine->loop);
        return;
    }
    g_message("the %s driver isn't offered: %s (restart the daemon once Docker runs)",
              EINSORA_DOCKER_DRIVER_NAME, error->message);
}

/* The docker driver, when EINSORA_DRIVERS names it or (by default) the
 * Engine's socket is there; NULL otherwise. */
static gboolean
make_docker_driver(const EinsoraDaemonSettings *settings, const char *machine_id,
                   GPtrArray *drivers, gboolean *made, GError **error)
{
    g_autoptr(GError) local_error = NULL;
    g_autofree gchar *data_dir = NULL;
    g_autofree gchar *run_dir = NULL;
    g_autofree gchar *models_dir = NULL;
    EinsoraDockerDriver *docker;

    *made = FALSE;
    if (!wants_driver(settings, EINSORA_DOCKER_DRIVER_NAME))
        return TRUE;
    if (settings->drivers == NULL && !g_file_test(settings->docker_socket, G_FILE_TEST_EXISTS)) {
        g_debug("no Docker here: %s doesn't exist", settings->docker_socket);
        return TRUE;
    }
    data_dir = g_build_filename(settings->agent_state_dir, "docker", NULL);
    run_dir = g_build_filename(settings->agent_run_dir, "docker", NULL);
    models_dir = g_build_filename(settings->data_dir, "models", NULL);
    docker = einsora_docker_driver_new(
        &(EinsoraDockerDriverConfig){
            .socket_path = settings->docker_socket,
            .data_dir = data_dir,
            .run_dir = run_dir,
            .models_dir = models_dir,
            .machine_id = machine_id,
        },
        &local_error);
    if (docker == NULL) {
        if (settings->drivers != NULL) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        "EINSORA_DRIVERS (--drivers): %s doesn't work here: %s",
                        EINSORA_DOCKER_DRIVER_NAME, local_error->message);
            return FALSE;
        }
        g_message("the %s driver doesn't work here: %s", EINSORA_DOCKER_DRIVER_NAME,
                  local_error->message);
        return TRUE;
    }
    g_ptr_array_add(drivers, docker);
    *made = TRUE;
    g_message("the %s driver is being checked (the Docker Engine on %s); notebooks run in its "
              "containers, serving on sockets in %s, once it answers",
              EINSORA_DOCKER_DRIVER_NAME, settings->docker_socket, run_dir);
    return TRUE;
}

/* The drivers this machine's agent uses: those EINSORA_DRIVERS names
 * (each must work), or without it the real ones that work here. Those
 * in @names are offered at once; @native, when made, after its probe
 * (@native_config) passes. */
static gboolean
make_drivers(const EinsoraDaemonSettings *settings, const EinsoraNativeDriverConfig *native_config,
             const char *machine_id, GPtrArray *drivers, GStrvBuilder *names,
             EinsoraHostLock **run_lock, EinsoraNativeDriver **native, gboolean *docker_made,
             GError **error)
{
    g_autoptr(GError) local_error = NULL;

    if (wants_driver(settings, "sim")) {
        EinsoraSimDriver *sim = einsora_sim_driver_new_from_env(error);
        if (sim == NULL)
            return FALSE;
        g_ptr_array_add(drivers, sim);
        g_strv_builder_add(names, "sim");
        g_message("the sim driver is on: it runs nothing (development and tests only)");
    }
    if (wants_driver(settings, EINSORA_NATIVE_DRIVER_NAME)) {
        /* Another daemon's agent (another data directory) may use the same
         * run directory: its notebooks are its own, never adopted here. */
        *run_lock = einsora_host_lock_acquire(settings->agent_run_dir, &local_error);
        if (*run_lock == NULL)
            g_prefix_error(&local_error, "EINSORA_AGENT_RUN_DIR (--agent-run-dir): ");
        else
            *native = einsora_native_driver_new(native_config, &local_error);
        if (*native == NULL)
            g_clear_object(run_lock);
        if (*native != NULL) {
            g_ptr_array_add(drivers, g_object_ref(*native));
            g_message("the %s driver is being checked (Jupyter in bubblewrap); notebooks run "
                      "in bubblewrap, serving on sockets in %s, once it passes",
                      EINSORA_NATIVE_DRIVER_NAME, settings->agent_run_dir);
        } else if (native_config->outbound_network &&
                   !g_error_matches(local_error, G_IO_ERROR, G_IO_ERROR_BUSY)) {
            /* Asked for by name: a setting that can't work stops the start. */
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        "EINSORA_NOTEBOOK_NETWORK (--notebook-network) is outbound, but %s",
                        local_error->message);
            return FALSE;
        } else if (settings->drivers != NULL) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        "EINSORA_DRIVERS (--drivers): %s doesn't work here: %s",
                        EINSORA_NATIVE_DRIVER_NAME, local_error->message);
            return FALSE;
        } else {
            g_message("the %s driver doesn't work here: %s", EINSORA_NATIVE_DRIVER_NAME,
                      local_error->message);
        }
    }
    if (!make_docker_driver(settings, machine_id, drivers, docker_made, error))
        return FALSE;
    if (drivers->len == 0)
        g_message("this machine has no driver that works: workloads placed here wait until it "
                  "has one");
    return TRUE;
}

static void
on_intent_changed(EinsoraService *service, const char *workload_id, gpointer user_data)
{
    einsora_controller_wake(user_data);
}

static void
on_runtime_changed(EinsoraHub *hub, gpointer user_data)
{
    einsora_controller_wake(user_data);
}

/* The native driver's settings; @notebooks holds its data directory and
 * @models the model store endpoints load from. */
static EinsoraNativeDriverConfig
native_config(const EinsoraDaemonSettings *settings, gchar **notebooks, gchar **models)
{
    *notebooks = g_build_filename(settings->agent_state_dir, "notebooks", NULL);
    *models = g_build_filename(settings->data_dir, "models", NULL);
    return (EinsoraNativeDriverConfig){
        .data_dir = *notebooks,
        .run_dir = settings->agent_run_dir,
        .llama_server_path = settings->llama_server,
        .models_dir = *models,
        .outbound_network = g_str_equal(settings->notebook_network, "outbound"),
        .device_root = "/",
        .nvml_library = g_getenv("EINSORA_NVML_LIBRARY"),
    };
}

/* Once the daemon answers: the probes of the drivers made but not yet
 * offered. */
static void
start_probes(const EinsoraDaemonSettings *settings, LocalMachine *machine)
{
    g_autofree gchar *notebooks = NULL;
    g_autofree gchar *models = NULL;
    EinsoraNativeDriverConfig config = native_config(settings, &notebooks, &models);
    NativeProbe *probe;

    machine->probing = g_cancellable_new();
    if (machine->docker_made) {
        DockerProbe *docker = g_new0(DockerProbe, 1);
        docker->machine = machine;
        docker->asked_for = settings->drivers != NULL;
        docker->socket_path = g_strdup(settings->docker_socket);
        einsora_docker_probe_async(settings->docker_socket, 5000, machine->probing,
                                   on_docker_probed, docker);
    }
    if (machine->run_lock == NULL)
        return; /* no native driver was made */
    probe = g_new0(NativeProbe, 1);
    probe->machine = machine;
    probe->asked_for = settings->drivers != NULL || config.outbound_network;
    probe->outbound = config.outbound_network;
    einsora_native_driver_probe_async(&config, PROBE_TIMEOUT_MS, machine->probing, on_native_probed,
                                      probe);
    einsora_native_driver_probe_endpoints_async(&config, PROBE_TIMEOUT_MS, machine->probing,
                                                on_endpoints_probed, NULL);
}

static gboolean
start_machine(const EinsoraDaemonSettings *settings, EinsoraStore *store, EinsoraCatalog *catalog,
              EinsoraService *service, EinsoraMetrics *metrics, const char *region,
              LocalMachine *machine, GError **error)
{
    g_autoptr(GPtrArray) drivers = g_ptr_array_new_with_free_func(g_object_unref);
    g_autoptr(GStrvBuilder) names = g_strv_builder_new();
    g_auto(GStrv) driver_names = NULL;
    g_autoptr(EinsoraInventory) inventory = NULL;
    g_autoptr(EinsoraMachine) registered = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *notebooks = NULL;
    g_autofree gchar *models = NULL;
    g_autoptr(EinsoraNativeDriver) native = NULL;
    EinsoraNativeDriverConfig config;
    /* Where NVML is, when the NVIDIA driver installs it off the loader's
     * path; by default the loader finds libnvidia-ml.so.1. */
    EinsoraLinuxInventorySource source = {"/", g_getenv("EINSORA_NVML_LIBRARY")};
    gint64 now_us = einsora_now_real(NULL);

    machine->lock = einsora_host_lock_acquire(settings->agent_state_dir, error);
    if (machine->lock == NULL) {
        g_prefix_error(error, "EINSORA_AGENT_STATE_DIR (--agent-state-dir): ");
        return FALSE;
    }
    machine_id = einsora_local_machine_load_id(settings->agent_state_dir, now_us, error);
    if (machine_id == NULL)
        return FALSE;
    config = native_config(settings, &notebooks, &models);
    if (!make_drivers(settings, &config, machine_id, drivers, names, &machine->run_lock, &native,
                      &machine->docker_made, error))
        return FALSE;
    driver_names = g_strv_builder_end(names);
    inventory = einsora_linux_inventory_read(&source, error);
    if (inventory == NULL) {
        g_prefix_error(error, "reading what this machine has: ");
        return FALSE;
    }
    g_strfreev(inventory->drivers);
    inventory->drivers = g_strdupv(driver_names);
    if (wants_driver(settings, "sim") && !pretend_capacity(inventory, error))
        return FALSE;
    registered = einsora_local_machine_register(store, machine_id, settings->machine_owner, region,
                                                inventory, now_us, error);
    if (registered == NULL)
        return FALSE;

    machine->hub = einsora_hub_new(store, catalog, region, einsora_now_real, NULL);
    {
        /* Tests only: the networked-agent test cuts a link for seconds,
         * not the 45 s and 10 minutes the offline rules take. */
        gint64 offline_ms = test_milliseconds("EINSORA_TEST_MACHINE_OFFLINE_AFTER_MS");
        gint64 failed_ms = test_milliseconds("EINSORA_TEST_MACHINE_FAILED_AFTER_MS");

        /* And a long poll shorter than the offline limit, as 20 s is
         * shorter than 45 s: a held sync is no sync until it ends. */
        gint64 long_poll_ms = test_milliseconds("EINSORA_TEST_SYNC_LONG_POLL_MS");

        if (offline_ms > 0 && failed_ms >= offline_ms)
            einsora_hub_set_offline_limits(machine->hub, offline_ms * 1000, failed_ms * 1000);
        if (long_poll_ms > 0)
            einsora_hub_set_long_poll(machine->hub, long_poll_ms * 1000);
    }
    machine->controller = einsora_controller_new(
        service, store, catalog, EINSORA_BACKEND(machine->hub), region, einsora_now_real, NULL);
    einsora_hub_set_metrics(machine->hub, metrics);
    einsora_controller_set_metrics(machine->controller, metrics);
    einsora_controller_set_aging(machine->controller, settings->aging_after_us);
    /* Machine-wide, as Prometheus scrapes a host: its owner reads them. */
    einsora_service_set_metrics(service, metrics, registered->tenant_id);
    /* The host lock keeps this machine to one daemon, so its ID can hold
     * the region's lease across a crash. */
    /* The model store is this machine's files: its owner decides what
     * is in it. A store that can't be made leaves endpoints unlaunchable,
     * not the daemon down. */
    {
        g_autoptr(GError) local_error = NULL;
        g_autoptr(EinsoraModelStore) model_store = einsora_model_store_new(models, &local_error);

        if (model_store != NULL)
            einsora_service_set_model_store(service, model_store, registered->tenant_id);
        else
            g_warning("the model store at %s can't be used: %s", models, local_error->message);
    }
    einsora_controller_set_lease_holder(machine->controller, registered->id);
    machine->agent = einsora_agent_new(EINSORA_SYNC_TRANSPORT(machine->hub), registered->id,
                                       registered->tenant_id, inventory, drivers);
    /* Sockets and tokens reach the hub from this agent only, in-process. */
    einsora_hub_set_access_source(machine->hub, registered->id,
                                  EINSORA_ACCESS_SOURCE(machine->agent));
    /* Its output too, read from the files its drivers write. */
    einsora_service_set_workload_logs(service, EINSORA_WORKLOAD_LOGS(machine->hub));
    machine->inventory = g_steal_pointer(&inventory);
    /* What users ask for, and what agents report, is acted on at once,
     * not a tick later (docs/adr/0029); off keeps to the interval. */
    if (settings->wakes_controller) {
        g_signal_connect_object(service, "intent-changed", G_CALLBACK(on_intent_changed),
                                machine->controller, 0);
        g_signal_connect_object(machine->hub, "runtime-changed", G_CALLBACK(on_runtime_changed),
                                machine->controller, 0);
    }
    einsora_agent_start(machine->agent);
    einsora_controller_start(machine->controller, settings->controller_interval_us);
    return TRUE;
}

static gboolean
quit_on_signal(gpointer user_data)
{
    GMainLoop *loop = user_data;

    g_message("stopping");
    g_main_loop_quit(loop);
    return G_SOURCE_CONTINUE;
}

typedef struct {
    EinsoraDaemonTls *tls;
    EinsoraApiServer *api;      /* NULL: the API is plain */
    EinsoraAccessProxy *access; /* NULL: the access proxy is plain */
} TlsReload;

/* SIGHUP: a certificate renewed on disk serves the connections from now
 * on; one that doesn't load leaves the last in place. */
static gboolean
reload_on_signal(gpointer user_data)
{
    TlsReload *reload = user_data;
    g_autoptr(GError) error = NULL;

    if (!einsora_daemon_tls_reload(reload->tls, &error)) {
        g_message("SIGHUP: the TLS certificate stays as it was: %s", error->message);
        return G_SOURCE_CONTINUE;
    }
    if (reload->api != NULL)
        einsora_api_server_set_tls_certificate(reload->api,
                                               einsora_daemon_tls_get_certificate(reload->tls));
    if (reload->access != NULL)
        einsora_access_proxy_set_tls_certificate(reload->access,
                                                 einsora_daemon_tls_get_certificate(reload->tls));
    g_message("SIGHUP: TLS certificate %s reloaded, fingerprint %s",
              einsora_daemon_tls_describe(reload->tls),
              einsora_daemon_tls_get_fingerprint(reload->tls));
    return G_SOURCE_CONTINUE;
}

/* A Lab's first start: what its operator does next. */
static void
explain_first_lab_start(const EinsoraDaemonSettings *settings, const char *uri,
                        EinsoraDaemonTls *tls)
{
    g_message("first start of a Lab server: people reach the API at %s from their machines", uri);
    if (tls != NULL)
        g_message("they pin its certificate with: einsora login <https://this-host:port> "
                  "--fingerprint %s (einsora-daemon info prints it again)",
                  einsora_daemon_tls_get_fingerprint(tls));
    g_message("add a person with: einsora-daemon --data-dir %s account create --tenant TEAM "
              "--email EMAIL --password-stdin (it prints their API token)",
              settings->data_dir);
}

static void
warn_if_plain_off_loopback(const EinsoraDaemonSettings *settings)
{
    if (settings->tls_mode == EINSORA_TLS_PLAIN_BEHIND_TLS_PROXY &&
        !einsora_address_is_loopback(settings->api_addr))
        g_message("TLS is off on %s (EINSORA_TLS=plain-behind-tls-proxy): plain HTTP, for a "
                  "proxy in front that ends TLS; without one, tokens and passwords cross the "
                  "network in clear",
                  settings->api_addr);
}

/* What an operator asks of a daemon's setup, changing nothing: the
 * certificate's fingerprint above all, to give to the Lab's people. */
static int
run_info(const EinsoraDaemonSettings *settings)
{
    g_autofree gchar *own = einsora_daemon_tls_identity_path(settings->data_dir);
    const char *cert = settings->tls_cert != NULL ? settings->tls_cert : own;

    g_print("einsora-daemon %s\n", EINSORA_VERSION);
    g_print("data directory: %s\n", settings->data_dir);
    g_print("api: %s\n", settings->api_addr);
    g_print("access proxy: %s\n", settings->access_addr);
    if (!einsora_daemon_tls_wanted(settings->tls_mode, settings->api_addr, settings->tls_cert)) {
        g_print("tls: off (%s)\n", settings->tls_mode == EINSORA_TLS_PLAIN_BEHIND_TLS_PROXY
                                       ? "plain-behind-tls-proxy: a proxy in front ends TLS"
                                       : "a loopback address");
        return EXIT_SUCCESS;
    }
    g_print("tls: on, certificate %s\n", cert);
    if (settings->tls_cert == NULL && !g_file_test(own, G_FILE_TEST_EXISTS)) {
        g_print("fingerprint: none yet; the daemon makes its certificate at its first start\n");
        return EXIT_SUCCESS;
    }
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(GTlsCertificate) certificate = g_tls_certificate_new_from_file(cert, &error);
        g_autofree gchar *fingerprint = NULL;

        if (certificate == NULL) {
            g_printerr("einsora-daemon info: %s: %s\n", cert, error->message);
            return EXIT_FAILURE;
        }
        fingerprint = einsora_tls_certificate_fingerprint(certificate);
        g_print("fingerprint: %s\n", fingerprint);
    }
    return EXIT_SUCCESS;
}

static int
run_migrate(const EinsoraDaemonSettings *settings)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraStore) store = open_store(settings, NULL, &error);

    if (store == NULL) {
        g_printerr("einsora-daemon migrate: %s\n", error->message);
        return EXIT_FAILURE;
    }
    /* Never the URL: it may hold a password. */
    g_print("einsora-daemon migrate: %s is up to date\n",
            settings->database_url != NULL ? "the PostgreSQL database" : settings->data_dir);
    return EXIT_SUCCESS;
}

static GStrv
gpu_class_names(EinsoraCatalog *catalog)
{
    GPtrArray *classes = einsora_catalog_get_classes(catalog);
    g_autoptr(GStrvBuilder) names = g_strv_builder_new();

    for (guint i = 0; i < classes->len; i++) {
        const EinsoraComputeClass *klass = g_ptr_array_index(classes, i);
        if (klass->devices > 0)
            g_strv_builder_add(names, klass->name);
    }
    return g_strv_builder_end(names);
}

/* Reads a password from standard input: one line, never echoed to logs. */
static gchar *
read_password(GError **error)
{
    char buffer[1100];
    gsize length;

    if (fgets(buffer, sizeof buffer, stdin) == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "--password-stdin: no password on standard input");
        return NULL;
    }
    length = strcspn(buffer, "\r\n");
    buffer[length] = '\0';
    {
        gchar *password = g_strdup(buffer);
        explicit_bzero(buffer, sizeof buffer);
        return password;
    }
}

/* `einsora-daemon account create`: an operator adds a tenant and its first
 * user, and gets an API token for it on standard output, once. */
/* einsora-daemon agent: this machine, enrolled already, as an agent of
 * the server it joined (docs/adr/0056): its drivers and inventory as in
 * Solo, the hub over the network with its client certificate. No store:
 * it knows what the server tells it. Docker (weak isolation) is refused
 * for every tenant here until the agent knows its owner. */
static void
on_tunnels_wanted(guint count, gpointer user_data)
{
    einsora_agent_tunnel_open(user_data, count);
}

static int
run_networked_agent(const EinsoraDaemonSettings *settings)
{
    g_auto(LocalMachine) machine = {0};
    g_autoptr(EinsoraRemoteHub) remote = NULL;
    g_autoptr(GPtrArray) drivers = g_ptr_array_new_with_free_func(g_object_unref);
    g_autoptr(GStrvBuilder) names = g_strv_builder_new();
    g_auto(GStrv) driver_names = NULL;
    g_autoptr(EinsoraInventory) inventory = NULL;
    g_autoptr(EinsoraNativeDriver) native = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *notebooks = NULL;
    g_autofree gchar *models = NULL;
    EinsoraNativeDriverConfig config;
    EinsoraLinuxInventorySource source = {"/", g_getenv("EINSORA_NVML_LIBRARY")};

    machine.lock = einsora_host_lock_acquire(settings->agent_state_dir, &error);
    if (machine.lock == NULL) {
        g_printerr("einsora-daemon agent: EINSORA_AGENT_STATE_DIR (--agent-state-dir): %s\n",
                   error->message);
        return EXIT_FAILURE;
    }
    remote = einsora_remote_hub_load(settings->agent_state_dir, &machine_id, &error);
    g_autoptr(EinsoraAgentTunnel) tunnel = NULL;
    if (remote == NULL) {
        g_printerr("einsora-daemon agent: %s\n", error->message);
        return EXIT_FAILURE;
    }
    config = native_config(settings, &notebooks, &models);
    if (!make_drivers(settings, &config, machine_id, drivers, names, &machine.run_lock, &native,
                      &machine.docker_made, &error)) {
        g_printerr("einsora-daemon agent: %s\n", error->message);
        return EXIT_FAILURE;
    }
    driver_names = g_strv_builder_end(names);
    inventory = einsora_linux_inventory_read(&source, &error);
    if (inventory == NULL) {
        g_printerr("einsora-daemon agent: reading what this machine has: %s\n", error->message);
        return EXIT_FAILURE;
    }
    g_strfreev(inventory->drivers);
    inventory->drivers = g_strdupv(driver_names);
    if (wants_driver(settings, "sim") && !pretend_capacity(inventory, &error)) {
        g_printerr("einsora-daemon agent: %s\n", error->message);
        return EXIT_FAILURE;
    }
    machine.loop = g_main_loop_new(NULL, FALSE);
    machine.agent =
        einsora_agent_new(EINSORA_SYNC_TRANSPORT(remote), machine_id,
                          einsora_remote_hub_get_owner_tenant_id(remote), inventory, drivers);
    {
        /* Its outbox and the desired state it last applied, beside its
         * key: what lets it go on through a disconnect or a restart. */
        g_autofree gchar *local_dir =
            g_build_filename(settings->agent_state_dir, EINSORA_AGENT_JOIN_DIR, "local", NULL);
        EinsoraAgentLocalStore *local = einsora_agent_local_store_open(local_dir, &error);

        if (local == NULL) {
            g_printerr("einsora-daemon agent: %s\n", error->message);
            return EXIT_FAILURE;
        }
        einsora_agent_use_local_store(machine.agent, local);
    }
    machine.inventory = g_steal_pointer(&inventory);
    g_unix_signal_add(SIGINT, quit_on_signal, machine.loop);
    g_unix_signal_add(SIGTERM, quit_on_signal, machine.loop);
    /* Streams for the server's access proxy, opened when a sync's answer
     * asks (docs/adr/0059): its reports say it opens them from the first. */
    tunnel = einsora_agent_tunnel_new(
        einsora_remote_hub_get_server(remote), einsora_remote_hub_get_fingerprint(remote),
        einsora_remote_hub_get_certificate(remote), EINSORA_ACCESS_SOURCE(machine.agent));
    einsora_agent_set_tunnels_wanted(machine.agent, on_tunnels_wanted, tunnel);
    einsora_agent_tunnel_start(tunnel);
    einsora_agent_start(machine.agent);
    start_probes(settings, &machine);
    g_message("agent of %s as machine %s: syncing over mutual TLS",
              einsora_remote_hub_get_server(remote), machine_id);
    g_main_loop_run(machine.loop);
    einsora_agent_tunnel_stop(tunnel);
    einsora_agent_stop(machine.agent);
    if (machine.fatal != NULL) {
        g_printerr("einsora-daemon agent: %s\n", machine.fatal->message);
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

/* The access proxy waits for a stream from that machine: its agent is
 * asked through its sync. */
static gboolean
want_tunnels(const char *machine_id, guint count, gpointer user_data)
{
    return einsora_hub_want_tunnels(user_data, machine_id, count);
}

/* einsora-daemon agent --join: enrolment (docs/adr/0055); without it,
 * the enrolled agent's run. */
static int
run_agent(const EinsoraDaemonSettings *settings, const char *server, const char *token,
          const char *fingerprint)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *machine_id = NULL;

    if (server == NULL)
        return run_networked_agent(settings);
    machine_id = einsora_agent_join(settings->agent_state_dir, server, token, fingerprint, &error);
    if (machine_id == NULL) {
        g_printerr("einsora-daemon agent --join: %s\n", error->message);
        return EXIT_FAILURE;
    }
    g_print("enrolled with %s as machine %s; its key and certificate are in %s/%s\n", server,
            machine_id, settings->agent_state_dir, EINSORA_AGENT_JOIN_DIR);
    return EXIT_SUCCESS;
}

static int
run_account_create(const EinsoraDaemonSettings *settings, const char *tenant, const char *email,
                   gboolean password_stdin, gboolean join, gboolean admin)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraStore) store = NULL;
    g_autoptr(EinsoraAuth) auth = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(EinsoraTenant) existing = NULL;
    g_autofree gchar *password = NULL;
    g_autofree gchar *secret = NULL;

    if (tenant == NULL || email == NULL) {
        g_printerr("einsora-daemon account create: --tenant and --email are required\n");
        return 2;
    }
    if (password_stdin && (password = read_password(&error)) == NULL) {
        g_printerr("einsora-daemon account create: %s\n", error->message);
        return EXIT_FAILURE;
    }
    store = open_store(settings, NULL, &error);
    if (store == NULL) {
        g_printerr("einsora-daemon account create: %s\n", error->message);
        return EXIT_FAILURE;
    }
    auth = einsora_auth_new(EINSORA_STORE(store), einsora_now_real, NULL);
    if (join) {
        existing = einsora_store_find_tenant_by_name(EINSORA_STORE(store), tenant, &error);
        if (existing == NULL) {
            g_printerr("einsora-daemon account create: --join: no tenant named \"%s\"\n", tenant);
            return EXIT_FAILURE;
        }
    }
    /* The operator on the machine: no admin account needed (NULL actor). */
    user = einsora_auth_admin_create_account(auth, NULL, existing != NULL ? existing->id : NULL,
                                             existing != NULL ? NULL : tenant, email, password,
                                             admin, &secret, &error);
    if (password != NULL)
        explicit_bzero(password, strlen(password));
    if (user == NULL) {
        g_printerr("einsora-daemon account create: %s\n", error->message);
        return EXIT_FAILURE;
    }
    g_print("%s\n", secret);
    return EXIT_SUCCESS;
}

/* Events another process sharing the Postgres store appended. */
typedef struct {
    EinsoraService *service;
    EinsoraController *controller; /* NULL where no controller runs */
    EinsoraHub *hub;               /* likewise */
} EventsElsewhere;

static void
on_events_elsewhere(EinsoraPgStore *store, const char *tenant_id, gpointer user_data)
{
    EventsElsewhere *elsewhere = user_data;

    einsora_service_events_added_elsewhere(elsewhere->service, tenant_id);
    /* A create or a stop through another process's API: act now. */
    if (elsewhere->controller != NULL)
        einsora_controller_wake(elsewhere->controller);
}

/* Another process's controller placed on, or took off, a machine whose
 * agent may be syncing here. */
static void
on_machine_changed_elsewhere(EinsoraPgStore *store, const char *machine_id, gpointer user_data)
{
    EventsElsewhere *elsewhere = user_data;

    if (elsewhere->hub != NULL)
        einsora_hub_wake_machine(elsewhere->hub, machine_id);
}

/* HOST:PORT's port (checked by then). */
static guint
address_port(const char *address)
{
    g_autoptr(GInetSocketAddress) parsed = einsora_http_address_parse(address, NULL);

    return parsed != NULL ? g_inet_socket_address_get_port(parsed) : 0;
}

/* The access proxy, beside the hub whose agent hands it the way in. */
static gboolean
start_access_proxy(const EinsoraDaemonSettings *settings, EinsoraService *service,
                   EinsoraAuth *auth, LocalMachine *machine, EinsoraMetrics *metrics,
                   EinsoraDaemonTls *tls, EinsoraAccessProxy **out, GError **error)
{
    g_autoptr(EinsoraAccessProxy) access = einsora_access_proxy_new(
        service, auth, EINSORA_WORKLOAD_ACCESS(machine->hub), einsora_now_real, NULL);

    einsora_access_proxy_set_metrics(access, metrics);
    if (tls != NULL)
        einsora_access_proxy_set_tls_certificate(access, einsora_daemon_tls_get_certificate(tls));
    if (!einsora_access_proxy_listen(access, settings->access_addr, error)) {
        g_prefix_error(error, "EINSORA_ACCESS_ADDR (--access-listen): ");
        return FALSE;
    }
    *out = g_steal_pointer(&access);
    return TRUE;
}

static int
run_daemon(const EinsoraDaemonSettings *settings)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = NULL;
    g_autoptr(EinsoraStore) store = NULL;
    g_autoptr(EinsoraService) service = NULL;
    g_autoptr(EinsoraAuth) auth = NULL;
    g_autoptr(EinsoraApiServer) api = NULL;
    g_autoptr(EinsoraAccessProxy) access = NULL;
    g_autoptr(EinsoraMeter) meter = NULL;
    g_autoptr(EinsoraUser) owner = NULL;
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    g_autoptr(EinsoraDaemonTls) tls = NULL;
    TlsReload reload = {NULL};
    guint reload_id = 0;
    guint watchdog_id = 0;
    g_auto(LocalMachine) machine = {NULL};
    EventsElsewhere elsewhere = {NULL};
    GMainLoop *loop = NULL;
    g_auto(GStrv) gpu_classes = NULL;
    g_autofree gchar *uri = NULL;
    const char *region;
    gboolean api_tls;
    gboolean access_tls;

    /* Everything is checked before anything starts: nothing runs
     * half-configured. */
    catalog = einsora_catalog_load(settings->catalog, &error);
    if (catalog == NULL) {
        g_printerr("einsora-daemon: EINSORA_CATALOG (--catalog): %s\n", error->message);
        return EXIT_FAILURE;
    }
    region =
        settings->region != NULL ? settings->region : einsora_catalog_get_default_region(catalog);
    if (einsora_catalog_lookup_region(catalog, region) == NULL) {
        g_printerr("einsora-daemon: EINSORA_REGION (--region): \"%s\" is not a region of the "
                   "catalog\n",
                   region);
        return EXIT_FAILURE;
    }
    if (!check_can_listen(settings->api_addr, "EINSORA_API_ADDR", "--listen", &error) ||
        !check_can_listen(settings->access_addr, "EINSORA_ACCESS_ADDR", "--access-listen",
                          &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    /* Before the store: a certificate that doesn't load changes nothing.
     * The access proxy off loopback takes the API's identity, made for it
     * if the API has none (docs/adr/0053). */
    api_tls = einsora_daemon_tls_wanted(settings->tls_mode, settings->api_addr, settings->tls_cert);
    access_tls = einsora_daemon_tls_wanted(settings->tls_mode, settings->access_addr, NULL);
    if (!einsora_daemon_tls_new(api_tls ? settings->tls_mode : EINSORA_TLS_ON,
                                api_tls ? settings->api_addr : settings->access_addr,
                                settings->tls_cert, settings->tls_key, settings->data_dir, &tls,
                                &error)) {
        g_printerr("einsora-daemon: TLS: %s\n", error->message);
        return EXIT_FAILURE;
    }
    store = open_store(settings, metrics, &error);
    if (store == NULL) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    einsora_metric_set(einsora_metrics_gauge(metrics, "einsora_build_info",
                                             "Always 1; the version of this einsora-daemon.",
                                             (const char *const[]){"version", NULL}),
                       (const char *const[]){EINSORA_VERSION, NULL}, 1);
    service = einsora_service_new(EINSORA_STORE(store), catalog, einsora_now_real, NULL);
    einsora_service_set_default_idle_timeout(service, settings->idle_timeout_s);
    auth = einsora_auth_new(EINSORA_STORE(store), einsora_now_real, NULL);
    gpu_classes = gpu_class_names(catalog);
    if (!einsora_auth_ensure_first_run(auth, settings->data_dir, (const char *const *)gpu_classes,
                                       SOLO_GPUS_PER_CLASS, &owner, &error)) {
        g_printerr("einsora-daemon: first run: %s\n", error->message);
        return EXIT_FAILURE;
    }
    if (owner != NULL)
        g_message("first run: created %s; its API token is in %s/token", owner->email,
                  settings->data_dir);

    /* Its first pass runs before the API listens, so that usage read at
     * once after a start is already what the timeline says. */
    if (settings->runs_meter) {
        meter = einsora_meter_new(EINSORA_STORE(store), catalog, einsora_now_real, NULL);
        einsora_meter_start(meter, settings->metering_interval_us);
    }

    machine.loop = g_main_loop_new(NULL, FALSE);
    loop = machine.loop;
    if (settings->runs_machine && !start_machine(settings, EINSORA_STORE(store), catalog, service,
                                                 metrics, region, &machine, &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    /* Other processes sharing the store (docs/adr/0062): their events
     * reach this one's change feeds, and wake its controller. */
    if (EINSORA_IS_PG_STORE(store)) {
        elsewhere = (EventsElsewhere){
            .service = service, .controller = machine.controller, .hub = machine.hub};
        /* Other processes' hubs may hold some of the region's syncs. */
        if (machine.hub != NULL)
            einsora_hub_set_shared(machine.hub, TRUE);
        if (!einsora_pg_store_listen(EINSORA_PG_STORE(store), &error)) {
            g_printerr("einsora-daemon: EINSORA_DATABASE_URL: %s\n", error->message);
            return EXIT_FAILURE;
        }
        g_signal_connect(store, "events-appended", G_CALLBACK(on_events_elsewhere), &elsewhere);
        g_signal_connect(store, "machine-changed", G_CALLBACK(on_machine_changed_elsewhere),
                         &elsewhere);
    }
    if (!settings->runs_api)
        goto serve;

    /* Before either listener counts what it may hold. */
    einsora_http_raise_open_file_limit();
    /* The access proxy, beside the hub whose agent hands it the way in. */
    if (settings->runs_machine && !start_access_proxy(settings, service, auth, &machine, metrics,
                                                      access_tls ? tls : NULL, &access, &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    {
        const char *text = g_getenv("EINSORA_WEBSOCKET_MAX_MESSAGE");
        guint64 bytes = 0;
        if (text != NULL) {
            if (!g_ascii_string_to_unsigned(text, 10, 1, G_MAXINT64, &bytes, NULL)) {
                g_printerr("einsora-daemon: EINSORA_WEBSOCKET_MAX_MESSAGE: \"%s\" is not a "
                           "number of bytes\n",
                           text);
                return EXIT_FAILURE;
            }
            if (access != NULL)
                einsora_access_proxy_set_websocket_max_message(access, bytes);
        }
    }
    api = einsora_api_server_new(service, auth, einsora_now_real, NULL);
    /* An api process's links lead to the access proxy the controller
     * process beside it serves at EINSORA_ACCESS_ADDR. */
    if (access != NULL)
        einsora_api_server_set_access_port(api, einsora_access_proxy_get_port(access));
    else if (address_port(settings->access_addr) > 0)
        einsora_api_server_set_access_port(api, address_port(settings->access_addr));
    einsora_api_server_set_access_tls(api, access_tls);
    einsora_api_server_set_metrics_open_to_loopback(
        api, g_str_equal(settings->metrics_open, "loopback"));
    if (api_tls) {
        g_autofree gchar *own = einsora_daemon_tls_identity_path(settings->data_dir);
        g_autofree gchar *own_dir = g_path_get_dirname(own);

        einsora_api_server_set_tls_certificate(api, einsora_daemon_tls_get_certificate(tls));
        /* Agents' certificates are signed by the daemon's own CA, whoever
         * signed the API's (docs/adr/0055). */
        if (!einsora_api_server_set_agent_ca_dir(api, own_dir, &error)) {
            g_printerr("einsora-daemon: the CA for agents' certificates: %s\n", error->message);
            return EXIT_FAILURE;
        }
        /* Agents sync with, and open streams to, the process whose hub
         * holds their machines (docs/adr/0059, 0062). */
        if (machine.hub != NULL) {
            einsora_api_server_set_agent_hub(api, EINSORA_SYNC_TRANSPORT(machine.hub));
            g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();

            einsora_tunnels_set_want(tunnels, want_tunnels, machine.hub);
            einsora_api_server_set_tunnels(api, tunnels);
            einsora_access_proxy_set_tunnels(access, tunnels);
        }
    }
    if (!einsora_api_server_listen(api, settings->api_addr, &error)) {
        g_printerr("einsora-daemon: EINSORA_API_ADDR (--listen): %s\n", error->message);
        return EXIT_FAILURE;
    }
    uri = einsora_api_server_get_uri(api);

    if (access == NULL) {
        /* No proxy here: the controller process's serves the links. */
    } else if (access_tls) {
        g_autofree gchar *access_uri = einsora_access_proxy_get_uri(access);
        g_message("access proxy listening on %s (TLS: browsers open notebooks through the relay "
                  "`einsora open` runs on their machine)",
                  access_uri);
    } else
        g_message("access proxy listening on http://127.0.0.1:%u/ (notebooks open at "
                  "http://w-<id>.localhost:%u/)",
                  einsora_access_proxy_get_port(access), einsora_access_proxy_get_port(access));
    g_message("api listening on %s", uri);
    if (tls != NULL && api_tls) {
        g_message("TLS certificate %s, fingerprint %s", einsora_daemon_tls_describe(tls),
                  einsora_daemon_tls_get_fingerprint(tls));
        reload = (TlsReload){.tls = tls, .api = api, .access = access_tls ? access : NULL};
        reload_id = g_unix_signal_add(SIGHUP, reload_on_signal, &reload);
    }
    warn_if_plain_off_loopback(settings);
    if (owner != NULL && !einsora_address_is_loopback(settings->api_addr))
        explain_first_lab_start(settings, uri, tls);

serve:
    g_unix_signal_add(SIGINT, quit_on_signal, loop);
    g_unix_signal_add(SIGTERM, quit_on_signal, loop);
    g_message("ready: region %s, role %s, data in %s, catalog %s", region, settings->role,
              settings->data_dir, einsora_catalog_get_origin(catalog));
    if (settings->runs_machine)
        start_probes(settings, &machine);
    {
        g_autofree gchar *status = uri != NULL
                                       ? g_strdup_printf("READY=1\nSTATUS=api on %s", uri)
                                       : g_strdup_printf("READY=1\nSTATUS=%s", settings->role);
        einsora_service_notify(status);
    }
    watchdog_id = einsora_service_notify_start_watchdog();
    g_main_loop_run(loop);
    einsora_service_notify("STOPPING=1");
    g_clear_handle_id(&watchdog_id, g_source_remove);
    g_clear_handle_id(&reload_id, g_source_remove);
    if (meter != NULL)
        einsora_meter_stop(meter);
    if (machine.controller != NULL) {
        einsora_controller_stop(machine.controller);
        einsora_agent_stop(machine.agent);
    }
    if (EINSORA_IS_PG_STORE(store))
        g_signal_handlers_disconnect_by_data(store, &elsewhere);
    if (machine.fatal != NULL) {
        g_printerr("einsora-daemon: %s\n", machine.fatal->message);
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

int
main(int argc, char **argv)
{
    g_auto(EinsoraDaemonSettings) settings = {NULL};
    g_autoptr(GOptionContext) context = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *tenant = NULL;
    g_autofree gchar *email = NULL;
    gboolean password_stdin = FALSE;
    gboolean join = FALSE;
    gboolean admin = FALSE;
    gboolean version = FALSE;
    g_autofree gchar *join_server = NULL;
    g_autofree gchar *join_token = NULL;
    g_autofree gchar *join_fingerprint = NULL;
    const GOptionEntry entries[] = {
        {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &settings.data_dir,
         "Where the database and the token file live (EINSORA_DATA_DIR)", "DIR"},
        {"role", 0, 0, G_OPTION_ARG_STRING, &settings.role,
         "Which parts run here: api, controller, metering or all (EINSORA_ROLE, default all); "
         "all but all need EINSORA_DATABASE_URL",
         "ROLE"},
        {"listen", 0, 0, G_OPTION_ARG_STRING, &settings.api_addr,
         "The /v1 API's address (EINSORA_API_ADDR, default 127.0.0.1:8080)", "HOST:PORT"},
        {"access-listen", 0, 0, G_OPTION_ARG_STRING, &settings.access_addr,
         "The access proxy's address (EINSORA_ACCESS_ADDR, default 127.0.0.1:8090)", "HOST:PORT"},
        {"region", 0, 0, G_OPTION_ARG_STRING, &settings.region,
         "The region this daemon reconciles (EINSORA_REGION, default the catalog's first)", "NAME"},
        {"catalog", 0, 0, G_OPTION_ARG_FILENAME, &settings.catalog,
         "A catalog file that replaces the built-in one (EINSORA_CATALOG)", "FILE"},
        {"controller-interval", 0, 0, G_OPTION_ARG_STRING, &settings.controller_interval,
         "How often the controller reconciles (EINSORA_CONTROLLER_INTERVAL, default 5s)",
         "DURATION"},
        {"controller-wake", 0, 0, G_OPTION_ARG_STRING, &settings.controller_wake,
         "on: a create, start, stop or delete, and an agent's report, wake the controller at "
         "once; off: it acts only on its interval (EINSORA_CONTROLLER_WAKE, default on)",
         "on|off"},
        {"metering-interval", 0, 0, G_OPTION_ARG_STRING, &settings.metering_interval,
         "How often usage accounting turns the timeline into hourly usage records "
         "(EINSORA_METERING_INTERVAL, default 60s)",
         "DURATION"},
        {"aging-after", 0, 0, G_OPTION_ARG_STRING, &settings.aging_after,
         "A request that has waited this long and doesn't fit keeps younger ones of its kind of "
         "capacity from backfilling ahead of it (EINSORA_AGING_AFTER, default 10m)",
         "DURATION|off"},
        {"idle-timeout", 0, 0, G_OPTION_ARG_STRING, &settings.idle_timeout,
         "Stop a workload after this long idle, unless its create says otherwise "
         "(EINSORA_IDLE_TIMEOUT, default off)",
         "DURATION|off"},
        {"machine-owner", 0, 0, G_OPTION_ARG_STRING, &settings.machine_owner,
         "The tenant that owns this machine (EINSORA_MACHINE_OWNER, default local)", "TENANT"},
        {"drivers", 0, 0, G_OPTION_ARG_STRING, &settings.drivers,
         "Drivers the in-process agent uses, comma-separated: linux-native, sim (runs nothing, "
         "for development and tests); empty for none (EINSORA_DRIVERS, default the real ones "
         "that work here)",
         "LIST"},
        {"agent-run-dir", 0, 0, G_OPTION_ARG_FILENAME, &settings.agent_run_dir,
         "Where notebooks' sockets, state files and logs live (EINSORA_AGENT_RUN_DIR, default "
         "~/.einsora/run)",
         "DIR"},
        {"notebook-network", 0, 0, G_OPTION_ARG_STRING, &settings.notebook_network,
         "none, or outbound: notebooks reach out through pasta (EINSORA_NOTEBOOK_NETWORK, "
         "default none)",
         "MODE"},
        {"docker-host", 0, 0, G_OPTION_ARG_STRING, &settings.docker_host,
         "the Docker Engine docker notebooks run on, as unix:///PATH (EINSORA_DOCKER_HOST, "
         "default unix:///var/run/docker.sock)",
         "URL"},
        {"llama-server", 0, 0, G_OPTION_ARG_FILENAME, &settings.llama_server,
         "the llama-server endpoints run (EINSORA_LLAMA_SERVER, default: llama-server on PATH)",
         "PATH"},
        {"metrics-open", 0, 0, G_OPTION_ARG_STRING, &settings.metrics_open,
         "loopback: GET /metrics answers requests from this machine without a token; off: only "
         "to the machine owner's token (EINSORA_METRICS_OPEN, default off)",
         "off|loopback"},
        {"tls", 0, 0, G_OPTION_ARG_STRING, &settings.tls,
         "auto: the API speaks TLS when its address isn't loopback; on: whatever the address; "
         "plain-behind-tls-proxy: never, for a proxy in front that ends TLS (EINSORA_TLS, "
         "default auto)",
         "auto|on|plain-behind-tls-proxy"},
        {"tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &settings.tls_cert,
         "The API's TLS certificate (and its chain), PEM, read again on SIGHUP; without it, the "
         "daemon's own in DATA_DIR/tls (EINSORA_TLS_CERT)",
         "FILE"},
        {"tls-key", 0, 0, G_OPTION_ARG_FILENAME, &settings.tls_key,
         "The private key of --tls-cert, PEM (EINSORA_TLS_KEY)", "FILE"},
        {"agent-state-dir", 0, 0, G_OPTION_ARG_FILENAME, &settings.agent_state_dir,
         "Where the agent keeps this machine's ID and its lock (EINSORA_AGENT_STATE_DIR, "
         "default the data directory)",
         "DIR"},
        {"tenant", 0, 0, G_OPTION_ARG_STRING, &tenant, "account create: the new tenant's name",
         "NAME"},
        {"email", 0, 0, G_OPTION_ARG_STRING, &email, "account create: the new user's email",
         "EMAIL"},
        {"password-stdin", 0, 0, G_OPTION_ARG_NONE, &password_stdin,
         "account create: read a password from standard input", NULL},
        {"join", 0, 0, G_OPTION_ARG_NONE, &join,
         "account create: add a member to the existing tenant --tenant names, not a new tenant",
         NULL},
        {"admin", 0, 0, G_OPTION_ARG_NONE, &admin,
         "account create: the account is a Lab admin (manages accounts and quotas)", NULL},
        {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL},

        {NULL},
    };

    setlocale(LC_ALL, "");
    context = g_option_context_new("[migrate | info | account create | agent [--join URL]]");
    g_option_context_set_summary(
        context, "Runs Einsora: the /v1 API over the store, the catalog and the service.\n"
                 "\"migrate\" applies the database migrations and exits; \"info\" prints the "
                 "setup, with the TLS certificate's fingerprint; \"account create\" adds a "
                 "tenant and its first user and prints an API token for it; \"agent --join\" "
                 "enrols this machine as an agent of a Lab server, and \"agent\" then runs "
                 "that agent, syncing with the server over mutual TLS.");
    g_option_context_add_main_entries(context, entries, NULL);
    /* `agent --join URL` and `account create --join` share a name: the
     * agent's options are a group of their own, taken when the command is
     * agent (docs/adr/0055). */
    for (int i = 1; i < argc; i++) {
        if (g_strcmp0(argv[i], "agent") == 0) {
            const GOptionEntry agent_entries[] = {
                {"join", 0, 0, G_OPTION_ARG_STRING, &join_server,
                 "Enrol this machine with the Lab server at this URL (einsora machines add "
                 "prints the whole command)",
                 "https://SERVER"},
                {"token", 0, 0, G_OPTION_ARG_STRING, &join_token, "The enrolment token", "enr_…"},
                {"fingerprint", 0, 0, G_OPTION_ARG_STRING, &join_fingerprint,
                 "The server certificate's fingerprint: nothing is sent to another", "SHA256:…"},
                {NULL},
            };
            GOptionGroup *group = g_option_group_new("agent", "agent --join: enrol this machine",
                                                     "agent options", NULL, NULL);

            g_option_group_add_entries(group, agent_entries);
            /* The group's entries win over the main ones of the same name. */
            g_option_context_free(g_steal_pointer(&context));
            context = g_option_context_new("agent --join URL --token ENR --fingerprint SHA256");
            g_option_context_set_main_group(context, group);
            {
                GOptionGroup *main_group = g_option_group_new("daemon", "The daemon's settings",
                                                              "daemon options", NULL, NULL);
                g_option_group_add_entries(main_group, entries);
                g_option_context_add_group(context, main_group);
            }
            break;
        }
    }
    if (!g_option_context_parse(context, &argc, &argv, &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return 2;
    }
    if (version) {
        g_print("einsora-daemon %s\n", EINSORA_VERSION);
        return EXIT_SUCCESS;
    }
    /* Before anything is touched: without the kernel's random generator
     * no ID can be made (docs/adr/0022). */
    if (!einsora_uuid_check_random(&error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    if (!resolve_settings(&settings, &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    if (argc == 2 && g_strcmp0(argv[1], "migrate") == 0)
        return run_migrate(&settings);
    if (argc == 2 && g_strcmp0(argv[1], "info") == 0)
        return run_info(&settings);
    if (argc == 3 && g_strcmp0(argv[1], "account") == 0 && g_strcmp0(argv[2], "create") == 0)
        return run_account_create(&settings, tenant, email, password_stdin, join, admin);
    if (argc == 2 && g_strcmp0(argv[1], "agent") == 0)
        return run_agent(&settings, join_server, join_token, join_fingerprint);
    if (argc > 1) {
        g_printerr("einsora-daemon: unknown command \"%s\"; the commands are migrate, info, "
                   "account create and agent\n",
                   argv[1]);
        return 2;
    }
    return run_daemon(&settings);
}
