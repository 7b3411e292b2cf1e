/* A Lab's people, against the real daemon and the real `einsora`: the
 * Solo owner is the first admin; it makes a team with a lead and a
 * member, gives the team a GPU quota, disables and enables the member;
 * everyone else gets 403 from /v1/admin whatever they send; the team's
 * audit trail says what happened, with no secret in it or in the log;
 * `einsora-daemon account create --join/--admin` does the same from the
 * machine (docs/adr/0049). The app's and the CLI's sign-in with email and
 * password mints a token of the account's own, and a reset password is
 * changed on the way (docs/adr/0054). */
#include <string.h>

#include "einsora-client.h"
#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"

#define JSON "application/json"
#define GPU_CLASS "h100-80gb"

static EinsoraTestDaemon *daemon_;
static GPtrArray *secrets;

static EinsoraTestResponse *
call(const char *method, const char *path, const char *token, const char *body)
{
    return einsora_test_request(daemon_, method, path, token, body != NULL ? JSON : NULL, body,
                                NULL);
}

static const char *
account_member(EinsoraTestResponse *response, const char *member)
{
    JsonObject *root = json_node_get_object(response->json);
    JsonObject *account = json_object_get_object_member(root, "account");

    g_assert_nonnull(account);
    return json_object_get_string_member_with_default(account, member, NULL);
}

/* POST /v1/admin/accounts: the new account's ID in *@id, its token back. */
static gchar *
create_account(const char *token, const char *body, gchar **id)
{
    g_autoptr(EinsoraTestResponse) created = call("POST", "/v1/admin/accounts", token, body);
    const char *secret;

    g_assert_cmpuint(created->status, ==, 201);
    secret = einsora_test_response_string(created, "secret");
    g_assert_true(g_str_has_prefix(secret, "tsk_"));
    g_ptr_array_add(secrets, g_strdup(secret));
    *id = g_strdup(account_member(created, "id"));
    return g_strdup(secret);
}

/* einsora @argv with @input on its standard input. */
static gchar *
cli_with_input(const char *token, const char *const *argv, const char *input, gint *status)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                  G_SUBPROCESS_FLAGS_STDERR_MERGE);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    gchar *out = NULL;

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", daemon_->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", token, TRUE);
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    g_ptr_array_add(args, (gpointer)g_getenv("EINSORA_CLI"));
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add(args, (gpointer)argv[i]);
    g_ptr_array_add(args, NULL);
    process = g_subprocess_launcher_spawnv(launcher, (const char *const *)args->pdata, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, input, NULL, &out, NULL, &error));
    g_assert_no_error(error);
    *status = g_subprocess_get_exit_status(process);
    g_test_message("einsora %s -> %d\n%s", argv[0], *status, out);
    return out;
}

static gchar *
cli(const char *token, const char *const *argv, gint *status)
{
    return cli_with_input(token, argv, NULL, status);
}

static gchar *
tenant_id_of(const char *token)
{
    g_autoptr(EinsoraTestResponse) me = call("GET", "/v1/me", token, NULL);

    g_assert_cmpuint(me->status, ==, 200);
    return g_strdup(einsora_test_response_string(me, "tenant_id"));
}

static void
test_lab_people(void)
{
    const char *owner = daemon_->owner_token;
    g_autofree gchar *lead_id = NULL;
    g_autofree gchar *member_id = NULL;
    g_autofree gchar *lead = NULL;
    g_autofree gchar *member = NULL;
    g_autofree gchar *team = NULL;
    g_autofree gchar *body = NULL;
    g_autofree gchar *quota_path = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *owner_id = NULL;
    const char *gpu_notebook = "{\"kind\":\"notebook\",\"name\":\"big\",\"gpu_class\":\"" GPU_CLASS
                               "\",\"image\":\"jupyter-notebook\"}";

    /* The owner makes a team: its lead, then a member who joins it. */
    lead =
        create_account(owner, "{\"email\":\"Lead@Lab.example\",\"new_tenant\":\"team\"}", &lead_id);
    team = tenant_id_of(lead);
    body = g_strdup_printf("{\"email\":\"member@lab.example\",\"tenant_id\":\"%s\"}", team);
    member = create_account(owner, body, &member_id);
    {
        g_autofree gchar *member_team = tenant_id_of(member);
        g_assert_cmpstr(member_team, ==, team);
    }
    {
        g_autoptr(EinsoraTestResponse) taken = call("POST", "/v1/admin/accounts", owner, body);
        g_assert_cmpuint(taken->status, ==, 409);
    }
    {
        g_autoptr(EinsoraTestResponse) both =
            call("POST", "/v1/admin/accounts", owner,
                 "{\"email\":\"x@lab.example\",\"new_tenant\":\"x\",\"tenant_id\":\"00000000-0000-"
                 "0000-0000-000000000000\"}");
        g_assert_cmpuint(both->status, ==, 400);
    }
    {
        g_autoptr(EinsoraTestResponse) list = call("GET", "/v1/admin/accounts", owner, NULL);
        JsonArray *accounts =
            json_object_get_array_member(json_node_get_object(list->json), "accounts");
        g_assert_cmpuint(list->status, ==, 200);
        g_assert_cmpuint(json_array_get_length(accounts), ==, 3);
        for (guint i = 0; i < 3; i++) {
            JsonObject *account = json_array_get_object_element(accounts, i);
            const char *email = json_object_get_string_member(account, "email");
            gboolean admin = json_object_get_boolean_member(account, "admin");
            g_assert_cmpint(admin, ==, g_str_equal(email, "owner@localhost"));
            if (g_str_equal(email, "lead@lab.example")) {
                g_assert_cmpstr(json_object_get_string_member(account, "role"), ==, "owner");
                g_assert_cmpstr(json_object_get_string_member(account, "tenant"), ==, "team");
            }
            if (g_str_equal(email, "member@lab.example"))
                g_assert_cmpstr(json_object_get_string_member(account, "role"), ==, "member");
            if (admin)
                owner_id = g_strdup(json_object_get_string_member(account, "id"));
        }
    }

    /* Not an admin: 403 from every /v1/admin route, whatever the body. */
    {
        const struct {
            const char *method;
            const char *path;
            const char *body;
        } refused[] = {
            {"GET", "/v1/admin/accounts", NULL},
            {"GET", "/v1/admin/tenants", NULL},
            {"POST", "/v1/admin/accounts",
             "{\"email\":\"sneak@lab.example\",\"new_tenant\":\"s\"}"},
            {"POST", "/v1/admin/accounts", "{\"nonsense\":1}"},
            {"PUT", "/v1/admin/tenants/00000000-0000-0000-0000-000000000000/quotas/" GPU_CLASS,
             "{\"gpus\":64}"},
            {"PUT", "/v1/admin/tenants/00000000-0000-0000-0000-000000000001/quotas/nope",
             "not json"},
        };
        g_autofree gchar *disable = g_strdup_printf("/v1/admin/accounts/%s/disable", owner_id);
        g_autofree gchar *quota = g_strdup_printf("/v1/admin/tenants/%s/quotas/" GPU_CLASS, team);
        for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
            g_autoptr(EinsoraTestResponse) no =
                call(refused[i].method, refused[i].path, lead, refused[i].body);
            g_test_message("%s %s: %u %s", refused[i].method, refused[i].path, no->status,
                           no->body);
            g_assert_cmpuint(no->status, ==, 403);
            g_assert_cmpstr(einsora_test_response_error_code(no), ==, "forbidden");
        }
        {
            g_autoptr(EinsoraTestResponse) no = call("POST", disable, member, NULL);
            g_assert_cmpuint(no->status, ==, 403);
        }
        {
            g_autoptr(EinsoraTestResponse) no = call("PUT", quota, lead, "{\"gpus\":8}");
            g_assert_cmpuint(no->status, ==, 403);
        }
    }

    /* No quota yet: refused, and told who can give one. */
    {
        g_autoptr(EinsoraTestResponse) no = call("POST", "/v1/workloads", lead, gpu_notebook);
        g_assert_cmpuint(no->status, ==, 409);
        g_assert_cmpstr(einsora_test_response_error_code(no), ==, "quota_exceeded");
        g_assert_nonnull(strstr(no->body, "a Lab admin can give it one"));
    }
    /* The admin gives one; bad quotas change nothing. */
    quota_path = g_strdup_printf("/v1/admin/tenants/%s/quotas/" GPU_CLASS, team);
    {
        const struct {
            const char *path;
            const char *body;
            guint status;
        } bad[] = {
            {quota_path, "{\"gpus\":-1}", 400},
            {quota_path, "{\"gpus\":5000}", 400},
            {quota_path, "{\"gpus\":\"two\"}", 400},
            {"/v1/admin/tenants/00000000-0000-0000-0000-000000000000/quotas/" GPU_CLASS,
             "{\"gpus\":1}", 404},
        };
        g_autofree gchar *cpu_path = g_strdup_printf("/v1/admin/tenants/%s/quotas/cpu-2c-4g", team);
        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
            g_autoptr(EinsoraTestResponse) no = call("PUT", bad[i].path, owner, bad[i].body);
            g_assert_cmpuint(no->status, ==, bad[i].status);
        }
        {
            g_autoptr(EinsoraTestResponse) no = call("PUT", cpu_path, owner, "{\"gpus\":1}");
            g_assert_cmpuint(no->status, ==, 400);
            g_assert_nonnull(strstr(no->body, "not a GPU class"));
        }
    }
    {
        g_autoptr(EinsoraTestResponse) set = call("PUT", quota_path, owner, "{\"gpus\":1}");
        g_assert_cmpuint(set->status, ==, 200);
    }
    {
        g_autoptr(EinsoraTestResponse) tenants = call("GET", "/v1/admin/tenants", owner, NULL);
        JsonArray *list =
            json_object_get_array_member(json_node_get_object(tenants->json), "tenants");
        gboolean seen = FALSE;
        for (guint i = 0; i < json_array_get_length(list); i++) {
            JsonObject *tenant = json_array_get_object_element(list, i);
            if (g_str_equal(json_object_get_string_member(tenant, "id"), team)) {
                JsonObject *quotas = json_object_get_object_member(tenant, "quotas");
                g_assert_cmpint(json_object_get_int_member(quotas, GPU_CLASS), ==, 1);
                g_assert_cmpint(json_object_get_int_member(quotas, "nvidia-l4-24gb"), ==, 0);
                seen = TRUE;
            }
        }
        g_assert_true(seen);
    }
    /* One GPU: the first create passes (it waits for a machine), the
     * second is past the quota. */
    {
        g_autoptr(EinsoraTestResponse) yes = call("POST", "/v1/workloads", lead, gpu_notebook);
        g_autoptr(EinsoraTestResponse) no = call("POST", "/v1/workloads", member, gpu_notebook);
        g_assert_cmpuint(yes->status, ==, 201);
        g_assert_cmpuint(no->status, ==, 409);
        g_assert_nonnull(strstr(no->body, "a Lab admin can raise it"));
        /* The team's workload is the member's to see; the owner's tenant
         * doesn't see it. */
        {
            g_autofree gchar *path =
                g_strdup_printf("/v1/workloads/%s", einsora_test_response_string(yes, "id"));
            g_autoptr(EinsoraTestResponse) seen = call("GET", path, member, NULL);
            g_autoptr(EinsoraTestResponse) hidden = call("GET", path, owner, NULL);
            g_assert_cmpuint(seen->status, ==, 200);
            g_assert_cmpuint(hidden->status, ==, 404);
        }
    }

    /* Disabled: refused at its next request; enabled: back. An admin
     * can't disable itself. */
    {
        g_autofree gchar *disable = g_strdup_printf("/v1/admin/accounts/%s/disable", member_id);
        g_autofree gchar *enable = g_strdup_printf("/v1/admin/accounts/%s/enable", member_id);
        g_autofree gchar *self = g_strdup_printf("/v1/admin/accounts/%s/disable", owner_id);
        g_autoptr(EinsoraTestResponse) off = call("POST", disable, owner, NULL);
        g_autoptr(EinsoraTestResponse) refused = NULL;
        g_autoptr(EinsoraTestResponse) on = NULL;
        g_autoptr(EinsoraTestResponse) back = NULL;
        g_autoptr(EinsoraTestResponse) not_self = call("POST", self, owner, NULL);
        g_autoptr(EinsoraTestResponse) unknown = call(
            "POST", "/v1/admin/accounts/00000000-0000-0000-0000-000000000000/disable", owner, NULL);

        g_assert_cmpuint(off->status, ==, 200);
        g_assert_nonnull(account_member(off, "disabled_at"));
        refused = call("GET", "/v1/me", member, NULL);
        g_assert_cmpuint(refused->status, ==, 401);
        on = call("POST", enable, owner, NULL);
        g_assert_cmpuint(on->status, ==, 200);
        g_assert_null(account_member(on, "disabled_at"));
        back = call("GET", "/v1/me", member, NULL);
        g_assert_cmpuint(back->status, ==, 200);
        g_assert_cmpuint(not_self->status, ==, 400);
        g_assert_cmpuint(unknown->status, ==, 404);
    }

    /* The team's trail, seen by its people; the owner's tenant's holds
     * none of it. */
    {
        g_autoptr(EinsoraTestResponse) trail = call("GET", "/v1/audit", member, NULL);
        g_autoptr(EinsoraTestResponse) other = call("GET", "/v1/audit", owner, NULL);
        JsonArray *events =
            json_object_get_array_member(json_node_get_object(trail->json), "events");
        const char *const actions[] = {"account.created", "account.created", "quota.set",
                                       "account.disabled", "account.enabled"};

        g_assert_cmpuint(trail->status, ==, 200);
        g_assert_cmpuint(json_array_get_length(events), ==, G_N_ELEMENTS(actions));
        for (guint i = 0; i < G_N_ELEMENTS(actions); i++) {
            JsonObject *event = json_array_get_object_element(events, i);
            g_assert_cmpstr(json_object_get_string_member(event, "action"), ==, actions[i]);
            g_assert_cmpstr(json_object_get_string_member(event, "actor"), ==, "owner@localhost");
        }
        g_assert_nonnull(strstr(trail->body, "1 GPU(s), was 0"));
        g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                             json_node_get_object(other->json), "events")),
                         ==, 0);
        for (guint i = 0; i < secrets->len; i++)
            g_assert_null(strstr(trail->body, g_ptr_array_index(secrets, i)));
    }

    /* The CLI, as the admin and as the lead. */
    {
        gint status;
        g_autofree gchar *accounts =
            cli(owner, (const char *const[]){"admin", "accounts", NULL}, &status);
        g_autofree gchar *tenants =
            cli(owner, (const char *const[]){"admin", "tenants", NULL}, &status);
        g_autofree gchar *set =
            cli(owner, (const char *const[]){"admin", "quota", "set", "team", GPU_CLASS, "2", NULL},
                &status);
        g_autofree gchar *tenants_after = NULL;
        g_autofree gchar *created = NULL;
        g_autofree gchar *disabled = NULL;
        g_autofree gchar *refused = NULL;
        g_autofree gchar *audit = NULL;

        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(accounts, "member@lab.example"));
        g_assert_nonnull(strstr(tenants, GPU_CLASS " 1"));
        tenants_after = cli(owner, (const char *const[]){"admin", "tenants", NULL}, &status);
        g_assert_nonnull(strstr(tenants_after, GPU_CLASS " 2"));
        created = cli(owner,
                      (const char *const[]){"admin", "accounts", "create", "third@lab.example",
                                            "--tenant", "team", NULL},
                      &status);
        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(created, "tsk_"));
        disabled = cli(
            owner, (const char *const[]){"admin", "accounts", "disable", "third@lab.example", NULL},
            &status);
        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(disabled, "is disabled"));
        refused = cli(lead, (const char *const[]){"admin", "accounts", NULL}, &status);
        g_assert_cmpint(status, ==, 1);
        g_assert_nonnull(strstr(refused, "forbidden"));
        audit = cli(lead, (const char *const[]){"audit", NULL}, &status);
        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(audit, "quota.set"));
        g_assert_nonnull(strstr(audit, "third@lab.example"));
    }

    /* A reset: a temporary password, once; signed in with it, the
     * session may only change it; changed, everything again. */
    {
        g_autofree gchar *reset_path =
            g_strdup_printf("/v1/admin/accounts/%s/reset-password", member_id);
        g_autoptr(EinsoraTestResponse) not_admin = call("POST", reset_path, lead, NULL);
        g_autoptr(EinsoraTestResponse) reset = call("POST", reset_path, owner, NULL);
        g_autoptr(EinsoraTestResponse) login = NULL;
        g_autoptr(EinsoraTestResponse) blocked = NULL;
        g_autoptr(EinsoraTestResponse) me = NULL;
        g_autofree gchar *temporary = NULL;
        g_autofree gchar *login_body = NULL;
        g_autofree gchar *cookie = NULL;
        g_autofree gchar *wrong = NULL;
        g_autofree gchar *right = NULL;
        const char *csrf;
        const char *set_cookie;

        g_assert_cmpuint(not_admin->status, ==, 403);
        g_assert_cmpuint(reset->status, ==, 200);
        temporary = g_strdup(einsora_test_response_string(reset, "password"));
        g_assert_true(g_str_has_prefix(temporary, "tmp_"));
        g_ptr_array_add(secrets, g_strdup(temporary));
        login_body =
            g_strdup_printf("{\"email\":\"member@lab.example\",\"password\":\"%s\"}", temporary);
        login = call("POST", "/v1/login", NULL, login_body);
        g_assert_cmpuint(login->status, ==, 200);
        g_assert_true(json_object_get_boolean_member(json_node_get_object(login->json),
                                                     "password_must_change"));
        csrf = einsora_test_response_string(login, "csrf_token");
        set_cookie = soup_message_headers_get_one(login->headers, "Set-Cookie");
        g_assert_nonnull(set_cookie);
        cookie = g_strndup(set_cookie, strcspn(set_cookie, ";"));
        {
            const char *const headers[] = {"Cookie", cookie, "X-CSRF-Token", csrf, NULL};
            blocked =
                einsora_test_request(daemon_, "GET", "/v1/workloads", NULL, NULL, NULL, headers);
            g_assert_cmpuint(blocked->status, ==, 403);
            g_assert_cmpstr(einsora_test_response_error_code(blocked), ==,
                            "password_change_required");
            me = einsora_test_request(daemon_, "GET", "/v1/me", NULL, NULL, NULL, headers);
            g_assert_cmpuint(me->status, ==, 200);
            {
                g_autoptr(EinsoraTestResponse) short_one = einsora_test_request(
                    daemon_, "POST", "/v1/me/password", NULL, JSON,
                    "{\"current_password\":\"x\",\"new_password\":\"short\"}", headers);
                g_assert_cmpuint(short_one->status, ==, 400);
            }
            wrong = g_strdup("{\"current_password\":\"not-it-at-all\",\"new_password\":"
                             "\"correct horse battery\"}");
            {
                g_autoptr(EinsoraTestResponse) refused = einsora_test_request(
                    daemon_, "POST", "/v1/me/password", NULL, JSON, wrong, headers);
                g_assert_cmpuint(refused->status, ==, 403);
            }
            right = g_strdup_printf(
                "{\"current_password\":\"%s\",\"new_password\":\"correct horse battery\"}",
                temporary);
            {
                g_autoptr(EinsoraTestResponse) changed = einsora_test_request(
                    daemon_, "POST", "/v1/me/password", NULL, JSON, right, headers);
                /* Changed: every session signed in with a password ends,
                 * this one too. */
                g_autoptr(EinsoraTestResponse) ended = einsora_test_request(
                    daemon_, "GET", "/v1/workloads", NULL, NULL, NULL, headers);
                g_assert_cmpuint(changed->status, ==, 204);
                g_assert_cmpuint(ended->status, ==, 401);
            }
        }
        {
            g_autoptr(EinsoraTestResponse) old = call("POST", "/v1/login", NULL, login_body);
            g_autoptr(EinsoraTestResponse) fresh =
                call("POST", "/v1/login", NULL,
                     "{\"email\":\"member@lab.example\",\"password\":\"correct horse battery\"}");
            g_autoptr(EinsoraTestResponse) trail = call("GET", "/v1/audit", member, NULL);
            g_assert_cmpuint(old->status, ==, 401);
            g_assert_cmpuint(fresh->status, ==, 200);
            g_assert_false(json_object_get_boolean_member(json_node_get_object(fresh->json),
                                                          "password_must_change"));
            g_assert_nonnull(strstr(trail->body, "password.reset"));
            g_assert_nonnull(strstr(trail->body, "password.changed"));
            g_assert_null(strstr(trail->body, temporary));
        }
    }

    /* The owner shares its machine; the lead can't, nor see it. */
    {
        g_autoptr(EinsoraTestResponse) machines = call("GET", "/v1/machines", owner, NULL);
        JsonObject *machine = json_array_get_object_element(
            json_object_get_array_member(json_node_get_object(machines->json), "machines"), 0);
        const char *machine_id = json_object_get_string_member(machine, "id");
        g_autofree gchar *path = g_strdup_printf("/v1/machines/%s/sharing", machine_id);
        g_autofree gchar *prefix = g_strndup(machine_id, 8);
        g_autoptr(EinsoraTestResponse) theirs =
            call("PUT", path, lead, "{\"sharing\":\"community\"}");
        g_autoptr(EinsoraTestResponse) invite =
            call("PUT", path, owner, "{\"sharing\":\"invite\"}");
        g_autoptr(EinsoraTestResponse) nonsense = call("PUT", path, owner, "{\"sharing\":\"all\"}");
        g_autoptr(EinsoraTestResponse) trail = NULL;
        g_autofree gchar *shared = NULL;
        g_autofree gchar *refused = NULL;
        gint status;

        g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(machine, "guests"),
                                                   "workloads"),
                        ==, 0);
        g_assert_cmpuint(theirs->status, ==, 404);
        g_assert_cmpuint(invite->status, ==, 400);
        g_assert_cmpuint(nonsense->status, ==, 400);
        shared = cli(owner, (const char *const[]){"share", prefix, "community", NULL}, &status);
        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(shared, "is now community"));
        refused = cli(lead, (const char *const[]){"share", prefix, "community", NULL}, &status);
        g_assert_cmpint(status, ==, 1);
        trail = call("GET", "/v1/audit", owner, NULL);
        g_assert_nonnull(strstr(trail->body, "machine.sharing"));
        g_assert_nonnull(strstr(trail->body, "community, was private"));
    }

    /* The same through the CLI: the lead sets a first password (none
     * yet: an empty current one), then changes it. */
    {
        gint status;
        g_autofree gchar *first = cli_with_input(lead, (const char *const[]){"password", NULL},
                                                 "\nfirst password 1\n", &status);
        g_autofree gchar *wrong = NULL;
        g_autofree gchar *second = NULL;
        g_autofree gchar *reset = NULL;

        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(first, "Password changed"));
        wrong = cli_with_input(lead, (const char *const[]){"password", NULL},
                               "not it\nsecond password 2\n", &status);
        g_assert_cmpint(status, ==, 1);
        g_assert_nonnull(strstr(wrong, "the current password is wrong"));
        second = cli_with_input(lead, (const char *const[]){"password", NULL},
                                "first password 1\nsecond password 2\n", &status);
        g_assert_cmpint(status, ==, 0);
        reset = cli(
            owner,
            (const char *const[]){"admin", "accounts", "reset-password", "lead@lab.example", NULL},
            &status);
        g_assert_cmpint(status, ==, 0);
        g_assert_nonnull(strstr(reset, "tmp_"));
        g_ptr_array_add(secrets,
                        g_strndup(strstr(reset, "tmp_"), strcspn(strstr(reset, "tmp_"), "\n")));
    }

    log = einsora_test_daemon_read_log(daemon_);
    g_assert_nonnull(strstr(log, "audit: owner@localhost: quota.set " GPU_CLASS));
    g_assert_null(strstr(log, "correct horse battery"));
    g_assert_null(strstr(log, "second password 2"));
    for (guint i = 0; i < secrets->len; i++)
        g_assert_null(strstr(log, g_ptr_array_index(secrets, i)));
}

/* Fallback classes at create (docs/adr/0052): checked against the
 * catalog, the image and the tenant's quotas; "cpu" is the smallest CPU
 * class as big as the one asked for; every bad list changes nothing. */
static void
test_fallback_create(void)
{
    const char *owner = daemon_->owner_token;
    const struct {
        const char *body;
        guint status;
        const char *says;
    } bad[] = {
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback\":[\"nope\"]}",
         400, "nope is not a class"},
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback\":[\"h100-80gb\"]}",
         400, "named twice"},
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback\":[\"cpu\",\"cpu-8c-32g\",\"cpu-4c-16g\",\"cpu-2c-4g\",\"cpu-1c-2g\"]}",
         400, "at most 4"},
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback\":\"cpu\"}",
         400, "a list"},
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback_after\":60}",
         400, "goes with fallback"},
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback\":[\"cpu\"],\"fallback_after\":-5}",
         400, "fallback_after"},
        {"{\"kind\":\"notebook\",\"gpu_class\":\"h100-80gb\",\"image\":\"jupyter-notebook\","
         "\"fallback\":[\"cpu\"]}",
         400, "no CPU class here is as big as h100-80gb"},
    };
    g_autoptr(EinsoraTestResponse) before = call("GET", "/v1/workloads", owner, NULL);
    guint count = json_array_get_length(
        json_object_get_array_member(json_node_get_object(before->json), "workloads"));

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(EinsoraTestResponse) no = call("POST", "/v1/workloads", owner, bad[i].body);
        g_test_message("%s -> %u %s", bad[i].body, no->status, no->body);
        g_assert_cmpuint(no->status, ==, bad[i].status);
        g_assert_nonnull(strstr(no->body, bad[i].says));
    }
    {
        g_autoptr(EinsoraTestResponse) after = call("GET", "/v1/workloads", owner, NULL);
        g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                             json_node_get_object(after->json), "workloads")),
                         ==, count);
    }
    {
        g_autoptr(EinsoraTestResponse) made = call(
            "POST", "/v1/workloads", owner,
            "{\"kind\":\"notebook\",\"gpu_class\":\"l40s-48gb\",\"image\":\"jupyter-notebook\","
            "\"fallback\":[\"nvidia-l4-24gb\",\"cpu\"],\"fallback_after\":600}");
        JsonObject *workload = NULL;
        JsonArray *fallback;

        g_assert_cmpuint(made->status, ==, 201);
        workload = json_node_get_object(made->json);
        fallback = json_object_get_array_member(workload, "fallback");
        g_assert_cmpuint(json_array_get_length(fallback), ==, 2);
        g_assert_cmpstr(json_array_get_string_element(fallback, 0), ==, "nvidia-l4-24gb");
        /* l40s-48gb's 8 CPUs and 32 GiB: the smallest CPU class as big. */
        g_assert_cmpstr(json_array_get_string_element(fallback, 1), ==, "cpu-8c-32g");
        g_assert_cmpint(json_object_get_int_member(workload, "fallback_after"), ==, 600);
        g_assert_false(json_object_get_boolean_member(workload, "fallback_used"));
    }
    /* The CLI's --fallback and --fallback-after. */
    {
        gint status;
        g_autofree gchar *out =
            cli(owner,
                (const char *const[]){"launch", "--kind", "notebook", "--class", "l40s-48gb",
                                      "--image", "jupyter-notebook", "--fallback", "cpu",
                                      "--fallback-after", "10m", "--json", NULL},
                &status);
        g_autofree gchar *alone = cli(
            owner,
            (const char *const[]){"launch", "--kind", "notebook", "--class", "l40s-48gb", "--image",
                                  "jupyter-notebook", "--fallback-after", "10m", NULL},
            &status);
        g_assert_nonnull(strstr(out, "\"fallback\":[\"cpu-8c-32g\"]"));
        g_assert_nonnull(strstr(out, "\"fallback_after\":600"));
        g_assert_cmpint(status, ==, 2);
        g_assert_nonnull(strstr(alone, "--fallback-after goes with --fallback"));
    }
}

/* From the machine: --join adds a member to a tenant, --admin makes an
 * admin who may then use /v1/admin. */
static void
test_daemon_command(void)
{
    g_autoptr(EinsoraTestDaemon) lab = einsora_test_daemon_new();
    g_autofree gchar *first = NULL;
    g_autofree gchar *joined = NULL;
    g_autofree gchar *admin = NULL;
    g_autoptr(GSubprocess) unknown = NULL;
    g_autoptr(GError) error = NULL;

    einsora_test_daemon_start(lab);
    einsora_test_daemon_stop(lab);
    first = einsora_test_daemon_create_account(lab, "crew", "boss@crew.example", NULL);
    /* einsora_test_daemon_create_account passes no --join or --admin:
     * both by hand. */
    {
        const char *argv[] = {
            einsora_test_daemon_path(), "--data-dir", lab->data_dir, "--tenant", "crew", "--email",
            "hand@crew.example",        "--join",     "account",     "create",   NULL};
        g_autoptr(GSubprocess) process =
            g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
        g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &joined, NULL, &error));
        g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
        g_strstrip(joined);
    }
    {
        const char *argv[] = {
            einsora_test_daemon_path(), "--data-dir", lab->data_dir, "--tenant", "ops", "--email",
            "root@ops.example",         "--admin",    "account",     "create",   NULL};
        g_autoptr(GSubprocess) process =
            g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
        g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &admin, NULL, &error));
        g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
        g_strstrip(admin);
    }
    {
        const char *argv[] = {einsora_test_daemon_path(),
                              "--data-dir",
                              lab->data_dir,
                              "--tenant",
                              "nobody",
                              "--email",
                              "x@nobody.example",
                              "--join",
                              "account",
                              "create",
                              NULL};
        unknown = g_subprocess_newv(
            argv, G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
        g_assert_true(g_subprocess_wait(unknown, NULL, &error));
        g_assert_cmpint(g_subprocess_get_exit_status(unknown), !=, 0);
    }
    einsora_test_daemon_start(lab);
    {
        g_autoptr(EinsoraTestResponse) me_first =
            einsora_test_request(lab, "GET", "/v1/me", first, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) me_joined =
            einsora_test_request(lab, "GET", "/v1/me", joined, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) as_admin =
            einsora_test_request(lab, "GET", "/v1/admin/accounts", admin, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) not_admin =
            einsora_test_request(lab, "GET", "/v1/admin/accounts", first, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) trail =
            einsora_test_request(lab, "GET", "/v1/audit", first, NULL, NULL, NULL);

        g_assert_cmpstr(einsora_test_response_string(me_first, "tenant_id"), ==,
                        einsora_test_response_string(me_joined, "tenant_id"));
        g_assert_cmpuint(as_admin->status, ==, 200);
        g_assert_cmpuint(not_admin->status, ==, 403);
        g_assert_nonnull(strstr(trail->body, "einsora-daemon account create"));
        g_assert_nonnull(strstr(trail->body, "hand@crew.example"));
    }
    einsora_test_daemon_stop(lab);
}

/* The password @token's account is to have, set as its owner would. */
static void
set_password(const char *token, const char *current, const char *password)
{
    g_autofree gchar *body =
        g_strdup_printf("{\"current_password\":\"%s\",\"new_password\":\"%s\"}", current, password);
    g_autoptr(EinsoraTestResponse) set = call("POST", "/v1/me/password", token, body);

    g_assert_cmpuint(set->status, ==, 204);
}

static gchar *
sign_in(const char *email, const char *password, const char *new_password, GError **error)
{
    g_autoptr(EinsoraClient) client = einsora_client_new(daemon_->uri, NULL);
    gchar *secret =
        einsora_client_sign_in(client, email, password, new_password, "Einsora app on test", error);

    if (secret != NULL)
        g_ptr_array_add(secrets, g_strdup(secret));
    return secret;
}

static gchar *
subject_of(const char *token)
{
    g_autoptr(EinsoraClient) client = einsora_client_new(daemon_->uri, token);
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) me = einsora_client_get_me(client, NULL, &error);

    g_assert_no_error(error);
    return g_strdup(json_object_get_string_member(json_node_get_object(me), "subject"));
}

/* Email and password give a token of the account's own, named, listed
 * like any other; a wrong password gives none; a password an admin reset
 * must be changed on the way, after which only the new one works. */
static void
test_sign_in(void)
{
    const char *first = "a long first password 1";
    const char *second = "a long second password 2";
    g_autofree gchar *id = NULL;
    g_autofree gchar *token = create_account(
        daemon_->owner_token, "{\"email\":\"carol@lab.example\",\"new_tenant\":\"carols\"}", &id);
    g_autofree gchar *signed_in = NULL;
    g_autofree gchar *temporary = NULL;
    g_autoptr(GError) error = NULL;

    set_password(token, "", first);
    signed_in = sign_in("carol@lab.example", first, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(g_str_has_prefix(signed_in, "tsk_"));
    {
        g_autofree gchar *subject = subject_of(signed_in);
        g_autoptr(EinsoraTestResponse) tokens = call("GET", "/v1/tokens", signed_in, NULL);
        g_assert_cmpstr(subject, ==, "carol@lab.example");
        g_assert_nonnull(strstr(tokens->body, "Einsora app on test"));
    }
    g_clear_pointer(&signed_in, g_free);
    signed_in = sign_in("carol@lab.example", "not the password", NULL, &error);
    g_assert_null(signed_in);
    g_assert_cmpstr(einsora_client_error_get_code(error), ==, "unauthenticated");
    g_clear_error(&error);

    /* Reset by the admin: refused until a new password is given. */
    {
        g_autofree gchar *path = g_strdup_printf("/v1/admin/accounts/%s/reset-password", id);
        g_autoptr(EinsoraTestResponse) reset = call("POST", path, daemon_->owner_token, NULL);
        g_assert_cmpuint(reset->status, ==, 200);
        temporary = g_strdup(einsora_test_response_string(reset, "password"));
        g_ptr_array_add(secrets, g_strdup(temporary));
    }
    signed_in = sign_in("carol@lab.example", temporary, NULL, &error);
    g_assert_null(signed_in);
    g_assert_cmpstr(einsora_client_error_get_code(error), ==, "password_change_required");
    g_clear_error(&error);
    signed_in = sign_in("carol@lab.example", temporary, second, &error);
    g_assert_no_error(error);
    {
        g_autofree gchar *subject = subject_of(signed_in);
        g_assert_cmpstr(subject, ==, "carol@lab.example");
    }
    g_clear_pointer(&signed_in, g_free);
    signed_in = sign_in("carol@lab.example", temporary, NULL, &error);
    g_assert_null(signed_in);
    g_clear_error(&error);
    signed_in = sign_in("carol@lab.example", second, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(signed_in);
}

/* /metrics is answered outside the routes' table, and still keeps the
 * gate of a reset password: the owner signed in with a temporary one
 * sees no metrics until it is changed. */
static void
test_metrics_after_reset(void)
{
    g_autofree gchar *owner_id = NULL;
    g_autofree gchar *temporary = NULL;
    g_autofree gchar *cookie = NULL;

    {
        g_autoptr(EinsoraTestResponse) me = call("GET", "/v1/me", daemon_->owner_token, NULL);
        owner_id = g_strdup(einsora_test_response_string(me, "user_id"));
    }
    {
        g_autofree gchar *path = g_strdup_printf("/v1/admin/accounts/%s/reset-password", owner_id);
        g_autoptr(EinsoraTestResponse) reset = call("POST", path, daemon_->owner_token, NULL);
        g_assert_cmpuint(reset->status, ==, 200);
        temporary = g_strdup(einsora_test_response_string(reset, "password"));
        g_ptr_array_add(secrets, g_strdup(temporary));
    }
    {
        g_autofree gchar *body =
            g_strdup_printf("{\"email\":\"owner@localhost\",\"password\":\"%s\"}", temporary);
        g_autoptr(EinsoraTestResponse) login = call("POST", "/v1/login", NULL, body);
        const char *set_cookie = soup_message_headers_get_one(login->headers, "Set-Cookie");
        g_assert_cmpuint(login->status, ==, 200);
        g_assert_nonnull(set_cookie);
        cookie = g_strndup(set_cookie, strcspn(set_cookie, ";"));
    }
    {
        const char *headers[] = {"Cookie", cookie, NULL};
        g_autoptr(EinsoraTestResponse) metrics =
            einsora_test_request(daemon_, "GET", "/metrics", NULL, NULL, NULL, headers);
        g_assert_cmpuint(metrics->status, ==, 403);
        g_assert_cmpstr(einsora_test_response_error_code(metrics), ==, "password_change_required");
    }
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    secrets = g_ptr_array_new_with_free_func(g_free);
    daemon_ = einsora_test_daemon_new();
    einsora_test_daemon_start(daemon_);
    g_ptr_array_add(secrets, g_strdup(daemon_->owner_token));
    g_test_add_func("/admin/lab-people", test_lab_people);
    g_test_add_func("/admin/daemon-command", test_daemon_command);
    g_test_add_func("/admin/fallback-create", test_fallback_create);
    g_test_add_func("/admin/sign-in", test_sign_in);
    g_test_add_func("/admin/metrics-after-reset", test_metrics_after_reset);
    status = g_test_run();
    einsora_test_daemon_stop(daemon_);
    einsora_test_daemon_free(daemon_);
    g_ptr_array_unref(secrets);
    return status;
}
