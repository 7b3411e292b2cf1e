#define G_LOG_DOMAIN "einsora-sim"

#include "einsora-sim-driver.h"

typedef enum {
    OP_NONE,
    OP_START,
    OP_STOP,
    OP_REMOVE,
} SimOp;

typedef struct {
    gchar *fail_code;     /* as scripted; NULL: it starts */
    gint64 exit_after_ms; /* -1: it never stops by itself */
    gboolean never_ready;
} SimScript;

typedef struct {
    EinsoraSimDriver *driver; /* unowned: the driver owns its workloads */
    gchar *workload_id;
    EinsoraStatusCode code;
    gint64 attempt; /* the attempt it last started */
    /* The one operation in flight, its timer and its cancellation watch. */
    SimOp op;
    GTask *task;
    GSource *op_timer;
    GSource *cancel_watch;
    EinsoraStatusCode code_if_cancelled;
    GSource *exit_timer;
} SimWorkload;

struct _EinsoraSimDriver {
    GObject parent_instance;

    GMainContext *context;
    guint start_delay_ms;
    guint stop_delay_ms;
    SimScript *script_for_all; /* NULL: none */
    GHashTable *scripts;       /* workload ID -> SimScript */
    GHashTable *workloads;     /* workload ID -> SimWorkload, never removed */
};

static void einsora_sim_driver_iface_init(EinsoraAgentDriverInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraSimDriver, einsora_sim_driver, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_AGENT_DRIVER,
                                                    einsora_sim_driver_iface_init))

static SimScript *
script_new(void)
{
    SimScript *script = g_new0(SimScript, 1);

    script->exit_after_ms = -1;
    return script;
}

static void
script_free(SimScript *script)
{
    if (script == NULL)
        return;
    g_free(script->fail_code);
    g_free(script);
}

static void
clear_source(GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
}

static void
workload_free(SimWorkload *workload)
{
    /* Nothing can be in flight: each task holds a reference on the driver. */
    g_warn_if_fail(workload->task == NULL);
    clear_source(&workload->op_timer);
    clear_source(&workload->cancel_watch);
    clear_source(&workload->exit_timer);
    g_clear_object(&workload->task);
    g_free(workload->workload_id);
    g_free(workload);
}

static void
einsora_sim_driver_finalize(GObject *object)
{
    EinsoraSimDriver *self = EINSORA_SIM_DRIVER(object);

    g_clear_pointer(&self->workloads, g_hash_table_unref);
    g_clear_pointer(&self->scripts, g_hash_table_unref);
    g_clear_pointer(&self->script_for_all, script_free);
    g_clear_pointer(&self->context, g_main_context_unref);
    G_OBJECT_CLASS(einsora_sim_driver_parent_class)->finalize(object);
}

static void
einsora_sim_driver_class_init(EinsoraSimDriverClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_sim_driver_finalize;
}

static void
einsora_sim_driver_init(EinsoraSimDriver *self)
{
    self->context = g_main_context_ref_thread_default();
    self->scripts =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)script_free);
    self->workloads =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)workload_free);
}

static void
log_status(const SimWorkload *workload, const char *event)
{
    g_autofree gchar *attempt = g_strdup_printf("%" G_GINT64_FORMAT, workload->attempt);

    g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_DEBUG, "WORKLOAD_ID", workload->workload_id,
                     "ATTEMPT", attempt, "MESSAGE", "%s: %s", event,
                     einsora_status_code_to_string(workload->code));
}

static SimWorkload *
workload_lookup(EinsoraSimDriver *self, const char *workload_id)
{
    return g_hash_table_lookup(self->workloads, workload_id);
}

static SimWorkload *
workload_ensure(EinsoraSimDriver *self, const char *workload_id)
{
    SimWorkload *workload = workload_lookup(self, workload_id);

    if (workload != NULL)
        return workload;
    workload = g_new0(SimWorkload, 1);
    workload->driver = self;
    workload->workload_id = g_strdup(workload_id);
    workload->code = EINSORA_STATUS_CODE_UNKNOWN;
    workload->attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    g_hash_table_insert(self->workloads, workload->workload_id, workload);
    return workload;
}

static const SimScript *
script_for(EinsoraSimDriver *self, const char *workload_id)
{
    const SimScript *script = g_hash_table_lookup(self->scripts, workload_id);

    return script != NULL ? script : self->script_for_all;
}

static GSource *
attach_timeout(EinsoraSimDriver *self, guint delay_ms, GSourceFunc func, gpointer data)
{
    GSource *source = g_timeout_source_new(delay_ms);

    g_source_set_callback(source, func, data, NULL);
    g_source_attach(source, self->context);
    return source;
}

/* Detaches the operation in flight and returns its task, for the caller to
 * answer once the workload's state is final: a task's callback may run at
 * once and call back into the driver. */
static GTask *
workload_take_op(SimWorkload *workload)
{
    clear_source(&workload->op_timer);
    clear_source(&workload->cancel_watch);
    workload->op = OP_NONE;
    return g_steal_pointer(&workload->task);
}

static void
return_superseded(GTask *task, const char *by)
{
    if (task == NULL)
        return;
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "superseded by a %s", by);
    g_object_unref(task);
}

/* Ends the operation in flight with @error (owned) or success. */
static void
workload_end_op(SimWorkload *workload, GError *error)
{
    g_autoptr(GTask) task = workload_take_op(workload);

    log_status(workload, error == NULL ? "done" : error->message);
    if (error != NULL)
        g_task_return_error(task, error);
    else
        g_task_return_boolean(task, TRUE);
}

static gboolean
on_exit_timer(gpointer user_data)
{
    SimWorkload *workload = user_data;

    g_clear_pointer(&workload->exit_timer, g_source_unref);
    if (workload->code == EINSORA_STATUS_CODE_RUNNING) {
        workload->code = EINSORA_STATUS_CODE_EXITED;
        log_status(workload, "stopped by itself");
        g_signal_emit_by_name(workload->driver, "status-changed", workload->workload_id);
    }
    return G_SOURCE_REMOVE;
}

/* A start's outcome follows the workload's script: fail with its code,
 * stay starting, or run (and perhaps stop by itself later). */
static GError *
finish_start(SimWorkload *workload)
{
    EinsoraSimDriver *self = workload->driver;
    const SimScript *script = script_for(self, workload->workload_id);

    if (script != NULL && script->fail_code != NULL) {
        workload->code = einsora_status_code_from_string(script->fail_code);
        return g_error_new(G_IO_ERROR, G_IO_ERROR_FAILED, "scripted to fail with %s",
                           script->fail_code);
    }
    /* Launched but never ready: a real driver reports long work as
     * progressing rather than holding the call open. */
    if (script != NULL && script->never_ready)
        return NULL;
    workload->code = EINSORA_STATUS_CODE_RUNNING;
    if (script != NULL && script->exit_after_ms >= 0)
        workload->exit_timer =
            attach_timeout(self, (guint)script->exit_after_ms, on_exit_timer, workload);
    return NULL;
}

static gboolean
on_op_timer(gpointer user_data)
{
    SimWorkload *workload = user_data;
    GError *error = NULL;

    switch (workload->op) {
    case OP_START:
        error = finish_start(workload);
        break;
    case OP_STOP:
        workload->code = EINSORA_STATUS_CODE_STOPPED;
        break;
    case OP_REMOVE:
        workload->code = EINSORA_STATUS_CODE_REMOVED;
        break;
    case OP_NONE:
    default:
        g_return_val_if_reached(G_SOURCE_REMOVE);
    }
    workload_end_op(workload, error);
    return G_SOURCE_REMOVE;
}

/* The caller's time limit ran out: abandon the operation. A cancelled
 * start leaves nothing running; a cancelled stop or removal leaves the
 * workload as it was. */
static gboolean
on_cancelled(GCancellable *cancellable, gpointer user_data)
{
    SimWorkload *workload = user_data;

    workload->code = workload->code_if_cancelled;
    workload_end_op(workload,
                    g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "operation cancelled"));
    return G_SOURCE_REMOVE;
}

static void
workload_begin_op(SimWorkload *workload, SimOp op, GTask *task, guint delay_ms,
                  EinsoraStatusCode code_if_cancelled)
{
    EinsoraSimDriver *self = workload->driver;
    GCancellable *cancellable = g_task_get_cancellable(task);

    workload->op = op;
    workload->task = task;
    workload->code_if_cancelled = code_if_cancelled;
    workload->op_timer = attach_timeout(self, delay_ms, on_op_timer, workload);
    if (cancellable != NULL) {
        workload->cancel_watch = g_cancellable_source_new(cancellable);
        g_source_set_callback(workload->cancel_watch, G_SOURCE_FUNC(on_cancelled), workload, NULL);
        g_source_attach(workload->cancel_watch, self->context);
    }
    log_status(workload, "begun");
}

/* What a superseded or cancelled operation goes back to, so that two
 * operations in a row still end where the first one began. */
static EinsoraStatusCode
code_before_op(const SimWorkload *workload)
{
    switch (workload->op) {
    case OP_START:
        return EINSORA_STATUS_CODE_STOPPED;
    case OP_STOP:
    case OP_REMOVE:
        return workload->code_if_cancelled;
    case OP_NONE:
    default:
        return workload->code;
    }
}

static const char *
sim_get_name(EinsoraAgentDriver *driver)
{
    return "sim";
}

static void
sim_start_async(EinsoraAgentDriver *driver, const EinsoraDesiredWorkload *desired,
                GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    EinsoraSimDriver *self = EINSORA_SIM_DRIVER(driver);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    SimWorkload *workload;

    g_task_set_source_tag(task, sim_start_async);
    if (g_task_return_error_if_cancelled(task))
        return;
    workload = workload_ensure(self, desired->workload_id);
    if (einsora_status_code_is_active(workload->code)) {
        /* At most once: the attempt it is already running is started. */
        if (workload->attempt == desired->attempt &&
            (workload->code == EINSORA_STATUS_CODE_STARTING ||
             workload->code == EINSORA_STATUS_CODE_RUNNING)) {
            g_task_return_boolean(task, TRUE);
            return;
        }
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_BUSY,
                                "attempt %" G_GINT64_FORMAT " is still %s; stop it first",
                                workload->attempt, einsora_status_code_to_string(workload->code));
        return;
    }
    workload->attempt = desired->attempt;
    workload->code = EINSORA_STATUS_CODE_STARTING;
    clear_source(&workload->exit_timer);
    workload_begin_op(workload, OP_START, g_steal_pointer(&task), self->start_delay_ms,
                      EINSORA_STATUS_CODE_STOPPED);
}

static void
sim_stop_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
               GAsyncReadyCallback callback, gpointer user_data)
{
    EinsoraSimDriver *self = EINSORA_SIM_DRIVER(driver);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GTask) superseded = NULL;
    SimWorkload *workload = workload_lookup(self, workload_id);
    EinsoraStatusCode code_if_cancelled;

    g_task_set_source_tag(task, sim_stop_async);
    if (g_task_return_error_if_cancelled(task))
        return;
    if (workload == NULL || !einsora_status_code_is_active(workload->code)) {
        /* Nothing runs: a failed or exited workload is parked at once,
         * keeping its data; a removed one has nothing to keep. */
        if (workload != NULL && workload->code != EINSORA_STATUS_CODE_REMOVED)
            workload->code = EINSORA_STATUS_CODE_STOPPED;
        g_task_return_boolean(task, TRUE);
        return;
    }
    if (workload->code == EINSORA_STATUS_CODE_REMOVING) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_BUSY, "it is being removed");
        return;
    }
    code_if_cancelled = code_before_op(workload);
    superseded = workload_take_op(workload);
    clear_source(&workload->exit_timer);
    workload->code = EINSORA_STATUS_CODE_STOPPING;
    workload_begin_op(workload, OP_STOP, g_steal_pointer(&task), self->stop_delay_ms,
                      code_if_cancelled);
    return_superseded(g_steal_pointer(&superseded), "stop");
}

/* Removal takes the stop delay: deleting data takes time too. */
static void
sim_remove_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
                 GAsyncReadyCallback callback, gpointer user_data)
{
    EinsoraSimDriver *self = EINSORA_SIM_DRIVER(driver);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GTask) superseded = NULL;
    SimWorkload *workload;
    EinsoraStatusCode code_if_cancelled;

    g_task_set_source_tag(task, sim_remove_async);
    if (g_task_return_error_if_cancelled(task))
        return;
    workload = workload_ensure(self, workload_id);
    if (workload->code == EINSORA_STATUS_CODE_REMOVED ||
        (workload->code == EINSORA_STATUS_CODE_UNKNOWN &&
         workload->attempt == EINSORA_AGENT_DRIVER_NO_ATTEMPT)) {
        /* Nothing held: removed already, and it says so from now on. */
        workload->code = EINSORA_STATUS_CODE_REMOVED;
        g_task_return_boolean(task, TRUE);
        return;
    }
    code_if_cancelled = code_before_op(workload);
    superseded = workload_take_op(workload);
    clear_source(&workload->exit_timer);
    workload->code = EINSORA_STATUS_CODE_REMOVING;
    workload_begin_op(workload, OP_REMOVE, g_steal_pointer(&task), self->stop_delay_ms,
                      code_if_cancelled);
    return_superseded(g_steal_pointer(&superseded), "removal");
}

static gboolean
sim_finish(EinsoraAgentDriver *driver, GAsyncResult *result, gpointer source_tag, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, driver), FALSE);
    g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == source_tag, FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}

static gboolean
sim_start_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return sim_finish(driver, result, sim_start_async, error);
}

static gboolean
sim_stop_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return sim_finish(driver, result, sim_stop_async, error);
}

static gboolean
sim_remove_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return sim_finish(driver, result, sim_remove_async, error);
}

static EinsoraStatusCode
sim_get_status(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt)
{
    SimWorkload *workload = workload_lookup(EINSORA_SIM_DRIVER(driver), workload_id);

    if (workload == NULL) {
        *attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
        return EINSORA_STATUS_CODE_UNKNOWN;
    }
    *attempt = workload->attempt;
    return workload->code;
}

static gint
compare_ids(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

static gchar **
sim_list_workloads(EinsoraAgentDriver *driver)
{
    EinsoraSimDriver *self = EINSORA_SIM_DRIVER(driver);
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter iter;
    SimWorkload *workload;

    g_hash_table_iter_init(&iter, self->workloads);
    while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&workload)) {
        if (workload->code != EINSORA_STATUS_CODE_REMOVED)
            g_ptr_array_add(ids, g_strdup(workload->workload_id));
    }
    g_ptr_array_sort(ids, compare_ids);
    g_ptr_array_add(ids, NULL);
    return (gchar **)g_ptr_array_free(g_steal_pointer(&ids), FALSE);
}

static void
einsora_sim_driver_iface_init(EinsoraAgentDriverInterface *iface)
{
    iface->get_name = sim_get_name;
    iface->start_async = sim_start_async;
    iface->start_finish = sim_start_finish;
    iface->stop_async = sim_stop_async;
    iface->stop_finish = sim_stop_finish;
    iface->remove_async = sim_remove_async;
    iface->remove_finish = sim_remove_finish;
    iface->get_status = sim_get_status;
    iface->list_workloads = sim_list_workloads;
}

EinsoraSimDriver *
einsora_sim_driver_new(void)
{
    return g_object_new(EINSORA_TYPE_SIM_DRIVER, NULL);
}

void
einsora_sim_driver_set_start_delay(EinsoraSimDriver *self, guint delay_ms)
{
    g_return_if_fail(EINSORA_IS_SIM_DRIVER(self));
    self->start_delay_ms = MIN(delay_ms, EINSORA_SIM_MAX_DELAY_MS);
}

void
einsora_sim_driver_set_stop_delay(EinsoraSimDriver *self, guint delay_ms)
{
    g_return_if_fail(EINSORA_IS_SIM_DRIVER(self));
    self->stop_delay_ms = MIN(delay_ms, EINSORA_SIM_MAX_DELAY_MS);
}

static SimScript *
script_ensure(EinsoraSimDriver *self, const char *workload_id)
{
    SimScript *script;

    if (workload_id == NULL) {
        if (self->script_for_all == NULL)
            self->script_for_all = script_new();
        return self->script_for_all;
    }
    script = g_hash_table_lookup(self->scripts, workload_id);
    if (script == NULL) {
        script = script_new();
        g_hash_table_insert(self->scripts, g_strdup(workload_id), script);
    }
    return script;
}

/* Any code a start can end in, including ones outside the vocabulary
 * ("weird_thing", which reads as UNKNOWN); not the codes of a start that
 * worked or of other operations. */
gboolean
einsora_sim_driver_script_failure(EinsoraSimDriver *self, const char *workload_id, const char *code,
                                  GError **error)
{
    static const EinsoraStatusCode not_failures[] = {
        EINSORA_STATUS_CODE_STARTING, EINSORA_STATUS_CODE_RUNNING,  EINSORA_STATUS_CODE_STOPPING,
        EINSORA_STATUS_CODE_STOPPED,  EINSORA_STATUS_CODE_REMOVING, EINSORA_STATUS_CODE_REMOVED,
        EINSORA_STATUS_CODE_EXITED,
    };
    EinsoraStatusCode parsed;
    SimScript *script;

    g_return_val_if_fail(EINSORA_IS_SIM_DRIVER(self), FALSE);
    g_return_val_if_fail(code != NULL, FALSE);

    parsed = einsora_status_code_from_string(code);
    if (*code == '\0' || strlen(code) > 64 || !g_utf8_validate(code, -1, NULL)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "a failure code is a short name, like out_of_memory");
        return FALSE;
    }
    for (guint i = 0; i < G_N_ELEMENTS(not_failures); i++) {
        if (parsed == not_failures[i]) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                        "%s is not a way for a start to fail%s", code,
                        parsed == EINSORA_STATUS_CODE_EXITED ? "; script an exit instead" : "");
            return FALSE;
        }
    }
    script = script_ensure(self, workload_id);
    g_free(script->fail_code);
    script->fail_code = g_strdup(code);
    return TRUE;
}

void
einsora_sim_driver_script_exit_after(EinsoraSimDriver *self, const char *workload_id,
                                     guint after_ms)
{
    g_return_if_fail(EINSORA_IS_SIM_DRIVER(self));
    script_ensure(self, workload_id)->exit_after_ms = MIN(after_ms, EINSORA_SIM_MAX_DELAY_MS);
}

void
einsora_sim_driver_script_never_ready(EinsoraSimDriver *self, const char *workload_id)
{
    g_return_if_fail(EINSORA_IS_SIM_DRIVER(self));
    script_ensure(self, workload_id)->never_ready = TRUE;
}

void
einsora_sim_driver_clear_scripts(EinsoraSimDriver *self)
{
    g_return_if_fail(EINSORA_IS_SIM_DRIVER(self));
    g_hash_table_remove_all(self->scripts);
    g_clear_pointer(&self->script_for_all, script_free);
}

/* An unset variable keeps the default; an empty or bad one is a mistake,
 * not a request for the default. */
static gboolean
read_env_ms(const char *variable, guint *out, GError **error)
{
    const char *value = g_getenv(variable);
    guint64 ms = 0;

    if (value == NULL)
        return TRUE;
    if (!g_ascii_string_to_unsigned(value, 10, 0, EINSORA_SIM_MAX_DELAY_MS, &ms, NULL)) {
        g_autofree gchar *shown = g_strescape(value, NULL);
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "%s: \"%.64s\" is not a number of milliseconds from 0 to %d", variable, shown,
                    EINSORA_SIM_MAX_DELAY_MS);
        return FALSE;
    }
    *out = (guint)ms;
    return TRUE;
}

/* For the real daemon's tests: EINSORA_SIM_START_DELAY_MS and
 * EINSORA_SIM_STOP_DELAY_MS, EINSORA_SIM_FAIL (a code every start fails
 * with) and EINSORA_SIM_EXIT_AFTER_MS (every workload stops by itself). */
EinsoraSimDriver *
einsora_sim_driver_new_from_env(GError **error)
{
    g_autoptr(EinsoraSimDriver) self = einsora_sim_driver_new();
    const char *fail = g_getenv("EINSORA_SIM_FAIL");
    guint exit_after_ms = 0;

    if (!read_env_ms("EINSORA_SIM_START_DELAY_MS", &self->start_delay_ms, error) ||
        !read_env_ms("EINSORA_SIM_STOP_DELAY_MS", &self->stop_delay_ms, error) ||
        !read_env_ms("EINSORA_SIM_EXIT_AFTER_MS", &exit_after_ms, error))
        return NULL;
    if (g_getenv("EINSORA_SIM_EXIT_AFTER_MS") != NULL)
        einsora_sim_driver_script_exit_after(self, NULL, exit_after_ms);
    if (fail != NULL && !einsora_sim_driver_script_failure(self, NULL, fail, error)) {
        g_prefix_error(error, "EINSORA_SIM_FAIL: ");
        return NULL;
    }
    return g_steal_pointer(&self);
}
