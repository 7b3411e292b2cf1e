/* A system without the kernel's random generator, for the process that
 * calls this (and what it executes): getrandom(2) fails with ENOSYS, as
 * on a kernel before 3.17 or behind a seccomp filter that hides it. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* FALSE when this machine can't install the filter (another
 * architecture, or seccomp refused); then nothing changed. Safe between
 * fork and exec. */
gboolean einsora_test_hide_getrandom(void);

G_END_DECLS
