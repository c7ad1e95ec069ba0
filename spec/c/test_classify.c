/*
 * test_classify.c -- self-consistency in the core: the decision table
 * (tg_consistency_decide) row by row at and around its thresholds; the two
 * decimals of its messages against glibc's printf, under a comma locale
 * too; the determinism store; tg_classify's questions to the host (a
 * store it keeps, resolver functions, custom stages) and their answers;
 * and tg_classify_lines on several threads giving the bytes and the store
 * of one thread, quarantines falling inside the pieces.
 */
#define _POSIX_C_SOURCE 200809L
#include "acct.h"
#include "tap.h"
#include "toolgate.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

size_t tg_format_fixed2(double x, char out[TG_NUMBER_BUF]); /* tg_internal.h */

static uint64_t rng = 0x243f6a8885a308d3u;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* ---- two decimals ----------------------------------------------------------- */

static long fixed2_mismatches(const double *xs, size_t n)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        char want[64], got[TG_NUMBER_BUF];
        snprintf(want, sizeof want, "%.2f", xs[i]);
        tg_format_fixed2(xs[i], got);
        if (strcmp(want, got) != 0) {
            if (bad < 5)
                printf("#   %.17g: printf %s, core %s\n", xs[i], want, got);
            bad++;
        }
    }
    return bad;
}

static void test_fixed2(void)
{
    enum {
        N = 300000
    };
    double *xs = malloc(N * sizeof *xs);
    size_t n = 0;
    char out[TG_NUMBER_BUF];
    static const double edges[] = {0,     -0.0,  0.005, 0.015, 0.025,  0.125,    0.375,
                                   0.625, 0.875, 0.995, 1,     1e-300, 4.9e-324, -0.125,
                                   0.145, 0.155, 0.165, 2.675, 1.005,  123.455,  0.994999999999};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        xs[n++] = edges[i];
    for (int d = 1; d <= 400; d++) /* every share of up to 400 samples */
        for (int k = 0; k <= d; k++)
            xs[n++] = (double)k / (double)d;
    while (n < N) {
        uint64_t b = next();
        double x = (double)(b >> 11) / 9007199254740992.0; /* [0, 1) */
        xs[n++] = (b & 1) ? x : x * 1000;
    }
    tap_ok(fixed2_mismatches(xs, n) == 0, "two decimals as glibc's printf: shares, edges, random");
    tg_format_fixed2(0.125, out);
    tap_is_mem(out, strlen(out), "0.12", "0.125 is 0.12 (ties to even, as Lua 5.4 printed)");
    tg_format_fixed2(0.375, out);
    tap_is_mem(out, strlen(out), "0.38", "0.375 is 0.38");
    tg_format_fixed2(0.145, out); /* 0.14499999999999999 in binary */
    tap_is_mem(out, strlen(out), "0.14", "0.145 is 0.14: the binary value below the tie");
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        char comma[16];
        snprintf(comma, sizeof comma, "%.2f", 0.5);
        tg_format_fixed2(0.5, out);
        tap_ok(strcmp(comma, "0,50") == 0 && strcmp(out, "0.50") == 0,
               "a comma-decimal locale changes printf, not the core");
        setlocale(LC_NUMERIC, "C");
    } else {
        printf("# no comma-decimal locale installed: the locale test is skipped\n");
    }
    free(xs);
}

/* ---- the table ------------------------------------------------------------------ */

typedef struct {
    const char *what;
    size_t n, arg, res;
    int fixed, det, nondet, ver;
    int verdict;
    const char *code;
} row;

/* How many rows the table under settings s decides otherwise than they say
 * (each one printed). */
static int wrong_rows(const tg_consistency_t *s, const row *rows, size_t n)
{
    tg_consistency_verdict_t v;
    tg_plan_features_t f;
    tg_error_t err;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        f.n = r->n;
        f.arg_modal = r->arg;
        f.result_modal = r->res;
        f.epoch_fixed = r->fixed;
        f.deterministic = r->det;
        f.nondeterministic = r->nondet;
        f.verified = r->ver;
        if (tg_consistency_decide(s, &f, &v, &err) != TG_OK || v.verdict != r->verdict ||
            strcmp(v.code, r->code) != 0 ||
            v.quarantine != (strcmp(r->code, "RESULT_DISAGREE") == 0)) {
            printf("#   %s: verdict %d code %s\n", r->what, v.verdict, v.code);
            bad++;
        }
    }
    return bad;
}

/* The defaults give arg_accept and result_accept one value, so a table that
 * read one threshold for the other would pass the rows above: each is read
 * for its own share here, both ways round, at and either side of it. */
static void test_table_own_thresholds(void)
{
    static const row results_stricter[] = {
        {"6/10 args, 9/10 results, both at their thresholds", 10, 6, 9, 1, 1, 0, 1, TG_ACCEPT, ""},
        {"7/10 args, 10/10 results", 10, 7, 10, 1, 1, 0, 1, TG_ACCEPT, ""},
        {"5/10 args is below arg_accept 0.6", 10, 5, 10, 1, 1, 0, 1, TG_DEFER, "ARG_UNSTABLE"},
        {"8/10 results is below result_accept 0.9", 10, 10, 8, 1, 1, 0, 1, TG_DEFER,
         "RESULT_UNSTABLE"},
    };
    static const row args_stricter[] = {
        {"9/10 args, 6/10 results, both at their thresholds", 10, 9, 6, 1, 1, 0, 1, TG_ACCEPT, ""},
        {"10/10 args, 7/10 results", 10, 10, 7, 1, 1, 0, 1, TG_ACCEPT, ""},
        {"8/10 args is below arg_accept 0.9", 10, 8, 10, 1, 1, 0, 1, TG_DEFER, "ARG_UNSTABLE"},
        {"10/10 args, 5/10 results is below result_accept 0.6", 10, 10, 5, 1, 1, 0, 1, TG_DEFER,
         "RESULT_UNSTABLE"},
    };
    tg_consistency_t s;
    tg_consistency_default(&s);
    s.arg_accept = 0.6;
    s.result_accept = 0.9;
    tap_ok(wrong_rows(&s, results_stricter, sizeof results_stricter / sizeof results_stricter[0]) ==
               0,
           "result_accept 0.9 above arg_accept 0.6: each share against its own threshold");
    s.arg_accept = 0.9;
    s.result_accept = 0.6;
    tap_ok(wrong_rows(&s, args_stricter, sizeof args_stricter / sizeof args_stricter[0]) == 0,
           "arg_accept 0.9 above result_accept 0.6: each share against its own threshold");
}

static void test_table(void)
{
    static const row rows[] = {
        {"4 samples", 4, 4, 4, 1, 1, 0, 1, TG_DEFER, "INSUFFICIENT_SAMPLES"},
        {"no samples", 0, 0, 0, 1, 1, 0, 1, TG_DEFER, "INSUFFICIENT_SAMPLES"},
        {"epoch moved", 10, 10, 10, 0, 1, 0, 1, TG_DEFER, "EPOCH_NOT_FIXED"},
        {"1/10 verified", 10, 1, 10, 1, 1, 0, 1, TG_REJECT, "ARG_DISAGREE"},
        {"2/10 is not below 0.20", 10, 2, 10, 1, 1, 0, 1, TG_DEFER, "ARG_UNSTABLE"},
        {"1/10 unverified", 10, 1, 10, 1, 1, 0, 0, TG_DEFER, "DETERMINISM_UNVERIFIED"},
        {"1/10 undeclared", 10, 1, 10, 1, 0, 0, 1, TG_DEFER, "DETERMINISM_UNVERIFIED"},
        {"1/5 at n = 5", 5, 1, 5, 1, 1, 0, 1, TG_DEFER, "ARG_UNSTABLE"},
        {"1/6 at n = 6", 6, 1, 6, 1, 1, 0, 1, TG_REJECT, "ARG_DISAGREE"},
        {"8/10 args, 4/10 results", 10, 8, 4, 1, 1, 0, 1, TG_DEFER, "RESULT_DISAGREE"},
        {"5/10 results is not below 0.50", 10, 8, 5, 1, 1, 0, 1, TG_DEFER, "RESULT_UNSTABLE"},
        {"7/10 results", 10, 8, 7, 1, 1, 0, 1, TG_DEFER, "RESULT_UNSTABLE"},
        {"8/10 results", 10, 8, 8, 1, 1, 0, 1, TG_ACCEPT, ""},
        {"undeclared, results disagree", 10, 10, 1, 1, 0, 0, 0, TG_DEFER, "RESULT_UNSTABLE"},
        {"nondeterministic", 10, 9, 1, 1, 0, 1, 0, TG_ACCEPT, ""},
        {"7/10 args", 10, 7, 10, 1, 1, 0, 1, TG_DEFER, "ARG_UNSTABLE"},
        {"7/10 args, nondeterministic", 10, 7, 10, 1, 0, 1, 0, TG_DEFER, "ARG_UNSTABLE"},
    };
    tg_consistency_t s, strict;
    tg_consistency_verdict_t v, w;
    tg_plan_features_t f;
    tg_error_t err;
    tg_consistency_default(&s);
    tap_ok(wrong_rows(&s, rows, sizeof rows / sizeof rows[0]) == 0,
           "every row of the table at and around its thresholds");
    strict = s;
    strict.on_invalid = TG_REJECT;
    f.n = 4;
    f.arg_modal = f.result_modal = 4;
    f.epoch_fixed = f.deterministic = f.verified = 1;
    f.nondeterministic = 0;
    tap_ok(tg_consistency_decide(&strict, &f, &v, NULL) == TG_OK && v.verdict == TG_REJECT &&
               v.row == TG_ROW_INSUFFICIENT_SAMPLES,
           "on_invalid reject: the conditions of validity reject");
    /* a sweep evaluates the same features under many settings; the function
     * keeps nothing between calls */
    {
        int same = 1;
        f.n = 20;
        f.arg_modal = 3;
        f.result_modal = 20;
        for (double t = 0; t <= 1.0001; t += 0.05) {
            tg_consistency_t g = s;
            g.arg_reject = t < g.arg_accept ? t : g.arg_accept;
            tg_consistency_decide(&g, &f, &v, NULL);
            tg_consistency_decide(&g, &f, &w, NULL);
            same &= v.verdict == w.verdict && v.row == w.row;
            same &= (0.15 < g.arg_reject) == (v.row == TG_ROW_ARG_DISAGREE);
        }
        tap_ok(same, "a threshold sweep over one plan's features: pure, strict '<'");
    }
    f.arg_modal = 21;
    tap_ok(tg_consistency_decide(&s, &f, &v, &err) == TG_E_ARG, "a modal count above n is refused");
    f.arg_modal = 0;
    tap_ok(tg_consistency_decide(&s, &f, &v, &err) == TG_E_ARG, "a modal count of 0 is refused");
    f.arg_modal = 1;
    strict.on_invalid = TG_ACCEPT;
    tap_ok(tg_consistency_decide(&strict, &f, &v, &err) == TG_E_ARG &&
               tg_consistency_decide(NULL, &f, &v, &err) == TG_E_ARG,
           "on_invalid accept and NULL settings are refused");
}

/* ---- the store -------------------------------------------------------------------- */

static void test_store(void)
{
    acct a = {0};
    tg_engine_t *e = tg_engine_new(NULL, acct_alloc, &a, NULL);
    tg_store_t *s = tg_store_new(e, NULL);
    tg_store_record_t r;
    const char *server, *name;
    size_t slen, nlen;
    int changed, ok = 1;
    long sites = 0, bad = 0;

    tap_ok(tg_store_get(s, "sb", 2, "lookup", 6, &r) == 0, "an empty store has no record");
    tg_store_verified(s, "sb", 2, "lookup", 6, "\"e1\"", 4, NULL);
    ok &= tg_store_get(s, "sb", 2, "lookup", 6, &r) && !r.quarantined && r.verified_epoch_len == 4;
    tg_store_quarantine(s, "sb", 2, "lookup", 6, "first", 5, 100, "\"e1\"", 4, &changed, NULL);
    ok &= changed && tg_store_get(s, "sb", 2, "lookup", 6, &r) && r.quarantined &&
          !r.verified_epoch && r.since == 100 && r.reason_len == 5;
    tg_store_quarantine(s, "sb", 2, "lookup", 6, "second", 6, 200, NULL, 0, &changed, NULL);
    ok &= !changed && tg_store_get(s, "sb", 2, "lookup", 6, &r) && r.reason_len == 5 &&
          memcmp(r.reason, "first", 5) == 0 && r.since == 100;
    tap_ok(ok, "verified, then quarantined: the first reason and time stay");
    tg_store_verified(s, "sb", 2, "lookup", 6, "\"e1\"", 4, NULL);
    ok = tg_store_get(s, "sb", 2, "lookup", 6, &r) && r.quarantined && r.verified_epoch_len == 4;
    tg_store_verified(s, "sb", 2, "lookup", 6, "\"e2\"", 4, NULL);
    ok &= tg_store_get(s, "sb", 2, "lookup", 6, &r) && !r.quarantined;
    tap_ok(ok, "a probe in the quarantine's epoch does not lift it, one in another does");
    tg_store_quarantine(s, NULL, 0, "bare", 4, "r", 1, 1, NULL, 0, NULL, NULL);
    ok = tg_store_get(s, "", 0, "bare", 4, &r) && r.quarantined && !r.epoch;
    ok &= tg_store_count(s) == 2 && tg_store_at(s, 1, &server, &slen, &name, &nlen, &r) == TG_OK &&
          slen == 0 && nlen == 4 && memcmp(name, "bare", 4) == 0;
    ok &= tg_store_at(s, 0, &server, &slen, &name, &nlen, &r) == TG_OK && slen == 2;
    tap_ok(ok, "a NULL server is \"\"; records come in the order tools were first written");
    tg_store_free(s);
    tg_engine_free(e);
    tap_ok(a.live == 0, "the store gives back every byte");

    /* every allocation of a write failing in turn: NOMEM, the record as it was */
    for (long k = 1;; k++) {
        acct b = {.sticky = 1};
        tg_engine_t *e2 = tg_engine_new(NULL, acct_alloc, &b, NULL);
        tg_store_t *s2 = tg_store_new(e2, NULL);
        int rc;
        tg_store_verified(s2, "sb", 2, "a", 1, "\"e\"", 3, NULL);
        b.fail_at = b.calls + k;
        rc = tg_store_quarantine(s2, "sb", 2, "b", 1, "why", 3, 5, "\"e\"", 3, NULL, NULL);
        if (rc == TG_OK)
            rc = tg_store_quarantine(s2, "sb", 2, "a", 1, "why", 3, 5, "\"e\"", 3, NULL, NULL);
        if (!b.fired) {
            tg_store_free(s2);
            tg_engine_free(e2);
            break;
        }
        sites++;
        b.fail_at = 0;
        if (rc != TG_E_NOMEM || !tg_store_get(s2, "sb", 2, "a", 1, &r) ||
            (r.quarantined && r.verified_epoch) || (!r.quarantined && !r.verified_epoch))
            bad++;
        tg_store_free(s2);
        tg_engine_free(e2);
        bad += b.live != 0;
    }
    tap_ok(sites > 3 && bad == 0,
           "a store write that runs out of memory changes nothing, leaks nothing");
}

/* ---- a registry and policies ---------------------------------------------------------- */

static tg_engine_t *E;
static tg_registry_t *R;
static tg_norm_t *NORM;

static const char *const TOOLS[][3] = {
    {"sb", "lookup",
     "{\"type\":\"object\",\"properties\":{\"user_id\":{\"type\":\"string\"},\"limit\":"
     "{\"type\":\"integer\"},\"account\":{\"type\":\"string\"}}}"},
    {"sb", "now", "{\"type\":\"object\",\"properties\":{\"tz\":{\"type\":\"string\"}}}"},
    {"sb", "search",
     "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}},\"required\":[\"q\"]}"},
    {"sb", "open",
     "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}},\"required\":[\"id\"]}"},
};

static void setup(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    R = tg_registry_new(E, NULL);
    for (size_t i = 0; i < sizeof TOOLS / sizeof TOOLS[0]; i++) {
        tg_doc_t *d;
        size_t index;
        tg_parse(E, TOOLS[i][2], strlen(TOOLS[i][2]), &d, NULL);
        tg_registry_add(R, TOOLS[i][0], 2, TOOLS[i][1], strlen(TOOLS[i][1]), NULL, 0,
                        tg_doc_root(d), NULL, NULL, &index, NULL);
        tg_doc_free(d);
    }
    NORM = tg_norm_new(E, NULL);
    tg_norm_add_rule(NORM, "/account", 8, TG_NORM_TRIM | TG_NORM_ID, NULL);
    tg_norm_add_alias(NORM, "acme corp", 9, "acct_1", 6, NULL);
}

/* A policy of these stages; tools lookup, search, open deterministic, now
 * not; lookup's "account" IDs resolved by a policy function when resolve. */
static tg_policy_t *policy(const char *stages, int resolve)
{
    char desc[2048];
    tg_policy_t *p = NULL;
    tg_error_t err;
    snprintf(desc, sizeof desc,
             "{\"version\":\"t@1\",\"registry_hash\":\"h\",\"stages\":%s,"
             "\"risk_levels\":[\"none\",\"low\"],\"tools\":["
             "{\"deterministic\":true%s},{\"deterministic\":false},{\"deterministic\":true},"
             "{\"deterministic\":true}]}",
             stages,
             resolve ? ",\"resolve\":[{\"pattern\":\"/account\",\"pre\":[\"trim\"],"
                       "\"resolver\":\"accounts\"}]"
                     : "");
    if (tg_policy_new(E, R, desc, strlen(desc), &p, &err) != TG_OK)
        printf("# policy: %s\n", err.message);
    tg_policy_set_norm(p, 0, NORM, NULL);
    return p;
}

static const char RUNG_CONS[] = "[{\"stage\":\"rung\"},{\"stage\":\"consistency\"}]";

/* A single-tool plan on lookup: n samples, the first `agree` with the same
 * user_id, results agreeing in the first `ragree`. */
static char *plan(const char *id, int n, int agree, int ragree, const char *inline_decl)
{
    size_t cap = 256 + 96 * (size_t)n, at;
    char *s = malloc(cap);
    at = (size_t)snprintf(s, cap,
                          "{\"plan_id\":\"%s\",\"tool\":{\"server\":\"sb\",\"name\":\"lookup\"%s},"
                          "\"samples\":[",
                          id, inline_decl);
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(s + at, cap - at,
                               "%s{\"arguments\":{\"user_id\":\"%s%d\"},\"result\":%d,\"epoch\":"
                               "\"e1\"}",
                               i ? "," : "", i < agree ? "u" : "x", i < agree ? 0 : i,
                               i < ragree ? 0 : i);
    snprintf(s + at, cap - at, "]}");
    return s;
}

/* Whether the decision (json_len bytes, not NUL-terminated) holds needle. */
static int has(const tg_outcome_t *o, const char *needle)
{
    size_t n = strlen(needle);
    if (o->status != TG_DECIDED)
        return 0;
    for (size_t i = 0; i + n <= o->json_len; i++)
        if (memcmp(o->json + i, needle, n) == 0)
            return 1;
    return 0;
}

/* ---- the host's questions ------------------------------------------------------------------ */

static void test_questions(void)
{
    tg_policy_t *p = policy(RUNG_CONS, 0), *pr = policy(RUNG_CONS, 1);
    tg_policy_t *pc = policy("[{\"stage\":\"rung\"},{\"stage\":\"custom\",\"name\":\"ask\","
                             "\"code\":\"ASK\"},{\"stage\":\"consistency\"}]",
                             0);
    tg_decider_t *d = tg_decider_new(E, NULL);
    tg_store_t *store = tg_store_new(E, NULL);
    tg_outcome_t o;
    tg_error_t err;
    const char *reason, *epoch, *res, *id;
    size_t rlen, elen, idlen;
    char *t = plan("p1", 10, 10, 4, "");
    int rc;

    /* the host's store: asked for lookup's record, then told to quarantine */
    rc = tg_classify(d, p, NULL, NULL, t, strlen(t), 0, 3, 7, &o, &err);
    tap_ok(rc == TG_OK && o.status == TG_NEEDS_STORE && tg_classify_store_tool(d) == 0,
           "a plan asks the host's store for its tool's record");
    tap_ok(tg_classify_query(d, NULL, NULL, NULL, NULL) == -1 &&
               tg_classify_resolve(d, 1, "x", 1, &o, &err) == TG_E_ARG &&
               tg_check_answer(d, -1, NULL, 0, NULL, 0, &o, &err) == TG_E_ARG,
           "answers to a question not asked are refused");
    rc = tg_classify_record(d, 1, 0, "\"e1\"", 4, &o, &err);
    tap_ok(rc == TG_OK && has(&o, "\"code\":\"RESULT_DISAGREE\"") && has(&o, "\"line\":3") &&
               has(&o, "\"verified\":true"),
           "answered verified in the plan's epoch: RESULT_DISAGREE");
    tap_ok(tg_classify_quarantines(d) == 1 &&
               tg_classify_quarantine(d, 0, &reason, &rlen, &epoch, &elen) == 0 &&
               rlen == strlen("RESULT_DISAGREE in plan p1: result agreement 0.40") &&
               memcmp(reason, "RESULT_DISAGREE in plan p1: result agreement 0.40", rlen) == 0 &&
               elen == 4 && memcmp(epoch, "\"e1\"", 4) == 0,
           "its quarantine is handed to the host: tool, reason, epoch");
    rc = tg_classify(d, p, NULL, NULL, t, strlen(t), 0, 0, 7, &o, &err);
    rc |= tg_classify_record(d, 1, 1, NULL, 0, &o, &err);
    tap_ok(rc == TG_OK && has(&o, "\"verified\":false"), "answered quarantined: not verified");
    rc = tg_classify(d, p, NULL, NULL, t, strlen(t), 0, 0, 7, &o, &err);
    rc |= tg_classify_record(d, 1, 0, "\"e2\"", 4, &o, &err);
    tap_ok(rc == TG_OK && has(&o, "\"verified\":false"), "verified in another epoch: not verified");

    /* the in-process store: no question, the quarantine written */
    rc = tg_classify(d, p, NULL, store, t, strlen(t), 0, 0, 7, &o, &err);
    {
        tg_store_record_t r;
        tap_ok(rc == TG_OK && has(&o, "RESULT_DISAGREE") &&
                   tg_store_get(store, "sb", 2, "lookup", 6, &r) && r.quarantined && r.since == 7,
               "the in-process store takes the quarantine, since = now");
    }
    free(t);

    /* a resolver function: once per distinct ID, after the operations before "id" */
    t = strdup(
        "{\"plan_id\":\"r\",\"tool\":{\"server\":\"sb\",\"name\":\"lookup\",\"deterministic\":"
        "true,\"verified\":true},\"samples\":["
        "{\"arguments\":{\"account\":\" Acme\"},\"result\":1,\"epoch\":\"e\"},"
        "{\"arguments\":{\"account\":\"ACME\"},\"result\":1,\"epoch\":\"e\"},"
        "{\"arguments\":{\"account\":\"Acme \"},\"result\":1,\"epoch\":\"e\"},"
        "{\"arguments\":{\"account\":\"acme corp\"},\"result\":1,\"epoch\":\"e\"},"
        "{\"arguments\":{\"account\":\"acct_1\"},\"result\":1,\"epoch\":\"e\"}]}");
    rc = tg_classify(d, pr, NULL, store, t, strlen(t), 0, 0, 0, &o, &err);
    {
        int asked = 0, ok = rc == TG_OK;
        while (ok && o.status == TG_NEEDS_RESOLVE && asked < 10) {
            long tool = tg_classify_query(d, &res, &rlen, &id, &idlen);
            ok &= tool == 0 && rlen == 8 && memcmp(res, "accounts", 8) == 0 && id[0] != ' ';
            asked++;
            /* Acme and ACME are acct_1; the others stay as they are */
            if ((idlen == 4 && memcmp(id, "Acme", 4) == 0) ||
                (idlen == 4 && memcmp(id, "ACME", 4) == 0))
                rc = tg_classify_resolve(d, 1, "acct_1", 6, &o, &err);
            else
                rc = tg_classify_resolve(d, 1, id, idlen, &o, &err);
            ok &= rc == TG_OK;
        }
        tap_ok(ok && asked == 4 && has(&o, "\"arg_agreement\":1"),
               "a resolver is asked once per distinct trimmed ID; its aliases make them agree");
    }
    rc = tg_classify(d, pr, NULL, store, t, strlen(t), 0, 0, 0, &o, &err);
    rc |= tg_classify_resolve(d, 0, "directory down\xff", 15, &o, &err);
    tap_ok(rc == TG_OK && has(&o, "\"code\":\"POLICY_ERROR\"") &&
               has(&o, "policy resolver failed: directory down\"") && has(&o, "\"reject\""),
           "a resolver that fails: on_error's verdict, POLICY_ERROR, its message as UTF-8");
    rc = tg_classify(d, pr, NULL, store, t, strlen(t), 0, 0, 0, &o, &err);
    rc |= tg_classify_resolve(d, 1, "acct_9", 6, &o, &err);
    while (rc == TG_OK && o.status == TG_NEEDS_RESOLVE)
        rc = tg_classify_resolve(d, 1, "acct_9", 6, &o, &err);
    tap_ok(rc == TG_OK && has(&o, "already resolves to another id"),
           "an ID the policy's alias table maps elsewhere: POLICY_ERROR");
    free(t);

    /* a custom stage on the representative's call */
    t = plan("c", 6, 6, 6, ",\"deterministic\":true,\"verified\":true");
    rc = tg_classify(d, pc, NULL, store, t, strlen(t), 0, 0, 0, &o, &err);
    tap_ok(rc == TG_OK && o.status == TG_NEEDS_STAGE && o.pending == 1 && tg_check_tool(d) == 0 &&
               tg_check_arguments(d) != NULL,
           "a custom stage on the representative's call waits for the host");
    rc = tg_check_answer(d, TG_DEFER, "ASK", 3, "ask first", 9, &o, &err);
    tap_ok(rc == TG_OK && has(&o, "\"stage\":\"ask\"") &&
               has(&o, "\"stages\":[\"rung\",\"ask\",\"consistency\"]") && has(&o, "\"binding\"") &&
               strcmp(o.code, "ASK") == 0,
           "its defer is the plan's, with the stages that ran and a binding");
    rc = tg_classify(d, pc, NULL, store, t, strlen(t), 0, 0, 0, &o, &err);
    rc |= tg_check_answer(d, -1, NULL, 0, NULL, 0, &o, &err);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && o.verdict == TG_ACCEPT,
           "answered pass: the plan is accepted");
    free(t);

    /* the lines: a plan whose quarantines the host's store must take stops the chunk */
    {
        char *a = plan("q1", 10, 10, 4, ",\"verified\":true"),
             *b = plan("q2", 10, 10, 10, ",\"verified\":true");
        size_t len = strlen(a) + strlen(b) + 3, line = 0, used = 0, v[3] = {0, 0, 0};
        char *text = malloc(len + 1);
        tg_buf_t out;
        tg_buf_init(&out, E);
        snprintf(text, len + 1, "%s\n\n%s\n", a, b);
        rc = tg_classify_lines(d, p, NULL, NULL, text, len, 0, 0, &line, &used, &out, v, &o, &err);
        tap_ok(rc == TG_OK && o.status == TG_NEEDS_STORE && line == 1,
               "the lines ask the host's store as one plan does");
        rc = tg_classify_record(d, 0, 0, NULL, 0, &o, &err);
        tap_ok(rc == TG_OK && o.status == TG_DECIDED && tg_classify_quarantines(d) == 1,
               "and hand back the plan that quarantines");
        rc = tg_classify_lines(d, p, NULL, NULL, text + used, len - used, 0, 0, &line, &used, &out,
                               v, &o, &err);
        rc |= tg_classify_record(d, 1, 1, NULL, 0, &o, &err);
        tap_ok(rc == TG_OK && o.status == TG_DECIDED && line == 3 && has(&o, "\"line\":3"),
               "the next plan is read after the blank line, numbered as an editor does");
        tg_buf_free(&out);
        free(text);
        free(a);
        free(b);
    }
    tap_ok(tg_classify(d, p, NULL, NULL, NULL, 0, 0, 0, 0, &o, &err) == TG_E_ARG,
           "a NULL plan is misuse");
    tg_store_free(store);
    tg_decider_free(d);
    tg_policy_free(p);
    tg_policy_free(pr);
    tg_policy_free(pc);
}

/* ---- threads -----------------------------------------------------------------------------------
 */

/* A batch whose decisions depend on the store's state: fabricated plans on
 * verified tools (ARG_DISAGREE until the tool is quarantined, then
 * DETERMINISM_UNVERIFIED) and, at `at` of the way through, the plan that
 * quarantines lookup; from half way to 70%, no plan on lookup.  With at2
 * (above 0), the plan at at2 of the way quarantines search. */
static char *batch(int n, double at, double at2, size_t *len)
{
    size_t cap = (size_t)n * 1200, w = 0;
    char *s = malloc(cap);
    static const char *const tools[] = {"lookup", "search", "open"};
    static const char *const keys[] = {"user_id", "q", "id"};
    for (int i = 0; i < n; i++) {
        int t = (int)(next() % 3), quarantining = 0;
        if (i == (int)(at * n)) {
            t = 0; /* here lookup's results are seen to disagree */
            quarantining = 1;
        } else if (at2 > 0 && i == (int)(at2 * n)) {
            t = 1; /* and here search's */
            quarantining = 1;
        }
        /* a stretch without lookup: a later piece reads it first in its middle */
        if (t == 0 && !quarantining && i >= n / 2 && i < n * 7 / 10)
            t = 1 + (int)(next() % 2);
        w += (size_t)snprintf(s + w, cap - w,
                              "{\"plan_id\":%d,\"tool\":{\"server\":\"sb\",\"name\":\"%s\","
                              "\"verified\":true},\"samples\":[",
                              i, tools[t]);
        for (int k = 0; k < 6; k++)
            w += (size_t)snprintf(
                s + w, cap - w, "%s{\"arguments\":{\"%s\":\"%s%d\"},\"result\":%d,\"epoch\":\"e\"}",
                k ? "," : "", keys[t], quarantining ? "v" : "f", quarantining ? 0 : k,
                quarantining ? k : 0);
        w += (size_t)snprintf(s + w, cap - w, "]}\n");
        if (i % 17 == 0)
            w += (size_t)snprintf(s + w, cap - w, "\n"); /* a blank line now and then */
    }
    *len = w;
    return s;
}

/* The store's records as text, to compare two stores. */
static char *records(const tg_store_t *s)
{
    size_t cap = 256 + 512 * tg_store_count(s), at = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (size_t i = 0; i < tg_store_count(s); i++) {
        const char *server, *name;
        size_t slen, nlen;
        tg_store_record_t r;
        tg_store_at(s, i, &server, &slen, &name, &nlen, &r);
        at += (size_t)snprintf(out + at, cap - at, "%.*s/%.*s q=%d %.*s since=%lld\n", (int)slen,
                               server, (int)nlen, name, r.quarantined, (int)r.reason_len,
                               r.reason ? r.reason : "", (long long)r.since);
    }
    return out;
}

static void test_threads(void)
{
    tg_policy_t *p = policy(RUNG_CONS, 0);
    tg_decider_t *d = tg_decider_new(E, NULL);
    int ok = 1;
    for (int round = 0; round < 8; round++) {
        size_t len;
        double at = round < 3 ? 0.1 + 0.3 * round : round < 6 ? 0.02 * round : 0.1;
        /* the last two: the rest of a chunk classified again (from where a
         * piece read lookup, quarantined in an earlier piece) meets search
         * quarantined in one of its pieces and read in a later one */
        double at2 = round == 6 ? 0.75 : round == 7 ? 0.8 : 0;
        char *text = batch(round < 3 || round >= 6 ? 1500 : 400, at, at2, &len);
        tg_buf_t one;
        char *one_rec;
        size_t line1 = 0, used1 = 0, v1[3] = {0, 0, 0};
        tg_store_t *s1 = tg_store_new(E, NULL);
        tg_outcome_t o;
        tg_error_t err;
        tg_buf_init(&one, E);
        ok &= tg_classify_lines(d, p, NULL, s1, text, len, 0, 42, &line1, &used1, &one, v1, &o,
                                &err) == TG_OK &&
              o.status == TG_NO_MORE_CALLS;
        one_rec = records(s1);
        for (size_t threads = 2; threads <= 4; threads++) {
            tg_workers_t *w = tg_workers_new(E, threads, NULL);
            tg_buf_t many;
            char *many_rec;
            size_t line = 0, used = 0, v[3] = {0, 0, 0};
            tg_store_t *s = tg_store_new(E, NULL);
            tg_buf_init(&many, E);
            ok &= tg_classify_lines_parallel(w, d, p, NULL, s, text, len, 0, 42, &line, &used,
                                             &many, v, &o, &err) == TG_OK &&
                  o.status == TG_NO_MORE_CALLS;
            many_rec = records(s);
            if (!(many.len == one.len && memcmp(many.data, one.data, one.len) == 0 &&
                  line == line1 && used == used1 && v[0] == v1[0] && v[1] == v1[1] &&
                  v[2] == v1[2] && strcmp(many_rec, one_rec) == 0)) {
                printf("#   round %d, %zu threads: output %zu/%zu bytes, store:\n%s--\n%s", round,
                       threads, many.len, one.len, many_rec, one_rec);
                ok = 0;
            }
            free(many_rec);
            tg_buf_free(&many);
            tg_store_free(s);
            tg_workers_free(w);
        }
        if (!(v1[1] > 0 && v1[2] > 0 && one_rec[0])) {
            printf("#   round %d: %zu accepts, %zu rejects, %zu defers; store:\n%s", round, v1[0],
                   v1[1], v1[2], one_rec);
            ok = 0; /* the batch must reject and quarantine */
        }
        free(one_rec);
        tg_buf_free(&one);
        tg_store_free(s1);
        free(text);
    }
    tap_ok(ok, "2, 3 and 4 threads give the bytes, counts and store of one, quarantines "
               "falling inside later pieces, and inside the pieces of the chunk's rest");
    tg_decider_free(d);
    tg_policy_free(p);
}

/* ---- threshold sweeps --------------------------------------------------------------- */

/* tg_sweep at a setting against tg_classify_lines under a policy of that
 * setting on a fresh store: the same counts of verdicts, plan for plan
 * the same verdicts; the store the features pass read stays unwritten. */
static void test_sweep(void)
{
    static const char *const settings[] = {"", ",\"consistency\":{\"quarantine\":false}",
                                           ",\"consistency\":{\"arg_reject\":0.1,"
                                           "\"result_quarantine\":0.3}"};
    tg_policy_t *base = policy(RUNG_CONS, 0);
    tg_decider_t *d = tg_decider_new(E, NULL);
    tg_store_t *read_only = tg_store_new(E, NULL);
    tg_sweep_t *sw = tg_sweep_new(base, NULL);
    size_t len, line = 0, used = 0, n;
    char *text = batch(900, 0.3, 0, &len);
    tg_outcome_t o;
    tg_error_t err;
    int ok =
        tg_sweep_lines(sw, d, NULL, read_only, text, len, 0, &line, &used, &o, &err) == TG_OK &&
        o.status == TG_NO_MORE_CALLS && used == len && tg_store_count(read_only) == 0;
    n = tg_sweep_count(sw);
    tap_ok(ok && n == 900, "the features pass keeps every plan and writes nothing to the store");
    for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
        char desc[2048];
        tg_policy_t *p = NULL;
        tg_consistency_t cs;
        tg_sweep_counts_t c;
        unsigned char *verdicts = malloc(n), q[4];
        const char **codes = malloc(n * sizeof *codes);
        size_t l2 = 0, u2 = 0, v[3] = {0, 0, 0}, same = 0;
        tg_store_t *st = tg_store_new(E, NULL);
        tg_buf_t out;
        snprintf(desc, sizeof desc,
                 "{\"version\":\"t@1\",\"registry_hash\":\"h\",\"stages\":%s%s,"
                 "\"risk_levels\":[\"none\",\"low\"],\"tools\":[{\"deterministic\":true},"
                 "{\"deterministic\":false},{\"deterministic\":true},{\"deterministic\":true}]}",
                 RUNG_CONS, settings[k]);
        tg_policy_new(E, R, desc, strlen(desc), &p, NULL);
        tg_policy_set_norm(p, 0, NORM, NULL);
        tg_buf_init(&out, E);
        ok = tg_classify_lines(d, p, NULL, st, text, len, 0, 1, &l2, &u2, &out, v, &o, &err) ==
             TG_OK;
        tg_consistency_default(&cs);
        if (k == 1)
            cs.quarantine = 0;
        if (k == 2) {
            cs.arg_reject = 0.1;
            cs.result_quarantine = 0.3;
        }
        ok &= tg_sweep_run(sw, &cs, &c, q, verdicts, codes, &err) == TG_OK;
        /* the decisions, line by line: their verdicts */
        for (size_t i = 0, at = 0; ok && i < n; i++) {
            const char *nl = memchr(out.data + at, '\n', out.len - at);
            static const char *const names[] = {"\"verdict\":\"accept\"", "\"verdict\":\"reject\"",
                                                "\"verdict\":\"defer\""};
            size_t end = nl ? (size_t)(nl - out.data) : out.len;
            const char *hit = strstr(out.data + at, names[verdicts[i]]);
            same += hit && hit < out.data + end;
            at = end + 1;
        }
        ok &= same == n && c.plans[0][0] == v[0] && c.plans[1][0] == v[1] && c.plans[2][0] == v[2];
        if (!ok)
            printf("#   setting %zu: %zu of %zu plans the same; sweep %zu/%zu/%zu, classify "
                   "%zu/%zu/%zu\n",
                   k, same, n, c.plans[0][0], c.plans[1][0], c.plans[2][0], v[0], v[1], v[2]);
        tap_ok(ok && (k == 1 ? c.quarantined == 0 : c.quarantined > 0) &&
                   (k == 1 || tg_store_count(st) > 0),
               "a sweep at a setting gives classify's verdicts under it, plan for plan");
        tg_buf_free(&out);
        tg_store_free(st);
        tg_policy_free(p);
        free(verdicts);
        free(codes);
    }
    {
        /* the host's table: tg_consistency_decide on tg_sweep_plan's
         * features gives tg_sweep_run's verdicts without quarantines */
        tg_consistency_t cs;
        tg_sweep_counts_t c, want;
        unsigned char *table = malloc(n), *mine = malloc(n), *theirs = malloc(n);
        size_t fixed = 0, same = 0;
        tg_consistency_default(&cs);
        cs.quarantine = 0;
        ok = 1;
        for (size_t i = 0; i < n; i++) {
            tg_sweep_plan_t sp;
            tg_consistency_verdict_t cv;
            ok &= tg_sweep_plan(sw, i, &sp, &err) == TG_OK;
            table[i] = 0;
            if (sp.fixed)
                fixed++;
            else if (tg_consistency_decide(&cs, &sp.features, &cv, &err) == TG_OK)
                table[i] = (unsigned char)cv.verdict;
        }
        ok &= tg_sweep_run_with(sw, table, &c, mine, NULL, &err) == TG_OK &&
              tg_sweep_run(sw, &cs, &want, NULL, theirs, NULL, &err) == TG_OK;
        for (size_t i = 0; ok && i < n; i++)
            same += mine[i] == theirs[i];
        ok &= same == n && memcmp(c.plans, want.plans, sizeof c.plans) == 0 && c.quarantined == 0;
        ok &= tg_sweep_plan(sw, n, NULL, &err) == TG_E_ARG;
        table[0] = 7;
        ok &= tg_sweep_run_with(sw, table, &c, NULL, NULL, &err) == TG_E_ARG || fixed > 0;
        tap_ok(ok, "the host's table over tg_sweep_plan's features: tg_sweep_run_with gives the "
                   "verdicts of the engine's without quarantines");
        free(table);
        free(mine);
        free(theirs);
    }
    {
        tg_consistency_t cs;
        tg_sweep_counts_t c;
        tg_consistency_default(&cs);
        cs.arg_reject = 0.9;
        ok = tg_sweep_run(sw, &cs, &c, NULL, NULL, NULL, &err) == TG_E_ARG &&
             strstr(err.message, "arg_reject") != NULL;
        cs.arg_reject = 0.2;
        cs.result_accept = -1;
        ok &= tg_sweep_run(sw, &cs, &c, NULL, NULL, NULL, &err) == TG_E_ARG;
        cs.result_accept = 0.8;
        cs.min_samples = 0;
        ok &= tg_sweep_run(sw, &cs, &c, NULL, NULL, NULL, &err) == TG_E_ARG;
        tap_ok(ok, "a sweep refuses settings that cannot hold, saying which");
    }
    free(text);
    tg_sweep_free(sw);
    tg_store_free(read_only);
    tg_decider_free(d);
    tg_policy_free(base);
}

/* A garbage collector frees in any order (LuaJIT's at lua_close freed a
 * sweep after its policy and engine, and crashed): a sweep freed last
 * reads neither, and holds its engine until then; every byte comes back. */
static void test_sweep_freed_last(void)
{
    static const char desc[] = "{\"version\":\"t@1\",\"registry_hash\":\"h\",\"stages\":"
                               "[{\"stage\":\"consistency\"}],\"risk_levels\":[\"none\"],"
                               "\"tools\":[{\"deterministic\":true}]}";
    acct a = {0};
    tg_engine_t *e = tg_engine_new(NULL, acct_alloc, &a, NULL);
    tg_registry_t *r = tg_registry_new(e, NULL);
    tg_policy_t *p = NULL;
    tg_sweep_t *sw;
    tg_doc_t *d;
    int ok;
    tg_parse(e, TOOLS[0][2], strlen(TOOLS[0][2]), &d, NULL);
    tg_registry_add(r, TOOLS[0][0], 2, TOOLS[0][1], strlen(TOOLS[0][1]), NULL, 0, tg_doc_root(d),
                    NULL, NULL, NULL, NULL);
    tg_doc_free(d);
    ok = tg_policy_new(e, r, desc, strlen(desc), &p, NULL) == TG_OK;
    sw = tg_sweep_new(p, NULL);
    ok &= sw != NULL && tg_sweep_tools(sw) == 1;
    tg_policy_free(p);
    tg_registry_free(r);
    tg_engine_free(e);
    ok &= a.live > 0; /* the sweep's, and the engine it holds */
    tg_sweep_free(sw);
    tap_ok(ok && a.live == 0, "a sweep freed after its policy and engine gives every byte back");
}

int main(void)
{
    test_fixed2();
    test_table();
    test_table_own_thresholds();
    test_store();
    setup();
    test_questions();
    test_threads();
    test_sweep();
    test_sweep_freed_last();
    tg_norm_free(NORM);
    tg_registry_free(R);
    tg_engine_free(E);
    return tap_done();
}
