/* Fixed-width UTC timestamps ("2026-11-29T09:06:36.123456Z"), so that text
 * order is time order in the store; and the injected clock. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_TIMESTAMP_LEN 27

/* The clock logic reads: microseconds since the Unix epoch. Logic never
 * calls the system clock itself; tests pass a clock they drive. */
typedef gint64 (*EinsoraNowFunc)(gpointer user_data);

gint64 einsora_now_real(gpointer user_data);

gchar *einsora_timestamp_format(gint64 unix_us);
gboolean einsora_timestamp_parse(const char *str, gint64 *unix_us, GError **error);

G_END_DECLS
