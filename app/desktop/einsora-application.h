/* The Einsora app: one instance per user session (D-Bus activatable),
 * owning the connection to the daemon, the workload list every window
 * shows, and the settings. Quitting it leaves the daemon and its
 * workloads running. */
#pragma once

#include <adwaita.h>

#include "einsora-client.h"
#include "einsora-connection.h"
#include "einsora-workload-list.h"

G_BEGIN_DECLS

#define EINSORA_APPLICATION_ID "dev.einsora.Einsora"

#define EINSORA_TYPE_APPLICATION (einsora_application_get_type())
G_DECLARE_FINAL_TYPE(EinsoraApplication, einsora_application, EINSORA, APPLICATION, AdwApplication)

EinsoraApplication *einsora_application_new(void);
/* (nullable) Until connected. */
EinsoraClient *einsora_application_get_client(EinsoraApplication *self);
EinsoraWorkloadList *einsora_application_get_workloads(EinsoraApplication *self);
/* (nullable) How it reaches the daemon, once it tried. */
EinsoraConnection *einsora_application_get_connection(EinsoraApplication *self);
/* TRUE once the daemon answered and the first list is in. */
gboolean einsora_application_is_ready(EinsoraApplication *self);

G_END_DECLS
