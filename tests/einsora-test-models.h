/* A model store for tests, holding one small valid GGUF file: the GGUF
 * fuzzer's first seed (tests/fuzz/corpus/gguf/seed-00, a few hundred
 * bytes), which the validator accepts. No model is ever downloaded. */
#pragma once

#include "einsora-model-store.h"

G_BEGIN_DECLS

/* tests/fuzz/corpus/gguf/seed-00 under EINSORA_SOURCE_ROOT. */
gchar *einsora_test_model_seed_path(void);

/* Waits (polling, the import runs in a thread) until the import @id has
 * finished; its last state. */
EinsoraModelImport *einsora_test_model_store_wait(EinsoraModelStore *store, const char *id);

/* A store at @dir/models with the seed imported as @name. */
EinsoraModelStore *einsora_test_model_store_new(const char *dir, const char *name);

G_END_DECLS
