/*
 * test_decide.c -- the decision path in C: compiled policies and contexts,
 * tg_check's decisions byte for byte, the host's stages and their answers,
 * the chunk entry points (check, canon, validate) and the worker threads.
 */
#include "tap.h"
#include "toolgate.h"

#include <stdio.h>
#include <stdlib.h>

static tg_engine_t *E;
static tg_registry_t *R;

/* fs/read (path: string, required), fs/write, web/read: three tools, one
 * bare name on two servers. */
static void build_registry(void)
{
    static const char *const tools[][3] = {
        {"fs", "read",
         "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}"},
        {"fs", "write", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}"},
        {"web", "read", "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"}}}"},
    };
    R = tg_registry_new(E, NULL);
    for (size_t i = 0; i < 3; i++) {
        tg_doc_t *d;
        size_t index;
        tg_parse(E, tools[i][2], strlen(tools[i][2]), &d, NULL);
        tg_registry_add(R, tools[i][0], 2 + (i == 2), tools[i][1], strlen(tools[i][1]), "", 0,
                        tg_doc_root(d), NULL, NULL, &index, NULL);
        tg_doc_free(d);
    }
}

static tg_policy_t *policy(const char *json)
{
    tg_policy_t *p = NULL;
    tg_error_t err;
    if (tg_policy_new(E, R, json, strlen(json), &p, &err) != TG_OK)
        printf("# policy: %s: %s\n", tg_code_name(err.code), err.message);
    return p;
}

static tg_context_t *context(const tg_policy_t *p, const char *json)
{
    tg_context_t *c = NULL;
    tg_context_new(p, json, strlen(json), &c, NULL);
    return c;
}

#define STAGES3 "[{\"stage\":\"rung\"},{\"stage\":\"gate\"},{\"stage\":\"verifier\"}]"
#define TOOLS3                                                                                     \
    "[{\"risk\":\"low\",\"scopes\":[\"fs:read\"],\"effects\":[\"read\"]},"                         \
    "{\"risk\":\"high\",\"scopes\":[\"fs:write\"]},{}]"

static const char BASE[] =
    "{\"version\":\"t@1\",\"registry_hash\":\"h\","
    "\"risk_levels\":[\"low\",\"medium\",\"high\"],\"stages\":" STAGES3 ",\"tools\":" TOOLS3 "}";

/* Checks text and compares the decision with want. */
static void decides(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *c, int flags,
                    const char *text, const char *want, const char *label)
{
    tg_outcome_t o;
    tg_error_t err;
    int rc = tg_check(d, p, c, text, strlen(text), TG_FORMAT_AUTO, flags, 0, &o, &err);
    if (rc != TG_OK || o.status != TG_DECIDED) {
        tap_ok(0, label);
        printf("#   rc %s status %d\n", tg_code_name(rc), o.status);
        return;
    }
    tap_is_mem(o.json, o.json_len, want, label);
}

static void test_policy_description(void)
{
    static const char *const bad[] = {
        "[]",
        "{\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":" STAGES3
        ",\"tools\":" TOOLS3 "}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[],\"stages\":" STAGES3
        ",\"tools\":" TOOLS3 "}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":[],\"tools\":" TOOLS3
        "}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":[{\"stage\":\"x\"}],"
        "\"tools\":" TOOLS3 "}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":" STAGES3
        ",\"tools\":[{}]}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":" STAGES3
        ",\"tools\":[{\"risk\":\"spicy\"},{},{}]}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":"
        "[{\"stage\":\"custom\"}],\"tools\":[{},{},{}]}",
        "{\"version\":\"v\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":" STAGES3
        ",\"on_error\":\"maybe\",\"tools\":[{},{},{}]}",
    };
    int refused = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tg_policy_t *p = (tg_policy_t *)1;
        tg_error_t err;
        if (tg_policy_new(E, R, bad[i], strlen(bad[i]), &p, &err) != TG_E_ARG || p != NULL) {
            printf("# accepted: %s\n", bad[i]);
            refused = 0;
        }
    }
    tap_ok(refused, "a description that does not say what the core needs is TG_E_ARG");
    {
        tg_policy_t *p = policy(BASE);
        tg_context_t *c = (tg_context_t *)1;
        tap_ok(p != NULL, "a whole description compiles");
        tap_ok(tg_context_new(p, "[1]", 3, &c, NULL) == TG_E_ARG && c == NULL,
               "a context that is not an object is TG_E_ARG");
        tg_policy_free(p);
    }
}

static void test_decisions(void)
{
    tg_policy_t *p = policy(BASE);
    tg_context_t *read =
        context(p, "{\"scopes\":[\"fs:read\"],\"max_risk\":\"low\",\"epoch\":\"e1\"}");
    tg_context_t *odd = context(p, "{\"scopes\":[\"fs:read\"],\"max_risk\":\"extreme\"}");
    tg_decider_t *d = tg_decider_new(E, NULL);
    const char *h = ",\"policy_version\":\"t@1\",\"registry_hash\":\"h\"";
    char want[2048];

    snprintf(
        want, sizeof want,
        "{\"args_digest\":\"%s\",\"format\":\"native\",\"index\":0%s,\"server\":\"fs\","
        "\"stage\":\"verifier\","
        "\"stages\":[\"rung\",\"gate\",\"verifier\"],\"tool\":\"read\",\"verdict\":\"accept\"}",
        "1f1d2a0c8a1d0f5a3d8f5c3b3f2e4e0d", h);
    {
        /* the digest is XXH3-128 of the exact canonical arguments */
        tg_outcome_t o;
        char hex[TG_HASH_HEX], *at;
        tg_hash128_t hh;
        const char *call = "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/a\"}}";
        tg_hash128("{\"path\":\"/a\"}", 13, &hh);
        tg_hash128_hex(&hh, hex);
        at = strstr(want, "1f1d2a0c8a1d0f5a3d8f5c3b3f2e4e0d");
        memcpy(at, hex, 32);
        tg_check(d, p, read, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_is_mem(o.json, o.json_len, want, "an accept: digest, stages, the last stage");
        tap_ok(o.verdict == TG_ACCEPT && strcmp(o.code, "") == 0 &&
                   strcmp(o.stage, "verifier") == 0,
               "the outcome says accept, no code, the verifier");
    }
    snprintf(
        want, sizeof want,
        "{\"code\":\"H1\",\"format\":\"native\",\"index\":0,\"message\":\"no tool \\\"nope\\\" on server \\\"fs\\\"\"%s,"
        "\"server\":\"fs\",\"stage\":\"rung\",\"stages\":[\"rung\"],\"tool\":\"nope\","
        "\"verdict\":\"reject\"}",
        h);
    decides(d, p, read, 0, "{\"server\":\"fs\",\"name\":\"nope\",\"arguments\":{}}", want,
            "H1 on a server");
    snprintf(
        want, sizeof want,
        "{\"candidates\":[{\"name\":\"read\",\"server\":\"fs\"},{\"name\":\"read\",\"server\":"
        "\"web\"}],\"code\":\"H1\",\"format\":\"native\",\"index\":0,\"message\":\"tool name \\\"read\\\" is exposed by 2 "
        "servers; the call must name one\"%s,\"stage\":\"rung\",\"stages\":[\"rung\"],"
        "\"tool\":\"read\",\"verdict\":\"reject\"}",
        h);
    decides(d, p, read, 0, "{\"name\":\"read\",\"arguments\":{}}", want,
            "H1 ambiguous: the candidates");
    {
        tg_outcome_t o;
        const char *call = "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"x\":1}}";
        tg_check(d, p, read, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(o.verdict == TG_REJECT && strcmp(o.code, "H2") == 0 &&
                   strstr(o.json, "\"findings\":[{\"code\":\"H2\"") &&
                   strstr(o.json, "(and 1 more finding)") && strstr(o.json, "\"path\":\"/path\""),
               "H2: findings, the first one's message with the count of the others");
    }
    snprintf(
        want, sizeof want,
        "\"code\":\"H4\",\"format\":\"native\",\"index\":0,\"message\":\"scope \\\"fs:write\\\" is required and not granted\"");
    {
        tg_outcome_t o;
        const char *call = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{}}";
        tg_check(d, p, read, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(strstr(o.json, want) != NULL, "the gate: a scope not granted");
        tg_check(d, p, odd, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(strstr(o.json,
                      "max_risk \\\"extreme\\\" is not one of the policy's risk levels (low, "
                      "medium, high)") != NULL,
               "the gate: a max_risk outside the order, naming the levels");
    }
    {
        tg_context_t *all =
            context(p, "{\"scopes\":[\"fs:read\",\"fs:write\"],\"max_risk\":\"medium\"}");
        tg_outcome_t o;
        const char *call = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{}}";
        tg_check(d, p, all, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(strstr(o.json, "risk \\\"high\\\" is above the allowed \\\"medium\\\"") != NULL,
               "the gate: a risk above max_risk");
        call = "{\"server\":\"web\",\"name\":\"read\",\"arguments\":{}}";
        tg_check(d, p, NULL, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(strstr(o.json, "no declared risk (counted as the highest) is above the allowed "
                              "\\\"low\\\" (no max_risk given, counted as the lowest)") != NULL,
               "the gate: no risk declared, no max_risk given");
        tap_ok(strstr(o.json,
                      "give the tool a risk (a \\\"risk\\\" in toolgate's registry format, or the "
                      "policy's contract(tool) mapping), or check the schemas alone with the "
                      "policy \\\"rung\\\"") != NULL,
               "the gate: a refusal for a missing risk names the ways out");
        call = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{}}";
        tg_check(d, p, all, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(strstr(o.json, "policy \\\"rung\\\"") == NULL,
               "the gate: a declared risk above max_risk names no ways out for a missing one");
        tg_context_free(all);
    }
    snprintf(want, sizeof want,
             "{\"code\":\"SYNTAX\",\"message\":\"unexpected character '}'\",\"offset\":9%s,"
             "\"stage\":\"decode\",\"verdict\":\"reject\"}",
             h);
    {
        tg_outcome_t o;
        tg_check(d, p, read, "{\"name\":1}}", 11, TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(o.verdict == TG_REJECT && strstr(o.json, "\"stage\":\"decode\"") &&
                   strstr(o.json, "\"offset\":") && !strstr(o.json, "\"stages\""),
               "a line that does not decode: stage decode, its offset, no stages");
    }
    {
        tg_outcome_t o;
        const char *call = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{},\"context\":"
                           "{\"scopes\":[\"fs:write\"],\"max_risk\":\"high\"}}";
        tg_check(d, p, read, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(strcmp(o.code, "CONTEXT_IN_CALL") == 0, "a call's own context is refused");
        tg_check(d, p, read, call, strlen(call), TG_FORMAT_AUTO, TG_CHECK_TRUST_CONTEXT, 0, &o,
                 NULL);
        tap_ok(o.verdict == TG_ACCEPT, "and merged over the context when the input is trusted");
    }
    tg_decider_free(d);
    tg_context_free(read);
    tg_context_free(odd);
    tg_policy_free(p);
}

static void test_host_stages(void)
{
    tg_policy_t *p = policy(
        "{\"version\":\"t@1\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],"
        "\"requires_approval\":true,\"stages\":[{\"stage\":\"rung\"},{\"stage\":\"custom\","
        "\"name\":\"ask\",\"code\":\"ASK\"},{\"stage\":\"gate\"}],\"tools\":[{},{\"scopes\":[\"fs:write\"]},{}]}");
    tg_context_t *c = context(p, "{\"max_risk\":\"low\",\"epoch\":[1]}");
    tg_decider_t *d = tg_decider_new(E, NULL);
    tg_outcome_t o;
    tg_error_t err;
    const char *call = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{}}";
    int rc;

    tap_ok(tg_check_answer(d, -1, NULL, 0, NULL, 0, &o, &err) == TG_E_ARG,
           "an answer with no stage waiting is TG_E_ARG");
    rc = tg_check(d, p, c, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NEEDS_STAGE && o.pending == 1,
           "a custom stage is handed to the host");
    tap_ok(tg_check_tool(d) == 1 && tg_check_args_digest(d) != NULL,
           "the host sees the resolved tool and the digest");
    {
        tg_check_view_t v;
        size_t sl, nl;
        const char *server = tg_check_server(d, &sl), *name = tg_check_name(d, &nl);
        tg_check_view(d, &v);
        tap_ok(v.server == server && v.server_len == sl && v.name == name && v.name_len == nl &&
                   v.arguments == tg_check_arguments(d) &&
                   v.args_digest == tg_check_args_digest(d) && v.tool == 1 &&
                   v.context == tg_check_call_context(d) && v.context == NULL &&
                   v.server_len == 2 && memcmp(v.server, "fs", 2) == 0,
               "tg_check_view reads what the getters give, in one call");
    }
    rc = tg_check_answer(d, TG_DEFER, "ASK", 3, "who?\xff", 5, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && o.verdict == TG_REJECT &&
               strcmp(o.code, "H4") == 0,
           "a defer lets the gate run; its reject wins");
    tap_ok(strstr(o.json,
                  "\"outcomes\":[{\"code\":\"ASK\",\"stage\":\"ask\",\"verdict\":\"defer\"},"
                  "{\"code\":\"H4\",\"stage\":\"gate\",\"verdict\":\"reject\"}]") != NULL,
           "the decision lists both objections in order");
    {
        tg_context_t *ok = context(p, "{\"max_risk\":\"low\",\"epoch\":[1]}");
        const char *web = "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/\"}}";
        tg_check(d, p, ok, web, strlen(web), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tg_check_answer(d, TG_DEFER, "ASK", 3, "who?\xff", 5, &o, NULL);
        tap_ok(
            o.verdict == TG_DEFER && strstr(o.json, "\"message\":\"who?\"") &&
                strstr(o.json, "\"epoch\":[1]") && strstr(o.json, "\"requires_approval\":true"),
            "a defer: the host's bytes that are not UTF-8 dropped, the binding's epoch, approval");
        tg_context_free(ok);
    }
    rc = tg_check(d, p, c, call, strlen(call), TG_FORMAT_AUTO, TG_CHECK_PAUSE, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NEEDS_STAGE && o.pending == 0,
           "TG_CHECK_PAUSE shows the host the rung too");
    tap_ok(tg_check_answer(d, -1, NULL, 0, NULL, 0, &o, &err) == TG_E_ARG,
           "a built-in stage cannot be answered but with TG_RUN_IN_CORE");
    rc = tg_check_answer(d, TG_RUN_IN_CORE, NULL, 0, NULL, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NEEDS_STAGE && o.pending == 1,
           "TG_RUN_IN_CORE runs it in the core, and the next stage is shown");
    tg_decider_free(d);
    tg_context_free(c);
    tg_policy_free(p);
}

/* The gate with no context at all: nothing is granted, so a tool that
 * requires a scope is refused, though its risk is within the lowest. */
static void test_no_context(void)
{
    tg_policy_t *p = policy(BASE);
    tg_context_t *none = context(p, "{}");
    tg_decider_t *d = tg_decider_new(E, NULL);
    const char *call = "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/a\"}}";
    const char *want = "\"code\":\"H4\",\"format\":\"native\",\"index\":0,\"message\":\"scope "
                       "\\\"fs:read\\\" is required and not granted\"";
    tg_outcome_t o;
    int rc = tg_check(d, p, NULL, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && o.verdict == TG_REJECT &&
               strcmp(o.code, "H4") == 0 && strcmp(o.stage, "gate") == 0 && strstr(o.json, want),
           "no context: a tool that requires a scope is refused H4, naming the scope");
    rc = tg_check(d, p, none, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && o.verdict == TG_REJECT && strstr(o.json, want),
           "an empty context: the same refusal");
    tg_decider_free(d);
    tg_context_free(none);
    tg_policy_free(p);
}

/* Whether a decision came at once, a reject, after exactly the stages
 * listed: the decider never handed a later stage to the host. */
static int stopped_at(int rc, const tg_outcome_t *o, const char *code, const char *stages)
{
    if (rc != TG_OK || o->status != TG_DECIDED) {
        printf("#   rc %s status %d pending %zu\n", tg_code_name(rc), o->status, o->pending);
        return 0;
    }
    return o->verdict == TG_REJECT && strcmp(o->code, code) == 0 && strstr(o->json, stages) != NULL;
}

/* After a reject no stage runs: not a host's (it is never asked), not a
 * built-in one (its objection would join the decision; TG_CHECK_PAUSE would
 * show it to the host first). */
static void test_reject_stops(void)
{
    tg_policy_t *p =
        policy("{\"version\":\"t@1\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],\"stages\":["
               "{\"stage\":\"rung\"},{\"stage\":\"custom\",\"name\":\"no\",\"code\":\"NO\"},"
               "{\"stage\":\"custom\",\"name\":\"after\",\"code\":\"AFTER\"},{\"stage\":\"gate\"}],"
               "\"tools\":[{},{\"scopes\":[\"fs:write\"]},{}]}");
    tg_decider_t *d = tg_decider_new(E, NULL);
    const char *unknown = "{\"server\":\"fs\",\"name\":\"nope\",\"arguments\":{}}";
    const char *bad = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{\"path\":1}}";
    const char *good = "{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{}}";
    tg_outcome_t o;
    int rc;

    rc = tg_check(d, p, NULL, unknown, strlen(unknown), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(stopped_at(rc, &o, "H1", "\"stages\":[\"rung\"]"),
           "a rung reject (H1): the host's stages after it are never asked");
    rc = tg_check(d, p, NULL, bad, strlen(bad), TG_FORMAT_AUTO, TG_CHECK_PAUSE, 0, &o, NULL);
    if (rc == TG_OK && o.status == TG_NEEDS_STAGE && o.pending == 0)
        rc = tg_check_answer(d, TG_RUN_IN_CORE, NULL, 0, NULL, 0, &o, NULL);
    tap_ok(stopped_at(rc, &o, "H3", "\"stages\":[\"rung\"]"),
           "a rung reject (H3) under TG_CHECK_PAUSE: no later stage is shown to the host");
    rc = tg_check(d, p, NULL, good, strlen(good), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NEEDS_STAGE && o.pending == 1,
           "a call the rung lets through reaches the first host stage");
    rc = tg_check_answer(d, TG_REJECT, "NO", 2, "no", 2, &o, NULL);
    tap_ok(stopped_at(rc, &o, "NO", "\"stages\":[\"rung\",\"no\"]") &&
               strstr(o.json, "AFTER") == NULL && strstr(o.json, "H4") == NULL,
           "a host's reject: neither the next host stage nor the gate after it runs");
    tg_decider_free(d);
    tg_policy_free(p);
}

/* The gate and the verifier read the contract of the tool the rung
 * resolved.  toolgate.policy refuses them before the rung; a description
 * given to the C API that puts them there is refused when they would run
 * (TG_E_ARG), never decided on another tool's contract. */
static void test_contract_before_rung(void)
{
    static const char *const stages[] = {
        "[{\"stage\":\"gate\"},{\"stage\":\"rung\"}]",
        "[{\"stage\":\"verifier\"},{\"stage\":\"rung\"}]",
    };
    const char *call = "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/a\"}}";
    tg_decider_t *d = tg_decider_new(E, NULL);
    int ok = 1;
    for (size_t i = 0; i < 2; i++) {
        char json[1024];
        tg_policy_t *p;
        tg_outcome_t o;
        tg_error_t err;
        int rc;
        snprintf(
            json, sizeof json,
            "{\"version\":\"t@1\",\"registry_hash\":\"h\","
            "\"risk_levels\":[\"low\",\"medium\",\"high\"],\"require_contract\":true,\"stages\":%s,\"tools\":" TOOLS3
            "}",
            stages[i]);
        p = policy(json);
        rc = tg_check(d, p, NULL, call, strlen(call), TG_FORMAT_AUTO, 0, 0, &o, &err);
        if (rc != TG_E_ARG || !strstr(err.message, "the rung")) {
            printf("#   %s: rc %s, %s\n", stages[i], tg_code_name(rc),
                   rc == TG_OK ? o.json : err.message);
            ok = 0;
        }
        tg_policy_free(p);
    }
    tap_ok(ok, "a gate or verifier before the rung: TG_E_ARG, no decision on an unresolved tool");
    tg_decider_free(d);
}

/* Whether the buffer (not NUL-terminated) holds needle. */
static int holds(const tg_buf_t *b, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= b->len; i++)
        if (memcmp(b->data + i, needle, n) == 0)
            return 1;
    return 0;
}

static void test_lines(void)
{
    tg_policy_t *p = policy(BASE);
    tg_decider_t *d = tg_decider_new(E, NULL);
    tg_buf_t out;
    tg_outcome_t o;
    size_t line = 0, used = 0, v[3] = {0, 0, 0};
    const char *text = "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/\"}}\n"
                       "   \n"
                       "\n"
                       "[\n"
                       "{\"server\":\"fs\",\"name\":\"nope\",\"arguments\":{}}\n"
                       "{\"server\":\"fs\"";
    int rc;
    tg_buf_init(&out, E);
    rc = tg_check_lines(d, p, NULL, text, strlen(text), TG_FORMAT_AUTO, 0, &line, &used, &out, v,
                        &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NO_MORE_CALLS && line == 5 &&
               used == strlen(text) - strlen("{\"server\":\"fs\""),
           "check_lines reads the complete lines, counts blank ones, leaves a cut one");
    tap_ok(v[0] == 0 && v[1] == 3 && holds(&out, "\"line\":1,") && holds(&out, "\"line\":4,") &&
               holds(&out, "\"line\":5,"),
           "each decision carries its line number; blank lines give none");
    tg_buf_reset(&out);
    line = 0;
    rc = tg_canon_lines(E, "{\"b\":1,\"a\":2}\n[1,]\n[1.0]\n", 25, 0, &line, &used, &out, NULL);
    tap_ok(rc == TG_E_SYNTAX && line == 2 && used == 19 && out.len == 14,
           "canon_lines stops at a bad line, with its number and after it");
    rc = tg_canon_lines(E, "{\"b\":1,\"a\":2}\n[1,]\n[1.0]\n" + used, 25 - used, 0, &line, &used,
                        &out, NULL);
    tap_is_mem(out.data, out.len, "{\"a\":2,\"b\":1}\n[1]\n", "and goes on from there");
    tg_buf_reset(&out);
    line = 0;
    rc = tg_canon_lines(E, "{\"b\":1,\"a\":2}\n", 14, 1, &line, &used, &out, NULL);
    {
        tg_hash128_t hh;
        char hex[TG_HASH_HEX + 1];
        tg_hash128("{\"a\":2,\"b\":1}", 13, &hh);
        tg_hash128_hex(&hh, hex);
        hex[32] = '\n';
        hex[33] = '\0';
        tap_is_mem(out.data, out.len, hex, "canon_lines with hash: the XXH3-128 of each line");
    }
    {
        tg_doc_t *sd;
        tg_schema_t *s;
        const char *schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}";
        tg_parse(E, schema, strlen(schema), &sd, NULL);
        tg_schema_compile(E, tg_doc_root(sd), NULL, &s, NULL);
        tg_doc_free(sd);
        tg_buf_reset(&out);
        line = 0;
        rc = tg_validate_lines(E, s, "{\"a\":1}\n{\"a\":\"x\"}\n", 18, &line, &used, &out, NULL);
        tap_ok(rc == TG_OK && holds(&out, "{\"errors\":[],\"line\":1,\"valid\":true}\n") &&
                   holds(&out, "\"keyword\":\"type\"") &&
                   holds(&out, "\"line\":2,\"valid\":false}\n"),
               "validate_lines: one verdict a line, its errors, its number");
        tg_schema_free(s);
    }
    tg_buf_free(&out);
    tg_decider_free(d);
    tg_policy_free(p);
}

/* A text of several calls: one decision each, in order, with its index
 * and the text's shape; tg_check_lines decides them all, host stages and
 * their answers included. */
#define CHAT2                                                                                      \
    "{\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"             \
    "\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","         \
    "\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"/a\\\"}\"}},{\"id\":"       \
    "\"c2\",\"type\":\"function\",\"function\":{\"name\":\"nope\",\"arguments\":\"{}\"}}]}}]}"
#define TEXT_ONLY "{\"role\":\"assistant\",\"content\":\"No call.\",\"refusal\":null}"
#define BATCH2                                                                                     \
    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"write\"}},"   \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"read\","       \
    "\"arguments\":{\"path\":\"/b\"}}}]"

static void test_several_calls(void)
{
    tg_policy_t *p = policy(BASE);
    tg_context_t *c =
        context(p, "{\"server\":\"fs\",\"scopes\":[\"fs:read\"],\"max_risk\":\"low\"}");
    tg_decider_t *d = tg_decider_new(E, NULL);
    tg_outcome_t o;
    tg_error_t err;
    tg_buf_t out;
    size_t line = 0, used = 0, v[3] = {0, 0, 0};
    const char *chat = CHAT2;
    int rc;

    rc = tg_check(d, p, c, chat, strlen(chat), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && o.verdict == TG_ACCEPT &&
               strstr(o.json, "\"format\":\"openai-chat\",\"id\":\"c1\",\"index\":0,"),
           "the first call of a chat.completion: its id, index 0, the shape");
    rc = tg_check_next(d, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && strcmp(o.code, "H1") == 0 &&
               strstr(o.json, "\"id\":\"c2\",\"index\":1,"),
           "tg_check_next: the second, index 1");
    rc = tg_check_next(d, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NO_MORE_CALLS && tg_check_next(d, &o, NULL) == TG_OK &&
               o.status == TG_NO_MORE_CALLS,
           "then no more calls, and so it stays");
    rc = tg_check(d, p, c, chat, strlen(chat), TG_FORMAT_AUTO, TG_CHECK_ONE, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && strcmp(o.code, "BAD_CALL") == 0 &&
               strstr(o.json, "holds 2 calls") && strstr(o.json, "\"format\":\"openai-chat\"") &&
               !strstr(o.json, "\"index\"") && tg_check_next(d, &o, NULL) == TG_OK &&
               o.status == TG_NO_MORE_CALLS,
           "TG_CHECK_ONE refuses a text of two calls, saying so, and decides none of them");
    rc = tg_check(d, p, c, TEXT_ONLY, strlen(TEXT_ONLY), TG_FORMAT_AUTO, 0, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_NO_MORE_CALLS, "a text-only message: no decision");
    rc = tg_check(d, p, c, TEXT_ONLY, strlen(TEXT_ONLY), TG_FORMAT_AUTO, TG_CHECK_ONE, 0, &o, NULL);
    tap_ok(rc == TG_OK && o.status == TG_DECIDED && strstr(o.json, "holds 0 calls"),
           "... which TG_CHECK_ONE refuses");
    {
        const char *ctx_line = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"read\",\"arguments\":{\"path\":\"/\"}}}]";
        const char *env = "{\"type\":\"message\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
                          "\"name\":\"read\",\"input\":{\"path\":\"/\"}}],\"context\":{}}";
        rc = tg_check(d, p, c, env, strlen(env), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(rc == TG_OK && strcmp(o.code, "CONTEXT_IN_CALL") == 0 &&
                   strstr(o.json, "\"format\":\"anthropic-message\"") &&
                   !strstr(o.json, "\"index\"") && tg_check_next(d, &o, NULL) == TG_OK &&
                   o.status == TG_NO_MORE_CALLS,
               "an envelope's context is the text's: one refusal, no call decided");
        rc = tg_check(d, p, c, ctx_line, strlen(ctx_line), TG_FORMAT_AUTO, 0, 0, &o, NULL);
        tap_ok(rc == TG_OK && o.verdict == TG_ACCEPT && strstr(o.json, "\"format\":\"mcp-batch\""),
               "a batch of one call");
    }

    tg_buf_init(&out, E);
    {
        const char *text = CHAT2 "\n" TEXT_ONLY "\n" BATCH2 "\n{\"name\":1}\n";
        rc = tg_check_lines(d, p, c, text, strlen(text), TG_FORMAT_AUTO, 0, &line, &used, &out, v,
                            &o, NULL);
        tap_ok(rc == TG_OK && o.status == TG_NO_MORE_CALLS && line == 4 && used == strlen(text) &&
                   v[0] == 2 && v[1] == 3,
               "check_lines: a decision per call (2, none, 2, and a refusal)");
        tap_ok(holds(&out, "\"index\":1,\"line\":1,") && holds(&out, "\"index\":0,\"line\":3,") &&
                   holds(&out, "\"index\":1,\"line\":3,") && !holds(&out, "\"line\":2,") &&
                   holds(&out, "\"line\":4,"),
               "each with its line and index; the text-only line writes nothing");
    }
    {
        /* a host stage in a text of two calls: the line's next call comes
         * before the next line */
        tg_policy_t *hp =
            policy("{\"version\":\"t@1\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],"
                   "\"stages\":[{\"stage\":\"rung\"},{\"stage\":\"custom\",\"name\":\"ask\","
                   "\"code\":\"ASK\"}],\"tools\":[{},{},{}]}");
        const char *text =
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"write\"}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
            "{\"name\":\"write\",\"arguments\":{\"path\":\"/b\"}}}]\n"
            "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/\"}}\n";
        size_t at = 0, total = strlen(text), decided = 0, waits = 0, kept = 0;
        char answered[4096];
        tg_buf_reset(&out);
        line = 0;
        v[0] = v[1] = v[2] = 0;
        for (int guard = 0; guard < 10; guard++) {
            rc = tg_check_lines(d, hp, NULL, text + at, total - at, TG_FORMAT_AUTO, 0, &line, &used,
                                &out, v, &o, &err);
            if (rc != TG_OK)
                break;
            at += used;
            if (o.status == TG_NO_MORE_CALLS)
                break;
            waits++;
            if (waits == 1)
                tap_ok(tg_check_next(d, &o, &err) == TG_E_ARG,
                       "tg_check_next while a stage waits is TG_E_ARG");
            rc = tg_check_answer(d, -1, NULL, 0, NULL, 0, &o, NULL);
            if (rc == TG_OK && o.status == TG_DECIDED && o.json_len < sizeof answered - kept) {
                decided++;
                memcpy(answered + kept, o.json, o.json_len);
                kept += o.json_len;
            }
        }
        tap_ok(rc == TG_OK && o.status == TG_NO_MORE_CALLS && waits == 3 && decided == 3 &&
                   at == total && line == 2,
               "a host stage in a text of several calls: every call waits once, then goes on");
        answered[kept] = '\0';
        {
            const char *a = strstr(answered, "\"id\":1,\"index\":0,\"line\":1,");
            const char *b = strstr(answered, "\"id\":2,\"index\":1,\"line\":1,");
            const char *z = strstr(answered, "\"format\":\"native\",\"index\":0,\"line\":2,");
            tap_ok(a && b && z && a < b && b < z && out.len == 0,
                   "... in order, each with its index and line (the host writes them)");
        }
        tg_policy_free(hp);
    }
    tg_buf_free(&out);
    tg_decider_free(d);
    tg_context_free(c);
    tg_policy_free(p);
}

static void test_workers(void)
{
    tg_policy_t *p = policy(BASE);
    tg_context_t *c = context(p, "{\"scopes\":[\"fs:read\"],\"max_risk\":\"low\"}");
    tg_decider_t *d = tg_decider_new(E, NULL);
    tg_workers_t *w = tg_workers_new(E, 3, NULL);
    /* each with the line's number in it, so no two decisions are alike */
    static const char *const calls[][2] = {
        {"{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/", "\"}}"},
        {"{\"server\":\"fs\",\"name\":\"write\",\"arguments\":{\"path\":", "}}"},
        {"{\"name\":\"read\",\"arguments\":{\"n\":", "}}"},
        {"", ""},
        {"{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":1,\"path\":", "}}"},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"write\"}},{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"read\",\"arguments\":{\"n\":",
         "}}}]"},
    };
    size_t cap = 1 << 20, len = 0, l1 = 0, l2 = 0, u1, u2, v1[3] = {0, 0, 0}, v2[3] = {0, 0, 0};
    char *text = malloc(cap);
    tg_buf_t one, many;
    tg_outcome_t o;
    int rc1, rc2;
    for (int i = 0; i < 5000; i++) {
        const char *const *k = calls[i % 6];
        len += (size_t)snprintf(text + len, cap - len, "%s%d%s\n", k[0], i, k[1]);
        if (!*k[0])
            len -= (size_t)snprintf(NULL, 0, "%d", i); /* a blank line: no number */
    }
    tg_buf_init(&one, E);
    tg_buf_init(&many, E);
    rc1 = tg_check_lines(d, p, c, text, len, TG_FORMAT_AUTO, 0, &l1, &u1, &one, v1, &o, NULL);
    rc2 = tg_check_lines_parallel(w, d, p, c, text, len, TG_FORMAT_AUTO, 0, &l2, &u2, &many, v2, &o,
                                  NULL);
    tap_ok(tg_workers_count(w) == 3, "a pool of 3 threads, the caller's included");
    tap_ok(rc1 == TG_OK && rc2 == TG_OK && l1 == l2 && u1 == u2 && v1[0] == v2[0] &&
               v1[1] == v2[1] && v1[2] == v2[2],
           "on threads: the same lines, bytes read and counts");
    tap_ok(one.len == many.len && memcmp(one.data, many.data, one.len) == 0,
           "on threads: the same decisions, byte for byte, in input order");
    tap_ok(tg_workers_new(E, 0, NULL) == NULL &&
               tg_workers_new(E, TG_MAX_THREADS + 1, NULL) == NULL,
           "threads outside 1..TG_MAX_THREADS are refused");
    tg_buf_free(&one);
    tg_buf_free(&many);
    free(text);
    tg_workers_free(w);
    tg_decider_free(d);
    tg_context_free(c);
    tg_policy_free(p);
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    build_registry();
    test_policy_description();
    test_reject_stops(); /* first: were a later stage run, test_decisions would crash in it */
    test_decisions();
    test_no_context();
    test_contract_before_rung();
    test_host_stages();
    test_lines();
    test_several_calls();
    test_workers();
    tg_registry_free(R);
    tg_engine_free(E);
    return tap_done();
}
