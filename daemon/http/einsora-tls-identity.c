#define G_LOG_DOMAIN "einsora-http"

#include "einsora-tls-identity.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <string.h>

/* A private CA's certificates need not follow the public CAs' short
 * lives: a pin that lasts is the point (docs/adr/0045). */
#define VALID_DAYS (10 * 365)

/* Far more than a CSR with an RSA-4096 key and a few names needs; the
 * bound is what a caller reading it off the network can rely on. */
#define REQUEST_MAX_BYTES (16 * 1024)

/* What a certificate's common name may hold (RFC 5280's ub-common-name). */
#define COMMON_NAME_MAX_CHARS 64

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EVP_PKEY, EVP_PKEY_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509, X509_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509_REQ, X509_REQ_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(BIO, BIO_free)

static gboolean
openssl_failed(GError **error, const char *what)
{
    /* OpenSSL's error queue is per thread: left there, it would be
     * blamed on the next caller's failure. */
    ERR_clear_error();
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "couldn't make the TLS certificate: %s",
                what);
    return FALSE;
}

static gboolean
request_refused(GError **error, const char *why)
{
    ERR_clear_error();
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", why);
    return FALSE;
}

/* A key file asking for a passphrase fails instead of OpenSSL's prompt
 * on the terminal. */
static int
no_passphrase(char *buffer, int size, int rwflag, void *user_data)
{
    return -1;
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
 * (@issuer NULL: itself), for @valid_days. A CA's certificate has no
 * extended key usage; any other one has @extended_usage ("serverAuth",
 * "clientAuth"). */
static X509 *
make_certificate(EVP_PKEY *key, const char *common_name, X509 *issuer, EVP_PKEY *issuer_key,
                 gboolean is_ca, const char *alt_names, const char *extended_usage,
                 gint64 valid_days)
{
    g_autoptr(X509) certificate = X509_new();
    X509_NAME *name;
    guint8 serial[16];
    BIGNUM *number;
    gboolean ok;

    g_return_val_if_fail(is_ca || extended_usage != NULL, NULL);

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
        X509_gmtime_adj(X509_getm_notAfter(certificate), (long)(valid_days * 24 * 3600)) == NULL ||
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
        (!is_ca && !add_extension(certificate, issuer, NID_ext_key_usage, extended_usage)) ||
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

static int
write_request(BIO *bio, const void *request)
{
    return PEM_write_bio_X509_REQ(bio, (X509_REQ *)request);
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

static gboolean
make_private_dir(const char *dir, GError **error)
{
    if (g_mkdir_with_parents(dir, 0700) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "couldn't make %s: %s", dir,
                    g_strerror(saved));
        return FALSE;
    }
    return TRUE;
}

static gchar *
read_text(const char *dir, const char *name, GError **error)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);
    g_autoptr(GFile) file = g_file_new_for_path(path);
    gchar *contents = NULL;

    if (!g_file_load_contents(file, NULL, &contents, NULL, NULL, error))
        return NULL;
    return contents;
}

/* @dir's certificate authority, with its key. */
static gboolean
ca_load(const char *dir, X509 **ca, EVP_PKEY **ca_key, GError **error)
{
    g_autofree gchar *ca_pem = read_text(dir, EINSORA_TLS_CA_FILE, error);
    g_autofree gchar *key_pem = NULL;
    g_autoptr(BIO) ca_bio = NULL;
    g_autoptr(BIO) key_bio = NULL;
    g_autoptr(X509) certificate = NULL;
    g_autoptr(EVP_PKEY) key = NULL;

    if (ca_pem == NULL)
        return FALSE;
    key_pem = read_text(dir, EINSORA_TLS_CA_KEY_FILE, error);
    if (key_pem == NULL)
        return FALSE;
    ca_bio = BIO_new_mem_buf(ca_pem, -1);
    key_bio = BIO_new_mem_buf(key_pem, -1);
    if (ca_bio != NULL)
        certificate = PEM_read_bio_X509(ca_bio, NULL, no_passphrase, NULL);
    if (key_bio != NULL)
        key = PEM_read_bio_PrivateKey(key_bio, NULL, no_passphrase, NULL);
    if (certificate == NULL || key == NULL || X509_check_private_key(certificate, key) != 1) {
        ERR_clear_error();
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s and %s in %s aren't a certificate authority with its key",
                    EINSORA_TLS_CA_FILE, EINSORA_TLS_CA_KEY_FILE, dir);
        return FALSE;
    }
    *ca = g_steal_pointer(&certificate);
    *ca_key = g_steal_pointer(&key);
    return TRUE;
}

/* @dir's certificate authority, made unless there. ca.pem is written
 * after its key, so ca.pem's being there says the pair is whole; a key
 * alone is what a crash left, and is replaced. */
static gboolean
ca_ensure(const char *dir, X509 **ca, EVP_PKEY **ca_key, GError **error)
{
    g_autofree gchar *ca_path = g_build_filename(dir, EINSORA_TLS_CA_FILE, NULL);
    g_autofree gchar *name = NULL;
    g_autofree gchar *ca_pem = NULL, *key_pem = NULL;
    g_autoptr(EVP_PKEY) key = NULL;
    g_autoptr(X509) certificate = NULL;

    if (!make_private_dir(dir, error))
        return FALSE;
    if (g_file_test(ca_path, G_FILE_TEST_EXISTS))
        return ca_load(dir, ca, ca_key, error);

    name = g_strdup_printf("einsora-daemon on %s", g_get_host_name());
    key = EVP_EC_gen("P-256");
    if (key == NULL)
        return openssl_failed(error, "no P-256 key");
    certificate = make_certificate(key, name, NULL, key, TRUE, NULL, NULL, VALID_DAYS);
    if (certificate == NULL)
        return openssl_failed(error, "the certificate authority");
    ca_pem = pem_of(write_certificate, certificate);
    key_pem = pem_of(write_key, key);
    if (ca_pem == NULL || key_pem == NULL)
        return openssl_failed(error, "PEM");
    if (!write_private(dir, EINSORA_TLS_CA_KEY_FILE, key_pem, 0600, error) ||
        !write_private(dir, EINSORA_TLS_CA_FILE, ca_pem, 0644, error))
        return FALSE;
    *ca = g_steal_pointer(&certificate);
    *ca_key = g_steal_pointer(&key);
    return TRUE;
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
    g_autofree gchar *ca_pem = NULL, *server_pem = NULL, *key_pem = NULL;
    g_autofree gchar *chain = NULL;

    g_return_val_if_fail(dir != NULL, FALSE);

    if (!make_private_dir(dir, error))
        return FALSE;
    if (g_file_test(cert_path, G_FILE_TEST_EXISTS) && g_file_test(key_path, G_FILE_TEST_EXISTS))
        return TRUE;

    /* A CA already there (an agent's enrolment made it) is kept: the
     * certificates it signed stay good. */
    if (!ca_ensure(dir, &ca, &ca_key, error))
        return FALSE;
    server_key = EVP_EC_gen("P-256");
    if (server_key == NULL)
        return openssl_failed(error, "no P-256 key");
    server = make_certificate(server_key, g_get_host_name(), ca, ca_key, FALSE, alt_names,
                              "serverAuth", VALID_DAYS);
    if (server == NULL)
        return openssl_failed(error, "the server certificate");
    ca_pem = pem_of(write_certificate, ca);
    server_pem = pem_of(write_certificate, server);
    key_pem = pem_of(write_key, server_key);
    if (ca_pem == NULL || server_pem == NULL || key_pem == NULL)
        return openssl_failed(error, "PEM");
    chain = g_strconcat(server_pem, ca_pem, NULL);
    /* The key first, the certificate last: the certificate's being
     * there says the identity is whole. */
    return write_private(dir, EINSORA_TLS_KEY_FILE, key_pem, 0600, error) &&
           write_private(dir, EINSORA_TLS_CERT_FILE, chain, 0644, error);
}

gboolean
einsora_tls_agent_request_new(gchar **key_pem, gchar **csr_pem, GError **error)
{
    g_autoptr(EVP_PKEY) key = NULL;
    g_autoptr(X509_REQ) request = X509_REQ_new();
    g_autofree gchar *key_text = NULL;
    g_autofree gchar *request_text = NULL;

    g_return_val_if_fail(key_pem != NULL && csr_pem != NULL, FALSE);

    key = EVP_EC_gen("P-256");
    if (key == NULL || request == NULL)
        return openssl_failed(error, "no P-256 key");
    if (X509_REQ_set_version(request, 0) != 1 ||
        X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(request), "O", MBSTRING_UTF8,
                                   (const guchar *)"Einsora", -1, -1, 0) != 1 ||
        X509_REQ_set_pubkey(request, key) != 1 || X509_REQ_sign(request, key, EVP_sha256()) <= 0)
        return openssl_failed(error, "the certificate request");
    key_text = pem_of(write_key, key);
    request_text = pem_of(write_request, request);
    if (key_text == NULL || request_text == NULL)
        return openssl_failed(error, "PEM");
    *key_pem = g_steal_pointer(&key_text);
    *csr_pem = g_steal_pointer(&request_text);
    return TRUE;
}

/* The kinds of key TLS clients commonly hold, at strengths that hold up. */
static gboolean
key_is_acceptable(EVP_PKEY *key)
{
    char group[80];
    int nid;

    if (EVP_PKEY_is_a(key, "RSA"))
        return EVP_PKEY_get_bits(key) >= 2048;
    if (!EVP_PKEY_is_a(key, "EC") || EVP_PKEY_get_group_name(key, group, sizeof group, NULL) != 1)
        return FALSE;
    nid = OBJ_txt2nid(group);
    return nid == NID_X9_62_prime256v1 || nid == NID_secp384r1;
}

/* @pem's request, if its key is one we sign and its signature shows
 * that the sender holds that key. */
static X509_REQ *
request_parse(const char *pem, GError **error)
{
    gsize length = strnlen(pem, REQUEST_MAX_BYTES + 1);
    g_autoptr(BIO) bio = NULL;
    g_autoptr(X509_REQ) request = NULL;
    EVP_PKEY *key;

    if (length > REQUEST_MAX_BYTES) {
        request_refused(error, "the certificate request is over 16 KiB");
        return NULL;
    }
    bio = BIO_new_mem_buf(pem, (int)length);
    if (bio != NULL)
        request = PEM_read_bio_X509_REQ(bio, NULL, no_passphrase, NULL);
    if (request == NULL) {
        request_refused(error, "not a PEM certificate request");
        return NULL;
    }
    /* The key's kind first: nothing of an unknown algorithm runs. */
    key = X509_REQ_get0_pubkey(request);
    if (key == NULL || !key_is_acceptable(key)) {
        request_refused(error, "the certificate request is refused: its key is not ECDSA "
                               "P-256/P-384 or RSA of at least 2048 bits");
        return NULL;
    }
    if (X509_REQ_verify(request, key) != 1) {
        request_refused(error, "the certificate request is refused: its signature doesn't verify");
        return NULL;
    }
    return g_steal_pointer(&request);
}

static gchar *
fingerprint_of_der(const guint8 *der, gsize length)
{
    g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);

    g_checksum_update(checksum, der, length);
    return g_strconcat("SHA256:", g_checksum_get_string(checksum), NULL);
}

static gchar *
fingerprint_of(X509 *certificate)
{
    guint8 *der = NULL;
    int length = i2d_X509(certificate, &der);
    gchar *fingerprint;

    if (length <= 0)
        return NULL;
    fingerprint = fingerprint_of_der(der, (gsize)length);
    OPENSSL_free(der);
    return fingerprint;
}

static gboolean
unix_time_of(const ASN1_TIME *time, gint64 *unix_time)
{
    struct tm tm;
    g_autoptr(GDateTime) when = NULL;

    if (ASN1_TIME_to_tm(time, &tm) != 1)
        return FALSE;
    when = g_date_time_new_utc(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                               tm.tm_sec);
    if (when == NULL)
        return FALSE;
    *unix_time = g_date_time_to_unix(when);
    return TRUE;
}

gchar *
einsora_tls_agent_certificate_sign(const char *dir, const char *csr_pem, const char *machine_id,
                                   gint64 valid_days, gchar **fingerprint, gint64 *not_after_unix,
                                   GError **error)
{
    g_autoptr(X509_REQ) request = NULL;
    g_autoptr(X509) ca = NULL;
    g_autoptr(EVP_PKEY) ca_key = NULL;
    g_autoptr(X509) certificate = NULL;
    g_autofree gchar *pem = NULL;
    g_autofree gchar *digest = NULL;
    gint64 not_after = 0;

    g_return_val_if_fail(dir != NULL && csr_pem != NULL && machine_id != NULL, NULL);
    g_return_val_if_fail(valid_days > 0 && valid_days <= EINSORA_TLS_AGENT_MAX_VALID_DAYS, NULL);

    if (*machine_id == '\0' || !g_utf8_validate(machine_id, -1, NULL) ||
        g_utf8_strlen(machine_id, -1) > COMMON_NAME_MAX_CHARS) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "the machine ID must be 1 to %d characters of UTF-8 to name a certificate",
                    COMMON_NAME_MAX_CHARS);
        return NULL;
    }
    /* Checked before the CA is made: garbage makes nothing on disk. */
    request = request_parse(csr_pem, error);
    if (request == NULL)
        return NULL;
    if (!ca_ensure(dir, &ca, &ca_key, error))
        return NULL;
    /* Only the request's key is taken: its subject and extensions are
     * the sender's word, and the certificate says what the server knows. */
    certificate = make_certificate(X509_REQ_get0_pubkey(request), machine_id, ca, ca_key, FALSE,
                                   NULL, "clientAuth", valid_days);
    if (certificate == NULL) {
        openssl_failed(error, "the agent's certificate");
        return NULL;
    }
    pem = pem_of(write_certificate, certificate);
    digest = fingerprint_of(certificate);
    if (pem == NULL || digest == NULL ||
        !unix_time_of(X509_get0_notAfter(certificate), &not_after)) {
        openssl_failed(error, "PEM");
        return NULL;
    }
    if (fingerprint != NULL)
        *fingerprint = g_steal_pointer(&digest);
    if (not_after_unix != NULL)
        *not_after_unix = not_after;
    return g_steal_pointer(&pem);
}

GTlsDatabase *
einsora_tls_identity_agent_authority(const char *dir, GError **error)
{
    g_autoptr(EVP_PKEY) ca_key = NULL;
    g_autoptr(X509) ca = NULL;
    g_autofree gchar *ca_path = g_build_filename(dir, EINSORA_TLS_CA_FILE, NULL);

    g_return_val_if_fail(dir != NULL, NULL);

    if (!ca_ensure(dir, &ca, &ca_key, error))
        return NULL;
    return g_tls_file_database_new(ca_path, error);
}

gchar *
einsora_tls_identity_read_ca(const char *dir, GError **error)
{
    g_return_val_if_fail(dir != NULL, NULL);

    return read_text(dir, EINSORA_TLS_CA_FILE, error);
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

    g_return_val_if_fail(G_IS_TLS_CERTIFICATE(certificate), NULL);
    g_object_get(certificate, "certificate", &der, NULL);
    return fingerprint_of_der(der->data, der->len);
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
