/* The access proxy's reading of what a browser sends: the Host header,
 * the opening link's ticket, the Cookie header (taking the proxy's own
 * cookie out) and the workload's Set-Cookie values. */
#include <stdio.h>
#include <string.h>

#include "einsora-access-host.h"
#include "einsora-fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);
    g_autofree gchar *id = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *rest = NULL;
    g_autofree gchar *ticket = NULL;
    guint port = 0;

    id = einsora_access_host_parse(text, &port);
    if (id != NULL) {
        /* A workload ID: a UUID, in lower case. */
        EINSORA_FUZZ_CHECK(strlen(id) == 36);
        for (const char *p = id; *p != '\0'; p++)
            EINSORA_FUZZ_CHECK(!g_ascii_isupper(*p));
    }
    ticket = einsora_access_ticket_parse(text);
    if (ticket != NULL) {
        /* Only the shape the API makes: "tkt_" and 43 base64url characters,
         * so nothing else is hashed or looked up. */
        EINSORA_FUZZ_CHECK(strlen(ticket) == 4 + 43);
        EINSORA_FUZZ_CHECK(g_str_has_prefix(ticket, "tkt_"));
        for (const char *p = ticket + 4; *p != '\0'; p++)
            EINSORA_FUZZ_CHECK(g_ascii_isalnum(*p) || *p == '-' || *p == '_');
    }
    cookie = einsora_access_cookie_take(text, &rest);
    if (rest != NULL) {
        /* The workload never sees the proxy's cookie: no pair left in
         * what it is sent is named that, spaces around the name aside. */
        g_auto(GStrv) pairs = g_strsplit(rest, ";", -1);
        for (guint i = 0; pairs[i] != NULL; i++) {
            g_autofree gchar *name = g_strdup(pairs[i]);
            gchar *equals = strchr(name, '=');
            if (equals == NULL)
                continue;
            *equals = '\0';
            g_strstrip(name);
            EINSORA_FUZZ_CHECK(strcmp(name, EINSORA_ACCESS_COOKIE) != 0);
        }
    }
    einsora_access_cookie_is_ours(text);
    return 0;
}
