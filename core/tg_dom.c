/*
 * tg_dom.c -- read-only accessors over a parsed document, and the internal
 * helpers that treat a value as a whole (equality, hashing, deep copy).
 * The public accessors accept NULL and values of the wrong type and answer
 * with an empty result, so a binding can call them without checking first.
 */
#include "tg_internal.h"

#include <stddef.h>
#include <string.h>

const tg_value_t *tg_doc_root(const tg_doc_t *doc)
{
    return doc ? doc->root : NULL;
}

int tg_type_of(const tg_value_t *v)
{
    return v ? v->type : TG_NULL;
}

size_t tg_len(const tg_value_t *v)
{
    if (!v || (v->type != TG_ARRAY && v->type != TG_OBJECT && v->type != TG_STRING))
        return 0;
    return v->len;
}

const tg_value_t *tg_at(const tg_value_t *v, size_t i)
{
    if (!v || (v->type != TG_ARRAY && v->type != TG_OBJECT) || i >= v->len)
        return NULL;
    return &v->p.items[i];
}

const char *tg_key_at(const tg_value_t *v, size_t i, size_t *len)
{
    if (!v || v->type != TG_OBJECT || i >= v->len) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->p.items[i].key_len;
    return v->p.items[i].key;
}

/* Members are sorted (RFC 8785 order), so lookup is a binary search; in
 * an object of up to SCAN_MEMBERS, one by one is faster (most objects are
 * small, and their keys' lengths tell most of them apart). */
#define SCAN_MEMBERS 8

/* Recursion is bounded by the document's depth (max_depth, at most 1000). */
int tg_has_key(const tg_value_t *v, const char *key, size_t len)
{
    if (!v || (v->type != TG_OBJECT && v->type != TG_ARRAY))
        return 0;
    if (v->type == TG_OBJECT && tg_get(v, key, len))
        return 1;
    for (uint32_t i = 0; i < v->len; i++)
        if (tg_has_key(&v->p.items[i], key, len))
            return 1;
    return 0;
}

const tg_value_t *tg_get(const tg_value_t *v, const char *key, size_t len)
{
    size_t lo = 0, hi;
    if (!v || v->type != TG_OBJECT)
        return NULL;
    if (v->len <= SCAN_MEMBERS) {
        for (uint32_t i = 0; i < v->len; i++) {
            const tg_value_t *m = &v->p.items[i];
            if (m->key_len == len && tg_same_bytes(m->key, key, len))
                return m;
        }
        return NULL;
    }
    hi = v->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const tg_value_t *m = &v->p.items[mid];
        int c = tg_key_compare(m->key, m->key_len, key, len);
        if (c == 0)
            return m;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *tg_str(const tg_value_t *v, size_t *len)
{
    if (!v || v->type != TG_STRING) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->len;
    return v->p.str;
}

double tg_num(const tg_value_t *v)
{
    return v && v->type == TG_NUMBER ? v->num : 0;
}

const char *tg_num_text(const tg_value_t *v, size_t *len)
{
    if (!v || v->type != TG_NUMBER) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->len;
    return v->p.text;
}

size_t tg_offset(const tg_value_t *v)
{
    return v ? v->offset : TG_NO_OFFSET;
}

size_t tg_value_layout(int i)
{
    static const size_t layout[] = {
        sizeof(tg_value_t),           offsetof(tg_value_t, key), offsetof(tg_value_t, key_len),
        offsetof(tg_value_t, offset), offsetof(tg_value_t, len), offsetof(tg_value_t, type),
        offsetof(tg_value_t, p),      offsetof(tg_value_t, num),
    };
    return i >= 0 && (size_t)i < sizeof layout / sizeof layout[0] ? layout[i] : (size_t)-1;
}

/* ---- whole values ---------------------------------------------------------- */

int tg_number_compare(const tg_value_t *a, const tg_value_t *b)
{
    tg_decimal x, y;
    /* Rounding to the nearest double keeps order (x <= y gives
     * round(x) <= round(y)), so different doubles decide; equal doubles
     * may still be different decimals (2^53 and 2^53 + 1): look closer. */
    if (a->num != b->num)
        return a->num < b->num ? -1 : 1;
    if (a->len == b->len && memcmp(a->p.text, b->p.text, a->len) == 0)
        return 0;
    tg_decimal_init(&x, a->p.text, a->len);
    tg_decimal_init(&y, b->p.text, b->len);
    return tg_decimal_compare(&x, &y);
}

static int bytes_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c < 0 ? -1 : 1;
    return (alen > blen) - (alen < blen);
}

int tg_value_compare(const tg_value_t *a, const tg_value_t *b, size_t *visited)
{
    if (visited)
        (*visited)++;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    switch (a->type) {
    case TG_NUMBER:
        return tg_number_compare(a, b);
    case TG_STRING:
        return bytes_compare(a->p.str, a->len, b->p.str, b->len);
    case TG_ARRAY:
    case TG_OBJECT:
        /* Shorter first, so values of different sizes part at once. */
        if (a->len != b->len)
            return a->len < b->len ? -1 : 1;
        /* Objects are sorted by key, so equal objects line up member by member. */
        for (uint32_t i = 0; i < a->len; i++) {
            const tg_value_t *x = &a->p.items[i], *y = &b->p.items[i];
            int c;
            if (a->type == TG_OBJECT && (c = bytes_compare(x->key, x->key_len, y->key, y->key_len)))
                return c;
            if ((c = tg_value_compare(x, y, visited)))
                return c;
        }
        return 0;
    default:
        return 0;
    }
}

int tg_value_equal(const tg_value_t *a, const tg_value_t *b)
{
    return tg_value_compare(a, b, NULL) == 0;
}

int tg_value_copy(tg_arena *a, tg_value_t *dst, const tg_value_t *src)
{
    *dst = *src;
    /* the copied bytes have no quotes and no padding around them */
    dst->flags = 0;
    if (src->key && !(dst->key = tg_arena_strdup(a, src->key, src->key_len)))
        return TG_E_NOMEM;
    switch (src->type) {
    case TG_NUMBER:
        return (dst->p.text = tg_arena_strdup(a, src->p.text, src->len)) ? TG_OK : TG_E_NOMEM;
    case TG_STRING:
        return (dst->p.str = tg_arena_strdup(a, src->p.str, src->len)) ? TG_OK : TG_E_NOMEM;
    case TG_ARRAY:
    case TG_OBJECT:
        dst->p.items = NULL;
        if (src->len) {
            tg_value_t *items = tg_arena_alloc(a, src->len * sizeof *items);
            if (!items)
                return TG_E_NOMEM;
            for (uint32_t i = 0; i < src->len; i++) {
                int rc = tg_value_copy(a, &items[i], &src->p.items[i]);
                if (rc != TG_OK)
                    return rc;
            }
            dst->p.items = items;
        }
        return TG_OK;
    default:
        return TG_OK;
    }
}
