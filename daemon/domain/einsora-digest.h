/* Content digests as Einsora writes them: "sha256:" and 64 lower-case
 * hex digits (a model file's, in the model store, the desired state and
 * a workload's row). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_DIGEST_SHA256_PREFIX "sha256:"
#define EINSORA_DIGEST_LENGTH (7 + 64)

gboolean einsora_digest_is_valid(const char *digest);

G_END_DECLS
