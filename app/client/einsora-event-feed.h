/* The change feed of the caller's workloads (GET /v1/events?follow=true,
 * docs/adr/0016) as a GObject for a main loop: the desktop app and
 * `einsora watch` follow it instead of polling.
 *
 * Everything is asynchronous on the thread-default main context of the
 * thread that made the feed; use it from that thread only. The stream is
 * read line by line as server-sent events; each event of type "workload"
 * is emitted as "event" with its JSON object (the workload event, with
 * "seq"). A connection that breaks (or a daemon that restarts) is opened
 * again after a pause of 1 s, doubling up to 30 s, with Last-Event-ID set
 * to the last ID the server sent, so nothing is missed and nothing comes
 * twice. An answer that retrying can't change (401, 403, 404, 400) stops
 * the feed with "failed".
 *
 * Signals:
 * - "event" (JsonObject *event): one workload event, in the feed's order
 *   (borrowed: ref it to keep it).
 * - "failed" (GError *error): the server refused the feed for good
 *   (EINSORA_CLIENT_ERROR with the API's code); the feed has stopped.
 * Properties: "connected" (read-only; notify::connected when the stream
 * opens or breaks), "last-event-id" (read-only). */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "einsora-client-error.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_EVENT_FEED (einsora_event_feed_get_type())
G_DECLARE_FINAL_TYPE(EinsoraEventFeed, einsora_event_feed, EINSORA, EVENT_FEED, GObject)

/* @base_url: "http://127.0.0.1:8080" (a final slash is ignored).
 * @token: (nullable): an API token, sent as a bearer token, never logged. */
EinsoraEventFeed *einsora_event_feed_new(const char *base_url, const char *token);

/* Opens the stream. @last_event_id: (nullable): the last event the caller
 * has; NULL starts from now (no backlog), "0" from the very first event.
 * Starting a started feed starts it again from @last_event_id. */
/* Whom its TLS trusts (einsora_client_get_tls_database()); before start. */
void einsora_event_feed_set_tls_database(EinsoraEventFeed *self, GTlsDatabase *database);
void einsora_event_feed_start(EinsoraEventFeed *self, const char *last_event_id);
/* Closes the stream and stops reconnecting; "connected" becomes FALSE.
 * No signal is emitted after it returns. */
void einsora_event_feed_stop(EinsoraEventFeed *self);

gboolean einsora_event_feed_get_connected(EinsoraEventFeed *self);
/* The last event ID the server sent (also where a feed started from
 * now stands, which the server says on connecting), or NULL. */
const char *einsora_event_feed_get_last_event_id(EinsoraEventFeed *self);

/* For tests: the pause before the first reconnection, and its ceiling. */
void einsora_event_feed_set_backoff(EinsoraEventFeed *self, guint first_ms, guint max_ms);

G_END_DECLS
