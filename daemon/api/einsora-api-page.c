#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-page.h"

#include "einsora-error.h"
#include "einsora-json-writer.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

#define CURSOR_VERSION "c1"
/* A real cursor is about 110 characters; anything much longer is not one. */
#define MAX_CURSOR_LENGTH 256
/* Hex digits of the scope's SHA-256 a cursor carries: enough that one
 * tenant's cursor is not mistaken for another's. */
#define SCOPE_DIGEST_LENGTH 16
/* A little over what one workload's JSON takes (about 560 bytes), so
 * that a page's buffer is allocated once. */
#define ROW_BYTES_GUESS 640

void
einsora_api_page_free(EinsoraApiPage *page)
{
    if (page == NULL)
        return;
    g_free(page->after_key);
    g_free(page->after_id);
    g_free(page);
}

static gchar *
scope_digest(const char *list, const char *scope)
{
    g_autofree gchar *text = g_strdup_printf("einsora-cursor\n%s\n%s", list, scope);
    g_autofree gchar *sha256 = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);

    return g_strndup(sha256, SCOPE_DIGEST_LENGTH);
}

/* base64url without padding: nothing in it needs escaping in a URL. */
static gchar *
base64url_encode(const char *text)
{
    g_autofree gchar *plain = g_base64_encode((const guchar *)text, strlen(text));
    GString *out = g_string_sized_new(strlen(plain));

    for (const char *p = plain; *p != '\0' && *p != '='; p++)
        g_string_append_c(out, *p == '+' ? '-' : (*p == '/' ? '_' : *p));
    return g_string_free(out, FALSE);
}

/* NULL unless @text is base64url of UTF-8 text without a NUL.
 * g_base64_decode skips what isn't base64, so the alphabet is checked
 * first. */
static gchar *
base64url_decode(const char *text)
{
    gsize length = strlen(text);
    g_autoptr(GString) plain = g_string_sized_new(length + 4);
    g_autofree guchar *decoded = NULL;
    gsize decoded_length = 0;

    if (length == 0 || length > MAX_CURSOR_LENGTH || length % 4 == 1)
        return NULL;
    for (const char *p = text; *p != '\0'; p++) {
        if (g_ascii_isalnum(*p))
            g_string_append_c(plain, *p);
        else if (*p == '-')
            g_string_append_c(plain, '+');
        else if (*p == '_')
            g_string_append_c(plain, '/');
        else
            return NULL;
    }
    while (plain->len % 4 != 0)
        g_string_append_c(plain, '=');
    decoded = g_base64_decode(plain->str, &decoded_length);
    if (decoded == NULL || memchr(decoded, '\0', decoded_length) != NULL ||
        !g_utf8_validate((const char *)decoded, (gssize)decoded_length, NULL))
        return NULL;
    return g_strndup((const char *)decoded, decoded_length);
}

gchar *
einsora_api_page_cursor(const char *list, const char *scope, const char *key, const char *id,
                        gint64 seq)
{
    g_autofree gchar *digest = scope_digest(list, scope);
    g_autofree gchar *seq_text = NULL;
    g_autofree gchar *text = NULL;

    if (key == NULL)
        seq_text = g_strdup_printf("%" G_GINT64_FORMAT, seq);
    text = g_strjoin("\n", CURSOR_VERSION, list, digest, key != NULL ? key : seq_text,
                     id != NULL ? id : "", NULL);
    return base64url_encode(text);
}

static gboolean
read_limit(const char *text, guint default_limit, guint *limit, GError **error)
{
    guint64 value = 0;

    if (text == NULL) {
        *limit = default_limit;
        return TRUE;
    }
    /* Digits only: no sign, no space, no 0x. */
    if (*text == '\0' || strspn(text, "0123456789") != strlen(text) ||
        !g_ascii_string_to_unsigned(text, 10, 1, EINSORA_API_PAGE_MAX_LIMIT, &value, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "query parameter \"limit\" must be an integer from 1 to %u",
                    EINSORA_API_PAGE_MAX_LIMIT);
        return FALSE;
    }
    *limit = (guint)value;
    return TRUE;
}

static gboolean
refuse_cursor(GError **error)
{
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "query parameter \"cursor\" is not a cursor this list gave; "
                        "start again without it");
    return FALSE;
}

static gboolean
read_cursor(const char *text, const char *list, EinsoraApiPageOrder order, const char *scope,
            EinsoraApiPage *page, GError **error)
{
    g_autofree gchar *decoded = base64url_decode(text);
    g_auto(GStrv) parts = NULL;
    g_autofree gchar *digest = scope_digest(list, scope);
    guint64 seq = 0;

    if (decoded == NULL)
        return refuse_cursor(error);
    parts = g_strsplit(decoded, "\n", -1);
    if (g_strv_length(parts) != 5 || g_strcmp0(parts[0], CURSOR_VERSION) != 0 ||
        g_strcmp0(parts[1], list) != 0 || g_strcmp0(parts[2], digest) != 0)
        return refuse_cursor(error);
    if (order == EINSORA_API_PAGE_BY_SEQ) {
        if (*parts[3] == '\0' || strspn(parts[3], "0123456789") != strlen(parts[3]) ||
            !g_ascii_string_to_unsigned(parts[3], 10, 0, G_MAXINT64, &seq, NULL) ||
            *parts[4] != '\0')
            return refuse_cursor(error);
        page->after_seq = (gint64)seq;
        return TRUE;
    }
    {
        gint64 unix_us = 0;
        if (!einsora_timestamp_parse(parts[3], &unix_us, NULL) || !einsora_uuid_is_valid(parts[4]))
            return refuse_cursor(error);
    }
    page->after_key = g_strdup(parts[3]);
    page->after_id = g_strdup(parts[4]);
    return TRUE;
}

EinsoraApiPage *
einsora_api_page_read(const char *query, const char *list, EinsoraApiPageOrder order,
                      const char *scope, guint default_limit, GError **error)
{
    g_autoptr(EinsoraApiPage) page = g_new0(EinsoraApiPage, 1);
    g_autoptr(GHashTable) params = NULL;
    const char *cursor = NULL;

    if (query != NULL)
        params = g_uri_parse_params(query, -1, "&", G_URI_PARAMS_NONE, NULL);
    if (!read_limit(params != NULL ? g_hash_table_lookup(params, "limit") : NULL, default_limit,
                    &page->limit, error))
        return NULL;
    cursor = params != NULL ? g_hash_table_lookup(params, "cursor") : NULL;
    if (cursor != NULL && !read_cursor(cursor, list, order, scope, page, error))
        return NULL;
    return g_steal_pointer(&page);
}

/* A page being read and written, slice by slice. */
typedef struct {
    EinsoraApiRequest *request;
    EinsoraApiPageSource source; /* its strings are the copies below */
    gchar *member;
    gchar *list;
    gchar *scope;
    EinsoraApiPage *page;
    gpointer data;
    GDestroyNotify data_free;
    guint remaining;
    guint written;
    GString *body;
    gchar *next_cursor;
    gulong disconnected_id;
    gboolean paused;
    gboolean gone;
} PageWrite;

static void
page_write_free(PageWrite *write)
{
    g_clear_signal_handler(&write->disconnected_id,
                           einsora_api_request_get_message(write->request));
    if (write->body != NULL)
        g_string_free(write->body, TRUE);
    if (write->data_free != NULL)
        write->data_free(write->data);
    einsora_api_page_free(write->page);
    g_free(write->next_cursor);
    g_free(write->member);
    g_free(write->list);
    g_free(write->scope);
    g_object_unref(write->request);
    g_free(write);
}

static void
on_page_disconnected(SoupServerMessage *message, gpointer user_data)
{
    PageWrite *write = user_data;

    write->gone = TRUE;
}

/* One slice; TRUE while the page needs more. One row more than the slice
 * says whether the list goes on past it. */
static gboolean
page_write_slice(PageWrite *write, GError **error)
{
    guint want = MIN(EINSORA_API_PAGE_SLICE, write->remaining);
    g_autoptr(GPtrArray) rows = write->source.read(write->data, write->page, want + 1, error);
    guint count;

    if (rows == NULL)
        return FALSE;
    count = MIN(rows->len, want);
    for (guint i = 0; i < count; i++) {
        if (write->written++ > 0)
            g_string_append_c(write->body, ',');
        write->source.append(write->body, g_ptr_array_index(rows, i));
    }
    if (count > 0)
        write->source.advance(write->page, g_ptr_array_index(rows, count - 1));
    write->remaining -= count;
    if (rows->len <= want)
        return FALSE; /* the end of the list */
    if (write->remaining > 0)
        return TRUE;
    /* The page is full and the list goes on. */
    write->next_cursor = einsora_api_page_cursor(write->list, write->scope, write->page->after_key,
                                                 write->page->after_id, write->page->after_seq);
    return FALSE;
}

/* Answers, once, and lets the message go on; frees @write. */
static void
page_write_finish(PageWrite *write, const GError *error)
{
    SoupServerMessage *message = einsora_api_request_get_message(write->request);

    if (write->gone) {
        /* libsoup has dropped the connection: nothing to resume. */
        einsora_api_request_log(write->request, G_LOG_LEVEL_MESSAGE,
                                "the client went away while its page was read");
    } else if (error != NULL) {
        einsora_api_request_respond_error(write->request, error);
    } else {
        g_string_append_c(write->body, ']');
        einsora_json_append_member_string(write->body, "next_cursor", write->next_cursor, FALSE);
        g_string_append_c(write->body, '}');
        einsora_api_request_respond_text(write->request, SOUP_STATUS_OK,
                                         g_steal_pointer(&write->body));
    }
    if (write->paused && !write->gone)
        soup_server_message_unpause(message);
    page_write_free(write);
}

static gboolean
page_write_step(gpointer user_data)
{
    PageWrite *write = user_data;
    g_autoptr(GError) error = NULL;

    if (!write->gone && page_write_slice(write, &error))
        return G_SOURCE_CONTINUE;
    page_write_finish(write, error);
    return G_SOURCE_REMOVE;
}

void
einsora_api_page_respond(EinsoraApiRequest *request, const EinsoraApiPageSource *source,
                         EinsoraApiPage *page, gpointer data, GDestroyNotify data_free)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    PageWrite *write = g_new0(PageWrite, 1);
    g_autoptr(GError) error = NULL;

    write->request = g_object_ref(request);
    write->member = g_strdup(source->member);
    write->list = g_strdup(source->list);
    write->scope = g_strdup(source->scope);
    write->source = *source;
    write->source.member = write->member;
    write->source.list = write->list;
    write->source.scope = write->scope;
    write->page = page;
    write->data = data;
    write->data_free = data_free;
    write->remaining = page->limit;
    write->body = g_string_sized_new(64 + (gsize)page->limit * ROW_BYTES_GUESS);
    g_string_append_c(write->body, '{');
    einsora_json_append_member(write->body, write->member, TRUE);
    g_string_append_c(write->body, '[');

    /* The first slice now: a page of up to one slice (the default) is
     * answered in this turn, unpaused. */
    if (!page_write_slice(write, &error)) {
        page_write_finish(write, error);
        return;
    }
    write->disconnected_id =
        g_signal_connect(message, "disconnected", G_CALLBACK(on_page_disconnected), write);
    write->paused = TRUE;
    soup_server_message_pause(message);
    /* At the loop's own priority: each turn, every list in progress
     * writes one slice and every other ready request is seen. */
    g_idle_add_full(G_PRIORITY_DEFAULT, page_write_step, write, NULL);
}
