/* Where the app keeps the API tokens of remote daemons, one per server
 * URL: the Secret Service (libsecret; schema "dev.einsora.Einsora.Token",
 * attribute "server") when one answers on the session bus, else
 * $XDG_CONFIG_HOME/einsora/tokens.json, 0600 in a 0700 directory, written
 * atomically and read only when it is the user's own and nobody else's.
 * The choice is made on the first call and kept. EINSORA_TOKEN_STORE=file
 * (or =secret-service) forces one (tests). Tokens are never logged.
 * docs/adr/0021-desktop-app.md. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TOKEN_STORE_ERROR (einsora_token_store_error_quark())
GQuark einsora_token_store_error_quark(void);

typedef enum {
    EINSORA_TOKEN_STORE_ERROR_INVALID,     /* not a server URL, or not a token */
    EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE, /* the file is not the user's alone */
    EINSORA_TOKEN_STORE_ERROR_BAD_FILE,    /* the file can't be read as tokens */
    EINSORA_TOKEN_STORE_ERROR_FAILED,      /* the store couldn't keep or give it */
} EinsoraTokenStoreError;

#define EINSORA_TOKEN_STORE_SECRET_SERVICE "secret-service"
#define EINSORA_TOKEN_STORE_FILE "file"

#define EINSORA_TYPE_TOKEN_STORE (einsora_token_store_get_type())
G_DECLARE_FINAL_TYPE(EinsoraTokenStore, einsora_token_store, EINSORA, TOKEN_STORE, GObject)

EinsoraTokenStore *einsora_token_store_new(void);
/* (nullable) "secret-service" or "file" once a call has chosen (the
 * "backend" property notifies); NULL before. */
const char *einsora_token_store_get_backend(EinsoraTokenStore *self);
/* The file the file backend uses. */
const char *einsora_token_store_get_path(EinsoraTokenStore *self);

/* Keeps @token for @server (a daemon's URL), replacing any other. */
void einsora_token_store_save_async(EinsoraTokenStore *self, const char *server, const char *token,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data);
gboolean einsora_token_store_save_finish(EinsoraTokenStore *self, GAsyncResult *result,
                                         GError **error);
/* @server's token; NULL without an error when none is kept. */
void einsora_token_store_lookup_async(EinsoraTokenStore *self, const char *server,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data);
gchar *einsora_token_store_lookup_finish(EinsoraTokenStore *self, GAsyncResult *result,
                                         GError **error);
/* Forgets @server's token; TRUE also when there was none. */
void einsora_token_store_clear_async(EinsoraTokenStore *self, const char *server,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data);
gboolean einsora_token_store_clear_finish(EinsoraTokenStore *self, GAsyncResult *result,
                                          GError **error);

G_END_DECLS
