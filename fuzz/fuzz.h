/*
 * fuzz.h -- what the libFuzzer targets in fuzz/ share: one engine per
 * process, a check that turns a broken invariant into a crash (so libFuzzer
 * keeps the input), and splitting an input into several documents.
 *
 * A target's contract: whatever the bytes, the core returns a status and
 * never crashes, hangs, leaks or reads out of bounds (ASan, UBSan and
 * libFuzzer's leak check watch that), and what it returns is consistent
 * (each target checks its own invariants with FUZZ_CHECK).
 */
#ifndef TG_FUZZ_H
#define TG_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolgate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: say which and crash, so the input is kept. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The process's engine: default limits, except a validation budget small
 * enough that no input makes a unit slow (the budget itself is exercised:
 * VALIDATION_LIMIT is an allowed outcome). */
static inline tg_engine_t *fuzz_engine(void)
{
    static tg_engine_t *e;
    if (!e) {
        tg_limits_t lim;
        tg_limits_default(&lim);
        lim.max_validation_steps = 20000;
        lim.regex_match_limit = 20000;
        e = tg_engine_new(&lim, NULL, NULL, NULL);
        FUZZ_CHECK(e != NULL);
    }
    return e;
}

/* Every status a function may return is a known code with a name. */
static inline int fuzz_known_code(int rc)
{
    return rc >= 0 && rc < TG_E_CODE_COUNT && strcmp(tg_code_name(rc), "UNKNOWN") != 0;
}

/* An error struct after a failure: the code matches and the texts are
 * NUL-terminated within their arrays. */
static inline void fuzz_check_error(const tg_error_t *err, int rc)
{
    FUZZ_CHECK(rc != TG_OK && fuzz_known_code(rc));
    FUZZ_CHECK(err->code == rc);
    FUZZ_CHECK(memchr(err->message, '\0', sizeof err->message) != NULL);
    FUZZ_CHECK(memchr(err->pointer, '\0', sizeof err->pointer) != NULL);
}

/* What tg_validate may return on any input: done, or stopped at a limit. */
static inline int fuzz_validate_code(int rc)
{
    return rc == TG_OK || rc == TG_E_REGEX_LIMIT || rc == TG_E_REGEX_BUDGET ||
           rc == TG_E_VALIDATION_LIMIT;
}

/* Splits data at NUL bytes (which never occur in valid JSON text, so a
 * seed is "doc\0doc\0..."): writes up to max (start, length) pairs and
 * returns how many parts there are (at most max; the rest is dropped). */
static inline size_t fuzz_split(const uint8_t *data, size_t size, const char **start, size_t *len,
                                size_t max)
{
    size_t n = 0, i = 0;
    while (n < max) {
        const uint8_t *nul = memchr(data + i, '\0', size - i);
        size_t end = nul ? (size_t)(nul - data) : size;
        start[n] = (const char *)data + i;
        len[n] = end - i;
        n++;
        if (!nul)
            break;
        i = end + 1;
    }
    return n;
}

#endif
