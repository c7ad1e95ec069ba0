/*
 * bench.h -- what toolgate's C benchmarks share: a monotonic clock, reading
 * a whole file or its JSON Lines into memory before any timing, and one way
 * to stop on an error from the core.  (Each benchmark defines
 * _POSIX_C_SOURCE before its first include, for clock_gettime and getline.)
 */
#ifndef TG_BENCH_H
#define TG_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "toolgate.h"

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "prog: what: CODE: message at pointer", exit 1. */
static inline void bench_die(const char *prog, const char *what, const tg_error_t *err)
{
    fprintf(stderr, "%s: %s: %s: %s%s%s\n", prog, what, tg_code_name(err->code), err->message,
            err->pointer[0] ? " at " : "", err->pointer);
    exit(1);
}

static inline FILE *bench_open(const char *prog, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s\n", prog, path);
        exit(2);
    }
    return f;
}

/* The whole file (malloc'd; *len bytes); exit 2 when it cannot be opened. */
static inline char *bench_read_all(const char *prog, const char *path, size_t *len)
{
    FILE *f = bench_open(prog, path);
    char *buf = NULL;
    size_t cap = 0, n = 0, got;

    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            buf = realloc(buf, cap);
            if (!buf)
                exit(1);
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

typedef struct bench_line {
    char *text; /* malloc'd, not NUL-terminated */
    size_t len;
} bench_line;

/* The lines of path without their line ends, leaving out empty lines and,
 * with skip_blank, lines of only spaces and tabs; *n gets their number.
 * Exit 2 when the file cannot be opened. */
static inline bench_line *bench_read_lines(const char *prog, const char *path, int skip_blank,
                                           size_t *n)
{
    FILE *f = bench_open(prog, path);
    bench_line *lines = NULL;
    size_t count = 0, ncap = 0, cap = 0;
    char *line = NULL;
    ssize_t len;

    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len == 0 || (skip_blank && strspn(line, " \t") == (size_t)len))
            continue;
        if (count == ncap) {
            ncap = ncap ? 2 * ncap : 1024;
            if (!(lines = realloc(lines, ncap * sizeof *lines)))
                exit(1);
        }
        if (!(lines[count].text = malloc((size_t)len)))
            exit(1);
        memcpy(lines[count].text, line, (size_t)len);
        lines[count++].len = (size_t)len;
    }
    free(line);
    fclose(f);
    *n = count;
    return lines;
}

static inline void bench_free_lines(bench_line *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
}

#endif
