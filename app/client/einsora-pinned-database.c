#define G_LOG_DOMAIN "einsora-client"

#include "einsora-pinned-database.h"

#include <string.h>

#define PREFIX "SHA256:"
#define HEX_DIGITS 64

struct _EinsoraPinnedDatabase {
    GTlsDatabase parent_instance;
    gchar *pin;
    /* Written from GLib's TLS worker threads. */
    GMutex lock;
    gchar *refused;
};

G_DEFINE_FINAL_TYPE(EinsoraPinnedDatabase, einsora_pinned_database, G_TYPE_TLS_DATABASE)

gchar *
einsora_certificate_fingerprint(GTlsCertificate *certificate)
{
    g_autoptr(GByteArray) der = NULL;
    g_autofree gchar *hex = NULL;

    g_object_get(certificate, "certificate", &der, NULL);
    if (der == NULL)
        return NULL;
    hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, der->data, der->len);
    return g_strconcat(PREFIX, hex, NULL);
}

gchar *
einsora_fingerprint_normalize(const char *text)
{
    g_autoptr(GString) hex = g_string_new(NULL);

    if (text == NULL)
        return NULL;
    if (g_ascii_strncasecmp(text, PREFIX, strlen(PREFIX)) == 0)
        text += strlen(PREFIX);
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == ':')
            continue;
        if (!g_ascii_isxdigit(*c))
            return NULL;
        g_string_append_c(hex, g_ascii_tolower(*c));
    }
    if (hex->len != HEX_DIGITS)
        return NULL;
    return g_strconcat(PREFIX, hex->str, NULL);
}

static GTlsDatabase *
system_database(void)
{
    return g_tls_backend_get_default_database(g_tls_backend_get_default());
}

static GTlsCertificateFlags
verify_chain(GTlsDatabase *database, GTlsCertificate *chain, const gchar *purpose,
             GSocketConnectable *identity, GTlsInteraction *interaction,
             GTlsDatabaseVerifyFlags flags, GCancellable *cancellable, GError **error)
{
    EinsoraPinnedDatabase *self = EINSORA_PINNED_DATABASE(database);
    g_autofree gchar *fingerprint = einsora_certificate_fingerprint(chain);
    g_autoptr(GTlsDatabase) system = NULL;
    GTlsCertificateFlags result;

    /* The pinned certificate itself: whatever its issuer, dates or
     * names, as an SSH host key is trusted. */
    if (self->pin != NULL && g_strcmp0(fingerprint, self->pin) == 0)
        return 0;
    system = system_database();
    result = system != NULL ? g_tls_database_verify_chain(system, chain, purpose, identity,
                                                          interaction, flags, cancellable, error)
                            : G_TLS_CERTIFICATE_UNKNOWN_CA;
    if (result != 0) {
        g_mutex_lock(&self->lock);
        g_free(self->refused);
        self->refused = g_steal_pointer(&fingerprint);
        g_mutex_unlock(&self->lock);
    }
    return result;
}

/* The rest is the system's. */
static gchar *
create_certificate_handle(GTlsDatabase *database, GTlsCertificate *certificate)
{
    g_autoptr(GTlsDatabase) system = system_database();

    return system != NULL ? g_tls_database_create_certificate_handle(system, certificate) : NULL;
}

static GTlsCertificate *
lookup_certificate_for_handle(GTlsDatabase *database, const gchar *handle,
                              GTlsInteraction *interaction, GTlsDatabaseLookupFlags flags,
                              GCancellable *cancellable, GError **error)
{
    g_autoptr(GTlsDatabase) system = system_database();

    return system != NULL ? g_tls_database_lookup_certificate_for_handle(
                                system, handle, interaction, flags, cancellable, error)
                          : NULL;
}

static GTlsCertificate *
lookup_certificate_issuer(GTlsDatabase *database, GTlsCertificate *certificate,
                          GTlsInteraction *interaction, GTlsDatabaseLookupFlags flags,
                          GCancellable *cancellable, GError **error)
{
    g_autoptr(GTlsDatabase) system = system_database();

    return system != NULL ? g_tls_database_lookup_certificate_issuer(
                                system, certificate, interaction, flags, cancellable, error)
                          : NULL;
}

static GList *
lookup_certificates_issued_by(GTlsDatabase *database, GByteArray *issuer_raw_dn,
                              GTlsInteraction *interaction, GTlsDatabaseLookupFlags flags,
                              GCancellable *cancellable, GError **error)
{
    g_autoptr(GTlsDatabase) system = system_database();

    return system != NULL ? g_tls_database_lookup_certificates_issued_by(
                                system, issuer_raw_dn, interaction, flags, cancellable, error)
                          : NULL;
}

static void
einsora_pinned_database_finalize(GObject *object)
{
    EinsoraPinnedDatabase *self = EINSORA_PINNED_DATABASE(object);

    g_free(self->pin);
    g_free(self->refused);
    g_mutex_clear(&self->lock);
    G_OBJECT_CLASS(einsora_pinned_database_parent_class)->finalize(object);
}

static void
einsora_pinned_database_class_init(EinsoraPinnedDatabaseClass *klass)
{
    GTlsDatabaseClass *database_class = G_TLS_DATABASE_CLASS(klass);

    G_OBJECT_CLASS(klass)->finalize = einsora_pinned_database_finalize;
    database_class->verify_chain = verify_chain;
    database_class->create_certificate_handle = create_certificate_handle;
    database_class->lookup_certificate_for_handle = lookup_certificate_for_handle;
    database_class->lookup_certificate_issuer = lookup_certificate_issuer;
    database_class->lookup_certificates_issued_by = lookup_certificates_issued_by;
}

static void
einsora_pinned_database_init(EinsoraPinnedDatabase *self)
{
    g_mutex_init(&self->lock);
}

EinsoraPinnedDatabase *
einsora_pinned_database_new(const char *fingerprint)
{
    EinsoraPinnedDatabase *self = g_object_new(EINSORA_TYPE_PINNED_DATABASE, NULL);

    self->pin = einsora_fingerprint_normalize(fingerprint);
    return self;
}

const char *
einsora_pinned_database_get_pin(EinsoraPinnedDatabase *self)
{
    return self->pin;
}

gchar *
einsora_pinned_database_dup_refused(EinsoraPinnedDatabase *self)
{
    gchar *refused;

    g_mutex_lock(&self->lock);
    refused = g_strdup(self->refused);
    g_mutex_unlock(&self->lock);
    return refused;
}
