/* The TLS front of an edge's connection (docs/adr/0046): TLS ends here,
 * on the accepted TCP socket, and the plain bytes go both ways through a
 * socket pair whose inner end is what an EinsoraHttpConnection reads, as
 * it reads any client. So the edge's hygiene, deadlines and framing are
 * the same with TLS as without, and a TLS peer costs two more descriptors
 * and at most two 16 KiB buffers besides the TLS session. The front ends
 * itself: when the inner end is closed (the connection's deadline, its
 * last answer, the edge going), when the peer's TLS ends or fails. Internal
 * to daemon/http. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _EinsoraTlsFront EinsoraTlsFront;

/* The front of @tcp, presenting @certificate; *@inner is the socket the
 * connection reads, and @tcp is the front's to close. The handshake
 * starts at einsora_tls_front_start(). @done runs once, from the main
 * loop, when the front has closed both ends (not after
 * einsora_tls_front_close()). */
EinsoraTlsFront *einsora_tls_front_new(GSocket *tcp, GTlsCertificate *certificate, GSocket **inner,
                                       GError **error);
/* Asks the peer for a certificate, checked against @authority (its CAs);
 * one it doesn't send, or one that doesn't check, still lets the
 * handshake through: the handler that needs it refuses, and says why.
 * @peer runs once, after the handshake and before any of the peer's
 * bytes reach the connection, with the certificate's fingerprint (NULL:
 * none was sent) and what was wrong with it (0: it checks). Call before
 * einsora_tls_front_start(); @destroy frees @user_data once @peer ran or
 * can't run any more. */
void einsora_tls_front_request_client_certificate(EinsoraTlsFront *front, GTlsDatabase *authority,
                                                  void (*peer)(const char *fingerprint,
                                                               GTlsCertificateFlags errors,
                                                               gpointer user_data),
                                                  gpointer user_data, GDestroyNotify destroy);
void einsora_tls_front_start(EinsoraTlsFront *front,
                             void (*done)(EinsoraTlsFront *front, gpointer user_data),
                             gpointer user_data);
/* Closes both ends now and frees the front. */
void einsora_tls_front_close(EinsoraTlsFront *front);

G_END_DECLS
