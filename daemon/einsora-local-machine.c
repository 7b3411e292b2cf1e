#define G_LOG_DOMAIN "einsora-daemon"

#include "einsora-local-machine.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "einsora-error.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

#define MACHINE_ID_FILE "machine-id"

gchar *
einsora_local_machine_load_id(const char *state_dir, gint64 now_us, GError **error)
{
    g_autofree gchar *path = g_build_filename(state_dir, MACHINE_ID_FILE, NULL);
    g_autofree gchar *contents = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *line = NULL;
    int fd;

    if (g_file_get_contents(path, &contents, NULL, NULL)) {
        g_strstrip(contents);
        if (!einsora_uuid_is_valid(contents)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "%s does not hold a machine ID; remove it to make a new one", path);
            return NULL;
        }
        return g_steal_pointer(&contents);
    }
    id = einsora_uuid_v7_new(now_us / 1000);
    line = g_strdup_printf("%s\n", id);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line) || fsync(fd) != 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't write %s: %s", path,
                    g_strerror(saved));
        return NULL;
    }
    close(fd);
    return g_steal_pointer(&id);
}

EinsoraMachine *
einsora_local_machine_register(EinsoraStore *store, const char *machine_id, const char *owner,
                               const char *region, const EinsoraInventory *inventory, gint64 now_us,
                               GError **error)
{
    g_autoptr(EinsoraTenant) tenant = einsora_store_find_tenant_by_name(store, owner, error);
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GError) local_error = NULL;

    if (tenant == NULL) {
        g_prefix_error(error, "EINSORA_MACHINE_OWNER (--machine-owner): \"%s\": ", owner);
        return NULL;
    }
    machine = einsora_store_get_machine(store, tenant->id, machine_id, &local_error);
    if (machine != NULL) {
        if (g_strcmp0(machine->region, region) != 0) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                        "this machine is registered in region %s, not %s; a machine's region "
                        "never changes",
                        machine->region, region);
            return NULL;
        }
        return g_steal_pointer(&machine);
    }
    if (!g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    machine = einsora_machine_new();
    machine->id = g_strdup(machine_id);
    machine->tenant_id = g_strdup(tenant->id);
    /* The hostname is only a label: renaming the machine changes nothing. */
    machine->name = g_strdup(g_get_host_name());
    machine->region = g_strdup(region);
    machine->os = g_strdup(inventory->os);
    machine->cpus = inventory->cpus;
    machine->memory_mib = inventory->memory_mib;
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = einsora_timestamp_format(now_us);
    if (!einsora_store_insert_machine(store, machine, error)) {
        /* Registered under another owner: the owner never changes. */
        g_prefix_error(error, "registering this machine: ");
        return NULL;
    }
    g_message("registered this machine as %s (%s), owned by %s in region %s", machine->id,
              machine->name, owner, region);
    return g_steal_pointer(&machine);
}
