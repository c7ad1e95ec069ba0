/*
 * fuzz_classify.c -- the C pieces of plan classification: normalized
 * canonical form (x-toolgate-canonical), agreement of digests (tg_agree),
 * per-pointer agreement (tg_pointer_agreement) and the one-pass summary of
 * a single-tool plan (tg_plan_summarize).
 *
 * Input: up to 32 documents separated by NUL bytes, the arguments of the
 * samples of one plan; those that do not parse are dropped.  A fixed
 * normalization plan (path, trim, lower, id aliases, wildcards) applies.
 *
 * Invariants: the normalized canonical form, in both modes (RFC 8785 and
 * TG_CANON_EXACT), is canonical JSON in that mode (it re-parses and
 * re-canonicalizes to itself) and, with no plan, is exactly
 * tg_canon_value_mode's; tg_agree's counts equal a naive count over the
 * same digests (modal group, distinct groups, representative); per-pointer
 * agreement counts stay within n, come ordered, and are all n when every
 * sample normalizes to the same exact bytes; tg_plan_summarize over the
 * same samples (as a plan's JSON) counts exactly what the pieces count:
 * arguments by their exact digests, results by their RFC 8785 ones.
 * tg_classify on those samples (a single-tool plan and a plan of one call
 * a sample) and on the input itself read as a plan: whatever the bytes, a
 * decision or NOMEM; the decision parses as JSON and says the verdict,
 * code and stage the outcome reports; and a plan whose representative
 * sample fails the rung is never accepted.
 */
#include "fuzz.h"

#define MAXDOCS 32
#define MAXPTRS 16

static tg_norm_t *plan(tg_engine_t *e)
{
    static tg_norm_t *n;
    static const struct {
        const char *pattern;
        unsigned ops;
    } rules[] = {
        {"/path", TG_NORM_PATH},
        {"/*/path", TG_NORM_TRIM | TG_NORM_PATH},
        {"/team", TG_NORM_TRIM | TG_NORM_LOWER},
        {"/tags/*", TG_NORM_LOWER},
        {"/account", TG_NORM_TRIM | TG_NORM_ID},
        {"/entities/*/name", TG_NORM_TRIM | TG_NORM_LOWER | TG_NORM_ID},
        {"/a~1b/~0", TG_NORM_LOWER},
    };
    static const char *const aliases[][2] = {
        {"acct-1", "A1"},
        {"alice", "A1"},
        {"bob", "B2"},
        {"", "empty"},
    };
    if (n)
        return n;
    n = tg_norm_new(e, NULL);
    FUZZ_CHECK(n != NULL);
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        FUZZ_CHECK(tg_norm_add_rule(n, rules[i].pattern, strlen(rules[i].pattern), rules[i].ops,
                                    NULL) == TG_OK);
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        FUZZ_CHECK(tg_norm_add_alias(n, aliases[i][0], strlen(aliases[i][0]), aliases[i][1],
                                     strlen(aliases[i][1]), NULL) == TG_OK);
    return n;
}

static int hash_eq(const tg_hash128_t *a, const tg_hash128_t *b)
{
    return a->hi == b->hi && a->lo == b->lo;
}

/* tg_agree's answer, worked out the slow way. */
static void naive_agree(const tg_hash128_t *h, size_t n, tg_agreement_t *out)
{
    out->n = n;
    out->distinct = 0;
    out->modal_count = 0;
    out->representative = 0;
    for (size_t i = 0; i < n; i++) {
        size_t first = i, count = 0;
        for (size_t j = 0; j < i; j++)
            if (hash_eq(&h[j], &h[i])) {
                first = j;
                break;
            }
        if (first != i)
            continue; /* counted with its group's first member */
        out->distinct++;
        for (size_t j = i; j < n; j++)
            count += hash_eq(&h[j], &h[i]);
        if (count > out->modal_count) {
            out->modal_count = count;
            out->representative = i;
        }
    }
}

static void check_canonical(tg_engine_t *e, const tg_buf_t *b, int mode)
{
    tg_doc_t *d = NULL;
    tg_buf_t again;
    tg_error_t err;
    FUZZ_CHECK(tg_parse(e, b->data, b->len, &d, &err) == TG_OK);
    tg_buf_init(&again, e);
    FUZZ_CHECK(tg_canon_value_mode(tg_doc_root(d), mode, &again, &err) == TG_OK);
    FUZZ_CHECK(again.len == b->len && memcmp(again.data, b->data, b->len) == 0);
    tg_buf_free(&again);
    tg_doc_free(d);
}

static int cut(const char *p)
{
    size_t n = strlen(p);
    return n >= 4 && memcmp(p + n - 4, "/...", 4) == 0;
}

static void pointers(tg_engine_t *e, const tg_value_t *const *roots, size_t n, size_t rep,
                     const tg_norm_t *p, int all_equal)
{
    static tg_pointer_agreement_t out[MAXPTRS];
    size_t count = 0;
    tg_error_t err;
    int rc = tg_pointer_agreement(e, roots, n, rep, p, out, MAXPTRS, &count, &err);
    FUZZ_CHECK(rc == TG_OK);
    for (size_t i = 0; i < count && i < MAXPTRS; i++) {
        FUZZ_CHECK(memchr(out[i].pointer, '\0', sizeof out[i].pointer) != NULL);
        FUZZ_CHECK(out[i].agree <= n && out[i].present <= n);
        if (all_equal)
            FUZZ_CHECK(out[i].agree == n && out[i].present == n);
        if (i > 0) {
            FUZZ_CHECK(out[i - 1].agree <= out[i].agree);
            /* Ordered by the full text: a pointer cut to fit (".../...")
             * is not comparable, and a key holding U+0000 ends the C
             * string early, so two pointers can print alike (<=). */
            if (out[i - 1].agree == out[i].agree && !cut(out[i - 1].pointer) &&
                !cut(out[i].pointer))
                FUZZ_CHECK(strcmp(out[i - 1].pointer, out[i].pointer) <= 0);
        }
    }
}

/* A growing byte string (the core's buffer writers are not public). */
struct text {
    char *data;
    size_t len, cap;
};

static void append(struct text *t, const char *s, size_t n)
{
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->data = realloc(t->data, t->cap);
        FUZZ_CHECK(t->data != NULL);
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
}

/* One tool, closed world, for tg_plan_summarize. */
static tg_registry_t *registry(tg_engine_t *e)
{
    static tg_registry_t *r;
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"team\":{\"type\":\"string\",\"maxLength\":16},\"tags\":{\"type\":\"array\","
        "\"items\":{\"type\":\"string\"}},\"account\":{\"type\":\"string\"},"
        "\"limit\":{\"type\":\"integer\"}}}";
    tg_doc_t *d = NULL;
    size_t index;
    if (r)
        return r;
    FUZZ_CHECK(tg_parse(e, schema, sizeof schema - 1, &d, NULL) == TG_OK);
    r = tg_registry_new(e, NULL);
    FUZZ_CHECK(r != NULL);
    FUZZ_CHECK(tg_registry_add(r, "sb", 2, "lookup", 6, "", 0, tg_doc_root(d), NULL, NULL, &index,
                               NULL) == TG_OK);
    tg_doc_free(d);
    return r;
}

static void classify(tg_engine_t *e, const char *text, size_t len);

/* The samples as a plan would carry them -- sample i's arguments are
 * document i (in its exact form, so no digit is lost), its result document
 * i+1 (mod n) -- summarized in one pass by tg_plan_summarize, must count
 * what the pieces count. */
static void summarize(tg_engine_t *e, const tg_value_t *const *roots, size_t n,
                      const tg_hash128_t *norm, const tg_hash128_t *plain)
{
    tg_registry_t *r = registry(e);
    struct text text = {NULL, 0, 0};
    tg_doc_t *d = NULL;
    tg_plan_summary_t sum;
    tg_agreement_t want;
    tg_hash128_t results[MAXDOCS];
    tg_error_t err;
    size_t failed = 0;
    int objects = 1, rc;

    for (size_t i = 0; i < n; i++) {
        static const char a[] = "{\"arguments\":", b[] = ",\"result\":", c[] = ",\"epoch\":\"e\"}";
        tg_buf_t one;
        tg_buf_init(&one, e);
        FUZZ_CHECK(tg_canon_value_mode(roots[i], TG_CANON_EXACT, &one, &err) == TG_OK);
        append(&text, i ? "," : "[", 1);
        append(&text, a, sizeof a - 1);
        append(&text, one.data, one.len);
        tg_buf_reset(&one);
        FUZZ_CHECK(tg_canon_value(roots[(i + 1) % n], &one, &err) == TG_OK);
        append(&text, b, sizeof b - 1);
        append(&text, one.data, one.len);
        append(&text, c, sizeof c - 1);
        tg_buf_free(&one);
        results[i] = plain[(i + 1) % n];
        if (tg_type_of(roots[i]) != TG_OBJECT) {
            objects = 0;
        } else {
            tg_finding_t f;
            size_t count = 0;
            if (tg_validate(e, tg_registry_input_schema(r, 0), roots[i], &f, 1, &count, &err) !=
                TG_OK)
                objects = 0; /* a limit: the summary may stop there too */
            failed += count > 0;
        }
    }
    append(&text, "]", 1);
    {
        static const char head[] = "{\"plan_id\":\"f\",\"tool\":{\"server\":\"sb\",\"name\":"
                                   "\"lookup\",\"verified\":true},\"samples\":";
        struct text single = {NULL, 0, 0};
        append(&single, head, sizeof head - 1);
        append(&single, text.data, text.len);
        append(&single, "}", 1);
        classify(e, single.data, single.len);
        free(single.data);
    }
    /* the plan text may pass the depth limit by one level: then no summary */
    if (tg_parse(e, text.data, text.len, &d, &err) == TG_OK) {
        rc = tg_plan_summarize(e, r, 0, plan(e), tg_doc_root(d), &sum, &err);
        if (!objects) {
            FUZZ_CHECK(rc != TG_OK || failed <= sum.n_failed);
        } else {
            FUZZ_CHECK(rc == TG_OK);
            FUZZ_CHECK(sum.n == n && sum.epochs_equal);
            FUZZ_CHECK(sum.n_failed == failed);
            naive_agree(norm, n, &want);
            FUZZ_CHECK(sum.args.n == n && sum.args.distinct == want.distinct &&
                       sum.args.modal_count == want.modal_count &&
                       sum.args.representative == want.representative);
            naive_agree(results, n, &want);
            FUZZ_CHECK(sum.results.distinct == want.distinct &&
                       sum.results.modal_count == want.modal_count &&
                       sum.results.representative == want.representative);
        }
        tg_doc_free(d);
    }
    free(text.data);
}

/* ---- whole decisions ------------------------------------------------------------ */

/* A plan of one call a sample: document i the arguments of sample i's
 * call, document i+1 its result. */
static void multi(tg_engine_t *e, const tg_value_t *const *roots, size_t n)
{
    struct text text = {NULL, 0, 0};
    static const char head[] = "{\"plan_id\":\"m\",\"samples\":[";
    append(&text, head, sizeof head - 1);
    for (size_t i = 0; i < n; i++) {
        static const char a[] = "{\"epoch\":\"e\",\"calls\":[{\"server\":\"sb\",\"name\":"
                                "\"lookup\",\"arguments\":",
                          b[] = "}],\"results\":[", c[] = "]}";
        tg_buf_t one;
        tg_buf_init(&one, e);
        FUZZ_CHECK(tg_canon_value_mode(roots[i], TG_CANON_EXACT, &one, NULL) == TG_OK);
        append(&text, i ? "," : "", i ? 1 : 0);
        append(&text, a, sizeof a - 1);
        append(&text, one.data, one.len);
        tg_buf_reset(&one);
        FUZZ_CHECK(tg_canon_value(roots[(i + 1) % n], &one, NULL) == TG_OK);
        append(&text, b, sizeof b - 1);
        append(&text, one.data, one.len);
        append(&text, c, sizeof c - 1);
        tg_buf_free(&one);
    }
    append(&text, "]}", 2);
    classify(e, text.data, text.len);
    free(text.data);
}

static const char *const VERDICTS[] = {"accept", "reject", "defer"};

/* The string member key of the decision doc, compared with want. */
static int member_is(const tg_value_t *root, const char *key, const char *want)
{
    size_t len;
    const char *s = tg_str(tg_get(root, key, strlen(key)), &len);
    return s && len == strlen(want) && memcmp(s, want, len) == 0;
}

/* Whether the arguments fail the rung (or cannot be checked). */
static int fails_rung(tg_engine_t *e, const tg_value_t *args)
{
    tg_finding_t f;
    size_t count = 0;
    if (tg_type_of(args) != TG_OBJECT)
        return 1;
    return tg_validate(e, tg_registry_input_schema(registry(e), 0), args, &f, 1, &count, NULL) !=
               TG_OK ||
           count > 0;
}

static void decided(tg_engine_t *e, const char *text, size_t len, int rc, const tg_outcome_t *o)
{
    tg_doc_t *plan_doc = NULL, *d = NULL;
    const tg_value_t *root, *rep;
    FUZZ_CHECK(rc == TG_OK || rc == TG_E_NOMEM);
    if (rc != TG_OK)
        return;
    FUZZ_CHECK(o->status == TG_DECIDED && o->verdict >= 0 && o->verdict <= 2);
    FUZZ_CHECK(tg_parse(e, o->json, o->json_len, &d, NULL) == TG_OK);
    root = tg_doc_root(d);
    FUZZ_CHECK(member_is(root, "verdict", VERDICTS[o->verdict]));
    FUZZ_CHECK(member_is(root, "stage", o->stage));
    FUZZ_CHECK(o->verdict == TG_ACCEPT ? tg_get(root, "code", 4) == NULL
                                       : member_is(root, "code", o->code));
    /* the plan that would run is the representative one: its rung verdict stands */
    rep = tg_get(root, "representative", 14);
    if (o->verdict == TG_ACCEPT && rep && tg_parse(e, text, len, &plan_doc, NULL) == TG_OK) {
        const tg_value_t *sample =
            tg_at(tg_get(tg_doc_root(plan_doc), "samples", 7), (size_t)tg_num(rep) - 1);
        const tg_value_t *calls = tg_get(sample, "calls", 5);
        if (calls)
            for (size_t k = 0; k < tg_len(calls); k++)
                FUZZ_CHECK(!fails_rung(e, tg_get(tg_at(calls, k), "arguments", 9)));
        else
            FUZZ_CHECK(!fails_rung(e, tg_get(sample, "arguments", 9)));
    }
    tg_doc_free(plan_doc);
    tg_doc_free(d);
}

/* A sweep of the plan text, as one line of JSON Lines, at the policy's own
 * settings: the verdict and code tg_classify gave it (o, with a fresh
 * store).  Texts with a line break inside are lines of their own. */
static void swept(tg_engine_t *e, const tg_policy_t *p, tg_decider_t *d, const char *text,
                  size_t len, const tg_outcome_t *o)
{
    tg_sweep_t *sw;
    tg_store_t *store;
    tg_sweep_counts_t c;
    tg_outcome_t so;
    size_t line = 0, used = 0;
    tg_consistency_t cs;
    unsigned char verdict;
    const char *code;
    char *copy, want_code[64];
    int rc, blank = 1;
    for (size_t i = 0; i < len; i++)
        blank &= text[i] == ' ' || text[i] == '\t';
    if (blank || memchr(text, '\n', len) || memchr(text, '\r', len))
        return;
    /* the decider's next plan overwrites the outcome's code */
    snprintf(want_code, sizeof want_code, "%s", o->code);
    tg_consistency_default(&cs);
    cs.min_samples = 2; /* the policy's */
    copy = malloc(len + 1);
    sw = tg_sweep_new(p, NULL);
    store = tg_store_new(e, NULL);
    FUZZ_CHECK(copy && sw && store);
    memcpy(copy, text, len);
    copy[len] = '\n';
    rc = tg_sweep_lines(sw, d, NULL, store, copy, len + 1, 0, &line, &used, &so, NULL);
    FUZZ_CHECK(rc == TG_OK || rc == TG_E_NOMEM);
    if (rc == TG_OK) {
        FUZZ_CHECK(so.status == TG_NO_MORE_CALLS && tg_sweep_count(sw) == 1);
        FUZZ_CHECK(tg_sweep_run(sw, &cs, &c, NULL, &verdict, &code, NULL) == TG_OK);
        FUZZ_CHECK(verdict == o->verdict && strcmp(code, want_code) == 0);
    }
    tg_sweep_free(sw);
    tg_store_free(store);
    free(copy);
}

/* tg_classify of the plan text, with the in-process store and with the
 * host's (its questions answered: no record). */
static void classify(tg_engine_t *e, const char *text, size_t len)
{
    static const char desc[] =
        "{\"version\":\"f@1\",\"registry_hash\":\"h\",\"stages\":[{\"stage\":\"rung\"},"
        "{\"stage\":\"consistency\"}],\"risk_levels\":[\"low\"],"
        "\"consistency\":{\"min_samples\":2},\"tools\":[{\"deterministic\":true}]}";
    static tg_policy_t *p;
    static tg_decider_t *d;
    tg_store_t *store = tg_store_new(e, NULL);
    tg_outcome_t o;
    int rc;
    if (!p) {
        FUZZ_CHECK(tg_policy_new(e, registry(e), desc, sizeof desc - 1, &p, NULL) == TG_OK);
        FUZZ_CHECK(tg_policy_set_norm(p, 0, plan(e), NULL) == TG_OK);
        FUZZ_CHECK((d = tg_decider_new(e, NULL)) != NULL);
    }
    FUZZ_CHECK(store != NULL);
    for (int host = 0; host < 2; host++) {
        rc = tg_classify(d, p, NULL, host ? NULL : store, text, len, 0, 1, 0, &o, NULL);
        while (rc == TG_OK && o.status == TG_NEEDS_STORE)
            rc = tg_classify_record(d, 0, 0, NULL, 0, &o, NULL);
        decided(e, text, len, rc, &o);
        if (host == 0 && rc == TG_OK)
            swept(e, p, d, text, len, &o);
    }
    tg_store_free(store);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    const tg_norm_t *p = plan(e);
    const char *part[MAXDOCS];
    size_t len[MAXDOCS], parts, n = 0;
    tg_doc_t *docs[MAXDOCS];
    const tg_value_t *roots[MAXDOCS];
    tg_hash128_t plain[MAXDOCS], exact[MAXDOCS], norm[MAXDOCS];
    tg_agreement_t got, want;
    tg_buf_t b, b2;
    tg_error_t err;

    parts = fuzz_split(data, size, part, len, MAXDOCS);
    for (size_t i = 0; i < parts; i++)
        if (tg_parse(e, part[i], len[i], &docs[n], &err) == TG_OK) {
            roots[n] = tg_doc_root(docs[n]);
            n++;
        }
    if (n == 0)
        return 0;

    tg_buf_init(&b, e);
    tg_buf_init(&b2, e);
    for (size_t i = 0; i < n; i++) {
        for (int mode = TG_CANON_RFC8785; mode <= TG_CANON_EXACT; mode++) {
            /* no plan: the canonical form of the mode */
            tg_buf_reset(&b);
            tg_buf_reset(&b2);
            FUZZ_CHECK(tg_canon_normalized(NULL, roots[i], mode, &b, &err) == TG_OK);
            FUZZ_CHECK(tg_canon_value_mode(roots[i], mode, &b2, &err) == TG_OK);
            FUZZ_CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
            tg_hash128(b.data, b.len, mode == TG_CANON_EXACT ? &exact[i] : &plain[i]);
            /* the plan: still canonical JSON of the mode */
            tg_buf_reset(&b);
            FUZZ_CHECK(tg_canon_normalized(p, roots[i], mode, &b, &err) == TG_OK);
            check_canonical(e, &b, mode);
            if (mode == TG_CANON_EXACT)
                tg_hash128(b.data, b.len, &norm[i]);
        }
    }
    tg_buf_free(&b);
    tg_buf_free(&b2);

    FUZZ_CHECK(tg_agree(e, exact, n, &got, &err) == TG_OK);
    naive_agree(exact, n, &want);
    FUZZ_CHECK(got.n == n && got.distinct == want.distinct && got.modal_count == want.modal_count &&
               got.representative == want.representative);
    pointers(e, roots, n, got.representative, NULL, got.distinct == 1);

    FUZZ_CHECK(tg_agree(e, norm, n, &got, &err) == TG_OK);
    naive_agree(norm, n, &want);
    FUZZ_CHECK(got.n == n && got.distinct == want.distinct && got.modal_count == want.modal_count &&
               got.representative == want.representative);
    pointers(e, roots, n, got.representative, p, got.distinct == 1);

    summarize(e, roots, n, norm, plain);
    multi(e, roots, n);
    classify(e, (const char *)data, size); /* the input itself, as a plan */

    for (size_t i = 0; i < n; i++)
        tg_doc_free(docs[i]);
    return 0;
}
