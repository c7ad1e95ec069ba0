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

/* ---- the exact form -------------------------------------------------------- */

#define TAIL_DIGITS 18
#define TAIL_BASE 1000000000000000000LL /* 10^TAIL_DIGITS */

/* Writes |E| + a at w, for E's digits (len > TAIL_DIGITS, no leading zero)
 * and |a| < 2^34, so the sum is positive and has len - 1 to len + 1
 * digits; returns its length.  Only the last TAIL_DIGITS digits take part
 * in the sum; a carry or borrow runs on into the digits before them, which
 * are copied behind one guard digit '0' for a carry to land in. */
static size_t write_sum(char *w, const char *digits, size_t len, int64_t a)
{
    size_t head = len - TAIL_DIGITS, i, skip = 0;
    int64_t tail = 0;
    char t[20];
    int nt;

    for (i = head; i < len; i++)
        tail = tail * 10 + (digits[i] - '0');
    tail += a;
    w[0] = '0';
    memcpy(w + 1, digits, head);
    if (tail >= TAIL_BASE) {
        tail -= TAIL_BASE;
        for (i = head; w[i] == '9'; i--) /* stops at the guard at the latest */
            w[i] = '0';
        w[i]++;
    } else if (tail < 0) {
        tail += TAIL_BASE;
        for (i = head; w[i] == '0'; i--) /* stops at the head's first digit, not 0 */
            w[i] = '9';
        w[i]--;
    }
    while (skip <= head && w[skip] == '0')
        skip++;
    head = head + 1 - skip;
    memmove(w, w + skip, head);
    nt = tg_u64_text((uint64_t)tail, t);
    if (head) { /* the tail's leading zeros count now */
        memset(w + head, '0', (size_t)(TAIL_DIGITS - nt));
        head += (size_t)(TAIL_DIGITS - nt);
    }
    memcpy(w + head, t, (size_t)nt);
    return head + (size_t)nt;
}

int tg_decimal_write(tg_buf_t *out, const char *text, size_t len, tg_error_t *err)
{
    const char *end = text + len, *e, *dot, *x;
    tg_decimal d;
    tg_digits run;
    int64_t q, n;
    size_t xlen = 0, nd;
    int xneg = 0, rc;

    tg_decimal_init(&d, text, len);
    if (!d.first)
        return tg_buf_put(out, "0", 1, err); /* every spelling of zero, -0 included */
    for (e = text; e < end && *e != 'e' && *e != 'E'; e++)
        ;
    dot = memchr(text, '.', (size_t)(e - text));
    if (!dot)
        dot = e;
    run.a = d.first;
    run.na = d.n_digits;
    run.b = NULL;
    run.nb = 0;
    if (d.first < dot && dot < d.last) { /* the point splits the run */
        run.na = (size_t)(dot - d.first);
        run.b = dot + 1;
        run.nb = d.n_digits - run.na;
    }
    nd = d.n_digits;
    /* value = 0.D x 10^n with n = E + q: q digits of the run stand before
     * the point, or -q zeros between the point and the run */
    q = d.first < dot ? (int64_t)(dot - d.first) : -(int64_t)(d.first - dot - 1);
    x = e;
    if (e < end) {
        x = e + 1;
        if (*x == '+' || *x == '-')
            xneg = *x++ == '-';
        while (x + 1 < end && *x == '0')
            x++;
        xlen = (size_t)(end - x);
    }
    if (nd > SIZE_MAX - 32 - xlen)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "number too large to write");
    if ((rc = tg_buf_reserve(out, nd + 32 + xlen, err)) != TG_OK)
        return rc;
    if (xlen <= TAIL_DIGITS) { /* E < 10^18: n fits, whatever q */
        int64_t exp = 0;
        for (size_t i = 0; i < xlen; i++)
            exp = exp * 10 + (x[i] - '0');
        n = (xneg ? -exp : exp) + q;
        out->len += tg_number_layout(out->data + out->len, d.negative, &run, n);
        return TG_OK;
    }
    /* |E| >= 10^18 > |q - 1|: the scientific exponent E + q - 1 has E's
     * sign, and its magnitude is |E| +/- (q - 1), written digit by digit
     * (only a negative one reaches here: the parser refuses what overflows
     * a double, but the arithmetic does not depend on it) */
    out->len += tg_number_layout(out->data + out->len, d.negative, &run, TG_LAYOUT_EXP_TEXT);
    out->data[out->len++] = xneg ? '-' : '+';
    out->len += write_sum(out->data + out->len, x, xlen, xneg ? 1 - q : q - 1);
    return TG_OK;
}

/* ---- multiples ----------------------------------------------------------------- */

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
