/* A bubblewrap command line, built option by option rather than by
 * joining strings, so a path with spaces or a leading dash can't become
 * another option. Its fingerprint is the SHA-256 of the whole argument
 * list: two sandboxes with the same fingerprint are the same sandbox.
 * Nothing secret ever goes into it (the token travels in the
 * environment, which only this user can read). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EinsoraBwrapArgs EinsoraBwrapArgs;

EinsoraBwrapArgs *einsora_bwrap_args_new(const char *bwrap_path);
void einsora_bwrap_args_free(EinsoraBwrapArgs *args);

/* --unshare-net, --die-with-parent, ... */
void einsora_bwrap_args_add_flag(EinsoraBwrapArgs *args, const char *flag);
/* --chdir DIR, --tmpfs DEST, --proc DEST, --dev DEST, --dir DEST */
void einsora_bwrap_args_add_path(EinsoraBwrapArgs *args, const char *option, const char *path);
/* --ro-bind SRC DEST, --bind SRC DEST, --dev-bind SRC DEST, --symlink SRC DEST, and their
 * -try forms */
void einsora_bwrap_args_add_pair(EinsoraBwrapArgs *args, const char *option, const char *source,
                                 const char *dest);
/* A directory as it is, the same path inside: read-only or writable. */
void einsora_bwrap_args_bind(EinsoraBwrapArgs *args, const char *path, gboolean writable);

/* Fails when an option isn't a bubblewrap option, a path isn't absolute
 * (a --symlink's target may be relative), or no command was set. */
gboolean einsora_bwrap_args_set_command(EinsoraBwrapArgs *args, const char *const *argv);
gboolean einsora_bwrap_args_check(const EinsoraBwrapArgs *args, GError **error);

/* bwrap, its options, "--", then the command. */
gchar **einsora_bwrap_args_to_strv(const EinsoraBwrapArgs *args);
/* Wraps the whole command line in @prefix (e.g. pasta's), which then
 * runs bwrap; part of the fingerprint too. */
void einsora_bwrap_args_set_prefix(EinsoraBwrapArgs *args, const char *const *prefix);
gchar *einsora_bwrap_args_fingerprint(const EinsoraBwrapArgs *args);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraBwrapArgs, einsora_bwrap_args_free)

G_END_DECLS
