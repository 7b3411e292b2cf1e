/* The /v1 query string readers: the check every route runs against its
 * list of parameters, boolean flags, and a list's limit and cursor. What
 * the check accepts names only listed parameters, each once; a flag reads
 * TRUE only from "true"; a page read has a limit in bounds and a whole
 * position, and the cursor of that position reads back as it. */
#include <stdio.h>
#include <string.h>

#include "einsora-api-page.h"
#include "einsora-api-request.h"
#include "einsora-fuzz.h"

static const char *const allowed[] = {"follow", "after", "include_deleted", NULL};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);
    g_autoptr(GError) error = NULL;
    gboolean accepted = einsora_api_query_check(text, allowed, &error);

    EINSORA_FUZZ_CHECK(accepted == (error == NULL));
    if (accepted && *text != '\0') {
        g_autoptr(GHashTable) params = g_uri_parse_params(text, -1, "&", G_URI_PARAMS_NONE, NULL);
        GHashTableIter iter;
        gpointer key;
        g_auto(GStrv) parts = g_strsplit(text, "&", -1);
        guint names = 0;

        EINSORA_FUZZ_CHECK(params != NULL);
        g_hash_table_iter_init(&iter, params);
        while (g_hash_table_iter_next(&iter, &key, NULL))
            EINSORA_FUZZ_CHECK(g_strv_contains(allowed, key));
        /* Each once: as many distinct names as parameters (GLib skips
         * empty ones, as between "&&"). */
        for (guint i = 0; parts[i] != NULL; i++)
            names += parts[i][0] != '\0';
        EINSORA_FUZZ_CHECK(g_hash_table_size(params) == names);
    }
    for (guint i = 0; allowed[i] != NULL; i++) {
        g_autoptr(GError) flag_error = NULL;
        gboolean value = FALSE;

        if (einsora_api_query_flag(text, allowed[i], &value, &flag_error)) {
            EINSORA_FUZZ_CHECK(flag_error == NULL);
            if (value) {
                g_autoptr(GHashTable) params =
                    g_uri_parse_params(text, -1, "&", G_URI_PARAMS_NONE, NULL);
                EINSORA_FUZZ_CHECK(params != NULL);
                EINSORA_FUZZ_CHECK(g_strcmp0(g_hash_table_lookup(params, allowed[i]), "true") == 0);
            }
        } else {
            EINSORA_FUZZ_CHECK(flag_error != NULL);
            EINSORA_FUZZ_CHECK(!value);
        }
    }
    for (guint order = EINSORA_API_PAGE_BY_CREATED; order <= EINSORA_API_PAGE_BY_SEQ; order++) {
        g_autoptr(GError) page_error = NULL;
        g_autoptr(EinsoraApiPage) page =
            einsora_api_page_read(text, "workloads", order, "tenant", 100, &page_error);

        EINSORA_FUZZ_CHECK((page == NULL) == (page_error != NULL));
        if (page == NULL)
            continue;
        EINSORA_FUZZ_CHECK(page->limit >= 1 && page->limit <= EINSORA_API_PAGE_MAX_LIMIT);
        EINSORA_FUZZ_CHECK((page->after_key == NULL) == (page->after_id == NULL));
        EINSORA_FUZZ_CHECK(order == EINSORA_API_PAGE_BY_CREATED || page->after_key == NULL);
        EINSORA_FUZZ_CHECK(page->after_seq >= 0);
        if (page->after_key != NULL || page->after_seq > 0) {
            g_autofree gchar *cursor = einsora_api_page_cursor(
                "workloads", "tenant", page->after_key, page->after_id, page->after_seq);
            g_autofree gchar *again_query = g_strconcat("cursor=", cursor, NULL);
            g_autoptr(EinsoraApiPage) again =
                einsora_api_page_read(again_query, "workloads", order, "tenant", 100, NULL);
            g_autoptr(EinsoraApiPage) foreign =
                einsora_api_page_read(again_query, "workloads", order, "other", 100, NULL);

            EINSORA_FUZZ_CHECK(again != NULL && foreign == NULL);
            EINSORA_FUZZ_CHECK(g_strcmp0(again->after_key, page->after_key) == 0);
            EINSORA_FUZZ_CHECK(g_strcmp0(again->after_id, page->after_id) == 0);
            EINSORA_FUZZ_CHECK(again->after_seq == page->after_seq);
        }
    }
    return 0;
}
