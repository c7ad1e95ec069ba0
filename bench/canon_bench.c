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
#include "toolgate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0, n = 0, ncap = 0, bytes = 0;
    ssize_t len;
    char **docs = NULL;
    size_t *lens = NULL;
    double min_seconds = argc > 2 ? atof(argv[2]) : 1.0, t0, elapsed;
    long passes = 0;
    uint64_t sink = 0;
    tg_engine_t *e;
    tg_buf_t out;
    tg_error_t err;

    if (argc < 2 || !(f = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: canon_bench CORPUS.jsonl [MIN_SECONDS]\n");
        return 2;
    }
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len == 0)
            continue;
        if (n == ncap) {
            ncap = ncap ? 2 * ncap : 1024;
            docs = realloc(docs, ncap * sizeof *docs);
            lens = realloc(lens, ncap * sizeof *lens);
        }
        docs[n] = malloc((size_t)len);
        memcpy(docs[n], line, (size_t)len);
        lens[n++] = (size_t)len;
        bytes += (size_t)len;
    }
    fclose(f);
    free(line);

    e = tg_engine_new(NULL, NULL, NULL, &err);
    tg_buf_init(&out, e);
    for (size_t i = 0; i < n; i++) { /* warm-up, and every document must pass */
        tg_buf_reset(&out);
        if (tg_canon(e, docs[i], lens[i], &out, &err) != TG_OK) {
            fprintf(stderr, "canon_bench: line %zu: %s: %s\n", i + 1, tg_code_name(err.code),
                    err.message);
            return 1;
        }
    }
    t0 = now();
    do {
        for (size_t i = 0; i < n; i++) {
            tg_buf_reset(&out);
            tg_canon(e, docs[i], lens[i], &out, &err);
            tg_hash128_t h;
            tg_hash128(out.data, out.len, &h);
            sink += h.lo;
        }
        passes++;
        elapsed = now() - t0;
    } while (elapsed < min_seconds);

    printf("toolgate-c docs=%zu bytes=%zu seconds=%.3f MB_per_s=%.1f ns_per_doc=%.0f\n", n, bytes,
           elapsed, (double)bytes * (double)passes / 1e6 / elapsed,
           elapsed * 1e9 / ((double)passes * (double)n));
    fprintf(stderr, "# checksum %016llx\n", (unsigned long long)sink);
    tg_buf_free(&out);
    tg_engine_free(e);
    for (size_t i = 0; i < n; i++)
        free(docs[i]);
    free(docs);
    free(lens);
    return 0;
}
