/* llama.cpp for tests: the llama-server packaging/dev/llama-server.sh
 * builds (the test command exports its cache as EINSORA_LLAMA_DIR), and a
 * tiny random-weight model made from the vocabulary in its share/ by
 * tests/models/make-tiny-model.py. Models are made, never downloaded. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* <EINSORA_LLAMA_DIR>/bin/llama-server, or NULL (and the test skipped)
 * when the variable isn't set. */
gchar *einsora_test_llama_server(void);

/* Writes the tiny model (about 17 MB) to @path with Debian's python3. */
void einsora_test_llama_make_model(const char *path);

/* The model's file in a model store at @models_dir as the native driver
 * finds it (blobs/sha256-<hex>), hard-linked from @path; its digest
 * ("sha256:<hex>"). */
gchar *einsora_test_llama_store_model(const char *path, const char *models_dir);

/* A logit_bias member's value that bans the special and byte tokens of
 * llama.cpp's SPM vocabulary (0 to 2, 3 to 258): random weights would
 * otherwise emit pieces of UTF-8 that break longer answers, or end one
 * early; with them banned an answer is exactly max_tokens long. */
gchar *einsora_test_llama_ban_bytes(void);

G_END_DECLS
