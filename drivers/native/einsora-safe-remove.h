/* Removing a workload's directory tree without following links: the
 * notebook could write there, so it may have planted links to anything,
 * made directories unreadable, or nested them deeper than a path can
 * name. Only what is inside the tree goes. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Deletes @path and everything in it; a link goes as a link, never its
 * target. A @path that isn't there is already removed. Blocks for as long
 * as the tree takes: run it in a thread. */
gboolean einsora_safe_remove_tree(const char *path, GError **error);

/* Removes a workload's directories (@paths, NULL-terminated), one after
 * the other as einsora_safe_remove_tree() does, in a worker thread: a
 * notebook's data can be large, and the loop mustn't wait for it. @owner
 * (a driver) is kept alive until @callback. */
void einsora_safe_remove_trees_async(GObject *owner, const char *const *paths,
                                     GAsyncReadyCallback callback, gpointer user_data);
gboolean einsora_safe_remove_trees_finish(GAsyncResult *result, GError **error);

G_END_DECLS
