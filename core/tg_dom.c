/*
 * tg_dom.c -- read-only accessors over a parsed document.  They accept NULL
 * and values of the wrong type and answer with an empty result, so a
 * binding can call them without checking first.
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
