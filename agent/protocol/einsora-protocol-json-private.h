/* Strict, bounded reading of the protocol's JSON, shared by its records.
 * Every refusal is an EINSORA_ERROR_INVALID_REQUEST that names the member;
 * callers prefix where it sits (statuses[3]: ...). */
#pragma once

#include <json-glib/json-glib.h>

#include "einsora-error.h"
#include "einsora-protocol.h"

G_BEGIN_DECLS

gboolean einsora_protocol_invalid(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* Writing: a NULL string is left out, so reading it back says which
 * member a record lacked. */
void einsora_protocol_add_string(JsonBuilder *builder, const char *member, const char *value);
void einsora_protocol_add_int(JsonBuilder *builder, const char *member, gint64 value);

gboolean einsora_protocol_read_object(JsonNode *node, const char *what, const char *const *allowed,
                                      JsonObject **out, GError **error);
gboolean einsora_protocol_check_string(const char *value, const char *member, GError **error);
gboolean einsora_protocol_read_string(JsonObject *object, const char *member, gboolean required,
                                      gchar **out, GError **error);
gboolean einsora_protocol_read_uuid(JsonObject *object, const char *member, gchar **out,
                                    GError **error);
gboolean einsora_protocol_read_int(JsonObject *object, const char *member, gint64 max, gint64 *out,
                                   GError **error);
gboolean einsora_protocol_read_array(JsonObject *object, const char *member, guint max_length,
                                     JsonArray **out, GError **error);

G_END_DECLS
