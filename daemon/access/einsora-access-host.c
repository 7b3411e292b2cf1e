#define G_LOG_DOMAIN "einsora-access"

#include "einsora-access-host.h"

#include <string.h>

#include "einsora-credential.h"
#include "einsora-uuid.h"

#define HOST_PREFIX "w-"
#define HOST_SUFFIX ".localhost"
#define UUID_LENGTH 36
/* 32 random bytes in base64url without padding (einsora-credential.c). */
#define TICKET_SECRET_LENGTH 43

gchar *
einsora_access_host_parse(const char *host, guint *port)
{
    g_autofree gchar *lower = NULL;
    const char *colon;
    gsize name_length;
    g_autofree gchar *id = NULL;

    *port = 0;
    if (host == NULL || strlen(host) > 80)
        return NULL;
    lower = g_ascii_strdown(host, -1);
    colon = strchr(lower, ':');
    name_length = colon != NULL ? (gsize)(colon - lower) : strlen(lower);
    if (name_length != strlen(HOST_PREFIX) + UUID_LENGTH + strlen(HOST_SUFFIX) ||
        !g_str_has_prefix(lower, HOST_PREFIX) ||
        strncmp(lower + strlen(HOST_PREFIX) + UUID_LENGTH, HOST_SUFFIX, strlen(HOST_SUFFIX)) != 0)
        return NULL;
    if (colon != NULL) {
        guint64 number = 0;
        if (!g_ascii_string_to_unsigned(colon + 1, 10, 1, 65535, &number, NULL))
            return NULL;
        *port = (guint)number;
    }
    id = g_strndup(lower + strlen(HOST_PREFIX), UUID_LENGTH);
    if (!einsora_uuid_is_valid(id))
        return NULL;
    return g_steal_pointer(&id);
}

gchar *
einsora_access_cookie_take(const char *header, gchar **rest)
{
    g_auto(GStrv) pairs = NULL;
    g_autoptr(GString) others = g_string_new(NULL);
    g_autofree gchar *value = NULL;
    gboolean twice = FALSE;

    *rest = NULL;
    if (header == NULL)
        return NULL;
    pairs = g_strsplit(header, ";", -1);
    for (guint i = 0; pairs[i] != NULL; i++) {
        const char *pair = pairs[i];
        const char *equals;
        const char *name_end;

        /* " einsora_access =x" is the same cookie to the workload's own
         * parser (Python's trims any space around the name), so it is
         * taken too. */
        while (g_ascii_isspace(*pair))
            pair++;
        if (*pair == '\0')
            continue;
        equals = strchr(pair, '=');
        name_end = equals;
        while (name_end != NULL && name_end > pair && g_ascii_isspace(name_end[-1]))
            name_end--;
        if (equals != NULL && (gsize)(name_end - pair) == strlen(EINSORA_ACCESS_COOKIE) &&
            strncmp(pair, EINSORA_ACCESS_COOKIE, strlen(EINSORA_ACCESS_COOKIE)) == 0) {
            if (value != NULL)
                twice = TRUE;
            g_free(value);
            value = g_strdup(equals + 1);
            g_strstrip(value);
            continue;
        }
        if (others->len > 0)
            g_string_append(others, "; ");
        g_string_append(others, pair);
    }
    if (others->len > 0)
        *rest = g_string_free(g_steal_pointer(&others), FALSE);
    if (twice || (value != NULL && *value == '\0'))
        return NULL;
    return g_steal_pointer(&value);
}

gboolean
einsora_access_cookie_is_ours(const char *set_cookie)
{
    const char *name = set_cookie;
    const char *equals;

    if (set_cookie == NULL)
        return FALSE;
    while (*name == ' ' || *name == '\t')
        name++;
    equals = strchr(name, '=');
    if (equals == NULL)
        return FALSE;
    while (equals > name && (equals[-1] == ' ' || equals[-1] == '\t'))
        equals--;
    return (gsize)(equals - name) == strlen(EINSORA_ACCESS_COOKIE) &&
           g_ascii_strncasecmp(name, EINSORA_ACCESS_COOKIE, strlen(EINSORA_ACCESS_COOKIE)) == 0;
}

gchar *
einsora_access_ticket_parse(const char *query)
{
    GUriParamsIter iter;
    g_autofree gchar *ticket = NULL;
    gchar *name = NULL;
    gchar *value = NULL;
    g_autoptr(GError) error = NULL;
    const char *secret;

    if (query == NULL)
        return NULL;
    g_uri_params_iter_init(&iter, query, -1, "&", G_URI_PARAMS_WWW_FORM);
    while (g_uri_params_iter_next(&iter, &name, &value, &error)) {
        g_autofree gchar *owned_name = name;
        g_autofree gchar *owned_value = value;

        if (g_strcmp0(owned_name, "ticket") != 0)
            continue;
        /* Two tickets in one link: which one was meant is anyone's guess. */
        if (ticket != NULL)
            return NULL;
        ticket = g_steal_pointer(&owned_value);
    }
    /* A malformed escape anywhere: the link was not one of ours. */
    if (error != NULL)
        return NULL;
    if (ticket == NULL || !g_str_has_prefix(ticket, EINSORA_CREDENTIAL_ACCESS_TICKET_PREFIX))
        return NULL;
    secret = ticket + strlen(EINSORA_CREDENTIAL_ACCESS_TICKET_PREFIX);
    if (strlen(secret) != TICKET_SECRET_LENGTH)
        return NULL;
    for (const char *p = secret; *p != '\0'; p++) {
        if (!g_ascii_isalnum(*p) && *p != '-' && *p != '_')
            return NULL;
    }
    return g_steal_pointer(&ticket);
}
