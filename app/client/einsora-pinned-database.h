/* The certificates a client accepts from a server (docs/adr/0047): the
 * one the user pinned, by the SHA-256 of its DER, or any the system's
 * CAs vouch for. A GTlsDatabase, so that every session of the client
 * (requests, streams, the event feed) checks the same way; it keeps the
 * fingerprint of the last certificate it refused, for the message that
 * tells the user what to check and what to type. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_PINNED_DATABASE (einsora_pinned_database_get_type())
G_DECLARE_FINAL_TYPE(EinsoraPinnedDatabase, einsora_pinned_database, EINSORA, PINNED_DATABASE,
                     GTlsDatabase)

/* @fingerprint: (nullable): a pin, as einsora_fingerprint_normalize()
 * writes it; NULL: the system's CAs only. */
EinsoraPinnedDatabase *einsora_pinned_database_new(const char *fingerprint);
const char *einsora_pinned_database_get_pin(EinsoraPinnedDatabase *self);
/* The fingerprint of the last certificate refused, or NULL. */
gchar *einsora_pinned_database_dup_refused(EinsoraPinnedDatabase *self);

/* "SHA256:" and the lowercase hex of the SHA-256 of @certificate's DER. */
gchar *einsora_certificate_fingerprint(GTlsCertificate *certificate);
/* @text as a pin: "SHA256:" optional, colons and case ignored, as people
 * copy fingerprints from other tools; NULL when it isn't 64 hex digits. */
gchar *einsora_fingerprint_normalize(const char *text);

G_END_DECLS
