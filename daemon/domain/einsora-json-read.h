/* Strict, bounded reading of JSON records that come from outside: an
 * agent's Sync messages and the inventory it reported, kept in the store.
 * Every refusal is an EINSORA_ERROR_INVALID_REQUEST that names the
 * member; callers prefix where it sits (statuses[3]: ...). */
#pragma once

#include <json-glib/json-glib.h>

#include "einsora-error.h"

G_BEGIN_DECLS

/* The longest string a record may hold, in bytes. */
#define EINSORA_JSON_MAX_STRING_BYTES 256

gboolean einsora_json_invalid(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* Writing: a NULL string is left out, so reading it back says which
 * member a record lacked. */
void einsora_json_add_string(JsonBuilder *builder, const char *member, const char *value);
void einsora_json_add_int(JsonBuilder *builder, const char *member, gint64 value);

gboolean einsora_json_read_object(JsonNode *node, const char *what, const char *const *allowed,
                                  JsonObject **out, GError **error);
gboolean einsora_json_check_string(const char *value, const char *member, GError **error);
gboolean einsora_json_read_string(JsonObject *object, const char *member, gboolean required,
                                  gchar **out, GError **error);
gboolean einsora_json_read_uuid(JsonObject *object, const char *member, gchar **out,
                                GError **error);
gboolean einsora_json_read_int(JsonObject *object, const char *member, gint64 max, gint64 *out,
                               GError **error);
gboolean einsora_json_read_array(JsonObject *object, const char *member, guint max_length,
                                 JsonArray **out, GError **error);

G_END_DECLS
