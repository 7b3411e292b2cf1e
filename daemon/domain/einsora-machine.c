#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-machine.h"

#include "einsora-timestamp.h"

G_DEFINE_BOXED_TYPE(EinsoraMachine, einsora_machine, einsora_machine_copy, einsora_machine_free)

EinsoraMachine *
einsora_machine_new(void)
{
    return g_new0(EinsoraMachine, 1);
}

EinsoraMachine *
einsora_machine_copy(const EinsoraMachine *machine)
{
    EinsoraMachine *copy = g_new0(EinsoraMachine, 1);
    *copy = *machine;
    copy->id = g_strdup(machine->id);
    copy->tenant_id = g_strdup(machine->tenant_id);
    copy->name = g_strdup(machine->name);
    copy->region = g_strdup(machine->region);
    copy->os = g_strdup(machine->os);
    copy->inventory = g_strdup(machine->inventory);
    copy->last_seen_at = g_strdup(machine->last_seen_at);
    copy->created_at = g_strdup(machine->created_at);
    copy->cert_fingerprint = g_strdup(machine->cert_fingerprint);
    copy->cert_expires_at = g_strdup(machine->cert_expires_at);
    copy->agent_version = g_strdup(machine->agent_version);
    return copy;
}

void
einsora_machine_free(EinsoraMachine *machine)
{
    if (machine == NULL)
        return;
    g_free(machine->id);
    g_free(machine->tenant_id);
    g_free(machine->name);
    g_free(machine->region);
    g_free(machine->os);
    g_free(machine->inventory);
    g_free(machine->last_seen_at);
    g_free(machine->created_at);
    g_free(machine->cert_fingerprint);
    g_free(machine->cert_expires_at);
    g_free(machine->agent_version);
    g_free(machine);
}

const char *
einsora_sharing_to_string(EinsoraSharing sharing)
{
    switch (sharing) {
    case EINSORA_SHARING_PRIVATE:
        return "private";
    case EINSORA_SHARING_INVITE:
        return "invite";
    case EINSORA_SHARING_COMMUNITY:
        return "community";
    default:
        return NULL;
    }
}

gboolean
einsora_sharing_from_string(const char *str, EinsoraSharing *sharing)
{
    for (guint i = EINSORA_SHARING_PRIVATE; i <= EINSORA_SHARING_COMMUNITY; i++) {
        if (g_strcmp0(str, einsora_sharing_to_string((EinsoraSharing)i)) == 0) {
            *sharing = (EinsoraSharing)i;
            return TRUE;
        }
    }
    return FALSE;
}

/* Region and ownership: a machine hosts only workloads in its own region,
 * and only its owner's unless it is in a community pool. */
gboolean
einsora_machine_can_host(const EinsoraMachine *machine, const char *region, const char *tenant_id)
{
    if (machine == NULL || region == NULL || tenant_id == NULL)
        return FALSE;
    if (g_strcmp0(machine->region, region) != 0)
        return FALSE;
    if (g_strcmp0(machine->tenant_id, tenant_id) == 0)
        return TRUE;
    return machine->sharing == EINSORA_SHARING_COMMUNITY;
}

/* The trust matrix: weak isolation runs only the owner's own workloads;
 * another tenant's workload needs a sandbox or a VM. The
 * driver comes from the domain table, never from an agent's report. */
gboolean
einsora_machine_permits(const EinsoraMachine *machine, const char *tenant_id,
                        const EinsoraDriverInfo *driver)
{
    if (machine == NULL || tenant_id == NULL || driver == NULL)
        return FALSE;
    if (driver->os != NULL && machine->os != NULL && g_strcmp0(driver->os, machine->os) != 0)
        return FALSE;
    if (g_strcmp0(machine->tenant_id, tenant_id) == 0)
        return TRUE;
    return einsora_isolation_hosts_guests(driver->isolation);
}

gboolean
einsora_machine_seen_within(const EinsoraMachine *machine, gint64 now_us, gint64 window_us)
{
    gint64 seen_us = 0;

    if (machine->last_seen_at == NULL ||
        !einsora_timestamp_parse(machine->last_seen_at, &seen_us, NULL))
        return FALSE;
    return now_us - seen_us <= window_us;
}

gboolean
einsora_clock_offset_is_skewed(gint64 clock_offset_ms)
{
    return clock_offset_ms > EINSORA_MACHINE_CLOCK_SKEW_BOUND_MS ||
           clock_offset_ms < -EINSORA_MACHINE_CLOCK_SKEW_BOUND_MS;
}

gboolean
einsora_machine_clock_skewed(const EinsoraMachine *machine)
{
    return machine->has_clock_offset && einsora_clock_offset_is_skewed(machine->clock_offset_ms);
}
