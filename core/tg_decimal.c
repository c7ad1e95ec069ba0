/*
 * tg_decimal.c -- exact arithmetic on JSON number texts.
 *
 * A double cannot tell 0.3 from 3 * 0.1, nor 2^53 + 1 from 2^53, but a
 * schema's question about a number (is it an integer? is it one of these?
 * is it a multiple of 0.01?) is about the decimal the author wrote.  The
 * DOM keeps every number's source text, so these answer on the text:
 * a number is read as +/- M x 10^exp with M a run of significant digits
 * (no leading or trailing zeros), and nothing is ever converted to binary.
 */
#include "tg_internal.h"

__extension__ typedef unsigned __int128 u128;

/* Exponents beyond this are clamped: the parser already refused any
 * magnitude outside a double, so a clamped exponent only ever belongs to
 * zero or to a value whose digits sit far behind the decimal point. */
#define EXP_CLAMP 1000000000000000LL

void tg_decimal_init(tg_decimal *d, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    const char *first = NULL, *last = NULL;
    int64_t frac_digits = 0, trailing = 0, e = 0;
    int in_frac = 0;

    d->negative = 0;
    if (p < end && *p == '-') {
        d->negative = 1;
        p++;
    }
    d->n_digits = 0;
    for (; p < end && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            in_frac = 1;
            continue;
        }
        if (in_frac)
            frac_digits++;
        if (*p != '0') {
            if (!first)
                first = p;
            last = p;
            trailing = 0;
        } else if (first) {
            trailing++;
        }
        if (first)
            d->n_digits++;
    }
    if (p < end) {
        int neg = 0;
        p++;
        if (*p == '+' || *p == '-')
            neg = *p++ == '-';
        for (; p < end; p++)
            if (e < EXP_CLAMP)
                e = e * 10 + (*p - '0');
        if (neg)
            e = -e;
    }
    d->first = first;
    d->last = last;
    d->n_digits -= (size_t)trailing;
    d->exp = first ? e - frac_digits + trailing : 0;
}

int tg_decimal_is_integer(const tg_decimal *d)
{
    return !d->first || d->exp >= 0;
}

int tg_decimal_equal(const tg_decimal *a, const tg_decimal *b)
{
    const char *p, *q;
    if (!a->first || !b->first)
        return !a->first && !b->first; /* 0 == -0 */
    if (a->negative != b->negative || a->n_digits != b->n_digits || a->exp != b->exp)
        return 0;
    for (p = a->first, q = b->first; p <= a->last; p++, q++) {
        if (*p == '.')
            p++;
        if (*q == '.')
            q++;
        if (*p != *q)
            return 0;
    }
    return 1;
}

/* The digit at position i (0 = the first significant one) of d's run, or
 * '0' past its end. */
static char digit_at(const char **p, const tg_decimal *d)
{
    if (!*p || *p > d->last)
        return '0';
    if (**p == '.')
        (*p)++;
    return *(*p)++;
}

/* Compares |a| and |b|: by the position of the leading digit first
 * (n_digits + exp), then digit by digit; both runs have no trailing zeros,
 * so the one with digits left over is the larger. */
static int compare_magnitude(const tg_decimal *a, const tg_decimal *b)
{
    int64_t la = (int64_t)a->n_digits + a->exp, lb = (int64_t)b->n_digits + b->exp;
    const char *p = a->first, *q = b->first;
    size_t n = a->n_digits > b->n_digits ? a->n_digits : b->n_digits;
    if (la != lb)
        return la < lb ? -1 : 1;
    for (size_t i = 0; i < n; i++) {
        char x = digit_at(&p, a), y = digit_at(&q, b);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

int tg_decimal_compare(const tg_decimal *a, const tg_decimal *b)
{
    int sa = !a->first ? 0 : a->negative ? -1 : 1;
    int sb = !b->first ? 0 : b->negative ? -1 : 1;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (sa == 0)
        return 0;
    return sa * compare_magnitude(a, b);
}

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m)
{
    return (uint64_t)((u128)a * b % m);
}

static uint64_t pow10_mod(int64_t k, uint64_t m)
{
    uint64_t r = 1 % m, base = 10 % m;
    while (k > 0) {
        if (k & 1)
            r = mulmod(r, base, m);
        base = mulmod(base, base, m);
        k >>= 1;
    }
    return r;
}

/* x = Mx 10^ex, d = Md 10^ed.  When ex < ed, x/d = Mx / (Md 10^(ed-ex))
 * needs Mx divisible by 10^(ed-ex), impossible for a digit run without
 * trailing zeros.  Otherwise x/d is an integer exactly when
 * Mx 10^(ex-ed) = 0 (mod Md), computed digit by digit and by fast
 * exponentiation, so neither the length of x nor the gap of exponents can
 * overflow anything. */
int tg_decimal_multiple(const tg_decimal *x, const tg_decimal *d)
{
    uint64_t m = 0, r = 0;
    const char *p;

    if (d->n_digits > TG_DECIMAL_EXACT_DIGITS)
        return -1;
    if (!x->first)
        return 1;
    for (p = d->first; p <= d->last; p++)
        if (*p != '.')
            m = m * 10 + (uint64_t)(*p - '0');
    if (x->exp < d->exp)
        return 0;
    for (p = x->first; p <= x->last; p++)
        if (*p != '.')
            r = (r * 10 + (uint64_t)(*p - '0')) % m; /* r < m < 10^18 */
    return mulmod(r, pow10_mod(x->exp - d->exp, m), m) == 0;
}
