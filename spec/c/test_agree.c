/*
 * test_agree.c -- agreement counting: tg_agree on edge, tie and large
 * cases and against a naive O(n^2) counter on random inputs;
 * tg_pointer_agreement on the fabricated-argument signature, nested
 * values, absent pointers, leaves against containers, normalization,
 * pointer order and truncation, 10,000 documents, and against a naive
 * reference (the documents' exact canonical forms, TG_CANON_EXACT) on
 * random documents, given again (one node twice, or a repeat the parser
 * shared) as samples repeat one another; allocation failures for both.
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t */
#include "acct.h"
#include "tap.h"
#include "tg_internal.h"

#include <stdlib.h>

static tg_engine_t *E;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static tg_hash128_t hv(uint64_t hi, uint64_t lo)
{
    tg_hash128_t h;
    h.hi = hi;
    h.lo = lo;
    return h;
}

static int agree_is(const tg_hash128_t *v, size_t n, size_t distinct, size_t modal, size_t rep,
                    const char *name)
{
    tg_agreement_t a;
    tg_error_t err;
    int rc = tg_agree(E, v, n, &a, &err);
    int ok = rc == TG_OK && a.n == n && a.distinct == distinct && a.modal_count == modal &&
             a.representative == rep;
    tap_ok(ok, name);
    if (!ok)
        printf("#   rc %s: n %zu distinct %zu modal %zu rep %zu; want %zu %zu %zu\n",
               tg_code_name(rc), a.n, a.distinct, a.modal_count, a.representative, distinct, modal,
               rep);
    return ok;
}

/* The reference: O(n^2), first occurrences in index order. */
static void naive_agree(const tg_hash128_t *v, size_t n, tg_agreement_t *out)
{
    out->n = n;
    out->distinct = out->modal_count = out->representative = 0;
    for (size_t i = 0; i < n; i++) {
        size_t count = 0, first = 1;
        for (size_t j = 0; j < n; j++)
            if (v[j].hi == v[i].hi && v[j].lo == v[i].lo) {
                if (j < i)
                    first = 0;
                count++;
            }
        if (!first)
            continue;
        out->distinct++;
        if (count > out->modal_count) {
            out->modal_count = count;
            out->representative = i;
        }
    }
}

static void agree_values(void)
{
    tg_hash128_t v[64];
    tg_agreement_t a;
    tg_error_t err;

    tap_ok(tg_agree(E, v, 0, &a, &err) == TG_E_ARG, "n = 0 is BAD_ARGUMENT");
    tap_ok(tg_agree(E, NULL, 3, &a, &err) == TG_E_ARG, "NULL values is BAD_ARGUMENT");
    tap_ok(tg_agree(E, v, 3, NULL, &err) == TG_E_ARG, "NULL result is BAD_ARGUMENT");
    tap_ok(tg_agree(NULL, v, 3, &a, &err) == TG_E_ARG, "NULL engine is BAD_ARGUMENT");

    v[0] = hv(5, 5);
    agree_is(v, 1, 1, 1, 0, "n = 1");
    for (int i = 0; i < 7; i++)
        v[i] = hv(42, 7);
    agree_is(v, 7, 1, 7, 0, "all equal");
    for (int i = 0; i < 50; i++)
        v[i] = hv((uint64_t)(50 - i), 0); /* descending: sorting reverses them */
    agree_is(v, 50, 50, 1, 0, "all distinct: the first value represents");
    v[0] = hv(2, 0), v[1] = hv(1, 0), v[2] = hv(1, 0), v[3] = hv(2, 0);
    agree_is(v, 4, 2, 2, 0,
             "a tie goes to the group whose first member comes first (not the smaller value)");
    v[0] = hv(9, 0), v[1] = hv(3, 0), v[2] = hv(1, 0), v[3] = hv(3, 0), v[4] = hv(1, 0);
    agree_is(v, 5, 3, 2, 1, "tie between later groups");
    v[0] = hv(7, 2), v[1] = hv(7, 1), v[2] = hv(7, 2), v[3] = hv(6, 2);
    agree_is(v, 4, 3, 2, 0, "equal high halves, different low halves are different values");
    v[0] = hv(1, 1), v[1] = hv(2, 2), v[2] = hv(3, 3), v[3] = hv(2, 2), v[4] = hv(3, 3),
    v[5] = hv(3, 3);
    agree_is(v, 6, 3, 3, 2, "the biggest group wins over an earlier one");
    for (int i = 0; i < 40; i++) /* past the stack size: the sorted path */
        v[i] = hv((uint64_t)(i % 4 == 3 ? 1 : 100 + i), 0);
    agree_is(v, 40, 31, 10, 3, "n = 40 with a group of 10 starting at 3");

    {
        /* 10,000 values: 3000 copies of X at 7, 10, 13, ...; groups of 2999 and 5 of Y, Z */
        size_t n = 10000;
        tg_hash128_t *big = malloc(n * sizeof *big);
        for (size_t i = 0; i < n; i++)
            big[i] = hv(next_rand(), next_rand()); /* distinct (almost surely) */
        for (size_t k = 0; k < 3000; k++)
            big[7 + 3 * k] = hv(0xDEAD, 0xBEEF);
        for (size_t k = 0; k < 2999; k++) /* Y starts earlier but is one short */
            big[5 + 3 * k] = hv(0x1, 0x1);
        agree_is(big, n, 10000 - 3000 - 2999 + 2, 3000, 7,
                 "10,000 values with a modal group of 3000 from index 7");
        free(big);
    }

    {
        /* property: random small alphabets, every size around the stack threshold */
        int all = 1, cases = 0;
        tg_hash128_t *r = malloc(400 * sizeof *r);
        for (int round = 0; round < 600; round++) {
            size_t n = 1 + next_rand() % (round < 300 ? 40 : 400);
            uint64_t alphabet = 1 + next_rand() % 12;
            tg_agreement_t want, got;
            for (size_t i = 0; i < n; i++) {
                uint64_t x = next_rand() % alphabet;
                r[i] = hv(x % 3, x); /* shared high halves too */
            }
            naive_agree(r, n, &want);
            all &= tg_agree(E, r, n, &got, &err) == TG_OK && got.n == want.n &&
                   got.distinct == want.distinct && got.modal_count == want.modal_count &&
                   got.representative == want.representative;
            cases++;
        }
        free(r);
        tap_ok(all && cases == 600, "600 random inputs agree with the naive O(n^2) counter");
    }
}

/* ---- documents --------------------------------------------------------------- */

typedef struct docset {
    size_t n;
    tg_doc_t **docs;
    const tg_value_t **roots;
} docset;

static docset load(const char *const *texts, size_t n)
{
    docset s;
    tg_error_t err;
    s.n = n;
    s.docs = calloc(n, sizeof *s.docs);
    s.roots = calloc(n, sizeof *s.roots);
    for (size_t i = 0; i < n; i++) {
        if (tg_parse(E, texts[i], strlen(texts[i]), &s.docs[i], &err) != TG_OK)
            printf("# parse %s: %s\n", texts[i], err.message);
        s.roots[i] = tg_doc_root(s.docs[i]);
    }
    return s;
}

static void unload(docset *s)
{
    for (size_t i = 0; i < s->n; i++)
        tg_doc_free(s->docs[i]);
    free(s->docs);
    free(s->roots);
}

/* Checks the result against "pointer agree present" triples, one per line. */
static void pointers_are(const char *const *texts, size_t n, size_t rep, const tg_norm_t *plan,
                         const char *want, const char *name)
{
    docset s = load(texts, n);
    tg_pointer_agreement_t out[32];
    size_t count = 0, len = 0;
    tg_error_t err;
    char got[4096];
    int rc = tg_pointer_agreement(E, s.roots, n, rep, plan, out, 32, &count, &err);
    got[0] = '\0';
    for (size_t i = 0; rc == TG_OK && i < count && i < 32; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s %zu %zu\n", out[i].pointer,
                                out[i].agree, out[i].present);
    if (rc != TG_OK)
        snprintf(got, sizeof got, "error %s: %s", tg_code_name(rc), err.message);
    tap_is_mem(got, strlen(got), want, name);
    /* the same pointers, only those not every document agrees on */
    {
        char below[4096], fewer[4096], tag[256];
        size_t blen = 0, flen = 0;
        const char *line = want;
        rc = tg_pointer_agreement_below(E, s.roots, n, rep, plan, n, out, 32, &count, &err);
        below[0] = fewer[0] = '\0';
        for (size_t i = 0; rc == TG_OK && i < count && i < 32; i++)
            blen += (size_t)snprintf(below + blen, sizeof below - blen, "%s %zu %zu\n",
                                     out[i].pointer, out[i].agree, out[i].present);
        while (rc == TG_OK && *line && strncmp(line, "error", 5) != 0) {
            const char *end = strchr(line, '\n'), *sp = strchr(line, ' ');
            if (strtoul(sp + 1, NULL, 10) < n)
                flen += (size_t)snprintf(fewer + flen, sizeof fewer - flen, "%.*s",
                                         (int)(end - line + 1), line);
            line = end + 1;
        }
        snprintf(tag, sizeof tag, "%s (below %zu)", name, n);
        if (rc == TG_OK && strncmp(want, "error", 5) != 0)
            tap_is_mem(below, blen, fewer, tag);
    }
    unload(&s);
}

static void pointer_cases(void)
{
    tg_error_t err;
    {
        static const char *const d[] = {
            "{\"path\":\"/tmp/a\",\"user_id\":\"u-1093\",\"mode\":\"r\"}",
            "{\"path\":\"/tmp/a\",\"user_id\":\"u-2231\",\"mode\":\"r\"}",
            "{\"path\":\"/tmp/a\",\"user_id\":\"u-7\",\"mode\":\"r\"}",
            "{\"mode\":\"r\",\"user_id\":\"u-448\",\"path\":\"/tmp/a\"}",
            "{\"path\":\"/tmp/a\",\"mode\":\"r\",\"user_id\":\"u-90\"}",
        };
        pointers_are(d, 5, 0, NULL, "/user_id 1 5\n/mode 5 5\n/path 5 5\n",
                     "fabricated argument: five samples differ only at /user_id");
        pointers_are(d, 5, 3, NULL, "/user_id 1 5\n/mode 5 5\n/path 5 5\n", "any representative");
    }
    {
        static const char *const d[] = {
            "{\"a\":{\"b\":[1,2,{\"c\":true}]},\"d\":[]}",
            "{\"a\":{\"b\":[1,3,{\"c\":true}]},\"d\":[]}",
            "{\"a\":{\"b\":[1.0,2,{\"c\":false}]},\"d\":{}}",
            "{\"a\":{\"b\":[10e-1,2]},\"d\":[]}",
        };
        pointers_are(d, 4, 0, NULL, "/a/b/2/c 2 3\n/a/b/1 3 4\n/d 3 4\n/a/b/0 4 4\n",
                     "nested objects and arrays; 1 == 1.0 == 10e-1; [] != {}");
    }
    {
        static const char *const d[] = {
            "{\"to\":12345678901234567890,\"n\":9007199254740993}",
            "{\"to\":12345678901234567891,\"n\":9007199254740992}",
            "{\"to\":1.2345678901234567890e19,\"n\":90071992547409930e-1}",
        };
        pointers_are(d, 3, 0, NULL, "/n 2 3\n/to 2 3\n",
                     "numbers compare as decimals, as the exact form does: not as doubles");
    }
    {
        static const char *const d[] = {
            "{\"a\":1}",
            "{\"a\":1,\"x\":2}",
            "{\"a\":1,\"x\":2}",
            "{\"a\":1,\"y\":null}",
        };
        pointers_are(d, 4, 0, NULL, "/x 2 2\n/y 3 1\n/a 4 4\n",
                     "absent at the representative: agreeing means absent too");
        pointers_are(d, 4, 1, NULL, "/x 2 2\n/y 3 1\n/a 4 4\n", "/x present at the representative");
        pointers_are(d, 4, 3, NULL, "/y 1 1\n/x 2 2\n/a 4 4\n", "/y present at the representative");
    }
    {
        static const char *const d[] = {
            "{\"x\":{\"y\":1,\"z\":2}}",
            "{\"x\":{\"y\":1}}",
            "{\"x\":5}",
            "{\"x\":{\"z\":2,\"y\":1}}",
        };
        pointers_are(d, 4, 0, NULL, "/x 2 4\n/x/z 2 2\n/x/y 3 3\n",
                     "a leaf against containers: containers compare whole");
        pointers_are(d, 4, 2, NULL, "/x 1 4\n/x/y 1 3\n/x/z 2 2\n", "the leaf as representative");
    }
    {
        static const char *const d[] = {"{\"0\":1}", "[1]", "[2]"};
        pointers_are(d, 3, 0, NULL, "/0 2 3\n",
                     "a pointer is its text: {\"0\":x} and [x] share /0");
    }
    {
        static const char *const d[] = {"{\"x\":{\"0\":1}}", "{\"x\":[1]}", "{\"x\":5}"};
        pointers_are(d, 3, 0, NULL, "/x 1 3\n/x/0 2 2\n",
                     "an object and an array with the same leaves still differ");
    }
    {
        static const char *const d[] = {
            "1", "1.0", "-0", "0", "\"1\"", "9007199254740993", "9007199254740992"};
        pointers_are(d, 4, 0, NULL, " 2 4\n", "root scalars: pointer \"\"");
        pointers_are(d + 2, 2, 0, NULL, " 2 2\n", "-0 and 0 agree");
        pointers_are(d + 5, 2, 0, NULL, " 1 2\n",
                     "2^53 + 1 and 2^53 (one double) differ, as their exact forms do");
        pointers_are(d, 5, 4, NULL, " 1 5\n", "a string is not a number");
    }
    {
        static const char *const d[] = {"{}", "[]", "{}"};
        pointers_are(d, 3, 0, NULL, " 2 3\n", "empty containers are leaves");
    }
    {
        static const char *const d[] = {
            "{\"p\":\"/a/b/\",\"u\":\"ALICE\"}",
            "{\"p\":\"/a//b\",\"u\":\" alice\"}",
            "{\"p\":\"/a/b\",\"u\":\"user:17\"}",
            "{\"p\":\"/a/./b\",\"u\":\"bob\"}",
        };
        tg_norm_t *n = tg_norm_new(E, &err);
        pointers_are(d, 4, 0, NULL, "/p 1 4\n/u 1 4\n", "without a plan they disagree");
        tg_norm_add_rule(n, "/p", 2, TG_NORM_PATH, &err);
        pointers_are(d, 4, 0, n, "/u 1 4\n/p 4 4\n", "TG_NORM_PATH makes the paths agree");
        tg_norm_add_rule(n, "/u", 2, TG_NORM_TRIM | TG_NORM_LOWER | TG_NORM_ID, &err);
        tg_norm_add_alias(n, "alice", 5, "user:17", 7, &err);
        pointers_are(d, 4, 0, n, "/u 3 4\n/p 4 4\n", "trim, lower and id make three ids agree");
        tg_norm_free(n);
    }
    {
        static const char *const d[] = {
            "{\"a\":{\"b\":1},\"a!\":1,\"a/b\":1,\"a0\":1,\"~\":1,\"/\":1,\"\":1}",
            "{\"a\":2}",
        };
        static const char *const arr[] = {"[0,0,0,0,0,0,0,0,0,0,0,0]"};
        pointers_are(d, 2, 0, NULL,
                     "/ 1 1\n/a 1 2\n/a! 1 1\n/a/b 1 1\n/a0 1 1\n/a~1b 1 1\n/~0 1 1\n/~1 1 1\n",
                     "ties in bytewise pointer order, escapes included");
        pointers_are(
            arr, 1, 0, NULL,
            "/0 1 1\n/1 1 1\n/10 1 1\n/11 1 1\n/2 1 1\n/3 1 1\n/4 1 1\n/5 1 1\n/6 1 1\n/7 1 1\n/8 1 1\n/9 1 1\n",
            "array indexes in bytewise order");
    }
    {
        /* truncation: "/a/" + 250 k + "/bc" is 256 bytes, one too many */
        char text[600], want[600];
        const char *d[1];
        size_t len = (size_t)sprintf(text, "{\"a\":{\"");
        memset(text + len, 'k', 250);
        len += 250;
        sprintf(text + len, "\":{\"bc\":1,\"b\":2}}}");
        d[0] = text;
        len = (size_t)sprintf(want, "/a/");
        memset(want + len, 'k', 250);
        sprintf(want + len + 250, "/b 1 1\n/a/... 1 1\n");
        pointers_are(
            d, 1, 0, NULL, want,
            "255 bytes fit; 256 are cut after the last whole segment that leaves room, then /...");
        sprintf(text, "{\"~/~/~/~/\":{\"x\":1}}");
        pointers_are(d, 1, 0, NULL, "/~0~1~0~1~0~1~0~1/x 1 1\n", "escapes are written");
    }
    {
        static const char *const d[] = {"{\"a\":1}", "{\"a\":2}"};
        docset s = load(d, 2);
        tg_pointer_agreement_t out[1];
        size_t count = 99;
        tap_ok(tg_pointer_agreement(E, s.roots, 2, 2, NULL, out, 1, &count, &err) == TG_E_ARG,
               "rep >= n is BAD_ARGUMENT");
        tap_ok(tg_pointer_agreement(E, s.roots, 0, 0, NULL, out, 1, &count, &err) == TG_E_ARG,
               "n = 0 is BAD_ARGUMENT");
        tap_ok(tg_pointer_agreement(E, NULL, 2, 0, NULL, out, 1, &count, &err) == TG_E_ARG,
               "NULL documents is BAD_ARGUMENT");
        tap_ok(tg_pointer_agreement(E, s.roots, 2, 0, NULL, NULL, 1, &count, &err) == TG_E_ARG,
               "NULL out with max > 0 is BAD_ARGUMENT");
        tap_ok(tg_pointer_agreement(E, s.roots, 2, 0, NULL, out, 1, NULL, &err) == TG_E_ARG,
               "NULL count is BAD_ARGUMENT");
        tap_ok(tg_pointer_agreement(E, s.roots, 2, 0, NULL, NULL, 0, &count, &err) == TG_OK &&
                   count == 1,
               "max 0 only counts");
        s.roots[1] = NULL;
        tap_ok(tg_pointer_agreement(E, s.roots, 2, 0, NULL, out, 1, &count, &err) == TG_E_ARG,
               "a NULL document is BAD_ARGUMENT");
        unload(&s);
    }
}

/* ---- a naive reference on random documents ------------------------------------------ */

typedef struct rnode {
    char ptr[256];
    char *canon;
    int leaf;
} rnode;

typedef struct rlist {
    rnode *v;
    size_t n, cap;
} rlist;

static void collect(const tg_value_t *v, const char *ptr, rlist *l)
{
    tg_buf_t b;
    tg_error_t err;
    rnode *r;
    int t = tg_type_of(v);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    r = &l->v[l->n++];
    snprintf(r->ptr, sizeof r->ptr, "%s", ptr);
    tg_buf_init(&b, E);
    tg_canon_value_mode(v, TG_CANON_EXACT, &b, &err);
    r->canon = malloc(b.len + 1);
    memcpy(r->canon, b.data, b.len);
    r->canon[b.len] = '\0';
    tg_buf_free(&b);
    r->leaf = (t != TG_ARRAY && t != TG_OBJECT) || tg_len(v) == 0;
    for (size_t i = 0; i < tg_len(v) && (t == TG_ARRAY || t == TG_OBJECT); i++) {
        char sub[256];
        if (t == TG_OBJECT) {
            size_t klen;
            const char *k = tg_key_at(v, i, &klen);
            snprintf(sub, sizeof sub, "%s/%.*s", ptr, (int)klen, k); /* keys hold no ~ or / here */
        } else {
            snprintf(sub, sizeof sub, "%s/%zu", ptr, i);
        }
        collect(tg_at(v, i), sub, l);
    }
}

static const rnode *find(const rlist *l, const char *ptr)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].ptr, ptr) == 0)
            return &l->v[i];
    return NULL;
}

typedef struct rres {
    const char *ptr;
    size_t agree, present;
} rres;

static int rres_cmp(const void *a, const void *b)
{
    const rres *x = a, *y = b;
    if (x->agree != y->agree)
        return x->agree < y->agree ? -1 : 1;
    return strcmp(x->ptr, y->ptr);
}

/* Random JSON text: small key set, nesting up to depth 3.  Every choice
 * comes from the round's template stream, but one in eight is replaced by a
 * fresh one: the documents of a round are variations of one document (the
 * template stream is consumed alike either way), so they share pointers,
 * and subtrees that are parts of each other, as real samples do. */
static uint64_t pick(uint64_t *tmpl)
{
    uint64_t t = *tmpl;
    t ^= t << 13;
    t ^= t >> 7;
    t ^= t << 17;
    *tmpl = t;
    return next_rand() % 8 == 0 ? next_rand() : t;
}

static void gen(char *out, size_t *len, int depth, uint64_t *tmpl)
{
    static const char *const scalars[] = {
        "0",    "1",  "1.0", "\"x\"", "\"X \"",           "\"/a//b/\"",       "\"/a/b\"", "true",
        "null", "{}", "[]",  "\"A\"", "9007199254740993", "9007199254740992", "0.1e1"};
    static const char *const keys[] = {"a", "b", "c", "0", "1"};
    unsigned r = (unsigned)(pick(tmpl) % 10);
    if (depth >= 3 || r < 4) {
        *len += (size_t)sprintf(out + *len, "%s", scalars[pick(tmpl) % 15]);
    } else if (r < 7) {
        size_t k = 1 + pick(tmpl) % 3;
        out[(*len)++] = '[';
        for (size_t i = 0; i < k; i++) {
            if (i)
                out[(*len)++] = ',';
            gen(out, len, depth + 1, tmpl);
        }
        out[(*len)++] = ']';
    } else {
        unsigned used = 0;
        size_t k = 1 + pick(tmpl) % 4, w = 0;
        out[(*len)++] = '{';
        for (size_t i = 0; i < k; i++) {
            unsigned key = (unsigned)(pick(tmpl) % 5);
            if (used & (1u << key))
                continue;
            used |= 1u << key;
            if (w++)
                out[(*len)++] = ',';
            *len += (size_t)sprintf(out + *len, "\"%s\":", keys[key]);
            gen(out, len, depth + 1, tmpl);
        }
        out[(*len)++] = '}';
    }
    out[*len] = '\0';
}

/* tg_pointer_agreement of docs under plan against the reference run on the
 * documents as the plan normalizes them (normalization keeps every key, so
 * the pointers are the same). */
static int check_random(const tg_value_t *const *roots, size_t n, size_t rep, const tg_norm_t *plan)
{
    rlist *lists = calloc(n, sizeof *lists);
    rres *want = NULL;
    size_t n_want = 0, cap = 0, count = 0;
    tg_pointer_agreement_t out[64];
    tg_error_t err;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        tg_buf_t b;
        tg_doc_t *d;
        tg_buf_init(&b, E);
        tg_canon_normalized(plan, roots[i], TG_CANON_EXACT, &b, &err);
        tg_parse(E, b.data, b.len, &d, &err);
        collect(tg_doc_root(d), "", &lists[i]);
        tg_doc_free(d);
        tg_buf_free(&b);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < lists[i].n; k++) {
            const rnode *p = &lists[i].v[k], *r;
            size_t j, present = 0, agree = 0;
            if (!p->leaf)
                continue;
            for (j = 0; j < n_want && strcmp(want[j].ptr, p->ptr) != 0; j++)
                ;
            if (j < n_want)
                continue;
            r = find(&lists[rep], p->ptr);
            for (size_t d = 0; d < n; d++) {
                const rnode *q = find(&lists[d], p->ptr);
                present += q != NULL;
                agree += r ? q && strcmp(q->canon, r->canon) == 0 : !q;
            }
            if (n_want == cap) {
                cap = cap ? 2 * cap : 16;
                want = realloc(want, cap * sizeof *want);
            }
            want[n_want].ptr = p->ptr;
            want[n_want].agree = agree;
            want[n_want++].present = present;
        }
    qsort(want, n_want, sizeof *want, rres_cmp);
    ok &= tg_pointer_agreement(E, roots, n, rep, plan, out, 64, &count, &err) == TG_OK;
    ok &= count == n_want;
    for (size_t i = 0; ok && i < n_want && i < 64; i++) {
        ok &= strcmp(out[i].pointer, want[i].ptr) == 0 && out[i].agree == want[i].agree &&
              out[i].present == want[i].present;
        if (!ok)
            printf("#   entry %zu: got %s %zu %zu, want %s %zu %zu\n", i, out[i].pointer,
                   out[i].agree, out[i].present, want[i].ptr, want[i].agree, want[i].present);
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < lists[i].n; k++)
            free(lists[i].v[k].canon);
        free(lists[i].v);
    }
    free(lists);
    free(want);
    return ok;
}

/* The documents of s drawn again at random, runs of one often, as n_out
 * roots: once the same nodes, once parsed as one array whose repeated
 * texts the parser shares (TG_PARSE_SHARE_REPEATS); then both against the
 * reference, with and without the plan. */
static int check_repeats(const docset *s, char *const *texts, const tg_norm_t *plan)
{
    const tg_value_t *again[16], *shared[16];
    size_t n_out = 2 + next_rand() % 15, len = 0, j = 0, rep;
    char *array = malloc(16 * 8192 + 32);
    tg_doc_t *doc = NULL;
    tg_error_t err;
    int ok = 1;
    array[len++] = '[';
    for (size_t i = 0; i < n_out; i++) {
        if (i == 0 || next_rand() % 2)
            j = next_rand() % s->n;
        again[i] = s->roots[j];
        len += (size_t)sprintf(array + len, "%s%s", i ? "," : "", texts[j]);
    }
    array[len++] = ']';
    rep = next_rand() % n_out;
    ok &= tg_parse_with(E, array, len, TG_PARSE_SHARE_REPEATS, &doc, &err) == TG_OK;
    for (size_t i = 0; ok && i < n_out; i++)
        shared[i] = tg_at(tg_doc_root(doc), i);
    ok = ok && check_random(again, n_out, rep, NULL) && check_random(again, n_out, rep, plan) &&
         check_random(shared, n_out, rep, NULL) && check_random(shared, n_out, rep, plan);
    tg_doc_free(doc);
    free(array);
    return ok;
}

static void random_documents(void)
{
    tg_error_t err;
    tg_norm_t *plan = tg_norm_new(E, &err);
    int all_plain = 1, all_plan = 1, all_repeats = 1;
    tg_norm_add_rule(plan, "/*", 2, TG_NORM_LOWER | TG_NORM_TRIM, &err);
    tg_norm_add_rule(plan, "/a/*/b", 6, TG_NORM_PATH, &err);
    tg_norm_add_rule(plan, "/0/0", 4, TG_NORM_PATH | TG_NORM_ID, &err);
    tg_norm_add_rule(plan, "", 0, TG_NORM_LOWER, &err);
    tg_norm_add_alias(plan, "/a/b", 4, "x", 1, &err);
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + next_rand() % 8, rep = next_rand() % n;
        uint64_t seed = next_rand() | 1;
        char *texts[8];
        docset s;
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            uint64_t tmpl = seed;
            texts[i] = malloc(8192);
            gen(texts[i], &len, 0, &tmpl);
        }
        s = load((const char *const *)texts, n);
        if (!check_random(s.roots, n, rep, NULL)) {
            all_plain = 0;
            printf("# round %d, rep %zu: %s ...\n", round, rep, texts[0]);
        }
        if (!check_random(s.roots, n, rep, plan))
            all_plan = 0;
        if (!check_repeats(&s, texts, plan)) {
            all_repeats = 0;
            printf("# round %d: repeats\n", round);
        }
        unload(&s);
        for (size_t i = 0; i < n; i++)
            free(texts[i]);
    }
    tap_ok(all_plain, "2000 random document sets agree with the naive reference");
    tap_ok(all_plan, "and with a plan, with the reference run on the normalized documents");
    tap_ok(all_repeats, "and given again, one node twice or a repeat the parser shared: counted "
                        "as one by one");
    tg_norm_free(plan);
}

/* ---- scale ------------------------------------------------------------------------ */

static void ten_thousand(void)
{
    size_t n = 10000;
    char **texts = malloc(n * sizeof *texts);
    tg_pointer_agreement_t out[4];
    size_t count = 0;
    tg_error_t err;
    docset s;
    int ok;

    /* user_id: 4000 share the representative's; everyone has an extra key of its own */
    for (size_t i = 0; i < n; i++) {
        texts[i] = malloc(160);
        sprintf(
            texts[i],
            "{\"path\":\"/srv/data/%s\",\"mode\":\"r\",\"user_id\":\"u-%zu\",\"extra_%05zu\":%zu}",
            i % 2 ? "x" : "x/", i % 5 < 2 ? (size_t)1 : 1000 + i, i, i);
    }
    s = load((const char *const *)texts, n);
    ok = tg_pointer_agreement(E, s.roots, n, 0, NULL, out, 4, &count, &err) == TG_OK;
    tap_ok(ok && count == 3 + n, "10,000 documents: 10,003 leaf pointers");
    tap_ok(ok && strcmp(out[0].pointer, "/extra_00000") == 0 && out[0].agree == 1 &&
               out[0].present == 1,
           "the representative's own extra key: agree 1");
    tap_ok(ok && strcmp(out[1].pointer, "/user_id") == 0 && out[1].agree == 4000 &&
               out[1].present == n,
           "/user_id: 4000 agree");
    tap_ok(ok && strcmp(out[2].pointer, "/path") == 0 && out[2].agree == 5000,
           "/path: half spell it with a trailing slash");
    tap_ok(ok && strcmp(out[3].pointer, "/extra_00001") == 0 && out[3].agree == n - 1,
           "others' extra keys: absent at the representative, so 9999 agree");
    {
        tg_norm_t *plan = tg_norm_new(E, &err);
        tg_norm_add_rule(plan, "/path", 5, TG_NORM_PATH, &err);
        ok = tg_pointer_agreement(E, s.roots, n, 0, plan, out, 4, &count, &err) == TG_OK;
        tap_ok(ok && strcmp(out[2].pointer, "/extra_00001") == 0,
               "with TG_NORM_PATH on /path all 10,000 paths agree");
        tg_norm_free(plan);
    }
    unload(&s);
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
}

/* ---- allocation failures ---------------------------------------------------------- */

/* The documents are made with E; only the work under test uses engine e. */
static int scenario(acct *a, const tg_value_t *const *roots, size_t n, const tg_hash128_t *values)
{
    tg_error_t err;
    tg_engine_t *e = tg_engine_new(NULL, acct_alloc, a, &err);
    tg_norm_t *plan = NULL;
    tg_pointer_agreement_t out[8];
    tg_agreement_t ag;
    size_t count;
    int rc;
    if (!e)
        return err.code;
    if (!(plan = tg_norm_new(e, &err))) {
        rc = err.code;
        goto out;
    }
    for (int i = 0; i < 30; i++) {
        char pat[32];
        int l = snprintf(pat, sizeof pat, "/k%d/*", i);
        if ((rc = tg_norm_add_rule(plan, pat, (size_t)l, TG_NORM_LOWER, &err)) != TG_OK)
            goto out;
    }
    if ((rc = tg_norm_add_rule(plan, "/s", 2, TG_NORM_PATH | TG_NORM_ID, &err)) != TG_OK ||
        (rc = tg_norm_add_alias(plan, "a", 1, "b", 1, &err)) != TG_OK ||
        (rc = tg_agree(e, values, n, &ag, &err)) != TG_OK ||
        (rc = tg_pointer_agreement(e, roots, n, 1, plan, out, 8, &count, &err)) != TG_OK)
        goto out;
    if (count != n + 41 || ag.distinct != 7)
        rc = -1;
out:
    tg_norm_free(plan);
    tg_engine_free(e);
    return rc;
}

static void allocation_failures(void)
{
    size_t n = 300;
    char **texts = malloc(n * sizeof *texts);
    tg_hash128_t *values = malloc(n * sizeof *values);
    acct a = {0};
    long calls;
    int all_ok = 1, rc;
    docset s;

    static const char *const five[] = {
        "{\"path\":\"/a\",\"user_id\":\"u-1\",\"mode\":\"r\"}",
        "{\"path\":\"/a\",\"user_id\":\"u-2\",\"mode\":\"r\"}",
        "{\"path\":\"/a\",\"user_id\":\"u-3\",\"mode\":\"r\"}",
        "{\"path\":\"/a\",\"user_id\":\"u-4\",\"mode\":\"r\"}",
        "{\"path\":\"/a\",\"user_id\":\"u-5\",\"mode\":\"r\"}",
    };
    docset small = load(five, 5);
    const tg_value_t *const *roots_of_five = small.roots;

    for (size_t i = 0; i < n; i++) {
        texts[i] = malloc(1200);
        /* a distinct key each (many nodes), a long rewritten string (heap scratch) */
        size_t len = (size_t)sprintf(texts[i], "{\"k%zu\":[\"X\"],\"s\":\"", i % 40);
        for (int k = 0; k < 250; k++)
            len += (size_t)sprintf(texts[i] + len, "a/./");
        sprintf(texts[i] + len, "\",\"u%zu\":{\"x\":[]}}", i);
        values[i] = hv(i % 7, 0);
    }
    s = load((const char *const *)texts, n);
    rc = scenario(&a, s.roots, n, values);
    tap_ok(rc == TG_OK && a.live == 0, "the scenario runs and gives every byte back");
    calls = a.calls;
    for (long k = 1; k <= calls; k++) {
        a.live = a.calls = 0;
        a.fail_at = k;
        rc = scenario(&a, s.roots, n, values);
        if (rc != TG_E_NOMEM || a.live != 0) {
            printf("# failing allocation %ld: %s, %ld bytes left\n", k, tg_code_name(rc), a.live);
            all_ok = 0;
        }
    }
    printf("# %ld allocation sites failed in turn\n", calls);
    tap_ok(calls > 10 && all_ok, "every allocation failure gives NOMEM and leaks nothing");
    {
        /* n <= 32 needs no memory at all */
        tg_error_t err;
        tg_engine_t *e;
        tg_agreement_t ag;
        a.live = a.calls = a.fail_at = 0;
        e = tg_engine_new(NULL, acct_alloc, &a, &err);
        a.calls = 0;
        a.fail_at = 1;
        tap_ok(tg_agree(e, values, 32, &ag, &err) == TG_OK && ag.distinct == 7,
               "tg_agree of 32 allocates nothing");
        tap_ok(tg_agree(e, values, 33, &ag, &err) == TG_E_NOMEM,
               "of 33 it does, and says NOMEM when it cannot");
        {
            /* five samples of one tool's arguments: no allocation either */
            tg_pointer_agreement_t out[4];
            size_t count;
            tap_ok(tg_pointer_agreement(e, roots_of_five, 5, 0, NULL, out, 4, &count, &err) ==
                           TG_OK &&
                       count == 3,
                   "tg_pointer_agreement of five small documents allocates nothing");
        }
        a.fail_at = 0;
        tg_engine_free(e);
        tap_ok(a.live == 0, "nothing left");
    }
    unload(&s);
    unload(&small);
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(values);
}

int main(void)
{
    tg_error_t err;
    E = tg_engine_new(NULL, NULL, NULL, &err);
    agree_values();
    pointer_cases();
    random_documents();
    ten_thousand();
    allocation_failures();
    tg_engine_free(E);
    return tap_done();
}
