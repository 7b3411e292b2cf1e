/* One line of the workload list: name and kind, a state badge, class,
 * machine, driver and age. Follows its item as it changes. */
#pragma once

#include <gtk/gtk.h>

#include "einsora-workload-item.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_WORKLOAD_ROW (einsora_workload_row_get_type())
G_DECLARE_FINAL_TYPE(EinsoraWorkloadRow, einsora_workload_row, EINSORA, WORKLOAD_ROW, GtkWidget)

GtkWidget *einsora_workload_row_new(void);
/* @item: (nullable): what the row shows from now on. */
void einsora_workload_row_set_item(EinsoraWorkloadRow *self, EinsoraWorkloadItem *item);
EinsoraWorkloadItem *einsora_workload_row_get_item(EinsoraWorkloadRow *self);
/* Re-reads the age ("5 min") against the clock. */
void einsora_workload_row_refresh_age(EinsoraWorkloadRow *self);

G_END_DECLS
