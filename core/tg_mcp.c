/*
 * tg_mcp.c -- a client's JSON-RPC message as toolgate's MCP gateways read
 * it (lua/toolgate/mcp.lua: nginx and stdio), and its tools/call decided in
 * the same call into the core.
 *
 * The reading is the one rule of what an id, a method and a call are; the
 * gateway's own rules (which methods pass, ids in flight, approvals, pins)
 * stay in Lua and work from what is read here.  A message costs the gateway
 * one crossing: parse, read and check, where it took one per member read.
 */
#include "tg_decide.h"

#include <stdio.h>

/* The largest integer every reader of an id holds exactly: a JavaScript
 * client reads 2^53 + 1 as 2^53, and its answer would match another
 * request. */
#define MAX_ID 9007199254740991ULL

/* Whether t (n bytes, a number's TG_CANON_EXACT form) is an integer from
 * -MAX_ID to MAX_ID: digits only (an optional minus first), 17 at most. */
static int integer_id(const char *t, size_t n)
{
    size_t i = n > 0 && t[0] == '-';
    unsigned long long v = 0;
    if (n == i || n > 17)
        return 0;
    for (; i < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return 0;
        v = v * 10 + (unsigned long long)(t[i] - '0');
    }
    return v <= MAX_ID;
}

static const tg_value_t *member(const tg_value_t *obj, const char *key)
{
    return tg_get(obj, key, strlen(key));
}

static int is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Appends {"server":..,"name":..,"arguments":..} to texts, the arguments
 * in their exact canonical form ({} when absent); *why is set (and TG_OK
 * returned) when they cannot be written. */
static int write_call(const char *server, size_t server_len, const char *name, size_t name_len,
                      const tg_value_t *args, tg_buf_t *texts, char *why, size_t why_size,
                      tg_error_t *err)
{
    tg_error_t cerr; /* its own: err may be NULL, and the reason is kept */
    int rc;
    if ((rc = tg_buf_append(texts, "{\"server\":", 10, err)) != TG_OK ||
        (rc = tg_canon_string(texts, server, server_len, err)) != TG_OK ||
        (rc = tg_buf_append(texts, ",\"name\":", 8, err)) != TG_OK ||
        (rc = tg_canon_string(texts, name, name_len, err)) != TG_OK ||
        (rc = tg_buf_append(texts, ",\"arguments\":", 13, err)) != TG_OK)
        return rc;
    rc = args ? tg_canon_value_mode(args, TG_CANON_EXACT, texts, &cerr)
              : tg_buf_append(texts, "{}", 2, &cerr);
    if (rc == TG_E_NOMEM)
        return tg_fail(err, rc, TG_NO_OFFSET, "out of memory");
    if (rc != TG_OK) {
        snprintf(why, why_size, "params.arguments cannot be read: %s", cerr.message);
        return TG_OK;
    }
    return tg_buf_append(texts, "}", 2, err); /* with the NUL */
}

int tg_mcp_read(const tg_value_t *msg, const char *server, size_t server_len, tg_mcp_message_t *m,
                tg_buf_t *texts, tg_error_t *err)
{
    const tg_value_t *id, *method, *params;
    size_t id_at = 0, call_at = 0;
    char why[TG_ERROR_MESSAGE_MAX + 40];
    int rc;

    tg_error_clear(err);
    if (!msg || !m || !texts)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "message, reading and texts are required");
    memset(m, 0, sizeof *m);
    m->tool = -1;
    if (tg_type_of(msg) != TG_OBJECT) {
        m->kind = TG_MCP_NOT_OBJECT;
        return TG_OK;
    }
    m->kind = TG_MCP_MESSAGE;
    if ((id = member(msg, "id")) != NULL) {
        id_at = texts->len;
        if ((rc = tg_canon_value_mode(id, TG_CANON_EXACT, texts, err)) != TG_OK)
            return rc;
        m->id_len = texts->len - id_at;
        m->id_null = tg_type_of(id) == TG_NULL;
        m->id = tg_type_of(id) == TG_STRING ||
                        (tg_type_of(id) == TG_NUMBER && integer_id(texts->data + id_at, m->id_len))
                    ? TG_MCP_ID_OK
                    : TG_MCP_ID_BAD;
    }
    if ((method = member(msg, "method")) != NULL) {
        m->method = tg_type_of(method) == TG_STRING ? 1 : 2;
        if (m->method == 1)
            m->method_name = tg_str(method, &m->method_len);
    }
    m->has_result = member(msg, "result") != NULL;
    m->has_error = member(msg, "error") != NULL;
    params = member(msg, "params");
    if (params && tg_type_of(params) != TG_OBJECT)
        params = NULL;
    m->has_cursor = params && member(params, "cursor");
    if (params) {
        const tg_value_t *meta = member(params, "_meta"), *version;
        version = meta && tg_type_of(meta) == TG_OBJECT
                      ? member(meta, "io.modelcontextprotocol/protocolVersion")
                      : NULL;
        if (version && tg_type_of(version) == TG_STRING)
            m->protocol_version = tg_str(version, &m->protocol_version_len);
    }

    why[0] = '\0';
    if (m->method == 1 && is(m->method_name, m->method_len, "tools/call")) {
        const tg_value_t *name = params ? member(params, "name") : NULL;
        if (!name || tg_type_of(name) != TG_STRING)
            m->call_error = "params.name must be a string";
        else {
            m->name = tg_str(name, &m->name_len);
            if (server) {
                call_at = texts->len;
                if ((rc = write_call(server, server_len, m->name, m->name_len,
                                     member(params, "arguments"), texts, why, sizeof why, err)) !=
                    TG_OK)
                    return rc;
                if (why[0]) {
                    /* what was written of the call goes: the reason takes its place */
                    texts->len = call_at;
                    if ((rc = tg_buf_append(texts, why, strlen(why) + 1, err)) != TG_OK)
                        return rc;
                }
            }
        }
    }
    /* the texts are placed now that the buffer has stopped moving */
    if (id)
        m->id_text = texts->data + id_at;
    if (m->name && server) {
        if (why[0])
            m->call_error = texts->data + call_at;
        else {
            m->call = texts->data + call_at;
            m->call_len = texts->len - call_at - 1;
        }
    }
    return TG_OK;
}

int tg_mcp_check(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *text,
                 size_t len, const char *server, size_t server_len, int format, int flags,
                 int decide, tg_mcp_message_t *m, tg_outcome_t *o, tg_error_t *err)
{
    const tg_value_t *root;
    int rc;

    tg_error_clear(err);
    if (!m || !o)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "reading and outcome are required");
    memset(m, 0, sizeof *m);
    m->tool = -1;
    o->status = TG_NO_MORE_CALLS;
    if (!d || !p || !text)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "decider, policy and text are required");
    tg_doc_free(d->mcp_doc);
    d->mcp_doc = NULL;
    tg_buf_reset(&d->mcp_texts);

    rc = tg_parse(d->e, text, len, &d->mcp_doc, &m->error);
    if (rc != TG_OK) {
        d->mcp_doc = NULL;
        m->kind = TG_MCP_NOT_JSON;
        return TG_OK;
    }
    root = tg_doc_root(d->mcp_doc);
    if (tg_type_of(root) == TG_ARRAY) {
        m->kind = TG_MCP_BATCH;
        return TG_OK;
    }
    if ((rc = tg_mcp_read(root, server, server_len, m, &d->mcp_texts, err)) != TG_OK)
        return rc;
    if (!decide || m->id != TG_MCP_ID_OK || !m->call)
        return TG_OK;
    m->checked = 1;
    rc = tg_check(d, p, ctx, m->call, m->call_len, format, flags | TG_CHECK_ONE, 0, o, err);
    if (rc == TG_OK) {
        const char *digest = tg_check_args_digest(d);
        m->tool = tg_check_tool(d);
        if (digest)
            memcpy(m->args_digest, digest, TG_HASH_HEX);
    }
    return rc;
}
