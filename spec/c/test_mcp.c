/*
 * test_mcp.c -- a client's JSON-RPC message as the MCP gateways read it
 * (tg_mcp_read), and tg_mcp_check: the message read and its tools/call
 * decided in one call, with the decision tg_check gives the call text.
 */
#include "tg_internal.h" /* a value no parser makes: the arguments that cannot be written */
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static tg_engine_t *E;

/* m for text's root read with server "fs" (texts kept in *b). */
static tg_mcp_message_t read_text(const char *text, tg_doc_t **doc, tg_buf_t *b)
{
    tg_mcp_message_t m;
    tg_error_t err;
    memset(&m, 0xa5, sizeof m); /* what is not written shows */
    if (tg_parse(E, text, strlen(text), doc, &err) != TG_OK) {
        printf("# parse: %s\n", err.message);
        m.kind = -1;
        return m;
    }
    tg_buf_reset(b);
    if (tg_mcp_read(tg_doc_root(*doc), "fs", 2, &m, b, &err) != TG_OK) {
        printf("# read: %s\n", err.message);
        m.kind = -1;
    }
    return m;
}

/* The id rule: a string, or an integer within +-(2^53 - 1), by the id's
 * exact canonical form (1.0 is 1, 1e2 is 100). */
static void test_ids(void)
{
    static const struct {
        const char *id, *text; /* text: the canonical form */
        int want;
    } cases[] = {
        {"\"x\"", "\"x\"", TG_MCP_ID_OK},
        {"\"\"", "\"\"", TG_MCP_ID_OK},
        {"\"\\u0041\"", "\"A\"", TG_MCP_ID_OK},
        {"0", "0", TG_MCP_ID_OK},
        {"-0", "0", TG_MCP_ID_OK},
        {"7", "7", TG_MCP_ID_OK},
        {"1.0", "1", TG_MCP_ID_OK},
        {"1e2", "100", TG_MCP_ID_OK},
        {"9007199254740991", "9007199254740991", TG_MCP_ID_OK},
        {"-9007199254740991", "-9007199254740991", TG_MCP_ID_OK},
        {"9007199254740992", "9007199254740992", TG_MCP_ID_BAD},
        {"-9007199254740992", "-9007199254740992", TG_MCP_ID_BAD},
        {"12345678901234567890", "12345678901234567890", TG_MCP_ID_BAD},
        {"1.5", "1.5", TG_MCP_ID_BAD},
        {"1e300", NULL, TG_MCP_ID_BAD},
        {"null", "null", TG_MCP_ID_BAD},
        {"true", "true", TG_MCP_ID_BAD},
        {"{}", "{}", TG_MCP_ID_BAD},
        {"[1]", "[1]", TG_MCP_ID_BAD},
    };
    tg_buf_t b;
    int wrong = 0;
    tg_buf_init(&b, E);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[128];
        tg_doc_t *doc = NULL;
        tg_mcp_message_t m;
        snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                 cases[i].id);
        m = read_text(text, &doc, &b);
        if (m.kind != TG_MCP_MESSAGE || m.id != cases[i].want || !m.id_text ||
            (cases[i].text && (m.id_len != strlen(cases[i].text) ||
                               memcmp(m.id_text, cases[i].text, m.id_len) != 0)) ||
            m.id_null != (strcmp(cases[i].id, "null") == 0)) {
            printf("# id %s: kind %d id %d text '%.*s'\n", cases[i].id, m.kind, m.id,
                   m.id_text ? (int)m.id_len : 0, m.id_text ? m.id_text : "");
            wrong++;
        }
        tg_doc_free(doc);
    }
    tg_buf_free(&b);
    tap_ok(wrong == 0,
           "an id is a string or an integer within 2^53 - 1, by its exact canonical form");
}

static void test_members(void)
{
    tg_buf_t b;
    tg_doc_t *doc = NULL;
    tg_mcp_message_t m;
    tg_buf_init(&b, E);

    m = read_text("[1]", &doc, &b);
    tap_ok(m.kind == TG_MCP_NOT_OBJECT, "an array is no message (an element of a batch)");
    tg_doc_free(doc);

    m = read_text("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &doc, &b);
    tap_ok(m.kind == TG_MCP_MESSAGE && m.id == TG_MCP_ID_NONE && !m.id_text && m.method == 1 &&
               m.method_len == 25 && memcmp(m.method_name, "notifications/initialized", 25) == 0 &&
               !m.name && !m.call && !m.call_error,
           "a notification: a method, no id");
    tg_doc_free(doc);

    m = read_text("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":7}", &doc, &b);
    tap_ok(m.method == 2 && !m.method_name, "a method that is no string");
    tg_doc_free(doc);

    m = read_text("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &doc, &b);
    tap_ok(m.method == 0 && m.has_result && !m.has_error && m.id == TG_MCP_ID_OK,
           "an answer: an id and a result");
    tg_doc_free(doc);

    m = read_text("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700}}", &doc, &b);
    tap_ok(m.has_error && !m.has_result && m.id == TG_MCP_ID_BAD && m.id_null,
           "an error answering no id");
    tg_doc_free(doc);

    m = read_text("{\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"c\"}}", &doc, &b);
    tap_ok(m.has_cursor, "a tools/list with a cursor");
    tg_doc_free(doc);
    m = read_text("{\"id\":1,\"method\":\"tools/list\",\"params\":[{\"cursor\":\"c\"}]}", &doc, &b);
    tap_ok(!m.has_cursor, "params that are no object have no cursor");
    tg_doc_free(doc);

    tg_buf_free(&b);
}

/* The era claim: params._meta["io.modelcontextprotocol/protocolVersion"]
 * when it is a string (MCP 2026-07-28's per-request envelope). */
static void test_protocol_version(void)
{
    tg_buf_t b;
    tg_doc_t *doc = NULL;
    tg_mcp_message_t m;
    tg_buf_init(&b, E);

    m = read_text("{\"id\":1,\"method\":\"server/discover\",\"params\":{\"_meta\":"
                  "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
                  &doc, &b);
    tap_ok(m.protocol_version && m.protocol_version_len == 10 &&
               memcmp(m.protocol_version, "2026-07-28", 10) == 0,
           "a modern request's protocol version is read from params._meta");
    tg_doc_free(doc);

    m = read_text("{\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                  "{\"io.modelcontextprotocol/protocolVersion\":\"2\\u0030\"}}}",
                  &doc, &b);
    tap_ok(m.protocol_version && m.protocol_version_len == 2 &&
               memcmp(m.protocol_version, "20", 2) == 0,
           "the version is the decoded string");
    tg_doc_free(doc);

    m = read_text("{\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                  "{\"io.modelcontextprotocol/protocolVersion\":20260728}}}",
                  &doc, &b);
    tap_ok(!m.protocol_version && m.protocol_version_len == 0,
           "a version that is no string is none");
    tg_doc_free(doc);

    m = read_text("{\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":[]}}", &doc, &b);
    tap_ok(!m.protocol_version, "a _meta that is no object holds no version");
    tg_doc_free(doc);

    m = read_text("{\"id\":1,\"method\":\"initialize\",\"params\":"
                  "{\"protocolVersion\":\"2025-11-25\"}}",
                  &doc, &b);
    tap_ok(!m.protocol_version, "a legacy request (initialize's own member) claims no era");
    tg_doc_free(doc);

    tg_buf_free(&b);
}

static void test_calls(void)
{
    static const struct {
        const char *params, *call, *error;
    } cases[] = {
        {"{\"name\":\"read\",\"arguments\":{\"path\":\"/a\",\"n\":9007199254740993}}",
         "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"n\":9007199254740993,\"path\":\"/a\"}}",
         NULL},
        {"{\"name\":\"read\"}", "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{}}", NULL},
        {"{\"name\":\"r\\\"\\u00e9\\n\",\"arguments\":{\"b\":1.50,\"a\":[]}}",
         "{\"server\":\"fs\",\"name\":\"r\\\"\xc3\xa9\\n\",\"arguments\":{\"a\":[],\"b\":1.5}}",
         NULL},
        /* arguments that are no object are the check's to refuse */
        {"{\"name\":\"read\",\"arguments\":\"x\"}",
         "{\"server\":\"fs\",\"name\":\"read\",\"arguments\":\"x\"}", NULL},
        {"{\"arguments\":{}}", NULL, "params.name must be a string"},
        {"{\"name\":7}", NULL, "params.name must be a string"},
        {"[]", NULL, "params.name must be a string"},
    };
    tg_buf_t b;
    int wrong = 0;
    tg_buf_init(&b, E);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        tg_doc_t *doc = NULL;
        tg_mcp_message_t m;
        snprintf(text, sizeof text,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":%s}",
                 cases[i].params);
        m = read_text(text, &doc, &b);
        if (cases[i].call ? !m.call || m.call_len != strlen(cases[i].call) ||
                                memcmp(m.call, cases[i].call, m.call_len) != 0 ||
                                m.call[m.call_len] != '\0' || m.call_error
                          : m.call || !m.call_error || strcmp(m.call_error, cases[i].error) != 0) {
            printf("# params %s: call '%s' error '%s'\n", cases[i].params,
                   m.call ? m.call : "(none)", m.call_error ? m.call_error : "(none)");
            wrong++;
        }
        tg_doc_free(doc);
    }
    /* arguments the canonical writer refuses (a non-finite number: no
     * parser makes one, a host's own value might) give no call, and say
     * why: the gateway refuses the message, it never forwards it */
    {
        tg_doc_t *doc = NULL;
        tg_mcp_message_t m;
        const char *text =
            "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"read\",\"arguments\":{\"x\":1}}}";
        tg_value_t *x;
        tg_parse(E, text, strlen(text), &doc, NULL);
        /* the root's members in key order: id, method, params; params':
         * arguments, name; the arguments' only member: x */
        x = &doc->root->p.items[2].p.items[0].p.items[0];
        x->p.text = "1e999";
        x->len = 5;
        x->flags = 0;
        x->num = INFINITY;
        tg_buf_reset(&b);
        tap_ok(tg_mcp_read(tg_doc_root(doc), "fs", 2, &m, &b, NULL) == TG_OK && !m.call &&
                   m.call_error &&
                   strncmp(m.call_error, "params.arguments cannot be read: ", 33) == 0,
               "arguments that cannot be written: no call, and why (err may be NULL)");
        tg_doc_free(doc);
    }
    /* without a server: the name, no call */
    {
        tg_doc_t *doc = NULL;
        tg_mcp_message_t m;
        const char *text = "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"read\"}}";
        tg_parse(E, text, strlen(text), &doc, NULL);
        tg_buf_reset(&b);
        tg_mcp_read(tg_doc_root(doc), NULL, 0, &m, &b, NULL);
        tap_ok(m.name && m.name_len == 4 && !m.call && !m.call_error,
               "without a server, a tools/call's name and no call");
        tg_doc_free(doc);
    }
    tg_buf_free(&b);
    tap_ok(wrong == 0, "a tools/call's call: the server given, the name, the arguments exactly");
}

static tg_registry_t *registry(void)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}";
    tg_registry_t *r = tg_registry_new(E, NULL);
    tg_doc_t *d;
    size_t index;
    tg_parse(E, schema, strlen(schema), &d, NULL);
    tg_registry_add(r, "fs", 2, "read", 4, "", 0, tg_doc_root(d), NULL, NULL, &index, NULL);
    tg_doc_free(d);
    return r;
}

/* tg_mcp_check against tg_check on the call text: the same decision, the
 * same resolved tool and digest; and what is not checked. */
static void test_check(void)
{
    static const char POLICY[] =
        "{\"version\":\"t@1\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\"],"
        "\"stages\":[{\"stage\":\"rung\"},{\"stage\":\"verifier\"}],\"tools\":[{}]}";
    static const char *const messages[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"read\","
        "\"arguments\":{\"path\":\"/a\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"tools/call\",\"params\":{\"name\":\"read\","
        "\"arguments\":{\"path\":1}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"read\","
        "\"arguments\":{\"path\":\"/a\",\"extra\":true}}}",
    };
    tg_registry_t *r = registry();
    tg_policy_t *p = NULL;
    tg_decider_t *d = tg_decider_new(E, NULL), *ref = tg_decider_new(E, NULL);
    tg_mcp_message_t m;
    tg_outcome_t o, ro;
    tg_error_t err;
    int same = 1, rc;
    if (tg_policy_new(E, r, POLICY, strlen(POLICY), &p, &err) != TG_OK)
        printf("# policy: %s\n", err.message);
    for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
        rc = tg_mcp_check(d, p, NULL, messages[i], strlen(messages[i]), "fs", 2, TG_FORMAT_AUTO, 0,
                          1, &m, &o, &err);
        if (rc != TG_OK || !m.checked || o.status != TG_DECIDED ||
            tg_check(ref, p, NULL, m.call, m.call_len, TG_FORMAT_AUTO, TG_CHECK_ONE, 0, &ro,
                     NULL) != TG_OK ||
            ro.status != TG_DECIDED || ro.json_len != o.json_len ||
            memcmp(ro.json, o.json, o.json_len) != 0 || ro.verdict != o.verdict ||
            m.tool != tg_check_tool(ref) ||
            (tg_check_args_digest(ref) ? strcmp(m.args_digest, tg_check_args_digest(ref)) != 0
                                       : m.args_digest[0] != '\0')) {
            printf("# message %zu: rc %d checked %d\n", i, rc, m.checked);
            same = 0;
        }
    }
    tap_ok(same, "a checked call has tg_check's decision, tool and digest for the call text");

    rc = tg_mcp_check(d, p, NULL, messages[0], strlen(messages[0]), "fs", 2, TG_FORMAT_AUTO, 0, 0,
                      &m, &o, &err);
    tap_ok(rc == TG_OK && !m.checked && m.call && o.status == TG_NO_MORE_CALLS,
           "decide 0: read, not checked");
    {
        const char *t = "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"read\",\"arguments\":{\"path\":\"/a\"}}}";
        rc = tg_mcp_check(d, p, NULL, t, strlen(t), "fs", 2, TG_FORMAT_AUTO, 0, 1, &m, &o, &err);
        tap_ok(rc == TG_OK && !m.checked && m.id == TG_MCP_ID_BAD && o.status == TG_NO_MORE_CALLS,
               "a tools/call without a valid id is not checked (the gateway refuses it)");
    }
    rc = tg_mcp_check(d, p, NULL, "{\"id\":1,", 8, "fs", 2, TG_FORMAT_AUTO, 0, 1, &m, &o, &err);
    tap_ok(rc == TG_OK && m.kind == TG_MCP_NOT_JSON && m.error.code != TG_OK &&
               m.error.message[0] != '\0' && !m.checked,
           "a text that is not JSON: TG_MCP_NOT_JSON and the parse error");
    rc = tg_mcp_check(d, p, NULL, "[{\"id\":1}]", 10, "fs", 2, TG_FORMAT_AUTO, 0, 1, &m, &o, &err);
    tap_ok(rc == TG_OK && m.kind == TG_MCP_BATCH && !m.checked, "a batch is left to the host");
    tap_ok(tg_mcp_check(d, NULL, NULL, "{}", 2, "fs", 2, 0, 0, 1, &m, &o, &err) == TG_E_ARG &&
               !m.checked && tg_mcp_read(NULL, NULL, 0, &m, NULL, &err) == TG_E_ARG,
           "misuse is TG_E_ARG");

    tg_decider_free(d);
    tg_decider_free(ref);
    tg_policy_free(p);
    tg_registry_free(r);
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    test_ids();
    test_members();
    test_protocol_version();
    test_calls();
    test_check();
    tg_engine_free(E);
    return tap_done();
}
