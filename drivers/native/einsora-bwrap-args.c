#define G_LOG_DOMAIN "einsora-native"

#include "einsora-bwrap-args.h"

#include <gio/gio.h>

struct _EinsoraBwrapArgs {
    gchar *bwrap_path;
    GPtrArray *prefix;  /* gchar*: what runs bwrap, if anything */
    GPtrArray *options; /* gchar*, in order */
    GPtrArray *command; /* gchar* */
    gchar *invalid;     /* the first mistake, for check() */
};

typedef struct {
    const char *name;
    guint n_values;
    guint n_paths; /* how many of the last values must be absolute paths */
} BwrapOption;

/* The options this driver uses; anything else is a mistake here. */
static const BwrapOption known_options[] = {
    {"--unshare-net", 0, 0},
    {"--unshare-pid", 0, 0},
    {"--unshare-ipc", 0, 0},
    {"--unshare-uts", 0, 0},
    {"--unshare-cgroup-try", 0, 0},
    {"--new-session", 0, 0},
    {"--die-with-parent", 0, 0},
    {"--clearenv", 0, 0},
    {"--chdir", 1, 1},
    {"--tmpfs", 1, 1},
    {"--proc", 1, 1},
    {"--dev", 1, 1},
    {"--dir", 1, 1},
    {"--remount-ro", 1, 1},
    {"--bind", 2, 2},
    {"--bind-try", 2, 2},
    {"--ro-bind", 2, 2},
    {"--ro-bind-try", 2, 2},
    {"--dev-bind", 2, 2},
    {"--dev-bind-try", 2, 2},
    /* The target of a symlink may be relative; where it lives may not. */
    {"--symlink", 2, 1},
};

static const BwrapOption *
lookup_option(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(known_options); i++) {
        if (g_str_equal(known_options[i].name, name))
            return &known_options[i];
    }
    return NULL;
}

EinsoraBwrapArgs *
einsora_bwrap_args_new(const char *bwrap_path)
{
    EinsoraBwrapArgs *args = g_new0(EinsoraBwrapArgs, 1);

    args->bwrap_path = g_strdup(bwrap_path);
    args->prefix = g_ptr_array_new_with_free_func(g_free);
    args->options = g_ptr_array_new_with_free_func(g_free);
    args->command = g_ptr_array_new_with_free_func(g_free);
    return args;
}

void
einsora_bwrap_args_free(EinsoraBwrapArgs *args)
{
    if (args == NULL)
        return;
    g_free(args->bwrap_path);
    g_ptr_array_unref(args->prefix);
    g_ptr_array_unref(args->options);
    g_ptr_array_unref(args->command);
    g_free(args->invalid);
    g_free(args);
}

static void
mark_invalid(EinsoraBwrapArgs *args, gchar *message)
{
    if (args->invalid == NULL)
        args->invalid = message;
    else
        g_free(message);
}

/* Checks the option and its values, then appends them. */
static void
add_option(EinsoraBwrapArgs *args, const char *name, const char *const *values, guint n_values)
{
    const BwrapOption *option = lookup_option(name);

    if (option == NULL || option->n_values != n_values) {
        mark_invalid(args, g_strdup_printf("%s is not a bubblewrap option taking %u value(s)", name,
                                           n_values));
        return;
    }
    for (guint i = 0; i < n_values; i++) {
        gboolean must_be_path = i >= n_values - option->n_paths;

        if (values[i] == NULL || *values[i] == '\0' ||
            (must_be_path && !g_path_is_absolute(values[i]))) {
            mark_invalid(args, g_strdup_printf("%s needs an absolute path, not \"%s\"", name,
                                               values[i] != NULL ? values[i] : "(none)"));
            return;
        }
    }
    g_ptr_array_add(args->options, g_strdup(name));
    for (guint i = 0; i < n_values; i++)
        g_ptr_array_add(args->options, g_strdup(values[i]));
}

void
einsora_bwrap_args_add_flag(EinsoraBwrapArgs *args, const char *flag)
{
    add_option(args, flag, NULL, 0);
}

void
einsora_bwrap_args_add_path(EinsoraBwrapArgs *args, const char *option, const char *path)
{
    const char *values[] = {path};

    add_option(args, option, values, 1);
}

void
einsora_bwrap_args_add_pair(EinsoraBwrapArgs *args, const char *option, const char *source,
                            const char *dest)
{
    const char *values[] = {source, dest};

    add_option(args, option, values, 2);
}

void
einsora_bwrap_args_bind(EinsoraBwrapArgs *args, const char *path, gboolean writable)
{
    einsora_bwrap_args_add_pair(args, writable ? "--bind" : "--ro-bind", path, path);
}

gboolean
einsora_bwrap_args_set_command(EinsoraBwrapArgs *args, const char *const *argv)
{
    g_ptr_array_set_size(args->command, 0);
    if (argv == NULL || argv[0] == NULL || !g_path_is_absolute(argv[0])) {
        mark_invalid(args, g_strdup("the sandbox's command must start with an absolute path"));
        return FALSE;
    }
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add(args->command, g_strdup(argv[i]));
    return TRUE;
}

void
einsora_bwrap_args_set_prefix(EinsoraBwrapArgs *args, const char *const *prefix)
{
    g_ptr_array_set_size(args->prefix, 0);
    for (guint i = 0; prefix != NULL && prefix[i] != NULL; i++)
        g_ptr_array_add(args->prefix, g_strdup(prefix[i]));
}

gboolean
einsora_bwrap_args_check(const EinsoraBwrapArgs *args, GError **error)
{
    if (args->bwrap_path == NULL || !g_path_is_absolute(args->bwrap_path)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "bubblewrap's path must be absolute");
        return FALSE;
    }
    if (args->invalid != NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, args->invalid);
        return FALSE;
    }
    if (args->command->len == 0) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "the sandbox has no command");
        return FALSE;
    }
    return TRUE;
}

gchar **
einsora_bwrap_args_to_strv(const EinsoraBwrapArgs *args)
{
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();

    for (guint i = 0; i < args->prefix->len; i++)
        g_strv_builder_add(builder, g_ptr_array_index(args->prefix, i));
    g_strv_builder_add(builder, args->bwrap_path);
    for (guint i = 0; i < args->options->len; i++)
        g_strv_builder_add(builder, g_ptr_array_index(args->options, i));
    g_strv_builder_add(builder, "--");
    for (guint i = 0; i < args->command->len; i++)
        g_strv_builder_add(builder, g_ptr_array_index(args->command, i));
    return g_strv_builder_end(builder);
}

gchar *
einsora_bwrap_args_fingerprint(const EinsoraBwrapArgs *args)
{
    g_auto(GStrv) argv = einsora_bwrap_args_to_strv(args);
    g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);

    /* Each argument with its terminating NUL, so "a b" + "c" and "a" +
     * "b c" differ. */
    for (guint i = 0; argv[i] != NULL; i++)
        g_checksum_update(checksum, (const guchar *)argv[i], (gssize)strlen(argv[i]) + 1);
    return g_strdup(g_checksum_get_string(checksum));
}
