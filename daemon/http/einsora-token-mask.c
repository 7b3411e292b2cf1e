#define G_LOG_DOMAIN "einsora-http"

#include "einsora-token-mask.h"

#include <string.h>

/* The blank line that ends an HTTP head. */
#define HEAD_END "\r\n\r\n"
#define HEAD_END_LEN 4

struct _EinsoraTokenMask {
    GObject parent_instance;
    gchar *token; /* wiped in finalize */
    gsize token_len;
    gboolean head_only;
    gboolean head_done; /* head_only: the head's blank line has gone out */
    guint head_matched; /* bytes of HEAD_END at the end of what has gone out */
    gsize mask_left;    /* input bytes still to go out as 'x': the rest of a match */
};

static void einsora_token_mask_converter_init(GConverterIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraTokenMask, einsora_token_mask, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(G_TYPE_CONVERTER,
                                                    einsora_token_mask_converter_init))

typedef enum {
    TOKEN_NONE,
    TOKEN_PREFIX, /* the input ends inside what could be the token */
    TOKEN_FULL,
} TokenMatch;

static TokenMatch
token_at(EinsoraTokenMask *self, const guint8 *in, gsize avail)
{
    gsize n = MIN(avail, self->token_len);

    if (memcmp(in, self->token, n) != 0)
        return TOKEN_NONE;
    return n == self->token_len ? TOKEN_FULL : TOKEN_PREFIX;
}

/* One step of matching HEAD_END: on a mismatch the only useful restart
 * is a '\r', since no proper suffix of a partial match is a longer
 * prefix. */
static guint
head_step(guint matched, guint8 c)
{
    if (c == (guint8)HEAD_END[matched])
        return matched + 1;
    return c == '\r' ? 1 : 0;
}

/* Whether the head ends within @in, given what has gone out already. */
static gboolean
head_ends_within(EinsoraTokenMask *self, const guint8 *in, gsize len)
{
    guint matched = self->head_matched;

    for (gsize i = 0; i < len; i++) {
        matched = head_step(matched, in[i]);
        if (matched == HEAD_END_LEN)
            return TRUE;
    }
    return FALSE;
}

static gboolean
masking(EinsoraTokenMask *self)
{
    return self->token_len > 0 && !(self->head_only && self->head_done);
}

static GConverterResult
einsora_token_mask_convert(GConverter *converter, const void *inbuf, gsize inbuf_size, void *outbuf,
                           gsize outbuf_size, GConverterFlags flags, gsize *bytes_read,
                           gsize *bytes_written, GError **error)
{
    EinsoraTokenMask *self = EINSORA_TOKEN_MASK(converter);
    const guint8 *in = inbuf;
    guint8 *out = outbuf;
    gboolean ending = (flags & (G_CONVERTER_INPUT_AT_END | G_CONVERTER_FLUSH)) != 0;
    gboolean may_hold;
    gboolean held = FALSE;
    gsize i = 0;
    gsize o = 0;

    /* Holding back must never delay what follows the head: if the head
     * ends in this input, a tail that looks like the token's start
     * crosses the blank line and is no token in the head. */
    may_hold =
        !ending && masking(self) && !(self->head_only && head_ends_within(self, in, inbuf_size));

    while (i < inbuf_size && o < outbuf_size) {
        if (!masking(self) && self->mask_left == 0) {
            gsize n = MIN(inbuf_size - i, outbuf_size - o);
            memcpy(out + o, in + i, n);
            i += n;
            o += n;
            break;
        }
        if (masking(self)) {
            TokenMatch match = token_at(self, in + i, inbuf_size - i);
            if (match == TOKEN_FULL) {
                /* Overlapping matches join, so no byte of either shows. */
                self->mask_left = MAX(self->mask_left, self->token_len);
            } else if (match == TOKEN_PREFIX && may_hold) {
                held = TRUE;
                break;
            }
        }
        if (self->mask_left > 0) {
            out[o] = 'x';
            self->mask_left--;
        } else {
            out[o] = in[i];
        }
        if (self->head_only && !self->head_done) {
            self->head_matched = head_step(self->head_matched, in[i]);
            self->head_done = self->head_matched == HEAD_END_LEN;
        }
        i++;
        o++;
    }

    if (i == 0 && (held || inbuf_size == 0) && !ending) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT,
                            "Need more input to tell whether it holds the token");
        return G_CONVERTER_ERROR;
    }
    if (i == 0 && inbuf_size > 0) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, "No room in the output buffer");
        return G_CONVERTER_ERROR;
    }

    *bytes_read = i;
    *bytes_written = o;
    if (i == inbuf_size && (flags & G_CONVERTER_INPUT_AT_END) != 0)
        return G_CONVERTER_FINISHED;
    if (i == inbuf_size && (flags & G_CONVERTER_FLUSH) != 0)
        return G_CONVERTER_FLUSHED;
    return G_CONVERTER_CONVERTED;
}

static void
einsora_token_mask_reset(GConverter *converter)
{
    EinsoraTokenMask *self = EINSORA_TOKEN_MASK(converter);

    self->head_done = FALSE;
    self->head_matched = 0;
    self->mask_left = 0;
}

static void
einsora_token_mask_converter_init(GConverterIface *iface)
{
    iface->convert = einsora_token_mask_convert;
    iface->reset = einsora_token_mask_reset;
}

static void
einsora_token_mask_finalize(GObject *object)
{
    EinsoraTokenMask *self = EINSORA_TOKEN_MASK(object);

    if (self->token != NULL)
        explicit_bzero(self->token, self->token_len);
    g_clear_pointer(&self->token, g_free);
    G_OBJECT_CLASS(einsora_token_mask_parent_class)->finalize(object);
}

static void
einsora_token_mask_class_init(EinsoraTokenMaskClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_token_mask_finalize;
}

static void
einsora_token_mask_init(EinsoraTokenMask *self)
{
}

EinsoraTokenMask *
einsora_token_mask_new(const char *token, gboolean head_only)
{
    EinsoraTokenMask *self = g_object_new(EINSORA_TYPE_TOKEN_MASK, NULL);

    self->token = g_strdup(token != NULL ? token : "");
    self->token_len = strlen(self->token);
    self->head_only = head_only;
    return self;
}
