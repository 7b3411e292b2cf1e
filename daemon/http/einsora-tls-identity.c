#define G_LOG_DOMAIN "einsora-http"

#include "einsora-tls-identity.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <string.h>

/* A private CA's certificates need not follow the public CAs' short
 * lives: a pin that lasts is the point (docs/adr/0045). */
#define VALID_DAYS (10 * 365)

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EVP_PKEY, EVP_PKEY_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509, X509_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(BIO, BIO_free)

static gboolean
openssl_failed(GError **error, const char *what)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "couldn't make the TLS certificate: %s",
                what);
    return FALSE;
}

static gboolean
add_extension(X509 *certificate, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX context;
    X509_EXTENSION *extension;
    gboolean added;

    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer, certificate, NULL, NULL, 0);
    extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
    if (extension == NULL)
        return FALSE;
    added = X509_add_ext(certificate, extension, -1) == 1;
    X509_EXTENSION_free(extension);
    return added;
}

/* A certificate for @key named @common_name, signed by @issuer_key
 * (@issuer NULL: itself). */
static X509 *
make_certificate(EVP_PKEY *key, const char *common_name, X509 *issuer, EVP_PKEY *issuer_key,
                 gboolean is_ca, const char *alt_names)
{
    g_autoptr(X509) certificate = X509_new();
    X509_NAME *name;
    guint8 serial[16];
    BIGNUM *number;
    gboolean ok;

    if (certificate == NULL || X509_set_version(certificate, 2) != 1)
        return NULL;
    /* Positive random serials, as RFC 5280 asks. */
    for (guint i = 0; i < sizeof serial; i++)
        serial[i] = (guint8)g_random_int_range(0, 256);
    serial[0] &= 0x7f;
    number = BN_bin2bn(serial, sizeof serial, NULL);
    ok = number != NULL && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != NULL;
    BN_free(number);
    if (!ok)
        return NULL;
    /* A minute back: a client whose clock is a little behind still accepts it. */
    if (X509_gmtime_adj(X509_getm_notBefore(certificate), -60) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(certificate), (long)VALID_DAYS * 24 * 3600) == NULL ||
        X509_set_pubkey(certificate, key) != 1)
        return NULL;
    name = X509_get_subject_name(certificate);
    if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const guchar *)"Einsora", -1, -1,
                                   0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const guchar *)common_name, -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(certificate, issuer != NULL ? X509_get_subject_name(issuer) : name) !=
            1)
        return NULL;
    if (!add_extension(certificate, issuer != NULL ? issuer : certificate, NID_basic_constraints,
                       is_ca ? "critical,CA:TRUE,pathlen:0" : "CA:FALSE") ||
        !add_extension(certificate, issuer != NULL ? issuer : certificate, NID_key_usage,
                       is_ca ? "critical,keyCertSign,cRLSign"
                             : "critical,digitalSignature,keyEncipherment") ||
        !add_extension(certificate, issuer != NULL ? issuer : certificate,
                       NID_subject_key_identifier, "hash") ||
        (issuer != NULL &&
         !add_extension(certificate, issuer, NID_authority_key_identifier, "keyid:always")) ||
        (!is_ca && !add_extension(certificate, issuer, NID_ext_key_usage, "serverAuth")) ||
        (alt_names != NULL && !add_extension(certificate, issuer, NID_subject_alt_name, alt_names)))
        return NULL;
    if (X509_sign(certificate, issuer_key, EVP_sha256()) <= 0)
        return NULL;
    return g_steal_pointer(&certificate);
}

static gchar *
pem_of(int (*write)(BIO *, const void *), const void *object)
{
    g_autoptr(BIO) bio = BIO_new(BIO_s_mem());
    char *data = NULL;
    long length;

    if (bio == NULL || write(bio, object) != 1)
        return NULL;
    length = BIO_get_mem_data(bio, &data);
    return g_strndup(data, (gsize)length);
}

static int
write_key(BIO *bio, const void *key)
{
    return PEM_write_bio_PrivateKey(bio, (EVP_PKEY *)key, NULL, NULL, 0, NULL, NULL);
}

static int
write_certificate(BIO *bio, const void *certificate)
{
    return PEM_write_bio_X509(bio, (X509 *)certificate);
}

/* g_file_set_contents_full() writes a temporary file and renames it: a
 * crash leaves the old file or the new, never half of one. */
static gboolean
write_private(const char *dir, const char *name, const char *contents, int mode, GError **error)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);

    return g_file_set_contents_full(
        path, contents, -1, G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_ONLY_EXISTING,
        mode, error);
}

/* "DNS:localhost,IP:127.0.0.1,…" for @hosts. */
static gchar *
alt_names_for(const char *const *hosts)
{
    g_autoptr(GString) names = g_string_new(NULL);

    for (guint i = 0; hosts != NULL && hosts[i] != NULL; i++) {
        const char *host = hosts[i];
        /* A name with a comma or colon would change the list's meaning. */
        if (*host == '\0' || (strchr(host, ',') != NULL) ||
            (!g_hostname_is_ip_address(host) && strchr(host, ':') != NULL))
            continue;
        g_string_append_printf(names, "%s%s:%s", names->len > 0 ? "," : "",
                               g_hostname_is_ip_address(host) ? "IP" : "DNS", host);
    }
    return names->len > 0 ? g_string_free(g_steal_pointer(&names), FALSE) : NULL;
}

gboolean
einsora_tls_identity_ensure(const char *dir, const char *const *hosts, GError **error)
{
    g_autofree gchar *cert_path = g_build_filename(dir, EINSORA_TLS_CERT_FILE, NULL);
    g_autofree gchar *key_path = g_build_filename(dir, EINSORA_TLS_KEY_FILE, NULL);
    g_autoptr(EVP_PKEY) ca_key = NULL;
    g_autoptr(EVP_PKEY) server_key = NULL;
    g_autoptr(X509) ca = NULL;
    g_autoptr(X509) server = NULL;
    g_autofree gchar *alt_names = alt_names_for(hosts);
    g_autofree gchar *host_name = NULL;
    g_autofree gchar *ca_pem = NULL, *ca_key_pem = NULL, *server_pem = NULL, *key_pem = NULL;
    g_autofree gchar *chain = NULL;

    g_return_val_if_fail(dir != NULL, FALSE);

    if (g_mkdir_with_parents(dir, 0700) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "couldn't make %s: %s", dir,
                    g_strerror(saved));
        return FALSE;
    }
    if (g_file_test(cert_path, G_FILE_TEST_EXISTS) && g_file_test(key_path, G_FILE_TEST_EXISTS))
        return TRUE;

    host_name = g_strdup_printf("einsora-daemon on %s", g_get_host_name());
    ca_key = EVP_EC_gen("P-256");
    server_key = EVP_EC_gen("P-256");
    if (ca_key == NULL || server_key == NULL)
        return openssl_failed(error, "no P-256 key");
    ca = make_certificate(ca_key, host_name, NULL, ca_key, TRUE, NULL);
    if (ca == NULL)
        return openssl_failed(error, "the certificate authority");
    server = make_certificate(server_key, g_get_host_name(), ca, ca_key, FALSE, alt_names);
    if (server == NULL)
        return openssl_failed(error, "the server certificate");
    ca_pem = pem_of(write_certificate, ca);
    ca_key_pem = pem_of(write_key, ca_key);
    server_pem = pem_of(write_certificate, server);
    key_pem = pem_of(write_key, server_key);
    if (ca_pem == NULL || ca_key_pem == NULL || server_pem == NULL || key_pem == NULL)
        return openssl_failed(error, "PEM");
    chain = g_strconcat(server_pem, ca_pem, NULL);
    /* Keys first, the certificate last: the certificate's being there
     * says the identity is whole. */
    return write_private(dir, EINSORA_TLS_CA_KEY_FILE, ca_key_pem, 0600, error) &&
           write_private(dir, EINSORA_TLS_CA_FILE, ca_pem, 0644, error) &&
           write_private(dir, EINSORA_TLS_KEY_FILE, key_pem, 0600, error) &&
           write_private(dir, EINSORA_TLS_CERT_FILE, chain, 0644, error);
}

GTlsCertificate *
einsora_tls_identity_load(const char *cert_path, const char *key_path, GError **error)
{
    g_autoptr(GError) local_error = NULL;
    GTlsCertificate *certificate;

    if (g_tls_backend_get_default() == NULL ||
        !g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            "GLib has no TLS here: install glib-networking");
        return NULL;
    }
    certificate = g_tls_certificate_new_from_files(cert_path, key_path, &local_error);
    if (certificate == NULL)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "couldn't read the TLS certificate %s with its key %s: %s", cert_path, key_path,
                    local_error->message);
    return certificate;
}

gchar *
einsora_tls_certificate_fingerprint(GTlsCertificate *certificate)
{
    g_autoptr(GByteArray) der = NULL;
    g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);

    g_return_val_if_fail(G_IS_TLS_CERTIFICATE(certificate), NULL);
    g_object_get(certificate, "certificate", &der, NULL);
    g_checksum_update(checksum, der->data, der->len);
    return g_strconcat("SHA256:", g_checksum_get_string(checksum), NULL);
}

gboolean
einsora_tls_fingerprint_matches(const char *text, const char *fingerprint)
{
    g_autoptr(GString) a = g_string_new(NULL);
    g_autoptr(GString) b = g_string_new(NULL);
    const char *sides[] = {text, fingerprint};
    GString *cleaned[] = {a, b};

    if (text == NULL || fingerprint == NULL)
        return FALSE;
    for (guint s = 0; s < 2; s++) {
        const char *p = sides[s];
        if (g_ascii_strncasecmp(p, "SHA256:", 7) == 0)
            p += 7;
        for (; *p != '\0'; p++)
            if (*p != ':')
                g_string_append_c(cleaned[s], g_ascii_tolower(*p));
    }
    return a->len == 64 && g_str_equal(a->str, b->str);
}
