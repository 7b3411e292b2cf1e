/* Reading the API's JSON objects without trusting their shape: a member
 * of the wrong type reads as absent, never as a critical warning. */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* (nullable) A string member; NULL when @object is NULL, or the member is
 * absent, null or not a string. */
const char *einsora_json_member_string(JsonObject *object, const char *name);
/* An integer member, else @fallback. */
gint64 einsora_json_member_int(JsonObject *object, const char *name, gint64 fallback);
/* A boolean member, else @fallback. */
gboolean einsora_json_member_boolean(JsonObject *object, const char *name, gboolean fallback);
/* (nullable) An object member. */
JsonObject *einsora_json_member_object(JsonObject *object, const char *name);
/* (nullable) An array member. */
JsonArray *einsora_json_member_array(JsonObject *object, const char *name);
/* (nullable) Element @index of @array if it is an object. */
JsonObject *einsora_json_array_object(JsonArray *array, guint index);

G_END_DECLS
