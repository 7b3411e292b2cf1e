/* Paged lists (docs/adr/0027): where a page starts and how long it is,
 * read from ?limit= and ?cursor=, and the cursor that goes on from it.
 *
 * A cursor is opaque to clients but holds nothing they weren't shown: the
 * sort key of the page's last row (its created_at and ID, or its seq),
 * the list it belongs to and a digest of its scope (tenant, and user or
 * workload). A cursor from another list or scope is refused rather than
 * read as a position; the query is tenant-scoped whatever it says, so a
 * forged one only moves where a page of the caller's own rows starts. */
#pragma once

#include <glib.h>

#include "einsora-api-request.h"

G_BEGIN_DECLS

#define EINSORA_API_PAGE_DEFAULT_LIMIT 100
#define EINSORA_API_PAGE_MAX_LIMIT 1000
/* Rows read and written in one turn of the main loop: a longer page
 * takes several turns, so nothing else waits behind more than one slice
 * of it (docs/adr/0027). */
#define EINSORA_API_PAGE_SLICE 100

typedef enum {
    EINSORA_API_PAGE_BY_CREATED, /* (created_at, id) */
    EINSORA_API_PAGE_BY_SEQ,     /* seq */
} EinsoraApiPageOrder;

typedef struct {
    guint limit;
    /* After what: both NULL on the first page. By seq: after_key is NULL
     * and after_seq is 0 on the first page. */
    gchar *after_key;
    gchar *after_id;
    gint64 after_seq;
} EinsoraApiPage;

void einsora_api_page_free(EinsoraApiPage *page);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraApiPage, einsora_api_page_free)

/* Reads limit (1 to EINSORA_API_PAGE_MAX_LIMIT; absent: @default_limit)
 * and cursor from @query, for @list ("workloads") whose rows are those of
 * @scope. Anything out of range, malformed or foreign is
 * EINSORA_ERROR_INVALID_REQUEST. */
EinsoraApiPage *einsora_api_page_read(const char *query, const char *list,
                                      EinsoraApiPageOrder order, const char *scope,
                                      guint default_limit, GError **error);

/* The cursor after a row whose sort key is @key and @id (by created_at),
 * or whose seq is @seq (by seq: @key and @id are NULL). */
gchar *einsora_api_page_cursor(const char *list, const char *scope, const char *key, const char *id,
                               gint64 seq);

typedef void (*EinsoraApiAppendJson)(GString *out, gconstpointer item);
/* The rows after @page's position, at most @limit, from @data. */
typedef GPtrArray *(*EinsoraApiPageRead)(gpointer data, const EinsoraApiPage *page, guint limit,
                                         GError **error);
/* Moves @page's position past @item. */
typedef void (*EinsoraApiPageAdvance)(EinsoraApiPage *page, gconstpointer item);

typedef struct {
    const char *member; /* "workloads" */
    const char *list;   /* the cursor's list name */
    const char *scope;  /* the cursor's scope */
    EinsoraApiPageRead read;
    EinsoraApiPageAdvance advance;
    EinsoraApiAppendJson append;
} EinsoraApiPageSource;

/* Answers @request with the page @page asks for (taken),
 * {"<member>":[item,...],"next_cursor":<a cursor, or null>}: read and written
 * EINSORA_API_PAGE_SLICE rows a turn, the message paused in between, and
 * answered once whole (an error on any slice is the answer instead).
 * @data (freed with @data_free) is what @source's functions read from. */
void einsora_api_page_respond(EinsoraApiRequest *request, const EinsoraApiPageSource *source,
                              EinsoraApiPage *page, gpointer data, GDestroyNotify data_free);

/* {"<member>":[item,...],"next_cursor":<@next_cursor or null>}, the first
 * @count of @items, written row by row. */
GString *einsora_api_page_write(const char *member, GPtrArray *items, guint count,
                                EinsoraApiAppendJson append, const char *next_cursor);

G_END_DECLS
