/* JSON text written straight into a GString, for answers too long to
 * build as a json-glib tree first (the /v1 lists). Compact, as
 * json_to_string(node, FALSE) writes it, so an item reads the same
 * whichever way it was written. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* @value as a JSON string, or null when NULL. Every control character is
 * escaped (json-glib 1.6 lets 0x1f through raw, which is not JSON). */
void einsora_json_append_string(GString *out, const char *value);
/* "@name":, after a comma unless @first. @name is written as it is:
 * callers pass literals that need no escaping. */
void einsora_json_append_member(GString *out, const char *name, gboolean first);
void einsora_json_append_member_string(GString *out, const char *name, const char *value,
                                       gboolean first);
void einsora_json_append_member_int(GString *out, const char *name, gint64 value, gboolean first);
void einsora_json_append_member_boolean(GString *out, const char *name, gboolean value,
                                        gboolean first);

G_END_DECLS
