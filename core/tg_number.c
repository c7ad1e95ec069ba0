/*
 * tg_number.c -- numbers between JSON text and IEEE 754 doubles.
 *
 * Formatting follows ECMAScript Number::toString (what RFC 8785 requires):
 * the fewest significant digits that read back as the same double; among
 * those the one nearest the double, and the even one on a tie; then the
 * spec's layout (plain up to 21 integer digits, "0.000001" down to 1e-7,
 * exponent form "1e+21" / "1.5e-7" outside).
 *
 * The digits come from the free-format algorithm of Steele & White as
 * refined by Burger & Dybvig ("Printing floating-point numbers quickly and
 * accurately", 1996): exact arithmetic on the rounding interval, so it is
 * correct for every double.  Two paths compute it:
 *   - a fast path for doubles whose exponent is in [-116, 0] (values below
 *     2^53 that are not tiny: nearly every number in tool arguments).  There
 *     the denominator is a power of two and every quantity fits in 128 bits,
 *     so each digit costs a multiply, a shift and a mask;
 *   - integers from 2^53 to 2^113, in 128-bit integers;
 *   - an exact big-integer path for everything else (subnormals, huge and
 *     tiny magnitudes).
 * The unit tests check the two paths against each other and against a
 * round-trip oracle.
 *
 * Parsing uses Clinger's fast path (both operands exact, one correctly
 * rounded IEEE operation) and otherwise glibc's strtod_l in the "C" locale,
 * which is correctly rounded; LC_NUMERIC is never consulted.
 */
#include "tg_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* ---- layout ------------------------------------------------------------ */

size_t tg_number_layout(char *out, int negative, const char *digits, int nd, int n)
{
    char *p = out;
    if (negative)
        *p++ = '-';
    if (nd <= n && n <= 21) {
        memcpy(p, digits, (size_t)nd);
        p += nd;
        for (int i = nd; i < n; i++)
            *p++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(p, digits, (size_t)n);
        p += n;
        *p++ = '.';
        memcpy(p, digits + n, (size_t)(nd - n));
        p += nd - n;
    } else if (-6 < n && n <= 0) {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -n; i++)
            *p++ = '0';
        memcpy(p, digits, (size_t)nd);
        p += nd;
    } else {
        int x = n - 1;
        char exp[8];
        int ne = 0;
        *p++ = digits[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, (size_t)(nd - 1));
            p += nd - 1;
        }
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        if (x < 0)
            x = -x;
        do {
            exp[ne++] = (char)('0' + x % 10);
            x /= 10;
        } while (x);
        while (ne)
            *p++ = exp[--ne];
    }
    *p = '\0';
    return (size_t)(p - out);
}

/* Writes the decimal digits of v (v > 0) into out; returns the count. */
static int u64_digits(uint64_t v, char *out)
{
    char tmp[20];
    int n = 0, i = 0;
    while (v) {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    }
    while (n)
        out[i++] = tmp[--n];
    return i;
}

/* The termination step shared by both paths: given the digit q of this
 * step and which ends of the interval are reachable, returns the final
 * digit.  low: truncating here stays in the interval; high: rounding up
 * does; cmp_half: sign of (2 * remainder - denominator). */
static int final_digit(int q, int low, int high, int cmp_half)
{
    if (low && !high)
        return q;
    if (high && !low)
        return q + 1;
    if (cmp_half < 0)
        return q;
    if (cmp_half > 0)
        return q + 1;
    return (q % 2 == 0) ? q : q + 1; /* exact tie: ECMAScript takes the even one */
}

/* ---- fast path: power-of-two denominator in 128 bits -------------------- */

/* v = f * 2^e with e in [-116, 0].  Scaled by 2^t (t = 2 - e): the value is
 * V = 4f, the interval [V - mm, V + mp].  Fills digits, returns their count,
 * stores the decimal point position in *n. */
static int digits_fast(uint64_t f, int e, int lower_closer, char *digits, int *n)
{
    const int t = 2 - e;
    const u128 one = (u128)1 << t, mask = one - 1;
    const int even = (f & 1) == 0;
    u128 V = (u128)f << 2, mp = 2, mm = lower_closer ? 1 : 2;
    uint64_t ip = (uint64_t)(V >> t);
    u128 r = V & mask;
    int nd = 0, point;

    /* The interval is narrower than 1, so it holds at most one integer; when
     * it holds one, that integer is the shortest form. */
    if (even ? r <= mm : r < mm) {
        /* ip itself */
    } else if (even ? one - r <= mp : one - r < mp) {
        ip += 1;
    } else {
        /* Every candidate has integer part ip: emit its digits, then the
         * fraction's digits until the interval allows stopping. */
        point = ip ? u64_digits(ip, digits) : 0;
        nd = point;
        for (;;) {
            int q, low, high;
            r *= 10;
            mp *= 10;
            mm *= 10;
            q = (int)(r >> t);
            r &= mask;
            low = even ? r <= mm : r < mm;
            high = even ? r + mp >= one : r + mp > one;
            if (!low && !high) {
                if (nd == 0 && q == 0)
                    point--; /* a leading zero of 0.000ddd */
                else
                    digits[nd++] = (char)('0' + q);
                continue;
            }
            {
                u128 twice = r << 1;
                int c = twice < one ? -1 : twice > one ? 1 : 0;
                digits[nd++] = (char)('0' + final_digit(q, low, high, c));
            }
            break;
        }
        *n = point;
        return nd;
    }
    /* Integer result: its digits with trailing zeros folded into n. */
    nd = u64_digits(ip, digits);
    *n = nd;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    return nd;
}

/* ---- integers from 2^53 to 2^113 ------------------------------------------ */

/* v = f * 2^e with e in [1, 60]: an integer whose neighbours are 2^e apart,
 * so its last digits are free.  Scaled by 4 (at a power of two the lower end
 * of the interval is a quarter unit away), the largest p with a multiple of
 * 10^p inside the interval gives the shortest form.  Having a multiple of
 * 10^(p+1) inside implies having one of 10^p, so p is searched upward from
 * a start that is surely not past the answer (the answer has at most 17
 * significant digits). */
static int digits_int(uint64_t f, int e, int lower_closer, char *digits, int *n)
{
    const int even = (f & 1) == 0;
    const u128 V = (u128)f << (e + 2), mp = (u128)1 << (e + 1);
    const u128 lo = V - (lower_closer ? (u128)1 << e : mp), hi = V + mp;
    /* v < 2^(53+e) has at most floor((53+e) log10 2) + 1 digits and at
     * least floor((52+e) log10 2) + 1 */
    int low_digits = (int)((52 + e) * 0.30102999566398114) + 1;
    int p = low_digits - 17 > 1 ? low_digits - 17 : 1, best_p = 0, nd;
    u128 pow = 4, best = 0;

    for (int i = 0; i < p; i++)
        pow *= 10;
    for (; p <= 36; p++, pow *= 10) {
        u128 q = V / pow, c1 = q * pow, c2 = c1 + pow;
        int ok1 = even ? c1 >= lo : c1 > lo;
        int ok2 = even ? c2 <= hi : c2 < hi;
        if (!ok1 && !ok2)
            break;
        best_p = p;
        if (ok1 && ok2) {
            u128 d1 = V - c1, d2 = c2 - V;
            best = d1 < d2 ? q : d2 < d1 ? q + 1 : (q % 2 == 0 ? q : q + 1);
        } else {
            best = ok1 ? q : q + 1;
        }
    }
    if (best_p == 0) /* no digit can go: v itself, below 2^56 here */
        best = V >> 2;
    nd = u64_digits((uint64_t)best, digits);
    *n = nd + best_p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    return nd;
}

/* ---- exact path: big integers ------------------------------------------- */

/* Enough for r = 4f * 10^324 (about 2^1133) times 10, with room to spare. */
#define BN_LIMBS 40

typedef struct {
    uint32_t d[BN_LIMBS]; /* little-endian */
    int n;                /* limbs in use; d[n-1] != 0 unless n == 0 */
} bn;

static void bn_trim(bn *a)
{
    while (a->n > 0 && a->d[a->n - 1] == 0)
        a->n--;
}

static void bn_set(bn *a, uint64_t v)
{
    a->d[0] = (uint32_t)v;
    a->d[1] = (uint32_t)(v >> 32);
    a->n = 2;
    bn_trim(a);
}

static void bn_mul_small(bn *a, uint32_t m)
{
    uint64_t carry = 0;
    for (int i = 0; i < a->n; i++) {
        uint64_t x = (uint64_t)a->d[i] * m + carry;
        a->d[i] = (uint32_t)x;
        carry = x >> 32;
    }
    if (carry)
        a->d[a->n++] = (uint32_t)carry;
}

static void bn_mul_pow10(bn *a, int k)
{
    while (k >= 9) {
        bn_mul_small(a, 1000000000u);
        k -= 9;
    }
    {
        uint32_t m = 1;
        while (k-- > 0)
            m *= 10;
        if (m > 1)
            bn_mul_small(a, m);
    }
}

static void bn_shl(bn *a, int bits)
{
    int limbs = bits / 32, sh = bits % 32;
    if (a->n == 0)
        return;
    if (sh) {
        uint32_t carry = 0;
        for (int i = 0; i < a->n; i++) {
            uint32_t x = a->d[i];
            a->d[i] = (x << sh) | carry;
            carry = x >> (32 - sh);
        }
        if (carry)
            a->d[a->n++] = carry;
    }
    if (limbs) {
        for (int i = a->n - 1; i >= 0; i--)
            a->d[i + limbs] = a->d[i];
        for (int i = 0; i < limbs; i++)
            a->d[i] = 0;
        a->n += limbs;
    }
}

static int bn_cmp(const bn *a, const bn *b)
{
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--)
        if (a->d[i] != b->d[i])
            return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

static void bn_add(bn *r, const bn *a, const bn *b)
{
    const bn *x = a->n >= b->n ? a : b, *y = a->n >= b->n ? b : a;
    uint64_t carry = 0;
    int i;
    for (i = 0; i < x->n; i++) {
        uint64_t s = (uint64_t)x->d[i] + (i < y->n ? y->d[i] : 0) + carry;
        r->d[i] = (uint32_t)s;
        carry = s >> 32;
    }
    r->n = x->n;
    if (carry)
        r->d[r->n++] = (uint32_t)carry;
}

/* a -= b; requires a >= b. */
static void bn_sub(bn *a, const bn *b)
{
    int64_t borrow = 0;
    for (int i = 0; i < a->n; i++) {
        int64_t s = (int64_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        borrow = s < 0;
        a->d[i] = (uint32_t)(s + (borrow ? ((int64_t)1 << 32) : 0));
    }
    bn_trim(a);
}

static int digits_exact(double v, uint64_t f, int e, int lower_closer,
                        char *digits, int *n)
{
    const int even = (f & 1) == 0;
    bn r, s, mp, mm, t;
    int k, nd = 0;

    /* v = r / s; the interval is [(r - mm) / s, (r + mp) / s]. */
    bn_set(&r, f);
    bn_set(&s, 1);
    bn_set(&mp, 1);
    bn_set(&mm, 1);
    if (e >= 0) {
        bn_shl(&r, e + (lower_closer ? 2 : 1));
        bn_shl(&s, lower_closer ? 2 : 1);
        bn_shl(&mp, e + (lower_closer ? 1 : 0));
        bn_shl(&mm, e);
    } else {
        bn_shl(&r, lower_closer ? 2 : 1);
        bn_shl(&s, (lower_closer ? 2 : 1) - e);
        if (lower_closer)
            bn_shl(&mp, 1);
    }

    /* Scale by 10^k so that the high end of the interval is just below 1.
     * The estimate is exact or one too small (Burger & Dybvig); the loops
     * below correct either direction. */
    k = (int)ceil(log10(v) - 1e-10);
    if (k >= 0) {
        bn_mul_pow10(&s, k);
    } else {
        bn_mul_pow10(&r, -k);
        bn_mul_pow10(&mp, -k);
        bn_mul_pow10(&mm, -k);
    }
    for (;;) {
        int c;
        bn_add(&t, &r, &mp);
        c = bn_cmp(&t, &s);
        if (even ? c >= 0 : c > 0) {
            bn_mul_small(&s, 10);
            k++;
            continue;
        }
        bn_mul_small(&t, 10);
        c = bn_cmp(&t, &s);
        if (even ? c < 0 : c <= 0) {
            bn_mul_small(&r, 10);
            bn_mul_small(&mp, 10);
            bn_mul_small(&mm, 10);
            k--;
            continue;
        }
        break;
    }

    for (;;) {
        int q = 0, low, high, c;
        bn_mul_small(&r, 10);
        bn_mul_small(&mp, 10);
        bn_mul_small(&mm, 10);
        while (bn_cmp(&r, &s) >= 0) {
            bn_sub(&r, &s);
            q++;
        }
        c = bn_cmp(&r, &mm);
        low = even ? c <= 0 : c < 0;
        bn_add(&t, &r, &mp);
        c = bn_cmp(&t, &s);
        high = even ? c >= 0 : c > 0;
        if (!low && !high) {
            digits[nd++] = (char)('0' + q);
            continue;
        }
        bn_add(&t, &r, &r);
        digits[nd++] = (char)('0' + final_digit(q, low, high, bn_cmp(&t, &s)));
        break;
    }
    *n = k;
    return nd;
}

size_t tg_number_format(double d, char out[TG_NUMBER_BUF])
{
    uint64_t bits, frac, f;
    int bexp, e, nd, n, lower_closer;
    char digits[40];

    if (d != d || d - d != 0) { /* NaN or infinite */
        out[0] = '\0';
        return 0;
    }
    if (d == 0) { /* both zeros: ECMAScript prints -0 as "0" */
        out[0] = '0';
        out[1] = '\0';
        return 1;
    }
    memcpy(&bits, &d, sizeof bits);
    frac = bits & (((uint64_t)1 << 52) - 1);
    bexp = (int)((bits >> 52) & 0x7ff);
    if (bexp == 0) {
        f = frac;
        e = -1074;
    } else {
        f = frac | ((uint64_t)1 << 52);
        e = bexp - 1075;
    }
    /* The gap below is half the gap above at a power of two (but not at the
     * smallest normal exponent, where subnormals keep the spacing). */
    lower_closer = frac == 0 && bexp > 1;
    if (bexp != 0 && e >= -116 && e <= 0)
        nd = digits_fast(f, e, lower_closer, digits, &n);
    else if (e >= 1 && e <= 60)
        nd = digits_int(f, e, lower_closer, digits, &n);
    else
        nd = digits_exact(d < 0 ? -d : d, f, e, lower_closer, digits, &n);
    return tg_number_layout(out, d < 0, digits, nd, n);
}

/* ---- parsing ----------------------------------------------------------- */

static const double exact_pow10[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Clinger's fast path: with at most 19 significant digits w <= 2^53 and a
 * decimal exponent within +-22, w and 10^|x| are exact doubles and one IEEE
 * multiply or divide rounds correctly.  Returns 1 when it applied. */
static int parse_fast(const char *s, const char *end, double *out)
{
    uint64_t w = 0;
    int ndig = 0, scale = 0, neg = 0;
    long x = 0;

    if (*s == '-') {
        neg = 1;
        s++;
    }
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (ndig == 0 && *s == '0')
            continue;
        if (++ndig > 19)
            return 0;
        w = w * 10 + (uint64_t)(*s - '0');
    }
    if (s < end && *s == '.') {
        for (s++; s < end && *s >= '0' && *s <= '9'; s++) {
            scale--;
            if (ndig == 0 && *s == '0')
                continue;
            if (++ndig > 19)
                return 0;
            w = w * 10 + (uint64_t)(*s - '0');
        }
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        int xneg = 0;
        s++;
        if (*s == '+' || *s == '-')
            xneg = *s++ == '-';
        for (; s < end; s++) {
            if (x > 100000)
                return 0; /* leave absurd exponents to strtod */
            x = x * 10 + (*s - '0');
        }
        if (xneg)
            x = -x;
    }
    x += scale;
    if (w > ((uint64_t)1 << 53) || x < -22 || x > 22)
        return 0;
    {
        double v = (double)w;
        v = x < 0 ? v / exact_pow10[-x] : v * exact_pow10[x];
        *out = neg ? -v : v;
    }
    return 1;
}

int tg_number_parse(tg_engine_t *e, const char *text, size_t len, double *out)
{
    double v;
    if (parse_fast(text, text + len, out))
        return TG_OK;
    /* strtod_l needs a terminated string.  Short tokens are copied; a long
     * token is read in place from the parser's NUL-terminated copy of the
     * input: it cannot be "0" or "-0", so the byte after it cannot turn it
     * into a hex float, and strtod stops at the token's end. */
    if (len < 64) {
        char tmp[64];
        memcpy(tmp, text, len);
        tmp[len] = '\0';
        v = strtod_l(tmp, NULL, e->c_locale);
    } else {
        v = strtod_l(text, NULL, e->c_locale);
    }
    if (v - v != 0) /* overflowed to infinity */
        return TG_E_NUMBER_RANGE;
    *out = v;
    return TG_OK;
}
