/*
 * tg_dom.c -- read-only accessors over a parsed document, and the internal
 * helpers that treat a value as a whole (equality, hashing, deep copy).
 * The public accessors accept NULL and values of the wrong type and answer
 * with an empty result, so a binding can call them without checking first.
 */
#include "tg_internal.h"

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

/* Members are sorted (RFC 8785 order), so lookup is a binary search. */
const tg_value_t *tg_get(const tg_value_t *v, const char *key, size_t len)
{
    size_t lo = 0, hi;
    if (!v || v->type != TG_OBJECT)
        return NULL;
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

/* ---- whole values ---------------------------------------------------------- */

static int number_equal(const tg_value_t *a, const tg_value_t *b)
{
    tg_decimal x, y;
    /* Different doubles always mean different decimals; equal doubles may
     * still be different decimals (2^53 and 2^53 + 1), so look closer. */
    if (a->num != b->num)
        return 0;
    if (a->len == b->len && memcmp(a->p.text, b->p.text, a->len) == 0)
        return 1;
    tg_decimal_init(&x, a->p.text, a->len);
    tg_decimal_init(&y, b->p.text, b->len);
    return tg_decimal_equal(&x, &y);
}

int tg_value_equal(const tg_value_t *a, const tg_value_t *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case TG_NUMBER:
        return number_equal(a, b);
    case TG_STRING:
        return a->len == b->len && memcmp(a->p.str, b->p.str, a->len) == 0;
    case TG_ARRAY:
    case TG_OBJECT:
        if (a->len != b->len)
            return 0;
        /* Objects are sorted by key, so equal objects line up member by member. */
        for (uint32_t i = 0; i < a->len; i++) {
            const tg_value_t *x = &a->p.items[i], *y = &b->p.items[i];
            if (a->type == TG_OBJECT &&
                (x->key_len != y->key_len || memcmp(x->key, y->key, x->key_len) != 0))
                return 0;
            if (!tg_value_equal(x, y))
                return 0;
        }
        return 1;
    default:
        return 1;
    }
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    /* splitmix64's finalizer over the running state */
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

uint64_t tg_value_hash(const tg_value_t *v)
{
    uint64_t h = mix(0, v->type);
    switch (v->type) {
    case TG_NUMBER: {
        /* Equal decimals have equal doubles; -0 and 0 are equal values. */
        double d = v->num == 0 ? 0.0 : v->num;
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix(h, bits);
    }
    case TG_STRING:
        return mix(h, tg_hash64(v->p.str, v->len));
    case TG_ARRAY:
    case TG_OBJECT:
        for (uint32_t i = 0; i < v->len; i++) {
            const tg_value_t *m = &v->p.items[i];
            if (v->type == TG_OBJECT)
                h = mix(h, tg_hash64(m->key, m->key_len));
            h = mix(h, tg_value_hash(m));
        }
        return h;
    default:
        return h;
    }
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
