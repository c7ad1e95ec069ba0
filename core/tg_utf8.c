/*
 * tg_utf8.c -- is a whole text well-formed UTF-8?  Answered 32 bytes at a
 * time with AVX2 where the processor has it, so that the parser can then
 * scan strings without stopping at every non-ASCII byte to validate it.
 *
 * The method is the lookup one of Keiser and Lemire ("Validating UTF-8 in
 * less than one instruction per byte", 2021): each byte and the one before
 * it index three 16-entry tables by nibble (the high nibble of the byte
 * before, its low nibble, the high nibble of the byte); each table entry
 * is the set of error classes (bits below) that the nibble is consistent
 * with, so the AND of the three is the set of errors this pair of bytes
 * shows.  Two-byte errors cover everything but a missing or an extra third
 * or fourth byte, which comes from the bytes two and three back: a byte
 * after an E0..EF two back, or after an F0..F4 three back, must be a
 * continuation, and only there may a continuation follow a continuation.
 * A lead byte in the last three of the text that wants more bytes than
 * are left is a cut sequence.
 *
 * Where there is no AVX2 (another architecture or compiler, an older
 * processor) the answer is "not checked": the parser then validates each
 * sequence as it meets it, as it always did.
 */
#include "tg_internal.h"

#if defined(__GNUC__) && defined(__x86_64__)
#define TG_UTF8_AVX2 1
#include <immintrin.h>
#else
#define TG_UTF8_AVX2 0
#endif

#if TG_UTF8_AVX2

/* Error classes: a set bit says which rule a pair of bytes can break. */
#define TOO_SHORT (1 << 0)      /* a lead byte followed by a lead byte or ASCII */
#define TOO_LONG (1 << 1)       /* ASCII followed by a continuation */
#define OVERLONG_3 (1 << 2)     /* E0 80..9F */
#define TOO_LARGE (1 << 3)      /* F4 90..BF, or F5..FF then a continuation */
#define SURROGATE (1 << 4)      /* ED A0..BF */
#define OVERLONG_2 (1 << 5)     /* C0..C1 then a continuation */
#define TOO_LARGE_1000 (1 << 6) /* F5..FF 80..8F */
#define OVERLONG_4 (1 << 6)     /* F0 80..8F (told from the above by the low nibble) */
#define TWO_CONTS (1 << 7)      /* a continuation followed by a continuation */
#define CARRY (TOO_SHORT | TOO_LONG | TWO_CONTS) /* whatever the low nibble */

#define ATTR_AVX2 __attribute__((target("avx2")))

/* A 16-entry table in both 128-bit lanes (the shuffle looks up per lane). */
#define C8(x) ((char)(x))
#define TABLE(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)                                      \
    _mm256_setr_epi8(C8(a), C8(b), C8(c), C8(d), C8(e), C8(f), C8(g), C8(h), C8(i), C8(j), C8(k),  \
                     C8(l), C8(m), C8(n), C8(o), C8(p), C8(a), C8(b), C8(c), C8(d), C8(e), C8(f),  \
                     C8(g), C8(h), C8(i), C8(j), C8(k), C8(l), C8(m), C8(n), C8(o), C8(p))

/* The 32 bytes that end n bytes before in's first (the last n of prev,
 * then in's): the bytes n back of each byte of in. */
#define BEFORE(in, prev, n)                                                                        \
    _mm256_alignr_epi8((in), _mm256_permute2x128_si256((prev), (in), 0x21), 16 - (n))

ATTR_AVX2 static inline __m256i high_nibbles(__m256i x)
{
    return _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F));
}

/* The errors of block in, given the block before it. */
ATTR_AVX2 static inline __m256i block_errors(__m256i in, __m256i prev)
{
    const __m256i byte1_high = TABLE(
        TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TWO_CONTS,
        TWO_CONTS, TWO_CONTS, TWO_CONTS, TOO_SHORT | OVERLONG_2, TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE, TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4);
    const __m256i byte1_low =
        TABLE(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY, CARRY,
              CARRY | TOO_LARGE, CARRY | TOO_LARGE | TOO_LARGE_1000,
              CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
              CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
              CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
              CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
              CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000);
    const __m256i byte2_high = TABLE(
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE, TOO_SHORT, TOO_SHORT, TOO_SHORT,
        TOO_SHORT);
    __m256i prev1 = BEFORE(in, prev, 1);
    __m256i pairs = _mm256_and_si256(
        _mm256_and_si256(
            _mm256_shuffle_epi8(byte1_high, high_nibbles(prev1)),
            _mm256_shuffle_epi8(byte1_low, _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)))),
        _mm256_shuffle_epi8(byte2_high, high_nibbles(in)));
    /* a third byte (two after E0..FF) or a fourth (three after F0..FF)
     * must be a continuation: the one place TWO_CONTS is no error, and
     * its absence there is one */
    __m256i third = _mm256_subs_epu8(BEFORE(in, prev, 2), _mm256_set1_epi8((char)(0xE0 - 0x80)));
    __m256i fourth = _mm256_subs_epu8(BEFORE(in, prev, 3), _mm256_set1_epi8((char)(0xF0 - 0x80)));
    __m256i must_continue =
        _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
    return _mm256_xor_si256(must_continue, pairs);
}

/* Nonzero when the block ends inside a sequence: a lead byte among its
 * last three that wants more bytes than the block has left. */
ATTR_AVX2 static inline __m256i cut_at_end(__m256i in)
{
    const __m256i max = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
    return _mm256_subs_epu8(in, max);
}

/* s is followed by at least 31 NUL bytes, so the last block is read
 * whole: a sequence the text cuts meets a NUL, which ends it too soon. */
ATTR_AVX2 static int valid_avx2(const unsigned char *s, size_t len)
{
    __m256i prev = _mm256_setzero_si256(), errors = prev, cut = prev, in;
    for (size_t i = 0; i < len; i += 32) {
        in = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        if (_mm256_movemask_epi8(in) == 0) {
            /* ASCII: only a sequence the last block left open is wrong */
            errors = _mm256_or_si256(errors, cut);
            cut = _mm256_setzero_si256();
        } else {
            errors = _mm256_or_si256(errors, block_errors(in, prev));
            cut = cut_at_end(in);
        }
        prev = in;
    }
    errors = _mm256_or_si256(errors, cut);
    return _mm256_testz_si256(errors, errors);
}

int tg_utf8_check_fast(const char *s, size_t len)
{
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    return valid_avx2((const unsigned char *)s, len);
}

#else

int tg_utf8_check_fast(const char *s, size_t len)
{
    (void)s;
    (void)len;
    return 0;
}

#endif
