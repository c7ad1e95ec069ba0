/*
 * tg_call.c -- tool calls in the formats users have: toolgate's own, an
 * OpenAI tool call, an Anthropic tool_use block, an MCP tools/call request.
 *
 * Decoding only finds (server, name, arguments, id); it judges nothing but
 * the shape.  Whatever cannot be read as a call is an error, never a call
 * with empty arguments: the rung must not see a half-decoded call.
 */
#include "tg_internal.h"

struct tg_call_t {
    tg_doc_t *doc;      /* the envelope; this struct lives in its arena */
    tg_doc_t *args_doc; /* OpenAI: the parsed arguments string, else NULL */
    int format;
    const char *server; /* NULL when the call names none */
    size_t server_len;
    const char *name;
    size_t name_len;
    const tg_value_t *args;
    const tg_value_t *id;
    const tg_value_t *context; /* a "context" member of the call object, or NULL */
};

/* Absent arguments mean "no arguments": a read-only empty object. */
static const tg_value_t empty_object = {.type = TG_OBJECT};

static const tg_value_t *member(const tg_value_t *obj, const char *key)
{
    return tg_get(obj, key, strlen(key));
}

static int is_string_equal(const tg_value_t *v, const char *s)
{
    size_t len;
    const char *str = tg_str(v, &len);
    return str && len == strlen(s) && memcmp(str, s, len) == 0;
}

/* The tool name at obj[key]: a non-empty string, else BAD_CALL. */
static int take_name(tg_call_t *c, const tg_value_t *obj, const char *key, const char *where,
                     tg_error_t *err)
{
    const tg_value_t *v = member(obj, key);
    c->name = tg_str(v, &c->name_len);
    if (!c->name || c->name_len == 0)
        return tg_fail(err, TG_E_BAD_CALL, v ? tg_offset(v) : tg_offset(obj),
                       "%s must have a non-empty string \"%s\"", where, key);
    return TG_OK;
}

/* Arguments given as a JSON value: an object, or absent (then {}). */
static int take_args_value(tg_call_t *c, const tg_value_t *v, const char *what, tg_error_t *err)
{
    if (!v) {
        c->args = &empty_object;
        return TG_OK;
    }
    if (tg_type_of(v) != TG_OBJECT)
        return tg_fail(err, TG_E_BAD_ARGUMENTS, tg_offset(v), "%s must be a JSON object", what);
    c->args = v;
    return TG_OK;
}

static int decode_mcp(tg_call_t *c, const tg_value_t *root, tg_error_t *err)
{
    const tg_value_t *method = member(root, "method"), *params = member(root, "params");
    int rc;
    if (!is_string_equal(method, "tools/call"))
        return tg_fail(err, TG_E_BAD_CALL, method ? tg_offset(method) : 0,
                       "an MCP request must have \"method\": \"tools/call\"");
    if (tg_type_of(params) != TG_OBJECT)
        return tg_fail(err, TG_E_BAD_CALL, params ? tg_offset(params) : 0,
                       "an MCP tools/call request must have \"params\" as an object");
    c->id = member(root, "id");
    if ((rc = take_name(c, params, "name", "params", err)) != TG_OK)
        return rc;
    return take_args_value(c, member(params, "arguments"), "params.arguments", err);
}

static int decode_anthropic(tg_call_t *c, const tg_value_t *root, tg_error_t *err)
{
    int rc;
    if (!is_string_equal(member(root, "type"), "tool_use"))
        return tg_fail(err, TG_E_BAD_CALL, 0,
                       "an Anthropic tool call must have \"type\": \"tool_use\"");
    c->id = member(root, "id");
    if ((rc = take_name(c, root, "name", "a tool_use block", err)) != TG_OK)
        return rc;
    return take_args_value(c, member(root, "input"), "input", err);
}

/* function.arguments is JSON text inside a JSON string: parse it under the
 * same limits.  Some clients send it already decoded; an object is taken. */
static int decode_openai(tg_engine_t *e, tg_call_t *c, const tg_value_t *root, tg_error_t *err)
{
    const tg_value_t *fn = member(root, "function"), *args;
    const char *text;
    size_t len;
    int rc;

    if (tg_type_of(fn) != TG_OBJECT)
        return tg_fail(err, TG_E_BAD_CALL, 0,
                       "an OpenAI tool call must have \"function\" as an object");
    c->id = member(root, "id");
    if ((rc = take_name(c, fn, "name", "function", err)) != TG_OK)
        return rc;
    args = member(fn, "arguments");
    if (!args)
        return tg_fail(err, TG_E_BAD_ARGUMENTS, tg_offset(fn),
                       "function.arguments is missing (it must be a JSON string)");
    if (tg_type_of(args) == TG_OBJECT)
        return take_args_value(c, args, "function.arguments", err);
    text = tg_str(args, &len);
    if (!text)
        return tg_fail(err, TG_E_BAD_ARGUMENTS, tg_offset(args),
                       "function.arguments must be a string holding a JSON object");
    rc = tg_parse(e, text, len, &c->args_doc, err);
    /* Out of memory is the engine's failure, not the call's: say so (the
     * call is refused either way). */
    if (rc == TG_E_NOMEM)
        return rc;
    if (rc != TG_OK) {
        if (err) {
            char inner[TG_ERROR_MESSAGE_MAX];
            size_t at = err->offset;
            memcpy(inner, err->message, sizeof inner);
            tg_fail(err, TG_E_BAD_ARGUMENTS, tg_offset(args),
                    "function.arguments is not valid JSON: %s at byte %zu of the string: %.120s",
                    tg_code_name(rc), at, inner);
        }
        return TG_E_BAD_ARGUMENTS;
    }
    return take_args_value(c, tg_doc_root(c->args_doc), "function.arguments", err);
}

static int decode_native(tg_call_t *c, const tg_value_t *root, tg_error_t *err)
{
    const tg_value_t *server = member(root, "server");
    int rc;
    if (server) {
        c->server = tg_str(server, &c->server_len);
        if (!c->server)
            return tg_fail(err, TG_E_BAD_CALL, tg_offset(server), "\"server\" must be a string");
    }
    c->id = member(root, "id");
    if ((rc = take_name(c, root, "name", "a call", err)) != TG_OK)
        return rc;
    return take_args_value(c, member(root, "arguments"), "arguments", err);
}

/* Which format a call is in, by the members only that format has. */
static int detect(const tg_value_t *root)
{
    if (member(root, "jsonrpc") || member(root, "method"))
        return TG_FORMAT_MCP;
    if (is_string_equal(member(root, "type"), "tool_use"))
        return TG_FORMAT_ANTHROPIC;
    if (member(root, "function"))
        return TG_FORMAT_OPENAI;
    if (member(root, "name"))
        return TG_FORMAT_NATIVE;
    return TG_FORMAT_AUTO;
}

int tg_call_decode(tg_engine_t *e, const char *json, size_t len, int format, tg_call_t **out,
                   tg_error_t *err)
{
    tg_doc_t *doc;
    tg_call_t *c;
    const tg_value_t *root;
    int rc;

    *out = NULL;
    if (format < TG_FORMAT_AUTO || format > TG_FORMAT_MCP)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "unknown call format %d", format);
    if ((rc = tg_parse(e, json, len, &doc, err)) != TG_OK)
        return rc;
    c = tg_arena_alloc(&doc->arena, sizeof *c);
    if (!c) {
        tg_doc_free(doc);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    memset(c, 0, sizeof *c);
    c->doc = doc;
    root = tg_doc_root(doc);
    if (tg_type_of(root) != TG_OBJECT) {
        tg_doc_free(doc);
        return tg_fail(err, TG_E_BAD_CALL, 0, "a call must be a JSON object");
    }
    if (format == TG_FORMAT_AUTO && (format = detect(root)) == TG_FORMAT_AUTO) {
        tg_doc_free(doc);
        return tg_fail(err, TG_E_BAD_CALL, 0,
                       "not a tool call: expected an MCP tools/call request, an Anthropic "
                       "tool_use block, an OpenAI tool call or {\"name\", \"arguments\"}");
    }
    c->format = format;
    c->context = member(root, "context");
    switch (format) {
    case TG_FORMAT_MCP:
        rc = decode_mcp(c, root, err);
        break;
    case TG_FORMAT_ANTHROPIC:
        rc = decode_anthropic(c, root, err);
        break;
    case TG_FORMAT_OPENAI:
        rc = decode_openai(e, c, root, err);
        break;
    default:
        rc = decode_native(c, root, err);
        break;
    }
    if (rc != TG_OK) {
        tg_call_free(c);
        return rc;
    }
    *out = c;
    return TG_OK;
}

void tg_call_free(tg_call_t *c)
{
    if (c) {
        tg_doc_free(c->args_doc);
        tg_doc_free(c->doc); /* c itself lives in this arena */
    }
}

int tg_call_format_of(const tg_call_t *c)
{
    return c->format;
}

const char *tg_call_server(const tg_call_t *c, size_t *len)
{
    if (len)
        *len = c->server_len;
    return c->server;
}

const char *tg_call_name(const tg_call_t *c, size_t *len)
{
    if (len)
        *len = c->name_len;
    return c->name;
}

const tg_value_t *tg_call_arguments(const tg_call_t *c)
{
    return c->args;
}

const tg_value_t *tg_call_id(const tg_call_t *c)
{
    return c->id;
}

const tg_value_t *tg_call_context(const tg_call_t *c)
{
    return c->context;
}
