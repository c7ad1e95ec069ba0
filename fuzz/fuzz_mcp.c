/*
 * fuzz_mcp.c -- a client's JSON-RPC message as the MCP gateways read it,
 * read and checked in one call (tg_mcp_check), against the pieces it is
 * made of.
 *
 * Invariants: the text is TG_MCP_NOT_JSON exactly when tg_parse refuses it
 * (with the same code and offset), TG_MCP_BATCH exactly when it is an
 * array; a message's id is OK only as a string or an integer text of at
 * most 2^53 - 1 (and is never both), its canonical text present exactly
 * when it has an id; a tools/call's call names the server given and the
 * message's params.name, and parses as one native call; the call is
 * checked exactly when asked, with a valid id and a call; and a checked
 * call gets, byte for byte, the decision tg_check gives its call text on
 * another decider, with the same resolved tool and arguments' digest.
 */
#include "fuzz.h"

#include <math.h>

/* One server of the registry, as a route leads to it. */
static const char *const TOOLS[][2] = {
    {"read", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"pattern\":"
             "\"^/\"},\"head\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"path\"]}"},
    {"write", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":"
              "{\"type\":\"string\",\"maxLength\":64}},\"required\":[\"path\",\"content\"]}"},
    {"noargs", NULL},
};

static const char POLICY[] =
    "{\"version\":\"f@1\",\"registry_hash\":\"h\",\"risk_levels\":[\"low\",\"high\"],"
    "\"stages\":[{\"stage\":\"rung\"},{\"stage\":\"gate\"},{\"stage\":\"verifier\"}],"
    "\"tools\":[{\"risk\":\"low\",\"scopes\":[\"fs:read\"]},{\"risk\":\"high\"},{\"risk\":\"low\"}]}";
static const char CONTEXT[] = "{\"scopes\":[\"fs:read\"],\"max_risk\":\"low\"}";

typedef struct {
    tg_policy_t *p;
    tg_context_t *ctx;
    tg_decider_t *d, *ref;
} setup;

static setup *get_setup(tg_engine_t *e)
{
    static setup s;
    tg_registry_t *r;
    tg_error_t err;
    if (s.p)
        return &s;
    r = tg_registry_new(e, NULL);
    FUZZ_CHECK(r != NULL);
    for (size_t i = 0; i < sizeof TOOLS / sizeof TOOLS[0]; i++) {
        tg_doc_t *doc = NULL;
        size_t index;
        if (TOOLS[i][1])
            FUZZ_CHECK(tg_parse(e, TOOLS[i][1], strlen(TOOLS[i][1]), &doc, &err) == TG_OK);
        FUZZ_CHECK(tg_registry_add(r, "fs", 2, TOOLS[i][0], strlen(TOOLS[i][0]), "", 0,
                                   doc ? tg_doc_root(doc) : NULL, NULL, NULL, &index,
                                   &err) == TG_OK);
        tg_doc_free(doc);
    }
    FUZZ_CHECK(tg_policy_new(e, r, POLICY, sizeof POLICY - 1, &s.p, &err) == TG_OK);
    FUZZ_CHECK(tg_context_new(s.p, CONTEXT, sizeof CONTEXT - 1, &s.ctx, &err) == TG_OK);
    FUZZ_CHECK((s.d = tg_decider_new(e, &err)) != NULL);
    FUZZ_CHECK((s.ref = tg_decider_new(e, &err)) != NULL);
    return &s; /* the registry lives as long as the policy: the process */
}

/* Whether id, a number whose canonical text is t (n bytes), is an integer
 * within +-(2^53 - 1), worked out otherwise than the core does: the text
 * has no fraction or exponent, and the double, exact for every integer up
 * to 2^53 and at least 2^53 for every larger one, is within the bound. */
static int integer_id(const tg_value_t *id, const char *t, size_t n)
{
    return tg_type_of(id) == TG_NUMBER && n > 0 && !memchr(t, '.', n) && !memchr(t, 'e', n) &&
           !memchr(t, 'E', n) && fabs(tg_num(id)) <= 9007199254740991.0;
}

static void check_message(tg_engine_t *e, const tg_value_t *root, const tg_mcp_message_t *m)
{
    const tg_value_t *id = tg_get(root, "id", 2), *params = tg_get(root, "params", 6);
    const tg_value_t *name =
        params && tg_type_of(params) == TG_OBJECT ? tg_get(params, "name", 4) : NULL;
    FUZZ_CHECK(m->kind == TG_MCP_MESSAGE);
    FUZZ_CHECK(!id == !m->id_text && (m->id == TG_MCP_ID_NONE) == !id);
    if (m->id == TG_MCP_ID_OK)
        FUZZ_CHECK(tg_type_of(id) == TG_STRING ? m->id_text[0] == '"'
                                               : integer_id(id, m->id_text, m->id_len));
    if (m->id == TG_MCP_ID_BAD)
        FUZZ_CHECK(tg_type_of(id) != TG_STRING && !integer_id(id, m->id_text, m->id_len));
    FUZZ_CHECK(m->method != 1 || m->method_name);
    /* the era claim is the string at params._meta's key, or none */
    {
        const tg_value_t *meta =
            params && tg_type_of(params) == TG_OBJECT ? tg_get(params, "_meta", 5) : NULL;
        const tg_value_t *v = meta && tg_type_of(meta) == TG_OBJECT
                                  ? tg_get(meta, "io.modelcontextprotocol/protocolVersion", 39)
                                  : NULL;
        size_t vn = 0;
        const char *want = v && tg_type_of(v) == TG_STRING ? tg_str(v, &vn) : NULL;
        FUZZ_CHECK(!want == !m->protocol_version);
        FUZZ_CHECK(!want ||
                   (vn == m->protocol_version_len && memcmp(want, m->protocol_version, vn) == 0));
    }
    if (m->call) {
        tg_call_t *c = NULL;
        tg_error_t err;
        size_t n = 0, vn = 0;
        const char *cname;
        FUZZ_CHECK(m->method == 1 && m->method_len == 10 &&
                   memcmp(m->method_name, "tools/call", 10) == 0);
        FUZZ_CHECK(name && tg_type_of(name) == TG_STRING && !m->call_error);
        /* the call text is a native call of that name on server fs */
        if (tg_call_decode(e, m->call, m->call_len, TG_FORMAT_NATIVE, &c, &err) == TG_OK) {
            const char *server = tg_call_server(c, &n);
            const char *want = tg_str(name, &vn);
            FUZZ_CHECK(server && n == 2 && memcmp(server, "fs", 2) == 0);
            cname = tg_call_name(c, &n);
            FUZZ_CHECK(n == vn && memcmp(cname, want, n) == 0);
            tg_call_free(c);
        } else /* valid JSON whatever the message: arguments that are no object, an empty
                * name, or a text too long */
            FUZZ_CHECK(err.code == TG_E_BAD_ARGUMENTS || err.code == TG_E_BAD_CALL ||
                       err.code == TG_E_INPUT_TOO_LARGE);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    setup *s = get_setup(e);
    int decide = size && (data[0] & 1);
    tg_mcp_message_t m;
    tg_outcome_t o, ro;
    tg_doc_t *doc = NULL;
    tg_error_t err, perr;
    int rc, prc;

    rc = tg_mcp_check(s->d, s->p, s->ctx, (const char *)data, size, "fs", 2, TG_FORMAT_AUTO, 0,
                      decide, &m, &o, &err);
    FUZZ_CHECK(rc == TG_OK);
    prc = tg_parse(e, (const char *)data, size, &doc, &perr);
    FUZZ_CHECK((m.kind == TG_MCP_NOT_JSON) == (prc != TG_OK));
    if (prc != TG_OK) {
        FUZZ_CHECK(m.error.code == perr.code && m.error.offset == perr.offset && !m.checked);
        return 0;
    }
    FUZZ_CHECK((m.kind == TG_MCP_BATCH) == (tg_type_of(tg_doc_root(doc)) == TG_ARRAY));
    if (m.kind == TG_MCP_MESSAGE)
        check_message(e, tg_doc_root(doc), &m);
    else
        FUZZ_CHECK((m.kind == TG_MCP_BATCH ||
                    (m.kind == TG_MCP_NOT_OBJECT && tg_type_of(tg_doc_root(doc)) != TG_OBJECT)) &&
                   !m.checked);
    tg_doc_free(doc);

    FUZZ_CHECK(m.checked == (decide && m.kind == TG_MCP_MESSAGE && m.id == TG_MCP_ID_OK && m.call));
    if (!m.checked) {
        FUZZ_CHECK(o.status == TG_NO_MORE_CALLS);
        return 0;
    }
    /* a policy of built-in stages decides in the core, in one call */
    FUZZ_CHECK(o.status == TG_DECIDED);
    FUZZ_CHECK(tg_check(s->ref, s->p, s->ctx, m.call, m.call_len, TG_FORMAT_AUTO, TG_CHECK_ONE, 0,
                        &ro, &err) == TG_OK);
    FUZZ_CHECK(ro.status == TG_DECIDED && ro.verdict == o.verdict && ro.json_len == o.json_len &&
               memcmp(ro.json, o.json, o.json_len) == 0);
    FUZZ_CHECK(m.tool == tg_check_tool(s->ref));
    FUZZ_CHECK(tg_check_args_digest(s->ref)
                   ? strcmp(m.args_digest, tg_check_args_digest(s->ref)) == 0
                   : m.args_digest[0] == '\0');
    return 0;
}
