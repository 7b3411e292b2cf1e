/* The host probe: whether this machine can run notebooks at all, that
 * is whether bubblewrap and Jupyter are installed and Jupyter runs in a
 * sandbox here (through pasta when outbound networking is on). Its entry
 * points, einsora_native_driver_probe_async() and _finish(), are public
 * with the driver; they live here, with the lookup of those programs,
 * which the driver uses too. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* @configured when set (NULL unless it is executable), else @name found
 * in PATH. */
gchar *einsora_native_probe_find_program(const char *configured, const char *name);

G_END_DECLS
