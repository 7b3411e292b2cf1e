#define G_LOG_DOMAIN "einsora-models"

#include "einsora-model-finder.h"

#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>

#include "einsora-error.h"

#define OLLAMA_PREFIX "ollama:"
#define LMSTUDIO_PREFIX "lmstudio:"
#define OLLAMA_REGISTRY "registry.ollama.ai"
#define OLLAMA_MODEL_LAYER "application/vnd.ollama.image.model"
/* Manifests are small; one past this isn't Ollama's. */
#define OLLAMA_MANIFEST_MAX (1024 * 1024)

void
einsora_found_model_free(EinsoraFoundModel *model)
{
    if (model == NULL)
        return;
    g_free(model->source);
    g_free(model->path);
    g_free(model);
}

gboolean
einsora_model_finder_is_found_source(const char *source)
{
    return source != NULL &&
           (g_str_has_prefix(source, OLLAMA_PREFIX) || g_str_has_prefix(source, LMSTUDIO_PREFIX));
}

static GPtrArray *
existing_dirs(const char *const *candidates)
{
    GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; candidates[i] != NULL; i++) {
        if (*candidates[i] != '\0' && g_file_test(candidates[i], G_FILE_TEST_IS_DIR))
            g_ptr_array_add(dirs, g_strdup(candidates[i]));
    }
    return dirs;
}

static GPtrArray *
ollama_roots(void)
{
    g_autofree gchar *home = g_build_filename(g_get_home_dir(), ".ollama", "models", NULL);
    const char *env = g_getenv("OLLAMA_MODELS");
    const char *const candidates[] = {env != NULL ? env : "", home,
                                      "/usr/share/ollama/.ollama/models", NULL};

    return existing_dirs(candidates);
}

static GPtrArray *
lmstudio_roots(void)
{
    g_autofree gchar *current = g_build_filename(g_get_home_dir(), ".lmstudio", "models", NULL);
    g_autofree gchar *older =
        g_build_filename(g_get_home_dir(), ".cache", "lm-studio", "models", NULL);
    const char *const candidates[] = {current, older, NULL};

    return existing_dirs(candidates);
}

/* A path component another tool's name may hold: no separators, no dots
 * alone, nothing a shell or a path would read otherwise. */
static gboolean
component_is_valid(const char *text, gsize length)
{
    if (length == 0 || length > 255 || (length <= 2 && strncmp(text, "..", length) == 0))
        return FALSE;
    for (gsize i = 0; i < length; i++) {
        char c = text[i];
        if (!g_ascii_isalnum(c) && c != '.' && c != '_' && c != '-')
            return FALSE;
    }
    return TRUE;
}

static gboolean
regular_file(const char *path, gint64 *size)
{
    struct stat st;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return FALSE;
    *size = st.st_size;
    return TRUE;
}

/* Ollama: a manifest's model layer, as a file under blobs/. */
static gchar *
ollama_blob(const char *root, const char *manifest_path, gint64 *size)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    JsonNode *layers;

    if (!g_file_get_contents(manifest_path, &contents, &length, NULL) ||
        length > OLLAMA_MANIFEST_MAX ||
        !json_parser_load_from_data(parser, contents, (gssize)length, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)))
        return NULL;
    layers = json_object_get_member(json_node_get_object(json_parser_get_root(parser)), "layers");
    if (layers == NULL || !JSON_NODE_HOLDS_ARRAY(layers))
        return NULL;
    for (guint i = 0; i < json_array_get_length(json_node_get_array(layers)); i++) {
        JsonNode *layer = json_array_get_element(json_node_get_array(layers), i);
        JsonObject *object = JSON_NODE_HOLDS_OBJECT(layer) ? json_node_get_object(layer) : NULL;
        const char *type =
            object != NULL ? json_object_get_string_member_with_default(object, "mediaType", NULL)
                           : NULL;
        const char *digest =
            object != NULL ? json_object_get_string_member_with_default(object, "digest", NULL)
                           : NULL;
        g_autofree gchar *name = NULL;
        g_autofree gchar *path = NULL;

        if (g_strcmp0(type, OLLAMA_MODEL_LAYER) != 0 || digest == NULL ||
            !g_str_has_prefix(digest, "sha256:") ||
            !component_is_valid(digest + 7, strlen(digest + 7)))
            continue;
        name = g_strdup_printf("sha256-%s", digest + 7);
        path = g_build_filename(root, "blobs", name, NULL);
        if (regular_file(path, size))
            return g_steal_pointer(&path);
    }
    return NULL;
}

static EinsoraFoundModel *
resolve_ollama(const char *name_and_tag, GError **error)
{
    const char *colon = strrchr(name_and_tag, ':');
    const char *slash = strchr(name_and_tag, '/');
    g_autofree gchar *name =
        colon != NULL ? g_strndup(name_and_tag, colon - name_and_tag) : g_strdup(name_and_tag);
    const char *tag = colon != NULL ? colon + 1 : "latest";
    g_autofree gchar *space = NULL;
    g_autofree gchar *model = NULL;
    g_autoptr(GPtrArray) roots = ollama_roots();

    if (slash != NULL && (colon == NULL || slash < colon)) {
        space = g_strndup(name, strchr(name, '/') - name);
        model = g_strdup(strchr(name, '/') + 1);
    } else {
        space = g_strdup("library");
        model = g_strdup(name);
    }
    if (!component_is_valid(space, strlen(space)) || !component_is_valid(model, strlen(model)) ||
        !component_is_valid(tag, strlen(tag))) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an Ollama model is named ollama:NAME[:TAG] or ollama:USER/NAME:TAG");
        return NULL;
    }
    for (guint i = 0; i < roots->len; i++) {
        g_autofree gchar *manifest = g_build_filename(roots->pdata[i], "manifests", OLLAMA_REGISTRY,
                                                      space, model, tag, NULL);
        gint64 size = 0;
        g_autofree gchar *blob = ollama_blob(roots->pdata[i], manifest, &size);

        if (blob != NULL) {
            EinsoraFoundModel *found = g_new0(EinsoraFoundModel, 1);
            found->source = g_strconcat(OLLAMA_PREFIX, name_and_tag, NULL);
            found->path = g_steal_pointer(&blob);
            found->size = size;
            found->immutable = TRUE;
            return found;
        }
    }
    g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                "no Ollama model %s:%s on this machine (ollama pull it first)", name, tag);
    return NULL;
}

static EinsoraFoundModel *
resolve_lmstudio(const char *relative, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(relative, "/", -1);
    g_autoptr(GPtrArray) roots = lmstudio_roots();
    guint n = g_strv_length(parts);

    for (guint i = 0; i < n; i++) {
        if (!component_is_valid(parts[i], strlen(parts[i])))
            n = 0;
    }
    if (n == 0 || n > 4 || !g_str_has_suffix(relative, ".gguf")) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an LM Studio model is named lmstudio:PUBLISHER/REPO/FILE.gguf");
        return NULL;
    }
    for (guint i = 0; i < roots->len; i++) {
        g_autofree gchar *path = g_build_filename(roots->pdata[i], relative, NULL);
        gint64 size = 0;

        if (regular_file(path, &size)) {
            EinsoraFoundModel *found = g_new0(EinsoraFoundModel, 1);
            found->source = g_strconcat(LMSTUDIO_PREFIX, relative, NULL);
            found->path = g_steal_pointer(&path);
            found->size = size;
            return found;
        }
    }
    g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                "no LM Studio model %s on this machine", relative);
    return NULL;
}

EinsoraFoundModel *
einsora_model_finder_resolve(const char *source, GError **error)
{
    if (g_str_has_prefix(source, OLLAMA_PREFIX))
        return resolve_ollama(source + strlen(OLLAMA_PREFIX), error);
    if (g_str_has_prefix(source, LMSTUDIO_PREFIX))
        return resolve_lmstudio(source + strlen(LMSTUDIO_PREFIX), error);
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "not another tool's model (ollama:... or lmstudio:...)");
    return NULL;
}

/* Names one level down a directory, sorted, of entries that are valid
 * components. */
static GPtrArray *
entries(const char *dir)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GDir) listing = g_dir_open(dir, 0, NULL);
    const char *name;

    while (listing != NULL && (name = g_dir_read_name(listing)) != NULL) {
        if (component_is_valid(name, strlen(name)))
            g_ptr_array_add(names, g_strdup(name));
    }
    g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
    return names;
}

static void
add_found(GPtrArray *found, GHashTable *seen, const char *source)
{
    EinsoraFoundModel *model;

    if (g_hash_table_contains(seen, source))
        return; /* an earlier root has it */
    model = einsora_model_finder_resolve(source, NULL);
    if (model == NULL)
        return;
    g_hash_table_add(seen, g_strdup(source));
    g_ptr_array_add(found, model);
}

GPtrArray *
einsora_model_finder_list(void)
{
    GPtrArray *found = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_found_model_free);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GPtrArray) ollama = ollama_roots();
    g_autoptr(GPtrArray) lmstudio = lmstudio_roots();

    for (guint r = 0; r < ollama->len; r++) {
        g_autofree gchar *registry =
            g_build_filename(ollama->pdata[r], "manifests", OLLAMA_REGISTRY, NULL);
        g_autoptr(GPtrArray) spaces = entries(registry);

        for (guint s = 0; s < spaces->len; s++) {
            g_autofree gchar *space_dir = g_build_filename(registry, spaces->pdata[s], NULL);
            g_autoptr(GPtrArray) models = entries(space_dir);

            for (guint m = 0; m < models->len; m++) {
                g_autofree gchar *model_dir = g_build_filename(space_dir, models->pdata[m], NULL);
                g_autoptr(GPtrArray) tags = entries(model_dir);

                for (guint t = 0; t < tags->len; t++) {
                    g_autofree gchar *source =
                        g_str_equal(spaces->pdata[s], "library")
                            ? g_strdup_printf(OLLAMA_PREFIX "%s:%s", (char *)models->pdata[m],
                                              (char *)tags->pdata[t])
                            : g_strdup_printf(OLLAMA_PREFIX "%s/%s:%s", (char *)spaces->pdata[s],
                                              (char *)models->pdata[m], (char *)tags->pdata[t]);
                    add_found(found, seen, source);
                }
            }
        }
    }
    /* LM Studio: PUBLISHER/REPO/FILE.gguf. */
    for (guint r = 0; r < lmstudio->len; r++) {
        g_autoptr(GPtrArray) publishers = entries(lmstudio->pdata[r]);

        for (guint p = 0; p < publishers->len; p++) {
            g_autofree gchar *publisher_dir =
                g_build_filename(lmstudio->pdata[r], publishers->pdata[p], NULL);
            g_autoptr(GPtrArray) repos = entries(publisher_dir);

            for (guint q = 0; q < repos->len; q++) {
                g_autofree gchar *repo_dir = g_build_filename(publisher_dir, repos->pdata[q], NULL);
                g_autoptr(GPtrArray) files = entries(repo_dir);

                for (guint f = 0; f < files->len; f++) {
                    g_autofree gchar *source = NULL;

                    if (!g_str_has_suffix(files->pdata[f], ".gguf"))
                        continue;
                    source =
                        g_strdup_printf(LMSTUDIO_PREFIX "%s/%s/%s", (char *)publishers->pdata[p],
                                        (char *)repos->pdata[q], (char *)files->pdata[f]);
                    add_found(found, seen, source);
                }
            }
        }
    }
    return found;
}
