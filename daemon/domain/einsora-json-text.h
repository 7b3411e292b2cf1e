/* A check on JSON text before json-glib reads it. json-glib 1.6 (Debian
 * 12) leaks what it read of every top-level value but the last when the
 * text holds several ("{}{}", "[][]", "7{}"): a hostile body of many would leak
 * megabytes a request. Such text is not JSON; every reader of untrusted
 * JSON refuses it first. Found by tests/fuzz. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Whether @data holds at most one top-level value with nothing after it
 * but space. Only a first look: what passes still goes to the parser. */
gboolean einsora_json_text_is_one_value(const char *data, gsize length);
/* Whether no object or array in @data nests deeper than @max_depth:
 * json-glib's parser recurses once a level, so a large body of '[' would
 * run it out of stack. */
gboolean einsora_json_text_depth_within(const char *data, gsize length, gsize max_depth);

G_END_DECLS
