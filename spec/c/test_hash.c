/*
 * test_hash.c -- the core's XXH3 hashes and their hex form, byte for byte
 * against references built here.  tg_hash128 and tg_hash64 against
 * XXH3_128bits and XXH3_64bits compiled right here with xxHash's portable
 * scalar loop (XXH_VECTOR = XXH_SCALAR): every length 0..4096 with fresh
 * random contents at several unaligned starts, and a few long inputs of
 * many blocks.  Whatever vector loop the core runs on this CPU must give
 * the scalar loop's value, and on a CPU with AVX2 that loop is AVX2's.  tg_hash128_hex, and the
 * portable renderer it falls back on without SSE2, against printf's "%016llx%016llx" on edge and
 * random values, each writing exactly TG_HASH_HEX bytes.
 */
#include "tg_internal.h" /* tg_hash_loop, tg_hash128_hex_portable; first: _GNU_SOURCE */
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>

/* The reference: static functions of this file only (XXH_INLINE_ALL), so
 * they cannot meet the core's copies at link time. */
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_SCALAR
#include <xxhash.h>

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void)
{
    /* splitmix64: a fixed seed, so a failure is the same on every run */
    uint64_t z = (rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void fill(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)next();
}

/* ---- XXH3-128 and XXH3-64 ------------------------------------------------ */

/* Starts off the buffer's (malloc'd, 16-aligned) start: every remainder of
 * 8, and past 16 and 32 so the vector loads see every alignment they care
 * about. */
static const size_t offsets[] = {0, 1, 2, 3, 4, 5, 6, 7, 13, 16, 31, 32, 33, 63};
#define N_OFFSETS (sizeof offsets / sizeof offsets[0])
#define MAX_LEN 4096

typedef struct {
    long bad;
    char first[160];
} misses;

static void miss(misses *m, const char *what, size_t len, size_t off)
{
    if (m->bad++ == 0)
        snprintf(m->first, sizeof m->first, "%s differs first at length %zu, start +%zu", what, len,
                 off);
}

/* Compares both hashes of p[0..len) with the reference into m[0] (128) and
 * m[1] (64). */
static void compare(const unsigned char *p, size_t len, size_t off, misses m[2])
{
    tg_hash128_t got;
    XXH128_hash_t want = XXH3_128bits(p, len);
    tg_hash128(p, len, &got);
    if (got.hi != want.high64 || got.lo != want.low64)
        miss(&m[0], "tg_hash128", len, off);
    if (tg_hash64(p, len) != XXH3_64bits(p, len))
        miss(&m[1], "tg_hash64", len, off);
}

static void report(const misses *m, const char *name)
{
    if (!tap_ok(m->bad == 0, name))
        printf("#   %ld lengths differ; %s\n", m->bad, m->first);
}

static void test_every_length(void)
{
    unsigned char *buf = malloc(MAX_LEN + 64);
    misses m[N_OFFSETS][2];
    char name[128];

    memset(m, 0, sizeof m);
    for (size_t len = 0; len <= MAX_LEN; len++) {
        fill(buf, MAX_LEN + 64); /* fresh contents for every length */
        for (size_t k = 0; k < N_OFFSETS; k++)
            compare(buf + offsets[k], len, offsets[k], m[k]);
    }
    for (size_t k = 0; k < N_OFFSETS; k++) {
        snprintf(name, sizeof name,
                 "XXH3-128: every length 0..%d from start +%zu is the portable loop's", MAX_LEN,
                 offsets[k]);
        report(&m[k][0], name);
        snprintf(name, sizeof name,
                 "XXH3-64: every length 0..%d from start +%zu is the portable loop's", MAX_LEN,
                 offsets[k]);
        report(&m[k][1], name);
    }
    free(buf);
}

/* Inputs of many 1 KiB blocks (where the accumulators are scrambled), and
 * ones ending just before and after a block or a 64-byte stripe. */
static void test_long(void)
{
    static const size_t lens[] = {
        1023, 1024, 1025, 4097, 65536 + 63, 100000, 102400, (1u << 20) + 1, 3000017,
    };
    size_t max = 3000017 + 64;
    unsigned char *buf = malloc(max);
    misses m[2];

    memset(m, 0, sizeof m);
    fill(buf, max);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (size_t k = 0; k < 3; k++)
            compare(buf + k * 7, lens[i], k * 7, m);
    report(&m[0], "XXH3-128 of long inputs (up to 3 MB) is the portable loop's");
    report(&m[1], "XXH3-64 of long inputs (up to 3 MB) is the portable loop's");
    free(buf);
}

/* ---- the hex form ----------------------------------------------------------- */

typedef void hex_fn(const tg_hash128_t *h, char out[TG_HASH_HEX]);

static long hex_mismatches(hex_fn *render, const tg_hash128_t *hs, size_t n)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        char want[TG_HASH_HEX], got[TG_HASH_HEX + 8];
        int ok;
        snprintf(want, sizeof want, "%016llx%016llx", (unsigned long long)hs[i].hi,
                 (unsigned long long)hs[i].lo);
        memset(got, 'Z', sizeof got);
        render(&hs[i], got);
        /* the digits, the NUL, and not a byte past them */
        ok = memcmp(got, want, TG_HASH_HEX) == 0;
        for (size_t j = TG_HASH_HEX; j < sizeof got; j++)
            ok = ok && got[j] == 'Z';
        if (!ok) {
            if (bad < 5)
                printf("#   %016llx %016llx: want %s, got %.32s\n", (unsigned long long)hs[i].hi,
                       (unsigned long long)hs[i].lo, want, got);
            bad++;
        }
    }
    return bad;
}

static void test_hex(void)
{
    enum {
        RANDOM = 200000,
        EDGES = 2 + 16 * 32 * 2
    };
    tg_hash128_t *hs = malloc((EDGES + RANDOM) * sizeof *hs);
    size_t n = 0;

    /* all zeros, all ones, and each nibble value at each of the 32
     * positions, over zeros and over ones */
    hs[n++] = (tg_hash128_t){0, 0};
    hs[n++] = (tg_hash128_t){~0ull, ~0ull};
    for (unsigned v = 0; v < 16; v++) {
        for (unsigned pos = 0; pos < 32; pos++) {
            uint64_t nib = (uint64_t)v << (4 * (pos % 16)),
                     hole = ~((uint64_t)15 << (4 * (pos % 16)));
            hs[n++] = pos < 16 ? (tg_hash128_t){nib, 0} : (tg_hash128_t){0, nib};
            hs[n++] =
                pos < 16 ? (tg_hash128_t){hole | nib, ~0ull} : (tg_hash128_t){~0ull, hole | nib};
        }
    }
    tap_ok(hex_mismatches(tg_hash128_hex, hs, n) == 0,
           "hex: each digit value at each position, as printf");
    tap_ok(hex_mismatches(tg_hash128_hex_portable, hs, n) == 0,
           "hex, portable: each digit value at each position, as printf");
    n = 0;
    while (n < RANDOM) {
        hs[n].hi = next();
        hs[n].lo = next();
        n++;
    }
    tap_ok(hex_mismatches(tg_hash128_hex, hs, n) == 0,
           "hex: random hashes as printf's %016llx%016llx");
    tap_ok(hex_mismatches(tg_hash128_hex_portable, hs, n) == 0,
           "hex, portable: random hashes as printf's %016llx%016llx");
    free(hs);
}

/* Which loop ran the tests above: a CPU with AVX2 must get it (or
 * AVX-512, in a build for such CPUs), or the library's run-time switch to
 * it is broken and the equality above proved less than it seems. */
static void test_loop(void)
{
    const char *loop = tg_hash_loop();
    printf("# XXH3 loop for long inputs on this machine: %s\n", loop);
#if defined(__x86_64__) && defined(__GNUC__)
    if (XXH_VERSION_NUMBER != 801) /* tg_hash.c switches on xxHash 0.8.1 only */
        tap_ok(strcmp(loop, "sse2") == 0, "another xxHash than 0.8.1: the build's SSE2 loop");
    else if (__builtin_cpu_supports("avx2"))
        tap_ok(strcmp(loop, "avx2") == 0 || strcmp(loop, "avx512") == 0,
               "this CPU has AVX2: long inputs take the AVX2 loop");
    else
        tap_ok(strcmp(loop, "sse2") == 0, "this CPU has no AVX2: long inputs take the SSE2 loop");
#else
    tap_ok(loop[0] != '\0', "the loop has a name");
#endif
}

int main(void)
{
    test_loop();
    test_every_length();
    test_long();
    test_hex();
    return tap_done();
}
