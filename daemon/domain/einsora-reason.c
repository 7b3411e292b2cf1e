#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-reason.h"

#include "einsora-gpu-mask.h"
#include "einsora-redact.h"

#define OPERATOR_LOG_HINT " The operator's log has the details under this workload's ID."

static gchar *
collapse_whitespace(const char *text)
{
    GString *out = g_string_sized_new(strlen(text));
    gboolean pending_space = FALSE;

    for (const char *p = text; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        if (g_unichar_isspace(c) || g_unichar_iscntrl(c) || c == 0x2028 || c == 0x2029) {
            pending_space = out->len > 0;
            continue;
        }
        /* Invisible format characters (U+202E reverses the text after it)
         * could make a timeline say something it doesn't. */
        if (g_unichar_type(c) == G_UNICODE_FORMAT)
            continue;
        if (pending_space)
            g_string_append_c(out, ' ');
        pending_space = FALSE;
        g_string_append_unichar(out, c);
    }
    return g_string_free(out, FALSE);
}

/* Cleans a reason before it is stored: valid UTF-8, one line without
 * control characters, credentials redacted, and bounded in length. */
gchar *
einsora_reason_clean(const char *reason)
{
    g_autofree gchar *redacted = einsora_redact_secrets(reason);
    g_autofree gchar *line = collapse_whitespace(redacted);

    if (*line == '\0')
        return g_strdup("no reason given");
    if (strlen(line) > EINSORA_REASON_MAX_BYTES) {
        /* Cut at a character boundary and say so. */
        const char *end = g_utf8_find_prev_char(line, line + EINSORA_REASON_MAX_BYTES - 2);
        return g_strdup_printf("%.*s…", (int)(end - line), line);
    }
    return g_steal_pointer(&line);
}

static gchar *
describe_actor(const EinsoraActor *actor)
{
    const char *subject = actor != NULL && actor->subject != NULL ? actor->subject : "someone";

    if (actor != NULL && actor->via != NULL && *actor->via != '\0')
        return g_strdup_printf("%s (%s)", subject, actor->via);
    return g_strdup(subject);
}

gchar *
einsora_reason_created(const EinsoraActor *actor)
{
    g_autofree gchar *who = describe_actor(actor);
    return g_strdup_printf("created by %s", who);
}

gchar *
einsora_reason_requested(EinsoraUserAction action, const EinsoraActor *actor)
{
    static const char *const verbs[] = {
        [EINSORA_USER_ACTION_START] = "start",
        [EINSORA_USER_ACTION_STOP] = "stop",
        [EINSORA_USER_ACTION_DELETE] = "delete",
    };
    g_autofree gchar *who = describe_actor(actor);

    g_return_val_if_fail((guint)action < G_N_ELEMENTS(verbs), NULL);
    return g_strdup_printf("%s requested by %s", verbs[action], who);
}

gchar *
einsora_reason_access_requested(const EinsoraActor *actor)
{
    g_autofree gchar *who = describe_actor(actor);
    return g_strdup_printf("open in a browser requested by %s", who);
}

/* Memory as a person reads it: MiB below a GiB, else GiB to a tenth,
 * rounded @up for what is needed and down for what is free, so that the
 * two never read the same while one falls short. */
static gchar *
format_memory(gint64 mib, gboolean up)
{
    gint64 tenths;

    if (mib == 0)
        return g_strdup("0");
    if (mib < 1024)
        return g_strdup_printf("%" G_GINT64_FORMAT " MiB", mib);
    tenths = up ? (mib * 10 + 1023) / 1024 : mib * 10 / 1024;
    if (tenths % 10 == 0)
        return g_strdup_printf("%" G_GINT64_FORMAT " GiB", tenths / 10);
    return g_strdup_printf("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT " GiB", tenths / 10,
                           tenths % 10);
}

static void
append_need(GString *out, const char *need, const char *free)
{
    g_string_append_printf(out, "%s%s, %s free", out->len > 0 ? "; " : "", need, free);
}

static void
append_count(GString *out, const EinsoraShortfallAmount *amount, const char *one, const char *many)
{
    g_autofree gchar *need = g_strdup_printf("%" G_GINT64_FORMAT " %s", amount->requested,
                                             amount->requested == 1 ? one : many);
    g_autofree gchar *free = g_strdup_printf("%" G_GINT64_FORMAT, amount->free);
    append_need(out, need, free);
}

/* Only trusted tenants learn how much is free: the figures describe
 * other tenants' use of the machines. */
gchar *
einsora_reason_waiting_for_capacity(const char *gpu_class, const EinsoraShortfall *shortfall,
                                    gboolean trusted)
{
    g_autoptr(GString) needs = g_string_new(NULL);
    guint short_of = shortfall != NULL && trusted ? shortfall->short_of : 0;

    if (short_of & EINSORA_SHORTFALL_GPUS)
        append_count(needs, &shortfall->gpus, "GPU", "GPUs");
    if (short_of & EINSORA_SHORTFALL_UNITS) {
        g_autofree gchar *unit = g_strdup_printf("× %s", gpu_class);
        append_count(needs, &shortfall->units, unit, unit);
    }
    if (short_of & EINSORA_SHORTFALL_CPUS)
        append_count(needs, &shortfall->cpus, "CPU core", "CPU cores");
    if (short_of & EINSORA_SHORTFALL_MEMORY) {
        g_autofree gchar *amount = format_memory(shortfall->memory_mib.requested, TRUE);
        g_autofree gchar *need = g_strdup_printf("%s of memory", amount);
        g_autofree gchar *free = format_memory(shortfall->memory_mib.free, FALSE);
        append_need(needs, need, free);
    }
    if (short_of & EINSORA_SHORTFALL_DRIVER) {
        g_autofree gchar *slot = g_strdup_printf("%s slot", shortfall->driver);
        g_autofree gchar *slots = g_strdup_printf("%s slots", shortfall->driver);
        append_count(needs, &shortfall->driver_slots, slot, slots);
        g_string_append_printf(needs, " (at most %" G_GINT64_FORMAT " per machine)",
                               shortfall->driver_limit);
    }
    if (needs->len == 0)
        return g_strdup_printf("waiting for %s capacity: not enough free right now", gpu_class);
    return g_strdup_printf("waiting for %s capacity: needs %s", gpu_class, needs->str);
}

gchar *
einsora_reason_admitted(gint64 devices, const char *placed_class, const char *machine_name,
                        const char *driver, guint64 gpu_mask)
{
    gint64 units = devices > 0 ? devices : 1;

    if (machine_name != NULL && driver != NULL && gpu_mask != 0) {
        g_autofree gchar *gpus = einsora_gpu_mask_to_string(gpu_mask);
        return g_strdup_printf("admitted: %" G_GINT64_FORMAT " × %s on %s with %s (GPU %s)", units,
                               placed_class, machine_name, driver, gpus);
    }
    if (machine_name != NULL && driver != NULL)
        return g_strdup_printf("admitted: %" G_GINT64_FORMAT " × %s on %s with %s", units,
                               placed_class, machine_name, driver);
    return g_strdup_printf("admitted: %" G_GINT64_FORMAT " × %s", units, placed_class);
}

gchar *
einsora_reason_admitted_fallback(const char *requested_class, gint64 waited_seconds, gint64 devices,
                                 const char *placed_class, const char *machine_name,
                                 const char *driver, guint64 gpu_mask)
{
    g_autofree gchar *admitted =
        einsora_reason_admitted(devices, placed_class, machine_name, driver, gpu_mask);
    g_autofree gchar *span = einsora_reason_format_span(MAX(waited_seconds, 0));

    /* "admitted: …" becomes "admitted on a fallback after 10m waiting for
     * h100-80gb: …". */
    return g_strdup_printf("admitted on a fallback after %s waiting for %s: %s", span,
                           requested_class, admitted + strlen("admitted: "));
}

gchar *
einsora_reason_waiting_for_machine(const char *gpu_class)
{
    return g_strdup_printf("waiting for a machine that can run %s to come online", gpu_class);
}

gchar *
einsora_reason_waiting_for_driver(EinsoraWorkloadKind kind, const char *gpu_class)
{
    return g_strdup_printf("waiting for a machine with a driver that runs %ss on %s: none here "
                           "has one yet",
                           einsora_workload_kind_to_string(kind), gpu_class);
}

gchar *
einsora_reason_provisioning_timeout(gint64 timeout_seconds)
{
    return g_strdup_printf("it didn't become ready within %" G_GINT64_FORMAT "s", timeout_seconds);
}

gchar *
einsora_reason_runs_nowhere_now(const char *image, const char *drivers)
{
    return g_strdup_printf("no machine here can run image \"%s\" now (it runs on %s): it waits "
                           "until one can",
                           image, drivers);
}

gchar *
einsora_reason_pulling_image(gint64 layers_done, gint64 layers, gint64 bytes_done,
                             gint64 bytes_total)
{
    return g_strdup_printf("pulling its image: %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                           " layers, %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " MB",
                           layers_done, layers, bytes_done / 1000000, bytes_total / 1000000);
}

gchar *
einsora_reason_class_withdrawn(const char *gpu_class)
{
    return g_strdup_printf("can't start: GPU class \"%s\" is no longer offered by this "
                           "installation",
                           gpu_class);
}

gchar *
einsora_reason_image_withdrawn(const char *image)
{
    return g_strdup_printf("can't start: image \"%s\" is no longer offered by this installation",
                           image);
}

gchar *
einsora_reason_machine_away_too_long(gint64 seconds)
{
    return g_strdup_printf("its machine has been offline for over %" G_GINT64_FORMAT
                           "m%" G_GINT64_FORMAT "s",
                           seconds / 60, seconds % 60);
}

gchar *
einsora_reason_format_span(gint64 seconds)
{
    GString *out = g_string_new(NULL);
    gint64 days = seconds / 86400, hours = seconds % 86400 / 3600;
    gint64 minutes = seconds % 3600 / 60, rest = seconds % 60;

    if (days > 0)
        g_string_append_printf(out, "%" G_GINT64_FORMAT "d", days);
    if (hours > 0)
        g_string_append_printf(out, "%" G_GINT64_FORMAT "h", hours);
    if (minutes > 0)
        g_string_append_printf(out, "%" G_GINT64_FORMAT "m", minutes);
    if (rest > 0 || out->len == 0)
        g_string_append_printf(out, "%" G_GINT64_FORMAT "s", rest);
    return g_string_free(out, FALSE);
}

/* "14:02", or "2026-03-02 14:02" once it is a day or more ago (UTC). */
static gchar *
format_since(gint64 since_us, gint64 now_us)
{
    g_autoptr(GDateTime) since = g_date_time_new_from_unix_utc(since_us / G_USEC_PER_SEC);

    return g_date_time_format(since, now_us - since_us >= G_GINT64_CONSTANT(86400) * G_USEC_PER_SEC
                                         ? "%Y-%m-%d %H:%M"
                                         : "%H:%M");
}

gchar *
einsora_reason_waiting_behind(const char *gpu_class, gint64 since_us, gint64 now_us)
{
    g_autofree gchar *when = format_since(since_us, now_us);

    return g_strdup_printf("waiting behind an older request for %s, waiting since %s UTC: "
                           "what frees up goes to it first",
                           gpu_class, when);
}

gchar *
einsora_reason_idle_stopped(gint64 timeout_seconds, gint64 since_us, gint64 now_us)
{
    g_autofree gchar *span = einsora_reason_format_span(timeout_seconds);
    g_autofree gchar *when = format_since(since_us, now_us);

    return g_strdup_printf("stopped after %s idle: no activity since %s UTC", span, when);
}

const char *
einsora_reason_waiting_for_disk(void)
{
    return "waiting for its machine to come online: its disk is there";
}

const char *
einsora_reason_machine_offline(void)
{
    return "its machine is offline; waiting for it to reconnect";
}

const char *
einsora_reason_ready(void)
{
    return "ready";
}

const char *
einsora_reason_released(void)
{
    return "resources released";
}

const char *
einsora_reason_gone(void)
{
    return "gone: everything it stored was deleted";
}

const char *
einsora_reason_stopped_by_itself(void)
{
    return "it stopped by itself";
}

const char *
einsora_reason_vanished(void)
{
    return "it disappeared from its runtime";
}

const char *
einsora_reason_run_retrying(void)
{
    return "couldn't start it on the runtime; retrying." OPERATOR_LOG_HINT;
}

const char *
einsora_reason_observe_retrying(void)
{
    return "couldn't read its status from the runtime; retrying." OPERATOR_LOG_HINT;
}

const char *
einsora_reason_capacity_retrying(void)
{
    return "couldn't check for free GPUs on the runtime; retrying." OPERATOR_LOG_HINT;
}

const char *
einsora_reason_machine_reported_problem(void)
{
    return "its machine reported a problem";
}
