/* Text in aligned columns for the CLI's human output: two spaces between
 * columns, widths measured in terminal cells (wide characters count two),
 * no padding after the last column. Cells are cleaned: control characters
 * from the server never reach the terminal. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EinsoraTable EinsoraTable;

/* @headers: (nullable): @columns headings, or NULL for a table without a
 * heading row. */
EinsoraTable *einsora_table_new(guint columns, const char *const *headers);
/* @cells: @columns values; a NULL cell shows as "-". */
void einsora_table_append_row(EinsoraTable *self, const char *const *cells);
guint einsora_table_get_rows(EinsoraTable *self);
gchar *einsora_table_render(EinsoraTable *self);
void einsora_table_free(EinsoraTable *self);

/* @text with control characters replaced and invalid UTF-8 made valid. */
gchar *einsora_table_clean(const char *text);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraTable, einsora_table_free)

G_END_DECLS
