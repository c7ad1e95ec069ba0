/*
 * fuzz_json.c -- strict JSON parse, RFC 8785 canonical form, XXH3-128.
 *
 * Invariants: the input parses or fails with a named code, and tg_canon
 * (parse + write in one call) agrees with parse-then-write; the canonical
 * form re-parses and re-canonicalizes to itself byte for byte (a fixed
 * point); tg_hash_value is XXH3-128 of exactly those bytes; every accessor
 * stays inside the document.  The exact form (TG_CANON_EXACT) re-parses,
 * is its own exact form and has the source's RFC 8785 form; each number's
 * exact form is its RFC 8785 form exactly when tg_num_round_trips says the
 * double spells it, and a document whose numbers all round-trip has one
 * form in both modes.  Parsing without the fast whole-text UTF-8 check
 * (each sequence validated where it stands) gives the same document or
 * the same error, at the same offset.  The parser's shortcuts (forms the
 * writer copies from the input, TG_F_RAW_*, and TG_F_LONG_NUM) change no
 * byte: the document copied without them writes the same forms.
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t */
#include "fuzz.h"
#include "tg_internal.h"

/* Walks the DOM through the public accessors: counts must match what the
 * accessors return, keys must be findable with tg_get. */
static void walk(const tg_value_t *v, int depth)
{
    size_t n = tg_len(v), len;
    FUZZ_CHECK(depth <= TG_LIMIT_MAX_DEPTH);
    switch (tg_type_of(v)) {
    case TG_OBJECT:
        for (size_t i = 0; i < n; i++) {
            const char *k = tg_key_at(v, i, &len);
            FUZZ_CHECK(k != NULL);
            FUZZ_CHECK(tg_get(v, k, len) == tg_at(v, i));
            if (i > 0) {
                size_t plen;
                const char *pk = tg_key_at(v, i - 1, &plen);
                FUZZ_CHECK(tg_key_compare(pk, plen, k, len) < 0); /* sorted, no duplicates */
            }
            walk(tg_at(v, i), depth + 1);
        }
        FUZZ_CHECK(tg_at(v, n) == NULL);
        break;
    case TG_ARRAY:
        for (size_t i = 0; i < n; i++)
            walk(tg_at(v, i), depth + 1);
        FUZZ_CHECK(tg_at(v, n) == NULL);
        break;
    case TG_STRING:
        FUZZ_CHECK(tg_str(v, &len) != NULL && len == n);
        break;
    case TG_NUMBER:
        FUZZ_CHECK(tg_num_text(v, &len) != NULL && len > 0);
        break;
    default:
        FUZZ_CHECK(n == 0);
    }
}

/* Checks every number of v alone, in both modes; returns 1 when all of
 * them round-trip. */
static int numbers(tg_engine_t *e, const tg_value_t *v)
{
    int all = 1;
    if (tg_type_of(v) == TG_NUMBER) {
        tg_buf_t x, r;
        int same;
        tg_buf_init(&x, e);
        tg_buf_init(&r, e);
        FUZZ_CHECK(tg_canon_value_mode(v, TG_CANON_EXACT, &x, NULL) == TG_OK);
        FUZZ_CHECK(tg_canon_value(v, &r, NULL) == TG_OK);
        same = x.len == r.len && memcmp(x.data, r.data, x.len) == 0;
        FUZZ_CHECK(same == tg_num_round_trips(v));
        tg_buf_free(&x);
        tg_buf_free(&r);
        return same;
    }
    for (size_t i = 0; i < tg_len(v); i++)
        all &= numbers(e, tg_at(v, i));
    return all;
}

/* The exact form x of the document at root, whose RFC 8785 form is rfc. */
static void exact(tg_engine_t *e, const tg_value_t *root, const tg_buf_t *rfc, const tg_buf_t *x)
{
    tg_doc_t *d = NULL;
    tg_buf_t again;
    tg_error_t err;
    tg_buf_init(&again, e);
    FUZZ_CHECK(tg_parse(e, x->data, x->len, &d, &err) == TG_OK);
    FUZZ_CHECK(tg_canon_value_mode(tg_doc_root(d), TG_CANON_EXACT, &again, &err) == TG_OK);
    FUZZ_CHECK(again.len == x->len && memcmp(again.data, x->data, x->len) == 0);
    tg_buf_reset(&again);
    FUZZ_CHECK(tg_canon_value(tg_doc_root(d), &again, &err) == TG_OK);
    FUZZ_CHECK(again.len == rfc->len && memcmp(again.data, rfc->data, rfc->len) == 0);
    if (numbers(e, root))
        FUZZ_CHECK(x->len == rfc->len && memcmp(x->data, rfc->data, x->len) == 0);
    tg_doc_free(d);
    tg_buf_free(&again);
}

/* root copied without the parser's shortcuts (tg_value_copy clears the
 * flags) writes root's forms: rfc (RFC 8785) and x (exact). */
static void same_without_shortcuts(tg_engine_t *e, const tg_value_t *root, const tg_buf_t *rfc,
                                   const tg_buf_t *x)
{
    tg_arena a;
    tg_value_t copy;
    tg_buf_t b;
    tg_arena_init(&a, e, 4096);
    tg_buf_init(&b, e);
    FUZZ_CHECK(tg_value_copy(&a, &copy, root) == TG_OK);
    FUZZ_CHECK(tg_canon_value(&copy, &b, NULL) == TG_OK);
    FUZZ_CHECK(b.len == rfc->len && memcmp(b.data, rfc->data, b.len) == 0);
    tg_buf_reset(&b);
    FUZZ_CHECK(tg_canon_value_mode(&copy, TG_CANON_EXACT, &b, NULL) == TG_OK);
    FUZZ_CHECK(b.len == x->len && memcmp(b.data, x->data, b.len) == 0);
    tg_buf_free(&b);
    tg_arena_free(&a);
}

/* The parse without the fast UTF-8 check: the same outcome as rc/err, and
 * (when it parsed) the same canonical bytes as canon. */
static void same_without_fast_utf8(tg_engine_t *e, const uint8_t *data, size_t size, int rc,
                                   const tg_error_t *err, const tg_buf_t *canon)
{
    tg_doc_t *slow = NULL;
    tg_error_t serr;
    int src = tg_parse_with(e, (const char *)data, size, 0, &slow, &serr);
    FUZZ_CHECK(src == rc);
    if (rc != TG_OK) {
        FUZZ_CHECK(serr.offset == err->offset && strcmp(serr.message, err->message) == 0);
        return;
    }
    if (canon) {
        tg_buf_t b;
        tg_buf_init(&b, e);
        FUZZ_CHECK(tg_canon_value(tg_doc_root(slow), &b, &serr) == TG_OK);
        FUZZ_CHECK(b.len == canon->len && memcmp(b.data, canon->data, b.len) == 0);
        tg_buf_free(&b);
    }
    tg_doc_free(slow);
}

/* The parse that shares repeated containers (TG_PARSE_SHARE_REPEATS, what
 * classify reads plans with): the same outcome as rc/err, and (when it
 * parsed) the same canonical bytes in both forms as rfc and x. */
static void same_with_shared_repeats(tg_engine_t *e, const uint8_t *data, size_t size, int rc,
                                     const tg_error_t *err, const tg_buf_t *rfc, const tg_buf_t *x)
{
    tg_doc_t *shared = NULL;
    tg_error_t serr;
    tg_buf_t b;
    int src = tg_parse_with(e, (const char *)data, size,
                            TG_PARSE_FAST_UTF8 | TG_PARSE_SHARE_REPEATS, &shared, &serr);
    FUZZ_CHECK(src == rc);
    if (rc != TG_OK) {
        FUZZ_CHECK(serr.offset == err->offset && strcmp(serr.message, err->message) == 0);
        return;
    }
    tg_buf_init(&b, e);
    FUZZ_CHECK(tg_canon_value(tg_doc_root(shared), &b, &serr) == TG_OK);
    FUZZ_CHECK(b.len == rfc->len && memcmp(b.data, rfc->data, b.len) == 0);
    tg_buf_reset(&b);
    FUZZ_CHECK(tg_canon_value_mode(tg_doc_root(shared), TG_CANON_EXACT, &b, &serr) == TG_OK);
    FUZZ_CHECK(b.len == x->len && memcmp(b.data, x->data, b.len) == 0);
    tg_buf_free(&b);
    tg_doc_free(shared);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    tg_doc_t *doc = NULL, *again = NULL;
    tg_error_t err;
    tg_buf_t one, two, direct, xform;
    tg_hash128_t h1, h2;
    int rc, rc_direct;

    tg_buf_init(&one, e);
    tg_buf_init(&two, e);
    tg_buf_init(&direct, e);
    tg_buf_init(&xform, e);

    rc = tg_parse(e, (const char *)data, size, &doc, &err);
    rc_direct = tg_canon(e, (const char *)data, size, &direct, &err);
    if (rc != TG_OK) {
        fuzz_check_error(&err, rc_direct);
        FUZZ_CHECK(doc == NULL);
        FUZZ_CHECK(rc_direct == rc); /* the same input fails the same way */
        same_without_fast_utf8(e, data, size, rc, &err, NULL);
        same_with_shared_repeats(e, data, size, rc, &err, NULL, NULL);
        goto done;
    }
    walk(tg_doc_root(doc), 0);

    rc = tg_canon_value(tg_doc_root(doc), &one, &err);
    FUZZ_CHECK(rc == TG_OK);
    FUZZ_CHECK(rc_direct == TG_OK && direct.len == one.len &&
               memcmp(direct.data, one.data, one.len) == 0);
    same_without_fast_utf8(e, data, size, TG_OK, &err, &one);
    FUZZ_CHECK(tg_canon_value_mode(tg_doc_root(doc), TG_CANON_EXACT, &xform, &err) == TG_OK);
    same_without_shortcuts(e, tg_doc_root(doc), &one, &xform);
    same_with_shared_repeats(e, data, size, TG_OK, &err, &one, &xform);

    /* The fixed point: canonical text is valid JSON and its own canonical form. */
    rc = tg_parse(e, one.data, one.len, &again, &err);
    if (rc != TG_OK)
        fprintf(stderr, "canonical form does not re-parse: %s: %s\n", tg_code_name(rc),
                err.message);
    FUZZ_CHECK(rc == TG_OK);
    FUZZ_CHECK(tg_canon_value(tg_doc_root(again), &two, &err) == TG_OK);
    FUZZ_CHECK(two.len == one.len && memcmp(two.data, one.data, one.len) == 0);

    /* The digest is XXH3-128 of the canonical bytes, and stable. */
    FUZZ_CHECK(tg_hash_value(e, tg_doc_root(doc), &h1, &err) == TG_OK);
    tg_hash128(one.data, one.len, &h2);
    FUZZ_CHECK(h1.hi == h2.hi && h1.lo == h2.lo);
    FUZZ_CHECK(tg_hash_value(e, tg_doc_root(again), &h2, &err) == TG_OK);
    FUZZ_CHECK(h1.hi == h2.hi && h1.lo == h2.lo);

    exact(e, tg_doc_root(doc), &one, &xform);

done:
    tg_doc_free(again);
    tg_doc_free(doc);
    tg_buf_free(&one);
    tg_buf_free(&two);
    tg_buf_free(&direct);
    tg_buf_free(&xform);
    return 0;
}
