/* A private temporary directory (0700) for a test's files, removed with
 * everything in it when the test ends. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

gchar *einsora_test_dir_new(void);
void einsora_test_dir_remove(const char *path);

G_END_DECLS
