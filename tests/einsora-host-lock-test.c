#include "einsora-host-lock.h"
#include "einsora-test-dir.h"

/* A second agent on the same machine is refused at once; once the first
 * lets go, the lock is free again. */
static void
test_one_agent_per_machine(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *state = g_build_filename(dir, "agent", NULL);
    g_autoptr(GError) error = NULL;
    EinsoraHostLock *first = einsora_host_lock_acquire(state, &error);
    EinsoraHostLock *second;

    g_assert_no_error(error);
    g_assert_nonnull(first);
    second = einsora_host_lock_acquire(state, &error);
    g_assert_null(second);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    g_assert_nonnull(strstr(error->message, "another Einsora agent"));
    g_clear_error(&error);

    g_object_unref(first);
    second = einsora_host_lock_acquire(state, &error);
    g_assert_no_error(error);
    g_assert_nonnull(second);
    g_object_unref(second);
    einsora_test_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/host-lock/one-agent-per-machine", test_one_agent_per_machine);
    return g_test_run();
}
