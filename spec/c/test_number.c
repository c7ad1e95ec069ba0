/*
 * test_number.c -- ECMAScript number formatting and locale-free parsing.
 *
 *  1. every row of spec/data/numbers.tsv;
 *  2. an independent oracle built on glibc's correctly rounded printf and
 *     strtod: for random doubles (all exponents, and the fast-path range
 *     separately) the shortest round-tripping digits, nearest first, must
 *     equal ours;
 *  3. formatting and parsing do not change under a comma-decimal locale.
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

int main(void)
{
    const char *data = getenv("TG_SPEC_DATA");
    char path[512];
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, NULL);

    snprintf(path, sizeof path, "%s/numbers.tsv", data ? data : "spec/data");
    table(e, path);

    tap_ok(check_random(40000, 0, c) == 0, "random doubles, all exponents: shortest, nearest, round-trip");
    tap_ok(check_random(40000, 1, c) == 0, "random doubles below 2^53 (fast path): shortest, nearest, round-trip");

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
            tap_ok(tg_canon(e, "[1.5,2.25e-7,0.30000000000000004,123456789.125]", 47, &b, NULL) == TG_OK,
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
