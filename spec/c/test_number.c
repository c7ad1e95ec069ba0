/*
 * test_number.c -- ECMAScript number formatting and locale-free parsing.
 *
 *  1. every row of spec/data/numbers.tsv;
 *  2. an independent oracle built on glibc's correctly rounded printf and
 *     strtod: for random doubles (all exponents, and the fast-path range
 *     separately) the shortest round-tripping digits, nearest first, must
 *     equal ours;
 *  3. formatting and parsing do not change under a comma-decimal locale;
 *  4. parsing (Clinger, Eisel-Lemire, strtod_l fallback) against glibc's
 *     strtod_l on millions of random decimal literals, and on the exact
 *     midpoints between neighbouring doubles (ties to even) and their near
 *     misses, written out in full and cut to 17..25 digits;
 *  5. the canonical text of every such literal is tg_number_format of its
 *     double (the parser's "already canonical" shortcut agrees).
 */
#define _GNU_SOURCE
#include "tap.h"
#include "toolgate.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static double from_bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* xorshift64*: reproducible randomness without libc state. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Oracle: digits and decimal point position (value = 0.D x 10^n) of the
 * ECMAScript choice, found by brute force over precisions 1..17. */
static int oracle(double d, char *digits, int *n, locale_t c)
{
    char buf[64], cand[64];
    for (int p = 1; p <= 17; p++) {
        char D[32];
        int x, nd = 0, found = 0;
        snprintf(buf, sizeof buf, "%.*e", p - 1, fabs(d));
        /* digits (skipping the radix character, whatever the locale) then e */
        char *s = buf;
        while (*s && *s != 'e') {
            if (*s >= '0' && *s <= '9')
                D[nd++] = *s;
            s++;
        }
        D[nd] = '\0';
        x = atoi(s + 1);
        /* D itself (nearest), then D-1 and D+1 */
        for (int delta = 0; delta <= 2 && !found; delta++) {
            long long v = atoll(D) + (delta == 0 ? 0 : delta == 1 ? -1 : 1);
            char V[32];
            if (v <= 0)
                continue;
            snprintf(V, sizeof V, "%lld", v);
            if ((int)strlen(V) != p)
                continue; /* shorter/longer: another precision's business */
            snprintf(cand, sizeof cand, "%se%d", V, x - p + 1);
            if (strtod_l(cand, NULL, c) == fabs(d)) {
                int len = p;
                while (len > 1 && V[len - 1] == '0')
                    len--;
                memcpy(digits, V, (size_t)len);
                digits[len] = '\0';
                *n = x + 1;
                found = 1;
            }
        }
        if (found)
            return 1;
    }
    return 0;
}

/* Parses our formatted output back into digits and n (value = 0.D x 10^n),
 * so that it can be compared with the oracle whatever the layout. */
static void decompose(const char *s, char *digits, int *n)
{
    int nd = 0, ipart = -1, x = 0, start = 0;
    const char *p = s + (*s == '-');
    char m[40];
    for (; *p && *p != 'e'; p++) {
        if (*p == '.')
            ipart = nd;
        else
            m[nd++] = *p;
    }
    if (*p == 'e')
        x = atoi(p + 1);
    if (ipart < 0)
        ipart = nd;
    while (start < nd - 1 && m[start] == '0') { /* leading zeros of 0.000ddd */
        start++;
        ipart--;
    }
    while (nd > start + 1 && m[nd - 1] == '0')
        nd--;
    memcpy(digits, m + start, (size_t)(nd - start));
    digits[nd - start] = '\0';
    *n = ipart + x;
}

static int check_random(int count, int fast_range, locale_t c)
{
    int bad = 0;
    for (int i = 0; i < count; i++) {
        uint64_t b = rnd();
        double d;
        char out[TG_NUMBER_BUF], od[32], gd[32];
        int on, gn;
        if (fast_range) /* biased exponent 1075-116 .. 1075: values below 2^53 */
            b = (b & 0x800fffffffffffffull) | ((uint64_t)(959 + rnd() % 117) << 52);
        d = from_bits(b);
        if (isnan(d) || isinf(d) || d == 0)
            continue;
        tg_number_format(d, out);
        if (strtod_l(out, NULL, c) != d) {
            if (bad++ < 5)
                printf("# %016llx: '%s' does not round-trip\n", (unsigned long long)b, out);
            continue;
        }
        if (!oracle(d, od, &on, c)) {
            if (bad++ < 5)
                printf("# %016llx: oracle found nothing\n", (unsigned long long)b);
            continue;
        }
        decompose(out, gd, &gn);
        if (strcmp(od, gd) != 0 || on != gn) {
            if (bad++ < 5)
                printf("# %016llx: ours '%s' (digits %s n %d), oracle digits %s n %d\n",
                       (unsigned long long)b, out, gd, gn, od, on);
        }
    }
    return bad;
}

/* Doubles of one kind, for the oracle: kind 0 subnormal, 1 the two
 * ends of the exponent range, 2 integers from 2^53 to 2^64, 3 significands
 * with few bits set or cleared (ties and boundaries in the shortest-digit
 * search). */
static double special_double(int kind)
{
    uint64_t m = rnd() & 0xFFFFFFFFFFFFFull, e;
    switch (kind) {
    case 0:
        e = 0;
        break;
    case 1:
        e = rnd() % 2 ? rnd() % 40 + 1 : 2046 - rnd() % 40;
        break;
    case 2:
        e = 1075 + 53 + rnd() % 11 - 1 - 52;
        break; /* 2^53 .. 2^64 */
    default:
        e = 1 + rnd() % 2046;
        m = rnd() % 2 ? m & (rnd() & 0xF) : (0xFFFFFFFFFFFFFull ^ (rnd() & 0xF));
        break;
    }
    return from_bits((e << 52) | m);
}

static int check_special(int count, locale_t c)
{
    int bad = 0;
    for (int i = 0; i < count; i++) {
        double d = special_double(i % 4);
        char out[TG_NUMBER_BUF], od[32], gd[32];
        int on, gn;
        if (d == 0)
            continue;
        tg_number_format(d, out);
        decompose(out, gd, &gn);
        if (strtod_l(out, NULL, c) != d || !oracle(d, od, &on, c) || strcmp(od, gd) != 0 ||
            on != gn) {
            if (bad++ < 5)
                printf("# %.17g: ours '%s'\n", d, out);
        }
    }
    return bad;
}

/* ---- parsing ------------------------------------------------------------ */

/* Parses lit as a JSON document; compares its double with strtod_l's (and
 * NUMBER_OUT_OF_RANGE with strtod's infinity), and its canonical form with
 * tg_number_format of that double.  Returns 1 when all agree. */
static int parse_agrees(tg_engine_t *e, tg_buf_t *b, const char *lit, locale_t c)
{
    double want = strtod_l(lit, NULL, c), got;
    char fmt[TG_NUMBER_BUF];
    tg_doc_t *doc;
    tg_error_t err;
    int rc = tg_parse(e, lit, strlen(lit), &doc, &err);
    if (isinf(want)) {
        if (rc == TG_OK)
            tg_doc_free(doc);
        return rc == TG_E_NUMBER_RANGE;
    }
    if (rc != TG_OK)
        return 0;
    got = tg_num(tg_doc_root(doc));
    tg_doc_free(doc);
    if (memcmp(&got, &want, sizeof got) != 0)
        return 0;
    tg_number_format(want, fmt);
    tg_buf_reset(b);
    return tg_canon(e, lit, strlen(lit), b, &err) == TG_OK && b->len == strlen(fmt) &&
           memcmp(b->data, fmt, b->len) == 0;
}

/* A random JSON number: 1 to 40 digits with the point anywhere (or none),
 * zeros sprinkled in, sometimes leading zeros after "0.", and an exponent
 * from anywhere or near the ends of the double range. */
static void random_literal(char *lit, int digits17)
{
    int p = 0,
        nd = digits17 ? 16 + (int)(rnd() % 2) : 1 + (int)(rnd() % (rnd() % 4 == 0 ? 40 : 20));
    int ip = rnd() % 3 == 0 ? nd : (int)(rnd() % (nd + 1)); /* integer digits */
    if (rnd() % 2)
        lit[p++] = '-';
    if (ip == 0)
        lit[p++] = '0';
    for (int k = 0; k < ip; k++)
        lit[p++] = (char)('0' + (k == 0 ? 1 + rnd() % 9 : rnd() % 3 == 0 ? 0 : rnd() % 10));
    if (nd > ip) {
        lit[p++] = '.';
        if (ip == 0 && rnd() % 4 == 0)
            for (int k = (int)(rnd() % 8); k > 0; k--)
                lit[p++] = '0';
        for (int k = ip; k < nd; k++)
            lit[p++] = (char)('0' + (rnd() % 3 == 0 ? 0 : rnd() % 10));
    }
    if (digits17 || rnd() % 2) {
        int x;
        switch (rnd() % 4) {
        case 0:
            x = (int)(rnd() % 50) - 25;
            break;
        case 1:
            x = (int)(rnd() % 700) - 350;
            break;
        case 2:
            x = 290 + (int)(rnd() % 40) - ip;
            break;
        default:
            x = -300 - (int)(rnd() % 50) - ip;
            break;
        }
        p += snprintf(lit + p, 16, "%s%d", rnd() % 2 ? "e" : "E", x);
    }
    lit[p] = '\0';
}

/* The exact decimal digits of m x 2^k (m > 0): a digit string and the
 * power of ten of its last digit.  Base-10^9 limbs; enough for any
 * midpoint between doubles (under 800 digits). */
static int exact_decimal(uint64_t m, int k, char *digits, int *exp10)
{
    uint32_t limb[100];
    int n = 0, len = 0;
    char tmp[1000];
    while (m) {
        limb[n++] = (uint32_t)(m % 1000000000u);
        m /= 1000000000u;
    }
    /* m x 2^k = m x 5^-k x 10^k for k < 0 */
    for (int i = 0; i < (k < 0 ? -k : k); i++) {
        uint64_t carry = 0;
        for (int j = 0; j < n; j++) {
            uint64_t x = (uint64_t)limb[j] * (k < 0 ? 5 : 2) + carry;
            limb[j] = (uint32_t)(x % 1000000000u);
            carry = x / 1000000000u;
        }
        if (carry)
            limb[n++] = (uint32_t)carry;
    }
    for (int j = 0; j < n; j++) /* little-endian digits */
        for (int d = 0; d < 9; d++, limb[j] /= 10)
            tmp[len++] = (char)('0' + limb[j] % 10);
    while (len > 1 && tmp[len - 1] == '0')
        len--;
    for (int i = 0; i < len; i++)
        digits[i] = tmp[len - 1 - i];
    digits[len] = '\0';
    *exp10 = k < 0 ? k : 0;
    return len;
}

/* Writes digits[0..n) (times 10^exp10, shifted by the digits dropped) as
 * "d.ddde<x>", the last digit moved by delta. */
static int cut_literal(char *lit, const char *digits, int len, int n, int exp10, int delta)
{
    char d[1000];
    int i;
    if (n > len)
        n = len;
    memcpy(d, digits, (size_t)n);
    for (i = n - 1; delta && i >= 0; i--) { /* add delta (+1 or -1) to the last digit */
        int v = d[i] - '0' + delta;
        delta = v < 0 ? -1 : v > 9 ? 1 : 0;
        d[i] = (char)('0' + (v + 10) % 10);
    }
    if (delta || d[0] == '0')
        return 0; /* carried out of or down to the leading digit: skip */
    i = snprintf(lit, 4, "%c.", d[0]);
    memcpy(lit + i, d + 1, (size_t)(n - 1));
    i += n - 1;
    if (n == 1)
        lit[i++] = '0';
    snprintf(lit + i, 16, "e%d", exp10 + (len - n) + n - 1);
    return 1;
}

/* Midpoints between random doubles and their successors, in full and cut
 * to 17..25 digits (and one unit either side): where rounding is hardest. */
static int check_ties(tg_engine_t *e, tg_buf_t *b, int count, locale_t c)
{
    static char digits[1000], lit[1100];
    int bad = 0;
    for (int i = 0; i < count; i++) {
        uint64_t bits = ((rnd() % 2046) << 52) | (rnd() & 0xFFFFFFFFFFFFFull);
        int len, x, cuts[] = {17, 18, 19, 20, 21, 25, 1000};
        uint64_t m = (bits & 0xFFFFFFFFFFFFFull) | (bits >> 52 ? (uint64_t)1 << 52 : 0);
        int k = bits >> 52 ? (int)(bits >> 52) - 1075 : -1074;
        if (i % 8 == 0) { /* subnormal */
            m = rnd() & 0xFFFFFFFFFFFFFull;
            k = -1074;
        }
        if (m == 0)
            continue;
        len = exact_decimal(2 * m + 1, k - 1, digits, &x); /* (m + 1/2) x 2^k */
        for (size_t ci = 0; ci < sizeof cuts / sizeof cuts[0]; ci++)
            for (int delta = -1; delta <= 1; delta++)
                if (cut_literal(lit, digits, len, cuts[ci], x, delta) &&
                    !parse_agrees(e, b, lit, c) && bad++ < 5)
                    printf("# tie literal %.60s... disagrees\n", lit);
    }
    return bad;
}

static void table(tg_engine_t *e, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int rows = 0, bad = 0;
    if (!tap_ok(f != NULL, "numbers.tsv opens")) {
        printf("#   path: %s\n", path);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t'), *nl;
        char got[TG_NUMBER_BUF + 64];
        size_t glen;
        if (line[0] == '#' || !tab)
            continue;
        *tab = '\0';
        if ((nl = strchr(tab + 1, '\n')))
            *nl = '\0';
        rows++;
        if (strncmp(line, "0x", 2) == 0) {
            glen = tg_number_format(from_bits(strtoull(line + 2, NULL, 16)), got);
            if (glen == 0)
                strcpy(got, "ERROR");
        } else {
            tg_buf_t b;
            tg_error_t err;
            tg_buf_init(&b, e);
            if (tg_canon(e, line, strlen(line), &b, &err) == TG_OK)
                snprintf(got, sizeof got, "%.*s", (int)b.len, b.data);
            else
                strcpy(got, "ERROR");
            tg_buf_free(&b);
        }
        if (strcmp(got, tab + 1) != 0) {
            bad++;
            printf("# %s: got %s, want %s\n", line, got, tab + 1);
        }
    }
    fclose(f);
    tap_ok(rows > 80 && bad == 0, "every row of numbers.tsv");
}

/* Decimals of 1 to 15 significant digits (what tg_number_format finds
 * without Ryu), from 1e-9 to 1e17, each as strtod_l reads it: the oracle's
 * digits, and those of its neighbours on either side. */
static int check_short(int count, locale_t c)
{
    int bad = 0;
    for (int i = 0; i < count; i++) {
        char lit[64], out[TG_NUMBER_BUF], od[32], gd[32];
        int digits = 1 + (int)(rnd() % 15), on, gn;
        uint64_t m = 0;
        double d;
        for (int k = 0; k < digits; k++)
            m = m * 10 + (k == 0 ? 1 + rnd() % 9 : rnd() % 10);
        snprintf(lit, sizeof lit, "%llue%d", (unsigned long long)m, (int)(rnd() % 27) - 9 - digits);
        d = strtod_l(lit, NULL, c);
        if (i % 3)
            d = nextafter(d, i % 3 == 1 ? 0 : 1e300);
        if (i % 5 == 0)
            d = -d;
        tg_number_format(d, out);
        if (!oracle(d, od, &on, c)) {
            if (bad++ < 5)
                printf("# %s: oracle found nothing\n", lit);
            continue;
        }
        decompose(out, gd, &gn);
        if (strtod_l(out, NULL, c) != d || strcmp(od, gd) != 0 || on != gn) {
            if (bad++ < 5)
                printf("# %s (%.17g): ours '%s', oracle digits %s n %d\n", lit, d, out, od, on);
        }
    }
    return bad;
}

int main(void)
{
    const char *data = getenv("TG_SPEC_DATA");
    char path[512];
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);

    snprintf(path, sizeof path, "%s/numbers.tsv", data ? data : "spec/data");
    table(e, path);

    tap_ok(check_random(40000, 0, c) == 0,
           "random doubles, all exponents: shortest, nearest, round-trip");
    tap_ok(check_random(40000, 1, c) == 0,
           "random doubles below 2^53 (fast path): shortest, nearest, round-trip");
    tap_ok(check_short(200000, c) == 0,
           "decimals of up to 15 digits and their neighbours: shortest, nearest, round-trip");
    tap_ok(check_special(80000, c) == 0,
           "subnormals, extreme exponents, integers to 2^64, sparse significands: as the oracle");

    /* parsing against strtod_l */
    {
        tg_buf_t b;
        char lit[128];
        int bad = 0, bad17 = 0;
        tg_buf_init(&b, e);
        for (int i = 0; i < 1000000; i++) {
            random_literal(lit, 0);
            if (!parse_agrees(e, &b, lit, c) && bad++ < 5)
                printf("# literal %s disagrees\n", lit);
        }
        tap_ok(bad == 0, "1,000,000 random literals: strtod_l's double, canonical text of it");
        for (int i = 0; i < 1000000; i++) {
            random_literal(lit, 1);
            if (!parse_agrees(e, &b, lit, c) && bad17++ < 5)
                printf("# literal %s disagrees\n", lit);
        }
        tap_ok(bad17 == 0, "1,000,000 random 16- and 17-digit decimals: strtod_l's double");
        tap_ok(
            check_ties(e, &b, 20000, c) == 0,
            "midpoints between doubles, in full and cut to 17..25 digits, +-1: strtod_l's double");
        tg_buf_free(&b);
    }

    /* every power of ten and its neighbours */
    {
        int bad = 0;
        for (int k = -323; k <= 308; k++) {
            char lit[32], out[TG_NUMBER_BUF];
            double d;
            snprintf(lit, sizeof lit, "1e%d", k);
            d = strtod_l(lit, NULL, c);
            for (int s = -2; s <= 2; s++) {
                double x = d;
                for (int j = 0; j < (s < 0 ? -s : s); j++)
                    x = nextafter(x, s < 0 ? 0 : INFINITY);
                if (x == 0 || isinf(x))
                    continue;
                tg_number_format(x, out);
                if (strtod_l(out, NULL, c) != x)
                    bad++;
            }
            tg_number_format(d, out);
            {
                char want[32];
                if (k >= 0 && k <= 20) {
                    want[0] = '1';
                    memset(want + 1, '0', (size_t)k);
                    want[k + 1] = '\0';
                } else if (k < 0 && k > -7) {
                    snprintf(want, sizeof want, "0.%0*d", -k, 1);
                } else {
                    snprintf(want, sizeof want, "1e%c%d", k < 0 ? '-' : '+', k < 0 ? -k : k);
                }
                if (strcmp(out, want) != 0 && bad++ < 5)
                    printf("# 1e%d: got %s want %s\n", k, out, want);
            }
        }
        tap_ok(bad == 0, "powers of ten 1e-323..1e308 and two neighbours each way");
    }

    /* A comma-decimal locale must change nothing.  mk/run-tests.sh compiles
     * de_DE.UTF-8 into $LOCPATH; the first check proves it really uses a
     * decimal comma, so the rest cannot pass vacuously. */
    {
        locale_t comma = newlocale(LC_ALL_MASK, "de_DE.UTF-8", (locale_t)0);
        char probe[16] = "";
        if (comma != (locale_t)0) {
            uselocale(comma);
            snprintf(probe, sizeof probe, "%.1f", 1.5);
        }
        if (tap_ok(strcmp(probe, "1,5") == 0, "de_DE.UTF-8 locale is installed and writes 1,5")) {
            char out[TG_NUMBER_BUF];
            tg_buf_t b;
            tg_buf_init(&b, e);
            tg_number_format(1234.5, out);
            tap_is_mem(out, strlen(out), "1234.5", "format under a decimal-comma locale");
            tap_ok(tg_canon(e, "[1.5,2.25e-7,0.30000000000000004,123456789.125]", 47, &b, NULL) ==
                       TG_OK,
                   "parse under a decimal-comma locale");
            tap_is_mem(b.data, b.len, "[1.5,2.25e-7,0.30000000000000004,123456789.125]",
                       "canonical numbers under a decimal-comma locale");
            tg_buf_free(&b);
        }
        uselocale(LC_GLOBAL_LOCALE);
        if (comma != (locale_t)0)
            freelocale(comma);
    }

    tg_engine_free(e);
    freelocale(c);
    return tap_done();
}
