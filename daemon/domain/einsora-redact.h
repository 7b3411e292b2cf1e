/* Removes credentials from free text: URLs with passwords, token query
 * parameters, bearer values, key=value secrets, Einsora API tokens (kept
 * to their short prefix) and PEM private keys. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_REDACTED "[redacted]"

gchar *einsora_redact_secrets(const char *text);

G_END_DECLS
