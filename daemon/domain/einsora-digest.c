#include "einsora-digest.h"

#include <string.h>

gboolean
einsora_digest_is_valid(const char *digest)
{
    if (digest == NULL || !g_str_has_prefix(digest, EINSORA_DIGEST_SHA256_PREFIX) ||
        strlen(digest) != EINSORA_DIGEST_LENGTH)
        return FALSE;
    for (const char *p = digest + strlen(EINSORA_DIGEST_SHA256_PREFIX); *p != '\0'; p++) {
        if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
            return FALSE;
    }
    return TRUE;
}
