/* einsora_gguf_check() on any bytes: it never reads outside them, and what
 * it accepts is what the model store relies on: a known architecture, a
 * power-of-two alignment, and tensor data inside the file. */
#include "einsora-fuzz.h"
#include "einsora-gguf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so the sanitizer sees any read past the end. */
    g_autofree guint8 *copy = g_memdup2(data, size);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraGgufInfo) info = einsora_gguf_check(copy, size, &error);

    if (info == NULL) {
        EINSORA_FUZZ_CHECK(error != NULL);
        EINSORA_FUZZ_CHECK(g_str_has_prefix(error->message, "not a usable GGUF model: "));
        return 0;
    }
    EINSORA_FUZZ_CHECK(error == NULL);
    EINSORA_FUZZ_CHECK(info->version == 2 || info->version == 3);
    EINSORA_FUZZ_CHECK(info->tensor_count >= 1 && info->tensor_count <= EINSORA_GGUF_MAX_TENSORS);
    EINSORA_FUZZ_CHECK(info->alignment != 0 && (info->alignment & (info->alignment - 1)) == 0);
    EINSORA_FUZZ_CHECK(info->data_offset <= size && info->data_offset % info->alignment == 0);
    EINSORA_FUZZ_CHECK(einsora_gguf_architecture_is_known(info->architecture));
    EINSORA_FUZZ_CHECK(g_utf8_validate(info->architecture, -1, NULL));
    EINSORA_FUZZ_CHECK(info->name == NULL || g_utf8_validate(info->name, -1, NULL));
    return 0;
}
