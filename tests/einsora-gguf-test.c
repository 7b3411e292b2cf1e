/* The GGUF validator: a small well-formed model is accepted with what it
 * says about itself, and a table of bad files is refused, each with a
 * message naming what is wrong. The files are written here byte by byte
 * to the layout llama.cpp's gguf.cpp reads; the end-to-end endpoint test
 * loads a model written by llama.cpp's own Python writer. */
#include <glib/gstdio.h>
#include <string.h>

#include "einsora-error.h"
#include "einsora-gguf.h"

/* What a test file holds; the defaults make a good one. */
typedef struct {
    const char *magic;
    guint32 version;
    gint64 tensor_count;      /* -1: the real count */
    gint64 key_count;         /* -1: the real count */
    const char *architecture; /* NULL: no general.architecture */
    gboolean architecture_as_u32;
    gboolean key_twice;
    guint32 extra_value_type; /* 0: no extra key; else a key of this type */
    guint64 array_length;     /* 0: the real length of general.tags */
    guint64 key_length;       /* 0: the real length of the first key */
    guint32 alignment;        /* 0: no general.alignment */
    const char *second_name;
    guint32 dims;        /* dimensions of the first tensor (2) */
    guint64 dim0, dim1;  /* its dimensions */
    guint32 second_type; /* the second tensor's type (Q8_0) */
    guint64 second_offset;
    gsize cut; /* bytes taken off the end */
} Spec;

static const Spec good = {
    .magic = "GGUF",
    .version = 3,
    .tensor_count = -1,
    .key_count = -1,
    .architecture = "llama",
    .second_name = "output.weight",
    .dims = 2,
    .dim0 = 8,
    .dim1 = 4,
    .second_type = 8,
    .second_offset = 128,
};

static void
put_u32(GByteArray *b, guint32 v)
{
    v = GUINT32_TO_LE(v);
    g_byte_array_append(b, (const guint8 *)&v, 4);
}

static void
put_u64(GByteArray *b, guint64 v)
{
    v = GUINT64_TO_LE(v);
    g_byte_array_append(b, (const guint8 *)&v, 8);
}

static void
put_string(GByteArray *b, const char *s)
{
    put_u64(b, strlen(s));
    g_byte_array_append(b, (const guint8 *)s, strlen(s));
}

static GBytes *
build(const Spec *spec)
{
    GByteArray *b = g_byte_array_new();
    guint keys = 3 + (spec->architecture != NULL) + spec->key_twice + (spec->alignment != 0) +
                 (spec->extra_value_type != 0);
    guint32 alignment = spec->alignment ? spec->alignment : 32;
    const char *tags[] = {"test", "tiny", "random"};

    g_byte_array_append(b, (const guint8 *)spec->magic, 4);
    put_u32(b, spec->version);
    put_u64(b, spec->tensor_count >= 0 ? (guint64)spec->tensor_count : 2);
    put_u64(b, spec->key_count >= 0 ? (guint64)spec->key_count : keys);

    /* general.name, with the first key's length as the spec says. */
    put_u64(b, spec->key_length ? spec->key_length : strlen("general.name"));
    g_byte_array_append(b, (const guint8 *)"general.name", strlen("general.name"));
    put_u32(b, 8);
    put_string(b, "Tiny test model");
    if (spec->architecture != NULL) {
        put_string(b, "general.architecture");
        if (spec->architecture_as_u32) {
            put_u32(b, 4);
            put_u32(b, 7);
        } else {
            put_u32(b, 8);
            put_string(b, spec->architecture);
        }
    }
    put_string(b, "llama.context_length");
    put_u32(b, 4);
    put_u32(b, 128);
    put_string(b, "general.tags");
    put_u32(b, 9);
    put_u32(b, 8);
    put_u64(b, spec->array_length ? spec->array_length : G_N_ELEMENTS(tags));
    for (gsize i = 0; i < G_N_ELEMENTS(tags); i++)
        put_string(b, tags[i]);
    if (spec->key_twice) {
        put_string(b, "llama.context_length");
        put_u32(b, 4);
        put_u32(b, 256);
    }
    if (spec->alignment != 0) {
        put_string(b, "general.alignment");
        put_u32(b, 4);
        put_u32(b, spec->alignment);
    }
    if (spec->extra_value_type != 0) {
        put_string(b, "test.extra");
        put_u32(b, spec->extra_value_type);
        if (spec->extra_value_type == 9) { /* an array of arrays */
            put_u32(b, 9);
            put_u64(b, 1);
        }
        put_u32(b, 0);
    }

    /* token_embd.weight: F32 dim0 x dim1 at 0 (128 bytes by default). */
    put_string(b, "token_embd.weight");
    put_u32(b, spec->dims);
    put_u64(b, spec->dim0);
    for (guint32 d = 1; d < spec->dims; d++)
        put_u64(b, spec->dim1);
    put_u32(b, 0);
    put_u64(b, 0);
    /* The second tensor: 32 x 2 of its type (Q8_0: 68 bytes). */
    put_string(b, spec->second_name);
    put_u32(b, 2);
    put_u64(b, 32);
    put_u64(b, 2);
    put_u32(b, spec->second_type);
    put_u64(b, spec->second_offset);

    while (b->len % alignment != 0)
        g_byte_array_append(b, (const guint8 *)"", 1);
    for (guint i = 0; i < 128 + 68; i++)
        g_byte_array_append(b, (const guint8 *)"\x3c", 1);
    g_byte_array_set_size(b, spec->cut < b->len ? b->len - spec->cut : 0);
    return g_byte_array_free_to_bytes(b);
}

static EinsoraGgufInfo *
check(const Spec *spec, GError **error)
{
    g_autoptr(GBytes) bytes = build(spec);
    gsize size;
    const guint8 *data = g_bytes_get_data(bytes, &size);

    return einsora_gguf_check(data, size, error);
}

static void
test_good(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraGgufInfo) info = check(&good, &error);
    Spec aligned = good;
    g_autoptr(EinsoraGgufInfo) info64 = NULL;

    g_assert_no_error(error);
    g_assert_nonnull(info);
    g_assert_cmpuint(info->version, ==, 3);
    g_assert_cmpuint(info->tensor_count, ==, 2);
    g_assert_cmpuint(info->key_count, ==, 4);
    g_assert_cmpstr(info->architecture, ==, "llama");
    g_assert_cmpstr(info->name, ==, "Tiny test model");
    g_assert_cmpuint(info->alignment, ==, 32);
    g_assert_cmpuint(info->data_offset % 32, ==, 0);
    g_assert_cmpuint(info->parameter_count, ==, 8 * 4 + 32 * 2);

    /* A set alignment moves where the data starts. */
    aligned.alignment = 64;
    aligned.second_offset = 128;
    info64 = check(&aligned, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(info64->alignment, ==, 64);
    g_assert_cmpuint(info64->data_offset % 64, ==, 0);
}

typedef struct {
    const char *what;
    void (*change)(Spec *spec);
    /* What the message says; NULL where the reader goes on into other
     * bytes and what it trips on depends on them. */
    const char *message;
} BadFile;

#define CHANGE(name, body)                                                                         \
    static void name(Spec *s)                                                                      \
    {                                                                                              \
        body;                                                                                      \
    }
CHANGE(empty, s->cut = 100000)
CHANGE(wrong_magic, s->magic = "GGML")
CHANGE(version_1, s->version = 1)
CHANGE(version_4, s->version = 4)
CHANGE(no_tensors, s->tensor_count = 0)
CHANGE(too_many_tensors, s->tensor_count = G_GINT64_CONSTANT(1) << 40)
CHANGE(too_many_keys, s->key_count = 1 << 20)
CHANGE(more_keys_than_there_are, s->key_count = 40)
CHANGE(long_key, s->key_length = 1 << 20)
CHANGE(key_past_end, s->key_length = 60000)
CHANGE(key_twice, s->key_twice = TRUE)
CHANGE(unknown_value_type, s->extra_value_type = 13)
CHANGE(array_of_arrays, s->extra_value_type = 9)
CHANGE(huge_array, s->array_length = G_GUINT64_CONSTANT(1) << 40)
CHANGE(array_past_end, s->array_length = 1000)
CHANGE(no_architecture, s->architecture = NULL)
CHANGE(unknown_architecture, s->architecture = "frobnicator")
CHANGE(architecture_not_text, s->architecture_as_u32 = TRUE)
CHANGE(alignment_not_power, s->alignment = 48)
CHANGE(long_tensor_name,
       s->second_name = "a-tensor-name-longer-than-ggml-allows-which-is-sixty-three-bytes!")
CHANGE(tensor_twice, s->second_name = "token_embd.weight")
CHANGE(five_dims, s->dims = 5)
CHANGE(zero_dim, s->dim1 = 0)
CHANGE(dims_overflow, s->dim0 = G_GUINT64_CONSTANT(1) << 32; s->dim1 = G_GUINT64_CONSTANT(1) << 32)
CHANGE(removed_type, s->second_type = 4)
CHANGE(unknown_type, s->second_type = 200)
CHANGE(row_not_blocks, s->second_type = 12)
CHANGE(unaligned_offset, s->second_offset = 132)
CHANGE(overlap, s->second_offset = 96)
CHANGE(data_past_end, s->cut = 1)
CHANGE(offset_past_end, s->second_offset = G_GUINT64_CONSTANT(1) << 62)
CHANGE(cut_in_table, s->cut = 128 + 68 + 40)

static const BadFile bad_files[] = {
    {"an empty file", empty, "the file ends inside the magic"},
    {"another format's magic", wrong_magic, "does not start with \"GGUF\""},
    {"version 1", version_1, "version 1 (only 2 and 3"},
    {"a version from the future", version_4, "version 4"},
    {"a vocabulary-only file", no_tensors, "holds no tensors"},
    {"2^40 tensors", too_many_tensors, "1099511627776 tensors (at most 65536)"},
    {"2^20 keys", too_many_keys, "1048576 keys (at most 65536)"},
    {"a key count past the keys", more_keys_than_there_are, NULL},
    {"a key of 1 MiB", long_key, "a key is 1048576 bytes long (at most 65535)"},
    {"a key longer than the file", key_past_end, "the file ends inside a key"},
    {"a key twice", key_twice, "key \"llama.context_length\" appears twice"},
    {"a value of unknown type", unknown_value_type, "key \"test.extra\" has unknown value type 13"},
    {"an array of arrays", array_of_arrays, "key \"test.extra\" is an array of arrays"},
    {"an array of 2^40", huge_array, "key \"general.tags\" is an array of 1099511627776 elements"},
    {"an array longer than the file", array_past_end, NULL},
    {"no architecture", no_architecture, "it has no general.architecture"},
    {"an unknown architecture", unknown_architecture,
     "architecture \"frobnicator\" is not one llama.cpp loads"},
    {"an architecture that is a number", architecture_not_text,
     "key \"general.architecture\" is not a string"},
    {"an alignment of 48", alignment_not_power, "general.alignment 48 is not a power of two"},
    {"a tensor name over 63 bytes", long_tensor_name,
     "a tensor name is 65 bytes long (at most 63)"},
    {"a tensor twice", tensor_twice, "tensor \"token_embd.weight\" appears twice"},
    {"five dimensions", five_dims, "tensor \"token_embd.weight\" has 5 dimensions (1 to 4)"},
    {"a dimension of 0", zero_dim, "has a dimension of 0 or too many weights"},
    {"2^64 weights", dims_overflow, "has a dimension of 0 or too many weights"},
    {"a type ggml removed", removed_type, "tensor \"output.weight\" has unknown type 4"},
    {"an unknown type", unknown_type, "tensor \"output.weight\" has unknown type 200"},
    {"rows not whole blocks", row_not_blocks,
     "of type Q4_K has 32 weights per row, not a multiple of 256"},
    {"an unaligned offset", unaligned_offset, "offset 132 is not a multiple of the alignment 32"},
    {"overlapping tensors", overlap, "two tensors' data overlap"},
    {"data cut short", data_past_end, "a tensor's data lies past the end of the file"},
    {"an offset past the end", offset_past_end, "a tensor's data lies past the end of the file"},
    {"a file cut in its tensor table", cut_in_table, "the file ends inside"},
};

static void
test_bad_files(void)
{
    for (gsize i = 0; i < G_N_ELEMENTS(bad_files); i++) {
        Spec spec = good;
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraGgufInfo) info = NULL;

        bad_files[i].change(&spec);
        info = check(&spec, &error);
        if (info != NULL)
            g_error("%s: accepted", bad_files[i].what);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_true(g_str_has_prefix(error->message, "not a usable GGUF model: "));
        if (bad_files[i].message != NULL && strstr(error->message, bad_files[i].message) == NULL)
            g_error("%s: \"%s\" does not say \"%s\"", bad_files[i].what, error->message,
                    bad_files[i].message);
    }
}

/* Every prefix of a good file is refused, and never read past its end
 * (the sanitizer tree runs this too). */
static void
test_every_prefix(void)
{
    g_autoptr(GBytes) bytes = build(&good);
    gsize size;
    const guint8 *data = g_bytes_get_data(bytes, &size);

    for (gsize n = 0; n < size; n++) {
        g_autofree guint8 *copy = g_memdup2(data, n);
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraGgufInfo) info = einsora_gguf_check(copy, n, &error);

        g_assert_null(info);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
}

static void
test_file(void)
{
    g_autoptr(GBytes) bytes = build(&good);
    g_autofree gchar *dir = g_dir_make_tmp("einsora-gguf-XXXXXX", NULL);
    g_autofree gchar *path = g_build_filename(dir, "tiny.gguf", NULL);
    g_autofree gchar *missing = g_build_filename(dir, "missing.gguf", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraGgufInfo) info = NULL;
    g_autoptr(EinsoraGgufInfo) none = NULL;

    g_assert_true(g_file_set_contents(path, g_bytes_get_data(bytes, NULL),
                                      (gssize)g_bytes_get_size(bytes), NULL));
    info = einsora_gguf_check_file(path, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(info->architecture, ==, "llama");

    none = einsora_gguf_check_file(missing, &error);
    g_assert_null(none);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_true(g_str_has_prefix(error->message, "can't read the model file: "));
    g_unlink(path);
    g_rmdir(dir);
}

/* A model written by llama.cpp's own Python writer passes, and llama.cpp's
 * vocabulary-only file is refused for having no weights. Needs the
 * llama.cpp share/ directory packaging/dev/llama-server.sh builds (the
 * test command sets EINSORA_LLAMA_DIR). */
static void
test_real_model(void)
{
    const char *llama = g_getenv("EINSORA_LLAMA_DIR");
    const char *source = g_getenv("EINSORA_SOURCE_ROOT");
    g_autofree gchar *share = NULL, *script = NULL, *vocab = NULL, *dir = NULL, *model = NULL;
    g_autofree gchar *err = NULL;
    gint status = 0;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraGgufInfo) info = NULL;
    g_autoptr(EinsoraGgufInfo) none = NULL;

    if (llama == NULL || source == NULL) {
        g_test_skip("EINSORA_LLAMA_DIR is not set (packaging/dev/llama-server.sh prints it)");
        return;
    }
    share = g_build_filename(llama, "share", NULL);
    script = g_build_filename(source, "tests", "models", "make-tiny-model.py", NULL);
    vocab = g_build_filename(share, "ggml-vocab-llama-spm.gguf", NULL);
    dir = g_dir_make_tmp("einsora-gguf-XXXXXX", NULL);
    model = g_build_filename(dir, "tiny.gguf", NULL);
    {
        /* Debian's python3, which python3-numpy is for (not another one on PATH). */
        const char *argv[] = {"/usr/bin/python3", script, share, model, NULL};

        g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                                   &err, &status, &error));
        g_assert_no_error(error);
        if (!g_spawn_check_wait_status(status, NULL))
            g_error("make-tiny-model.py failed: %s", err);
    }
    info = einsora_gguf_check_file(model, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(info->architecture, ==, "llama");
    g_assert_cmpstr(info->name, ==, "Einsora tiny test model");
    g_assert_cmpuint(info->tensor_count, ==, 3 + 2 * 9);
    g_assert_cmpuint(info->parameter_count, >, 4000000);

    none = einsora_gguf_check_file(vocab, &error);
    g_assert_null(none);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_nonnull(strstr(error->message, "holds no tensors"));
    g_unlink(model);
    g_rmdir(dir);
}

static void
test_architectures(void)
{
    g_assert_true(einsora_gguf_architecture_is_known("llama"));
    g_assert_true(einsora_gguf_architecture_is_known("qwen2"));
    g_assert_false(einsora_gguf_architecture_is_known("Llama"));
    g_assert_false(einsora_gguf_architecture_is_known(""));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gguf/good", test_good);
    g_test_add_func("/gguf/bad-files", test_bad_files);
    g_test_add_func("/gguf/every-prefix", test_every_prefix);
    g_test_add_func("/gguf/file", test_file);
    g_test_add_func("/gguf/architectures", test_architectures);
    g_test_add_func("/gguf/real-model", test_real_model);
    return g_test_run();
}
