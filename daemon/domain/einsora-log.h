/* Log lines about one workload or one machine carry its IDs as fields
 * (journald's, through GLib's structured logging), so that
 * `journalctl EINSORA_WORKLOAD_ID=<id>` tells one workload's story across
 * the controller, the hub and the agent, and EINSORA_MACHINE_ID one
 * machine's. The API's lines carry EINSORA_REQUEST_ID and
 * EINSORA_TENANT_ID. The message keeps the IDs too, for plain stderr.
 * A line the default writer would drop is not even formatted. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

static inline const char *
einsora_log_field(const char *value)
{
    return value != NULL ? value : "";
}

#define einsora_log_workload(level, workload_id, tenant_id, machine_id, ...)                       \
    G_STMT_START                                                                                   \
    {                                                                                              \
        if (!g_log_writer_default_would_drop((level), G_LOG_DOMAIN))                               \
            g_log_structured(G_LOG_DOMAIN, (level), "EINSORA_WORKLOAD_ID",                         \
                             einsora_log_field(workload_id), "EINSORA_TENANT_ID",                  \
                             einsora_log_field(tenant_id), "EINSORA_MACHINE_ID",                   \
                             einsora_log_field(machine_id), "MESSAGE", __VA_ARGS__);               \
    }                                                                                              \
    G_STMT_END

#define einsora_log_machine(level, machine_id, ...)                                                \
    G_STMT_START                                                                                   \
    {                                                                                              \
        if (!g_log_writer_default_would_drop((level), G_LOG_DOMAIN))                               \
            g_log_structured(G_LOG_DOMAIN, (level), "EINSORA_MACHINE_ID",                          \
                             einsora_log_field(machine_id), "MESSAGE", __VA_ARGS__);               \
    }                                                                                              \
    G_STMT_END

G_END_DECLS
