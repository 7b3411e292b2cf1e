#define G_LOG_DOMAIN "einsora-auth"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-auth.h"
#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-uuid.h"

/* 2026-01-01T00:00:00Z */
#define START_US G_GINT64_CONSTANT(1767225600000000)
#define ANN_PASSWORD "correct horse battery staple"
#define ANN_EMAIL "ann@acme.example"
#define SECRET_BODY_CHARS 43 /* 32 bytes in base64url, unpadded */

typedef struct {
    gint64 now_us;
} ManualClock;

static gint64
manual_now(gpointer user_data)
{
    ManualClock *clock = user_data;
    return clock->now_us;
}

typedef struct {
    gchar *dir;
    gchar *db_path;
    ManualClock clock;
    EinsoraSqliteStore *sqlite;
    EinsoraStore *store; /* the same object */
    EinsoraAuth *auth;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    f->dir = einsora_test_dir_new();
    f->db_path = g_build_filename(f->dir, "einsora.db", NULL);
    f->clock.now_us = START_US;
    f->sqlite = einsora_sqlite_store_open(f->db_path, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(f->sqlite, START_US, &error));
    g_assert_no_error(error);
    einsora_sqlite_store_set_clock(f->sqlite, manual_now, &f->clock);
    f->store = EINSORA_STORE(f->sqlite);
    f->auth = einsora_auth_new(f->store, manual_now, &f->clock);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_assert_finalize_object(f->auth);
    g_assert_finalize_object(f->sqlite);
    einsora_test_dir_remove(f->dir);
    g_free(f->db_path);
    g_free(f->dir);
}

static void
exec_sql(Fixture *f, const char *sql)
{
    char *message = NULL;
    int rc = sqlite3_exec(einsora_sqlite_store_get_handle(f->sqlite), sql, NULL, NULL, &message);

    if (rc != SQLITE_OK)
        g_error("%s: %s", sql, message);
}

/* Waiting for async results while counting how often the main context got
 * to run other work meanwhile. */

typedef struct {
    GAsyncResult *result;
    guint ticks;
} AsyncWait;

static void
async_ready(GObject *source, GAsyncResult *result, gpointer user_data)
{
    AsyncWait *wait = user_data;
    wait->result = g_object_ref(result);
}

static gboolean
async_tick(gpointer user_data)
{
    AsyncWait *wait = user_data;
    wait->ticks++;
    return G_SOURCE_CONTINUE;
}

static void
async_wait(AsyncWait *wait)
{
    guint tick_id = g_timeout_add(1, async_tick, wait);

    while (wait->result == NULL)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(tick_id);
}

static void
async_wait_clear(AsyncWait *wait)
{
    g_clear_object(&wait->result);
}

/* The credential pool's work hook: counts the jobs that reached argon2,
 * and can hold them there until opened, or cancel on their way in. */

typedef struct {
    GMutex lock;
    GCond cond;
    guint entered;
    gboolean closed;
    GCancellable *cancel_on_entry;
} WorkGate;

static void
work_gate_hook(gpointer user_data)
{
    WorkGate *gate = user_data;

    g_mutex_lock(&gate->lock);
    gate->entered++;
    g_cond_broadcast(&gate->cond);
    if (gate->cancel_on_entry != NULL)
        g_cancellable_cancel(gate->cancel_on_entry);
    while (gate->closed)
        g_cond_wait(&gate->cond, &gate->lock);
    g_mutex_unlock(&gate->lock);
}

static void
work_gate_install(WorkGate *gate, gboolean closed)
{
    g_mutex_init(&gate->lock);
    g_cond_init(&gate->cond);
    gate->closed = closed;
    einsora_credential_set_work_hook(work_gate_hook, gate);
}

static guint
work_gate_entered(WorkGate *gate)
{
    guint entered;

    g_mutex_lock(&gate->lock);
    entered = gate->entered;
    g_mutex_unlock(&gate->lock);
    return entered;
}

static void
work_gate_open(WorkGate *gate)
{
    g_mutex_lock(&gate->lock);
    gate->closed = FALSE;
    g_cond_broadcast(&gate->cond);
    g_mutex_unlock(&gate->lock);
}

/* Only once no job can be inside the hook. */
static void
work_gate_remove(WorkGate *gate)
{
    einsora_credential_set_work_hook(NULL, NULL);
    g_mutex_clear(&gate->lock);
    g_cond_clear(&gate->cond);
}

/* Accounts and actors */

static EinsoraUser *
create_account(Fixture *f, const char *tenant_name, const char *email, const char *password)
{
    g_autoptr(GError) error = NULL;
    EinsoraUser *user = einsora_auth_create_account(f->auth, tenant_name, email, password,
                                                    EINSORA_USER_ROLE_OWNER, FALSE, &error);

    g_assert_no_error(error);
    g_assert_nonnull(user);
    return user;
}

static EinsoraActor *
actor_for(const EinsoraUser *user)
{
    return einsora_actor_new(user->tenant_id, user->id, user->email, "test");
}

static EinsoraApiToken *
create_token(Fixture *f, const EinsoraActor *actor, const char *name, gchar **secret)
{
    g_autoptr(GError) error = NULL;
    EinsoraApiToken *token = einsora_auth_create_token(f->auth, actor, name, secret, &error);

    g_assert_no_error(error);
    g_assert_nonnull(token);
    return token;
}

static void
assert_token_refused(Fixture *f, const char *secret)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraActor) actor = einsora_auth_authenticate_token(f->auth, secret, &error);

    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_assert_cmpstr(error->message, ==, "invalid or revoked API token");
    g_assert_null(actor);
}

static EinsoraActor *
authenticate_token(Fixture *f, const char *secret)
{
    g_autoptr(GError) error = NULL;
    EinsoraActor *actor = einsora_auth_authenticate_token(f->auth, secret, &error);

    g_assert_no_error(error);
    g_assert_nonnull(actor);
    return actor;
}

typedef struct {
    EinsoraActor *actor;
    gchar *session;
    gchar *csrf;
} Login;

static void
login_clear(Login *login)
{
    g_clear_pointer(&login->actor, einsora_actor_free);
    g_clear_pointer(&login->session, g_free);
    g_clear_pointer(&login->csrf, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Login, login_clear)

/* Signs in and waits; returns the main context's ticks meanwhile. */
static guint
login(Fixture *f, const char *email, const char *password, Login *out, GError **error)
{
    AsyncWait wait = {0};
    guint ticks;

    einsora_auth_login_async(f->auth, email, password, NULL, async_ready, &wait);
    async_wait(&wait);
    einsora_auth_login_finish(f->auth, wait.result, &out->actor, &out->session, &out->csrf, error);
    ticks = wait.ticks;
    async_wait_clear(&wait);
    return ticks;
}

static void
assert_login_refused(Fixture *f, const char *email, const char *password)
{
    g_autoptr(GError) error = NULL;
    g_auto(Login) out = {0};

    login(f, email, password, &out, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_assert_cmpstr(error->message, ==, "wrong email or password");
    g_assert_null(out.actor);
    g_assert_null(out.session);
    g_assert_null(out.csrf);
}

/* Credentials */

static void
assert_secret_form(const char *secret, const char *prefix)
{
    const char *body;

    g_assert_nonnull(secret);
    g_assert_true(g_str_has_prefix(secret, prefix));
    body = secret + strlen(prefix);
    g_assert_cmpuint(strlen(body), ==, SECRET_BODY_CHARS);
    for (const char *p = body; *p != '\0'; p++)
        g_assert_true(g_ascii_isalnum(*p) || *p == '-' || *p == '_');
}

static void
test_secret_form_and_distinct(void)
{
    const char *const prefixes[] = {EINSORA_CREDENTIAL_TOKEN_PREFIX,
                                    EINSORA_CREDENTIAL_SESSION_PREFIX,
                                    EINSORA_CREDENTIAL_CSRF_PREFIX};
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint i = 0; i < G_N_ELEMENTS(prefixes); i++) {
        for (guint n = 0; n < 200; n++) {
            gchar *secret = einsora_credential_new_secret(prefixes[i]);

            assert_secret_form(secret, prefixes[i]);
            /* Any repeat among 600 draws of 256 bits means a broken source. */
            g_assert_true(g_hash_table_add(seen, secret));
        }
    }
}

static void
test_sha256_known_vectors(void)
{
    const struct {
        const char *input;
        const char *hex;
    } vectors[] = {
        /* FIPS 180-2, appendix B */
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(vectors); i++) {
        g_autofree gchar *hex = einsora_credential_sha256_hex(vectors[i].input);
        g_assert_cmpstr(hex, ==, vectors[i].hex);
    }
}

static void
test_display_prefix(void)
{
    g_autofree gchar *prefix = einsora_credential_display_prefix("tsk_Ab3xQ9-longer-secret");
    g_autofree gchar *short_one = einsora_credential_display_prefix("tsk_");

    g_assert_cmpstr(prefix, ==, "tsk_Ab3x");
    g_assert_cmpstr(short_one, ==, "tsk_");
}

static void
test_equal(void)
{
    g_assert_true(einsora_credential_equal("abc", "abc"));
    g_assert_true(einsora_credential_equal("", ""));
    g_assert_false(einsora_credential_equal("abc", "abd"));
    g_assert_false(einsora_credential_equal("abc", "abcd"));
    g_assert_false(einsora_credential_equal("abcd", "abc"));
    g_assert_false(einsora_credential_equal("abc", ""));
    g_assert_false(einsora_credential_equal(NULL, "abc"));
    g_assert_false(einsora_credential_equal("abc", NULL));
    g_assert_false(einsora_credential_equal(NULL, NULL));
}

static void
test_password_round_trip(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *hash = einsora_credential_hash_password(ANN_PASSWORD, &error);
    g_autofree gchar *again = NULL;

    g_assert_no_error(error);
    g_assert_true(g_str_has_prefix(hash, "$argon2id$v=19$m=65536,t=3,p=1$"));
    g_assert_null(strstr(hash, ANN_PASSWORD));
    g_assert_true(einsora_credential_verify_password(hash, ANN_PASSWORD));
    g_assert_false(einsora_credential_verify_password(hash, "correct horse battery stapler"));
    g_assert_false(einsora_credential_verify_password(hash, ""));
    g_assert_false(einsora_credential_verify_password(hash, NULL));
    g_assert_false(einsora_credential_verify_password(NULL, ANN_PASSWORD));
    g_assert_false(einsora_credential_verify_password("not a hash", ANN_PASSWORD));
    /* Only argon2id is accepted, whatever else libargon2 could verify. */
    g_assert_false(einsora_credential_verify_password(hash + 1, ANN_PASSWORD));

    /* A fresh salt each time. */
    again = einsora_credential_hash_password(ANN_PASSWORD, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(again, !=, hash);
    g_assert_true(einsora_credential_verify_password(again, ANN_PASSWORD));
}

static void
test_password_bounds(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *too_long = g_strnfill(EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES + 1, 'x');
    g_autofree gchar *longest = g_strnfill(EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES, 'x');
    g_autofree gchar *hash = NULL;

    hash = einsora_credential_hash_password("", &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_null(hash);
    g_clear_error(&error);
    hash = einsora_credential_hash_password(NULL, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_null(hash);
    g_clear_error(&error);
    hash = einsora_credential_hash_password(too_long, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_null(hash);
    g_clear_error(&error);

    hash = einsora_credential_hash_password(longest, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_credential_verify_password(hash, longest));
    g_assert_false(einsora_credential_verify_password(hash, too_long));
}

/* The work happens elsewhere: the call returns at once, and the main
 * context keeps running while argon2id does. */
static void
test_password_async_off_thread(void)
{
    g_autoptr(GError) error = NULL;
    AsyncWait wait = {0};
    g_autofree gchar *hash = NULL;
    gint64 started;

    started = g_get_monotonic_time();
    einsora_credential_hash_password_async(ANN_PASSWORD, NULL, async_ready, &wait);
    /* One hash takes a few hundred milliseconds here. */
    g_assert_cmpint(g_get_monotonic_time() - started, <, 100 * G_TIME_SPAN_MILLISECOND);
    g_assert_null(wait.result);
    async_wait(&wait);
    hash = einsora_credential_hash_password_finish(wait.result, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_credential_verify_password(hash, ANN_PASSWORD));
    g_test_message("main context ticked %u times while hashing", wait.ticks);
    g_assert_cmpuint(wait.ticks, >, 5);
    async_wait_clear(&wait);
    wait.ticks = 0;

    started = g_get_monotonic_time();
    einsora_credential_verify_password_async(hash, ANN_PASSWORD, NULL, async_ready, &wait);
    g_assert_cmpint(g_get_monotonic_time() - started, <, 100 * G_TIME_SPAN_MILLISECOND);
    async_wait(&wait);
    g_assert_true(einsora_credential_verify_password_finish(wait.result, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(wait.ticks, >, 5);
    async_wait_clear(&wait);

    einsora_credential_verify_password_async(hash, "wrong", NULL, async_ready, &wait);
    async_wait(&wait);
    g_assert_false(einsora_credential_verify_password_finish(wait.result, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_clear_error(&error);
    async_wait_clear(&wait);

    einsora_credential_hash_password_async("", NULL, async_ready, &wait);
    async_wait(&wait);
    g_assert_null(einsora_credential_hash_password_finish(wait.result, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    async_wait_clear(&wait);
}

static void
test_password_async_cancelled(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    AsyncWait wait = {0};
    g_autofree gchar *hash = NULL;
    WorkGate gate = {0};

    work_gate_install(&gate, FALSE);
    g_cancellable_cancel(cancellable);
    einsora_credential_hash_password_async(ANN_PASSWORD, cancellable, async_ready, &wait);
    async_wait(&wait);
    hash = einsora_credential_hash_password_finish(wait.result, &error);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_null(hash);
    g_clear_error(&error);
    async_wait_clear(&wait);

    einsora_credential_verify_password_async("$argon2id$x", ANN_PASSWORD, cancellable, async_ready,
                                             &wait);
    async_wait(&wait);
    g_assert_false(einsora_credential_verify_password_finish(wait.result, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    async_wait_clear(&wait);
    /* Neither job got as far as argon2. */
    g_assert_cmpuint(work_gate_entered(&gate), ==, 0);
    work_gate_remove(&gate);
}

/* Jobs held inside the pool: no more than its maximum ever run at once,
 * the rest wait, and one past the queue's end is refused at once rather
 * than queued or given a thread of its own. */
static void
test_password_pool_bounded(void)
{
    EinsoraCredentialPoolStats stats;
    WorkGate gate = {0};
    AsyncWait busy = {0};
    g_autoptr(GError) error = NULL;
    g_autofree AsyncWait *waits = NULL;
    guint limit;
    gint64 deadline;

    einsora_credential_get_pool_stats(&stats);
    g_assert_cmpuint(stats.max_running, ==, MAX(1, g_get_num_processors() / 2));
    g_assert_cmpuint(stats.max_waiting, ==, EINSORA_CREDENTIAL_PASSWORD_QUEUE_MAX);
    g_assert_cmpuint(stats.running, ==, 0);
    g_assert_cmpuint(stats.waiting, ==, 0);
    limit = stats.max_running + stats.max_waiting;
    waits = g_new0(AsyncWait, limit);

    work_gate_install(&gate, TRUE);
    /* Malformed hashes: once let through, each job is quick. */
    for (guint i = 0; i < limit; i++)
        einsora_credential_verify_password_async("$argon2id$x", ANN_PASSWORD, NULL, async_ready,
                                                 &waits[i]);
    deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (work_gate_entered(&gate) < stats.max_running && g_get_monotonic_time() < deadline)
        g_usleep(G_TIME_SPAN_MILLISECOND);
    /* Room for any extra thread to show up. */
    g_usleep(200 * G_TIME_SPAN_MILLISECOND);
    g_assert_cmpuint(work_gate_entered(&gate), ==, stats.max_running);
    einsora_credential_get_pool_stats(&stats);
    g_assert_cmpuint(stats.running, ==, stats.max_running);
    g_assert_cmpuint(stats.waiting, ==, stats.max_waiting);

    /* Answered while every admitted job is still held. */
    einsora_credential_verify_password_async("$argon2id$x", ANN_PASSWORD, NULL, async_ready, &busy);
    async_wait(&busy);
    g_assert_false(einsora_credential_verify_password_finish(busy.result, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    g_clear_error(&error);
    async_wait_clear(&busy);
    g_assert_cmpuint(work_gate_entered(&gate), ==, stats.max_running);

    work_gate_open(&gate);
    for (guint i = 0; i < limit; i++) {
        async_wait(&waits[i]);
        g_assert_false(einsora_credential_verify_password_finish(waits[i].result, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
        g_clear_error(&error);
        async_wait_clear(&waits[i]);
    }
    g_assert_cmpuint(work_gate_entered(&gate), ==, limit);
    work_gate_remove(&gate);
    einsora_credential_get_pool_stats(&stats);
    g_assert_cmpuint(stats.peak_running, ==, stats.max_running);
    g_assert_cmpuint(stats.running, ==, 0);
    g_assert_cmpuint(stats.waiting, ==, 0);

    /* Room again. */
    einsora_credential_verify_password_async("$argon2id$x", ANN_PASSWORD, NULL, async_ready, &busy);
    async_wait(&busy);
    g_assert_false(einsora_credential_verify_password_finish(busy.result, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    async_wait_clear(&busy);
}

/* API tokens */

static void
test_token_create_list_revoke(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraActor) actor = actor_for(ann);
    g_autofree gchar *laptop_secret = NULL;
    g_autofree gchar *ci_secret = NULL;
    g_autoptr(EinsoraApiToken) laptop = create_token(f, actor, "laptop", &laptop_secret);
    g_autoptr(EinsoraApiToken) ci = NULL;
    g_autoptr(EinsoraActor) as_laptop = NULL;
    g_autoptr(EinsoraActor) as_ci = NULL;
    g_autoptr(GPtrArray) tokens = NULL;
    g_autofree gchar *laptop_sha256 = einsora_credential_sha256_hex(laptop_secret);
    g_autofree gchar *via = NULL;
    g_autofree gchar *now = NULL;

    f->clock.now_us += G_TIME_SPAN_SECOND;
    ci = create_token(f, actor, "ci", &ci_secret);
    assert_secret_form(laptop_secret, "tsk_");
    g_assert_cmpstr(laptop_secret, !=, ci_secret);
    g_assert_true(einsora_uuid_is_valid(laptop->id));
    g_assert_cmpstr(laptop->tenant_id, ==, ann->tenant_id);
    g_assert_cmpstr(laptop->user_id, ==, ann->id);
    g_assert_cmpstr(laptop->name, ==, "laptop");
    g_assert_cmpuint(strlen(laptop->prefix), ==, 8);
    g_assert_true(g_str_has_prefix(laptop_secret, laptop->prefix));
    g_assert_cmpstr(laptop->token_sha256, ==, laptop_sha256);
    g_assert_null(laptop->revoked_at);
    g_assert_null(laptop->expires_at);

    tokens = einsora_auth_list_tokens(f->auth, actor, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(tokens->len, ==, 2);
    g_assert_cmpstr(((EinsoraApiToken *)g_ptr_array_index(tokens, 0))->id, ==, laptop->id);
    g_assert_cmpstr(((EinsoraApiToken *)g_ptr_array_index(tokens, 1))->id, ==, ci->id);
    g_clear_pointer(&tokens, g_ptr_array_unref);

    as_laptop = authenticate_token(f, laptop_secret);
    g_assert_cmpstr(as_laptop->tenant_id, ==, ann->tenant_id);
    g_assert_cmpstr(as_laptop->user_id, ==, ann->id);
    g_assert_cmpstr(as_laptop->subject, ==, ANN_EMAIL);
    via = g_strdup_printf("API token \"laptop\" (%s…)", laptop->prefix);
    g_assert_cmpstr(as_laptop->via, ==, via);

    f->clock.now_us += G_TIME_SPAN_MINUTE;
    g_assert_true(einsora_auth_revoke_token(f->auth, actor, laptop->id, &error));
    g_assert_no_error(error);
    assert_token_refused(f, laptop_secret);
    /* Revoking one leaves the other. */
    as_ci = authenticate_token(f, ci_secret);
    g_assert_cmpstr(as_ci->user_id, ==, ann->id);

    /* Revoked tokens stay listed, with when. */
    now = einsora_timestamp_format(f->clock.now_us);
    tokens = einsora_auth_list_tokens(f->auth, actor, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(tokens->len, ==, 2);
    g_assert_cmpstr(((EinsoraApiToken *)g_ptr_array_index(tokens, 0))->revoked_at, ==, now);
    g_assert_null(((EinsoraApiToken *)g_ptr_array_index(tokens, 1))->revoked_at);

    /* Revoking again is fine. */
    g_assert_true(einsora_auth_revoke_token(f->auth, actor, laptop->id, &error));
    g_assert_no_error(error);
}

static void
test_token_name_rules(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraActor) actor = actor_for(ann);
    g_autofree gchar *longest = g_strnfill(EINSORA_AUTH_TOKEN_NAME_MAX_BYTES, 'n');
    g_autofree gchar *too_long = g_strnfill(EINSORA_AUTH_TOKEN_NAME_MAX_BYTES + 1, 'n');
    const char *const bad[] = {NULL,     "",        too_long,     "two\nlines",    "tab\there",
                               "bell\a", "del\x7f", "c1\xc2\x85", "bad \xff utf-8"};
    const char *const good[] = {longest, "laptop", "Läptop ☕", "ci / deploy"};

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree gchar *secret = NULL;
        g_autoptr(EinsoraApiToken) token =
            einsora_auth_create_token(f->auth, actor, bad[i], &secret, &error);

        g_test_message("bad name %u", i);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_null(token);
        g_assert_null(secret);
    }
    for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autofree gchar *secret = NULL;
        g_autoptr(EinsoraApiToken) token = create_token(f, actor, good[i], &secret);
        g_assert_cmpstr(token->name, ==, good[i]);
    }
}

static void
test_token_unknown_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraActor) actor = actor_for(ann);
    g_autofree gchar *secret = NULL;
    g_autoptr(EinsoraApiToken) token = create_token(f, actor, "laptop", &secret);
    g_autofree gchar *unknown = einsora_credential_new_secret("tsk_");
    g_autofree gchar *huge = g_strnfill(100000, 'a');
    g_autofree gchar *huge_token = g_strconcat("tsk_", huge, NULL);
    g_autofree gchar *truncated = g_strndup(secret, strlen(secret) - 1);
    /* The token's hash is not the token. */
    g_autofree gchar *as_hash = g_strconcat("tsk_", token->token_sha256, NULL);
    g_autoptr(EinsoraActor) as_ann = NULL;

    assert_token_refused(f, unknown);
    assert_token_refused(f, NULL);
    assert_token_refused(f, "");
    assert_token_refused(f, "tsk_");
    assert_token_refused(f, huge_token);
    assert_token_refused(f, truncated);
    assert_token_refused(f, token->token_sha256);
    assert_token_refused(f, as_hash);
    /* The right token still works. */
    as_ann = authenticate_token(f, secret);
    g_assert_cmpstr(as_ann->user_id, ==, ann->id);
}

static void
test_token_expired(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autofree gchar *secret = einsora_credential_new_secret("tsk_");
    g_autoptr(EinsoraApiToken) token = einsora_api_token_new();
    g_autoptr(EinsoraActor) actor = NULL;

    /* Tokens made here never expire; the store can hold ones that do. */
    token->id = einsora_uuid_v7_new(f->clock.now_us / 1000);
    token->tenant_id = g_strdup(ann->tenant_id);
    token->user_id = g_strdup(ann->id);
    token->name = g_strdup("short-lived");
    token->prefix = einsora_credential_display_prefix(secret);
    token->token_sha256 = einsora_credential_sha256_hex(secret);
    token->created_at = einsora_timestamp_format(f->clock.now_us);
    token->expires_at = einsora_timestamp_format(f->clock.now_us + G_TIME_SPAN_HOUR);
    g_assert_true(einsora_store_insert_api_token(f->store, token, &error));
    g_assert_no_error(error);

    f->clock.now_us += G_TIME_SPAN_HOUR - 1;
    actor = authenticate_token(f, secret);
    f->clock.now_us += 1;
    assert_token_refused(f, secret);
}

static void
test_token_disabled_user(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraActor) actor = actor_for(ann);
    g_autofree gchar *secret = NULL;
    g_autoptr(EinsoraApiToken) token = create_token(f, actor, "laptop", &secret);
    g_autoptr(EinsoraActor) as_ann = authenticate_token(f, secret);

    exec_sql(f, "UPDATE users SET disabled_at = '2026-01-02T00:00:00.000000Z'");
    assert_token_refused(f, secret);
}

static gchar *
last_used_at(Fixture *f, const EinsoraActor *actor)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) tokens = einsora_auth_list_tokens(f->auth, actor, &error);

    g_assert_no_error(error);
    g_assert_cmpuint(tokens->len, ==, 1);
    return g_strdup(((EinsoraApiToken *)g_ptr_array_index(tokens, 0))->last_used_at);
}

/* Recorded on first use, then at most once a minute. */
static void
test_token_last_used(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraActor) actor = actor_for(ann);
    g_autofree gchar *secret = NULL;
    g_autoptr(EinsoraApiToken) token = create_token(f, actor, "laptop", &secret);
    g_autofree gchar *first = einsora_timestamp_format(f->clock.now_us);
    g_autofree gchar *later = NULL;
    g_autofree gchar *got = last_used_at(f, actor);

    g_assert_null(got);
    einsora_actor_free(authenticate_token(f, secret));
    g_free(got);
    got = last_used_at(f, actor);
    g_assert_cmpstr(got, ==, first);

    f->clock.now_us += 30 * G_TIME_SPAN_SECOND;
    einsora_actor_free(authenticate_token(f, secret));
    g_free(got);
    got = last_used_at(f, actor);
    g_assert_cmpstr(got, ==, first);

    f->clock.now_us += 31 * G_TIME_SPAN_SECOND;
    later = einsora_timestamp_format(f->clock.now_us);
    einsora_actor_free(authenticate_token(f, secret));
    g_free(got);
    got = last_used_at(f, actor);
    g_assert_cmpstr(got, ==, later);
}

static void
test_token_revoke_others_not_found(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraUser) gus = create_account(f, "globex", "gus@globex.example", NULL);
    g_autoptr(EinsoraUser) bob = einsora_user_copy(ann);
    g_autoptr(EinsoraActor) as_ann = actor_for(ann);
    g_autoptr(EinsoraActor) as_gus = NULL;
    g_autoptr(EinsoraActor) as_bob = NULL;
    g_autofree gchar *secret = NULL;
    g_autoptr(EinsoraApiToken) token = create_token(f, as_ann, "laptop", &secret);
    g_autoptr(EinsoraActor) still = NULL;
    g_autoptr(GPtrArray) bobs = NULL;
    const char *const malformed[] = {"", "not-a-uuid", "1 OR 1=1", token->token_sha256};

    /* Bob: another user in Ann's tenant. */
    g_free(bob->id);
    bob->id = einsora_uuid_v7_new(f->clock.now_us / 1000);
    g_free(bob->email);
    bob->email = g_strdup("bob@acme.example");
    g_assert_true(einsora_store_insert_user(f->store, bob, &error));
    g_assert_no_error(error);
    as_bob = actor_for(bob);
    as_gus = actor_for(gus);

    g_assert_false(einsora_auth_revoke_token(f->auth, as_gus, token->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_false(einsora_auth_revoke_token(f->auth, as_bob, token->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    for (guint i = 0; i < G_N_ELEMENTS(malformed); i++) {
        g_assert_false(einsora_auth_revoke_token(f->auth, as_ann, malformed[i], &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_clear_error(&error);
    }
    g_assert_false(einsora_auth_revoke_token(f->auth, as_ann, NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);

    /* Nobody else sees it, and it still works. */
    bobs = einsora_auth_list_tokens(f->auth, as_bob, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(bobs->len, ==, 0);
    still = authenticate_token(f, secret);
    g_assert_cmpstr(still->user_id, ==, ann->id);
}

/* Sessions */

static void
test_session_login_and_csrf(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_auto(Login) in = {0};
    g_autoptr(EinsoraActor) safe = NULL;
    g_autoptr(EinsoraActor) unsafe = NULL;
    g_autoptr(EinsoraActor) refused = NULL;
    g_autofree gchar *other_csrf = einsora_credential_new_secret("csrf_");
    g_auto(Login) other = {0};

    login(f, ANN_EMAIL, ANN_PASSWORD, &in, &error);
    g_assert_no_error(error);
    assert_secret_form(in.session, "ses_");
    assert_secret_form(in.csrf, "csrf_");
    g_assert_cmpstr(in.actor->tenant_id, ==, ann->tenant_id);
    g_assert_cmpstr(in.actor->user_id, ==, ann->id);
    g_assert_cmpstr(in.actor->subject, ==, ANN_EMAIL);
    g_assert_cmpstr(in.actor->via, ==, "browser session");

    /* Safe methods need no CSRF token. */
    safe = einsora_auth_authenticate_session(f->auth, in.session, NULL, FALSE, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(safe->user_id, ==, ann->id);
    g_assert_cmpstr(safe->via, ==, "browser session");

    /* Unsafe ones do: missing, wrong, another session's, or the session
     * value itself. */
    {
        login(f, ANN_EMAIL, ANN_PASSWORD, &other, &error);
        g_assert_no_error(error);
        const char *const wrong[] = {NULL, "", other_csrf, other.csrf, in.session, "csrf_"};
        for (guint i = 0; i < G_N_ELEMENTS(wrong); i++) {
            refused =
                einsora_auth_authenticate_session(f->auth, in.session, wrong[i], TRUE, &error);
            g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN);
            g_assert_cmpstr(error->message, ==, "missing or wrong CSRF token");
            g_assert_null(refused);
            g_clear_error(&error);
        }
    }
    unsafe = einsora_auth_authenticate_session(f->auth, in.session, in.csrf, TRUE, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(unsafe->user_id, ==, ann->id);

    /* A session is not an API token, nor the other way round. */
    assert_token_refused(f, in.session);
    refused = einsora_auth_authenticate_session(f->auth, in.csrf, in.csrf, TRUE, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_clear_error(&error);

    /* Signing out ends this session only. */
    g_assert_true(einsora_auth_logout(f->auth, in.session, &error));
    g_assert_no_error(error);
    refused = einsora_auth_authenticate_session(f->auth, in.session, in.csrf, TRUE, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_assert_null(refused);
    g_clear_error(&error);
    refused = einsora_auth_authenticate_session(f->auth, in.session, NULL, FALSE, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_clear_error(&error);
    g_clear_pointer(&safe, einsora_actor_free);
    safe = einsora_auth_authenticate_session(f->auth, other.session, other.csrf, TRUE, &error);
    g_assert_no_error(error);

    /* Twice is fine; an unknown session is not. */
    g_assert_true(einsora_auth_logout(f->auth, in.session, &error));
    g_assert_no_error(error);
    g_assert_false(einsora_auth_logout(f->auth, other_csrf, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
}

static void
test_session_expires(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_auto(Login) in = {0};
    g_autoptr(EinsoraActor) actor = NULL;

    login(f, ANN_EMAIL, ANN_PASSWORD, &in, &error);
    g_assert_no_error(error);

    f->clock.now_us += EINSORA_AUTH_SESSION_LIFETIME_US - 1;
    actor = einsora_auth_authenticate_session(f->auth, in.session, in.csrf, TRUE, &error);
    g_assert_no_error(error);
    g_assert_nonnull(actor);
    g_clear_pointer(&actor, einsora_actor_free);

    f->clock.now_us += 1;
    actor = einsora_auth_authenticate_session(f->auth, in.session, in.csrf, TRUE, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_assert_cmpstr(error->message, ==, "invalid or expired session");
    g_assert_null(actor);
}

static void
test_session_disabled_user(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_auto(Login) in = {0};
    g_autoptr(EinsoraActor) actor = NULL;

    login(f, ANN_EMAIL, ANN_PASSWORD, &in, &error);
    g_assert_no_error(error);
    exec_sql(f, "UPDATE users SET disabled_at = '2026-01-02T00:00:00.000000Z'");
    actor = einsora_auth_authenticate_session(f->auth, in.session, NULL, FALSE, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_assert_null(actor);
    g_clear_error(&error);
    /* Nor can they sign in again. */
    assert_login_refused(f, ANN_EMAIL, ANN_PASSWORD);
}

/* Sign-in */

static void
test_login_right_and_wrong(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_autoptr(EinsoraUser) owner = create_account(f, "local", "owner@localhost", NULL);
    g_auto(Login) in = {0};
    guint ticks;

    assert_login_refused(f, ANN_EMAIL, "correct horse battery stapler");
    assert_login_refused(f, ANN_EMAIL, "");
    assert_login_refused(f, ANN_EMAIL, NULL);
    assert_login_refused(f, "nobody@acme.example", ANN_PASSWORD);
    assert_login_refused(f, NULL, ANN_PASSWORD);
    assert_login_refused(f, "", ANN_PASSWORD);
    /* An account without a password cannot sign in with one, not even
     * with the password behind the dummy hash (nobody knows it). */
    assert_login_refused(f, "owner@localhost", ANN_PASSWORD);
    assert_login_refused(f, "owner@localhost", "");

    /* Emails match whatever their ASCII case; the password is checked off
     * the main loop, which keeps running meanwhile. */
    ticks = login(f, "Ann@ACME.example", ANN_PASSWORD, &in, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(in.actor->user_id, ==, ann->id);
    g_test_message("main context ticked %u times while signing in", ticks);
    g_assert_cmpuint(ticks, >, 5);
}

/* A wrong email costs a password check too. */
static void
test_login_unknown_email_takes_as_long(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_auto(Login) out = {0};
    gint64 started = g_get_monotonic_time();
    gint64 unknown_us;
    gint64 wrong_us;

    login(f, "nobody@acme.example", ANN_PASSWORD, &out, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_clear_error(&error);
    unknown_us = g_get_monotonic_time() - started;
    started = g_get_monotonic_time();
    login(f, ANN_EMAIL, "wrong", &out, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    wrong_us = g_get_monotonic_time() - started;
    g_test_message("unknown email: %" G_GINT64_FORMAT " us, wrong password: %" G_GINT64_FORMAT
                   " us",
                   unknown_us, wrong_us);
    /* Loose, for loaded machines: both ran argon2id with the same cost. */
    g_assert_cmpint(unknown_us, >, wrong_us / 4);
}

static void
test_login_cancelled(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    AsyncWait wait = {0};
    g_autofree gchar *session = NULL;

    einsora_auth_login_async(f->auth, ANN_EMAIL, ANN_PASSWORD, cancellable, async_ready, &wait);
    g_cancellable_cancel(cancellable);
    async_wait(&wait);
    g_assert_false(einsora_auth_login_finish(f->auth, wait.result, NULL, &session, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_null(session);
    async_wait_clear(&wait);
}

/* Secrets at rest */

static gboolean
file_contains(const char *path, const char *needle)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *contents = NULL;
    gsize len = 0;

    if (!g_file_get_contents(path, &contents, &len, &error)) {
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
        return FALSE;
    }
    return memmem(contents, len, needle, strlen(needle)) != NULL;
}

static gboolean
store_files_contain(Fixture *f, const char *needle)
{
    const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};

    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *path = g_strconcat(f->db_path, suffixes[i], NULL);
        if (file_contains(path, needle))
            return TRUE;
    }
    return FALSE;
}

static void
test_no_secret_in_clear(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_autoptr(EinsoraActor) actor = actor_for(ann);
    g_autofree gchar *token_secret = NULL;
    g_autoptr(EinsoraApiToken) token = create_token(f, actor, "laptop", &token_secret);
    g_autoptr(EinsoraActor) as_token = authenticate_token(f, token_secret);
    g_auto(Login) in = {0};
    g_autofree gchar *session_sha256 = NULL;
    g_autofree gchar *csrf_sha256 = NULL;
    g_autofree gchar *token_body = NULL;
    g_autofree gchar *session_body = NULL;

    login(f, ANN_EMAIL, ANN_PASSWORD, &in, &error);
    g_assert_no_error(error);
    session_sha256 = einsora_credential_sha256_hex(in.session);
    csrf_sha256 = einsora_credential_sha256_hex(in.csrf);

    /* The scan sees what was written: the hashes are there. */
    g_assert_true(store_files_contain(f, token->token_sha256));
    g_assert_true(store_files_contain(f, session_sha256));
    g_assert_true(store_files_contain(f, csrf_sha256));
    g_assert_true(store_files_contain(f, ANN_EMAIL));

    /* The secrets, whole or without their prefix, are not; only the
     * token's 8-character display prefix is. */
    token_body = g_strdup(token_secret + strlen("tsk_"));
    session_body = g_strdup(in.session + strlen("ses_"));
    g_assert_false(store_files_contain(f, token_secret));
    g_assert_false(store_files_contain(f, token_body));
    g_assert_false(store_files_contain(f, in.session));
    g_assert_false(store_files_contain(f, session_body));
    g_assert_false(store_files_contain(f, in.csrf));
    g_assert_false(store_files_contain(f, in.csrf + strlen("csrf_")));
    g_assert_false(store_files_contain(f, ANN_PASSWORD));

    /* Still true once the WAL is folded into the database file. */
    exec_sql(f, "PRAGMA wal_checkpoint(TRUNCATE)");
    g_assert_true(store_files_contain(f, token->token_sha256));
    g_assert_false(store_files_contain(f, token_body));
    g_assert_false(store_files_contain(f, session_body));
    g_assert_false(store_files_contain(f, in.csrf + strlen("csrf_")));
    g_assert_false(store_files_contain(f, ANN_PASSWORD));
}

/* Solo's first run */

static const char *const first_run_classes[] = {"l40s-48gb", "apple-m3-max", NULL};

static gchar *
read_token_file(Fixture *f, guint *mode)
{
    g_autofree gchar *path = g_build_filename(f->dir, EINSORA_AUTH_TOKEN_FILE, NULL);
    g_autoptr(GError) error = NULL;
    gchar *contents = NULL;
    struct stat st;

    g_assert_cmpint(lstat(path, &st), ==, 0);
    g_assert_true(S_ISREG(st.st_mode));
    if (mode != NULL)
        *mode = st.st_mode & 07777;
    g_assert_true(g_file_get_contents(path, &contents, NULL, &error));
    g_assert_no_error(error);
    return contents;
}

static gint64
count_rows(Fixture *f, const char *table)
{
    g_autofree gchar *sql = g_strdup_printf("SELECT count(*) FROM %s", table);
    sqlite3_stmt *stmt = NULL;
    gint64 count;

    g_assert_cmpint(
        sqlite3_prepare_v2(einsora_sqlite_store_get_handle(f->sqlite), sql, -1, &stmt, NULL), ==,
        SQLITE_OK);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    count = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return count;
}

static void
test_first_run(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) owner = NULL;
    g_autoptr(EinsoraUser) again = NULL;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraActor) actor = NULL;
    g_autofree gchar *contents = NULL;
    g_autofree gchar *contents_after = NULL;
    g_autofree gchar *secret = NULL;
    guint mode = 0;
    gint64 gpus = -1;
    mode_t old_umask;

    /* The file's mode is exactly 0600, whatever the umask. */
    old_umask = umask(0277);
    g_assert_true(
        einsora_auth_ensure_first_run(f->auth, f->dir, first_run_classes, 1, &owner, &error));
    umask(old_umask);
    g_assert_no_error(error);
    g_assert_nonnull(owner);
    g_assert_cmpstr(owner->email, ==, "owner@localhost");
    g_assert_cmpstr(owner->role, ==, "owner");
    g_assert_null(owner->password_hash);
    g_assert_null(owner->disabled_at);

    tenant = einsora_store_get_tenant(f->store, owner->tenant_id, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(tenant->name, ==, "local");
    g_assert_true(tenant->trusted);
    for (guint i = 0; first_run_classes[i] != NULL; i++) {
        g_assert_true(einsora_store_get_quota(f->store, owner->tenant_id, first_run_classes[i],
                                              &gpus, &error));
        g_assert_no_error(error);
        g_assert_cmpint(gpus, ==, 1);
    }
    g_assert_cmpint(count_rows(f, "quotas"), ==, 2);

    contents = read_token_file(f, &mode);
    g_assert_cmpuint(mode, ==, 0600);
    g_assert_true(g_str_has_suffix(contents, "\n"));
    secret = g_strndup(contents, strlen(contents) - 1);
    assert_secret_form(secret, "tsk_");
    actor = authenticate_token(f, secret);
    g_assert_cmpstr(actor->user_id, ==, owner->id);
    g_assert_cmpstr(actor->tenant_id, ==, owner->tenant_id);
    g_assert_cmpstr(actor->subject, ==, "owner@localhost");
    g_assert_true(g_str_has_prefix(actor->via, "API token \"local\" (tsk_"));

    /* A second run changes nothing. */
    g_assert_true(
        einsora_auth_ensure_first_run(f->auth, f->dir, first_run_classes, 1, &again, &error));
    g_assert_no_error(error);
    g_assert_null(again);
    contents_after = read_token_file(f, &mode);
    g_assert_cmpstr(contents_after, ==, contents);
    g_assert_cmpuint(mode, ==, 0600);
    g_assert_cmpint(count_rows(f, "users"), ==, 1);
    g_assert_cmpint(count_rows(f, "api_tokens"), ==, 1);
    g_assert_cmpint(count_rows(f, "tenants"), ==, 1);
}

/* With no accounts but a token file, the file wins: it is left as it is,
 * and nothing is created that it would not match. */
static void
test_first_run_existing_file(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) owner = NULL;
    g_autofree gchar *path = g_build_filename(f->dir, EINSORA_AUTH_TOKEN_FILE, NULL);
    g_autofree gchar *contents = NULL;

    g_assert_true(g_file_set_contents_full(path, "tsk_keep-me\n", -1, G_FILE_SET_CONTENTS_NONE,
                                           0600, &error));
    g_assert_no_error(error);
    g_test_expect_message("einsora-auth", G_LOG_LEVEL_WARNING, "*no accounts*exists*");
    g_assert_true(
        einsora_auth_ensure_first_run(f->auth, f->dir, first_run_classes, 1, &owner, &error));
    g_test_assert_expected_messages();
    g_assert_no_error(error);
    g_assert_null(owner);
    contents = read_token_file(f, NULL);
    g_assert_cmpstr(contents, ==, "tsk_keep-me\n");
    g_assert_cmpint(count_rows(f, "users"), ==, 0);
    g_assert_cmpint(count_rows(f, "tenants"), ==, 0);
}

/* A link where the file would go is not followed. */
static void
test_first_run_symlink(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) owner = NULL;
    g_autofree gchar *path = g_build_filename(f->dir, EINSORA_AUTH_TOKEN_FILE, NULL);
    g_autofree gchar *target = g_build_filename(f->dir, "elsewhere", NULL);

    g_assert_cmpint(symlink(target, path), ==, 0);
    g_test_expect_message("einsora-auth", G_LOG_LEVEL_WARNING, "*exists*");
    g_assert_true(einsora_auth_ensure_first_run(f->auth, f->dir, NULL, 0, &owner, &error));
    g_test_assert_expected_messages();
    g_assert_no_error(error);
    g_assert_null(owner);
    g_assert_false(g_file_test(target, G_FILE_TEST_EXISTS));
    g_assert_cmpint(count_rows(f, "users"), ==, 0);
}

static void
test_first_run_users_exist(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    g_autoptr(EinsoraUser) owner = NULL;
    g_autofree gchar *path = g_build_filename(f->dir, EINSORA_AUTH_TOKEN_FILE, NULL);

    g_assert_true(
        einsora_auth_ensure_first_run(f->auth, f->dir, first_run_classes, 1, &owner, &error));
    g_assert_no_error(error);
    g_assert_null(owner);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_assert_cmpint(count_rows(f, "users"), ==, 1);
    g_assert_cmpint(count_rows(f, "quotas"), ==, 0);
}

/* A failure leaves neither a file nor half an account. */
static void
test_first_run_unwritable_dir(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) owner = NULL;
    g_autofree gchar *missing = g_build_filename(f->dir, "missing", NULL);

    g_assert_false(
        einsora_auth_ensure_first_run(f->auth, missing, first_run_classes, 1, &owner, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_assert_null(owner);
    g_assert_cmpint(count_rows(f, "users"), ==, 0);
    g_assert_cmpint(count_rows(f, "tenants"), ==, 0);
}

/* Accounts */

static void
test_account_validation(Fixture *f, gconstpointer data)
{
    g_autofree gchar *long_local = g_strnfill(250, 'a');
    g_autofree gchar *too_long = g_strconcat(long_local, "@b.cd", NULL); /* 255 bytes */
    g_autofree gchar *long_tenant = g_strnfill(EINSORA_AUTH_TENANT_NAME_MAX_BYTES + 1, 't');
    const struct {
        const char *tenant;
        const char *email;
        const char *password;
        const char *role;
    } bad[] = {
        {"acme", NULL, NULL, "owner"},
        {"acme", "", NULL, "owner"},
        {"acme", "a@", NULL, "owner"},
        {"acme", "no-at-sign", NULL, "owner"},
        {"acme", "@acme.example", NULL, "owner"},
        {"acme", "ann@", NULL, "owner"},
        {"acme", "ann@@acme.example", NULL, "owner"},
        {"acme", "ann@acme@example", NULL, "owner"},
        {"acme", "ann smith@acme.example", NULL, "owner"},
        {"acme", "ann\t@acme.example", NULL, "owner"},
        {"acme", "ann\n@acme.example", NULL, "owner"},
        {"acme", "ann\xc2\xa0@acme.example", NULL, "owner"}, /* no-break space */
        {"acme", "ann\xff@acme.example", NULL, "owner"},
        {"acme", too_long, NULL, "owner"},
        {"", ANN_EMAIL, NULL, "owner"},
        {NULL, ANN_EMAIL, NULL, "owner"},
        {long_tenant, ANN_EMAIL, NULL, "owner"},
        {"ac\nme", ANN_EMAIL, NULL, "owner"},
        {"acme", ANN_EMAIL, NULL, "admin"},
        {"acme", ANN_EMAIL, NULL, NULL},
        {"acme", ANN_EMAIL, "", "owner"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraUser) user = einsora_auth_create_account(
            f->auth, bad[i].tenant, bad[i].email, bad[i].password, bad[i].role, FALSE, &error);

        g_test_message("case %u", i);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_null(user);
    }
    g_assert_cmpint(count_rows(f, "tenants"), ==, 0);
    g_assert_cmpint(count_rows(f, "users"), ==, 0);
}

static void
test_account_created(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = NULL;
    g_autoptr(EinsoraUser) got = NULL;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autofree gchar *longest_local = g_strnfill(250, 'a');
    g_autofree gchar *longest = g_strconcat(longest_local, "@b.c", NULL); /* 254 bytes */
    g_autoptr(EinsoraUser) long_one = NULL;

    ann = einsora_auth_create_account(f->auth, "acme", "Ann@Acme.Example", ANN_PASSWORD, "member",
                                      TRUE, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(ann->email, ==, ANN_EMAIL);
    g_assert_cmpstr(ann->display_name, ==, "ann");
    g_assert_cmpstr(ann->role, ==, "member");
    g_assert_true(g_str_has_prefix(ann->password_hash, "$argon2id$"));
    g_assert_true(einsora_credential_verify_password(ann->password_hash, ANN_PASSWORD));
    got = einsora_store_get_user(f->store, ann->tenant_id, ann->id, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(got->email, ==, ANN_EMAIL);
    g_assert_cmpstr(got->password_hash, ==, ann->password_hash);
    tenant = einsora_store_get_tenant(f->store, ann->tenant_id, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(tenant->name, ==, "acme");
    g_assert_true(tenant->trusted);

    long_one = create_account(f, "long", longest, NULL);
    g_assert_cmpstr(long_one->email, ==, longest);
}

static void
test_account_duplicates(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, NULL);
    const struct {
        const char *tenant;
        const char *email;
    } taken[] = {
        {"globex", ANN_EMAIL},
        {"globex", "ANN@acme.example"}, /* the same address */
        {"acme", "bob@acme.example"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(taken); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraUser) user = einsora_auth_create_account(
            f->auth, taken[i].tenant, taken[i].email, NULL, "owner", FALSE, &error);

        g_test_message("case %u", i);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
        g_assert_null(user);
    }
    /* One transaction: a refused user left no tenant behind. */
    g_assert_cmpint(count_rows(f, "tenants"), ==, 1);
    g_assert_cmpint(count_rows(f, "users"), ==, 1);
}

/* Sign-in: cancellation and repeated failures */

/* A client that goes away while its password is checked gets no session. */
static void
test_login_cancelled_during_check(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autofree gchar *session = NULL;
    g_auto(Login) in = {0};
    AsyncWait wait = {0};
    WorkGate gate = {0};

    gate.cancel_on_entry = cancellable;
    work_gate_install(&gate, FALSE);
    einsora_auth_login_async(f->auth, ANN_EMAIL, ANN_PASSWORD, cancellable, async_ready, &wait);
    async_wait(&wait);
    g_assert_false(einsora_auth_login_finish(f->auth, wait.result, NULL, &session, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&error);
    g_assert_null(session);
    async_wait_clear(&wait);
    /* The password was checked (and matched): the session is what was
     * withheld. */
    g_assert_cmpuint(work_gate_entered(&gate), ==, 1);
    g_assert_cmpint(count_rows(f, "sessions"), ==, 0);

    /* Cancelled before the call: not even looked up. */
    einsora_auth_login_async(f->auth, ANN_EMAIL, ANN_PASSWORD, cancellable, async_ready, &wait);
    async_wait(&wait);
    g_assert_false(einsora_auth_login_finish(f->auth, wait.result, NULL, &session, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&error);
    async_wait_clear(&wait);
    g_assert_cmpuint(work_gate_entered(&gate), ==, 1);
    work_gate_remove(&gate);
    g_assert_cmpint(count_rows(f, "sessions"), ==, 0);

    /* Not a failure either: the right password still opens a session. */
    login(f, ANN_EMAIL, ANN_PASSWORD, &in, &error);
    g_assert_no_error(error);
    g_assert_cmpint(count_rows(f, "sessions"), ==, 1);
}

/* Refused without a password check: the hook never sees it. */
static void
assert_locked_out(Fixture *f, const char *email, const char *password)
{
    g_autoptr(GError) error = NULL;
    g_auto(Login) out = {0};
    WorkGate gate = {0};

    work_gate_install(&gate, FALSE);
    login(f, email, password, &out, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
    g_assert_cmpstr(error->message, ==, "too many failed sign-ins; try again later");
    g_assert_null(out.session);
    g_assert_cmpuint(work_gate_entered(&gate), ==, 0);
    work_gate_remove(&gate);
}

static void
assert_login_works(Fixture *f, const char *email, const char *password)
{
    g_autoptr(GError) error = NULL;
    g_auto(Login) in = {0};

    login(f, email, password, &in, &error);
    g_assert_no_error(error);
    g_assert_nonnull(in.session);
}

static void
test_login_locked_after_failures(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);
    gint64 sessions;

    /* Emails count whatever their case, as they match. */
    assert_login_refused(f, "Ann@ACME.example", "guess 1");
    f->clock.now_us += 5 * G_TIME_SPAN_MINUTE;
    for (guint i = 2; i <= EINSORA_AUTH_LOGIN_FAILURES_MAX; i++)
        assert_login_refused(f, ANN_EMAIL, "another guess");
    sessions = count_rows(f, "sessions");
    assert_locked_out(f, ANN_EMAIL, ANN_PASSWORD);
    assert_locked_out(f, "ANN@acme.example", ANN_PASSWORD);
    g_assert_cmpint(count_rows(f, "sessions"), ==, sessions);
    /* Other emails are not affected. */
    assert_login_refused(f, "nobody@acme.example", ANN_PASSWORD);

    /* The window opened with the first failure. */
    f->clock.now_us += 10 * G_TIME_SPAN_MINUTE - 1;
    assert_locked_out(f, ANN_EMAIL, ANN_PASSWORD);
    f->clock.now_us += 1;
    assert_login_works(f, ANN_EMAIL, ANN_PASSWORD);

    /* An email with no account locks the same way, so a lock says nothing
     * about whether an account exists. */
    for (guint i = 1; i < EINSORA_AUTH_LOGIN_FAILURES_MAX; i++)
        assert_login_refused(f, "nobody@acme.example", "a guess");
    assert_locked_out(f, "nobody@acme.example", "a guess");
}

static void
test_login_success_forgets_failures(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraUser) ann = create_account(f, "acme", ANN_EMAIL, ANN_PASSWORD);

    for (guint i = 1; i < EINSORA_AUTH_LOGIN_FAILURES_MAX; i++)
        assert_login_refused(f, ANN_EMAIL, "a guess");
    assert_login_works(f, ANN_EMAIL, ANN_PASSWORD);
    for (guint i = 1; i < EINSORA_AUTH_LOGIN_FAILURES_MAX; i++)
        assert_login_refused(f, ANN_EMAIL, "a guess");
    assert_login_works(f, ANN_EMAIL, ANN_PASSWORD);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/credential/secret/well-formed-and-distinct", test_secret_form_and_distinct);
    g_test_add_func("/credential/sha256/known-vectors", test_sha256_known_vectors);
    g_test_add_func("/credential/display-prefix", test_display_prefix);
    g_test_add_func("/credential/equal", test_equal);
    g_test_add_func("/credential/password/round-trip", test_password_round_trip);
    g_test_add_func("/credential/password/empty-and-over-long-refused", test_password_bounds);
    g_test_add_func("/credential/password/async-leaves-main-loop-running",
                    test_password_async_off_thread);
    g_test_add_func("/credential/password/async-cancelled", test_password_async_cancelled);
    g_test_add_func("/credential/password/pool-bounded-and-full-queue-busy",
                    test_password_pool_bounded);

#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/auth/token/create-list-revoke", test_token_create_list_revoke);
    ADD("/auth/token/name-rules", test_token_name_rules);
    ADD("/auth/token/unknown-refused", test_token_unknown_refused);
    ADD("/auth/token/expired-refused", test_token_expired);
    ADD("/auth/token/disabled-user-refused", test_token_disabled_user);
    ADD("/auth/token/last-used-at-most-once-a-minute", test_token_last_used);
    ADD("/auth/token/revoke-others-not-found", test_token_revoke_others_not_found);
    ADD("/auth/session/login-and-csrf", test_session_login_and_csrf);
    ADD("/auth/session/expires-after-7-days", test_session_expires);
    ADD("/auth/session/disabled-user-refused", test_session_disabled_user);
    ADD("/auth/login/right-and-wrong", test_login_right_and_wrong);
    ADD("/auth/login/unknown-email-still-checks-a-password",
        test_login_unknown_email_takes_as_long);
    ADD("/auth/login/cancelled", test_login_cancelled);
    ADD("/auth/login/cancelled-during-check-stores-no-session", test_login_cancelled_during_check);
    ADD("/auth/login/locked-after-5-failures-until-window-passes",
        test_login_locked_after_failures);
    ADD("/auth/login/success-forgets-failures", test_login_success_forgets_failures);
    ADD("/auth/store/no-secret-in-clear", test_no_secret_in_clear);
    ADD("/auth/first-run/creates-owner-quotas-and-token-file", test_first_run);
    ADD("/auth/first-run/existing-token-file-left-alone", test_first_run_existing_file);
    ADD("/auth/first-run/symlink-not-followed", test_first_run_symlink);
    ADD("/auth/first-run/users-exist-nothing-done", test_first_run_users_exist);
    ADD("/auth/first-run/failure-leaves-nothing", test_first_run_unwritable_dir);
    ADD("/auth/account/validation", test_account_validation);
    ADD("/auth/account/created", test_account_created);
    ADD("/auth/account/duplicates-conflict", test_account_duplicates);
#undef ADD

    return g_test_run();
}
