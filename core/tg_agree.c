/*
 * tg_agree.c -- agreement counting for execution-grounded self-consistency:
 * how many of n samples share the most common value (tg_agree), and, JSON
 * Pointer by JSON Pointer, how many documents agree with a representative
 * one (tg_pointer_agreement), so a person sees which argument was made up.
 *
 * tg_pointer_agreement interns every pointer it meets in a trie of pointer
 * nodes -- (parent node, segment text) in a hash table, compared exactly, so
 * two pointers are never taken for one -- and keeps the counts on the
 * nodes.  Memory therefore grows with the distinct pointers, not with the
 * documents: 10,000 samples of one tool's arguments share a dozen nodes.
 */
#include "tg_norm.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- agreement of n values ---------------------------------------------------- */

typedef struct apair {
    uint64_t hi, lo;
    size_t index;
} apair;

static inline int pair_less(const apair *a, const apair *b)
{
    return a->hi != b->hi ? a->hi < b->hi : a->lo < b->lo;
}

/* Stable: equal values keep their order, so a group's first element is its
 * lowest index. */
static void insertion_sort(apair *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        apair x = a[i];
        size_t j = i;
        while (j > 0 && pair_less(&x, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

#define SORT_RUN 16

/* Stable merge sort of a (n pairs), tmp being as long: runs by insertion,
 * then bottom-up passes from one array to the other.  Returns the one that
 * holds the result. */
static apair *merge_sort(apair *a, apair *tmp, size_t n)
{
    for (size_t i = 0; i < n; i += SORT_RUN)
        insertion_sort(a + i, n - i < SORT_RUN ? n - i : SORT_RUN);
    for (size_t width = SORT_RUN; width < n; width *= 2) {
        apair *t;
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = n - lo < width ? n : lo + width;
            size_t hi = n - lo < 2 * width ? n : lo + 2 * width;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = pair_less(&a[j], &a[i]) ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/* log2 of the buckets for n values: about one per value, 2^8 to 2^16. */
static unsigned bucket_bits(size_t n)
{
    unsigned bits = 8;
    while (bits < 16 && ((size_t)1 << (bits + 1)) <= n)
        bits++;
    return bits;
}

/* Stable sort of the n pairs at a, with tmp as long and end as room for
 * 2^bits counters: one counting pass on the top bits of hi spreads the
 * values into tmp in buckets that already follow those bits' order, then
 * each bucket is sorted where it lies.  Digests are uniform, so buckets
 * hold a value or two; other values still sort in O(n log n), only without
 * the speed-up.  Returns tmp, which holds the result. */
static apair *bucket_sort(apair *a, apair *tmp, size_t n, size_t *end, unsigned bits)
{
    size_t buckets = (size_t)1 << bits, sum = 0, lo = 0;
    unsigned shift = 64 - bits;
    memset(end, 0, buckets * sizeof *end);
    for (size_t i = 0; i < n; i++)
        end[a[i].hi >> shift]++;
    for (size_t b = 0; b < buckets; b++) { /* counts -> starts */
        size_t c = end[b];
        end[b] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++) /* starts -> ends */
        tmp[end[a[i].hi >> shift]++] = a[i];
    for (size_t b = 0; b < buckets; lo = end[b++]) {
        size_t len = end[b] - lo;
        if (len < 2)
            continue;
        if (len <= SORT_RUN) {
            insertion_sort(tmp + lo, len);
        } else {
            apair *sorted = merge_sort(tmp + lo, a + lo, len);
            if (sorted != tmp + lo)
                memcpy(tmp + lo, sorted, len * sizeof *a);
        }
    }
    return tmp;
}

#define AGREE_SMALL 32

int tg_agree(tg_engine_t *e, const tg_hash128_t *values, size_t n, tg_agreement_t *out,
             tg_error_t *err)
{
    apair small[AGREE_SMALL], *a = small, *block = NULL;
    size_t distinct = 0, best = 0, best_first = 0, bytes = 0;
    unsigned bits = 0;

    tg_error_clear(err);
    if (!e || !values || !out || n == 0)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, n ? "NULL argument" : "no values to count");
    if (n > AGREE_SMALL) {
        /* one block: the pairs, the merge buffer, the bucket ends */
        bits = bucket_bits(n);
        if (n > (SIZE_MAX - (sizeof(size_t) << bits)) / (2 * sizeof *a))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        bytes = 2 * n * sizeof *a + (sizeof(size_t) << bits);
        if (!(block = tg_mem_realloc(e, NULL, 0, bytes)))
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        a = block;
    }
    for (size_t i = 0; i < n; i++) {
        a[i].hi = values[i].hi;
        a[i].lo = values[i].lo;
        a[i].index = i;
    }
    if (block)
        a = bucket_sort(block, block + n, n, (size_t *)(void *)(block + 2 * n), bits);
    else
        insertion_sort(a, n);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && a[j].hi == a[i].hi && a[j].lo == a[i].lo; j++)
            ;
        distinct++;
        if (j - i > best || (j - i == best && a[i].index < best_first)) {
            best = j - i;
            best_first = a[i].index;
        }
    }
    tg_mem_free(e, block, bytes);
    out->n = n;
    out->distinct = distinct;
    out->modal_count = best;
    out->representative = best_first;
    return TG_OK;
}

/* ---- per-pointer agreement ------------------------------------------------------ */

/* What the representative document has at a pointer. */
enum {
    REP_ABSENT = 0,
    REP_LEAF,
    REP_OBJECT,
    REP_ARRAY
};

#define NONE UINT32_MAX
#define INDEX_DIGITS 10 /* 4294967295 */

/* One distinct JSON Pointer met in some document. */
typedef struct pnode {
    uint64_t hash;   /* of (parent, segment), for the table */
    const char *key; /* the segment's bytes, in a document; NULL: in digits */
    uint32_t key_len;
    uint32_t parent;           /* NONE for the root */
    uint32_t depth;            /* segments */
    uint32_t nlive;            /* the plan's rules still matching below: */
    size_t live;               /* live[live .. live + nlive) */
    unsigned ops;              /* the plan's operations on strings here */
    uint32_t first_hint;       /* the first child the last document here had, or NONE */
    uint32_t next_hint;        /* the sibling that followed this node last time, or NONE */
    uint8_t rep_kind;          /* REP_* */
    uint8_t leaf;              /* some document has a leaf here */
    char digits[INDEX_DIGITS]; /* an array index (< 2^32), when key is NULL */
    size_t present;            /* documents with a value here */
    size_t agree;              /* of those, how many equal the representative's value */
    size_t rep_size;           /* values in the representative's subtree here */
    const tg_value_t *rep;     /* the representative's value here */
    size_t rep_str, rep_len;   /* its string as the plan rewrote it, in strs (ops != 0) */
} pnode;

/* The first blocks of the scratch arrays live in the context, on the C
 * stack: a handful of samples of one tool's arguments needs no allocation. */
#define LOCAL_NODES 32
#define LOCAL_SLOTS 64
#define LOCAL_LIVE 64
#define LOCAL_LIST 64

typedef struct actx {
    tg_engine_t *e;
    const tg_norm_t *plan;
    tg_error_t *err;
    pnode *nodes;
    size_t n_nodes, cap_nodes;
    uint32_t *slots; /* node number + 1, 0 for empty; a power of two, >= 2 n_nodes */
    size_t n_slots;
    uint32_t *live; /* the nodes' rule lists, one after another */
    size_t n_live, cap_live;
    size_t max_rules;
    tg_buf_t strs; /* the representative's rewritten strings */
    tg_norm_scratch sc;
    pnode local_nodes[LOCAL_NODES];
    uint32_t local_slots[LOCAL_SLOTS];
    uint32_t local_live[LOCAL_LIVE];
    uint32_t local_list[LOCAL_LIST];
} actx;

static inline const char *seg_of(const pnode *p)
{
    return p->key ? p->key : p->digits;
}

static int nomem(actx *c)
{
    return tg_fail(c->err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
}

/* Doubles the scratch array at p (cap elements of elem bytes, used in
 * use) until it holds need; the first time it leaves local, it is copied.
 * NULL when memory runs out (p is then unchanged). */
static void *grow_array(actx *c, void *p, const void *local, size_t used, size_t *cap, size_t need,
                        size_t elem)
{
    size_t ncap = *cap;
    void *q;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return NULL;
        ncap *= 2;
    }
    if (p == local) {
        if ((q = tg_mem_realloc(c->e, NULL, 0, ncap * elem)) != NULL && used)
            memcpy(q, p, used * elem);
    } else {
        q = tg_mem_realloc(c->e, p, *cap * elem, ncap * elem);
    }
    if (q)
        *cap = ncap;
    return q;
}

static void free_array(actx *c, void *p, const void *local, size_t bytes)
{
    if (p != local)
        tg_mem_free(c->e, p, bytes);
}

/* Room for one more node (and its slot); the table is rebuilt, twice the
 * size, from the hashes kept in the nodes. */
static int grow_nodes(actx *c)
{
    if (c->n_nodes >= NONE - 1)
        return tg_fail(c->err, TG_E_NOMEM, TG_NO_OFFSET, "more than 2^32 - 2 distinct pointers");
    if (c->n_nodes == c->cap_nodes) {
        pnode *p = grow_array(c, c->nodes, c->local_nodes, c->n_nodes, &c->cap_nodes,
                              c->n_nodes + 1, sizeof *p);
        if (!p)
            return nomem(c);
        c->nodes = p;
    }
    if (2 * (c->n_nodes + 1) > c->n_slots) {
        size_t slots = 2 * c->n_slots, mask = slots - 1;
        uint32_t *t;
        if (slots > SIZE_MAX / sizeof *t || !(t = tg_mem_realloc(c->e, NULL, 0, slots * sizeof *t)))
            return nomem(c);
        memset(t, 0, slots * sizeof *t);
        for (size_t k = 1; k < c->n_nodes; k++) { /* the root is never looked up */
            size_t i = (size_t)c->nodes[k].hash & mask;
            while (t[i])
                i = (i + 1) & mask;
            t[i] = (uint32_t)k + 1;
        }
        free_array(c, c->slots, c->local_slots, c->n_slots * sizeof *c->slots);
        c->slots = t;
        c->n_slots = slots;
    }
    return TG_OK;
}

/* Sets node id's rule list and operations from its parent's (or the
 * plan's root rules for the root). */
static int match_rules(actx *c, uint32_t id)
{
    pnode *p = &c->nodes[id];
    const pnode *up = p->parent == NONE ? NULL : &c->nodes[p->parent];
    uint32_t *next;
    p->ops = 0;
    p->nlive = 0;
    p->live = c->n_live;
    if (!c->plan || (up && up->nlive == 0))
        return TG_OK;
    if (c->max_rules > c->cap_live - c->n_live) {
        uint32_t *t = grow_array(c, c->live, c->local_live, c->n_live, &c->cap_live,
                                 c->n_live + c->max_rules, sizeof *t);
        if (!t)
            return nomem(c);
        c->live = t;
    }
    next = c->live + c->n_live;
    if (!up)
        p->nlive = (uint32_t)tg_norm_root(c->plan, next, &p->ops);
    else
        p->nlive = (uint32_t)tg_norm_step(c->plan, c->live + up->live, up->nlive, seg_of(p),
                                          p->key_len, TG_NORM_KEY, next, &p->ops);
    c->n_live += p->nlive;
    return TG_OK;
}

/* Writes the decimal text of index (< 2^32) to the start of digits; returns
 * its length. */
static inline size_t index_text(size_t index, char digits[INDEX_DIGITS])
{
    char tmp[20];
    int n = tg_u64_text(index, tmp);
    memcpy(digits, tmp, (size_t)n);
    return (size_t)n;
}

/* Whether node g is the child of parent named by key (klen bytes) or by
 * array index index. */
static inline int is_child(const actx *c, uint32_t g, uint32_t parent, const char *key, size_t klen,
                           size_t index)
{
    const pnode *q = &c->nodes[g];
    char digits[INDEX_DIGITS];
    if (q->parent != parent)
        return 0;
    if (index != TG_NORM_KEY) {
        klen = index_text(index, digits);
        key = digits;
    }
    return q->key_len == klen && (klen == 0 || memcmp(seg_of(q), key, klen) == 0);
}

/* The node for segment key (klen bytes; or array index index, when it is
 * not TG_NORM_KEY) under node parent, made when it is new. */
static int child_node(actx *c, uint32_t parent, const char *key, size_t klen, size_t index,
                      uint32_t *out)
{
    char digits[INDEX_DIGITS];
    uint64_t h;
    size_t mask, i;
    pnode *p;
    int rc;

    if (index != TG_NORM_KEY) {
        klen = index_text(index, digits);
        key = digits;
    }
    h = XXH3_64bits_withSeed(key, klen, parent);
    mask = c->n_slots - 1;
    for (i = (size_t)h & mask; c->slots[i]; i = (i + 1) & mask) {
        const pnode *q = &c->nodes[c->slots[i] - 1];
        if (q->hash == h && q->parent == parent && q->key_len == klen &&
            (klen == 0 || memcmp(seg_of(q), key, klen) == 0)) {
            *out = c->slots[i] - 1;
            return TG_OK;
        }
    }
    if (2 * (c->n_nodes + 1) > c->n_slots || c->n_nodes == c->cap_nodes) {
        if ((rc = grow_nodes(c)) != TG_OK)
            return rc;
        mask = c->n_slots - 1;
        for (i = (size_t)h & mask; c->slots[i]; i = (i + 1) & mask)
            ;
    }
    p = &c->nodes[c->n_nodes];
    memset(p, 0, sizeof *p);
    p->hash = h;
    p->key_len = (uint32_t)klen;
    if (key == digits)
        memcpy(p->digits, digits, klen);
    else
        p->key = key;
    p->parent = parent;
    p->depth = c->nodes[parent].depth + 1;
    p->first_hint = p->next_hint = NONE;
    if ((rc = match_rules(c, (uint32_t)c->n_nodes)) != TG_OK)
        return rc;
    c->slots[i] = (uint32_t)++c->n_nodes;
    *out = (uint32_t)c->n_nodes - 1;
    return TG_OK;
}

static int kind_of(const tg_value_t *v)
{
    if (v->type == TG_OBJECT && v->len)
        return REP_OBJECT;
    if (v->type == TG_ARRAY && v->len)
        return REP_ARRAY;
    return REP_LEAF;
}

/* Whether leaf v equals the representative's value at node p, both as the
 * plan rewrites them; -1 when memory ran out. */
static int leaf_equal(actx *c, const pnode *p, const tg_value_t *v)
{
    const tg_value_t *r = p->rep;
    if (p->rep_kind != REP_LEAF || r->type != v->type)
        return 0;
    switch (v->type) {
    case TG_NUMBER: /* as the exact form (TG_CANON_EXACT) tells them apart: by decimal */
        return tg_value_equal(v, r);
    case TG_STRING:
        if (p->ops) {
            const char *s;
            size_t len;
            if (tg_norm_apply(c->plan, p->ops, v->p.str, v->len, &c->sc, &s, &len, c->err) != TG_OK)
                return -1;
            return len == p->rep_len &&
                   (len == 0 || memcmp(s, c->strs.data + p->rep_str, len) == 0);
        }
        return v->len == r->len && (v->len == 0 || memcmp(v->p.str, r->p.str, v->len) == 0);
    default: /* null, false, true, {}, [] */
        return 1;
    }
}

/* Counts v, the value at node id of `weight` documents that are one value
 * (the representative and those equal to it, when is_rep, which are
 * counted first).  *size gets the number of values in v's subtree,
 * *matched how many of them equal the representative's value at the same
 * pointer (containers: have the same type there).  A container equals the
 * representative's when all of its values match and the two subtrees have
 * as many values: the match is then one to one. */
static int visit(actx *c, const tg_value_t *v, uint32_t id, int is_rep, size_t weight, size_t *size,
                 size_t *matched)
{
    int kind = kind_of(v), rc;
    size_t total = 1, hits = 0, self;
    pnode *p = &c->nodes[id];

    if (is_rep) {
        p->rep_kind = (uint8_t)kind;
        p->rep = v;
        if (kind == REP_LEAF && v->type == TG_STRING && p->ops) {
            const char *s;
            size_t len;
            if ((rc = tg_norm_apply(c->plan, p->ops, v->p.str, v->len, &c->sc, &s, &len, c->err)) !=
                TG_OK)
                return rc;
            p->rep_str = c->strs.len;
            p->rep_len = len;
            if ((rc = tg_buf_append(&c->strs, s, len, c->err)) != TG_OK)
                return rc;
        }
    }
    p->present += weight;
    if (kind == REP_LEAF) {
        int eq = is_rep ? 1 : leaf_equal(c, p, v);
        if (eq < 0)
            return TG_E_NOMEM;
        p->leaf = 1;
        p->agree += (size_t)eq * weight;
        *size = 1;
        *matched = (size_t)eq;
        return TG_OK;
    }
    for (uint32_t i = 0, prev = NONE; i < v->len; i++) {
        /* Samples mostly repeat the structure of the one before: try the
         * child that came next last time before hashing the key. */
        const tg_value_t *m = &v->p.items[i];
        size_t index = kind == REP_OBJECT ? TG_NORM_KEY : i, n, k;
        uint32_t *hint = prev == NONE ? &c->nodes[id].first_hint : &c->nodes[prev].next_hint;
        uint32_t cid = *hint;
        if (cid == NONE || !is_child(c, cid, id, m->key, m->key_len, index)) {
            if ((rc = child_node(c, id, m->key, m->key_len, index, &cid)) != TG_OK)
                return rc;
            /* (child_node may have moved the nodes) */
            *(prev == NONE ? &c->nodes[id].first_hint : &c->nodes[prev].next_hint) = cid;
        }
        if ((rc = visit(c, m, cid, is_rep, weight, &n, &k)) != TG_OK)
            return rc;
        total += n;
        hits += k;
        prev = cid;
    }
    p = &c->nodes[id]; /* the nodes may have moved */
    if (is_rep)
        p->rep_size = total;
    self = p->rep_kind == kind;
    if (self && hits + 1 == total && total == p->rep_size)
        p->agree += weight;
    *size = total;
    *matched = hits + self;
    return TG_OK;
}

/* Whether a and b are one value by construction: one node, or containers
 * with the same children (a repeat of the same text, shared by the
 * parser).  Equal values built apart are not found: they are only counted
 * one by one. */
static int one_value(const tg_value_t *a, const tg_value_t *b)
{
    return a == b || (a->type == b->type && a->len == b->len && a->len &&
                      (a->type == TG_OBJECT || a->type == TG_ARRAY) && a->p.items == b->p.items);
}

/* ---- ordering and writing pointers ------------------------------------------------ */

/* The next byte of a segment as RFC 6901 escapes it, then its terminator
 * (-1 for the end of the pointer, '/' when more follows), then -2. */
typedef struct escaped {
    const char *s;
    size_t len, i;
    int pending; /* the second byte of an escape, or -3 */
    int term;
} escaped;

static int esc_next(escaped *x)
{
    int b;
    if (x->pending != -3) {
        b = x->pending;
        x->pending = -3;
        return b;
    }
    if (x->i == x->len) {
        b = x->term;
        x->term = -2;
        return b;
    }
    b = (unsigned char)x->s[x->i++];
    if (b == '~' || b == '/') {
        x->pending = b == '~' ? '0' : '1';
        return '~';
    }
    return b;
}

/* Compares the full pointer texts of nodes a and b bytewise without
 * writing them: below their deepest common ancestor the two paths part
 * at two sibling segments, and those (each followed by '/' if its path
 * goes on) decide. */
static int pointer_cmp(const actx *c, uint32_t a, uint32_t b)
{
    const pnode *n = c->nodes;
    uint32_t x = a, y = b;
    escaped ex, ey;
    if (a == b)
        return 0;
    while (n[x].depth > n[y].depth)
        x = n[x].parent;
    while (n[y].depth > n[x].depth)
        y = n[y].parent;
    if (x == y) /* one is the other's ancestor, its text a proper prefix */
        return x == a ? -1 : 1;
    while (n[x].parent != n[y].parent) {
        x = n[x].parent;
        y = n[y].parent;
    }
    ex = (escaped){seg_of(&n[x]), n[x].key_len, 0, -3, x == a ? -1 : '/'};
    ey = (escaped){seg_of(&n[y]), n[y].key_len, 0, -3, y == b ? -1 : '/'};
    for (;;) {
        int p = esc_next(&ex), q = esc_next(&ey);
        if (p != q)
            return p < q ? -1 : 1;
        if (p == -2)
            return 0; /* not reached: siblings have different segments */
    }
}

static inline int entry_less(const actx *c, uint32_t a, uint32_t b)
{
    const pnode *p = &c->nodes[a], *q = &c->nodes[b];
    if (p->agree != q->agree)
        return p->agree < q->agree;
    return pointer_cmp(c, a, b) < 0;
}

static uint32_t *sort_entries(const actx *c, uint32_t *a, uint32_t *tmp, size_t n)
{
    for (size_t i = 0; i < n; i += SORT_RUN) {
        size_t m = n - i < SORT_RUN ? n - i : SORT_RUN;
        for (size_t k = 1; k < m; k++) {
            uint32_t x = a[i + k];
            size_t j = k;
            while (j > 0 && entry_less(c, x, a[i + j - 1])) {
                a[i + j] = a[i + j - 1];
                j--;
            }
            a[i + j] = x;
        }
    }
    for (size_t width = SORT_RUN; width < n; width *= 2) {
        uint32_t *t;
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = n - lo < width ? n : lo + width;
            size_t hi = n - lo < 2 * width ? n : lo + 2 * width;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = entry_less(c, a[j], a[i]) ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/* Writes node id's pointer into out (TG_FINDING_POINTER_MAX bytes with its
 * NUL), cut as the schema findings are: after the last whole segment that
 * leaves room for "/...", then "/...".  Only the segments nearest the root
 * can show, so a ring of them suffices however deep the node is. */
#define PTR_RING 256
static void write_pointer(const actx *c, uint32_t id, char *out)
{
    uint32_t ring[PTR_RING];
    size_t count = 0;
    tg_ptr_writer w;

    _Static_assert(PTR_RING >= TG_FINDING_POINTER_MAX, "every segment takes a byte");
    for (uint32_t x = id; c->nodes[x].parent != NONE; x = c->nodes[x].parent)
        ring[count++ % PTR_RING] = x;
    tg_pw_init(&w, out, TG_FINDING_POINTER_MAX);
    for (size_t k = 0; k < count && k < PTR_RING && !w.cut; k++) {
        const pnode *p = &c->nodes[ring[(count - 1 - k) % PTR_RING]];
        tg_pw_seg(&w, seg_of(p), p->key_len, 0);
    }
    tg_pw_end(&w);
}

int tg_pointer_agreement(tg_engine_t *e, const tg_value_t *const *docs, size_t n, size_t rep,
                         const tg_norm_t *plan, tg_pointer_agreement_t *out, size_t max,
                         size_t *count, tg_error_t *err)
{
    return tg_pointer_agreement_below(e, docs, n, rep, plan, SIZE_MAX, out, max, count, err);
}

int tg_pointer_agreement_below(tg_engine_t *e, const tg_value_t *const *docs, size_t n, size_t rep,
                               const tg_norm_t *plan, size_t below, tg_pointer_agreement_t *out,
                               size_t max, size_t *count, tg_error_t *err)
{
    actx c;
    uint32_t *list = NULL, *sorted;
    size_t n_list = 0, list_cap = 0, size, matched;
    int rc;

    tg_error_clear(err);
    if (!e || !docs || !count || (max && !out))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL argument");
    if (rep >= n)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "representative %zu is not one of %zu documents", rep, n);
    for (size_t i = 0; i < n; i++)
        if (!docs[i])
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "document %zu is NULL", i);

    c.e = e;
    c.plan = plan && tg_norm_rule_count(plan) ? plan : NULL;
    c.err = err;
    c.max_rules = tg_norm_rule_count(c.plan);
    c.nodes = c.local_nodes;
    c.cap_nodes = LOCAL_NODES;
    c.slots = c.local_slots;
    c.n_slots = LOCAL_SLOTS;
    memset(c.slots, 0, sizeof c.local_slots);
    c.live = c.local_live;
    c.n_live = 0;
    c.cap_live = LOCAL_LIVE;
    tg_buf_init(&c.strs, e);
    tg_norm_scratch_init(&c.sc, e);

    /* The root, then the representative (so that every other document
     * meets its values), then the others.  Samples mostly repeat one
     * another: the documents that are the representative's value are
     * counted with it, and a run of documents that are one value is
     * counted once, as many times over. */
    memset(&c.nodes[0], 0, sizeof c.nodes[0]);
    c.nodes[0].parent = NONE;
    c.nodes[0].first_hint = c.nodes[0].next_hint = NONE;
    c.n_nodes = 1;
    {
        size_t as_rep = 0, run = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            as_rep += one_value(docs[i], docs[rep]);
        if ((rc = match_rules(&c, 0)) != TG_OK ||
            (rc = visit(&c, docs[rep], 0, 1, as_rep, &size, &matched)) != TG_OK)
            goto done;
        for (size_t i = 0; i <= n; i++) {
            if (i < n && one_value(docs[i], docs[rep]))
                continue;
            if (run && (i == n || !one_value(docs[i], docs[first]))) {
                if ((rc = visit(&c, docs[first], 0, 0, run, &size, &matched)) != TG_OK)
                    goto done;
                run = 0;
            }
            if (i < n && run++ == 0)
                first = i;
        }
    }

    /* The leaf pointers agreed on by fewer than `below`, with their final
     * counts, in order. */
    for (size_t k = 0; k < c.n_nodes; k++) {
        pnode *p = &c.nodes[k];
        if (p->rep_kind == REP_ABSENT)
            p->agree = n - p->present; /* absent in both counts as agreeing */
        n_list += p->leaf && p->agree < below;
    }
    list = c.local_list; /* the list and the sort's buffer: 2 n_list */
    list_cap = LOCAL_LIST;
    if (2 * n_list > list_cap) {
        if (n_list > SIZE_MAX / (2 * sizeof *list) ||
            !(list = tg_mem_realloc(e, NULL, 0, 2 * n_list * sizeof *list))) {
            list = NULL;
            rc = nomem(&c);
            goto done;
        }
        list_cap = 2 * n_list;
    }
    n_list = 0;
    for (size_t k = 0; k < c.n_nodes; k++)
        if (c.nodes[k].leaf && c.nodes[k].agree < below)
            list[n_list++] = (uint32_t)k;
    sorted = sort_entries(&c, list, list + n_list, n_list);
    for (size_t k = 0; k < n_list && k < max; k++) {
        const pnode *p = &c.nodes[sorted[k]];
        write_pointer(&c, sorted[k], out[k].pointer);
        out[k].agree = p->agree;
        out[k].present = p->present;
    }
    *count = n_list;
    rc = TG_OK;

done:
    if (list)
        free_array(&c, list, c.local_list, list_cap * sizeof *list);
    free_array(&c, c.nodes, c.local_nodes, c.cap_nodes * sizeof *c.nodes);
    free_array(&c, c.slots, c.local_slots, c.n_slots * sizeof *c.slots);
    free_array(&c, c.live, c.local_live, c.cap_live * sizeof *c.live);
    tg_buf_free(&c.strs);
    tg_norm_scratch_free(&c.sc);
    return rc;
}
