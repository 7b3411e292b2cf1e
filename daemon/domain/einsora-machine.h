/* A machine that runs workloads through its agent. Its owner and region
 * come from its registration, never from what its agent reports. */
#pragma once

#include <glib-object.h>

#include "einsora-driver.h"

G_BEGIN_DECLS

typedef enum {
    EINSORA_SHARING_PRIVATE,
    /* Invite lists are planned; until then an invite-only machine counts
     * as private. */
    EINSORA_SHARING_INVITE,
    EINSORA_SHARING_COMMUNITY,
} EinsoraSharing;

typedef struct {
    gchar *id;
    gchar *tenant_id; /* the owner */
    gchar *name;
    gchar *region;
    gchar *os; /* "linux" or "darwin" */
    gint64 cpus;
    gint64 memory_mib;
    EinsoraSharing sharing;
    gchar *inventory;    /* JSON as its agent last reported it; NULL until then */
    gchar *last_seen_at; /* NULL until its agent first syncs */
    gchar *created_at;
    /* A machine that enrolled over the network (docs/adr/0055): its
     * agent's client certificate; NULL for the machine in this process. */
    gchar *cert_fingerprint; /* "SHA256:" and hex */
    gchar *cert_expires_at;
    /* What its agent's last sync said of itself (docs/adr/0057): its
     * build's version (NULL: an agent too old to say), and how far its
     * clock was from the server's: the server's time on receiving the
     * sync minus the agent's time on sending it, a one-way estimate that
     * counts the time in transit too. */
    gchar *agent_version;
    gboolean has_clock_offset;
    gint64 clock_offset_ms;
} EinsoraMachine;

/* The seeds' two windows, two facts: a machine is shown online to its
 * owner while its agent was seen within 3 minutes, and the controller
 * places new work on it only while it synced within 45 s (the agent
 * long-polls: two missed syncs and it gets nothing new, though it still
 * looks online for a while). /v1/machines shows both. */
#define EINSORA_MACHINE_ONLINE_WINDOW_US (G_GINT64_CONSTANT(180) * G_USEC_PER_SEC)
#define EINSORA_MACHINE_PLACEABLE_WINDOW_US (G_GINT64_CONSTANT(45) * G_USEC_PER_SEC)

/* An agent whose clock is off by more than this either way is reported
 * (clock_skewed in /v1/machines, a warning in the log). Certificates'
 * validity, leases and the timeline's times tolerate this much; beyond
 * it a fresh agent certificate can read as not yet valid, and a
 * machine's times in the timeline mislead. A sync's time in transit is
 * far below it, so the one-way estimate does not trip it. */
#define EINSORA_MACHINE_CLOCK_SKEW_BOUND_MS (G_GINT64_CONSTANT(30) * 1000)

#define EINSORA_TYPE_MACHINE (einsora_machine_get_type())
GType einsora_machine_get_type(void);

EinsoraMachine *einsora_machine_new(void);
EinsoraMachine *einsora_machine_copy(const EinsoraMachine *machine);
void einsora_machine_free(EinsoraMachine *machine);

const char *einsora_sharing_to_string(EinsoraSharing sharing);
gboolean einsora_sharing_from_string(const char *str, EinsoraSharing *sharing);

gboolean einsora_machine_can_host(const EinsoraMachine *machine, const char *region,
                                  const char *tenant_id);
gboolean einsora_machine_permits(const EinsoraMachine *machine, const char *tenant_id,
                                 const EinsoraDriverInfo *driver);

/* Whether its last_seen_at is within @window_us of @now_us. */
gboolean einsora_machine_seen_within(const EinsoraMachine *machine, gint64 now_us,
                                     gint64 window_us);

/* Whether a clock offset is beyond EINSORA_MACHINE_CLOCK_SKEW_BOUND_MS
 * either way; and whether its agent's, as last reported, is (FALSE when
 * it never said). */
gboolean einsora_clock_offset_is_skewed(gint64 clock_offset_ms);
gboolean einsora_machine_clock_skewed(const EinsoraMachine *machine);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraMachine, einsora_machine_free)

G_END_DECLS
