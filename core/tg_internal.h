/*
 * tg_internal.h -- what the core's files share and nobody else sees: the
 * engine and document structs, the DOM node layout, the arena, and the
 * error helpers.  Not installed.
 */
#ifndef TG_INTERNAL_H
#define TG_INTERNAL_H

/* locale_t, newlocale and strtod_l; every core file includes this header
 * before any system header. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "toolgate.h"

#include <locale.h>
#include <stdarg.h>
#include <string.h>

struct tg_engine_t {
    tg_alloc_fn alloc;
    void *alloc_ud;
    tg_limits_t limits;
    locale_t c_locale; /* for strtod_l: number parsing must ignore LC_NUMERIC */
};

/* A DOM node.  Containers hold their children in one contiguous arena block
 * (items), so element access is O(1); objects keep members sorted in RFC 8785
 * order, each member's key in the child node itself. */
struct tg_value_t {
    const char *key;  /* member key (decoded UTF-8), NULL outside objects */
    uint32_t key_len;
    uint32_t offset;  /* byte offset in the input (of the key, for members) */
    uint32_t len;     /* string bytes, number text bytes or child count */
    uint8_t type;     /* enum tg_type */
    union {
        const char *str;   /* TG_STRING: decoded bytes */
        const char *text;  /* TG_NUMBER: source text */
        tg_value_t *items; /* TG_ARRAY, TG_OBJECT */
    } p;
    double num;       /* TG_NUMBER */
};

/* Arena: a chain of blocks, bump allocation, everything freed at once. */
typedef struct tg_arena_block tg_arena_block;
typedef struct tg_arena {
    tg_engine_t *engine;
    tg_arena_block *head;
    size_t block_size; /* size of the next block to allocate */
} tg_arena;

void tg_arena_init(tg_arena *a, tg_engine_t *e, size_t first_block);
void *tg_arena_alloc(tg_arena *a, size_t size); /* 8-byte aligned, NULL on OOM */
void tg_arena_free(tg_arena *a);

struct tg_doc_t {
    tg_arena arena;
    tg_value_t *root;
};

/* Engine allocator shorthands. */
void *tg_mem_realloc(tg_engine_t *e, void *p, size_t osize, size_t nsize);
void tg_mem_free(tg_engine_t *e, void *p, size_t size);

/* Fills err (when not NULL) and returns code. */
int tg_fail(tg_error_t *err, int code, size_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void tg_error_clear(tg_error_t *err);

/* Buffer growth; returns TG_OK or TG_E_NOMEM (err filled). */
int tg_buf_reserve(tg_buf_t *b, size_t extra, tg_error_t *err);
int tg_buf_append(tg_buf_t *b, const void *data, size_t n, tg_error_t *err);

/* The writers' hot path: append without a call when the room is there. */
static inline int tg_buf_put(tg_buf_t *b, const void *data, size_t n, tg_error_t *err)
{
    if (n > b->cap - b->len)
        return tg_buf_append(b, data, n, err);
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return TG_OK;
}

/* Writes ECMAScript's layout of 0.digits x 10^n (nd digits, no leading or
 * trailing zeros) into out (TG_NUMBER_BUF bytes); returns the length. */
size_t tg_number_layout(char *out, int negative, const char *digits, int nd, int n);

/* Decimal text -> nearest double, locale-independent.  text must be a valid
 * RFC 8259 number (the parser checked it).  Returns TG_OK or
 * TG_E_NUMBER_RANGE when the magnitude overflows a double. */
int tg_number_parse(tg_engine_t *e, const char *text, size_t len, double *out);

/* Sorts n sibling nodes by key in RFC 8785 order (stable merge sort using
 * tmp, which must hold n nodes). */
void tg_sort_members(tg_value_t *items, size_t n, tg_value_t *tmp);

#endif /* TG_INTERNAL_H */
