/* Aligned columns for the CLI's tables. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-table.h"

struct _EinsoraTable {
    guint columns;
    gboolean has_headers;
    GPtrArray *cells; /* row after row, @columns each, cleaned */
};

gchar *
einsora_table_clean(const char *text)
{
    g_autofree gchar *valid = g_utf8_make_valid(text, -1);
    GString *clean = g_string_sized_new(strlen(valid));

    for (const char *p = valid; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);

        /* Tabs, newlines and escape sequences would break the columns or
         * drive the terminal. */
        if (g_unichar_iscntrl(c) || c == 0x2028 || c == 0x2029)
            g_string_append_c(clean, '?');
        else
            g_string_append_unichar(clean, c);
    }
    return g_string_free(clean, FALSE);
}

static guint
display_width(const char *text)
{
    guint width = 0;

    for (const char *p = text; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);

        if (g_unichar_iszerowidth(c))
            continue;
        width += g_unichar_iswide(c) ? 2 : 1;
    }
    return width;
}

EinsoraTable *
einsora_table_new(guint columns, const char *const *headers)
{
    EinsoraTable *self = g_new0(EinsoraTable, 1);

    g_return_val_if_fail(columns > 0, NULL);
    self->columns = columns;
    self->cells = g_ptr_array_new_with_free_func(g_free);
    if (headers != NULL) {
        self->has_headers = TRUE;
        einsora_table_append_row(self, headers);
    }
    return self;
}

void
einsora_table_append_row(EinsoraTable *self, const char *const *cells)
{
    for (guint i = 0; i < self->columns; i++)
        g_ptr_array_add(self->cells, einsora_table_clean(cells[i] != NULL ? cells[i] : "-"));
}

guint
einsora_table_get_rows(EinsoraTable *self)
{
    return self->cells->len / self->columns - (self->has_headers ? 1 : 0);
}

gchar *
einsora_table_render(EinsoraTable *self)
{
    g_autofree guint *widths = g_new0(guint, self->columns);
    GString *out = g_string_new(NULL);

    for (guint i = 0; i < self->cells->len; i++) {
        guint width = display_width(g_ptr_array_index(self->cells, i));
        widths[i % self->columns] = MAX(widths[i % self->columns], width);
    }
    for (guint i = 0; i < self->cells->len; i++) {
        const char *cell = g_ptr_array_index(self->cells, i);
        guint column = i % self->columns;

        g_string_append(out, cell);
        if (column + 1 < self->columns) {
            for (guint pad = display_width(cell); pad < widths[column] + 2; pad++)
                g_string_append_c(out, ' ');
            continue;
        }
        /* A last column that is empty leaves no trailing spaces. */
        while (out->len > 0 && out->str[out->len - 1] == ' ')
            g_string_truncate(out, out->len - 1);
        g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}

void
einsora_table_free(EinsoraTable *self)
{
    if (self == NULL)
        return;
    g_ptr_array_unref(self->cells);
    g_free(self);
}
