/*
 * test_utf8.c -- tg_utf8_check_fast says "valid" exactly for well-formed
 * UTF-8 (Unicode 15, table 3-7), against a byte-by-byte reference written
 * here from the table: every pair of bytes, every triple and quadruple
 * over the boundary bytes of each range, each put at offsets that cross
 * the 32-byte blocks and end the text, and random texts of valid
 * sequences with one byte changed.  Then the parser: a document parses
 * to the same canonical bytes, or fails with the same error at the same
 * offset, with the fast check and without it (strings of valid and broken
 * UTF-8, escapes, raw control characters, cut texts).  On a processor
 * without AVX2 the fast check answers 0 for everything ("not checked")
 * and the cases are skipped, saying so.
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t */
#include "tap.h"
#include "tg_internal.h"

#include <stdint.h>
#include <stdlib.h>

/* Well-formed UTF-8, straight from table 3-7. */
static int reference(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], lo = 0x80, hi = 0xBF;
        size_t k;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            k = 2;
        else if (c >= 0xE0 && c <= 0xEF)
            k = 3;
        else if (c >= 0xF0 && c <= 0xF4)
            k = 4;
        else
            return 0;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
        else if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
        if (n - i < k || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j < k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xBF)
                return 0;
        i += k;
    }
    return 1;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static size_t pick(size_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (size_t)(rng % n);
}

/* tg_utf8_check_fast on a copy of n bytes followed by the 31 NULs it reads. */
static int fast(const void *s, size_t n)
{
    static char padded[4096 + 32];
    if (n > 4096)
        return -1;
    memcpy(padded, s, n);
    memset(padded + n, 0, 32);
    return tg_utf8_check_fast(padded, n);
}

static size_t mismatches;
static char first_case[160];

/* The fast check against the reference on n bytes at s. */
static void compare(const unsigned char *s, size_t n)
{
    int want = reference(s, n), got = fast(s, n);
    if (got != want && mismatches++ == 0) {
        int w = snprintf(first_case, sizeof first_case, "len %zu, want %d:", n, want);
        for (size_t i = 0; i < n && w < (int)sizeof first_case - 4; i++)
            if (s[i] >= 0x80 || s[i] < 0x20)
                w += snprintf(first_case + w, sizeof first_case - (size_t)w, " %zu:%02x", i, s[i]);
    }
}

/* seq (k bytes) inside ASCII text at each offset that matters to 32-byte
 * blocks: the start, across the first boundary, the end of a block, the
 * tail, the very end of the text. */
static void at_offsets(const unsigned char *seq, size_t k)
{
    static const size_t offsets[] = {0, 1, 13, 28, 29, 30, 31, 32, 33, 60, 61, 62, 63};
    static const size_t lengths[] = {64, 70};
    unsigned char text[128];
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        size_t len = lengths[li];
        for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
            size_t at = offsets[oi];
            if (at + k > len)
                continue;
            memset(text, 'a', len);
            memcpy(text + at, seq, k);
            compare(text, len);
            compare(text, at + k); /* ending right after it */
        }
    }
}

static const unsigned char edges[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
                                      0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
#define N_EDGES (sizeof edges / sizeof edges[0])

/* Valid sequences of each length, for the random texts. */
static size_t random_char(unsigned char *out)
{
    switch (pick(5)) {
    case 0:
        out[0] = (unsigned char)(0x20 + pick(0x5F));
        return 1;
    case 1:
        out[0] = (unsigned char)(0xC2 + pick(30));
        out[1] = (unsigned char)(0x80 + pick(64));
        return 2;
    case 2:
        out[0] = (unsigned char)(0xE0 + pick(16));
        out[1] = (unsigned char)(out[0] == 0xE0   ? 0xA0 + pick(32)
                                 : out[0] == 0xED ? 0x80 + pick(32)
                                                  : 0x80 + pick(64));
        out[2] = (unsigned char)(0x80 + pick(64));
        return 3;
    case 3:
        out[0] = (unsigned char)(0xF0 + pick(5));
        out[1] = (unsigned char)(out[0] == 0xF0   ? 0x90 + pick(48)
                                 : out[0] == 0xF4 ? 0x80 + pick(16)
                                                  : 0x80 + pick(64));
        out[2] = (unsigned char)(0x80 + pick(64));
        out[3] = (unsigned char)(0x80 + pick(64));
        return 4;
    default:
        memcpy(out, "plain ascii text", 16);
        return 16;
    }
}

/* Pieces of string text: good ones, and ones that break a string. */
static const char *const good[] = {"plain words ",
                                   "\xc3\xa9",
                                   "\xe6\x9d\xb1\xe4\xba\xac",
                                   "\xf0\x9f\x98\x80",
                                   "\\n",
                                   "\\u00e9",
                                   "\\ud83d\\ude00",
                                   "\\\"",
                                   "\\\\",
                                   "\\/",
                                   "\\u001f",
                                   "\xef\xbf\xbf",
                                   "\xe2\x80\xa8",
                                   "0123456789abcdef0123456789abcdef",
                                   "\x7f ~"};
static const char *const bad[] = {
    "\t",      "\x01", "\xc3", "\x80", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
    "\\ud800", "\\x",  "\xff", "\x1f"};
#define N_GOOD (sizeof good / sizeof good[0])
#define N_BAD (sizeof bad / sizeof bad[0])

static const char *piece(void)
{
    return pick(150) ? good[pick(N_GOOD)] : bad[pick(N_BAD)];
}

/* A document of strings made of pieces: keys, values, an array; about
 * half of them hold a bad piece, and now and then the text is cut. */
static size_t random_doc(char *out, size_t cap)
{
    size_t n = 0;
#define PUT(s)                                                                                     \
    do {                                                                                           \
        const char *s_ = (s);                                                                      \
        size_t k_ = strlen(s_);                                                                    \
        if (n + k_ < cap) {                                                                        \
            memcpy(out + n, s_, k_);                                                               \
            n += k_;                                                                               \
        }                                                                                          \
    } while (0)
    PUT("{");
    for (size_t m = 0, members = 1 + pick(4); m < members; m++) {
        char key[24];
        snprintf(key, sizeof key, "\"k%zu", m);
        PUT(m ? "," : "");
        PUT(key);
        PUT(pick(4) ? "" : piece());
        PUT("\":[\"");
        for (size_t i = 0, k = pick(12); i < k; i++)
            PUT(piece());
        PUT("\",\"");
        for (size_t i = 0, k = pick(60); i < k; i++)
            PUT(piece());
        PUT("\"]");
    }
    PUT("}");
#undef PUT
    return pick(10) ? n : pick(n + 1);
}

/* The parser's two ways on one document; 1 when they agree. */
static int same_both_ways(tg_engine_t *e, const char *text, size_t n, int *parsed)
{
    tg_doc_t *a = NULL, *b = NULL;
    tg_error_t ea, eb;
    int ra = tg_parse_with(e, text, n, TG_PARSE_FAST_UTF8, &a, &ea),
        rb = tg_parse_with(e, text, n, 0, &b, &eb);
    int same = ra == rb;
    if (same && ra != TG_OK)
        same = ea.offset == eb.offset && strcmp(ea.message, eb.message) == 0;
    if (same && ra == TG_OK) {
        tg_buf_t x, y;
        tg_buf_init(&x, e);
        tg_buf_init(&y, e);
        same = tg_canon_value(tg_doc_root(a), &x, NULL) == TG_OK &&
               tg_canon_value(tg_doc_root(b), &y, NULL) == TG_OK && x.len == y.len &&
               memcmp(x.data, y.data, x.len) == 0;
        tg_buf_free(&x);
        tg_buf_free(&y);
    }
    *parsed = ra == TG_OK;
    tg_doc_free(a);
    tg_doc_free(b);
    return same;
}

int main(void)
{
    unsigned char seq[4];
    size_t random_valid = 0;

    if (!fast("ascii", 5)) {
        printf("ok 1 # SKIP no fast UTF-8 check on this processor (no AVX2)\n1..1\n");
        return 0;
    }

    tap_ok(fast("", 0) == 1, "the empty text is valid");

    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            seq[0] = (unsigned char)a;
            seq[1] = (unsigned char)b;
            at_offsets(seq, 1);
            at_offsets(seq, 2);
        }
    tap_ok(mismatches == 0, "every byte and pair of bytes, at every block position");
    if (mismatches)
        printf("#   %zu mismatches, first: %s\n", mismatches, first_case);

    mismatches = 0;
    for (unsigned a = 0xC0; a < 256; a++)
        for (size_t i = 0; i < N_EDGES; i++)
            for (size_t j = 0; j < N_EDGES; j++) {
                seq[0] = (unsigned char)a;
                seq[1] = edges[i];
                seq[2] = edges[j];
                at_offsets(seq, 3);
                for (size_t l = 0; a >= 0xE0 && l < N_EDGES; l++) {
                    seq[3] = edges[l];
                    at_offsets(seq, 4);
                }
            }
    tap_ok(mismatches == 0, "every lead byte with the edges of each range after it");
    if (mismatches)
        printf("#   %zu mismatches, first: %s\n", mismatches, first_case);

    mismatches = 0;
    for (int round = 0; round < 20000; round++) {
        unsigned char text[400];
        size_t n = 0, want = 1 + pick(300);
        while (n < want) {
            unsigned char c[16];
            size_t k = random_char(c);
            if (n + k > sizeof text)
                break;
            memcpy(text + n, c, k);
            n += k;
        }
        random_valid += reference(text, n);
        compare(text, n);
        if (n) {
            text[pick(n)] = (unsigned char)pick(256); /* one byte changed */
            compare(text, n);
        }
    }
    tap_ok(random_valid == 20000, "the random texts are valid before their change");
    tap_ok(mismatches == 0, "random texts of valid sequences, and each with one byte changed");
    if (mismatches)
        printf("#   %zu mismatches, first: %s\n", mismatches, first_case);

    {
        tg_error_t err;
        tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, &err);
        size_t differ = 0, parsed = 0, checked_fast = 0;
        for (int round = 0; round < 20000; round++) {
            char doc[2048];
            int ok;
            size_t n = random_doc(doc, sizeof doc);
            checked_fast += (size_t)fast(doc, n);
            if (!same_both_ways(e, doc, n, &ok) && differ++ == 0)
                printf("#   first difference: %.*s\n", (int)n, doc);
            parsed += (size_t)ok;
        }
        tap_ok(differ == 0, "the parser gives the same document or error with the fast check and "
                            "without it");
        printf("#   %zu of 20000 documents parsed, %zu had good UTF-8\n", parsed, checked_fast);
        tap_ok(parsed > 2000 && parsed < 18000 && checked_fast > 2000,
               "the documents were a mix of good and bad");
        tg_engine_free(e);
    }
    return tap_done();
}
