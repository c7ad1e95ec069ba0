/*
 * tg_strtod.c -- decimal number text to the nearest IEEE 754 double,
 * correctly rounded (ties to even) and locale-independent.
 *
 * The parser hands over the number already split into its first 19
 * significant digits w and a decimal exponent q (tg_number_parts), so no
 * byte is read twice.  Three ways, cheapest first:
 *   1. Clinger's fast path: w <= 2^53 and |q| <= 22 make w and 10^|q| exact
 *      doubles, and one IEEE multiply or divide rounds correctly;
 *   2. Eisel-Lemire (Lemire, "Number Parsing at a Gigabyte per Second",
 *      2021): w times a 128-bit approximation of 5^q (tg_pow5_parse.h)
 *      gives the 54 leading bits of the product exactly unless the
 *      approximation's error could reach them, which the algorithm detects;
 *   3. glibc's strtod_l in the engine's "C" locale (correctly rounded), for
 *      whatever 2 declines: the rare undecidable product, and numbers of
 *      more than 19 digits whose truncation to w and to w + 1 round apart.
 * The unit tests compare 1 and 2 with strtod_l on millions of random
 * decimals.
 */
#include "tg_internal.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "tg_pow5_parse.h"

/* ---- 1. Clinger -------------------------------------------------------- */

const double tg_exact_pow10[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* ---- 2. Eisel-Lemire --------------------------------------------------- */

static inline int leading_zeros64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__)
    return __builtin_clzll(x);
#else
    int n = 0;
    while (!(x & ((uint64_t)1 << 63))) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

/* floor(q * log2(10)) + 63 for |q| < 400 (the table's range), written with
 * a floor division so that it does not rest on >> of a negative number. */
static inline int32_t binary_exponent(int32_t q)
{
    int32_t x = 217706 * q; /* 217706 / 2^16 ~ log2(10) */
    return (x >= 0 ? x / 65536 : -((-x + 65535) / 65536)) + 63;
}

#define UNDECIDED UINT64_MAX /* not a valid result: a NaN bit pattern */

/* The bits of the positive double nearest w x 10^q (w != 0), or UNDECIDED.
 * Overflow yields the bits of +infinity, underflow those of +0. */
static uint64_t eisel_lemire(uint64_t w, int64_t q)
{
    uint64_t hi, lo, mantissa;
    const uint64_t *pow5;
    int lz, upper, shift;
    int32_t power2;

    if (q < TG_POW5_PARSE_MIN) /* w < 10^19: below half the least subnormal */
        return 0;
    if (q > TG_POW5_PARSE_MAX) /* w >= 1: above the largest double */
        return (uint64_t)0x7FF << 52;

    /* Normalise w, then take the product's high 128 bits.  The leading 55
     * bits are exact unless the bits under them are all ones, where the
     * truncated table entry's missing low part could carry into them; then
     * fold in the product with the entry's low half. */
    lz = leading_zeros64(w);
    w <<= lz;
    pow5 = tg_pow5_parse[q - TG_POW5_PARSE_MIN];
    tg_mul64(w, pow5[0], &hi, &lo);
    if ((hi & 0x1FF) == 0x1FF) {
        uint64_t hi2, lo2;
        tg_mul64(w, pow5[1], &hi2, &lo2);
        lo += hi2;
        if (hi2 > lo)
            hi++;
    }
    /* Lemire's original guard: still all ones below, outside the exponents
     * where the product is exact, so no proof is leaned on: strtod decides. */
    if (lo == UINT64_MAX && (q < -27 || q > 55))
        return UNDECIDED;

    upper = (int)(hi >> 63);
    shift = upper + 64 - 52 - 3;
    mantissa = hi >> shift; /* 54 or 55 bits: the result and a rounding bit */
    power2 = binary_exponent((int32_t)q) + upper - lz + 1023;

    if (power2 <= 0) { /* subnormal, or rounds up to the least normal */
        if (-power2 + 1 >= 64)
            return 0;
        mantissa >>= -power2 + 1;
        mantissa += mantissa & 1;
        mantissa >>= 1;
        /* rounding may have carried into the least normal exponent */
        power2 = mantissa < ((uint64_t)1 << 52) ? 0 : 1;
        return (mantissa & (((uint64_t)1 << 52) - 1)) | ((uint64_t)power2 << 52);
    }
    /* Exactly halfway between two doubles is only possible where 5^q is
     * exact in the table (small q); there the rounding bit alone would round
     * up, so clear it when everything below it is zero (ties to even). */
    if (lo <= 1 && q >= -4 && q <= 23 && (mantissa & 3) == 1 && (mantissa << shift) == hi)
        mantissa &= ~(uint64_t)1;
    mantissa += mantissa & 1;
    mantissa >>= 1;
    if (mantissa >= ((uint64_t)2 << 52)) { /* rounding carried out: 2^53 */
        mantissa = (uint64_t)1 << 52;
        power2++;
    }
    if (power2 >= 0x7FF)
        return (uint64_t)0x7FF << 52;
    return (mantissa & (((uint64_t)1 << 52) - 1)) | ((uint64_t)power2 << 52);
}

/* ---- 3. strtod_l ---------------------------------------------------------- */

static double slow_path(tg_engine_t *e, const char *text, size_t len)
{
    /* strtod_l needs a terminated string.  Short tokens are copied; a long
     * token is read in place from the parser's NUL-padded copy of the input:
     * it cannot be "0" or "-0", so the byte after it cannot turn it into a
     * hex float, and strtod stops at the token's end. */
    if (len < 64) {
        char tmp[64];
        memcpy(tmp, text, len);
        tmp[len] = '\0';
        return strtod_l(tmp, NULL, e->c_locale);
    }
    return strtod_l(text, NULL, e->c_locale);
}

/* ---- entry ------------------------------------------------------------- */

int tg_number_parse(tg_engine_t *e, const char *text, size_t len, const tg_number_parts *n,
                    double *out)
{
    uint64_t bits;
    double v;

    if (n->w == 0) {
        *out = n->negative ? -0.0 : 0.0;
        return TG_OK;
    }
    if (TG_CLINGER_OK && !n->truncated && n->w <= ((uint64_t)1 << 53) && n->exp10 >= -22 &&
        n->exp10 <= 22) {
        v = (double)n->w;
        v = n->exp10 < 0 ? v / tg_exact_pow10[-n->exp10] : v * tg_exact_pow10[n->exp10];
        *out = n->negative ? -v : v;
        return TG_OK;
    }
    bits = eisel_lemire(n->w, n->exp10);
    /* A truncated w: the value lies between w and w + 1 (times 10^q); when
     * both ends round to the same double, so does the value. */
    if (n->truncated && bits != UNDECIDED && eisel_lemire(n->w + 1, n->exp10) != bits)
        bits = UNDECIDED;
    if (bits == UNDECIDED) {
        v = slow_path(e, text, len);
    } else {
        memcpy(&v, &bits, sizeof v);
        if (n->negative)
            v = -v;
    }
    if (v - v != 0) /* overflowed to infinity */
        return TG_E_NUMBER_RANGE;
    *out = v;
    return TG_OK;
}
