/* The token mask (daemon/http/einsora-token-mask.c): every occurrence
 * masked however the stream is cut into reads, nothing held back that
 * could not start the token, and a WebSocket answer's frames untouched
 * and undelayed after its head. */
#include <string.h>

#include "einsora-token-mask.h"

#define TOKEN "deadbeefcafe0123"
#define MASK "xxxxxxxxxxxxxxxx"

/* A stream that hands out its bytes at most @piece at a time, so that
 * the converter sees every way of cutting the input. */
#define PIECE_TYPE_STREAM (piece_stream_get_type())
G_DECLARE_FINAL_TYPE(PieceStream, piece_stream, PIECE, STREAM, GInputStream)

struct _PieceStream {
    GInputStream parent_instance;
    GBytes *bytes;
    gsize offset;
    gsize piece;
};

G_DEFINE_FINAL_TYPE(PieceStream, piece_stream, G_TYPE_INPUT_STREAM)

static gssize
piece_stream_read(GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
                  GError **error)
{
    PieceStream *self = PIECE_STREAM(stream);
    gsize size;
    const guint8 *data = g_bytes_get_data(self->bytes, &size);
    gsize n = MIN(MIN(count, self->piece), size - self->offset);

    memcpy(buffer, data + self->offset, n);
    self->offset += n;
    return n;
}

static gboolean
piece_stream_close(GInputStream *stream, GCancellable *cancellable, GError **error)
{
    return TRUE;
}

static void
piece_stream_finalize(GObject *object)
{
    PieceStream *self = PIECE_STREAM(object);

    g_clear_pointer(&self->bytes, g_bytes_unref);
    G_OBJECT_CLASS(piece_stream_parent_class)->finalize(object);
}

static void
piece_stream_class_init(PieceStreamClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = piece_stream_finalize;
    G_INPUT_STREAM_CLASS(klass)->read_fn = piece_stream_read;
    G_INPUT_STREAM_CLASS(klass)->close_fn = piece_stream_close;
}

static void
piece_stream_init(PieceStream *self)
{
}

static GInputStream *
piece_stream_new(const char *data, gsize len, gsize piece)
{
    PieceStream *self = g_object_new(PIECE_TYPE_STREAM, NULL);

    self->bytes = g_bytes_new(data, len);
    self->piece = piece;
    return G_INPUT_STREAM(self);
}

/* @input read through a GConverterInputStream over a PieceStream. */
static GByteArray *
mask_through_stream(const char *token, gboolean head_only, const char *input, gsize len,
                    gsize piece)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(token, head_only);
    g_autoptr(GInputStream) base = piece_stream_new(input, len, piece);
    g_autoptr(GInputStream) stream = g_converter_input_stream_new(base, G_CONVERTER(mask));
    g_autoptr(GByteArray) output = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    guint8 buf[7]; /* small, so the converter's output buffer is cut too */
    gssize n;

    while ((n = g_input_stream_read(stream, buf, sizeof buf, NULL, &error)) > 0)
        g_byte_array_append(output, buf, n);
    g_assert_no_error(error);
    g_assert_cmpint(n, ==, 0);
    return g_steal_pointer(&output);
}

/* @input fed to the converter @piece bytes at a time, the way a relay
 * calls it, with at most @out_size bytes of output room per call. */
static GByteArray *
mask_by_pieces(const char *token, gboolean head_only, const char *input, gsize len, gsize piece,
               gsize out_size)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(token, head_only);
    g_autoptr(GByteArray) pending = g_byte_array_new();
    g_autoptr(GByteArray) output = g_byte_array_new();
    g_autofree guint8 *out = g_malloc(out_size);
    gsize fed = 0;
    gboolean finished = FALSE;

    while (!finished) {
        gsize n = MIN(piece, len - fed);
        gboolean at_end;

        g_byte_array_append(pending, (const guint8 *)input + fed, n);
        fed += n;
        at_end = fed == len;
        for (;;) {
            g_autoptr(GError) error = NULL;
            gsize bytes_read = 0;
            gsize bytes_written = 0;
            GConverterResult result =
                g_converter_convert(G_CONVERTER(mask), pending->data, pending->len, out, out_size,
                                    at_end ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS,
                                    &bytes_read, &bytes_written, &error);
            if (result == G_CONVERTER_ERROR) {
                g_assert_error(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
                g_assert_false(at_end);
                break;
            }
            /* The length is kept call by call, not just in the end. */
            g_assert_cmpuint(bytes_written, ==, bytes_read);
            g_byte_array_append(output, out, bytes_written);
            g_byte_array_remove_range(pending, 0, bytes_read);
            if (result == G_CONVERTER_FINISHED) {
                g_assert_true(at_end);
                g_assert_cmpuint(pending->len, ==, 0);
                finished = TRUE;
                break;
            }
            g_assert_cmpint(result, ==, G_CONVERTER_CONVERTED);
            if (pending->len == 0 && !at_end)
                break;
        }
    }
    return g_steal_pointer(&output);
}

/* What masking the whole input at once must give: every byte covered by
 * some occurrence of @token becomes 'x'. */
static GByteArray *
mask_reference(const char *token, const char *input, gsize len)
{
    GByteArray *output = g_byte_array_new();
    gsize token_len = strlen(token);

    g_byte_array_append(output, (const guint8 *)input, len);
    for (gsize i = 0; token_len > 0 && i + token_len <= len; i++) {
        if (memcmp(input + i, token, token_len) == 0)
            memset(output->data + i, 'x', token_len);
    }
    return output;
}

static void
assert_bytes(GByteArray *got, const char *want, gsize want_len)
{
    g_assert_cmpmem(got->data, got->len, want, want_len);
}

/* Masks @input cut every way, through both callers, and compares. */
static void
assert_masked_every_way(const char *token, gboolean head_only, const char *input, gsize len,
                        const char *want)
{
    static const gsize out_sizes[] = {1, 3, 4096};

    for (gsize piece = 1; piece <= len; piece++) {
        g_autoptr(GByteArray) streamed = mask_through_stream(token, head_only, input, len, piece);
        assert_bytes(streamed, want, len);
        for (gsize k = 0; k < G_N_ELEMENTS(out_sizes); k++) {
            g_autoptr(GByteArray) fed =
                mask_by_pieces(token, head_only, input, len, piece, out_sizes[k]);
            assert_bytes(fed, want, len);
        }
    }
}

/* One call of the converter on @input; what came out goes to @out. */
static GConverterResult
convert_once(EinsoraTokenMask *mask, const char *input, GConverterFlags flags, GString *out,
             gsize *bytes_read, GError **error)
{
    gsize len = strlen(input);
    g_autofree gchar *buf = g_malloc(len + 1);
    gsize bytes_written = 0;
    GConverterResult result;

    *bytes_read = 0;
    result = g_converter_convert(G_CONVERTER(mask), input, len, buf, len + 1, flags, bytes_read,
                                 &bytes_written, error);
    if (result != G_CONVERTER_ERROR)
        g_string_append_len(out, buf, bytes_written);
    return result;
}

static void
test_whole(void)
{
    const char *input = "GET /?t=" TOKEN " HTTP/1.1\r\nAuthorization: Bearer " TOKEN
                        "\r\n\r\n{\"token\":\"" TOKEN "\"}";
    const char *want = "GET /?t=" MASK " HTTP/1.1\r\nAuthorization: Bearer " MASK
                       "\r\n\r\n{\"token\":\"" MASK "\"}";
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(TOKEN, FALSE);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gsize bytes_read;

    g_assert_cmpint(convert_once(mask, input, G_CONVERTER_INPUT_AT_END, out, &bytes_read, &error),
                    ==, G_CONVERTER_FINISHED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, strlen(input));
    g_assert_cmpstr(out->str, ==, want);
    g_assert_finalize_object(g_steal_pointer(&mask));
}

static void
test_split_across_reads(void)
{
    const char *input =
        "HTTP/1.1 200 OK\r\nX-Token: " TOKEN "\r\n\r\n" TOKEN TOKEN "dead" TOKEN "dea";
    const char *want = "HTTP/1.1 200 OK\r\nX-Token: " MASK "\r\n\r\n" MASK MASK "dead" MASK "dea";

    assert_masked_every_way(TOKEN, FALSE, input, strlen(input), want);
}

static void
test_prefix_at_end_flushed(void)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(TOKEN, FALSE);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gsize bytes_read;

    /* "dead" could start the token: it waits. */
    g_assert_cmpint(convert_once(mask, "hello dead", 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, strlen("hello "));
    g_assert_cmpint(convert_once(mask, "dead", 0, out, &bytes_read, &error), ==, G_CONVERTER_ERROR);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
    g_clear_error(&error);

    /* A flush lets it out, and so does the end. */
    g_assert_cmpint(convert_once(mask, "dead", G_CONVERTER_FLUSH, out, &bytes_read, &error), ==,
                    G_CONVERTER_FLUSHED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, 4);
    g_assert_cmpint(convert_once(mask, "be", G_CONVERTER_INPUT_AT_END, out, &bytes_read, &error),
                    ==, G_CONVERTER_FINISHED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, 2);
    g_assert_cmpint(convert_once(mask, "", G_CONVERTER_INPUT_AT_END, out, &bytes_read, &error), ==,
                    G_CONVERTER_FINISHED);
    g_assert_no_error(error);
    g_assert_cmpstr(out->str, ==, "hello deadbe");
}

static void
test_no_holdback_when_not_prefix(void)
{
    const char *inputs[] = {"abc\r\n", "abc\n\n", "0\r\n\r\n", "abcdeax", "d e", "deadbeeg"};

    for (gsize k = 0; k < G_N_ELEMENTS(inputs); k++) {
        g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(TOKEN, FALSE);
        g_autoptr(GString) out = g_string_new(NULL);
        g_autoptr(GError) error = NULL;
        gsize bytes_read;

        g_assert_cmpint(convert_once(mask, inputs[k], 0, out, &bytes_read, &error), ==,
                        G_CONVERTER_CONVERTED);
        g_assert_no_error(error);
        g_assert_cmpuint(bytes_read, ==, strlen(inputs[k]));
        g_assert_cmpstr(out->str, ==, inputs[k]);
    }
}

static void
test_head_only(void)
{
    const char *input = "HTTP/1.1 101 Switching Protocols\r\nX-Token: " TOKEN "\r\n\r\n"
                        "\x81\x10" TOKEN "\x81\x04"
                        "dead";
    const char *want = "HTTP/1.1 101 Switching Protocols\r\nX-Token: " MASK "\r\n\r\n"
                       "\x81\x10" TOKEN "\x81\x04"
                       "dead";

    assert_masked_every_way(TOKEN, TRUE, input, strlen(input), want);
}

static void
test_head_only_no_delay(void)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(TOKEN, TRUE);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gsize bytes_read;

    /* Inside the head, a token's start waits for more. */
    g_assert_cmpint(convert_once(mask, "HTTP/1.1 101 X\r\nA: dead", 0, out, &bytes_read, &error),
                    ==, G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, strlen("HTTP/1.1 101 X\r\nA: "));

    /* The head ends in this read: the frame after it, ending in what
     * looks like the token's start, goes out whole. */
    g_assert_cmpint(convert_once(mask,
                                 "dead\r\n\r\n\x81\x02"
                                 "de",
                                 0, out, &bytes_read, &error),
                    ==, G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, 12);

    /* After the head nothing is held or masked. */
    g_assert_cmpint(convert_once(mask, "dead", 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, 4);
    g_assert_cmpint(convert_once(mask, TOKEN, 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_assert_cmpuint(bytes_read, ==, strlen(TOKEN));
    g_assert_cmpstr(out->str, ==,
                    "HTTP/1.1 101 X\r\nA: dead\r\n\r\n\x81\x02"
                    "dedead" TOKEN);
}

static void
test_head_end_split(void)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(TOKEN, TRUE);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gsize bytes_read;

    /* The blank line is followed across reads: "\r\n" then "\r" is not
     * yet the end, so the token after it is still masked... */
    g_assert_cmpint(convert_once(mask, "HTTP/1.1 200 OK\r\nA: 1\r\n", 0, out, &bytes_read, &error),
                    ==, G_CONVERTER_CONVERTED);
    g_assert_cmpint(convert_once(mask, "B: " TOKEN "\r\n\r", 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    /* ...and "\n" completes it, so the one after passes. */
    g_assert_cmpint(convert_once(mask, "\n" TOKEN, 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    g_assert_cmpstr(out->str, ==, "HTTP/1.1 200 OK\r\nA: 1\r\nB: " MASK "\r\n\r\n" TOKEN);
}

static void
test_lengths_kept(void)
{
    /* A token that overlaps itself, in inputs made of its own letters,
     * line ends and pieces of it: every kind of near miss. */
    const char *token = "abcab";
    const char *parts[] = {"a", "b", "c", "ab", "abc", "abca", "abcab", "\r\n", "x"};

    for (guint round = 0; round < 200; round++) {
        g_autoptr(GString) input = g_string_new(NULL);
        g_autoptr(GByteArray) want = NULL;
        g_autoptr(GByteArray) streamed = NULL;
        g_autoptr(GByteArray) fed = NULL;
        gsize piece;

        while (input->len < 60)
            g_string_append(input, parts[g_test_rand_int_range(0, G_N_ELEMENTS(parts))]);
        piece = g_test_rand_int_range(1, 9);
        want = mask_reference(token, input->str, input->len);
        streamed = mask_through_stream(token, FALSE, input->str, input->len, piece);
        fed = mask_by_pieces(token, FALSE, input->str, input->len, piece,
                             g_test_rand_int_range(1, 9));
        assert_bytes(streamed, (const char *)want->data, want->len);
        assert_bytes(fed, (const char *)want->data, want->len);
        g_assert_null(g_strstr_len((const char *)fed->data, fed->len, token));
    }
}

static void
test_overlapping(void)
{
    const struct {
        const char *token;
        const char *input;
        const char *want;
    } cases[] = {
        {"aab", "aaab", "axxx"}, {"aab", "aaaab", "aaxxx"}, {"aba", "ababa", "xxxxx"},
        {"aba", "abab", "xxxb"}, {"aa", "aaa", "xxx"},      {"abab", "abababx", "xxxxxxx"},
    };

    for (gsize k = 0; k < G_N_ELEMENTS(cases); k++) {
        assert_masked_every_way(cases[k].token, FALSE, cases[k].input, strlen(cases[k].input),
                                cases[k].want);
    }
}

static void
test_empty_token(void)
{
    const char *input = "dead\r\n\r\n";
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new("", FALSE);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gsize bytes_read;

    g_assert_cmpint(convert_once(mask, input, 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_assert_no_error(error);
    g_assert_cmpuint(bytes_read, ==, strlen(input));
    g_assert_cmpstr(out->str, ==, input);
    assert_masked_every_way(NULL, TRUE, input, strlen(input), input);
}

static void
test_reset(void)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(TOKEN, TRUE);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gsize bytes_read;

    g_assert_cmpint(convert_once(mask, "A\r\n\r\n" TOKEN, 0, out, &bytes_read, &error), ==,
                    G_CONVERTER_CONVERTED);
    g_converter_reset(G_CONVERTER(mask));
    g_assert_cmpint(convert_once(mask, "B: " TOKEN "\r\n\r\n" TOKEN, G_CONVERTER_INPUT_AT_END, out,
                                 &bytes_read, &error),
                    ==, G_CONVERTER_FINISHED);
    g_assert_no_error(error);
    g_assert_cmpstr(out->str, ==, "A\r\n\r\n" TOKEN "B: " MASK "\r\n\r\n" TOKEN);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/token-mask/whole", test_whole);
    g_test_add_func("/token-mask/split-across-reads", test_split_across_reads);
    g_test_add_func("/token-mask/prefix-at-end-flushed", test_prefix_at_end_flushed);
    g_test_add_func("/token-mask/no-holdback-when-not-prefix", test_no_holdback_when_not_prefix);
    g_test_add_func("/token-mask/head-only", test_head_only);
    g_test_add_func("/token-mask/head-only-no-delay", test_head_only_no_delay);
    g_test_add_func("/token-mask/head-end-split", test_head_end_split);
    g_test_add_func("/token-mask/lengths-kept", test_lengths_kept);
    g_test_add_func("/token-mask/overlapping", test_overlapping);
    g_test_add_func("/token-mask/empty-token", test_empty_token);
    g_test_add_func("/token-mask/reset", test_reset);
    return g_test_run();
}
