/*
 * tg_normalize.c -- normalization plans (x-toolgate-canonical) and the
 * canonical writer that applies them.
 *
 * A plan is a list of rules -- a JSON Pointer pattern, split into segments
 * when it is added, and the operations for the strings it selects -- and a
 * table of aliases.  The writer walks a value as tg_canon_value does,
 * carrying down the walk the rules that still match the path; a subtree
 * that no rule can reach any more is handed to the plain writer whole, so
 * a plan costs nothing where it does not apply and a few comparisons per
 * member where it might.  It writes either canonical form (enum
 * tg_canon_mode): numbers are left to tg_canon_value_mode.
 */
#include "tg_norm.h"

#include <string.h>

#define ALL_OPS ((unsigned)(TG_NORM_TRIM | TG_NORM_LOWER | TG_NORM_PATH | TG_NORM_ID))

/* A segment knows what follows it, so that a walk's list of live rules can
 * hold, for each, the number of the segment it has to match next. */
typedef struct psegment {
    size_t off, len; /* the unescaped bytes, in the plan's byte pool */
    size_t index;    /* the array index the segment spells, or TG_NORM_KEY */
    int wild;        /* written "*" */
    int last;        /* its rule's last segment: a match there applies ops */
    unsigned ops;    /* its rule's operations */
} psegment;

typedef struct nrule {
    size_t seg, nseg; /* its segments: segs[seg .. seg + nseg) */
} nrule;

typedef struct nalias {
    uint64_t hash;               /* tg_hash64 of from */
    size_t from, flen, to, tlen; /* in the byte pool */
} nalias;

struct tg_norm_t {
    tg_engine_t *e;
    nrule *rules;
    size_t n_rules, cap_rules;
    psegment *segs;
    size_t n_segs, cap_segs;
    char *bytes; /* segments and aliases; referred to by offset, so it may move */
    size_t n_bytes, cap_bytes;
    nalias *aliases;
    size_t n_aliases, cap_aliases;
    uint32_t *slots; /* alias number + 1, 0 for empty; a power of two, >= 2 n_aliases */
    size_t n_slots;
    size_t max_nseg;   /* the most segments of any rule */
    unsigned root_ops; /* of the rules for "" */
};

/* ---- plans ------------------------------------------------------------------ */

/* Makes room for extra more elements of elem bytes after used in the block
 * *p of *cap elements, doubling; *p and *cap change only on success. */
static int reserve(tg_engine_t *e, void *p, size_t *cap, size_t used, size_t extra, size_t elem,
                   void **out)
{
    size_t need, ncap;
    void *q;
    *out = p;
    if (extra <= *cap - used)
        return TG_OK;
    if (extra > SIZE_MAX / elem - used)
        return TG_E_NOMEM;
    need = used + extra;
    ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / elem / 2 ? need : ncap * 2;
    if (!(q = tg_mem_realloc(e, p, *cap * elem, ncap * elem)))
        return TG_E_NOMEM;
    *out = q;
    *cap = ncap;
    return TG_OK;
}

tg_norm_t *tg_norm_new(tg_engine_t *e, tg_error_t *err)
{
    tg_norm_t *n;
    tg_error_clear(err);
    if (!e) {
        tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL engine");
        return NULL;
    }
    if (!(n = tg_mem_realloc(e, NULL, 0, sizeof *n))) {
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->e = e;
    tg_engine_retain(e);
    return n;
}

void tg_norm_free(tg_norm_t *n)
{
    tg_engine_t *e;
    if (!n)
        return;
    e = n->e;
    tg_mem_free(e, n->rules, n->cap_rules * sizeof *n->rules);
    tg_mem_free(e, n->segs, n->cap_segs * sizeof *n->segs);
    tg_mem_free(e, n->bytes, n->cap_bytes);
    tg_mem_free(e, n->aliases, n->cap_aliases * sizeof *n->aliases);
    tg_mem_free(e, n->slots, n->n_slots * sizeof *n->slots);
    tg_mem_free(e, n, sizeof *n);
    tg_engine_release(e);
}

/* One array of a plan copied for its copy; TG_OK or TG_E_NOMEM. */
static int copy_array(tg_engine_t *e, const void *src, size_t cap, size_t elem, void *dst)
{
    void *q = NULL;
    if (cap) {
        if (!(q = tg_mem_realloc(e, NULL, 0, cap * elem)))
            return TG_E_NOMEM;
        memcpy(q, src, cap * elem);
    }
    memcpy(dst, &q, sizeof q);
    return TG_OK;
}

tg_norm_t *tg_norm_copy(const tg_norm_t *src, tg_error_t *err)
{
    tg_norm_t *n = tg_norm_new(src->e, err);
    if (!n)
        return NULL;
    /* the sizes first, so that a failure part way frees what was copied */
    n->cap_rules = src->cap_rules;
    n->cap_segs = src->cap_segs;
    n->cap_bytes = src->cap_bytes;
    n->cap_aliases = src->cap_aliases;
    n->n_slots = src->n_slots;
    if (copy_array(src->e, src->rules, src->cap_rules, sizeof *src->rules, &n->rules) != TG_OK ||
        copy_array(src->e, src->segs, src->cap_segs, sizeof *src->segs, &n->segs) != TG_OK ||
        copy_array(src->e, src->bytes, src->cap_bytes, 1, &n->bytes) != TG_OK ||
        copy_array(src->e, src->aliases, src->cap_aliases, sizeof *src->aliases, &n->aliases) !=
            TG_OK ||
        copy_array(src->e, src->slots, src->n_slots, sizeof *src->slots, &n->slots) != TG_OK) {
        /* the arrays not reached are NULL with their sizes: freeing NULL is nothing */
        tg_norm_free(n);
        tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        return NULL;
    }
    n->n_rules = src->n_rules;
    n->n_segs = src->n_segs;
    n->n_bytes = src->n_bytes;
    n->n_aliases = src->n_aliases;
    n->max_nseg = src->max_nseg;
    n->root_ops = src->root_ops;
    return n;
}

/* The index an RFC 6901 segment names in an array ("0", or digits without
 * a leading zero), or TG_NORM_KEY (also for indexes no array can have). */
static size_t segment_index(const char *s, size_t len)
{
    size_t v = 0;
    if (len == 0 || (len > 1 && s[0] == '0'))
        return TG_NORM_KEY;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (TG_NORM_KEY - 1 - 9) / 10)
            return TG_NORM_KEY;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    return v;
}

int tg_norm_add_rule(tg_norm_t *n, const char *pattern, size_t len, unsigned ops, tg_error_t *err)
{
    size_t nseg = 0, first, i;
    void *p;
    nrule *r;

    tg_error_clear(err);
    if (!n || (!pattern && len))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL plan or pattern");
    if (ops == 0 || (ops & ~ALL_OPS))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET,
                       "ops must be a nonzero combination of trim, lower, path and id");
    if (len > TG_FINDING_POINTER_MAX)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "pattern longer than %d bytes",
                       TG_FINDING_POINTER_MAX);
    if (len && pattern[0] != '/')
        return tg_fail(err, TG_E_ARG, 0, "a pattern is \"\" or begins with '/'");
    for (i = 0; i < len; i++) {
        if (pattern[i] == '/')
            nseg++;
        else if (pattern[i] == '~' &&
                 (i + 1 == len || (pattern[i + 1] != '0' && pattern[i + 1] != '1')))
            return tg_fail(err, TG_E_ARG, i, "'~' in a pattern must be followed by 0 or 1");
    }
    if (n->n_segs + nseg >= UINT32_MAX) /* live lists hold segment numbers */
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "too many rules");
    /* All the room first, so that a failure leaves the plan as it was
     * (only bigger).  The byte pool always gets a byte, so it is never NULL. */
    if (reserve(n->e, n->rules, &n->cap_rules, n->n_rules, 1, sizeof *n->rules, &p) != TG_OK)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    n->rules = p;
    if (reserve(n->e, n->segs, &n->cap_segs, n->n_segs, nseg, sizeof *n->segs, &p) != TG_OK)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    n->segs = p;
    if (reserve(n->e, n->bytes, &n->cap_bytes, n->n_bytes, len + 1, 1, &p) != TG_OK)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    n->bytes = p;

    first = n->n_segs;
    for (i = 0; i < len;) {
        size_t start = ++i; /* past the '/' */
        psegment *s = &n->segs[n->n_segs++];
        s->off = n->n_bytes;
        while (i < len && pattern[i] != '/') {
            char c = pattern[i++];
            if (c == '~')
                c = pattern[i++] == '0' ? '~' : '/';
            n->bytes[n->n_bytes++] = c;
        }
        s->len = n->n_bytes - s->off;
        s->wild = i - start == 1 && pattern[start] == '*';
        s->index = segment_index(n->bytes + s->off, s->len);
        s->last = i == len;
        s->ops = ops;
    }
    r = &n->rules[n->n_rules++];
    r->seg = first;
    r->nseg = nseg;
    if (nseg > n->max_nseg)
        n->max_nseg = nseg;
    if (nseg == 0)
        n->root_ops |= ops;
    return TG_OK;
}

/* Well-formed UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static int utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i], cp, min;
        size_t k;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            k = 1, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            k = 2, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            k = 3, cp = c & 0x07, min = 0x10000;
        else
            return 0;
        if (len - i - 1 < k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k + 1;
    }
    return 1;
}

static const nalias *alias_find(const tg_norm_t *n, const char *s, size_t len, uint64_t h)
{
    size_t mask = n->n_slots - 1, i;
    if (!n->n_slots)
        return NULL;
    for (i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t k = n->slots[i];
        const nalias *a;
        if (!k)
            return NULL;
        a = &n->aliases[k - 1];
        if (a->hash == h && a->flen == len && (len == 0 || memcmp(n->bytes + a->from, s, len) == 0))
            return a;
    }
}

static void alias_insert(uint32_t *slots, size_t n_slots, uint64_t h, uint32_t k)
{
    size_t mask = n_slots - 1, i = (size_t)h & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = k;
}

int tg_norm_add_alias(tg_norm_t *n, const char *from, size_t flen, const char *to, size_t tlen,
                      tg_error_t *err)
{
    const nalias *old;
    nalias *a;
    uint64_t h;
    void *p;

    tg_error_clear(err);
    if (!n || (!from && flen) || (!to && tlen))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL plan or alias");
    if (!utf8_valid(from, flen) || !utf8_valid(to, tlen))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "an alias must be valid UTF-8");
    h = tg_hash64(flen ? from : "", flen);
    if ((old = alias_find(n, from, flen, h)) != NULL) {
        if (old->tlen == tlen && (tlen == 0 || memcmp(n->bytes + old->to, to, tlen) == 0))
            return TG_OK;
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "alias '%.*s' already resolves to another id",
                       flen > 64 ? 64 : (int)flen, from);
    }
    if (n->n_aliases >= UINT32_MAX / 4 || flen > SIZE_MAX / 2 - tlen)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "too many or too long aliases");
    if (reserve(n->e, n->aliases, &n->cap_aliases, n->n_aliases, 1, sizeof *n->aliases, &p) !=
        TG_OK)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    n->aliases = p;
    if (reserve(n->e, n->bytes, &n->cap_bytes, n->n_bytes, flen + tlen + 1, 1, &p) != TG_OK)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    n->bytes = p;
    if (2 * (n->n_aliases + 1) > n->n_slots) {
        /* Twice the size, rebuilt from the hashes kept in the entries. */
        size_t slots = n->n_slots ? 2 * n->n_slots : 16;
        uint32_t *t = tg_mem_realloc(n->e, NULL, 0, slots * sizeof *t);
        if (!t)
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        memset(t, 0, slots * sizeof *t);
        for (size_t i = 0; i < n->n_aliases; i++)
            alias_insert(t, slots, n->aliases[i].hash, (uint32_t)i + 1);
        tg_mem_free(n->e, n->slots, n->n_slots * sizeof *n->slots);
        n->slots = t;
        n->n_slots = slots;
    }
    a = &n->aliases[n->n_aliases++];
    a->hash = h;
    a->from = n->n_bytes;
    a->flen = flen;
    if (flen)
        memcpy(n->bytes + n->n_bytes, from, flen);
    n->n_bytes += flen;
    a->to = n->n_bytes;
    a->tlen = tlen;
    if (tlen)
        memcpy(n->bytes + n->n_bytes, to, tlen);
    n->n_bytes += tlen;
    alias_insert(n->slots, n->n_slots, h, (uint32_t)n->n_aliases);
    return TG_OK;
}

/* ---- matching ----------------------------------------------------------------- */

size_t tg_norm_rule_count(const tg_norm_t *n)
{
    return n ? n->n_rules : 0;
}

size_t tg_norm_root(const tg_norm_t *n, uint32_t *live, unsigned *ops)
{
    size_t k = 0;
    for (size_t i = 0; i < n->n_rules; i++)
        if (n->rules[i].nseg)
            live[k++] = (uint32_t)n->rules[i].seg;
    *ops = n->root_ops;
    return k;
}

static inline size_t step(const tg_norm_t *n, const uint32_t *live, size_t nlive, const char *key,
                          size_t klen, size_t index, uint32_t *next, unsigned *ops)
{
    const psegment *segs = n->segs;
    size_t k = 0;
    unsigned o = 0;
    for (size_t i = 0; i < nlive; i++) {
        const psegment *s = &segs[live[i]];
        if (!s->wild) {
            /* keys of one length mostly differ in their first byte: test
             * that before paying for a call */
            const char *b = n->bytes + s->off;
            if (index != TG_NORM_KEY
                    ? s->index != index
                    : s->len != klen || (klen && (b[0] != key[0] || memcmp(b, key, klen) != 0)))
                continue;
        }
        if (s->last)
            o |= s->ops;
        else
            next[k++] = live[i] + 1;
    }
    *ops = o;
    return k;
}

size_t tg_norm_step(const tg_norm_t *n, const uint32_t *live, size_t nlive, const char *key,
                    size_t klen, size_t index, uint32_t *next, unsigned *ops)
{
    return step(n, live, nlive, key, klen, index, next, ops);
}

/* ---- rewriting one string ------------------------------------------------------- */

void tg_norm_scratch_init(tg_norm_scratch *sc, tg_engine_t *e)
{
    sc->engine = e;
    sc->heap = NULL;
    sc->cap = 0;
}

void tg_norm_scratch_free(tg_norm_scratch *sc)
{
    tg_mem_free(sc->engine, sc->heap, sc->cap);
    sc->heap = NULL;
    sc->cap = 0;
}

/* need bytes of scratch, or NULL (out of memory). */
static char *scratch(tg_norm_scratch *sc, size_t need)
{
    size_t cap;
    char *p;
    if (need <= sizeof sc->small)
        return sc->small;
    if (need <= sc->cap)
        return sc->heap;
    cap = sc->cap ? sc->cap : 1024;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    /* nothing in it needs keeping: free, then allocate */
    tg_mem_free(sc->engine, sc->heap, sc->cap);
    sc->heap = NULL;
    sc->cap = 0;
    if (!(p = tg_mem_realloc(sc->engine, NULL, 0, cap)))
        return NULL;
    sc->heap = p;
    sc->cap = cap;
    return p;
}

static inline int is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r'); /* \t \n \v \f \r */
}

/* Go's lazybuf: the output stays a prefix of the input until the first
 * byte that differs, and only then is copied to buf (room for the input's
 * length: cleaning never lengthens a path, except "" -> "."). */
typedef struct lazybuf {
    const char *s;
    size_t n;
    char *buf;
    size_t w;
    int copied;
} lazybuf;

static inline char lb_at(const lazybuf *b, size_t i)
{
    return b->copied ? b->buf[i] : b->s[i];
}

static inline void lb_put(lazybuf *b, char c)
{
    if (!b->copied) {
        if (b->w < b->n && b->s[b->w] == c) {
            b->w++;
            return;
        }
        if (b->w)
            memcpy(b->buf, b->s, b->w);
        b->copied = 1;
    }
    b->buf[b->w++] = c;
}

/* Lexical path cleaning, Go's path.Clean step for step (see toolgate.h for
 * the rules).  Returns the result, which is s itself, buf or ".". */
static const char *clean_path(const char *s, size_t n, char *buf, size_t *olen)
{
    lazybuf out = {s, n, buf, 0, 0};
    size_t r = 0, dotdot = 0;
    int rooted;
    if (n == 0) {
        *olen = 1;
        return ".";
    }
    rooted = s[0] == '/';
    if (rooted) {
        lb_put(&out, '/');
        r = dotdot = 1;
    }
    while (r < n) {
        if (s[r] == '/') {
            r++; /* empty segment */
        } else if (s[r] == '.' && (r + 1 == n || s[r + 1] == '/')) {
            r++; /* "." */
        } else if (s[r] == '.' && s[r + 1] == '.' && (r + 2 == n || s[r + 2] == '/')) {
            r += 2; /* "..": back up to the previous '/', or keep it */
            if (out.w > dotdot) {
                out.w--;
                while (out.w > dotdot && lb_at(&out, out.w) != '/')
                    out.w--;
            } else if (!rooted) {
                if (out.w > 0)
                    lb_put(&out, '/');
                lb_put(&out, '.');
                lb_put(&out, '.');
                dotdot = out.w;
            }
        } else {
            if ((rooted && out.w != 1) || (!rooted && out.w != 0))
                lb_put(&out, '/');
            for (; r < n && s[r] != '/'; r++)
                lb_put(&out, s[r]);
        }
    }
    if (out.w == 0) {
        *olen = 1;
        return ".";
    }
    *olen = out.w;
    return out.copied ? buf : s;
}

int tg_norm_apply(const tg_norm_t *n, unsigned ops, const char *s, size_t len, tg_norm_scratch *sc,
                  const char **out, size_t *olen, tg_error_t *err)
{
    char *buf = NULL;

    if (ops & TG_NORM_TRIM) {
        while (len && is_space((unsigned char)s[0]))
            s++, len--;
        while (len && is_space((unsigned char)s[len - 1]))
            len--;
    }
    if (ops & (TG_NORM_LOWER | TG_NORM_PATH)) {
        size_t i = 0; /* the first capital letter to lower, or len */
        if (ops & TG_NORM_LOWER)
            while (i < len && !(s[i] >= 'A' && s[i] <= 'Z'))
                i++;
        else
            i = len;
        if ((ops & TG_NORM_PATH) || i < len) {
            /* [0, len): the lowered copy; [len, 2 len): the cleaned path */
            if (len > SIZE_MAX / 2 || !(buf = scratch(sc, 2 * len)))
                return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        }
        if (i < len) {
            memcpy(buf, s, i);
            for (; i < len; i++)
                buf[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + ('a' - 'A') : s[i]);
            s = buf;
        }
        if (ops & TG_NORM_PATH)
            s = clean_path(s, len, buf + len, &len);
    }
    if ((ops & TG_NORM_ID) && n->n_aliases) {
        const nalias *a = alias_find(n, s, len, tg_hash64(s, len));
        if (a) {
            s = n->bytes + a->to;
            len = a->tlen;
        }
    }
    *out = s;
    *olen = len;
    return TG_OK;
}

int tg_norm_string(const tg_norm_t *n, unsigned ops, const char *s, size_t len, tg_buf_t *out,
                   tg_error_t *err)
{
    tg_norm_scratch sc;
    const char *r;
    size_t rlen;
    int rc;

    tg_error_clear(err);
    if (!out || (!s && len) || (ops & ~ALL_OPS))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "bad arguments to tg_norm_string");
    if ((ops & TG_NORM_ID) && !n)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "TG_NORM_ID needs a plan (its aliases)");
    if (!n) {                        /* the other operations need no plan: an empty one stands in */
        static const tg_norm_t none; /* read-only: no rules, no aliases */
        n = &none;
    }
    tg_norm_scratch_init(&sc, out->engine);
    rc = tg_norm_apply(n, ops, s ? s : "", len, &sc, &r, &rlen, err);
    if (rc == TG_OK)
        rc = tg_buf_append(out, r, rlen, err);
    tg_norm_scratch_free(&sc);
    return rc;
}

/* ---- the writer ----------------------------------------------------------------- */

typedef struct nwalk {
    const tg_norm_t *n;
    int mode; /* enum tg_canon_mode */
    tg_buf_t *out;
    tg_error_t *err;
    tg_norm_scratch sc;
} nwalk;

/* Room for n more bytes and the overhang of copy_blocks. */
static inline int room(tg_buf_t *out, size_t n, tg_error_t *err)
{
    return n + 16 <= out->cap - out->len ? TG_OK : tg_buf_reserve(out, n + 16, err);
}

/* Copies n bytes in whole 16-byte blocks, as tg_canon.c does: the sources
 * are the bytes of TG_F_RAW_* nodes, readable TG_INPUT_PAD bytes past their end (see
 * tg_internal.h), or the padded literals below; room() made the space. */
static inline void copy_blocks(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i += 16)
        memcpy(dst + i, src + i, 16);
}

static const char literals[3][16] = {"null", "false", "true"}; /* TG_NULL, TG_FALSE, TG_TRUE */

/* The canonical bytes of v when they can be copied as they are (a raw
 * string or number, or a literal): *len gets their length.  NULL otherwise. */
static inline const char *raw_bytes(const tg_value_t *v, size_t *len)
{
    if (v->flags & TG_F_RAW_STR) {
        *len = (size_t)v->len + 2;
        return v->p.str - 1;
    }
    if (v->flags & TG_F_RAW_NUM) {
        *len = v->len;
        return v->p.text;
    }
    if (v->type <= TG_TRUE) {
        *len = v->type == TG_FALSE ? 5 : 4;
        return literals[v->type];
    }
    return NULL;
}

/* Writes v as tg_canon_value_mode does (its bytes copied, when they can
 * be: a raw number is its own form in either mode). */
static inline int write_plain(nwalk *w, const tg_value_t *v)
{
    size_t len;
    const char *raw = raw_bytes(v, &len);
    int rc;
    if (!raw)
        return tg_canon_value_mode(v, w->mode, w->out, w->err);
    if ((rc = room(w->out, len, w->err)) != TG_OK)
        return rc;
    copy_blocks(w->out->data + w->out->len, raw, len);
    w->out->len += len;
    return TG_OK;
}

/* Writes the separator before child c (when it is not the first) and, in
 * an object, its key and ':'.  With plain set, writes c itself too, in the
 * same stroke when its key and bytes can be copied: the common case of a
 * member no rule rewrites.  Returns TG_OK or an error. */
static inline int write_member(nwalk *w, const tg_value_t *c, int first, int object, int plain)
{
    tg_buf_t *out = w->out;
    size_t vlen = 0, klen = object ? (size_t)c->key_len + 2 : 0;
    const char *raw = plain ? raw_bytes(c, &vlen) : NULL;
    int rc;
    if (raw && (!object || (c->flags & TG_F_RAW_KEY))) {
        char *p;
        if ((rc = room(out, klen + vlen + 2, w->err)) != TG_OK)
            return rc;
        p = out->data + out->len;
        if (!first)
            *p++ = ',';
        if (object) {
            copy_blocks(p, c->key - 1, klen);
            p += klen;
            *p++ = ':';
        }
        copy_blocks(p, raw, vlen);
        out->len = (size_t)(p - out->data) + vlen;
        return TG_OK;
    }
    if (!first && (rc = tg_buf_put(out, ",", 1, w->err)) != TG_OK)
        return rc;
    if (object) {
        if (c->flags & TG_F_RAW_KEY)
            rc = tg_buf_put(out, c->key - 1, klen, w->err);
        else
            rc = tg_canon_string(out, c->key, c->key_len, w->err);
        if (rc != TG_OK || (rc = tg_buf_put(out, ":", 1, w->err)) != TG_OK)
            return rc;
    }
    return plain ? write_plain(w, c) : TG_OK;
}

/* Writes v, a node whose path the rules in live[0..nlive) still match and
 * at which the operations ops apply.  The children's lists go right after
 * live: the walk uses its stack of lists depth-first. */
static int write_norm(nwalk *w, const tg_value_t *v, unsigned ops, uint32_t *live, size_t nlive)
{
    uint32_t *next = live + nlive;
    uint64_t filter = 0;
    int object = v->type == TG_OBJECT, rc;

    if (v->type == TG_STRING) {
        const char *s;
        size_t len;
        if (!ops)
            return write_plain(w, v);
        if ((rc = tg_norm_apply(w->n, ops, v->p.str, v->len, &w->sc, &s, &len, w->err)) != TG_OK)
            return rc;
        if (s == v->p.str && len == v->len) /* nothing changed: its bytes as they are */
            return write_plain(w, v);
        return tg_canon_string(w->out, s, len, w->err);
    }
    if (!nlive || (!object && v->type != TG_ARRAY))
        return write_plain(w, v);
    /* A filter: bit (length mod 64) of every key, bit (index mod 64) of
     * every index, the live segments can match; a member outside it is
     * written without asking each rule. */
    for (size_t i = 0; i < nlive; i++) {
        const psegment *s = &w->n->segs[live[i]];
        if (s->wild) {
            filter = ~(uint64_t)0;
            break;
        }
        if (object)
            filter |= (uint64_t)1 << (s->len & 63);
        else if (s->index != TG_NORM_KEY)
            filter |= (uint64_t)1 << (s->index & 63);
    }
    if ((rc = tg_buf_put(w->out, object ? "{" : "[", 1, w->err)) != TG_OK)
        return rc;
    for (uint32_t i = 0; i < v->len; i++) {
        const tg_value_t *c = &v->p.items[i];
        unsigned cops = 0;
        size_t nnext = 0;
        int plain;
        if (filter & ((uint64_t)1 << ((object ? c->key_len : i) & 63)))
            nnext =
                step(w->n, live, nlive, c->key, c->key_len, object ? TG_NORM_KEY : i, next, &cops);
        plain = !nnext && !(cops && c->type == TG_STRING);
        if ((rc = write_member(w, c, i == 0, object, plain)) != TG_OK ||
            (!plain && (rc = write_norm(w, c, cops, next, nnext)) != TG_OK))
            return rc;
    }
    return tg_buf_put(w->out, object ? "}" : "]", 1, w->err);
}

int tg_canon_normalized(const tg_norm_t *n, const tg_value_t *v, int mode, tg_buf_t *out,
                        tg_error_t *err)
{
    uint32_t small[64], *stack = small;
    size_t need = 0, nlive;
    unsigned ops;
    nwalk w;
    int rc;

    if (!n || n->n_rules == 0)
        return tg_canon_value_mode(v, mode, out, err);
    tg_error_clear(err);
    if (!v || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "NULL value or buffer");
    if (mode != TG_CANON_RFC8785 && mode != TG_CANON_EXACT)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "unknown canonical mode %d", mode);
    /* Lists exist at depths below max_nseg, each at most n_rules long. */
    if (n->max_nseg) {
        if (n->n_rules > SIZE_MAX / sizeof *stack / n->max_nseg)
            return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
        need = n->n_rules * n->max_nseg;
    }
    if (need > sizeof small / sizeof *small &&
        !(stack = tg_mem_realloc(n->e, NULL, 0, need * sizeof *stack)))
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    w.n = n;
    w.mode = mode;
    w.out = out;
    w.err = err;
    tg_norm_scratch_init(&w.sc, n->e);
    nlive = tg_norm_root(n, stack, &ops);
    rc = write_norm(&w, v, ops, stack, nlive);
    tg_norm_scratch_free(&w.sc);
    if (stack != small)
        tg_mem_free(n->e, stack, need * sizeof *stack);
    return rc;
}
