/*
 * tg_arena.c -- bump allocation in a chain of blocks, freed all at once.
 * A document's DOM lives in one arena: a parse is one allocation pattern,
 * and tg_doc_free is one walk down the chain.
 *
 * An engine keeps one freed block (the largest up to ARENA_SPARE_MAX) and
 * hands it to the next arena that needs a block no bigger: a stream of
 * small documents then parses without a malloc/free pair each.  The spare
 * is engine state like its limits, used under the engine's one-thread
 * rule, and goes back to the allocator with the engine.
 */
#include "tg_internal.h"

struct tg_arena_block {
    tg_arena_block *next;
    size_t size; /* usable bytes after the header */
    /* data follows, 8-byte aligned because the header is 2 words */
};

#define ARENA_MIN_BLOCK 1024
/* The largest block an engine keeps for reuse: a document of about 12 KB
 * fits in its first block (tg_parse sizes it at about 5 x the input). */
#define ARENA_SPARE_MAX (64 * 1024)

void tg_arena_init(tg_arena *a, tg_engine_t *e, size_t first_block)
{
    a->engine = e;
    a->head = NULL;
    a->next = a->limit = NULL;
    a->block_size = first_block < ARENA_MIN_BLOCK ? ARENA_MIN_BLOCK : first_block;
}

/* size is rounded already and does not fit in the head block. */
void *tg_arena_alloc_block(tg_arena *a, size_t size)
{
    tg_engine_t *e = a->engine;
    tg_arena_block *b;
    size_t bsize = a->block_size;
    if (bsize < size)
        bsize = size;
    if (e->spare && e->spare->size >= bsize) {
        b = e->spare;
        e->spare = NULL;
    } else {
        if (bsize > SIZE_MAX - sizeof *b)
            return NULL;
        b = tg_mem_realloc(e, NULL, 0, sizeof *b + bsize);
        if (!b)
            return NULL;
        b->size = bsize;
    }
    b->next = a->head;
    a->head = b;
    /* Geometric growth keeps the block count logarithmic in the DOM size. */
    if (a->block_size <= SIZE_MAX / 2)
        a->block_size *= 2;
    a->next = (char *)(b + 1) + size;
    a->limit = (char *)(b + 1) + b->size;
    return b + 1;
}

const char *tg_arena_strdup(tg_arena *a, const char *s, size_t n)
{
    char *p = tg_arena_alloc(a, n + 1);
    if (p) {
        if (n)
            memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void tg_arena_free(tg_arena *a)
{
    tg_engine_t *e = a->engine;
    tg_arena_block *b = a->head;
    while (b) {
        tg_arena_block *next = b->next;
        if (b->size <= ARENA_SPARE_MAX && (!e->spare || e->spare->size < b->size)) {
            tg_arena_block *old = e->spare;
            e->spare = b;
            b = old; /* the smaller one goes */
        }
        if (b)
            tg_mem_free(e, b, sizeof *b + b->size);
        b = next;
    }
    a->head = NULL;
    a->next = a->limit = NULL;
}

void tg_arena_spare_free(tg_engine_t *e)
{
    if (e->spare) {
        tg_mem_free(e, e->spare, sizeof *e->spare + e->spare->size);
        e->spare = NULL;
    }
}
