/*
 * tg_arena.c -- bump allocation in a chain of blocks, freed all at once.
 * A document's DOM lives in one arena: a parse is one allocation pattern,
 * and tg_doc_free is one walk down the chain.
 */
#include "tg_internal.h"

struct tg_arena_block {
    tg_arena_block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    /* data follows, 8-byte aligned because the header is 3 words */
};

#define ARENA_MIN_BLOCK 1024

void tg_arena_init(tg_arena *a, tg_engine_t *e, size_t first_block)
{
    a->engine = e;
    a->head = NULL;
    a->block_size = first_block < ARENA_MIN_BLOCK ? ARENA_MIN_BLOCK : first_block;
}

void *tg_arena_alloc(tg_arena *a, size_t size)
{
    tg_arena_block *b = a->head;
    size = (size + 7) & ~(size_t)7;
    if (size < 8)
        size = 8;
    if (!b || b->size - b->used < size) {
        size_t bsize = a->block_size;
        if (bsize < size)
            bsize = size;
        if (bsize > SIZE_MAX - sizeof *b)
            return NULL;
        b = tg_mem_realloc(a->engine, NULL, 0, sizeof *b + bsize);
        if (!b)
            return NULL;
        b->next = a->head;
        b->size = bsize;
        b->used = 0;
        a->head = b;
        /* Geometric growth keeps the block count logarithmic in the DOM size. */
        if (a->block_size <= SIZE_MAX / 2)
            a->block_size *= 2;
    }
    {
        void *p = (char *)(b + 1) + b->used;
        b->used += size;
        return p;
    }
}

void tg_arena_free(tg_arena *a)
{
    tg_arena_block *b = a->head;
    while (b) {
        tg_arena_block *next = b->next;
        tg_mem_free(a->engine, b, sizeof *b + b->size);
        b = next;
    }
    a->head = NULL;
}
