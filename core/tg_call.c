/*
 * tg_call.c -- tool calls in the shapes the SDKs emit: toolgate's own call,
 * an OpenAI Chat Completions tool call (alone, in a bare array, in a
 * message, in a whole response), a Responses API function_call item (alone
 * or in a response), an Anthropic tool_use block (alone or in a message),
 * an MCP tools/call request (alone or in a JSON-RPC batch).
 *
 * Decoding only finds each call's (server, name, arguments, id); it judges
 * nothing but the shape, and it reads every call object strictly: a member
 * its format does not define, a required member that is missing, a line
 * that carries the members of two formats, a kind of call toolgate cannot
 * gate -- each is an error, never a call read one way while an executor
 * reads it another.  The member lists follow the SDKs' types (see
 * toolgate.h, "Tool calls"); spec/sdk/make-fixtures.mjs checks them against
 * the .d.ts files of the installed SDKs.
 */
#include "tg_internal.h"

#include <stdio.h>

struct tg_call_t {
    tg_calls_t *set;          /* the line it was read from */
    tg_doc_t *args_doc;       /* an arguments string, parsed; else NULL */
    const tg_value_t *object; /* the call object inside the line */
    const char *server;       /* NULL when the call names none */
    size_t server_len;
    const char *name;
    size_t name_len;
    const tg_value_t *args;
    const tg_value_t *id;
    int format;
    int owner; /* made by tg_call_decode: freeing it frees the set */
};

struct tg_calls_t {
    tg_doc_t *doc; /* the line; this struct and the calls live in its arena */
    const tg_value_t *context;
    tg_call_t *calls;
    size_t count, cap;
    int shape;
};

/* MCP's absent arguments: a read-only empty object. */
static const tg_value_t empty_object = {.type = TG_OBJECT};

/* What one decode needs at every level. */
typedef struct reader {
    tg_engine_t *e;
    tg_calls_t *set;
    tg_error_t *err;
} reader;

#define WHAT_MAX 112 /* "choices[N].message.tool_calls[N] (an OpenAI tool call)" */

/* The member k of obj, or NULL; k is a string literal (the "" around it
 * say so to the compiler), so its length is known without a strlen. */
#define member(obj, k) tg_get((obj), "" k "", sizeof(k) - 1)

/* A member key the readers know, its length worked out by the compiler:
 * telling a key is then a compare of lengths and, when they agree, one
 * memcmp, with no strlen per member per call. */
typedef struct member_key {
    const char *s;
    size_t len;
} member_key;
/* clang-format off */
#define KEY(k) {"" k "", sizeof(k) - 1}
/* clang-format on */

static inline int key_equal(const char *key, size_t len, const member_key *k)
{
    return len == k->len && memcmp(key, k->s, len) == 0;
}

static const member_key CONTEXT_KEY = KEY("context");

/* key (len bytes) is s; the first byte decides most comparisons with
 * the lists of type names below without a strlen. */
static inline int key_is(const char *key, size_t len, const char *s)
{
    return (len ? key[0] == s[0] : s[0] == '\0') && len == strlen(s) && memcmp(key, s, len) == 0;
}

/* v is the string s.  Inlined, so a literal s costs no strlen. */
static inline int is_string_equal(const tg_value_t *v, const char *s)
{
    return v && v->type == TG_STRING && key_is(v->p.str, v->len, s);
}

/* The index of the string v in the NULL-terminated list, or -1. */
static int string_in(const tg_value_t *v, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (is_string_equal(v, list[i]))
            return i;
    return -1;
}

static size_t at_of(const tg_value_t *v, const tg_value_t *fallback)
{
    return v ? tg_offset(v) : fallback ? tg_offset(fallback) : 0;
}

/* "where (kind)" for a call inside an envelope, "kind" for a line's root. */
static const char *describe(char out[WHAT_MAX], const char *where, const char *kind)
{
    if (!where)
        return kind;
    snprintf(out, WHAT_MAX, "%s (%s)", where, kind);
    return out;
}

/* ---- the set ---------------------------------------------------------------- */

static tg_call_t *add_call(reader *r, int format, const tg_value_t *obj)
{
    tg_calls_t *s = r->set;
    tg_call_t *c;
    if (s->count == s->cap) {
        /* geometric growth inside the arena: the old array stays there,
         * which at most doubles what the calls take */
        size_t cap = s->cap ? 2 * s->cap : 4;
        tg_call_t *grown = tg_arena_alloc(&s->doc->arena, cap * sizeof *grown);
        if (!grown) {
            tg_fail(r->err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
            return NULL;
        }
        if (s->count)
            memcpy(grown, s->calls, s->count * sizeof *grown);
        s->calls = grown;
        s->cap = cap;
    }
    c = &s->calls[s->count++];
    memset(c, 0, sizeof *c);
    c->set = s;
    c->format = format;
    c->object = obj;
    return c;
}

/* ---- strict members ---------------------------------------------------------- */

/* A key short and plain enough to quote in a message as it is. */
static int printable_key(const char *key, size_t len)
{
    if (len == 0 || len > 48)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (key[i] < 0x20 || key[i] > 0x7e || key[i] == '"' || key[i] == '\\')
            return 0;
    return 1;
}

/* Every member of the object obj must be one of the n keys allowed;
 * found[k] is then the value of allowed[k], or NULL (one pass: no lookups
 * after it).  The root object of a one-call line may also carry "context",
 * which the caller judges (tg_call_context): it is kept in the set, so
 * that nothing looks it up again. */
static int only_members(reader *r, const tg_value_t *obj, const member_key *allowed, size_t n,
                        int root, const char *what, const tg_value_t **found)
{
    for (size_t k = 0; k < n; k++)
        found[k] = NULL;
    /* the members read in place: every caller has checked obj is an object */
    for (size_t i = 0; i < obj->len; i++) {
        const tg_value_t *m = &obj->p.items[i];
        size_t k = 0;
        if (root && key_equal(m->key, m->key_len, &CONTEXT_KEY)) {
            r->set->context = m;
            continue;
        }
        while (k < n && !key_equal(m->key, m->key_len, &allowed[k]))
            k++;
        if (k < n) {
            found[k] = m;
            continue;
        }
        if (printable_key(m->key, m->key_len))
            return tg_fail(r->err, TG_E_BAD_CALL, m->offset, "unknown member \"%.*s\" in %s",
                           (int)m->key_len, m->key, what);
        return tg_fail(r->err, TG_E_BAD_CALL, m->offset,
                       "an unknown member (its key is not plain ASCII) in %s", what);
    }
    return TG_OK;
}

/* The tool name v (member key of obj): a non-empty string, else BAD_CALL. */
static int take_name(reader *r, tg_call_t *c, const tg_value_t *v, const tg_value_t *obj,
                     const char *key, const char *what)
{
    c->name = tg_str(v, &c->name_len);
    if (!c->name || c->name_len == 0)
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(v, obj),
                       "%s must have a non-empty string \"%s\"", what, key);
    return TG_OK;
}

/* A member naming the call's server (native "server", Responses
 * "namespace", Anthropic "toolset_name"): absent, or a string ("" is the
 * registry's server of tools tied to none); null too where the SDK type
 * allows it. */
static int take_server(reader *r, tg_call_t *c, const tg_value_t *v, const char *key, int null_ok,
                       const char *what)
{
    if (!v || (null_ok && tg_type_of(v) == TG_NULL))
        return TG_OK;
    c->server = tg_str(v, &c->server_len);
    if (!c->server)
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(v), "\"%s\" in %s must be a %s", key, what,
                       null_ok ? "string or null" : "string");
    return TG_OK;
}

/* Arguments given as a JSON value.  Absent arguments are an error where the
 * format requires them; MCP alone makes them optional (then {}). */
static int take_args_value(reader *r, tg_call_t *c, const tg_value_t *v, const tg_value_t *holder,
                           const char *key, int optional, const char *what)
{
    if (!v) {
        if (!optional)
            return tg_fail(r->err, TG_E_BAD_CALL, at_of(holder, NULL),
                           "%s must have \"%s\" (a JSON object)", what, key);
        c->args = &empty_object;
        return TG_OK;
    }
    if (tg_type_of(v) != TG_OBJECT)
        return tg_fail(r->err, TG_E_BAD_ARGUMENTS, tg_offset(v),
                       "\"%s\" in %s must be a JSON object", key, what);
    c->args = v;
    return TG_OK;
}

/* The OpenAI arguments string args (member key of holder): JSON text
 * inside a JSON string, parsed under the same limits (an object is taken
 * too: some clients send it decoded). */
static int parse_args_string(reader *r, tg_call_t *c, const tg_value_t *args,
                             const tg_value_t *holder, const char *key, const char *what)
{
    const char *text;
    size_t len;
    int rc;

    if (!args)
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(holder),
                       "%s must have \"%s\" (a string holding a JSON object)", what, key);
    if (tg_type_of(args) == TG_OBJECT)
        return take_args_value(r, c, args, holder, key, 0, what);
    text = tg_str(args, &len);
    if (!text)
        return tg_fail(r->err, TG_E_BAD_ARGUMENTS, tg_offset(args),
                       "\"%s\" in %s must be a string holding a JSON object", key, what);
    rc = tg_parse(r->e, text, len, &c->args_doc, r->err);
    /* Out of memory is the engine's failure, not the call's: say so (the
     * call is refused either way). */
    if (rc == TG_E_NOMEM)
        return rc;
    if (rc != TG_OK) {
        if (r->err) {
            char inner[TG_ERROR_MESSAGE_MAX];
            size_t at = r->err->offset, used, n;
            memcpy(inner, r->err->message, sizeof inner);
            tg_fail(r->err, TG_E_BAD_ARGUMENTS, tg_offset(args),
                    "\"%s\" in %s is not valid JSON: %s at byte %zu of the string: ", key, what,
                    tg_code_name(rc), at);
            /* the inner message may quote the model's bytes: cut it after
             * a whole UTF-8 character */
            used = strlen(r->err->message);
            n = strlen(inner);
            if (n > sizeof r->err->message - 1 - used) {
                n = sizeof r->err->message - 1 - used;
                while (n > 0 && ((unsigned char)inner[n] & 0xC0) == 0x80)
                    n--;
            }
            memcpy(r->err->message + used, inner, n);
            r->err->message[used + n] = '\0';
        }
        return TG_E_BAD_ARGUMENTS;
    }
    return take_args_value(r, c, tg_doc_root(c->args_doc), holder, key, 0, what);
}

/* OpenAI arguments, and the reading the SDK's parse helpers add beside
 * them (ParsedFunction, ParsedResponseFunctionToolCall): parsed_arguments
 * is null or the same value, else an executor may run either. */
static int take_args_string(reader *r, tg_call_t *c, const tg_value_t *args,
                            const tg_value_t *parsed, const tg_value_t *holder, const char *key,
                            const char *what)
{
    int rc = parse_args_string(r, c, args, holder, key, what);
    if (rc == TG_OK && parsed && tg_type_of(parsed) != TG_NULL && !tg_value_equal(parsed, c->args))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(parsed),
                       "\"parsed_arguments\" in %s is not what \"%s\" holds: refusing to guess",
                       what, key);
    return rc;
}

/* ---- one call ---------------------------------------------------------------- */

/* The member lists: what each SDK type defines (make-fixtures.mjs checks
 * them), in the order of the enums that index only_members' found[]. */
/* clang-format off */
enum { N_SERVER, N_NAME, N_ARGUMENTS, N_ID, N_END };
static const member_key NATIVE_MEMBERS[N_END] = {
    [N_SERVER] = KEY("server"), [N_NAME] = KEY("name"), [N_ARGUMENTS] = KEY("arguments"),
    [N_ID] = KEY("id")};
/* clang-format on */

static int read_native(reader *r, const tg_value_t *obj, int root)
{
    static const char what[] = "a native call";
    const tg_value_t *m[N_END];
    tg_call_t *c = add_call(r, TG_FORMAT_NATIVE, obj);
    int rc;
    if (!c)
        return TG_E_NOMEM;
    if ((rc = only_members(r, obj, NATIVE_MEMBERS, N_END, root, what, m)) != TG_OK)
        return rc;
    if ((rc = take_server(r, c, m[N_SERVER], "server", 0, what)) != TG_OK)
        return rc;
    c->id = m[N_ID];
    if ((rc = take_name(r, c, m[N_NAME], obj, "name", what)) != TG_OK)
        return rc;
    return take_args_value(r, c, m[N_ARGUMENTS], obj, "arguments", 0, what);
}

/* clang-format off */
enum { O_ID, O_TYPE, O_FUNCTION, O_END };
static const member_key OPENAI_MEMBERS[O_END] = {
    [O_ID] = KEY("id"), [O_TYPE] = KEY("type"), [O_FUNCTION] = KEY("function")};
/* clang-format on */
/* clang-format off */
enum { F_NAME, F_ARGUMENTS, F_PARSED, F_END };
static const member_key OPENAI_FUNCTION_MEMBERS[F_END] = {
    [F_NAME] = KEY("name"), [F_ARGUMENTS] = KEY("arguments"),
    [F_PARSED] = KEY("parsed_arguments")};
/* clang-format on */

/* A custom tool call's input is free text for the client's own parser:
 * there are no JSON arguments to check. */
static int refuse_custom(reader *r, const tg_value_t *obj, const char *what)
{
    return tg_fail(r->err, TG_E_UNSUPPORTED_CALL, tg_offset(obj),
                   "%s is a custom tool call (free-text input): toolgate checks only function "
                   "calls with JSON arguments",
                   what);
}

/* A Chat Completions tool call (ChatCompletionMessageFunctionToolCall). */
static int read_openai(reader *r, const tg_value_t *obj, int root, const char *where)
{
    char buf[WHAT_MAX];
    const char *what = describe(buf, where, "an OpenAI tool call");
    const tg_value_t *m[O_END], *f[F_END];
    tg_call_t *c;
    int rc;

    if (is_string_equal(member(obj, "type"), "custom"))
        return refuse_custom(r, obj, what);
    if ((rc = only_members(r, obj, OPENAI_MEMBERS, O_END, root, what, m)) != TG_OK)
        return rc;
    if (m[O_TYPE] && !is_string_equal(m[O_TYPE], "function"))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(m[O_TYPE]),
                       "%s must have \"type\": \"function\"", what);
    if (tg_type_of(m[O_FUNCTION]) != TG_OBJECT)
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(m[O_FUNCTION], obj),
                       "%s must have \"function\" as an object", what);
    if (!(c = add_call(r, TG_FORMAT_OPENAI, obj)))
        return TG_E_NOMEM;
    c->id = m[O_ID];
    if ((rc = only_members(r, m[O_FUNCTION], OPENAI_FUNCTION_MEMBERS, F_END, 0, what, f)) != TG_OK)
        return rc;
    if ((rc = take_name(r, c, f[F_NAME], m[O_FUNCTION], "name", what)) != TG_OK)
        return rc;
    return take_args_string(r, c, f[F_ARGUMENTS], f[F_PARSED], m[O_FUNCTION], "arguments", what);
}

/* clang-format off */
enum { FC_TYPE, FC_ID, FC_CALL_ID, FC_NAME, FC_ARGUMENTS, FC_STATUS, FC_CALLER, FC_NAMESPACE, FC_PARSED, FC_END };
static const member_key FUNCTION_CALL_MEMBERS[FC_END] = {
    [FC_TYPE] = KEY("type"), [FC_ID] = KEY("id"), [FC_CALL_ID] = KEY("call_id"),
    [FC_NAME] = KEY("name"), [FC_ARGUMENTS] = KEY("arguments"), [FC_STATUS] = KEY("status"),
    [FC_CALLER] = KEY("caller"), [FC_NAMESPACE] = KEY("namespace"),
    [FC_PARSED] = KEY("parsed_arguments")};
/* clang-format on */

/* A Responses API function_call item (ResponseFunctionToolCall, and the
 * parse helpers' ParsedResponseFunctionToolCall).  Its namespace is the
 * group of tools the function belongs to: the call's server.  The id is
 * call_id, the one a function_call_output answers. */
static int read_function_call(reader *r, const tg_value_t *obj, int root, const char *where)
{
    char buf[WHAT_MAX];
    const char *what = describe(buf, where, "an OpenAI function_call item");
    const tg_value_t *m[FC_END];
    tg_call_t *c;
    int rc;

    if ((rc = only_members(r, obj, FUNCTION_CALL_MEMBERS, FC_END, root, what, m)) != TG_OK)
        return rc;
    if (!is_string_equal(m[FC_TYPE], "function_call"))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(obj),
                       "%s must have \"type\": \"function_call\"", what);
    if (!tg_str(m[FC_CALL_ID], NULL))
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(m[FC_CALL_ID], obj),
                       "%s must have a string \"call_id\"", what);
    if (!(c = add_call(r, TG_FORMAT_OPENAI, obj)))
        return TG_E_NOMEM;
    c->id = m[FC_CALL_ID];
    if ((rc = take_server(r, c, m[FC_NAMESPACE], "namespace", 0, what)) != TG_OK)
        return rc;
    if ((rc = take_name(r, c, m[FC_NAME], obj, "name", what)) != TG_OK)
        return rc;
    return take_args_string(r, c, m[FC_ARGUMENTS], m[FC_PARSED], obj, "arguments", what);
}

/* clang-format off */
enum { T_TYPE, T_ID, T_NAME, T_INPUT, T_CALLER, T_TOOLSET, T_CACHE, T_END };
static const member_key TOOL_USE_MEMBERS[T_END] = {
    [T_TYPE] = KEY("type"), [T_ID] = KEY("id"), [T_NAME] = KEY("name"), [T_INPUT] = KEY("input"),
    [T_CALLER] = KEY("caller"), [T_TOOLSET] = KEY("toolset_name"),
    [T_CACHE] = KEY("cache_control")};
/* clang-format on */

/* An Anthropic tool_use block (ToolUseBlock; cache_control from
 * ToolUseBlockParam, as a logged request carries it).  toolset_name is
 * the toolset the tool belongs to: the call's server. */
static int read_tool_use(reader *r, const tg_value_t *obj, int root, const char *where)
{
    char buf[WHAT_MAX];
    const char *what = describe(buf, where, "an Anthropic tool_use block");
    const tg_value_t *m[T_END];
    tg_call_t *c;
    int rc;

    if ((rc = only_members(r, obj, TOOL_USE_MEMBERS, T_END, root, what, m)) != TG_OK)
        return rc;
    if (!is_string_equal(m[T_TYPE], "tool_use"))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(obj), "%s must have \"type\": \"tool_use\"",
                       what);
    if (!(c = add_call(r, TG_FORMAT_ANTHROPIC, obj)))
        return TG_E_NOMEM;
    c->id = m[T_ID];
    if ((rc = take_server(r, c, m[T_TOOLSET], "toolset_name", 1, what)) != TG_OK)
        return rc;
    if ((rc = take_name(r, c, m[T_NAME], obj, "name", what)) != TG_OK)
        return rc;
    return take_args_value(r, c, m[T_INPUT], obj, "input", 0, what);
}

/* clang-format off */
enum { M_JSONRPC, M_ID, M_METHOD, M_PARAMS, M_END };
static const member_key MCP_MEMBERS[M_END] = {
    [M_JSONRPC] = KEY("jsonrpc"), [M_ID] = KEY("id"), [M_METHOD] = KEY("method"),
    [M_PARAMS] = KEY("params")};
/* clang-format on */
/* clang-format off */
enum { P_NAME, P_ARGUMENTS, P_META, P_TASK, P_END };
static const member_key MCP_PARAMS_MEMBERS[P_END] = {
    [P_NAME] = KEY("name"), [P_ARGUMENTS] = KEY("arguments"), [P_META] = KEY("_meta"),
    [P_TASK] = KEY("task")};
/* clang-format on */

/* An MCP tools/call request (JSON-RPC 2.0; CallToolRequestParams). */
static int read_mcp(reader *r, const tg_value_t *obj, int root, const char *where)
{
    char buf[WHAT_MAX];
    const char *what = describe(buf, where, "an MCP request");
    const tg_value_t *m[M_END], *p[P_END];
    tg_call_t *c;
    int rc;

    if ((rc = only_members(r, obj, MCP_MEMBERS, M_END, root, what, m)) != TG_OK)
        return rc;
    if (!is_string_equal(m[M_JSONRPC], "2.0"))
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(m[M_JSONRPC], obj),
                       "%s must have \"jsonrpc\": \"2.0\"", what);
    if (!is_string_equal(m[M_METHOD], "tools/call"))
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(m[M_METHOD], obj),
                       "%s must have \"method\": \"tools/call\"", what);
    if (tg_type_of(m[M_PARAMS]) != TG_OBJECT)
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(m[M_PARAMS], obj),
                       "%s must have \"params\" as an object", what);
    if (!(c = add_call(r, TG_FORMAT_MCP, obj)))
        return TG_E_NOMEM;
    c->id = m[M_ID];
    if ((rc = only_members(r, m[M_PARAMS], MCP_PARAMS_MEMBERS, P_END, 0, what, p)) != TG_OK)
        return rc;
    if ((rc = take_name(r, c, p[P_NAME], m[M_PARAMS], "name", what)) != TG_OK)
        return rc;
    return take_args_value(r, c, p[P_ARGUMENTS], m[M_PARAMS], "arguments", 1, what);
}

/* ---- envelopes ----------------------------------------------------------------- */

/* What an envelope's items are, by their "type": a call, something that is
 * no call (skipped), or a call toolgate cannot gate: one the provider runs
 * itself, or one whose input is not JSON arguments (refused, naming it). */
enum {
    ITEM_CALL,
    ITEM_SKIP
};

/* Responses API output items (ResponseOutputItem). */
/* clang-format off */
static const char *const RESPONSE_SKIP[] = {
    "message", "reasoning", "compaction", "additional_tools", "function_call_output",
    "computer_call_output", "local_shell_call_output", "shell_call_output",
    "apply_patch_call_output", "custom_tool_call_output", "program_output",
    "tool_search_output", "mcp_list_tools", "mcp_approval_response", NULL};
static const char *const RESPONSE_HOSTED[] = {
    "file_search_call", "web_search_call", "image_generation_call", "code_interpreter_call",
    "mcp_call", "mcp_approval_request", "tool_search_call", NULL};
static const char *const RESPONSE_CLIENT_OTHER[] = {
    "computer_call", "local_shell_call", "shell_call", "apply_patch_call", "custom_tool_call",
    "program", NULL};

/* Anthropic Messages content blocks (ContentBlock, BetaContentBlock). */
static const char *const MESSAGE_SKIP[] = {
    "text", "thinking", "redacted_thinking", "web_search_tool_result", "web_fetch_tool_result",
    "advisor_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "tool_search_tool_result", "mcp_tool_result",
    "container_upload", "compaction", "fallback", "mcp_tool_listing", NULL};
static const char *const MESSAGE_HOSTED[] = {"server_tool_use", "mcp_tool_use", NULL};
/* clang-format on */

/* The item at where (an element of an envelope's array): an object with a
 * string "type", classified by the lists. */
static int classify(reader *r, const tg_value_t *item, const char *where, const char *call_type,
                    const char *const *skip, const char *const *hosted,
                    const char *const *client_other, const char *provider, int *kind)
{
    const tg_value_t *type = member(item, "type");
    size_t len;
    const char *t = tg_str(type, &len);
    int i;
    if (tg_type_of(item) != TG_OBJECT || !t)
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(item, NULL),
                       "%s must be an object with a string \"type\"", where);
    *kind = ITEM_CALL;
    if (is_string_equal(type, call_type))
        return TG_OK;
    *kind = ITEM_SKIP;
    if (string_in(type, skip) >= 0)
        return TG_OK;
    if ((i = string_in(type, hosted)) >= 0)
        return tg_fail(r->err, TG_E_UNSUPPORTED_CALL, tg_offset(item),
                       "%s is of type %s, a call %s runs itself: toolgate gates the calls your "
                       "code runs (%s)",
                       where, hosted[i], provider, call_type);
    if (client_other && (i = string_in(type, client_other)) >= 0)
        return tg_fail(r->err, TG_E_UNSUPPORTED_CALL, tg_offset(item),
                       "%s is of type %s, a call without JSON arguments to check: toolgate gates "
                       "%s calls",
                       where, client_other[i], call_type);
    if (printable_key(t, len))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(type), "%s has an unknown type \"%.*s\"",
                       where, (int)len, t);
    return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(type),
                   "%s has an unknown type (not plain ASCII)", where);
}

/* An array member of an envelope: absent (and null where allowed) holds
 * nothing; anything but an array is an error. */
static int array_member(reader *r, const tg_value_t *obj, const char *key, int required,
                        const char *what, const tg_value_t **out)
{
    const tg_value_t *v = tg_get(obj, key, strlen(key));
    *out = NULL;
    if (!required && (!v || tg_type_of(v) == TG_NULL))
        return TG_OK;
    if (tg_type_of(v) != TG_ARRAY)
        return tg_fail(r->err, TG_E_BAD_CALL, at_of(v, obj), "%s must have \"%s\" as an array",
                       what, key);
    *out = v;
    return TG_OK;
}

/* Role of a model's message: absent or "assistant". */
static int assistant_role(reader *r, const tg_value_t *obj, const char *what)
{
    const tg_value_t *role = member(obj, "role");
    if (role && !is_string_equal(role, "assistant"))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(role),
                       "%s must have \"role\": \"assistant\" (a model's message)", what);
    return TG_OK;
}

/* A Chat Completions message (ChatCompletionMessage).  Read: tool_calls,
 * and role, content, function_call so that nothing in them is a call
 * another reader would run; the rest (refusal, annotations, audio, name)
 * is metadata. */
static int read_openai_message(reader *r, const tg_value_t *msg, const char *where)
{
    char what[WHAT_MAX], at[WHAT_MAX];
    const tg_value_t *calls, *content = member(msg, "content"), *fc = member(msg, "function_call");
    int rc;

    snprintf(what, sizeof what, "%s%san OpenAI message", where ? where : "", where ? ", " : "");
    if ((rc = assistant_role(r, msg, what)) != TG_OK)
        return rc;
    /* an array of parts is a request's form; it could hold another
     * format's blocks */
    if (content && tg_type_of(content) != TG_NULL && tg_type_of(content) != TG_STRING)
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(content),
                       "\"content\" of %s must be a string or null", what);
    if (fc && tg_type_of(fc) != TG_NULL)
        return tg_fail(r->err, TG_E_UNSUPPORTED_CALL, tg_offset(fc),
                       "%s carries a function_call (deprecated function calling): toolgate reads "
                       "tool_calls",
                       what);
    if ((rc = array_member(r, msg, "tool_calls", 0, what, &calls)) != TG_OK || !calls)
        return rc;
    for (size_t i = 0; i < tg_len(calls); i++) {
        const tg_value_t *call = tg_at(calls, i);
        snprintf(at, sizeof at, "%s%stool_calls[%zu]", where ? where : "", where ? "." : "", i);
        if (tg_type_of(call) != TG_OBJECT)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(call), "%s must be an object", at);
        if ((rc = read_openai(r, call, 0, at)) != TG_OK)
            return rc;
    }
    return TG_OK;
}

/* A Chat Completions response (ChatCompletion): the calls of every
 * choice's message, in order.  Its other members are metadata. */
static int read_openai_chat(reader *r, const tg_value_t *root)
{
    const tg_value_t *choices;
    char where[WHAT_MAX];
    int rc = array_member(r, root, "choices", 1, "a chat.completion", &choices);
    for (size_t i = 0; rc == TG_OK && i < tg_len(choices); i++) {
        const tg_value_t *choice = tg_at(choices, i), *msg = member(choice, "message");
        snprintf(where, sizeof where, "choices[%zu].message", i);
        if (tg_type_of(msg) != TG_OBJECT)
            return tg_fail(r->err, TG_E_BAD_CALL, at_of(msg, choice),
                           "choices[%zu] must be an object with \"message\" as an object", i);
        rc = read_openai_message(r, msg, where);
    }
    return rc;
}

/* A Responses API response (Response): its function_call items, in order. */
static int read_openai_responses(reader *r, const tg_value_t *root)
{
    const tg_value_t *output;
    char where[WHAT_MAX];
    int kind, rc = array_member(r, root, "output", 1, "a response", &output);
    for (size_t i = 0; rc == TG_OK && i < tg_len(output); i++) {
        const tg_value_t *item = tg_at(output, i);
        snprintf(where, sizeof where, "output[%zu]", i);
        rc = classify(r, item, where, "function_call", RESPONSE_SKIP, RESPONSE_HOSTED,
                      RESPONSE_CLIENT_OTHER, "OpenAI", &kind);
        if (rc == TG_OK && kind == ITEM_CALL)
            rc = read_function_call(r, item, 0, where);
    }
    return rc;
}

/* An Anthropic Messages response (Message): its tool_use blocks, in order. */
static int read_anthropic_message(reader *r, const tg_value_t *root)
{
    const tg_value_t *content;
    char where[WHAT_MAX];
    int kind, rc = assistant_role(r, root, "an Anthropic message");
    if (rc == TG_OK)
        rc = array_member(r, root, "content", 1, "an Anthropic message", &content);
    for (size_t i = 0; rc == TG_OK && i < tg_len(content); i++) {
        const tg_value_t *block = tg_at(content, i);
        snprintf(where, sizeof where, "content[%zu]", i);
        rc = classify(r, block, where, "tool_use", MESSAGE_SKIP, MESSAGE_HOSTED, NULL, "Anthropic",
                      &kind);
        if (rc == TG_OK && kind == ITEM_CALL)
            rc = read_tool_use(r, block, 0, where);
    }
    return rc;
}

/* A bare array of calls of one format (OpenAI tool_calls, an MCP batch). */
static int read_array(reader *r, const tg_value_t *arr, int format)
{
    char where[WHAT_MAX];
    int rc = TG_OK;
    for (size_t i = 0; rc == TG_OK && i < tg_len(arr); i++) {
        const tg_value_t *el = tg_at(arr, i);
        snprintf(where, sizeof where, "[%zu]", i);
        if (tg_type_of(el) != TG_OBJECT)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(el), "%s must be an object", where);
        rc = format == TG_FORMAT_MCP ? read_mcp(r, el, 0, where) : read_openai(r, el, 0, where);
    }
    return rc;
}

/* ---- shapes and formats ------------------------------------------------------- */

/* An envelope's shape.  The "context" of a line belongs to its root: an
 * envelope's members are not read strictly, so it is looked up here (a
 * call object's reader meets it in its one pass, only_members). */
static void envelope(reader *r, const tg_value_t *root, int shape)
{
    r->set->shape = shape;
    r->set->context = member(root, "context");
}

/* What an array element that holds calls rather than being one is: a
 * response or a message (NULL: neither). */
static const char *envelope_name(const tg_value_t *el)
{
    const tg_value_t *object = member(el, "object");
    if (is_string_equal(object, "chat.completion"))
        return "an OpenAI chat.completion";
    if (is_string_equal(object, "response"))
        return "an OpenAI Responses API response";
    if (is_string_equal(member(el, "type"), "message"))
        return "an Anthropic message";
    if (member(el, "role"))
        return "a chat message";
    return NULL;
}

/* An array of responses or messages (jq -s of saved responses, a
 * conversation) is no SDK's shape of calls: at a line's root an array is a
 * tool_calls list or an MCP batch.  Said as what it is, not as a call
 * with unknown members. */
static int refuse_envelopes(reader *r, const tg_value_t *root)
{
    for (size_t i = 0; i < tg_len(root); i++) {
        const tg_value_t *el = tg_at(root, i);
        const char *name = tg_type_of(el) == TG_OBJECT ? envelope_name(el) : NULL;
        if (name)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(el),
                           "[%zu] is %s: an array of responses or messages (as jq -s makes) is "
                           "not one call shape; give one per line (jq -c '.[]')",
                           i, name);
    }
    return TG_OK;
}

/* The shape of a line read as format, and the reading. */
static int read_format(reader *r, const tg_value_t *root, int format)
{
    tg_calls_t *s = r->set;
    const tg_value_t *object, *type;
    int rc;

    if (tg_type_of(root) == TG_ARRAY) {
        if ((rc = refuse_envelopes(r, root)) != TG_OK)
            return rc;
        if (format == TG_FORMAT_MCP) {
            s->shape = TG_SHAPE_MCP_BATCH;
            /* JSON-RPC 2.0: an empty batch is an invalid request */
            if (tg_len(root) == 0)
                return tg_fail(r->err, TG_E_BAD_CALL, 0, "an empty JSON-RPC batch");
            return read_array(r, root, format);
        }
        if (format == TG_FORMAT_OPENAI) {
            s->shape = TG_SHAPE_OPENAI_TOOL_CALLS;
            return read_array(r, root, format);
        }
        return tg_fail(r->err, TG_E_BAD_CALL, 0,
                       "an array is an OpenAI tool_calls array or an MCP batch, not a %s call",
                       format == TG_FORMAT_NATIVE ? "native" : "Anthropic");
    }
    if (tg_type_of(root) != TG_OBJECT)
        return tg_fail(r->err, TG_E_BAD_CALL, 0, "a call must be a JSON object or array");
    switch (format) {
    case TG_FORMAT_MCP:
        s->shape = TG_SHAPE_MCP;
        return read_mcp(r, root, 1, NULL);
    case TG_FORMAT_ANTHROPIC:
        type = member(root, "type");
        if (is_string_equal(type, "message")) {
            envelope(r, root, TG_SHAPE_ANTHROPIC_MESSAGE);
            return read_anthropic_message(r, root);
        }
        s->shape = TG_SHAPE_ANTHROPIC;
        if (string_in(type, MESSAGE_HOSTED) >= 0)
            return tg_fail(r->err, TG_E_UNSUPPORTED_CALL, 0,
                           "a block of type %s is a call Anthropic runs itself: toolgate gates the "
                           "calls your code runs (tool_use)",
                           MESSAGE_HOSTED[string_in(type, MESSAGE_HOSTED)]);
        return read_tool_use(r, root, 1, NULL);
    case TG_FORMAT_OPENAI:
        object = member(root, "object");
        if (object) {
            if (is_string_equal(object, "chat.completion")) {
                envelope(r, root, TG_SHAPE_OPENAI_CHAT);
                return read_openai_chat(r, root);
            }
            if (is_string_equal(object, "response")) {
                envelope(r, root, TG_SHAPE_OPENAI_RESPONSES);
                return read_openai_responses(r, root);
            }
            if (is_string_equal(object, "chat.completion.chunk"))
                return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(object),
                               "a chat.completion.chunk holds part of a call: check the whole "
                               "completion once the stream is done");
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(object),
                           "\"object\" must be \"chat.completion\" or \"response\"");
        }
        type = member(root, "type");
        if (is_string_equal(type, "function_call")) {
            s->shape = TG_SHAPE_OPENAI_FUNCTION_CALL;
            return read_function_call(r, root, 1, NULL);
        }
        if (member(root, "tool_calls") || member(root, "function_call") ||
            member(root, "refusal") || member(root, "role")) {
            envelope(r, root, TG_SHAPE_OPENAI_MESSAGE);
            return read_openai_message(r, root, NULL);
        }
        s->shape = TG_SHAPE_OPENAI;
        if (member(root, "custom"))
            return refuse_custom(r, root, "an OpenAI tool call");
        return read_openai(r, root, 1, NULL);
    default:
        s->shape = TG_SHAPE_NATIVE;
        return read_native(r, root, 1);
    }
}

/* ---- auto: which format, by the members only that format has -------------- */

static const char *const FAMILY_NAMES[] = {
    [TG_FORMAT_NATIVE] = "a native call",
    [TG_FORMAT_OPENAI] = "an OpenAI tool call",
    [TG_FORMAT_ANTHROPIC] = "an Anthropic tool_use block",
    [TG_FORMAT_MCP] = "an MCP request",
};

/* Members that only one format defines, at a line's root (a call or an
 * envelope), in the order of the formats.  "name", "id", "content",
 * "role", "caller" are shared and decide nothing; "type" and "arguments"
 * decide by what goes with them (claims). */
/* clang-format off */
static const struct {
    member_key key;
    int format;
} CLAIMS[] = {
    {KEY("server"), TG_FORMAT_NATIVE},
    {KEY("function"), TG_FORMAT_OPENAI}, {KEY("custom"), TG_FORMAT_OPENAI},
    {KEY("choices"), TG_FORMAT_OPENAI}, {KEY("tool_calls"), TG_FORMAT_OPENAI},
    {KEY("function_call"), TG_FORMAT_OPENAI}, {KEY("refusal"), TG_FORMAT_OPENAI},
    {KEY("output"), TG_FORMAT_OPENAI}, {KEY("call_id"), TG_FORMAT_OPENAI},
    {KEY("namespace"), TG_FORMAT_OPENAI}, {KEY("object"), TG_FORMAT_OPENAI},
    {KEY("input"), TG_FORMAT_ANTHROPIC}, {KEY("toolset_name"), TG_FORMAT_ANTHROPIC},
    {KEY("cache_control"), TG_FORMAT_ANTHROPIC},
    {KEY("jsonrpc"), TG_FORMAT_MCP}, {KEY("method"), TG_FORMAT_MCP}, {KEY("params"), TG_FORMAT_MCP},
};
/* clang-format on */
static const member_key TYPE_KEY = KEY("type"), ARGUMENTS_KEY = KEY("arguments");
static const char *const OPENAI_TYPES[] = {"function", "function_call", "custom", NULL};
static const char *const ANTHROPIC_TYPES[] = {"tool_use", "message", "server_tool_use",
                                              "mcp_tool_use", NULL};

/* The formats whose members the object obj carries, as bits
 * (1 << format), with the member that showed each.  One pass over obj's
 * members, which finds "type" too: no lookup after it. */
static unsigned claims(const tg_value_t *obj, const char *shown[TG_FORMAT_MCP + 1])
{
    const tg_value_t *type = NULL;
    unsigned bits = 0;
    int has_arguments = 0;
#define CLAIM(f, why)                                                                              \
    do {                                                                                           \
        if (!(bits & (1u << (f))))                                                                 \
            shown[f] = (why);                                                                      \
        bits |= 1u << (f);                                                                         \
    } while (0)
    for (size_t i = 0; i < obj->len; i++) {
        const tg_value_t *m = &obj->p.items[i];
        if (key_equal(m->key, m->key_len, &TYPE_KEY)) {
            type = m;
            continue;
        }
        if (key_equal(m->key, m->key_len, &ARGUMENTS_KEY)) {
            has_arguments = 1;
            continue;
        }
        for (size_t k = 0; k < sizeof CLAIMS / sizeof CLAIMS[0]; k++)
            if (key_equal(m->key, m->key_len, &CLAIMS[k].key)) {
                CLAIM(CLAIMS[k].format, CLAIMS[k].key.s);
                break;
            }
    }
    /* a native call has no "type": its lists are not read for nothing */
    if (type && string_in(type, OPENAI_TYPES) >= 0)
        CLAIM(TG_FORMAT_OPENAI, "type");
    if (type && string_in(type, ANTHROPIC_TYPES) >= 0)
        CLAIM(TG_FORMAT_ANTHROPIC, "type");
    /* top-level arguments are a native call's, except in a Responses
     * function_call item, which has its own */
    if (has_arguments && !is_string_equal(type, "function_call"))
        CLAIM(TG_FORMAT_NATIVE, "arguments");
#undef CLAIM
    return bits;
}

/* The one format obj's members show, or an error: none (not a call) or
 * several (never guessed). */
static int detect_object(reader *r, const tg_value_t *obj, const char *where, int *format)
{
    const char *shown[TG_FORMAT_MCP + 1] = {0};
    unsigned bits = claims(obj, shown);
    int first = 0;

    for (int f = TG_FORMAT_NATIVE; f <= TG_FORMAT_MCP; f++) {
        if (!(bits & (1u << f)))
            continue;
        if (first)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(obj),
                           "%s%smembers of both %s (\"%s\") and %s (\"%s\"): refusing to guess",
                           where ? where : "", where ? ": " : "", FAMILY_NAMES[first], shown[first],
                           FAMILY_NAMES[f], shown[f]);
        first = f;
    }
    if (!first && member(obj, "name"))
        first = TG_FORMAT_NATIVE; /* {"name"} alone: a native call lacking arguments */
    if (!first && member(obj, "messages"))
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(obj),
                       "%s%sa request to a model (it has \"messages\"), not a tool call: the "
                       "calls are in its response; its tools (.tools) are a registry (jq .tools "
                       "FILE > tools.json; --registry tools.json)",
                       where ? where : "", where ? ": " : "");
    if (!first)
        return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(obj),
                       "%s%snot a tool call: expected a native call {\"name\", \"arguments\"}, an "
                       "OpenAI tool call or response, an Anthropic tool_use block or message, or "
                       "an MCP tools/call request",
                       where ? where : "", where ? ": " : "");
    *format = first;
    return TG_OK;
}

/* The format of a line under auto.  An array's elements must all show the
 * same format, one that has arrays (OpenAI, MCP). */
static int detect(reader *r, const tg_value_t *root, int *format)
{
    char where[WHAT_MAX];
    int rc, f;
    if (tg_type_of(root) == TG_OBJECT)
        return detect_object(r, root, NULL, format);
    if (tg_type_of(root) != TG_ARRAY)
        return tg_fail(r->err, TG_E_BAD_CALL, 0, "a call must be a JSON object or array");
    if (tg_len(root) == 0)
        return tg_fail(r->err, TG_E_BAD_CALL, 0,
                       "an empty array: neither a tool_calls array nor an MCP batch can be told");
    if ((rc = refuse_envelopes(r, root)) != TG_OK)
        return rc;
    for (size_t i = 0; i < tg_len(root); i++) {
        const tg_value_t *el = tg_at(root, i);
        snprintf(where, sizeof where, "[%zu]", i);
        if (tg_type_of(el) != TG_OBJECT)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(el), "%s must be an object", where);
        if ((rc = detect_object(r, el, where, &f)) != TG_OK)
            return rc;
        if (i == 0 && f != TG_FORMAT_OPENAI && f != TG_FORMAT_MCP)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(el),
                           "[0] is %s: an array must hold OpenAI tool calls or MCP requests",
                           FAMILY_NAMES[f]);
        if (i > 0 && f != *format)
            return tg_fail(r->err, TG_E_BAD_CALL, tg_offset(el),
                           "%s is %s but [0] is %s: refusing to guess", where, FAMILY_NAMES[f],
                           FAMILY_NAMES[*format]);
        *format = f;
    }
    return TG_OK;
}

/* ---- public ---------------------------------------------------------------------- */

int tg_calls_decode(tg_engine_t *e, const char *json, size_t len, int format, tg_calls_t **out,
                    tg_error_t *err)
{
    tg_doc_t *doc;
    tg_calls_t *s;
    reader r = {e, NULL, err};
    int rc;

    *out = NULL;
    if (format < TG_FORMAT_AUTO || format > TG_FORMAT_MCP)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "unknown call format %d", format);
    if ((rc = tg_parse(e, json, len, &doc, err)) != TG_OK)
        return rc;
    s = tg_arena_alloc(&doc->arena, sizeof *s);
    if (!s) {
        tg_doc_free(doc);
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    }
    memset(s, 0, sizeof *s);
    s->doc = doc;
    r.set = s;
    if (format == TG_FORMAT_AUTO)
        rc = detect(&r, tg_doc_root(doc), &format);
    if (rc == TG_OK)
        rc = read_format(&r, tg_doc_root(doc), format);
    if (rc != TG_OK) {
        tg_calls_free(s);
        return rc;
    }
    *out = s;
    return TG_OK;
}

void tg_calls_free(tg_calls_t *s)
{
    if (s) {
        for (size_t i = 0; i < s->count; i++)
            tg_doc_free(s->calls[i].args_doc);
        tg_doc_free(s->doc); /* s and its calls live in this arena */
    }
}

size_t tg_calls_count(const tg_calls_t *s)
{
    return s->count;
}

const tg_call_t *tg_calls_at(const tg_calls_t *s, size_t i)
{
    return i < s->count ? &s->calls[i] : NULL;
}

int tg_calls_shape(const tg_calls_t *s)
{
    return s->shape;
}

const char *tg_call_shape_name(int shape)
{
    static const char *const names[] = {
        [TG_SHAPE_NATIVE] = "native",
        [TG_SHAPE_OPENAI] = "openai",
        [TG_SHAPE_OPENAI_TOOL_CALLS] = "openai-tool-calls",
        [TG_SHAPE_OPENAI_MESSAGE] = "openai-message",
        [TG_SHAPE_OPENAI_CHAT] = "openai-chat",
        [TG_SHAPE_OPENAI_FUNCTION_CALL] = "openai-function-call",
        [TG_SHAPE_OPENAI_RESPONSES] = "openai-responses",
        [TG_SHAPE_ANTHROPIC] = "anthropic",
        [TG_SHAPE_ANTHROPIC_MESSAGE] = "anthropic-message",
        [TG_SHAPE_MCP] = "mcp",
        [TG_SHAPE_MCP_BATCH] = "mcp-batch",
    };
    if (shape < 0 || (size_t)shape >= sizeof names / sizeof names[0])
        return "unknown";
    return names[shape];
}

int tg_call_decode(tg_engine_t *e, const char *json, size_t len, int format, tg_call_t **out,
                   tg_error_t *err)
{
    tg_calls_t *s;
    int rc = tg_calls_decode(e, json, len, format, &s, err);
    *out = NULL;
    if (rc != TG_OK)
        return rc;
    if (s->count != 1) {
        rc = tg_fail(err, TG_E_BAD_CALL, 0,
                     "the line (%s) holds %zu calls: tg_call_decode reads exactly one, "
                     "tg_calls_decode reads them all",
                     tg_call_shape_name(s->shape), s->count);
        tg_calls_free(s);
        return rc;
    }
    s->calls[0].owner = 1;
    *out = &s->calls[0];
    return TG_OK;
}

void tg_call_free(tg_call_t *c)
{
    if (c && c->owner)
        tg_calls_free(c->set);
}

int tg_call_format_of(const tg_call_t *c)
{
    return c->format;
}

int tg_call_shape(const tg_call_t *c)
{
    return c->set->shape;
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

const tg_value_t *tg_call_object(const tg_call_t *c)
{
    return c->object;
}

const tg_value_t *tg_call_context(const tg_call_t *c)
{
    return c->set->context;
}
