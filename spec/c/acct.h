/*
 * acct.h -- the C unit tests' allocator (a tg_alloc_fn): it counts the
 * bytes in use and the allocations made, and can refuse one, so a test can
 * fail each allocation of some work in turn and see every byte given back.
 *
 *   acct a = {0};
 *   tg_engine_t *e = tg_engine_new(NULL, acct_alloc, &a, &err);
 *   a.calls = 0; a.fail_at = k;     -- refuse the k-th allocation from now
 */
#ifndef TG_ACCT_H
#define TG_ACCT_H

#include <stdlib.h>

typedef struct {
    long live;    /* bytes currently allocated */
    long calls;   /* successful (re)allocations */
    long fail_at; /* refuse the allocation that would be call fail_at (0: never) */
    int sticky;   /* and, with fail_at, every allocation after it too */
    int fired;    /* an allocation was refused */
} acct;

static void *acct_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    acct *a = ud;
    if (nsize == 0) {
        if (ptr)
            a->live -= (long)osize;
        free(ptr);
        return NULL;
    }
    if (a->fail_at && (a->sticky ? a->calls + 1 >= a->fail_at : a->calls + 1 == a->fail_at)) {
        a->fired = 1;
        return NULL;
    }
    ptr = realloc(ptr, nsize);
    if (ptr) {
        a->calls++;
        a->live += (long)nsize - (long)osize;
    }
    return ptr;
}

#endif
