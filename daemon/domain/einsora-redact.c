#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-redact.h"

typedef struct {
    const char *pattern;
    const char *replacement;
} EinsoraRedactRule;

/* Order matters: whole private keys first, then the narrower forms. */
static const EinsoraRedactRule rules[] = {
    {"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", EINSORA_REDACTED},
    /* scheme://user:password@host keeps the scheme and host. */
    {"([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\\s@]*@", "\\1" EINSORA_REDACTED "@"},
    /* Einsora API tokens: keep "tsk_" and four characters, as shown to users. */
    {"\\b(tsk_[A-Za-z0-9_-]{4})[A-Za-z0-9_-]+", "\\1…"},
    {"\\b(Bearer|Basic|token)(\\s+)[A-Za-z0-9._~+/=-]{6,}", "\\1\\2" EINSORA_REDACTED},
    /* --password VALUE and --token=VALUE on a command line. */
    {"(?i)(--?[a-z0-9_-]*(?:password|passwd|secret|token)[a-z0-9_-]*)(\\s+|=)(?!-)([^\\s\"']+)",
     "\\1\\2" EINSORA_REDACTED},
    /* key=value, key: value and "key": "value" where the key names a
     * secret; sig and auth only as whole words. */
    {"(?i)([\"']?)\\b([a-z0-9_.-]*(?:password|passwd|secret|token|ticket|cookie|session|"
     "api[_-]?key|access[_-]?key|private[_-]?key|credential)[a-z0-9_.-]*|sig|signature|auth)\\1"
     "(\\s*[=:]\\s*)(?!(?:Bearer|Basic|token)\\s)(\"[^\"]*\"|'[^']*'|[^\\s&;,\"'}]+)",
     "\\1\\2\\1\\3" EINSORA_REDACTED},
};

static GPtrArray *
compiled_rules(void)
{
    static gsize once = 0;
    static GPtrArray *regexes = NULL;

    if (g_once_init_enter(&once)) {
        GPtrArray *all = g_ptr_array_new();
        for (guint i = 0; i < G_N_ELEMENTS(rules); i++) {
            g_autoptr(GError) error = NULL;
            GRegex *re =
                g_regex_new(rules[i].pattern, G_REGEX_OPTIMIZE | G_REGEX_DOTALL, 0, &error);
            /* The patterns are constants: a failure is a programming error. */
            g_assert_no_error(error);
            g_ptr_array_add(all, re);
        }
        regexes = all;
        g_once_init_leave(&once, 1);
    }
    return regexes;
}

/* A copy of @text with every credential the rules know replaced. */
gchar *
einsora_redact_secrets(const char *text)
{
    GPtrArray *regexes = compiled_rules();
    g_autofree gchar *out = g_utf8_make_valid(text != NULL ? text : "", -1);

    for (guint i = 0; i < regexes->len; i++) {
        g_autoptr(GError) error = NULL;
        gchar *next = g_regex_replace(g_ptr_array_index(regexes, i), out, -1, 0,
                                      rules[i].replacement, 0, &error);
        if (next == NULL) {
            /* Fail closed: text we could not scan is not shown. */
            return g_strdup(EINSORA_REDACTED);
        }
        g_free(out);
        out = next;
    }
    return g_steal_pointer(&out);
}
