/*
 * canon_bench.c -- toolgate's side of the canonicalize+hash benchmark.
 *
 *   canon_bench CORPUS.jsonl [MIN_SECONDS]
 *
 * Loads every non-blank line, runs one untimed warm-up pass, then times
 * whole passes of tg_canon (strict parse + RFC 8785 writer) followed by
 * XXH3-128 of the canonical bytes, until MIN_SECONDS (default 1) have
 * passed.  Prints one line in the format of bench/README.md:
 *   toolgate-c docs=<n> bytes=<B> seconds=<s> MB_per_s=<x> ns_per_doc=<y>
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

int main(int argc, char **argv)
{
    size_t n, bytes = 0;
    bench_line *docs;
    double min_seconds = argc > 2 ? atof(argv[2]) : 1.0, t0, elapsed;
    long passes = 0;
    uint64_t sink = 0;
    tg_engine_t *e;
    tg_buf_t out;
    tg_error_t err;

    if (argc < 2) {
        fprintf(stderr, "usage: canon_bench CORPUS.jsonl [MIN_SECONDS]\n");
        return 2;
    }
    docs = bench_read_lines("canon_bench", argv[1], 0, &n);
    for (size_t i = 0; i < n; i++)
        bytes += docs[i].len;

    e = tg_engine_new(NULL, NULL, NULL, &err);
    tg_buf_init(&out, e);
    for (size_t i = 0; i < n; i++) { /* warm-up, and every document must pass */
        tg_buf_reset(&out);
        if (tg_canon(e, docs[i].text, docs[i].len, &out, &err) != TG_OK) {
            fprintf(stderr, "canon_bench: line %zu: %s: %s\n", i + 1, tg_code_name(err.code),
                    err.message);
            return 1;
        }
    }
    t0 = bench_now();
    do {
        for (size_t i = 0; i < n; i++) {
            tg_buf_reset(&out);
            tg_canon(e, docs[i].text, docs[i].len, &out, &err);
            tg_hash128_t h;
            tg_hash128(out.data, out.len, &h);
            sink += h.lo;
        }
        passes++;
        elapsed = bench_now() - t0;
    } while (elapsed < min_seconds);

    printf("toolgate-c docs=%zu bytes=%zu seconds=%.3f MB_per_s=%.1f ns_per_doc=%.0f\n", n, bytes,
           elapsed, (double)bytes * (double)passes / 1e6 / elapsed,
           elapsed * 1e9 / ((double)passes * (double)n));
    fprintf(stderr, "# checksum %016llx\n", (unsigned long long)sink);
    tg_buf_free(&out);
    tg_engine_free(e);
    bench_free_lines(docs, n);
    return 0;
}
