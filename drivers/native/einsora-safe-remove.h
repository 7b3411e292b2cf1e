/* Removing a workload's directory tree without following links: the
 * notebook could write there, so it may have planted links to anything,
 * made directories unreadable, or nested them deeper than a path can
 * name. Only what is inside the tree goes. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Deletes @path and everything in it; a link goes as a link, never its
 * target. A @path that isn't there is already removed. Blocks for as long
 * as the tree takes: run it in a thread. */
gboolean einsora_safe_remove_tree(const char *path, GError **error);

G_END_DECLS
