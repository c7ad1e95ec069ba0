/*
 * test_repeats.c -- the parse that shares repeated containers
 * (TG_PARSE_SHARE_REPEATS, what classify reads plans with): a container
 * whose bytes repeat an earlier one's shares its children; everything else
 * about the document -- its canonical forms, its errors and their offsets,
 * the depth limit -- is the plain parse's.
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t */
#include "tap.h"
#include "tg_internal.h"

#include <stdlib.h>

static tg_engine_t *E;

#define SHARE (TG_PARSE_FAST_UTF8 | TG_PARSE_SHARE_REPEATS)

/* A 72-byte object with a nested array and object: long enough to be
 * remembered, its own children too. */
#define ARG                                                                                        \
    "{\"path\":\"/tmp/a\\u00e9\",\"limit\":10,\"tags\":[\"x\",\"y\"],\"n\":{\"k\":[1,2.50,-0]}}"

/* Parses text both ways; 1 when both give the same code, offset and
 * message, and (parsed) the same canonical bytes in both forms. */
static int same_both_ways(tg_engine_t *e, const char *text, size_t len)
{
    tg_doc_t *a = NULL, *b = NULL;
    tg_error_t ea, eb;
    int ra = tg_parse_with(e, text, len, TG_PARSE_FAST_UTF8, &a, &ea);
    int rb = tg_parse_with(e, text, len, SHARE, &b, &eb);
    int same = ra == rb;
    if (same && ra != TG_OK)
        same = ea.offset == eb.offset && strcmp(ea.message, eb.message) == 0;
    for (int mode = 0; same && ra == TG_OK && mode < 2; mode++) {
        tg_buf_t x, y;
        int m = mode ? TG_CANON_EXACT : TG_CANON_RFC8785;
        tg_buf_init(&x, e);
        tg_buf_init(&y, e);
        same = tg_canon_value_mode(tg_doc_root(a), m, &x, NULL) == TG_OK &&
               tg_canon_value_mode(tg_doc_root(b), m, &y, NULL) == TG_OK && x.len == y.len &&
               memcmp(x.data, y.data, x.len) == 0;
        tg_buf_free(&x);
        tg_buf_free(&y);
    }
    if (!same)
        printf("#   %s vs %s on %.*s\n", tg_code_name(ra), tg_code_name(rb),
               (int)(len > 200 ? 200 : len), text);
    tg_doc_free(a);
    tg_doc_free(b);
    return same;
}

static void test_shares(void)
{
    const char *text = "{\"samples\":[{\"arguments\":" ARG ",\"result\":1},{\"arguments\":" ARG
                       ",\"result\":2},{\"arguments\":" ARG ",\"result\":1}]}";
    tg_doc_t *doc;
    const tg_value_t *s;
    tap_ok(tg_parse_with(E, text, strlen(text), SHARE, &doc, NULL) == TG_OK,
           "plan-shaped text parses");
    s = tg_get(tg_doc_root(doc), "samples", 7);
    {
        const tg_value_t *a0 = tg_get(tg_at(s, 0), "arguments", 9);
        const tg_value_t *a1 = tg_get(tg_at(s, 1), "arguments", 9);
        const tg_value_t *a2 = tg_get(tg_at(s, 2), "arguments", 9);
        tap_ok(a0->p.items == a1->p.items && a1->p.items == a2->p.items && a0->len == 4 &&
                   a2->len == 4,
               "repeated arguments share their children");
        tap_ok(tg_offset(tg_at(s, 2)) > tg_offset(tg_at(s, 1)) && tg_offset(a2) > tg_offset(a1),
               "a shared container keeps its own offset");
    }
    tap_ok(tg_at(s, 0)->p.items != tg_at(s, 1)->p.items,
           "samples that differ (in their result) do not share");
    tg_doc_free(doc);

    tap_ok(tg_parse_with(E, text, strlen(text), TG_PARSE_FAST_UTF8, &doc, NULL) == TG_OK,
           "the plain parse");
    s = tg_get(tg_doc_root(doc), "samples", 7);
    tap_ok(tg_get(tg_at(s, 0), "arguments", 9)->p.items !=
               tg_get(tg_at(s, 1), "arguments", 9)->p.items,
           "the plain parse shares nothing");
    tg_doc_free(doc);
    tap_ok(same_both_ways(E, text, strlen(text)), "both parses: the same canonical forms");
}

/* Errors after, inside and around repeats come where the plain parse puts
 * them, with its messages. */
static void test_errors(void)
{
    static const char *texts[] = {
        "[" ARG "," ARG ",x]",
        "[" ARG "," ARG "," ARG,
        "[" ARG "," ARG "]]",
        "[" ARG ",{\"a\":1,\"a\":2," ARG "}]",
        "[" ARG "," ARG ",{\"path\":1,\"path\":2}]",
        /* the repeat cut short by the end of the text */
        "[" ARG
        ",{\"path\":\"/tmp/a\\u00e9\",\"limit\":10,\"tags\":[\"x\",\"y\"],\"n\":{\"k\":[1,2",
        /* a near miss: one byte differs at the end */
        "[" ARG
        ",{\"path\":\"/tmp/a\\u00e9\",\"limit\":10,\"tags\":[\"x\",\"y\"],\"n\":{\"k\":[1,2.50,-0]]}",
        "[" ARG
        ",{\"path\":\"/tmp/a\\u00e9\",\"limit\":10,\"tags\":[\"x\",\"y\"],\"n\":{\"k\":[1,2.50,-01]}}",
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        tg_doc_t *doc;
        tg_error_t err;
        if (tg_parse_with(E, texts[i], strlen(texts[i]), SHARE, &doc, &err) == TG_OK) {
            printf("#   text %zu parsed\n", i);
            tg_doc_free(doc);
            ok = 0;
        }
        ok &= same_both_ways(E, texts[i], strlen(texts[i]));
    }
    tap_ok(ok, "malformed texts with repeats fail as the plain parse fails them");
}

/* A repeat deeper in the text than its first copy is shared only where
 * parsing it would have stayed within max_depth: past it, TOO_DEEP where
 * the plain parse says so. */
static void test_depth(void)
{
    tg_limits_t lim;
    tg_engine_t *e;
    char text[1024];
    int ok = 1;
    tg_limits_default(&lim);
    lim.max_depth = 6;
    e = tg_engine_new(&lim, NULL, NULL, NULL);
    /* ARG reaches 2 below itself ({"n":{"k":[...]}}): at depth d it needs
     * d + 2 < 6 */
    for (int d = 1; d <= 5; d++) {
        size_t n = 0;
        tg_doc_t *doc;
        tg_error_t err;
        int rc;
        n += (size_t)snprintf(text + n, sizeof text - n, "[" ARG ",");
        for (int i = 1; i < d; i++)
            text[n++] = '[';
        n += (size_t)snprintf(text + n, sizeof text - n, ARG);
        for (int i = 1; i < d; i++)
            text[n++] = ']';
        text[n++] = ']';
        text[n] = '\0';
        rc = tg_parse_with(e, text, n, SHARE, &doc, &err);
        if (rc == TG_OK)
            tg_doc_free(doc);
        if ((rc == TG_OK) != (d + 2 < 6) || (rc != TG_OK && rc != TG_E_TOO_DEEP)) {
            printf("#   depth %d: %s\n", d, tg_code_name(rc));
            ok = 0;
        }
        ok &= same_both_ways(e, text, n);
    }
    tap_ok(ok, "a repeat past max_depth is TOO_DEEP where the plain parse says so");
    tg_engine_free(e);
}

/* Many repeats and many near misses: the same document either way, even
 * once the bytes compared have used up their budget (the input's length). */
static void test_many(void)
{
    size_t cap = 200 * 100 + 16, n = 0;
    char *text = malloc(cap);
    tg_doc_t *doc;
    size_t shared = 0;
    const tg_value_t *r;
    text[n++] = '[';
    for (int i = 0; i < 200; i++) {
        /* every third a near miss of the one before: its last number differs */
        n +=
            (size_t)snprintf(text + n, cap - n, "%s{\"k\":\"0123456789abcdef0123456789\",\"v\":%d}",
                             i ? "," : "", i % 3 == 2 ? i : 7);
    }
    text[n++] = ']';
    tap_ok(same_both_ways(E, text, n), "200 objects, repeats and near misses: the same document");
    tap_ok(tg_parse_with(E, text, n, SHARE, &doc, NULL) == TG_OK, "they parse");
    r = tg_doc_root(doc);
    for (size_t i = 1; i < tg_len(r); i++)
        shared += tg_at(r, i)->p.items == tg_at(r, i - 1)->p.items;
    tap_ok(shared > 50 && shared < 199, "repeats share, near misses do not");
    tg_doc_free(doc);
    free(text);
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    test_shares();
    test_errors();
    test_depth();
    test_many();
    tg_engine_free(E);
    return tap_done();
}
