/*
 * tap.h -- the few TAP helpers the C unit tests need.  Each test program
 * prints "ok N - name" / "not ok N - name" lines and a plan at the end;
 * mk/run-tests.sh counts them.
 */
#ifndef TG_TAP_H
#define TG_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static int tap_ok(int cond, const char *name)
{
    tap_n++;
    if (!cond)
        tap_failed++;
    printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, name);
    return cond;
}

/* Compares n bytes of got with a NUL-terminated expectation.  (inline: a
 * test that does not compare bytes need not be warned about it.) */
static inline int tap_is_mem(const char *got, size_t n, const char *want, const char *name)
{
    int ok = got && n == strlen(want) && memcmp(got, want, n) == 0;
    tap_ok(ok, name);
    if (!ok)
        printf("#   got:  '%.*s'\n#   want: '%s'\n", got ? (int)n : 6, got ? got : "(null)", want);
    return ok;
}

static int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
