/*
 * test_fail_closed.c -- failing closed, as a property: for many generated
 * calls, fail each allocation of a decision in turn (decode, then the
 * Resolution Rung with and without H5), on a fresh engine each time so
 * the first-use allocations (PCRE2's match data) fail too.  Whenever a
 * fault fired, the decision is either the error (NOMEM, so the call is
 * refused) or exactly the decision the call gets without the fault -- so
 * a fault never turns a reject into an accept -- and every byte is given
 * back.  The same for building a registry: a failed tg_registry_add leaves
 * the registry as it was.  The validation limits are faults of the same
 * kind: a check that stops at one is an error, never a valid call.  And
 * the same for classifying sampled plans (tg_classify), single-tool and of
 * several calls, with the in-process store and with the host's (whose
 * questions are answered), and for tg_classify_lines; and on two threads
 * (tg_classify_lines_parallel), where a run of plans that meets a fault
 * either decides every line as one thread does or stops at a line, with
 * the decisions before it one thread's, byte for byte.
 */
#define _XOPEN_SOURCE 700
#include "acct.h"
#include "tap.h"
#include "tg_internal.h" /* tg_buf_append */
#include "toolgate.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- the registry -------------------------------------------------------- */

static const char *const TOOLS[][3] = {
    {"fs", "read",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"pattern\":\"^/\"},"
     "\"head\":{\"type\":\"integer\",\"minimum\":0},\"encoding\":{\"enum\":[\"utf-8\",\"latin1\"]}},"
     "\"required\":[\"path\"]}"},
    {"fs", "tag",
     "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"uniqueItems\":true,"
     "\"items\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}},\"meta\":{\"type\":\"object\","
     "\"patternProperties\":{\"^x-\":{\"type\":\"boolean\"}},\"additionalProperties\":false}},"
     "\"required\":[\"tags\"]}"},
    {"web", "read",
     "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\",\"format\":\"uri\"}},"
     "\"required\":[\"url\"]}"},
    {"web", "fetch",
     "{\"type\":\"object\",\"$defs\":{\"h\":{\"type\":\"string\",\"maxLength\":64}},\"properties\":{"
     "\"url\":{\"type\":\"string\"},\"headers\":{\"type\":\"object\",\"additionalProperties\":"
     "{\"$ref\":\"#/$defs/h\"}},\"retries\":{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}},"
     "\"required\":[\"url\"]}"},
    /* a union whose declared keys depend on the branch that matched:
     * validation allocates its bitmaps */
    {"fs", "op",
     "{\"oneOf\":[{\"properties\":{\"action\":{\"const\":\"read\"},\"path\":{}},"
     "\"required\":[\"action\"]},{\"properties\":{\"action\":{\"const\":\"delete\"},"
     "\"path\":{},\"recursive\":{\"type\":\"boolean\"}},\"required\":[\"action\"]}]}"},
    {"", "noargs", NULL},
};
#define N_TOOLS (sizeof TOOLS / sizeof TOOLS[0])

/* Adds the tools to r; returns TG_OK or the first error. */
static int fill(tg_engine_t *e, tg_registry_t *r)
{
    for (size_t i = 0; i < N_TOOLS; i++) {
        tg_doc_t *d = NULL;
        size_t index;
        int rc;
        if (TOOLS[i][2] && (rc = tg_parse(e, TOOLS[i][2], strlen(TOOLS[i][2]), &d, NULL)) != TG_OK)
            return rc;
        rc = tg_registry_add(r, TOOLS[i][0], strlen(TOOLS[i][0]), TOOLS[i][1], strlen(TOOLS[i][1]),
                             "", 0, d ? tg_doc_root(d) : NULL, NULL, NULL, &index, NULL);
        tg_doc_free(d);
        if (rc != TG_OK)
            return rc;
    }
    return TG_OK;
}

/* ---- generated calls ---------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned pick(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* A call in one of the four formats, to a real or made-up tool, with
 * valid or broken arguments; at times a long unique array (uniqueItems
 * over more than 64 items allocates); at times several times over in an
 * envelope (a chat.completion, an Anthropic message, an MCP batch). */
static char *gen_call(void)
{
    static const char *const args[] = {
        "{\"path\":\"/a\",\"head\":3}",
        "{\"path\":\"a\"}",
        "{\"path\":\"/a\",\"mode\":1}",
        "{\"tags\":[\"a\",\"b\"],\"meta\":{\"x-k\":true}}",
        "{\"tags\":[\"a\",\"a\"]}",
        "{\"url\":\"https://example.com/\"}",
        "{\"url\":\"u\",\"headers\":{\"A\":\"b\"},\"retries\":null}",
        "{\"url\":\"u\",\"retries\":1.5}",
        "{}",
        "{\"path\":\"/\\u00e9\",\"encoding\":\"latin1\"}",
        "{\"action\":\"read\",\"path\":\"/a\"}",
        "{\"action\":\"read\",\"path\":\"/a\",\"recursive\":\"-rf\"}",
        "{\"action\":\"delete\",\"recursive\":true}",
    };
    static const char *const names[][2] = {
        {"fs", "read"}, {"fs", "tag"},  {"web", "read"}, {"web", "fetch"},
        {"", "noargs"}, {NULL, "read"}, {NULL, "fetch"}, {"fs", "nope"},
        {NULL, "tag"},  {"fs", "op"},   {NULL, "op"},
    };
    const char *a = args[pick(sizeof args / sizeof args[0])];
    unsigned nm = pick(sizeof names / sizeof names[0]);
    const char *server = names[nm][0], *name = names[nm][1];
    char big[2048];
    char *out = malloc(4096);
    unsigned format;
    if (pick(6) == 0) {
        /* 80 distinct (or, every other time, one repeated) tags */
        int dup = pick(2), k = 0;
        k += snprintf(big + k, sizeof big - (size_t)k, "{\"tags\":[");
        for (int i = 0; i < 80; i++)
            k += snprintf(big + k, sizeof big - (size_t)k, "%s\"t%c%c\"", i ? "," : "",
                          'a' + (dup && i == 79 ? 0 : i % 26), 'a' + (dup && i == 79 ? 0 : i / 26));
        snprintf(big + k, sizeof big - (size_t)k, "]}");
        a = big;
        server = "fs";
        name = "tag";
    }
    switch (format = pick(4)) {
    case 0:
        if (server)
            snprintf(out, 4096, "{\"server\":\"%s\",\"name\":\"%s\",\"arguments\":%s}", server,
                     name, a);
        else
            snprintf(out, 4096, "{\"name\":\"%s\",\"arguments\":%s}", name, a);
        break;
    case 1: {
        /* OpenAI: the arguments as a JSON string */
        char esc[3000];
        size_t j = 0;
        for (const char *p = a; *p && j < sizeof esc - 3; p++) {
            if (*p == '"' || *p == '\\')
                esc[j++] = '\\';
            esc[j++] = *p;
        }
        esc[j] = '\0';
        snprintf(out, 4096,
                 "{\"type\":\"function\",\"id\":\"c1\",\"function\":{\"name\":\"%s\","
                 "\"arguments\":\"%s\"}}",
                 name, esc);
        break;
    }
    case 2:
        snprintf(out, 4096, "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"%s\",\"input\":%s}",
                 name, a);
        break;
    default:
        snprintf(out, 4096,
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
                 "{\"name\":\"%s\",\"arguments\":%s}}",
                 name, a);
    }
    if (format > 0 && pick(3) == 0) {
        /* the same call 1 to 6 times in its format's envelope (past the
         * first growth of a line's array of calls) */
        static const char *const open[] = {
            "",
            "{\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":"
            "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[",
            "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
            "\"text\":\"t\"},",
            "["};
        static const char *const close[] = {"", "]}}]}", "]}", "]"};
        char *wrapped = malloc(4096 * 8);
        int n = 1 + (int)pick(6), k = snprintf(wrapped, 4096 * 8, "%s", open[format]);
        for (int i = 0; i < n; i++)
            k += snprintf(wrapped + k, 4096 * 8 - (size_t)k, "%s%s", i ? "," : "", out);
        snprintf(wrapped + k, 4096 * 8 - (size_t)k, "%s", close[format]);
        free(out);
        out = wrapped;
    }
    return out;
}

/* ---- one decision -------------------------------------------------------- */

enum {
    ACCEPT,
    REJECT,
    ERROR
};

typedef struct {
    int outcome; /* ACCEPT, REJECT (H1/H2/H3) or ERROR (the code in rc) */
    int rc;
    size_t n_findings, n_also;
} decision;

static decision decide(tg_engine_t *e, const tg_registry_t *r, const char *text, int also)
{
    static tg_rung_result_t res;
    decision d = {ACCEPT, TG_OK, 0, 0};
    tg_calls_t *s = NULL;

    d.rc = tg_calls_decode(e, text, strlen(text), TG_FORMAT_AUTO, &s, NULL);
    if (d.rc != TG_OK) {
        /* a call that does not decode is refused: an error unless malformed */
        d.outcome = d.rc == TG_E_NOMEM ? ERROR : REJECT;
        return d;
    }
    /* the line's decision: an error or a reject of any call decides it */
    for (size_t i = 0; i < tg_calls_count(s) && d.outcome != ERROR; i++) {
        const tg_call_t *c = tg_calls_at(s, i);
        size_t slen = 0, nlen = 0;
        const char *server = tg_call_server(c, &slen), *name = tg_call_name(c, &nlen);
        d.rc =
            tg_rung_check(e, r, server, slen, name, nlen, tg_call_arguments(c), also, &res, NULL);
        if (d.rc != TG_OK) {
            d.outcome = ERROR;
            break;
        }
        if (res.resolution != TG_RESOLVED || res.n_findings > 0)
            d.outcome = REJECT;
        d.n_findings += res.n_findings;
        d.n_also += res.n_also;
    }
    tg_calls_free(s);
    return d;
}

/* A fresh engine and registry on allocator a (faults off while building). */
static tg_engine_t *setup(acct *a, tg_registry_t **r)
{
    tg_engine_t *e;
    a->fail_at = 0;
    a->fired = 0;
    e = tg_engine_new(NULL, acct_alloc, a, NULL);
    *r = tg_registry_new(e, NULL);
    if (fill(e, *r) != TG_OK)
        printf("# registry set-up failed\n");
    return e;
}

/* ---- the check pipeline (tg_check) ---------------------------------------- */

/* rung -> gate -> verifier over the registry above: one contract a tool,
 * in turn low risk with effects, needing a scope the context does not
 * grant, with nothing to verify, high risk, and with no risk declared. */
static char POLICY[4096];

static void write_policy(void)
{
    static const char *const contracts[] = {
        "{\"risk\":\"low\",\"effects\":[]}",
        "{\"risk\":\"low\",\"scopes\":[\"fs:tag\"],\"effects\":[]}",
        "{\"risk\":\"low\"}",
        "{\"risk\":\"high\",\"effects\":[]}",
        "{\"effects\":[]}",
    };
    size_t n = (size_t)snprintf(
        POLICY, sizeof POLICY, "%s",
        "{\"version\":\"t@1\",\"registry_hash\":\"00\",\"risk_levels\":[\"low\",\"high\"],"
        "\"stages\":[{\"stage\":\"rung\"},{\"stage\":\"gate\"},{\"stage\":\"verifier\"}],"
        "\"require_contract\":true,\"tools\":[");
    for (size_t i = 0; i < N_TOOLS; i++)
        n +=
            (size_t)snprintf(POLICY + n, sizeof POLICY - n, "%s%s", i ? "," : "", contracts[i % 5]);
    snprintf(POLICY + n, sizeof POLICY - n, "]}");
}

static const char CONTEXT[] = "{\"scopes\":[\"fs:read\"],\"max_risk\":\"low\",\"epoch\":\"e1\"}";

typedef struct {
    tg_engine_t *e;
    tg_registry_t *r;
    tg_policy_t *p;
    tg_context_t *c;
    tg_decider_t *d;
} checker;

/* The policy, context and decider over k's engine and registry. */
static int compile(checker *k)
{
    k->p = NULL;
    k->c = NULL;
    k->d = NULL;
    return tg_policy_new(k->e, k->r, POLICY, strlen(POLICY), &k->p, NULL) == TG_OK &&
           tg_context_new(k->p, CONTEXT, strlen(CONTEXT), &k->c, NULL) == TG_OK &&
           (k->d = tg_decider_new(k->e, NULL)) != NULL;
}

static int check_setup(acct *a, checker *k)
{
    k->e = setup(a, &k->r);
    return compile(k);
}

static void check_teardown(checker *k)
{
    tg_decider_free(k->d);
    tg_context_free(k->c);
    tg_policy_free(k->p);
    tg_registry_free(k->r);
    tg_engine_free(k->e);
}

/* The verdict of tg_check on text, or -1 for an error (rc in *rc). */
static int check_once(checker *k, const char *text, int *rc)
{
    tg_outcome_t o;
    *rc = tg_check(k->d, k->p, k->c, text, strlen(text), TG_FORMAT_AUTO, 0, 1, &o, NULL);
    return *rc == TG_OK && o.status == TG_DECIDED ? o.verdict : -1;
}

static void test_check_faults(void)
{
    long faults = 0, bad = 0, accepts = 0, leaks = 0, setups = 0, setup_bad = 0;
    for (int i = 0; i < 120; i++) {
        char *text = gen_call();
        acct a = {.sticky = 1};
        checker k;
        int rc, clean;
        if (!check_setup(&a, &k)) {
            printf("# check set-up failed\n");
            bad++;
        }
        clean = check_once(&k, text, &rc);
        check_teardown(&k);
        for (long f = 1;; f++) {
            int v;
            check_setup(&a, &k);
            a.fail_at = a.calls + f;
            v = check_once(&k, text, &rc);
            check_teardown(&k);
            leaks += a.live != 0;
            if (!a.fired)
                break;
            faults++;
            if (v == -1 ? rc != TG_E_NOMEM : v != clean)
                bad++;
            accepts += v == TG_ACCEPT && clean != TG_ACCEPT;
        }
        free(text);
    }
    /* compiling a policy and a context: every allocation failing in turn */
    for (long f = 1;; f++) {
        acct a = {.sticky = 1};
        checker k;
        int ok;
        k.e = setup(&a, &k.r);
        a.fail_at = a.calls + f;
        ok = compile(&k);
        check_teardown(&k);
        if (a.live != 0)
            setup_bad++;
        if (!a.fired) {
            setup_bad += !ok;
            break;
        }
        setup_bad += ok; /* a compile that lost an allocation must say so */
        setups++;
    }
    printf("# tg_check: %ld faults fired; policy and context compile: %ld\n", faults, setups);
    tap_ok(faults > 200 && bad == 0,
           "a fault in tg_check gives NOMEM or the verdict the call gets without it");
    tap_ok(accepts == 0 && leaks == 0, "no fault in tg_check is an accept, none leaks");
    tap_ok(setups > 5 && setup_bad == 0,
           "compiling a policy or a context that runs out of memory leaks nothing");
}

/* What tg_mcp_check (a gateway's message: read, and its tools/call
 * decided in the same call) gives for text: the verdict of its checked
 * call, or NOT_CHECKED, or -1 for an error (rc in *rc), or NOT_JSON with
 * the parse error's code in *rc. */
enum {
    NOT_CHECKED = 10,
    NOT_JSON
};
static int mcp_once(checker *k, const char *text, int *rc)
{
    tg_mcp_message_t m;
    tg_outcome_t o;
    *rc = tg_mcp_check(k->d, k->p, k->c, text, strlen(text), "fs", 2, TG_FORMAT_AUTO, 0, 1, &m, &o,
                       NULL);
    if (*rc != TG_OK)
        return -1;
    if (m.kind == TG_MCP_NOT_JSON) {
        *rc = m.error.code;
        return NOT_JSON;
    }
    if (!m.checked)
        return NOT_CHECKED;
    return o.status == TG_DECIDED ? o.verdict : -1;
}

/* tg_mcp_check, each allocation failing in turn, on generated messages
 * (tools/calls, batches, other formats): NOMEM (as an error, or as the
 * parse's: the gateway then answers a parse error), or what the message
 * gets without the fault; never an accept it does not get. */
static void test_mcp_check_faults(void)
{
    long faults = 0, bad = 0, accepts = 0, leaks = 0, checked = 0;
    for (int i = 0; i < 120; i++) {
        char *text = gen_call();
        acct a = {.sticky = 1};
        checker k;
        int rc, clean;
        check_setup(&a, &k);
        clean = mcp_once(&k, text, &rc);
        check_teardown(&k);
        checked += clean != NOT_CHECKED;
        for (long f = 1;; f++) {
            int v;
            check_setup(&a, &k);
            a.fail_at = a.calls + f;
            v = mcp_once(&k, text, &rc);
            check_teardown(&k);
            leaks += a.live != 0;
            if (!a.fired)
                break;
            faults++;
            if ((v == -1 || v == NOT_JSON) ? rc != TG_E_NOMEM : v != clean)
                bad++;
            accepts += v == TG_ACCEPT && clean != TG_ACCEPT;
        }
        free(text);
    }
    printf("# tg_mcp_check: %ld faults fired; %ld of 120 messages checked\n", faults, checked);
    tap_ok(faults > 200 && checked > 10 && bad == 0,
           "a fault in tg_mcp_check gives NOMEM or what the message gets without it");
    tap_ok(accepts == 0 && leaks == 0, "no fault in tg_mcp_check is an accept, none leaks");
}

/* tg_check_lines over a chunk of generated calls, each allocation failing
 * in turn: the lines decided before the failure are as without it, and
 * the call reports NOMEM (the host refuses the line it stopped at). */
static void test_check_lines_faults(void)
{
    char chunk[1 << 16];
    size_t len = 0;
    long faults = 0, bad = 0;
    tg_buf_t clean_out;
    checker k;
    acct a = {.sticky = 1};
    size_t line = 0, used = 0, v[3] = {0, 0, 0};
    tg_outcome_t o;
    for (int i = 0; i < 40; i++) {
        char *text = gen_call();
        len += (size_t)snprintf(chunk + len, sizeof chunk - len, "%s\n", text);
        free(text);
    }
    check_setup(&a, &k);
    tg_buf_init(&clean_out, k.e);
    if (tg_check_lines(k.d, k.p, k.c, chunk, len, TG_FORMAT_AUTO, 0, &line, &used, &clean_out, v,
                       &o, NULL) != TG_OK)
        bad++;
    for (long f = 1;; f++) {
        checker j;
        tg_buf_t out;
        acct b = {.sticky = 1};
        int rc;
        check_setup(&b, &j);
        tg_buf_init(&out, j.e);
        line = used = 0;
        v[0] = v[1] = v[2] = 0;
        b.fail_at = b.calls + f;
        rc = tg_check_lines(j.d, j.p, j.c, chunk, len, TG_FORMAT_AUTO, 0, &line, &used, &out, v, &o,
                            NULL);
        if (!b.fired) {
            tg_buf_free(&out);
            check_teardown(&j);
            break;
        }
        faults++;
        /* what was written is a prefix of the clean output */
        if ((rc != TG_OK && rc != TG_E_NOMEM) || out.len > clean_out.len ||
            (out.len && memcmp(out.data, clean_out.data, out.len) != 0))
            bad++;
        tg_buf_free(&out);
        check_teardown(&j);
        if (b.live != 0)
            bad++;
    }
    tg_buf_free(&clean_out);
    check_teardown(&k);
    printf("# tg_check_lines: %ld faults fired\n", faults);
    tap_ok(faults > 20 && bad == 0,
           "a fault in tg_check_lines stops it with NOMEM after decisions as without it");
}

/* The host's loop over a stream read by tg_check_reader, as the bindings
 * run it: a line the core fails on gets the host's refusal ("REFUSED N"),
 * and the stream goes on.  in and out are file descriptors; returns the
 * last rc that stopped the stream (TG_OK at its end). */
static int run_reader(checker *k, int in, int out, size_t want, tg_workers_t *w)
{
    tg_reader_t *r = tg_reader_new(k->e, in, NULL);
    size_t line = 0, v[3];
    tg_buf_t batch;
    tg_outcome_t o;
    int rc = TG_OK, end = 0;
    if (!r)
        return TG_E_NOMEM;
    tg_buf_init(&batch, k->e);
    while (!end) {
        tg_buf_reset(&batch);
        rc = tg_check_reader(w, k->d, k->p, k->c, r, want, out, TG_FORMAT_AUTO, 0, &line, &batch, v,
                             &o, &end, NULL);
        if (end == -1)
            break;
        if (rc != TG_OK) {
            char refused[64];
            int n = snprintf(refused, sizeof refused, "REFUSED %zu\n", line);
            if (tg_write_all(out, refused, (size_t)n, NULL) != TG_OK)
                break;
        }
        rc = TG_OK;
    }
    tg_buf_free(&batch);
    tg_reader_free(r);
    return end == -1 ? TG_E_NOMEM : rc;
}

static int holds(const char *s, size_t n, const char *part)
{
    size_t k = strlen(part);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s + i, part, k))
            return 1;
    return 0;
}

/* The line number a line of output is about ("line":N, or REFUSED N). */
static size_t line_of(const char *s, size_t n)
{
    const char *key = !strncmp(s, "REFUSED ", 8) ? "REFUSED " : "\"line\":";
    size_t k = strlen(key);
    for (size_t i = 0; i + k < n; i++)
        if (!memcmp(s + i, key, k))
            return (size_t)strtoul(s + i + k, NULL, 10);
    return 0;
}

static char *slurp(int fd, size_t *len)
{
    off_t n = lseek(fd, 0, SEEK_END);
    char *t = malloc((size_t)n + 1);
    *len = pread(fd, t, (size_t)n, 0) == n ? (size_t)n : 0;
    return t;
}

/* Each allocation of a stream read from a file fails in turn, one at a
 * time: every line still gets its line of output, in order, either the
 * decision it gets without the fault or the host's refusal -- never an
 * accept it would not get -- or, when the reader itself cannot grow, the
 * stream stops after decisions as without the fault; every byte is given
 * back.  On one thread and on two. */
static void test_check_reader_faults(void)
{
    char in_path[] = "/tmp/tg_fc_in_XXXXXX", out_path[] = "/tmp/tg_fc_out_XXXXXX";
    int in = mkstemp(in_path), out = mkstemp(out_path);
    long faults = 0, bad = 0, stopped = 0, refused = 0;
    size_t lines = 300, clean_len;
    unsigned char clean_seen[400] = {0};
    char *clean;
    for (size_t i = 0; i < lines; i++) {
        char *text = gen_call();
        if (write(in, text, strlen(text)) < 0 || write(in, "\n", 1) != 1)
            bad++;
        free(text);
    }
    {
        checker k;
        acct a = {0};
        check_setup(&a, &k);
        if (lseek(in, 0, SEEK_SET) != 0 || run_reader(&k, in, out, 4096, NULL) != TG_OK)
            bad++;
        check_teardown(&k);
        clean = slurp(out, &clean_len);
        for (size_t at = 0; at < clean_len;) {
            const char *nl = memchr(clean + at, '\n', clean_len - at);
            size_t n = nl ? (size_t)(nl - (clean + at)) + 1 : clean_len - at;
            size_t number = line_of(clean + at, n);
            if (number < sizeof clean_seen)
                clean_seen[number] = 1;
            at += n;
        }
    }
    for (int threads = 1; threads <= 2; threads++) {
        for (long f = 1;; f++) {
            checker j;
            acct b = {.once = 1};
            tg_workers_t *w = NULL;
            size_t got_len, at = 0, cat = 0;
            unsigned char seen[400];
            char *got;
            int rc;
            check_setup(&b, &j);
            if (threads > 1 && !(w = tg_workers_new(j.e, 2, NULL)))
                bad++;
            if (lseek(in, 0, SEEK_SET) != 0 || ftruncate(out, 0) != 0 || lseek(out, 0, SEEK_SET))
                bad++;
            b.fail_at = b.calls + f;
            rc = run_reader(&j, in, out, 4096, w);
            tg_workers_free(w);
            check_teardown(&j);
            if (b.live != 0) {
                bad++;
                printf("# fault %ld, %d threads: %ld bytes not given back\n", f, threads, b.live);
            }
            if (!b.fired)
                break;
            faults++;
            got = slurp(out, &got_len);
            /* in order against the clean output: each decision one the
             * clean run made (the clean ones of a refused line skipped),
             * each input line decided or refused */
            memset(seen, 0, sizeof seen);
            while (at < got_len) {
                const char *nl = memchr(got + at, '\n', got_len - at);
                size_t n = nl ? (size_t)(nl - (got + at)) + 1 : got_len - at;
                size_t number = line_of(got + at, n);
                if (number < sizeof seen)
                    seen[number] = 1;
                if (!strncmp(got + at, "REFUSED ", 8) ||
                    (holds(got + at, n, "\"code\":\"NOMEM\"") &&
                     holds(got + at, n, "\"verdict\":\"reject\""))) {
                    refused++; /* by the host, or by the core itself */
                } else {
                    int found = 0;
                    while (!found && cat < clean_len) {
                        const char *cnl = memchr(clean + cat, '\n', clean_len - cat);
                        size_t cn = cnl ? (size_t)(cnl - (clean + cat)) + 1 : clean_len - cat;
                        found = cn == n && !memcmp(clean + cat, got + at, n);
                        cat += cn;
                    }
                    if (!found) {
                        bad++;
                        printf("# fault %ld, %d threads: not a clean decision: %.*s", f, threads,
                               (int)n, got + at);
                    }
                }
                at += n;
            }
            for (size_t l = 1; rc == TG_OK && l <= lines; l++)
                if (clean_seen[l] && !seen[l]) {
                    bad++; /* a stream that went on to its end lost no line */
                    printf("# fault %ld, %d threads: line %zu lost\n", f, threads, l);
                }
            if (rc != TG_OK)
                stopped++;
            free(got);
        }
    }
    free(clean);
    close(in);
    close(out);
    unlink(in_path);
    unlink(out_path);
    printf("# tg_check_reader: %ld faults fired, %ld lines refused, %ld streams stopped\n", faults,
           refused, stopped);
    tap_ok(faults > 20 && refused > 0 && bad == 0,
           "a fault in a stream read by tg_check_reader: each line its clean decision or refused, "
           "never lost");
}

/* An allocator that refuses, once, the first allocation of at least
 * `big` bytes made on the thread that armed it: on two threads, the one
 * that joins the pieces' decisions. */
typedef struct {
    acct a;
    size_t big;
    pthread_t owner;
    int armed;
} big_fault;

static void *big_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    big_fault *b = ud;
    if (b->armed && nsize >= b->big && pthread_equal(pthread_self(), b->owner)) {
        b->armed = 0;
        b->a.fired = 1;
        return NULL;
    }
    return acct_alloc(&b->a, ptr, osize, nsize);
}

/* Lines of the same length: the first half accepted (short decisions),
 * the second half refused with many findings (long ones), so the
 * decisions of the second piece need the output to grow far past what the
 * first piece and the calls themselves ever ask for. */
static char *two_halves(size_t lines)
{
    char *text = malloc(lines * 256 + 1), *w = text;
    for (size_t i = 0; i < lines; i++) {
        int n;
        if (i < lines / 2)
            n = snprintf(w, 256,
                         "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":"
                         "{\"path\":\"/%zu\"}}",
                         i);
        else
            n = snprintf(w, 256,
                         "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":"
                         "\"/%zu\",\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,"
                         "\"h\":8,\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":13}}",
                         i);
        memset(w + n, ' ', 255 - (size_t)n);
        w[255] = '\n';
        w += 256;
    }
    *w = '\0';
    return text;
}

/* On two threads the chunk is cut in two pieces; when the decisions of the
 * second cannot be added to the output (out of memory), the chunk is
 * decided again on one thread: from the output as it was, not after the
 * first piece's decisions (which then came twice), and with the verdict
 * counts as they were. */
static void test_parallel_join_fault(void)
{
    enum {
        LINES = 64
    };
    char *text = two_halves(LINES);
    size_t len = strlen(text), half = len / 2;
    tg_buf_t clean, first, got;
    size_t v_clean[3] = {0, 0, 0}, v_first[3] = {0, 0, 0}, v_got[3] = {0, 0, 0};
    size_t line = 0, used = 0;
    big_fault b = {.a = {0}};
    checker k;
    tg_workers_t *w;
    tg_outcome_t o;
    int rc, ok;

    /* what one thread writes for the whole chunk and for its first half */
    k.e = tg_engine_new(NULL, big_alloc, &b, NULL);
    k.r = tg_registry_new(k.e, NULL);
    ok = fill(k.e, k.r) == TG_OK && compile(&k);
    tg_buf_init(&clean, k.e);
    tg_buf_init(&first, k.e);
    tg_buf_init(&got, k.e);
    ok = ok &&
         tg_check_lines(k.d, k.p, k.c, text, len, TG_FORMAT_AUTO, 0, &line, &used, &clean, v_clean,
                        &o, NULL) == TG_OK &&
         used == len;
    line = used = 0;
    ok = ok &&
         tg_check_lines(k.d, k.p, k.c, text, half, TG_FORMAT_AUTO, 0, &line, &used, &first, v_first,
                        &o, NULL) == TG_OK &&
         used == half;
    ok = ok && v_clean[0] == LINES / 2 && v_clean[1] == LINES / 2 && clean.len > 4 * first.len;

    /* the output holds the first piece's decisions without growing; the
     * second piece's make it grow to the whole chunk's: that one fails */
    w = tg_workers_new(k.e, 2, NULL);
    ok = ok && w && tg_buf_append(&got, first.data, first.len, NULL) == TG_OK;
    tg_buf_reset(&got);
    b.big = clean.len;
    b.owner = pthread_self();
    b.armed = 1;
    line = used = 0;
    rc = ok ? tg_check_lines_parallel(w, k.d, k.p, k.c, text, len, TG_FORMAT_AUTO, 0, &line, &used,
                                      &got, v_got, &o, NULL)
            : TG_E_ARG;
    tap_ok(ok && b.a.fired, "the join of the second piece's decisions met the fault");
    tap_ok(rc == TG_OK && used == len && line == LINES && got.len == clean.len &&
               memcmp(got.data, clean.data, clean.len) == 0,
           "a chunk whose pieces cannot be joined is decided again from the output it was given: "
           "every decision once, as on one thread");
    if (got.len != clean.len)
        printf("#   %zu bytes written, %zu on one thread (the first piece's: %zu)\n", got.len,
               clean.len, first.len);
    tap_ok(v_got[0] == v_clean[0] && v_got[1] == v_clean[1] && v_got[2] == v_clean[2],
           "and its verdicts are counted once");
    tg_workers_free(w);
    tg_buf_free(&clean);
    tg_buf_free(&first);
    tg_buf_free(&got);
    check_teardown(&k);
    tap_ok(b.a.live == 0, "every byte is given back");
    free(text);
}

/* ---- sampled plans ----------------------------------------------------- */

/* A plan on the registry above: single-tool or of two calls, n samples,
 * arguments agreeing in `agree`, results in `ragree`, some samples failing
 * the rung. */
static char *gen_plan(void)
{
    static const char *const single_args[] = {"{\"path\":\"/a\"}", "{\"path\":\"/a\",\"head\":1}",
                                              "{\"path\":\"a\"}", "{\"path\":7}"};
    size_t cap = 16384, at;
    char *s = malloc(cap);
    int n = 3 + (int)pick(8);
    int agree = pick(2) ? n : 1 + (int)pick((unsigned)n);
    int ragree = pick(2) ? n : 1 + (int)pick((unsigned)n);
    int multi = pick(3) == 0, fails = pick(4) == 0;
    at = (size_t)snprintf(s, cap, "{\"plan_id\":\"p%u\",", pick(100));
    if (!multi)
        at +=
            (size_t)snprintf(s + at, cap - at, "\"tool\":{\"server\":\"fs\",\"name\":\"read\"%s},",
                             pick(2) ? ",\"deterministic\":true,\"verified\":true" : "");
    at += (size_t)snprintf(s + at, cap - at, "\"samples\":[");
    for (int i = 0; i < n; i++) {
        const char *a = i < agree ? single_args[0] : single_args[1 + pick(fails ? 3 : 1)];
        if (multi)
            at +=
                (size_t)snprintf(s + at, cap - at,
                                 "%s{\"epoch\":\"e\",\"calls\":[{\"server\":\"fs\",\"name\":"
                                 "\"read\",\"arguments\":%s},{\"server\":\"web\",\"name\":"
                                 "\"fetch\",\"arguments\":{\"url\":\"u%d\"}}],\"results\":[%d,%d]}",
                                 i ? "," : "", a, i < agree ? 0 : i, i < ragree ? 0 : i, i % 2);
        else
            at += (size_t)snprintf(s + at, cap - at,
                                   "%s{\"arguments\":%s,\"result\":{\"r\":%d},\"epoch\":\"e\"}",
                                   i ? "," : "", a, i < ragree ? 0 : i);
    }
    snprintf(s + at, cap - at, "]}");
    return s;
}

static const char PLAN_POLICY[] =
    "{\"version\":\"fc@1\",\"registry_hash\":\"h\",\"stages\":[{\"stage\":\"rung\"},"
    "{\"stage\":\"consistency\"},{\"stage\":\"gate\"}],\"risk_levels\":[\"low\"],"
    "\"consistency\":{\"min_samples\":3},\"tools\":[{\"deterministic\":true,\"risk\":\"low\"},"
    "{\"risk\":\"low\"},{\"risk\":\"low\"},{\"deterministic\":true,\"risk\":\"low\"},"
    "{\"risk\":\"low\"},{}]}"; /* one contract a tool of TOOLS, in its order */

typedef struct {
    int rc;
    int verdict;
    char json[8192];
} plan_decision;

/* The plan's decision on a fresh engine (allocator a, the k-th allocation
 * from the decision's start failing when k > 0); host: the store is the
 * host's and its questions are answered "no record". */
static plan_decision classify_once(acct *a, const char *text, long k, int host, int lines)
{
    plan_decision pd = {TG_OK, -1, {0}};
    tg_registry_t *r;
    tg_engine_t *e = setup(a, &r);
    tg_policy_t *p = NULL;
    tg_store_t *store = tg_store_new(e, NULL);
    tg_decider_t *d = tg_decider_new(e, NULL);
    tg_outcome_t o;
    tg_buf_t out;
    tg_policy_new(e, r, PLAN_POLICY, strlen(PLAN_POLICY), &p, NULL);
    tg_buf_init(&out, e);
    if (k)
        a->fail_at = a->calls + k;
    if (lines) {
        size_t line = 0, used = 0, v[3] = {0, 0, 0};
        char *t = malloc(strlen(text) + 2);
        sprintf(t, "%s\n", text);
        pd.rc = tg_classify_lines(d, p, NULL, host ? NULL : store, t, strlen(t), 0, 0, &line, &used,
                                  &out, v, &o, NULL);
        free(t);
        if (pd.rc == TG_OK && o.status == TG_NO_MORE_CALLS && out.len && out.len < sizeof pd.json) {
            o.status = TG_DECIDED;
            o.verdict = v[0] ? TG_ACCEPT : v[1] ? TG_REJECT : TG_DEFER;
            o.json = out.data;
            o.json_len = out.len - 1;
        }
    } else {
        pd.rc = tg_classify(d, p, NULL, host ? NULL : store, text, strlen(text), 0, 1, 0, &o, NULL);
    }
    while (pd.rc == TG_OK && o.status == TG_NEEDS_STORE)
        pd.rc = tg_classify_record(d, 0, 0, NULL, 0, &o, NULL);
    if (pd.rc == TG_OK && o.status == TG_DECIDED && o.json_len < sizeof pd.json) {
        pd.verdict = o.verdict;
        memcpy(pd.json, o.json, o.json_len);
    } else if (pd.rc == TG_OK) {
        pd.rc = -1; /* nothing decided: no question is left unanswered here */
    }
    a->fail_at = 0;
    tg_buf_free(&out);
    tg_decider_free(d);
    tg_store_free(store);
    tg_policy_free(p);
    tg_registry_free(r);
    tg_engine_free(e);
    return pd;
}

static void plans_property(void)
{
    enum {
        PLANS = 60
    };
    long faults = 0, errors = 0, same = 0, refusals = 0, accepts_broken = 0, leaks = 0;
    int undecided = 0, accepted = 0;
    for (int i = 0; i < PLANS; i++) {
        char *text = gen_plan();
        for (int mode = 0; mode < 6; mode++) {
            /* the in-process store, the host's, the lines; a refused
             * allocation staying refused, or only that one */
            int host = mode % 3 == 1, lines = mode % 3 == 2;
            acct a = {.sticky = mode < 3};
            plan_decision clean = classify_once(&a, text, 0, host, lines);
            leaks += a.live != 0;
            undecided += clean.rc != TG_OK;
            accepted += clean.verdict == TG_ACCEPT;
            for (long k = 1;; k++) {
                plan_decision pd = classify_once(&a, text, k, host, lines);
                leaks += a.live != 0;
                if (!a.fired)
                    break;
                faults++;
                if (pd.rc == TG_E_NOMEM)
                    errors++;
                else if (pd.rc == TG_OK && strcmp(pd.json, clean.json) == 0)
                    same++;
                else if (pd.rc == TG_OK && pd.verdict != TG_ACCEPT)
                    refusals++;
                else {
                    accepts_broken++;
                    printf("# plan %d mode %d fault at +%ld: rc %d verdict %d\n#   %s\n", i, mode,
                           k, pd.rc, pd.verdict, pd.json);
                }
            }
        }
        free(text);
    }
    printf("# plans: %ld faults fired: %ld refused with NOMEM, %ld rejected or deferred, %ld "
           "decided as without the fault\n",
           faults, errors, refusals, same);
    printf("# %d of %d classifications accept without a fault\n", accepted, PLANS * 6);
    tap_ok(undecided == 0 && accepted > PLANS / 2,
           "every generated plan is decided without a fault, many accepted");
    tap_ok(faults > 1000, "faults were injected at every allocation of many plans");
    tap_ok(accepts_broken == 0, "no fault in tg_classify or tg_classify_lines gives an accept");
    tap_ok(leaks == 0, "every byte of a classification is given back, fault or not");
}

/* The batch of plans (one a line) through tg_classify_lines, or on
 * `threads` threads through tg_classify_lines_parallel, on a fresh engine
 * (allocator a, its k-th allocation from the run's start refused when
 * k > 0) and a fresh store; the decisions copied out. */
static char *classify_batch(acct *a, const char *text, size_t len, long k, size_t threads, int *rc,
                            size_t *line, size_t *used, size_t *out_len)
{
    tg_registry_t *r;
    tg_engine_t *e = setup(a, &r);
    tg_policy_t *p = NULL;
    tg_store_t *store = tg_store_new(e, NULL);
    tg_decider_t *d = tg_decider_new(e, NULL);
    tg_workers_t *w = threads > 1 ? tg_workers_new(e, threads, NULL) : NULL;
    size_t v[3] = {0, 0, 0};
    tg_outcome_t o;
    tg_buf_t out;
    char *copy;
    tg_policy_new(e, r, PLAN_POLICY, strlen(PLAN_POLICY), &p, NULL);
    tg_buf_init(&out, e);
    *line = *used = 0;
    if (k)
        a->fail_at = a->calls + k;
    if (!p || !store || !d || (threads > 1 && !w))
        *rc = -1;
    else if (w)
        *rc = tg_classify_lines_parallel(w, d, p, NULL, store, text, len, 0, 0, line, used, &out, v,
                                         &o, NULL);
    else
        *rc = tg_classify_lines(d, p, NULL, store, text, len, 0, 0, line, used, &out, v, &o, NULL);
    if (*rc == TG_OK && o.status != TG_NO_MORE_CALLS)
        *rc = -1; /* nothing here asks the host */
    a->fail_at = 0;
    copy = malloc(out.len + 1);
    if (out.len)
        memcpy(copy, out.data, out.len);
    *out_len = out.len;
    tg_buf_free(&out);
    tg_workers_free(w);
    tg_decider_free(d);
    tg_store_free(store);
    tg_policy_free(p);
    tg_registry_free(r);
    tg_engine_free(e);
    return copy;
}

/* A run of plans whose first allocation is refused, before any plan is
 * read (the decider's plan state is made on first use): the failure is
 * the first plan's, so the host refuses that line and goes on.  (It was
 * no line's: *used stayed 0 and *line 0, and a host that refuses the line
 * the run stopped at and calls again from *used asked the same again,
 * forever, while memory stayed short.) */
static void test_classify_lines_first_fault(void)
{
    char *plan = gen_plan(), *text = malloc(strlen(plan) * 2 + 4);
    size_t first;
    int ok = 1;
    sprintf(text, "\n%s\n%s\n", plan, plan);
    first = 1 + strlen(plan) + 1;
    for (size_t threads = 1; threads <= 2; threads++) {
        acct a = {.sticky = 1};
        size_t line, used, out_len;
        int rc;
        char *out = classify_batch(&a, text, strlen(text), 1, threads, &rc, &line, &used, &out_len);
        if (!(a.fired && rc == TG_E_NOMEM && line == 2 && used == first && out_len == 0)) {
            ok = 0;
            printf("#   %zu thread(s): rc %d, line %zu, used %zu (the first plan ends at %zu)\n",
                   threads, rc, line, used, first);
        }
        free(out);
    }
    tap_ok(ok, "plans whose first allocation fails: the first plan's line is the one that failed, "
               "read past");
    free(plan);
    free(text);
}

/* The bytes of the decisions of out about lines before `line`. */
static size_t decisions_before(const char *out, size_t len, size_t line)
{
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(out + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (out + at)) + 1 : len - at;
        if (line_of(out + at, n) >= line)
            break;
        at += n;
    }
    return at;
}

/* Plans on two threads, each allocation of the run refused in turn (that
 * one only, and from there on).  The threads' merge writes the pieces'
 * quarantines in input order and classifies again from a plan that read
 * a tool an earlier piece quarantined: a fault anywhere in it must leave
 * either every line decided as one thread decides it, or a stop at a line
 * (NOMEM, for the host to refuse it) with the decisions before it those of
 * one thread, byte for byte; and every byte given back. */
static void parallel_plans_property(void)
{
    enum {
        PLANS = 48
    };
    size_t cap = PLANS * 16384, len = 0, clean_len, clean_used, par_len, line, used;
    char *text = malloc(cap), *clean, *par;
    long faults = 0, whole = 0, stopped = 0, bad = 0, leaks = 0;
    int rc, clean_rc;
    acct a = {0};
    for (int i = 0; i < PLANS; i++) {
        char *plan = gen_plan();
        len += (size_t)snprintf(text + len, cap - len, "%s\n", plan);
        free(plan);
    }
    clean = classify_batch(&a, text, len, 0, 1, &clean_rc, &line, &clean_used, &clean_len);
    leaks += a.live != 0;
    par = classify_batch(&a, text, len, 0, 2, &rc, &line, &used, &par_len);
    leaks += a.live != 0;
    tap_ok(clean_rc == TG_OK && clean_used == len && rc == TG_OK && used == len &&
               par_len == clean_len && !memcmp(par, clean, clean_len) && len > 8192 &&
               holds(clean, clean_len, "RESULT_DISAGREE") &&
               holds(clean, clean_len, "\"verdict\":\"accept\""),
           "a batch of plans that accepts and quarantines decides alike on one and two threads");
    free(par);
    for (int mode = 0; mode < 2; mode++) {
        for (long k = 1;; k++) {
            acct b = {.once = mode == 0, .sticky = mode == 1};
            size_t newlines = 0;
            par = classify_batch(&b, text, len, k, 2, &rc, &line, &used, &par_len);
            leaks += b.live != 0;
            if (!b.fired) {
                free(par);
                break;
            }
            faults++;
            for (size_t j = 0; j < used && j < len; j++)
                newlines += text[j] == '\n';
            if (rc == TG_OK && used == len && par_len == clean_len &&
                !memcmp(par, clean, clean_len)) {
                whole++;
            } else if (rc == TG_E_NOMEM && used > 0 && used <= len && text[used - 1] == '\n' &&
                       newlines == line && par_len == decisions_before(clean, clean_len, line) &&
                       !memcmp(par, clean, par_len)) {
                stopped++;
            } else {
                bad++;
                printf("# %s fault at +%ld: rc %d, line %zu, %zu bytes of decisions (%zu clean)\n",
                       mode ? "sticky" : "one", k, rc, line, par_len, clean_len);
            }
            free(par);
        }
    }
    printf("# plans on two threads: %ld faults, %ld runs decided every line as one thread, %ld "
           "stopped at a line\n",
           faults, whole, stopped);
    tap_ok(faults > 100 && whole > 0 && stopped > 0 && bad == 0,
           "a fault anywhere in the threads' run of plans: every line as on one thread, or a stop "
           "at a line with the decisions before it those of one thread");
    tap_ok(leaks == 0, "every byte of the threads' run is given back, fault or not");
    free(clean);
    free(text);
}

int main(void)
{
    enum {
        CALLS = 200
    };
    long decisions = 0, faults = 0, errors = 0, same = 0, accepts_broken = 0, leaks = 0;
    long sites_max = 0;

    /* the property over generated calls and every allocation site */
    for (int i = 0; i < CALLS; i++) {
        char *text = gen_call();
        for (int also = 0; also < 2; also++) {
            acct a = {.sticky = 1}; /* a refused allocation stays refused */
            tg_registry_t *r;
            tg_engine_t *e = setup(&a, &r);
            decision clean = decide(e, r, text, also);
            tg_registry_free(r);
            tg_engine_free(e);
            if (a.live != 0)
                leaks++;
            for (long k = 1;; k++) {
                decision d;
                e = setup(&a, &r);
                a.fail_at = a.calls + k;
                d = decide(e, r, text, also);
                decisions++;
                tg_registry_free(r);
                tg_engine_free(e);
                if (a.live != 0)
                    leaks++;
                if (!a.fired)
                    break; /* every allocation of this decision has failed once */
                if (k > sites_max)
                    sites_max = k;
                faults++;
                if (d.outcome == ERROR && d.rc == TG_E_NOMEM)
                    errors++;
                else if (d.outcome == clean.outcome && d.n_findings == clean.n_findings)
                    same++;
                else {
                    accepts_broken += d.outcome == ACCEPT;
                    printf("# call %d also=%d fault at +%ld: outcome %d rc %s, without it %d\n", i,
                           also, k, d.outcome, tg_code_name(d.rc), clean.outcome);
                }
            }
        }
        free(text);
    }
    printf("# %ld decisions with a fault injected (%ld faults fired, up to %ld allocation sites"
           " a decision): %ld refused with NOMEM, %ld decided as without the fault\n",
           decisions, faults, sites_max, errors, same);
    tap_ok(faults > 200, "faults were injected at every allocation of many decisions");
    tap_ok(errors + same == faults, "a fault gives NOMEM or the decision the call gets without it");
    tap_ok(accepts_broken == 0, "no fault ever turns a call into an accept");
    tap_ok(leaks == 0, "every byte is given back, fault or not");

    /* building a registry: each allocation failing leaves it as it was */
    {
        long k, bad = 0, fired = 0;
        for (k = 1;; k++) {
            acct a = {.sticky = 1};
            tg_engine_t *e = tg_engine_new(NULL, acct_alloc, &a, NULL);
            tg_registry_t *r = tg_registry_new(e, NULL);
            size_t before;
            int rc;
            a.fail_at = a.calls + k;
            before = r ? tg_registry_count(r) : 0;
            rc = r ? fill(e, r) : TG_E_NOMEM;
            if (!a.fired) {
                tg_registry_free(r);
                tg_engine_free(e);
                bad += rc != TG_OK || a.live != 0;
                break;
            }
            fired++;
            if (rc != TG_E_NOMEM)
                bad++;
            if (r) {
                /* the tools added before the failure are all there, whole:
                 * what is in the registry still decides as it should */
                static tg_rung_result_t res;
                tg_doc_t *d = NULL;
                size_t n = tg_registry_count(r);
                a.fail_at = 0;
                if (n < before || n > N_TOOLS)
                    bad++;
                if (n > 0 && tg_parse(e, "{\"path\":1}", 10, &d, NULL) == TG_OK) {
                    if (tg_rung_check(e, r, "fs", 2, "read", 4, tg_doc_root(d), 0, &res, NULL) !=
                            TG_OK ||
                        res.n_findings == 0)
                        bad++;
                    tg_doc_free(d);
                }
            }
            tg_registry_free(r);
            tg_engine_free(e);
            if (a.live != 0)
                bad++;
        }
        printf("# registry build: %ld allocation sites failed in turn\n", fired);
        tap_ok(
            fired > 10 && bad == 0,
            "a registry build that runs out of memory fails with NOMEM, keeps what it had, leaks nothing");
    }

    /* the validation limits are faults too: stopping is never a pass */
    {
        tg_limits_t lim;
        tg_engine_t *e;
        tg_registry_t *r;
        acct a = {.sticky = 1};
        long accepted = 0, limited = 0;
        tg_limits_default(&lim);
        for (size_t steps = 1; steps <= 12; steps++) {
            lim.max_validation_steps = steps;
            lim.regex_match_limit = steps * 3;
            e = setup(&a, &r);
            tg_engine_set_limits(e, &lim, NULL);
            for (int i = 0; i < 30; i++) {
                char *text = gen_call();
                decision full, d = decide(e, r, text, 0);
                tg_limits_t def;
                tg_limits_default(&def);
                tg_engine_set_limits(e, &def, NULL);
                full = decide(e, r, text, 0);
                tg_engine_set_limits(e, &lim, NULL);
                if (d.outcome == ERROR) {
                    limited++;
                    if (d.rc != TG_E_VALIDATION_LIMIT && d.rc != TG_E_REGEX_LIMIT &&
                        d.rc != TG_E_REGEX_BUDGET)
                        accepted++;
                } else if (d.outcome == ACCEPT && full.outcome != ACCEPT) {
                    accepted++;
                }
                free(text);
            }
            tg_registry_free(r);
            tg_engine_free(e);
        }
        printf("# %ld checks stopped at a limit\n", limited);
        tap_ok(limited > 0 && accepted == 0,
               "a check stopped by VALIDATION_LIMIT or REGEX_LIMIT is an error, never an accept");
    }
    write_policy();
    test_check_faults();
    test_mcp_check_faults();
    test_check_lines_faults();
    test_check_reader_faults();
    test_parallel_join_fault();
    plans_property();
    test_classify_lines_first_fault();
    parallel_plans_property();
    return tap_done();
}
