/* Short IDs. Einsora's IDs are UUIDv7s, which begin with their creation
 * time: IDs made within about a minute share their first 8 characters. So
 * a table shows the first 8 characters, or more where that is what tells
 * its IDs apart; and wherever the CLI takes an ID it also takes a prefix of
 * at least 4 hex digits (hyphens and case don't matter) that matches
 * exactly one. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_SHORT_ID_MIN_SHOWN 8
#define EINSORA_SHORT_ID_MIN_DIGITS 4

/* The number of leading characters of the IDs in @ids (of const char *),
 * at least EINSORA_SHORT_ID_MIN_SHOWN, that tells every one of them apart;
 * never ends on a hyphen. */
guint einsora_short_id_length(GPtrArray *ids);
/* A whole ID in canonical form (8-4-4-4-12 hex digits, either case). */
gboolean einsora_short_id_is_full(const char *text);
/* At least EINSORA_SHORT_ID_MIN_DIGITS hex digits, hyphens allowed. */
gboolean einsora_short_id_is_prefix(const char *text);
/* Whether @id starts with @prefix, ignoring hyphens and case. */
gboolean einsora_short_id_matches(const char *id, const char *prefix);

G_END_DECLS
