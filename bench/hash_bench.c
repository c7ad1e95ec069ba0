/*
 * hash_bench.c -- the core's hashing alone: tg_hash128 on inputs of a few
 * sizes (short ones take XXH3's scalar paths, those past 240 bytes its
 * vector loop), and tg_hash128_hex.
 *
 *   hash_bench [MIN_SECONDS]
 *
 * Each measurement runs until MIN_SECONDS (default 0.5) have passed and
 * prints one line:
 *   toolgate-hash128 len=<n> ns_per_hash=<x> GB_per_s=<y>
 *   toolgate-hash128-hex ns_per_call=<x>
 * Every hash feeds the next input (its low byte is written into the data),
 * so no call can be skipped or overlapped with the next one.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <stdint.h>

static void hash_size(unsigned char *buf, size_t len, double min_seconds, uint64_t *sink)
{
    long n = 0, batch = len > 4096 ? 16 : 4096;
    double t0 = bench_now(), elapsed;
    tg_hash128_t h = {0, 0};

    do {
        for (long i = 0; i < batch; i++) {
            buf[0] = (unsigned char)h.lo;
            tg_hash128(buf, len, &h);
        }
        n += batch;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);
    *sink += h.lo;
    printf("toolgate-hash128 len=%zu ns_per_hash=%.1f GB_per_s=%.2f\n", len,
           elapsed * 1e9 / (double)n, (double)len * (double)n / 1e9 / elapsed);
}

static void hex(double min_seconds, uint64_t *sink)
{
    long n = 0;
    double t0 = bench_now(), elapsed;
    tg_hash128_t h = {0x0123456789abcdefull, 0xfedcba9876543210ull};
    char out[TG_HASH_HEX];

    do {
        for (int i = 0; i < 4096; i++) {
            tg_hash128_hex(&h, out);
            h.lo += (unsigned char)out[i & 31];
            h.hi ^= h.lo * 0x9e3779b97f4a7c15ull;
        }
        n += 4096;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);
    *sink += h.lo;
    printf("toolgate-hash128-hex ns_per_call=%.2f\n", elapsed * 1e9 / (double)n);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {16, 100, 240, 241, 1024, 4096, 102400};
    double min_seconds = argc > 1 ? atof(argv[1]) : 0.5;
    size_t max = 102400;
    unsigned char *buf = malloc(max);
    uint64_t sink = 0, x = 1;

    if (!buf)
        return 1;
    for (size_t i = 0; i < max; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (unsigned char)(x >> 56);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        hash_size(buf, sizes[i], min_seconds, &sink);
    hex(min_seconds, &sink);
    fprintf(stderr, "# checksum %016llx\n", (unsigned long long)sink);
    free(buf);
    return 0;
}
