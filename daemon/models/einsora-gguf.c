/* The GGUF layout (little-endian throughout), as llama.cpp's gguf.cpp reads
 * it: "GGUF", a version (2 or 3), the tensor and key counts (u64), the
 * key/value pairs, the tensor table (name, dimensions, type, offset), then
 * the tensor data from the next multiple of general.alignment (32 unless
 * set). Version 1 (u32 counts, 2023) is refused: no current runtime reads
 * it. */
#include "einsora-gguf.h"

#include <string.h>

#include "einsora-error.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32u

typedef enum {
    GGUF_UINT8 = 0,
    GGUF_INT8 = 1,
    GGUF_UINT16 = 2,
    GGUF_INT16 = 3,
    GGUF_UINT32 = 4,
    GGUF_INT32 = 5,
    GGUF_FLOAT32 = 6,
    GGUF_BOOL = 7,
    GGUF_STRING = 8,
    GGUF_ARRAY = 9,
    GGUF_UINT64 = 10,
    GGUF_INT64 = 11,
    GGUF_FLOAT64 = 12,
    GGUF_TYPE_COUNT = 13,
} GgufType;

/* ggml's tensor types: weights per block and bytes per block. The gaps are
 * types ggml removed; a file naming one is refused as unknown. */
typedef struct {
    const char *name;
    guint32 block;
    guint32 bytes;
} TensorType;

static const TensorType tensor_types[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},         [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},      [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 36},      [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110},   [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},   [16] = {"IQ2_XXS", 256, 66},
    [17] = {"IQ2_XS", 256, 74},  [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},  [22] = {"IQ2_S", 256, 82},
    [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},        [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 56},   [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},
};

/* The architectures llama.cpp (the version packaging/dev/deps.sh builds)
 * has a loader for: general.architecture must be one of them, or the
 * runtime would refuse the file only after the endpoint was launched. */
static const char *const known_architectures[] = {
    "arcee",
    "arctic",
    "arwkv7",
    "baichuan",
    "bailingmoe",
    "bert",
    "bitnet",
    "bloom",
    "chameleon",
    "chatglm",
    "codeshell",
    "cohere2",
    "command-r",
    "dbrx",
    "deci",
    "deepseek",
    "deepseek2",
    "dots1",
    "ernie4_5",
    "ernie4_5-moe",
    "exaone",
    "exaone4",
    "falcon",
    "falcon-h1",
    "gemma",
    "gemma-embedding",
    "gemma2",
    "gemma3",
    "gemma3n",
    "glm4",
    "glm4moe",
    "gpt-oss",
    "gpt2",
    "gptj",
    "gptneox",
    "granite",
    "granitehybrid",
    "granitemoe",
    "grok",
    "hunyuan-dense",
    "hunyuan-moe",
    "internlm2",
    "jais",
    "jina-bert-v2",
    "lfm2",
    "llama",
    "llama4",
    "mamba",
    "mamba2",
    "minicpm",
    "minicpm3",
    "mistral3",
    "mpt",
    "nemotron",
    "neo-bert",
    "nomic-bert",
    "nomic-bert-moe",
    "olmo",
    "olmo2",
    "olmoe",
    "openelm",
    "orion",
    "phi2",
    "phi3",
    "phimoe",
    "plamo",
    "plamo2",
    "plm",
    "qwen",
    "qwen2",
    "qwen2moe",
    "qwen2vl",
    "qwen3",
    "qwen3moe",
    "refact",
    "rwkv6",
    "rwkv6qwen2",
    "rwkv7",
    "seed_oss",
    "smollm3",
    "stablelm",
    "starcoder",
    "starcoder2",
    "t5",
    "t5encoder",
    "xverse",
};

typedef struct {
    const guint8 *data;
    gsize size;
    gsize pos;
} Reader;

typedef struct {
    guint64 offset;
    guint64 bytes;
    gsize name_at;
} TensorSpan;

static gboolean G_GNUC_PRINTF(3, 4) fail(GError **error, gsize at, const char *format, ...)
{
    va_list args;
    g_autofree gchar *what = NULL;

    va_start(args, format);
    what = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                "not a usable GGUF model: %s (at byte %" G_GSIZE_FORMAT ")", what, at);
    return FALSE;
}

static gboolean
need(Reader *r, guint64 count, const char *what, GError **error)
{
    if (count > r->size - r->pos)
        return fail(error, r->pos, "the file ends inside %s", what);
    return TRUE;
}

static gboolean
read_u32(Reader *r, guint32 *out, const char *what, GError **error)
{
    guint32 value;

    if (!need(r, 4, what, error))
        return FALSE;
    memcpy(&value, r->data + r->pos, 4);
    *out = GUINT32_FROM_LE(value);
    r->pos += 4;
    return TRUE;
}

static gboolean
read_u64(Reader *r, guint64 *out, const char *what, GError **error)
{
    guint64 value;

    if (!need(r, 8, what, error))
        return FALSE;
    memcpy(&value, r->data + r->pos, 8);
    *out = GUINT64_FROM_LE(value);
    r->pos += 8;
    return TRUE;
}

/* A string is a u64 length and that many bytes (no NUL). START and LENGTH
 * say where its bytes lie. */
static gboolean
read_string(Reader *r, guint64 max, const char *what, gsize *start, guint64 *length, GError **error)
{
    gsize at = r->pos;

    if (!read_u64(r, length, what, error))
        return FALSE;
    if (*length > max)
        return fail(error, at,
                    "%s is %" G_GUINT64_FORMAT " bytes long (at most %" G_GUINT64_FORMAT ")", what,
                    *length, max);
    if (!need(r, *length, what, error))
        return FALSE;
    *start = r->pos;
    r->pos += *length;
    return TRUE;
}

static guint64
scalar_size(GgufType type)
{
    switch (type) {
    case GGUF_UINT8:
    case GGUF_INT8:
    case GGUF_BOOL:
        return 1;
    case GGUF_UINT16:
    case GGUF_INT16:
        return 2;
    case GGUF_UINT32:
    case GGUF_INT32:
    case GGUF_FLOAT32:
        return 4;
    case GGUF_UINT64:
    case GGUF_INT64:
    case GGUF_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

/* Skips one value of TYPE; arrays hold scalars or strings, never arrays
 * (llama.cpp refuses nested arrays too). */
static gboolean
skip_value(Reader *r, guint32 type, const char *key, GError **error)
{
    gsize start;
    guint64 length;

    if (type >= GGUF_TYPE_COUNT)
        return fail(error, r->pos, "key \"%s\" has unknown value type %u", key, type);
    if (type == GGUF_STRING)
        return read_string(r, EINSORA_GGUF_MAX_STRING_LEN, "a string value", &start, &length,
                           error);
    if (type == GGUF_ARRAY) {
        guint32 element;
        guint64 count;
        gsize at = r->pos;

        if (!read_u32(r, &element, "an array's element type", error) ||
            !read_u64(r, &count, "an array's length", error))
            return FALSE;
        if (element >= GGUF_TYPE_COUNT || element == GGUF_ARRAY)
            return fail(error, at, "key \"%s\" is an array of %s", key,
                        element == GGUF_ARRAY ? "arrays" : "an unknown type");
        if (count > EINSORA_GGUF_MAX_ARRAY_LEN)
            return fail(error, at,
                        "key \"%s\" is an array of %" G_GUINT64_FORMAT " elements (at most %u)",
                        key, count, EINSORA_GGUF_MAX_ARRAY_LEN);
        if (element == GGUF_STRING) {
            for (guint64 i = 0; i < count; i++)
                if (!read_string(r, EINSORA_GGUF_MAX_STRING_LEN, "a string in an array", &start,
                                 &length, error))
                    return FALSE;
            return TRUE;
        }
        /* count <= 2^24 and elements <= 8 bytes: no overflow. */
        if (!need(r, count * scalar_size(element), "an array", error))
            return FALSE;
        r->pos += count * scalar_size(element);
        return TRUE;
    }
    if (!need(r, scalar_size(type), "a value", error))
        return FALSE;
    r->pos += scalar_size(type);
    return TRUE;
}

/* The text of a string value the validator keeps (architecture, name). */
static gchar *
read_text_value(Reader *r, guint32 type, const char *key, GError **error)
{
    gsize start, at = r->pos;
    guint64 length;

    if (type != GGUF_STRING) {
        fail(error, at, "key \"%s\" is not a string", key);
        return NULL;
    }
    if (!read_string(r, 1024, key, &start, &length, error))
        return NULL;
    if (memchr(r->data + start, '\0', length) != NULL ||
        !g_utf8_validate((const char *)r->data + start, (gssize)length, NULL)) {
        fail(error, at, "key \"%s\" is not UTF-8 text", key);
        return NULL;
    }
    return g_strndup((const char *)r->data + start, length);
}

gboolean
einsora_gguf_architecture_is_known(const char *architecture)
{
    for (gsize i = 0; i < G_N_ELEMENTS(known_architectures); i++)
        if (strcmp(known_architectures[i], architecture) == 0)
            return TRUE;
    return FALSE;
}

static gboolean
read_header(Reader *r, EinsoraGgufInfo *info, GError **error)
{
    if (!need(r, 4, "the magic", error))
        return FALSE;
    if (memcmp(r->data, GGUF_MAGIC, 4) != 0)
        return fail(error, 0, "it does not start with \"GGUF\"");
    r->pos = 4;
    if (!read_u32(r, &info->version, "the version", error))
        return FALSE;
    if (info->version != 2 && info->version != 3)
        return fail(error, 4, "version %u (only 2 and 3 are read)", info->version);
    if (!read_u64(r, &info->tensor_count, "the tensor count", error) ||
        !read_u64(r, &info->key_count, "the key count", error))
        return FALSE;
    if (info->tensor_count == 0)
        return fail(error, 8, "it holds no tensors (a vocabulary-only file)");
    if (info->tensor_count > EINSORA_GGUF_MAX_TENSORS)
        return fail(error, 8, "%" G_GUINT64_FORMAT " tensors (at most %u)", info->tensor_count,
                    EINSORA_GGUF_MAX_TENSORS);
    if (info->key_count > EINSORA_GGUF_MAX_KEYS)
        return fail(error, 16, "%" G_GUINT64_FORMAT " keys (at most %u)", info->key_count,
                    EINSORA_GGUF_MAX_KEYS);
    return TRUE;
}

static gboolean
read_keys(Reader *r, EinsoraGgufInfo *info, GError **error)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint64 i = 0; i < info->key_count; i++) {
        gsize start, at = r->pos;
        guint64 length;
        guint32 type;
        g_autofree gchar *key = NULL;

        if (!read_string(r, EINSORA_GGUF_MAX_KEY_LEN, "a key", &start, &length, error))
            return FALSE;
        if (length == 0 || memchr(r->data + start, '\0', length) != NULL ||
            !g_utf8_validate((const char *)r->data + start, (gssize)length, NULL))
            return fail(error, at, "key %" G_GUINT64_FORMAT " is empty or not UTF-8 text", i);
        key = g_strndup((const char *)r->data + start, length);
        if (g_hash_table_contains(seen, key))
            return fail(error, at, "key \"%s\" appears twice", key);
        if (!read_u32(r, &type, "a value type", error))
            return FALSE;
        if (strcmp(key, "general.architecture") == 0) {
            if ((info->architecture = read_text_value(r, type, key, error)) == NULL)
                return FALSE;
        } else if (strcmp(key, "general.name") == 0) {
            if ((info->name = read_text_value(r, type, key, error)) == NULL)
                return FALSE;
        } else if (strcmp(key, "general.alignment") == 0) {
            if (type != GGUF_UINT32)
                return fail(error, at, "general.alignment is not a u32");
            if (!read_u32(r, &info->alignment, "general.alignment", error))
                return FALSE;
            if (info->alignment == 0 || (info->alignment & (info->alignment - 1)) != 0)
                return fail(error, at, "general.alignment %u is not a power of two",
                            info->alignment);
        } else if (!skip_value(r, type, key, error)) {
            return FALSE;
        }
        g_hash_table_add(seen, g_steal_pointer(&key));
    }
    if (info->architecture == NULL)
        return fail(error, r->pos, "it has no general.architecture");
    if (!einsora_gguf_architecture_is_known(info->architecture))
        return fail(error, r->pos, "architecture \"%s\" is not one llama.cpp loads",
                    info->architecture);
    return TRUE;
}

static int
span_compare(gconstpointer a, gconstpointer b)
{
    const TensorSpan *x = a, *y = b;

    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : 0;
}

static gboolean
read_tensors(Reader *r, EinsoraGgufInfo *info, GError **error)
{
    g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree TensorSpan *spans = g_new0(TensorSpan, info->tensor_count);
    guint64 data_bytes;

    for (guint64 i = 0; i < info->tensor_count; i++) {
        gsize start, at = r->pos;
        guint64 length, weights = 1, rows = 1, row_bytes;
        guint32 dims, type;
        guint64 dim[EINSORA_GGUF_MAX_DIMS];
        g_autofree gchar *name = NULL;
        const TensorType *kind;

        if (!read_string(r, EINSORA_GGUF_MAX_TENSOR_NAME_LEN, "a tensor name", &start, &length,
                         error))
            return FALSE;
        if (length == 0 || memchr(r->data + start, '\0', length) != NULL)
            return fail(error, at, "tensor %" G_GUINT64_FORMAT " has an empty or broken name", i);
        name = g_strndup((const char *)r->data + start, length);
        if (g_hash_table_contains(names, name))
            return fail(error, at, "tensor \"%s\" appears twice", name);
        if (!read_u32(r, &dims, "a tensor's dimension count", error))
            return FALSE;
        if (dims == 0 || dims > EINSORA_GGUF_MAX_DIMS)
            return fail(error, at, "tensor \"%s\" has %u dimensions (1 to %u)", name, dims,
                        EINSORA_GGUF_MAX_DIMS);
        for (guint32 d = 0; d < dims; d++) {
            if (!read_u64(r, &dim[d], "a tensor's dimensions", error))
                return FALSE;
            if (dim[d] == 0 || dim[d] > G_MAXINT64 ||
                !g_uint64_checked_mul(&weights, weights, dim[d]) || weights > G_MAXINT64)
                return fail(error, at, "tensor \"%s\" has a dimension of 0 or too many weights",
                            name);
            if (d > 0)
                rows *= dim[d];
        }
        if (!read_u32(r, &type, "a tensor's type", error))
            return FALSE;
        if (type >= G_N_ELEMENTS(tensor_types) || tensor_types[type].name == NULL)
            return fail(error, at, "tensor \"%s\" has unknown type %u", name, type);
        kind = &tensor_types[type];
        if (dim[0] % kind->block != 0)
            return fail(error, at,
                        "tensor \"%s\" of type %s has %" G_GUINT64_FORMAT
                        " weights per row, not a multiple of %u",
                        name, kind->name, dim[0], kind->block);
        row_bytes = dim[0] / kind->block * kind->bytes;
        if (!g_uint64_checked_mul(&spans[i].bytes, row_bytes, rows))
            return fail(error, at, "tensor \"%s\" is too large", name);
        if (!read_u64(r, &spans[i].offset, "a tensor's offset", error))
            return FALSE;
        spans[i].name_at = at;
        info->parameter_count += weights;
        g_hash_table_add(names, g_steal_pointer(&name));
    }

    /* The data starts at the next multiple of the alignment. */
    info->data_offset = (r->pos + info->alignment - 1) / info->alignment * info->alignment;
    if (info->data_offset > r->size)
        return fail(error, r->pos, "the file ends before its tensor data");
    data_bytes = r->size - info->data_offset;

    qsort(spans, info->tensor_count, sizeof *spans, span_compare);
    for (guint64 i = 0; i < info->tensor_count; i++) {
        guint64 end;

        if (spans[i].offset % info->alignment != 0)
            return fail(error, spans[i].name_at,
                        "a tensor's offset %" G_GUINT64_FORMAT
                        " is not a multiple of the alignment %u",
                        spans[i].offset, info->alignment);
        if (!g_uint64_checked_add(&end, spans[i].offset, spans[i].bytes) || end > data_bytes)
            return fail(error, spans[i].name_at, "a tensor's data lies past the end of the file");
        if (i > 0 && spans[i].offset < spans[i - 1].offset + spans[i - 1].bytes)
            return fail(error, spans[i].name_at, "two tensors' data overlap");
    }
    return TRUE;
}

EinsoraGgufInfo *
einsora_gguf_check(const guint8 *data, gsize size, GError **error)
{
    g_autoptr(EinsoraGgufInfo) info = g_new0(EinsoraGgufInfo, 1);
    Reader r = {data, size, 0};

    info->alignment = GGUF_DEFAULT_ALIGNMENT;
    if (!read_header(&r, info, error) || !read_keys(&r, info, error) ||
        !read_tensors(&r, info, error))
        return NULL;
    return g_steal_pointer(&info);
}

EinsoraGgufInfo *
einsora_gguf_check_file(const char *path, GError **error)
{
    g_autoptr(GMappedFile) file = NULL;
    g_autoptr(GError) local = NULL;

    file = g_mapped_file_new(path, FALSE, &local);
    if (file == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "can't read the model file: %s", local->message);
        return NULL;
    }
    return einsora_gguf_check((const guint8 *)g_mapped_file_get_contents(file),
                              g_mapped_file_get_length(file), error);
}

void
einsora_gguf_info_free(EinsoraGgufInfo *info)
{
    if (info == NULL)
        return;
    g_free(info->architecture);
    g_free(info->name);
    g_free(info);
}
