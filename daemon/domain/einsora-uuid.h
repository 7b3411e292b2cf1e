/* UUIDv7 (RFC 9562): time-ordered IDs for every object Einsora stores. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_UUID_STRING_LEN 36

gboolean einsora_uuid_check_random(GError **error);
/* Never fails once einsora_uuid_check_random() has said yes. */
gchar *einsora_uuid_v7_new(gint64 unix_ms);
gboolean einsora_uuid_parse(const char *str, guint8 out[16], GError **error);
gboolean einsora_uuid_is_valid(const char *str);
gint64 einsora_uuid_v7_unix_ms(const guint8 uuid[16]);

G_END_DECLS
