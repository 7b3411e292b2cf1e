#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-uuid.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "einsora-error.h"

/* rand_a holds a counter that is reseeded each millisecond, so IDs made in
 * the same millisecond by this process still sort in creation order
 * (RFC 9562, section 6.2, method 1). */
G_LOCK_DEFINE_STATIC(uuid_clock);
static gint64 last_ms = -1;
static guint16 counter;

/* IDs must be unguessable, so their random bits come only from the
 * kernel's generator, getrandom(2): never from GLib's g_random_*, which is
 * predictable, not even as a fallback.
 *
 * Without GRND_NONBLOCK, getrandom() waits only until the kernel's pool is
 * first seeded, early in boot, and never again; GRND_NONBLOCK would turn
 * that wait into a refusal at boot instead. EINTR is retried. What is left
 * is a property of the system, the same on every call (ENOSYS: a kernel
 * before 3.17, or a seccomp filter that hides the call; EPERM: a filter
 * that refuses it), or a bug (EFAULT, EINVAL). So einsora_uuid_check_random()
 * asks once, before the daemon does anything, and the daemon refuses to
 * start with that said; once it has answered, it always answers. */
static gboolean
fill_random(guint8 *buf, gsize len, GError **error)
{
    gsize done = 0;

    while (done < len) {
        gssize n = getrandom(buf + done, len - done, 0);
        if (n < 0) {
            int saved = errno;

            if (saved == EINTR)
                continue;
            g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                        "the system's random generator doesn't answer (getrandom: %s), so no "
                        "ID can be made that others can't guess",
                        g_strerror(saved));
            return FALSE;
        }
        done += (gsize)n;
    }
    return TRUE;
}

/* Whether IDs can be made here: call it once at start, before anything
 * needs one, and refuse to start when it says no. */
gboolean
einsora_uuid_check_random(GError **error)
{
    guint8 probe[16];

    return fill_random(probe, sizeof probe, error);
}

static gchar *
format_uuid(const guint8 b[16])
{
    return g_strdup_printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                           b[12], b[13], b[14], b[15]);
}

/* A new UUIDv7 for the time @unix_ms (milliseconds since the epoch). Time
 * is passed in so that logic stays on an injected clock. */
gchar *
einsora_uuid_v7_new(gint64 unix_ms)
{
    g_autoptr(GError) error = NULL;
    guint8 b[16];
    guint16 seq;

    if (!fill_random(b, sizeof b, &error)) {
        /* Not reached once einsora_uuid_check_random() has said yes: the
         * answer doesn't change within a process (see fill_random()). Only
         * a program that skipped the check (a test, a benchmark) on such a
         * system gets here. An ID others could guess is worse than
         * stopping, and every caller needs its ID now, so this is the one
         * failure that aborts, and it says why first. */
        g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "MESSAGE", "%s", error->message);
        abort();
    }
    if (unix_ms < 0)
        unix_ms = 0;
    unix_ms &= G_GINT64_CONSTANT(0xFFFFFFFFFFFF);

    G_LOCK(uuid_clock);
    if (unix_ms > last_ms) {
        last_ms = unix_ms;
        /* Start low in the 12-bit space so many IDs fit in one ms. */
        counter = (guint16)(((b[6] << 8) | b[7]) & 0x07FF);
    } else {
        /* Same or earlier ms (clock stepped back): keep order by counting
         * on from the last ID's time. */
        unix_ms = last_ms;
        counter++;
        if (counter > 0x0FFF) {
            last_ms++;
            unix_ms = last_ms;
            counter = 0;
        }
    }
    seq = counter;
    G_UNLOCK(uuid_clock);

    b[0] = (guint8)(unix_ms >> 40);
    b[1] = (guint8)(unix_ms >> 32);
    b[2] = (guint8)(unix_ms >> 24);
    b[3] = (guint8)(unix_ms >> 16);
    b[4] = (guint8)(unix_ms >> 8);
    b[5] = (guint8)unix_ms;
    b[6] = (guint8)(0x70 | ((seq >> 8) & 0x0F));
    b[7] = (guint8)(seq & 0xFF);
    b[8] = (guint8)(0x80 | (b[8] & 0x3F));
    return format_uuid(b);
}

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parses the canonical lowercase form of a UUIDv7. Anything else (other
 * versions, upper case, braces, missing dashes) is refused, so an ID has
 * exactly one spelling. */
gboolean
einsora_uuid_parse(const char *str, guint8 out[16], GError **error)
{
    guint8 b[16];
    guint n = 0;

    if (str == NULL || strlen(str) != EINSORA_UUID_STRING_LEN) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "not a valid ID: expected a UUID");
        return FALSE;
    }
    for (guint i = 0; i < EINSORA_UUID_STRING_LEN;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (str[i] != '-')
                break;
            i++;
            continue;
        }
        int hi = hex_value(str[i]);
        int lo = hex_value(str[i + 1]);
        if (hi < 0 || lo < 0)
            break;
        b[n++] = (guint8)((hi << 4) | lo);
        i += 2;
    }
    if (n != 16) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "not a valid ID: expected a lowercase UUID");
        return FALSE;
    }
    if ((b[6] >> 4) != 7 || (b[8] & 0xC0) != 0x80) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "not a valid ID: expected a version 7 UUID");
        return FALSE;
    }
    if (out != NULL)
        memcpy(out, b, sizeof b);
    return TRUE;
}

gboolean
einsora_uuid_is_valid(const char *str)
{
    return einsora_uuid_parse(str, NULL, NULL);
}

gint64
einsora_uuid_v7_unix_ms(const guint8 uuid[16])
{
    gint64 ms = 0;
    for (guint i = 0; i < 6; i++)
        ms = (ms << 8) | uuid[i];
    return ms;
}
