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
    int once;     /* or only that one: the allocations after it succeed */
    int fired;    /* an allocation was refused */
} acct;

/* The counts are atomic: a pool of worker threads allocates from one engine's
 * allocator at once (which allocation a fault hits is then up to timing). */
static void *acct_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    acct *a = ud;
    long calls, fail_at;
    if (nsize == 0) {
        if (ptr)
            __atomic_sub_fetch(&a->live, (long)osize, __ATOMIC_RELAXED);
        free(ptr);
        return NULL;
    }
    calls = __atomic_load_n(&a->calls, __ATOMIC_RELAXED);
    fail_at = __atomic_load_n(&a->fail_at, __ATOMIC_RELAXED);
    if (fail_at && (a->sticky ? calls + 1 >= fail_at : calls + 1 == fail_at)) {
        a->fired = 1;
        if (a->once)
            __atomic_store_n(&a->fail_at, 0, __ATOMIC_RELAXED);
        return NULL;
    }
    ptr = realloc(ptr, nsize);
    if (ptr) {
        __atomic_add_fetch(&a->calls, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&a->live, (long)nsize - (long)osize, __ATOMIC_RELAXED);
    }
    return ptr;
}

#endif
