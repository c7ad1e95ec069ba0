/*
 * tg_store.c -- the in-process determinism store: per (server, tool), the
 * epoch a probe verified its determinism declaration in, and its
 * quarantine (reason, since, epoch).
 *
 * The records a classify run reads are few (one per tool of a registry),
 * so the store is a flat array in the order tools were first written and
 * an open-addressing index over it.  Each record's strings are its own
 * allocations, replaced when they change; a write that cannot get memory
 * leaves the record as it was.
 */
#include "tg_internal.h"

typedef struct srec {
    char *key; /* server, '\0', name */
    size_t key_len, server_len;
    uint64_t hash;
    char *verified; /* NULL: none */
    size_t verified_len;
    int quarantined;
    char *reason;
    size_t reason_len;
    int64_t since;
    char *epoch; /* of the quarantine, NULL: none */
    size_t epoch_len;
} srec;

struct tg_store_t {
    tg_engine_t *e;
    srec *recs;
    size_t n, cap;
    uint32_t *slots; /* record number + 1, 0 for empty; a power of two, >= 2 n */
    size_t n_slots;
};

tg_store_t *tg_store_new(tg_engine_t *e, tg_error_t *err)
{
    tg_store_t *s;
    tg_error_clear(err);
    if (!e) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "engine is NULL");
        return NULL;
    }
    if (!(s = tg_mem_realloc(e, NULL, 0, sizeof *s))) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->e = e;
    tg_engine_retain(e);
    return s;
}

void tg_store_free(tg_store_t *s)
{
    tg_engine_t *e;
    if (!s)
        return;
    e = s->e;
    for (size_t i = 0; i < s->n; i++) {
        srec *r = &s->recs[i];
        tg_mem_free(e, r->key, r->key_len + 1);
        tg_mem_free(e, r->verified, r->verified_len + 1);
        tg_mem_free(e, r->reason, r->reason_len + 1);
        tg_mem_free(e, r->epoch, r->epoch_len + 1);
    }
    tg_mem_free(e, s->recs, s->cap * sizeof *s->recs);
    tg_mem_free(e, s->slots, s->n_slots * sizeof *s->slots);
    tg_mem_free(e, s, sizeof *s);
    tg_engine_release(e);
}

/* The key of (server, name) hashed without building it. */
static uint64_t key_hash(const char *server, size_t slen, const char *name, size_t nlen)
{
    uint64_t h[2];
    h[0] = tg_hash64(slen ? server : "", slen);
    h[1] = tg_hash64(nlen ? name : "", nlen);
    return tg_hash64(h, sizeof h);
}

static srec *find(const tg_store_t *s, const char *server, size_t slen, const char *name,
                  size_t nlen, uint64_t h)
{
    size_t mask, i;
    if (!s->n_slots)
        return NULL;
    mask = s->n_slots - 1;
    for (i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t k = s->slots[i];
        srec *r;
        if (!k)
            return NULL;
        r = &s->recs[k - 1];
        if (r->hash == h && r->server_len == slen && r->key_len == slen + 1 + nlen &&
            (slen == 0 || memcmp(r->key, server, slen) == 0) &&
            (nlen == 0 || memcmp(r->key + slen + 1, name, nlen) == 0))
            return r;
    }
}

static void insert_slot(uint32_t *slots, size_t n_slots, uint64_t h, uint32_t k)
{
    size_t mask = n_slots - 1, i = (size_t)h & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = k;
}

/* The record of (server, name), made empty when there is none; NULL when
 * memory runs out (the store is then unchanged). */
static srec *record(tg_store_t *s, const char *server, size_t slen, const char *name, size_t nlen)
{
    uint64_t h = key_hash(server, slen, name, nlen);
    srec *r = find(s, server, slen, name, nlen, h);
    char *key;
    if (r)
        return r;
    if (s->n >= UINT32_MAX / 4)
        return NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        srec *grown = tg_mem_realloc(s->e, s->recs, s->cap * sizeof *grown, cap * sizeof *grown);
        if (!grown)
            return NULL;
        s->recs = grown;
        s->cap = cap;
    }
    if (2 * (s->n + 1) > s->n_slots) {
        size_t n_slots = s->n_slots ? 2 * s->n_slots : 32;
        uint32_t *t = tg_mem_realloc(s->e, NULL, 0, n_slots * sizeof *t);
        if (!t)
            return NULL;
        memset(t, 0, n_slots * sizeof *t);
        for (size_t i = 0; i < s->n; i++)
            insert_slot(t, n_slots, s->recs[i].hash, (uint32_t)i + 1);
        tg_mem_free(s->e, s->slots, s->n_slots * sizeof *s->slots);
        s->slots = t;
        s->n_slots = n_slots;
    }
    if (!(key = tg_mem_realloc(s->e, NULL, 0, slen + nlen + 2)))
        return NULL;
    if (slen)
        memcpy(key, server, slen);
    key[slen] = '\0';
    if (nlen)
        memcpy(key + slen + 1, name, nlen);
    key[slen + 1 + nlen] = '\0';
    r = &s->recs[s->n++];
    memset(r, 0, sizeof *r);
    r->key = key;
    r->key_len = slen + 1 + nlen;
    r->server_len = slen;
    r->hash = h;
    insert_slot(s->slots, s->n_slots, h, (uint32_t)s->n);
    return r;
}

/* A copy of s (NUL-terminated), or NULL with *failed set when memory ran
 * out; NULL without it for s NULL. */
static char *copy(tg_engine_t *e, const char *str, size_t len, int *failed)
{
    char *c;
    if (!str)
        return NULL;
    if (!(c = tg_mem_realloc(e, NULL, 0, len + 1))) {
        *failed = 1;
        return NULL;
    }
    if (len)
        memcpy(c, str, len);
    c[len] = '\0';
    return c;
}

static void fill(const srec *r, tg_store_record_t *out)
{
    out->verified_epoch = r->verified;
    out->verified_epoch_len = r->verified_len;
    out->quarantined = r->quarantined;
    out->reason = r->quarantined ? r->reason : NULL;
    out->reason_len = r->quarantined ? r->reason_len : 0;
    out->since = r->quarantined ? r->since : 0;
    out->epoch = r->quarantined ? r->epoch : NULL;
    out->epoch_len = r->quarantined ? r->epoch_len : 0;
}

int tg_store_get(const tg_store_t *s, const char *server, size_t server_len, const char *name,
                 size_t name_len, tg_store_record_t *out)
{
    const srec *r;
    if (!s || !name || !out)
        return 0;
    if (!server)
        server_len = 0;
    r = find(s, server, server_len, name, name_len, key_hash(server, server_len, name, name_len));
    if (!r)
        return 0;
    fill(r, out);
    return 1;
}

static int same(const char *a, size_t alen, const char *b, size_t blen)
{
    if (!a || !b)
        return !a && !b;
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

int tg_store_verified(tg_store_t *s, const char *server, size_t server_len, const char *name,
                      size_t name_len, const char *epoch, size_t epoch_len, tg_error_t *err)
{
    srec *r;
    char *v;
    int failed = 0;
    tg_error_clear(err);
    if (!s || !name)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "store and name are required");
    if (!server)
        server_len = 0;
    v = copy(s->e, epoch, epoch_len, &failed);
    if (failed || !(r = record(s, server, server_len, name, name_len))) {
        tg_mem_free(s->e, v, epoch_len + 1);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    tg_mem_free(s->e, r->verified, r->verified_len + 1);
    r->verified = v;
    r->verified_len = v ? epoch_len : 0;
    if (r->quarantined && !same(r->epoch, r->epoch_len, epoch, epoch_len)) {
        r->quarantined = 0;
        tg_mem_free(s->e, r->reason, r->reason_len + 1);
        tg_mem_free(s->e, r->epoch, r->epoch_len + 1);
        r->reason = r->epoch = NULL;
        r->reason_len = r->epoch_len = 0;
    }
    return TG_OK;
}

int tg_store_quarantine(tg_store_t *s, const char *server, size_t server_len, const char *name,
                        size_t name_len, const char *reason, size_t reason_len, int64_t since,
                        const char *epoch, size_t epoch_len, int *changed, tg_error_t *err)
{
    srec *r;
    char *why = NULL, *ep = NULL;
    int failed = 0;
    tg_error_clear(err);
    if (changed)
        *changed = 0;
    if (!s || !name || !reason)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "store, name and reason are required");
    if (!server)
        server_len = 0;
    if (!(r = record(s, server, server_len, name, name_len)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    if (!r->quarantined) {
        why = copy(s->e, reason, reason_len, &failed);
        ep = copy(s->e, epoch, epoch_len, &failed);
        if (failed) {
            tg_mem_free(s->e, why, reason_len + 1);
            tg_mem_free(s->e, ep, epoch_len + 1);
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        }
        r->quarantined = 1;
        r->reason = why;
        r->reason_len = reason_len;
        r->since = since;
        r->epoch = ep;
        r->epoch_len = ep ? epoch_len : 0;
        if (changed)
            *changed = 1;
    }
    tg_mem_free(s->e, r->verified, r->verified_len + 1);
    r->verified = NULL;
    r->verified_len = 0;
    return TG_OK;
}

size_t tg_store_count(const tg_store_t *s)
{
    return s ? s->n : 0;
}

int tg_store_at(const tg_store_t *s, size_t i, const char **server, size_t *server_len,
                const char **name, size_t *name_len, tg_store_record_t *out)
{
    const srec *r;
    if (!s || i >= s->n || !server || !server_len || !name || !name_len || !out)
        return TG_E_ARG;
    r = &s->recs[i];
    *server = r->key;
    *server_len = r->server_len;
    *name = r->key + r->server_len + 1;
    *name_len = r->key_len - r->server_len - 1;
    fill(r, out);
    return TG_OK;
}
