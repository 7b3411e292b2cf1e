/* einsora-app: the desktop app. */
#include <glib/gi18n.h>
#include <locale.h>

#include "einsora-application.h"

int
main(int argc, char **argv)
{
    g_autoptr(EinsoraApplication) app = NULL;

    setlocale(LC_ALL, "");
    bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
    bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
    textdomain(GETTEXT_PACKAGE);
    g_set_application_name(_("Einsora"));
    app = einsora_application_new();
    return g_application_run(G_APPLICATION(app), argc, argv);
}
