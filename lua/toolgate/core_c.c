/*
 * core_c.c -- the Lua 5.4 C-API binding of the toolgate core
 * (require "toolgate.core_c"; normally reached through "toolgate.core").
 *
 * This is the only file that touches lua_State.  It mirrors core_ffi.lua
 * function for function, so both bindings give the same bytes; the specs
 * check that.
 *
 * Memory rule: nothing malloc'd is held across a call that may raise a Lua
 * error.  The engine and its reusable output buffer live in a full userdata
 * whose __gc frees them; a parse's arena is freed before anything is pushed.
 *
 * Errors: wrong argument types raise (luaL_check*); bad data returns
 * nil, message, CODE, byte_offset (offset counts from 0).
 */
#include <lauxlib.h>
#include <lua.h>

#include <string.h>

#include "toolgate.h"

#define ENGINE_MT "toolgate.core.engine"
#define DOC_MT "toolgate.core.doc"
#define NODE_MT "toolgate.core.node"
#define CALL_MT "toolgate.core.call"
#define CALLS_MT "toolgate.core.calls"
#define SCHEMA_MT "toolgate.core.schema"
#define REGISTRY_MT "toolgate.core.registry"
#define NORM_MT "toolgate.core.norm"
#define POLICY_MT "toolgate.core.policy"
#define CONTEXT_MT "toolgate.core.context"
#define DECIDER_MT "toolgate.core.decider"
#define PENDING_MT "toolgate.core.pending"
#define WORKERS_MT "toolgate.core.workers"
#define STORE_MT "toolgate.core.store"
#define SWEEP_MT "toolgate.core.sweep"
#define READER_MT "toolgate.core.reader"
#define IMAGE_MT "toolgate.core.image"

typedef struct {
    tg_engine_t *e;
    tg_buf_t out;                                /* reused by every call on this engine */
    tg_rung_result_t rung;                       /* scratch for registry:check */
    tg_finding_t findings[TG_RUNG_MAX_FINDINGS]; /* scratch for schema:validate */
} engine_ud;

/* Objects made from an engine are full userdata whose first user value is
 * the engine userdata (so the engine and its scratch outlive them); a node's
 * second user value is what owns its memory (a document or a call). */
typedef struct {
    tg_doc_t *d;
} doc_ud;
typedef struct {
    const tg_value_t *v;
} node_ud;
typedef struct {
    tg_call_t *c;
    int view; /* from calls:at, its set the second user value; else from decode_call */
} call_ud;
typedef struct {
    tg_calls_t *s;
} calls_ud;
typedef struct {
    tg_schema_t *s;
} schema_ud;
typedef struct {
    tg_registry_t *r;
} registry_ud;
typedef struct {
    tg_norm_t *n;
} norm_ud;
typedef struct {
    tg_image_t *img;
} image_ud;
typedef struct {
    tg_policy_t *p;
} policy_ud;
typedef struct {
    tg_store_t *s;
} store_ud;
typedef struct {
    tg_context_t *c;
} context_ud;
/* User values: 1 the engine, 2 the policy (which outlives it). */
typedef struct {
    tg_sweep_t *s;
} sweep_ud;
/* A check's work space: a check that pauses in the host holds it until it
 * is done.  User values: 1 the engine, 2 the owner of the nodes of the
 * check in progress (a pending_ud, cleared when the next check starts). */
typedef struct {
    tg_decider_t *d;
    tg_outcome_t out;
    tg_buf_t batch; /* check_lines' decisions */
} decider_ud;
typedef struct {
    tg_decider_t *d;
} pending_ud;
typedef struct {
    tg_workers_t *w;
} workers_ud;
typedef struct {
    tg_reader_t *r;
} reader_ud;

static engine_ud *check_engine(lua_State *L, int i)
{
    engine_ud *u = luaL_checkudata(L, i, ENGINE_MT);
    if (!u->e)
        luaL_error(L, "toolgate engine already freed");
    return u;
}

/* Pushes nil, message, CODE[, offset]; returns the count. */
static int push_error(lua_State *L, const tg_error_t *err, int with_offset)
{
    lua_pushnil(L);
    lua_pushstring(L, err->message);
    lua_pushstring(L, tg_code_name(err->code));
    if (!with_offset)
        return 3;
    if (err->offset == TG_NO_OFFSET)
        lua_pushnil(L);
    else
        lua_pushinteger(L, (lua_Integer)err->offset);
    return 4;
}

/* Like luaL_checklstring, but a number is not a string here: the FFI
 * binding cannot coerce, and both bindings must behave alike. */
static const char *check_string(lua_State *L, int i, size_t *len)
{
    if (lua_type(L, i) != LUA_TSTRING)
        luaL_typeerror(L, i, "string");
    return lua_tolstring(L, i, len);
}

/* ---- limits tables --------------------------------------------------------- */

static const char *const limit_names[] = {
    "max_input_bytes",
    "max_depth",
    "max_string_bytes",
    "max_members",
    "max_items",
    "regex_match_limit",
    "max_validation_steps",
    "max_pattern_bytes",
    "max_regex_steps",
    "max_registry_bytes",
    NULL,
};

static size_t *limit_field(tg_limits_t *l, int i)
{
    size_t *f[] = {&l->max_input_bytes,      &l->max_depth,         &l->max_string_bytes,
                   &l->max_members,          &l->max_items,         &l->regex_match_limit,
                   &l->max_validation_steps, &l->max_pattern_bytes, &l->max_regex_steps,
                   &l->max_registry_bytes};
    return f[i];
}

/* Overlays the fields present in the table at index idx onto *l.  Unknown
 * keys and non-integer values are misuse and raise. */
static void read_limits(lua_State *L, int idx, tg_limits_t *l)
{
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int i, isint;
        lua_Integer v;
        if (lua_type(L, -2) != LUA_TSTRING)
            luaL_error(L, "limits: keys must be strings");
        for (i = 0; limit_names[i]; i++)
            if (strcmp(limit_names[i], lua_tostring(L, -2)) == 0)
                break;
        if (!limit_names[i])
            luaL_error(L, "limits: unknown limit '%s'", lua_tostring(L, -2));
        v = lua_tointegerx(L, -1, &isint);
        if (!isint || v < 0)
            luaL_error(L, "limits: %s must be a non-negative integer", limit_names[i]);
        *limit_field(l, i) = (size_t)v;
        lua_pop(L, 1);
    }
}

static void push_limits(lua_State *L, const tg_limits_t *l)
{
    tg_limits_t copy = *l;
    lua_createtable(L, 0, 7);
    for (int i = 0; limit_names[i]; i++) {
        lua_pushinteger(L, (lua_Integer)*limit_field(&copy, i));
        lua_setfield(L, -2, limit_names[i]);
    }
}

/* ---- engine ------------------------------------------------------------------ */

/* new_engine([limits]) -> engine | nil, message, code */
static int l_new_engine(lua_State *L)
{
    tg_limits_t lim;
    tg_error_t err;
    engine_ud *u;

    tg_limits_default(&lim);
    if (!lua_isnoneornil(L, 1))
        read_limits(L, 1, &lim);
    u = lua_newuserdatauv(L, sizeof *u, 0);
    u->e = NULL;
    u->out.data = NULL;
    luaL_setmetatable(L, ENGINE_MT);
    u->e = tg_engine_new(&lim, NULL, NULL, &err);
    if (!u->e)
        return push_error(L, &err, 0); /* no offset for engine errors */
    tg_buf_init(&u->out, u->e);
    return 1;
}

static int l_engine_gc(lua_State *L)
{
    engine_ud *u = luaL_checkudata(L, 1, ENGINE_MT);
    if (u->e) {
        tg_buf_free(&u->out);
        tg_engine_free(u->e);
        u->e = NULL;
    }
    return 0;
}

static int l_engine_limits(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_limits_t lim;
    tg_engine_limits(u->e, &lim);
    push_limits(L, &lim);
    return 1;
}

/* engine:set_limits(t) -> true | nil, message, code */
static int l_engine_set_limits(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_limits_t lim;
    tg_error_t err;
    tg_engine_limits(u->e, &lim);
    read_limits(L, 2, &lim);
    if (tg_engine_set_limits(u->e, &lim, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    return 1;
}

/* engine:canon(text) -> canonical | nil, message, code, offset */
static int l_engine_canon(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    tg_error_t err;
    tg_buf_reset(&u->out);
    if (tg_canon(u->e, s, len, &u->out, &err) != TG_OK)
        return push_error(L, &err, 1);
    lua_pushlstring(L, u->out.data, u->out.len);
    return 1;
}

/* engine:hash(text) -> 32 hex digits of XXH3-128(canonical) | nil, ... */
static int l_engine_hash(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    tg_error_t err;
    char hex[TG_HASH_HEX];
    tg_buf_reset(&u->out);
    if (tg_canon(u->e, s, len, &u->out, &err) != TG_OK)
        return push_error(L, &err, 1);
    tg_hash128_t h;
    tg_hash128(u->out.data, u->out.len, &h);
    tg_hash128_hex(&h, hex);
    lua_pushlstring(L, hex, 32);
    return 1;
}

/* ---- documents and nodes ------------------------------------------------------ */

static const char *const type_names[] = {"null",   "boolean", "boolean", "number",
                                         "string", "array",   "object"};
static const char *const format_names[] = {"auto", "native", "openai", "anthropic", "mcp", NULL};
static const char *const resolution_names[] = {"resolved", "unknown", "ambiguous"};

/* Pushes a new userdata of size sz with metatable mt and the engine at
 * index eng as its first user value (n user values in all). */
static void *new_child(lua_State *L, size_t sz, const char *mt, int eng, int n)
{
    void *p;
    eng = lua_absindex(L, eng);
    p = lua_newuserdatauv(L, sz, n);
    memset(p, 0, sz);
    luaL_setmetatable(L, mt);
    lua_pushvalue(L, eng);
    lua_setiuservalue(L, -2, 1);
    return p;
}

/* Pushes a node for v (or nil), owned by the object at index owner, whose
 * first user value is the engine. */
static int push_node(lua_State *L, const tg_value_t *v, int owner)
{
    node_ud *n;
    owner = lua_absindex(L, owner);
    if (!v) {
        lua_pushnil(L);
        return 1;
    }
    lua_getiuservalue(L, owner, 1);
    n = new_child(L, sizeof *n, NODE_MT, -1, 2);
    lua_remove(L, -2);
    n->v = v;
    lua_pushvalue(L, owner);
    lua_setiuservalue(L, -2, 2);
    return 1;
}

/* A node is usable while what owns its memory (a document or a call, whose
 * userdata both start with the C pointer) has not been freed. */
static void check_alive(lua_State *L, int i)
{
    void **owner;
    lua_getiuservalue(L, i, 2);
    owner = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (!owner || !*owner)
        luaL_error(L, "toolgate node used after its document was freed");
}

static node_ud *check_node(lua_State *L, int i)
{
    node_ud *n = luaL_checkudata(L, i, NODE_MT);
    check_alive(L, i);
    return n;
}

static const tg_value_t *opt_node(lua_State *L, int i)
{
    if (lua_isnoneornil(L, i))
        return NULL;
    return check_node(L, i)->v;
}

/* The engine behind an object made from it. */
static engine_ud *engine_of(lua_State *L, int i)
{
    engine_ud *u;
    lua_getiuservalue(L, i, 1);
    u = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return u;
}

/* engine:parse(text) -> doc | nil, message, code, offset */
static int l_engine_parse(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    tg_error_t err;
    doc_ud *d = new_child(L, sizeof *d, DOC_MT, 1, 1);
    if (tg_parse(u->e, s, len, &d->d, &err) != TG_OK)
        return push_error(L, &err, 1);
    return 1;
}

/* engine:parse_registry(text) -> doc | nil, message, code, offset */
static int l_engine_parse_registry(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    tg_error_t err;
    doc_ud *d = new_child(L, sizeof *d, DOC_MT, 1, 1);
    if (tg_parse_registry(u->e, s, len, &d->d, &err) != TG_OK)
        return push_error(L, &err, 1);
    return 1;
}

static int l_doc_gc(lua_State *L)
{
    doc_ud *d = luaL_checkudata(L, 1, DOC_MT);
    tg_doc_free(d->d);
    d->d = NULL;
    return 0;
}

static int l_doc_root(lua_State *L)
{
    doc_ud *d = luaL_checkudata(L, 1, DOC_MT);
    if (!d->d)
        luaL_error(L, "toolgate document used after it was freed");
    return push_node(L, tg_doc_root(d->d), 1);
}

static int l_node_type(lua_State *L)
{
    lua_pushstring(L, type_names[tg_type_of(check_node(L, 1)->v)]);
    return 1;
}

static int l_node_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_len(check_node(L, 1)->v));
    return 1;
}

static int l_node_offset(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_offset(check_node(L, 1)->v));
    return 1;
}

/* node:at(i) -> the i-th element or member value (from 1), or nil */
static int l_node_at(lua_State *L)
{
    node_ud *n = check_node(L, 1);
    lua_Integer i = luaL_checkinteger(L, 2);
    if (i < 1)
        return lua_pushnil(L), 1;
    lua_getiuservalue(L, 1, 2);
    push_node(L, tg_at(n->v, (size_t)(i - 1)), -1);
    return 1;
}

static int l_node_key(lua_State *L)
{
    node_ud *n = check_node(L, 1);
    lua_Integer i = luaL_checkinteger(L, 2);
    size_t len;
    const char *k = i >= 1 ? tg_key_at(n->v, (size_t)(i - 1), &len) : NULL;
    if (!k)
        return lua_pushnil(L), 1;
    lua_pushlstring(L, k, len);
    return 1;
}

static int l_node_get(lua_State *L)
{
    node_ud *n = check_node(L, 1);
    size_t len;
    const char *k = check_string(L, 2, &len);
    lua_getiuservalue(L, 1, 2);
    push_node(L, tg_get(n->v, k, len), -1);
    return 1;
}

/* node:has_key(name) -> whether it or anything inside it has a member name */
static int l_node_has_key(lua_State *L)
{
    node_ud *n = check_node(L, 1);
    size_t len;
    const char *k = check_string(L, 2, &len);
    lua_pushboolean(L, tg_has_key(n->v, k, len));
    return 1;
}

/* node:value() -> the Lua value of a scalar; nil for null and containers */
static int l_node_value(lua_State *L)
{
    const tg_value_t *v = check_node(L, 1)->v;
    size_t len;
    const char *str;
    switch (tg_type_of(v)) {
    case TG_FALSE:
        lua_pushboolean(L, 0);
        break;
    case TG_TRUE:
        lua_pushboolean(L, 1);
        break;
    case TG_NUMBER:
        lua_pushnumber(L, (lua_Number)tg_num(v));
        break;
    case TG_STRING:
        str = tg_str(v, &len);
        lua_pushlstring(L, str, len);
        break;
    default:
        lua_pushnil(L);
    }
    return 1;
}

static int l_node_text(lua_State *L)
{
    size_t len;
    const char *t = tg_num_text(check_node(L, 1)->v, &len);
    if (!t)
        return lua_pushnil(L), 1;
    lua_pushlstring(L, t, len);
    return 1;
}

static const tg_norm_t *opt_norm(lua_State *L, int i);

/* The canonical mode named at index i: nil or "rfc8785", "exact" (enum
 * tg_canon_mode); misuse raises. */
static int opt_mode(lua_State *L, int i)
{
    static const char *const names[] = {"rfc8785", "exact", NULL};
    return luaL_checkoption(L, i, "rfc8785", names);
}

/* Writes node 1's canonical form (norm at 2, mode at 3) into the engine's
 * buffer; 0 when it could not (the error values are then pushed: 4). */
static int write_canon(lua_State *L, engine_ud **u)
{
    node_ud *n = check_node(L, 1);
    const tg_norm_t *plan = opt_norm(L, 2);
    int mode = opt_mode(L, 3);
    tg_error_t err;
    *u = engine_of(L, 1);
    tg_buf_reset(&(*u)->out);
    if (tg_canon_normalized(plan, n->v, mode, &(*u)->out, &err) != TG_OK)
        return push_error(L, &err, 1), 0;
    return 1;
}

/* node:canon([norm[, mode]]) -> canonical form (normalized by norm; mode
 * "rfc8785", the default, or "exact": TG_CANON_EXACT) | nil, ... */
static int l_node_canon(lua_State *L)
{
    engine_ud *u;
    if (!write_canon(L, &u))
        return 4;
    lua_pushlstring(L, u->out.data, u->out.len);
    return 1;
}

/* node:digest([norm[, mode]]) -> the XXH3-128 of the canonical form as a
 * 16-byte token (the hash's in-memory bytes: compare tokens, do not print
 * them; for engine:agree without hex round trips) | nil, ... */
static int l_node_digest(lua_State *L)
{
    engine_ud *u;
    tg_hash128_t h;
    if (!write_canon(L, &u))
        return 4;
    tg_hash128(u->out.data, u->out.len, &h);
    lua_pushlstring(L, (const char *)&h, sizeof h);
    return 1;
}

/* node:hash([norm[, mode]]) -> 32 hex digits of XXH3-128(canonical form) | nil, ... */
static int l_node_hash(lua_State *L)
{
    engine_ud *u;
    tg_hash128_t h;
    char hex[TG_HASH_HEX];
    if (!write_canon(L, &u))
        return 4;
    tg_hash128(u->out.data, u->out.len, &h);
    tg_hash128_hex(&h, hex);
    lua_pushlstring(L, hex, 32);
    return 1;
}

/* node:exact() -> a number's exact form (TG_CANON_EXACT) when its double
 * does not spell it; false when it does (node:value() is then exact); nil
 * for anything else | nil, message, code, offset */
static int l_node_exact(lua_State *L)
{
    const tg_value_t *v = check_node(L, 1)->v;
    engine_ud *u = engine_of(L, 1);
    tg_error_t err;
    if (tg_type_of(v) != TG_NUMBER)
        return lua_pushnil(L), 1;
    if (tg_num_round_trips(v))
        return lua_pushboolean(L, 0), 1;
    tg_buf_reset(&u->out);
    if (tg_canon_value_mode(v, TG_CANON_EXACT, &u->out, &err) != TG_OK)
        return push_error(L, &err, 1);
    lua_pushlstring(L, u->out.data, u->out.len);
    return 1;
}

/* ---- calls ------------------------------------------------------------------- */

/* engine:decode_call(text[, format]) -> call | nil, message, code, offset */
static int l_engine_decode_call(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    int format = luaL_checkoption(L, 3, "auto", format_names);
    tg_error_t err;
    call_ud *c = new_child(L, sizeof *c, CALL_MT, 1, 1);
    if (tg_call_decode(u->e, s, len, format, &c->c, &err) != TG_OK)
        return push_error(L, &err, 1);
    return 1;
}

/* engine:decode_calls(text[, format]) -> calls | nil, message, code, offset */
static int l_engine_decode_calls(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    int format = luaL_checkoption(L, 3, "auto", format_names);
    tg_error_t err;
    calls_ud *cs = new_child(L, sizeof *cs, CALLS_MT, 1, 1);
    if (tg_calls_decode(u->e, s, len, format, &cs->s, &err) != TG_OK)
        return push_error(L, &err, 1);
    return 1;
}

static int l_calls_gc(lua_State *L)
{
    calls_ud *cs = luaL_checkudata(L, 1, CALLS_MT);
    tg_calls_free(cs->s);
    cs->s = NULL;
    return 0;
}

static tg_calls_t *check_calls(lua_State *L)
{
    calls_ud *cs = luaL_checkudata(L, 1, CALLS_MT);
    if (!cs->s)
        luaL_error(L, "toolgate calls used after they were freed");
    return cs->s;
}

static int l_calls_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_calls_count(check_calls(L)));
    return 1;
}

static int l_calls_shape(lua_State *L)
{
    lua_pushstring(L, tg_call_shape_name(tg_calls_shape(check_calls(L))));
    return 1;
}

/* calls:at(i) -> call (i from 1), a view that lives as long as the set | nil */
static int l_calls_at(lua_State *L)
{
    tg_calls_t *s = check_calls(L);
    lua_Integer i;
    if (lua_type(L, 2) != LUA_TNUMBER) /* no string coercion: as in the FFI binding */
        luaL_typeerror(L, 2, "number");
    i = luaL_checkinteger(L, 2);
    const tg_call_t *v = i >= 1 ? tg_calls_at(s, (size_t)(i - 1)) : NULL;
    call_ud *c;
    if (!v)
        return lua_pushnil(L), 1;
    lua_getiuservalue(L, 1, 1);
    c = new_child(L, sizeof *c, CALL_MT, -1, 2);
    lua_remove(L, -2);
    memcpy(&c->c, &v, sizeof v); /* a view: never freed through it */
    c->view = 1;
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 2);
    return 1;
}

/* A view is freed with its set, never by itself. */
static int l_call_gc(lua_State *L)
{
    call_ud *c = luaL_checkudata(L, 1, CALL_MT);
    if (!c->view)
        tg_call_free(c->c);
    c->c = NULL;
    return 0;
}

static tg_call_t *check_call(lua_State *L)
{
    call_ud *c = luaL_checkudata(L, 1, CALL_MT);
    if (c->view) {
        calls_ud *set;
        lua_getiuservalue(L, 1, 2);
        set = lua_touserdata(L, -1);
        lua_pop(L, 1);
        if (!set->s)
            c->c = NULL;
    }
    if (!c->c)
        luaL_error(L, "toolgate call used after it was freed");
    return c->c;
}

/* Pushes the node v of call 1: a view's nodes belong to its set. */
static int push_call_node(lua_State *L, const tg_value_t *v)
{
    if (!((call_ud *)lua_touserdata(L, 1))->view)
        return push_node(L, v, 1);
    lua_getiuservalue(L, 1, 2);
    push_node(L, v, -1);
    lua_remove(L, -2);
    return 1;
}

static int push_lstring_or_nil(lua_State *L, const char *s, size_t len)
{
    if (s)
        lua_pushlstring(L, s, len);
    else
        lua_pushnil(L);
    return 1;
}

static int l_call_format(lua_State *L)
{
    lua_pushstring(L, format_names[tg_call_format_of(check_call(L))]);
    return 1;
}

static int l_call_shape(lua_State *L)
{
    lua_pushstring(L, tg_call_shape_name(tg_call_shape(check_call(L))));
    return 1;
}

static int l_call_server(lua_State *L)
{
    size_t len;
    const char *s = tg_call_server(check_call(L), &len);
    return push_lstring_or_nil(L, s, len);
}

static int l_call_name(lua_State *L)
{
    size_t len;
    const char *s = tg_call_name(check_call(L), &len);
    return push_lstring_or_nil(L, s, len);
}

static int l_call_arguments(lua_State *L)
{
    return push_call_node(L, tg_call_arguments(check_call(L)));
}

static int l_call_id(lua_State *L)
{
    return push_call_node(L, tg_call_id(check_call(L)));
}

static int l_call_context(lua_State *L)
{
    return push_call_node(L, tg_call_context(check_call(L)));
}

/* ---- schemas ------------------------------------------------------------------ */

/* The list of strings in field of the table at index i, as a
 * NULL-terminated array in a userdata anchored (with the strings) in the
 * table at index anchor; NULL when the field is nil. */
static const char *const *read_string_list(lua_State *L, int i, const char *field, int anchor)
{
    const char **list = NULL;
    if (lua_getfield(L, i, field) != LUA_TNIL) {
        lua_Integer n;
        if (!lua_istable(L, -1))
            luaL_error(L, "schema options: %s must be a list", field);
        n = luaL_len(L, -1);
        if (n < 0 || (lua_Unsigned)n >= SIZE_MAX / sizeof *list)
            luaL_error(L, "schema options: %s is too long", field);
        list = lua_newuserdatauv(L, ((size_t)n + 1) * sizeof *list, 0);
        lua_rawsetp(L, anchor, list);
        for (lua_Integer k = 1; k <= n; k++) {
            if (lua_geti(L, -1, k) != LUA_TSTRING)
                luaL_error(L, "schema options: %s must hold strings", field);
            list[k - 1] = lua_tostring(L, -1);
            lua_rawsetp(L, anchor, list[k - 1]); /* anchor the string */
        }
        list[n] = NULL;
    }
    lua_pop(L, 1);
    return list;
}

/* Reads {closed =, assert_formats =, ignore_keywords = {...},
 * annotation_formats = {...}} at index i into *o.  The lists and their
 * strings are anchored in a new table left on the stack (always one value
 * pushed), so they live through the C call. */
static void read_schema_options(lua_State *L, int i, tg_schema_options_t *o)
{
    int anchor;
    tg_schema_options_default(o);
    i = lua_absindex(L, i);
    lua_newtable(L);
    anchor = lua_gettop(L);
    if (lua_isnoneornil(L, i))
        return;
    luaL_checktype(L, i, LUA_TTABLE);
    if (lua_getfield(L, i, "closed") != LUA_TNIL)
        o->closed = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, i, "assert_formats") != LUA_TNIL)
        o->assert_formats = lua_toboolean(L, -1);
    lua_pop(L, 1);
    o->ignore_keywords = read_string_list(L, i, "ignore_keywords", anchor);
    o->annotation_formats = read_string_list(L, i, "annotation_formats", anchor);
}

static void push_finding(lua_State *L, const tg_finding_t *f)
{
    lua_createtable(L, 0, 5);
    lua_pushstring(L, f->code == TG_H2 ? "H2" : "H3");
    lua_setfield(L, -2, "code");
    lua_pushstring(L, f->keyword);
    lua_setfield(L, -2, "keyword");
    lua_pushstring(L, f->pointer);
    lua_setfield(L, -2, "pointer");
    lua_pushstring(L, f->schema_pointer);
    lua_setfield(L, -2, "schema_pointer");
    lua_pushstring(L, f->message);
    lua_setfield(L, -2, "message");
}

/* Schema errors locate themselves by JSON Pointer, not byte offset. */
static int push_schema_error(lua_State *L, const tg_error_t *err)
{
    lua_pushnil(L);
    lua_pushstring(L, err->message);
    lua_pushstring(L, tg_code_name(err->code));
    lua_pushstring(L, err->pointer);
    return 4;
}

/* engine:compile_schema(node[, opts]) -> schema | nil, message, code, pointer */
static int l_engine_compile_schema(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    const tg_value_t *v = check_node(L, 2)->v;
    tg_schema_options_t o;
    tg_error_t err;
    schema_ud *s;
    read_schema_options(L, 3, &o);
    s = new_child(L, sizeof *s, SCHEMA_MT, 1, 1);
    if (tg_schema_compile(u->e, v, &o, &s->s, &err) != TG_OK)
        return push_schema_error(L, &err);
    return 1;
}

static int l_schema_gc(lua_State *L)
{
    schema_ud *s = luaL_checkudata(L, 1, SCHEMA_MT);
    tg_schema_free(s->s);
    s->s = NULL;
    return 0;
}

/* schema:validate(node) -> findings (empty when valid) | nil, message, code */
static int l_schema_validate(lua_State *L)
{
    schema_ud *s = luaL_checkudata(L, 1, SCHEMA_MT);
    const tg_value_t *v = check_node(L, 2)->v;
    engine_ud *u = engine_of(L, 1);
    size_t count;
    tg_error_t err;
    if (tg_validate(u->e, s->s, v, u->findings, TG_RUNG_MAX_FINDINGS, &count, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_createtable(L, (int)count, 0);
    for (size_t i = 0; i < count; i++) {
        push_finding(L, &u->findings[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* ---- compiled policies, contexts and checks ------------------------------------ */

/* registry:policy(json) -> policy | nil, message, code */
static int l_registry_policy(lua_State *L)
{
    registry_ud *r = luaL_checkudata(L, 1, REGISTRY_MT);
    size_t len;
    const char *json = check_string(L, 2, &len);
    tg_error_t err;
    policy_ud *p;
    engine_ud *u;
    lua_getiuservalue(L, 1, 1);
    u = check_engine(L, -1);
    p = new_child(L, sizeof *p, POLICY_MT, -1, 3);
    lua_pushvalue(L, 1); /* the registry outlives its policies */
    lua_setiuservalue(L, -2, 2);
    if (tg_policy_new(u->e, r->r, json, len, &p->p, &err) != TG_OK)
        return push_error(L, &err, 0);
    return 1;
}

static int l_policy_gc(lua_State *L)
{
    policy_ud *p = luaL_checkudata(L, 1, POLICY_MT);
    tg_policy_free(p->p);
    p->p = NULL;
    return 0;
}

/* policy:set_norm(tool (from 1), norm) -> true: the tool's normalization
 * plan, kept alive by the policy */
static int l_policy_set_norm(lua_State *L)
{
    policy_ud *p = luaL_checkudata(L, 1, POLICY_MT);
    lua_Integer tool = luaL_checkinteger(L, 2);
    norm_ud *n = luaL_checkudata(L, 3, NORM_MT);
    tg_error_t err;
    if (!p->p)
        return luaL_error(L, "toolgate policy not compiled");
    if (tool < 1 || tg_policy_set_norm(p->p, (size_t)tool - 1, n->n, &err) != TG_OK)
        return luaL_argerror(L, 2, "no such tool in the policy");
    if (lua_getiuservalue(L, 1, 3) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setiuservalue(L, 1, 3);
    }
    lua_pushvalue(L, 3);
    lua_rawseti(L, -2, tool);
    lua_pushboolean(L, 1);
    return 1;
}

/* policy:context(json) -> context | nil, message, code */
static int l_policy_context(lua_State *L)
{
    policy_ud *p = luaL_checkudata(L, 1, POLICY_MT);
    size_t len;
    const char *json = check_string(L, 2, &len);
    tg_error_t err;
    context_ud *c;
    lua_getiuservalue(L, 1, 1);
    c = new_child(L, sizeof *c, CONTEXT_MT, -1, 2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 2);
    if (tg_context_new(p->p, json, len, &c->c, &err) != TG_OK)
        return push_error(L, &err, 0);
    return 1;
}

static int l_context_gc(lua_State *L)
{
    context_ud *c = luaL_checkudata(L, 1, CONTEXT_MT);
    tg_context_free(c->c);
    c->c = NULL;
    return 0;
}

/* engine:decider() -> decider | nil, message, code */
static int l_engine_decider(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_error_t err;
    decider_ud *d = new_child(L, sizeof *d, DECIDER_MT, 1, 2);
    tg_buf_init(&d->batch, u->e);
    if (!(d->d = tg_decider_new(u->e, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_decider_gc(lua_State *L)
{
    decider_ud *d = luaL_checkudata(L, 1, DECIDER_MT);
    if (d->d)
        tg_buf_free(&d->batch);
    tg_decider_free(d->d);
    d->d = NULL;
    return 0;
}

/* Pushes what a check step says: status (0 decided, 1 a stage for the host,
 * 2 no more calls, 3 an ID to resolve, 4 a record), verdict (0 accept, 1 reject, 2 defer), the
 * decision's JSON, code (nil for none: an accept), stage, and the pending stage (from 1); or
 * nil, message, code. */
static int push_outcome(lua_State *L, const decider_ud *d, int rc, const tg_error_t *err)
{
    const tg_outcome_t *o = &d->out;
    if (rc != TG_OK)
        return push_error(L, err, 0);
    lua_pushinteger(L, o->status);
    if (o->status == TG_DECIDED) {
        lua_pushinteger(L, o->verdict);
        lua_pushlstring(L, o->json, o->json_len);
        if (*o->code)
            lua_pushstring(L, o->code);
        else
            lua_pushnil(L);
        lua_pushstring(L, o->stage);
        return 5;
    }
    if (o->status == TG_NEEDS_STAGE) {
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushinteger(L, (lua_Integer)o->pending + 1);
        return 6;
    }
    return 1;
}

static decider_ud *check_decider(lua_State *L)
{
    decider_ud *d = luaL_checkudata(L, 1, DECIDER_MT);
    if (!d->d)
        luaL_error(L, "toolgate decider already freed");
    return d;
}

/* Clears the owner of the previous check's nodes (user value 2). */
static void end_pending(lua_State *L)
{
    if (lua_getiuservalue(L, 1, 2) == LUA_TUSERDATA) {
        ((pending_ud *)lua_touserdata(L, -1))->d = NULL;
        lua_pushnil(L);
        lua_setiuservalue(L, 1, 2);
    }
    lua_pop(L, 1);
}

/* decider:check(policy, context|nil, text, format, flags, line) */
static int l_decider_check(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    size_t len;
    const char *text = check_string(L, 4, &len);
    int format = (int)luaL_optinteger(L, 5, 0), flags = (int)luaL_optinteger(L, 6, 0);
    lua_Integer line = luaL_optinteger(L, 7, 0);
    tg_error_t err;
    end_pending(L); /* the nodes of the previous check die with it */
    return push_outcome(L, d,
                        tg_check(d->d, p->p, c ? c->c : NULL, text, len, format, flags,
                                 line > 0 ? (size_t)line : 0, &d->out, &err),
                        &err);
}

/* engine:workers(threads) -> workers | nil, message, code */
static int l_engine_workers(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    lua_Integer threads = luaL_checkinteger(L, 2);
    tg_error_t err;
    workers_ud *w = new_child(L, sizeof *w, WORKERS_MT, 1, 1);
    if (!(w->w = tg_workers_new(u->e, threads < 1 ? 0 : (size_t)threads, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_workers_gc(lua_State *L)
{
    workers_ud *w = luaL_checkudata(L, 1, WORKERS_MT);
    tg_workers_free(w->w);
    w->w = NULL;
    return 0;
}

static int l_workers_count(lua_State *L)
{
    lua_pushinteger(
        L, (lua_Integer)tg_workers_count(((workers_ud *)luaL_checkudata(L, 1, WORKERS_MT))->w));
    return 1;
}

/* decider:check_lines(policy, context|nil, text, pos, format, flags, line[, workers])
 *   -> status (2 every complete line done, 1 a stage for the host), the
 *   position after what was read, the last line number, the decisions
 *   written (JSON Lines), accepts, rejects, defers, the pending stage
 *   (from 1) | nil, message, code, the position after the failed line,
 *   its number, the decisions of the lines before it and their accepts,
 *   rejects, defers */
static int l_decider_check_lines(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    size_t len, line, used = 0, counts[3] = {0, 0, 0};
    const char *text = check_string(L, 4, &len);
    lua_Integer pos = luaL_checkinteger(L, 5);
    int format = (int)luaL_optinteger(L, 6, 0), flags = (int)luaL_optinteger(L, 7, 0);
    workers_ud *w;
    tg_error_t err;
    int rc;
    luaL_argcheck(L, pos >= 1 && (size_t)pos <= len + 1, 5, "position out of range");
    line = (size_t)luaL_optinteger(L, 8, 0);
    w = lua_isnoneornil(L, 9) ? NULL : luaL_checkudata(L, 9, WORKERS_MT);
    end_pending(L);
    tg_buf_reset(&d->batch);
    if (w)
        rc = tg_check_lines_parallel(w->w, d->d, p->p, c ? c->c : NULL, text + pos - 1,
                                     len - (size_t)pos + 1, format, flags, &line, &used, &d->batch,
                                     counts, &d->out, &err);
    else
        rc = tg_check_lines(d->d, p->p, c ? c->c : NULL, text + pos - 1, len - (size_t)pos + 1,
                            format, flags, &line, &used, &d->batch, counts, &d->out, &err);
    if (rc != TG_OK) {
        push_error(L, &err, 0);
        lua_pushinteger(L, pos + (lua_Integer)used);
        lua_pushinteger(L, (lua_Integer)line);
        lua_pushlstring(L, d->batch.data, d->batch.len); /* the lines before it */
        for (int i = 0; i < 3; i++)
            lua_pushinteger(L, (lua_Integer)counts[i]);
        return 9;
    }
    lua_pushinteger(L, d->out.status == TG_NEEDS_STAGE ? 1 : 2);
    lua_pushinteger(L, pos + (lua_Integer)used);
    lua_pushinteger(L, (lua_Integer)line);
    lua_pushlstring(L, d->batch.data, d->batch.len);
    for (int i = 0; i < 3; i++)
        lua_pushinteger(L, (lua_Integer)counts[i]);
    if (d->out.status != TG_NEEDS_STAGE)
        return 7;
    lua_pushinteger(L, (lua_Integer)d->out.pending + 1);
    return 8;
}

static int check_fd(lua_State *L, int i)
{
    lua_Integer fd = luaL_checkinteger(L, i);
    luaL_argcheck(L, fd >= 0 && fd <= 0x7fffffff, i, "file descriptor out of range");
    return (int)fd;
}

/* engine:reader(fd | path) -> reader | nil, message, code: JSON Lines read
 * into the core's own buffer (a path is opened here and closed by the
 * reader's __gc; a descriptor stays the caller's) */
static int l_engine_reader(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    reader_ud *r;
    tg_error_t err;
    int is_fd = lua_type(L, 2) == LUA_TNUMBER;
    const char *path = is_fd ? NULL : check_string(L, 2, &(size_t){0});
    int fd = is_fd ? check_fd(L, 2) : -1;
    r = new_child(L, sizeof *r, READER_MT, 1, 1);
    if (!(r->r = is_fd ? tg_reader_new(u->e, fd, &err) : tg_reader_open(u->e, path, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_reader_gc(lua_State *L)
{
    reader_ud *r = luaL_checkudata(L, 1, READER_MT);
    tg_reader_free(r->r);
    r->r = NULL;
    return 0;
}

static tg_reader_t *check_reader(lua_State *L, int i)
{
    reader_ud *r = luaL_checkudata(L, i, READER_MT);
    if (!r->r)
        luaL_error(L, "toolgate reader already freed");
    return r->r;
}

/* reader:lines(want[, max]) -> the complete lines held (at least want
 * bytes of them when the input has that many; "" at its end), at most max
 * bytes of them, left held | nil, message, code: for a host that reads
 * the input itself (toolgate check's documents) or looks at its start */
static int l_reader_lines(lua_State *L)
{
    tg_reader_t *r = check_reader(L, 1);
    lua_Integer want = luaL_checkinteger(L, 2), max = luaL_optinteger(L, 3, LUA_MAXINTEGER);
    const char *text;
    size_t len;
    tg_error_t err;
    luaL_argcheck(L, want >= 0, 2, "want must not be negative");
    luaL_argcheck(L, max >= 0, 3, "max must not be negative");
    if (tg_reader_lines(r, (size_t)want, &text, &len, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushlstring(L, text, (lua_Unsigned)max < len ? (size_t)max : len);
    return 1;
}

/* reader:take(n): the first n bytes of the lines held were read */
static int l_reader_take(lua_State *L)
{
    tg_reader_t *r = check_reader(L, 1);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n >= 0, 2, "n must not be negative");
    tg_reader_take(r, (size_t)n);
    return 0;
}

/* engine:write_fd(fd, text) -> true | nil, message, code */
static int l_engine_write_fd(lua_State *L)
{
    size_t len;
    int fd;
    const char *text;
    tg_error_t err;
    check_engine(L, 1);
    fd = check_fd(L, 2);
    text = check_string(L, 3, &len);
    if (tg_write_all(fd, text, len, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    return 1;
}

/* A stream that stopped (reading or writing failed): false, message, code. */
static int push_stopped(lua_State *L, const tg_error_t *err)
{
    lua_pushboolean(L, 0);
    lua_pushstring(L, err->message);
    lua_pushstring(L, tg_code_name(err->code));
    return 3;
}

/* What check_reader and classify_reader return first, for the end of the
 * input or a stream that stopped (0 when neither: the caller pushes). */
static int push_reader_end(lua_State *L, int end, const tg_error_t *err)
{
    if (end == 1) {
        lua_pushboolean(L, 1);
        return 1;
    }
    return end == -1 ? push_stopped(L, err) : 0;
}

static void push_counts(lua_State *L, const size_t counts[3])
{
    for (int i = 0; i < 3; i++)
        lua_pushinteger(L, (lua_Integer)counts[i]);
}

/* decider:check_reader(policy, context|nil, reader, want, format, flags,
 *   line, fd[, workers]): check_lines on the complete lines the reader
 *   holds (at least want bytes of them, reading more first when it holds
 *   fewer), the decisions written to fd ->
 *   true (the end of the input) |
 *   2 (every line held done) or 1 (a stage for the host), the last line
 *   number, accepts, rejects, defers[, the pending stage (from 1)] |
 *   nil, message, code, the failed line's number, accepts, rejects,
 *   defers (the decisions before it written, the line read) |
 *   false, message, code (reading or writing failed: the stream stops) */
static int l_decider_check_reader(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    tg_reader_t *r = check_reader(L, 4);
    size_t want = (size_t)luaL_checkinteger(L, 5), line, counts[3] = {0, 0, 0};
    int format = (int)luaL_optinteger(L, 6, 0), flags = (int)luaL_optinteger(L, 7, 0);
    int fd, rc, end = 0, n;
    workers_ud *w;
    tg_error_t err;
    line = (size_t)luaL_optinteger(L, 8, 0);
    fd = check_fd(L, 9);
    w = lua_isnoneornil(L, 10) ? NULL : luaL_checkudata(L, 10, WORKERS_MT);
    end_pending(L);
    tg_buf_reset(&d->batch);
    rc = tg_check_reader(w ? w->w : NULL, d->d, p->p, c ? c->c : NULL, r, want, fd, format, flags,
                         &line, &d->batch, counts, &d->out, &end, &err);
    if ((n = push_reader_end(L, end, &err)) != 0)
        return n;
    if (rc != TG_OK) {
        push_error(L, &err, 0);
        lua_pushinteger(L, (lua_Integer)line);
        push_counts(L, counts);
        return 7;
    }
    lua_pushinteger(L, d->out.status == TG_NEEDS_STAGE ? 1 : 2);
    lua_pushinteger(L, (lua_Integer)line);
    push_counts(L, counts);
    if (d->out.status != TG_NEEDS_STAGE)
        return 5;
    lua_pushinteger(L, (lua_Integer)d->out.pending + 1);
    return 6;
}

static int l_decider_next(lua_State *L)
{
    decider_ud *d = check_decider(L);
    tg_error_t err;
    return push_outcome(L, d, tg_check_next(d->d, &d->out, &err), &err);
}

/* decider:answer(verdict (-1 pass, 1 reject, 2 defer, -2 run in the core), code, message) */
static int l_decider_answer(lua_State *L)
{
    decider_ud *d = check_decider(L);
    int verdict = (int)luaL_checkinteger(L, 2);
    size_t clen = 0, mlen = 0;
    const char *code = lua_isnoneornil(L, 3) ? NULL : check_string(L, 3, &clen);
    const char *msg = lua_isnoneornil(L, 4) ? NULL : check_string(L, 4, &mlen);
    tg_error_t err;
    return push_outcome(L, d, tg_check_answer(d->d, verdict, code, clen, msg, mlen, &d->out, &err),
                        &err);
}

/* decider:resolved() -> tool index (from 1) | nil, args_digest | nil: what
 * the rung of the last check found */
static int l_decider_resolved(lua_State *L)
{
    decider_ud *d = check_decider(L);
    long tool = tg_check_tool(d->d);
    const char *s = tg_check_args_digest(d->d);
    if (tool >= 0)
        lua_pushinteger(L, (lua_Integer)tool + 1);
    else
        lua_pushnil(L);
    if (s)
        lua_pushlstring(L, s, 32);
    else
        lua_pushnil(L);
    return 2;
}

/* decider:verdict_so_far() -> 0 accept, 1 reject, 2 defer: what the stages
 * that ran so far make of the call in progress */
static int l_decider_verdict_so_far(lua_State *L)
{
    decider_ud *d = check_decider(L);
    lua_pushinteger(L, tg_check_verdict_so_far(d->d));
    return 1;
}

/* decider:call() -> server, name, arguments node, args_digest, tool index
 * (from 1) | nil, context node: the call of the check in progress (its
 * nodes live until the next check on this decider) */
static int l_decider_call(lua_State *L)
{
    decider_ud *d = check_decider(L);
    size_t len;
    const char *s;
    long tool;
    if (lua_getiuservalue(L, 1, 2) != LUA_TUSERDATA) {
        pending_ud *owner;
        lua_pop(L, 1);
        lua_getiuservalue(L, 1, 1); /* the engine, the owner's first user value */
        owner = new_child(L, sizeof *owner, PENDING_MT, -1, 1);
        lua_remove(L, -2);
        owner->d = d->d;
        lua_pushvalue(L, -1);
        lua_setiuservalue(L, 1, 2);
    }
    s = tg_check_server(d->d, &len);
    push_lstring_or_nil(L, s, len);
    s = tg_check_name(d->d, &len);
    push_lstring_or_nil(L, s, len);
    push_node(L, tg_check_arguments(d->d), -3);
    s = tg_check_args_digest(d->d);
    if (s)
        lua_pushlstring(L, s, 32);
    else
        lua_pushnil(L);
    tool = tg_check_tool(d->d);
    if (tool >= 0)
        lua_pushinteger(L, (lua_Integer)tool + 1);
    else
        lua_pushnil(L);
    push_node(L, tg_check_call_context(d->d), -6);
    return 6;
}

/* ---- sampled plans ---------------------------------------------------------------- */

static tg_store_t *opt_store(lua_State *L, int i)
{
    store_ud *st;
    if (lua_isnoneornil(L, i))
        return NULL;
    st = luaL_checkudata(L, i, STORE_MT);
    if (!st->s)
        luaL_error(L, "toolgate store already freed");
    return st->s;
}

/* decider:classify(policy, context|nil, store|nil, text, flags, line, now)
 *   -> status (0 decided, 1 a stage, 3 an ID to resolve, 4 a record),
 *   verdict, json, code, stage | 1, ..., pending stage | nil, message, code */
static int l_decider_classify(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    tg_store_t *store = opt_store(L, 4);
    size_t len;
    const char *text = check_string(L, 5, &len);
    int flags = (int)luaL_optinteger(L, 6, 0);
    lua_Integer line = luaL_optinteger(L, 7, 0), now = luaL_optinteger(L, 8, 0);
    tg_error_t err;
    end_pending(L);
    return push_outcome(L, d,
                        tg_classify(d->d, p->p, c ? c->c : NULL, store, text, len, flags,
                                    line > 0 ? (size_t)line : 0, (int64_t)now, &d->out, &err),
                        &err);
}

/* decider:classify_lines(policy, context|nil, store|nil, text, pos, flags,
 *   line, now[, workers]) -> status (2 every complete line done, 0 a plan
 *   decided whose quarantines the host writes, 1 a stage, 3 an ID, 4 a
 *   record), the position after what was read, the last line number, the
 *   decisions written (JSON Lines), accepts, rejects, defers, then for 0
 *   verdict, json, code, stage, for 1 the pending stage | nil, message,
 *   code, the position after the failed line, its number, the decisions of
 *   the plans before it and their accepts, rejects, defers */
static int l_decider_classify_lines(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    tg_store_t *store = opt_store(L, 4);
    size_t len, line, used = 0, counts[3] = {0, 0, 0};
    const char *text = check_string(L, 5, &len);
    lua_Integer pos = luaL_checkinteger(L, 6), now;
    int flags = (int)luaL_optinteger(L, 7, 0), rc;
    workers_ud *w;
    tg_error_t err;
    luaL_argcheck(L, pos >= 1 && (size_t)pos <= len + 1, 6, "position out of range");
    line = (size_t)luaL_optinteger(L, 8, 0);
    now = luaL_optinteger(L, 9, 0);
    w = lua_isnoneornil(L, 10) ? NULL : luaL_checkudata(L, 10, WORKERS_MT);
    end_pending(L);
    tg_buf_reset(&d->batch);
    if (w)
        rc = tg_classify_lines_parallel(w->w, d->d, p->p, c ? c->c : NULL, store, text + pos - 1,
                                        len - (size_t)pos + 1, flags, (int64_t)now, &line, &used,
                                        &d->batch, counts, &d->out, &err);
    else
        rc = tg_classify_lines(d->d, p->p, c ? c->c : NULL, store, text + pos - 1,
                               len - (size_t)pos + 1, flags, (int64_t)now, &line, &used, &d->batch,
                               counts, &d->out, &err);
    if (rc != TG_OK) {
        push_error(L, &err, 0);
        lua_pushinteger(L, pos + (lua_Integer)used);
        lua_pushinteger(L, (lua_Integer)line);
        lua_pushlstring(L, d->batch.data, d->batch.len); /* the plans before it */
        for (int i = 0; i < 3; i++)
            lua_pushinteger(L, (lua_Integer)counts[i]);
        return 9;
    }
    lua_pushinteger(L, d->out.status);
    lua_pushinteger(L, pos + (lua_Integer)used);
    lua_pushinteger(L, (lua_Integer)line);
    lua_pushlstring(L, d->batch.data, d->batch.len);
    for (int i = 0; i < 3; i++)
        lua_pushinteger(L, (lua_Integer)counts[i]);
    if (d->out.status == TG_DECIDED) {
        lua_pushinteger(L, d->out.verdict);
        lua_pushlstring(L, d->out.json, d->out.json_len);
        lua_pushstring(L, d->out.code);
        lua_pushstring(L, d->out.stage);
        return 11;
    }
    if (d->out.status == TG_NEEDS_STAGE) {
        lua_pushinteger(L, (lua_Integer)d->out.pending + 1);
        return 8;
    }
    return 7;
}

/* decider:classify_reader(policy, context|nil, store|nil, reader, want,
 *   flags, line, now, fd[, workers]): classify_lines on the plans the
 *   reader holds, as check_reader does for calls -> true (the end) |
 *   status (as classify_lines'), the last line number, accepts, rejects,
 *   defers[, then as classify_lines] | nil, message, code, the failed
 *   line's number, accepts, rejects, defers | false, message, code */
static int l_decider_classify_reader(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    tg_store_t *store = opt_store(L, 4);
    tg_reader_t *r = check_reader(L, 5);
    size_t want = (size_t)luaL_checkinteger(L, 6), line, counts[3] = {0, 0, 0};
    int flags = (int)luaL_optinteger(L, 7, 0), fd, rc, end = 0, n;
    lua_Integer now;
    workers_ud *w;
    tg_error_t err;
    line = (size_t)luaL_optinteger(L, 8, 0);
    now = luaL_optinteger(L, 9, 0);
    fd = check_fd(L, 10);
    w = lua_isnoneornil(L, 11) ? NULL : luaL_checkudata(L, 11, WORKERS_MT);
    end_pending(L);
    tg_buf_reset(&d->batch);
    rc = tg_classify_reader(w ? w->w : NULL, d->d, p->p, c ? c->c : NULL, store, r, want, fd, flags,
                            (int64_t)now, &line, &d->batch, counts, &d->out, &end, &err);
    if ((n = push_reader_end(L, end, &err)) != 0)
        return n;
    if (rc != TG_OK) {
        push_error(L, &err, 0);
        lua_pushinteger(L, (lua_Integer)line);
        push_counts(L, counts);
        return 7;
    }
    lua_pushinteger(L, d->out.status);
    lua_pushinteger(L, (lua_Integer)line);
    push_counts(L, counts);
    if (d->out.status == TG_DECIDED) {
        lua_pushinteger(L, d->out.verdict);
        lua_pushlstring(L, d->out.json, d->out.json_len);
        lua_pushstring(L, d->out.code);
        lua_pushstring(L, d->out.stage);
        return 9;
    }
    if (d->out.status == TG_NEEDS_STAGE) {
        lua_pushinteger(L, (lua_Integer)d->out.pending + 1);
        return 6;
    }
    return 5;
}

/* decider:query() -> tool (from 1), resolver, id | nil: the ID waiting */
static int l_decider_query(lua_State *L)
{
    decider_ud *d = check_decider(L);
    const char *r, *id;
    size_t rlen, idlen;
    long tool = tg_classify_query(d->d, &r, &rlen, &id, &idlen);
    if (tool < 0)
        return lua_pushnil(L), 1;
    lua_pushinteger(L, (lua_Integer)tool + 1);
    lua_pushlstring(L, r, rlen);
    lua_pushlstring(L, id, idlen);
    return 3;
}

/* decider:resolve(ok, text) -> like classify */
static int l_decider_resolve(lua_State *L)
{
    decider_ud *d = check_decider(L);
    int ok = lua_toboolean(L, 2);
    size_t len = 0;
    const char *text = lua_isnoneornil(L, 3) ? NULL : check_string(L, 3, &len);
    tg_error_t err;
    return push_outcome(L, d, tg_classify_resolve(d->d, ok, text, len, &d->out, &err), &err);
}

/* decider:store_tool() -> tool (from 1) | nil: whose record is waiting */
static int l_decider_store_tool(lua_State *L)
{
    long tool = tg_classify_store_tool(check_decider(L)->d);
    if (tool < 0)
        return lua_pushnil(L), 1;
    lua_pushinteger(L, (lua_Integer)tool + 1);
    return 1;
}

/* decider:record(found, quarantined, verified_epoch|nil) -> like classify */
static int l_decider_record(lua_State *L)
{
    decider_ud *d = check_decider(L);
    int found = lua_toboolean(L, 2), quarantined = lua_toboolean(L, 3);
    size_t len = 0;
    const char *epoch = lua_isnoneornil(L, 4) ? NULL : check_string(L, 4, &len);
    tg_error_t err;
    return push_outcome(
        L, d, tg_classify_record(d->d, found, quarantined, epoch, len, &d->out, &err), &err);
}

/* decider:quarantines() -> {{tool = (from 1), reason =, epoch = |nil}, ...} */
static int l_decider_quarantines(lua_State *L)
{
    decider_ud *d = check_decider(L);
    size_t n = tg_classify_quarantines(d->d);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        const char *reason, *epoch;
        size_t rlen, elen;
        long tool = tg_classify_quarantine(d->d, i, &reason, &rlen, &epoch, &elen);
        lua_createtable(L, 0, 3);
        lua_pushinteger(L, (lua_Integer)tool + 1);
        lua_setfield(L, -2, "tool");
        lua_pushlstring(L, reason, rlen);
        lua_setfield(L, -2, "reason");
        if (epoch) {
            lua_pushlstring(L, epoch, elen);
            lua_setfield(L, -2, "epoch");
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* ---- threshold sweeps ---------------------------------------------------------------- */

/* policy:sweep() -> sweep | nil, message, code: an empty sweep */
static int l_policy_sweep(lua_State *L)
{
    policy_ud *p = luaL_checkudata(L, 1, POLICY_MT);
    sweep_ud *sw;
    tg_error_t err;
    if (!p->p)
        return luaL_error(L, "toolgate policy not compiled");
    lua_getiuservalue(L, 1, 1);
    sw = new_child(L, sizeof *sw, SWEEP_MT, -1, 2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 2);
    if (!(sw->s = tg_sweep_new(p->p, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_sweep_gc(lua_State *L)
{
    sweep_ud *sw = luaL_checkudata(L, 1, SWEEP_MT);
    tg_sweep_free(sw->s);
    sw->s = NULL;
    return 0;
}

static tg_sweep_t *check_sweep(lua_State *L, int i)
{
    sweep_ud *sw = luaL_checkudata(L, i, SWEEP_MT);
    if (!sw->s)
        luaL_error(L, "toolgate sweep already freed");
    return sw->s;
}

/* decider:sweep_lines(sweep, context|nil, store|nil, text, pos, flags, line)
 *   -> status (2 every complete line is in, 1 a stage, 3 an ID to resolve,
 *   4 a record), the position after what was read, the last line number,
 *   then for 1 the pending stage | nil, message, code */
static int l_decider_sweep_lines(lua_State *L)
{
    decider_ud *d = check_decider(L);
    tg_sweep_t *sw = check_sweep(L, 2);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    tg_store_t *store = opt_store(L, 4);
    size_t len, line, used = 0;
    const char *text = check_string(L, 5, &len);
    lua_Integer pos = luaL_checkinteger(L, 6);
    int flags = (int)luaL_optinteger(L, 7, 0);
    tg_error_t err;
    luaL_argcheck(L, pos >= 1 && (size_t)pos <= len + 1, 6, "position out of range");
    line = (size_t)luaL_optinteger(L, 8, 0);
    end_pending(L);
    if (tg_sweep_lines(sw, d->d, c ? c->c : NULL, store, text + pos - 1, len - (size_t)pos + 1,
                       flags, &line, &used, &d->out, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushinteger(L, d->out.status);
    lua_pushinteger(L, pos + (lua_Integer)used);
    lua_pushinteger(L, (lua_Integer)line);
    if (d->out.status == TG_NEEDS_STAGE) {
        lua_pushinteger(L, (lua_Integer)d->out.pending + 1);
        return 4;
    }
    return 3;
}

/* sweep:count() -> the plans gathered */
static int l_sweep_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_sweep_count(check_sweep(L, 1)));
    return 1;
}

/* sweep:tool_label(tool from 1) -> -1 none, 0, 1, 2 conflicting */
static int l_sweep_tool_label(lua_State *L)
{
    tg_sweep_t *sw = check_sweep(L, 1);
    lua_Integer t = luaL_checkinteger(L, 2);
    lua_pushinteger(L, t >= 1 ? tg_sweep_tool_label(sw, (size_t)t - 1) : -1);
    return 1;
}

/* A run's counts: a list of 12, verdict * 4 + label + 1. */
static void push_sweep_counts(lua_State *L, const tg_sweep_counts_t *c)
{
    lua_createtable(L, 12, 0);
    for (int v = 0; v < 3; v++)
        for (int l = 0; l < 4; l++) {
            lua_pushinteger(L, (lua_Integer)c->plans[v][l]);
            lua_rawseti(L, -2, v * 4 + l + 1);
        }
}

/* A run's plans: the list of verdicts, then the list of codes. */
static void push_sweep_plans(lua_State *L, const unsigned char *verdicts, const char **codes,
                             size_t n)
{
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushinteger(L, verdicts[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, codes[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static double field_number(lua_State *L, const char *key)
{
    double x;
    lua_getfield(L, 2, key);
    if (!lua_isnumber(L, -1))
        luaL_error(L, "sweep:run: settings.%s must be a number", key);
    x = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return x;
}

/* sweep:run(settings, per_plan) -> counts (12: verdict * 4 + label + 1),
 *   quarantined tools (from 1)[, verdicts (0 accept, 1 reject, 2 defer),
 *   codes] | nil, message, code.  settings: min_samples, arg_accept,
 *   arg_reject, result_accept, result_quarantine, on_invalid ("defer" |
 *   "reject"), quarantine (boolean) */
static int l_sweep_run(lua_State *L)
{
    tg_sweep_t *sw = check_sweep(L, 1);
    int per_plan = lua_toboolean(L, 3), rc;
    size_t n = tg_sweep_count(sw), nt;
    tg_consistency_t cs;
    tg_sweep_counts_t counts;
    tg_error_t err;
    double ms;
    unsigned char *q, *verdicts = NULL;
    const char **codes = NULL;
    luaL_checktype(L, 2, LUA_TTABLE);
    tg_consistency_default(&cs);
    ms = field_number(L, "min_samples");
    cs.min_samples = ms >= 1 && ms <= TG_LIMIT_MAX_SAMPLES ? (size_t)ms : 0;
    cs.arg_accept = field_number(L, "arg_accept");
    cs.arg_reject = field_number(L, "arg_reject");
    cs.result_accept = field_number(L, "result_accept");
    cs.result_quarantine = field_number(L, "result_quarantine");
    lua_getfield(L, 2, "on_invalid");
    cs.on_invalid =
        lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "reject") == 0 ? TG_REJECT : TG_DEFER;
    lua_pop(L, 1);
    lua_getfield(L, 2, "quarantine");
    cs.quarantine = lua_isnil(L, -1) || lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* Lua-owned scratch, so an error cannot leak it */
    nt = tg_sweep_tools(sw);
    q = lua_newuserdatauv(L, nt ? nt : 1, 0);
    if (per_plan) {
        verdicts = lua_newuserdatauv(L, n ? n : 1, 0);
        codes = lua_newuserdatauv(L, (n ? n : 1) * sizeof *codes, 0);
    }
    rc = tg_sweep_run(sw, &cs, &counts, q, verdicts, codes, &err);
    if (rc != TG_OK)
        return push_error(L, &err, 0);
    push_sweep_counts(L, &counts);
    lua_createtable(L, (int)counts.quarantined, 0);
    {
        lua_Integer k = 0;
        for (size_t t = 0; t < nt; t++)
            if (q[t]) {
                lua_pushinteger(L, (lua_Integer)t + 1);
                lua_rawseti(L, -2, ++k);
            }
    }
    if (!per_plan)
        return 2;
    push_sweep_plans(L, verdicts, codes, n);
    return 4;
}

/* sweep:plan(i from 1) -> {label, fixed, verdict, code} or {label, fixed =
 *   false, n, arg_modal, result_modal, epoch_fixed, deterministic,
 *   nondeterministic, verified} | nil, message, code */
static int l_sweep_plan(lua_State *L)
{
    tg_sweep_t *sw = check_sweep(L, 1);
    lua_Integer i = luaL_checkinteger(L, 2);
    tg_sweep_plan_t p;
    tg_error_t err;
    /* 0 and below: an index no sweep has, which the core refuses */
    if (tg_sweep_plan(sw, i >= 1 ? (size_t)i - 1 : (size_t)-1, &p, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_createtable(L, 0, 9);
    lua_pushinteger(L, p.label);
    lua_setfield(L, -2, "label");
    lua_pushboolean(L, p.fixed);
    lua_setfield(L, -2, "fixed");
    if (p.fixed) {
        lua_pushinteger(L, p.verdict);
        lua_setfield(L, -2, "verdict");
        lua_pushstring(L, p.code);
        lua_setfield(L, -2, "code");
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)p.features.n);
    lua_setfield(L, -2, "n");
    lua_pushinteger(L, (lua_Integer)p.features.arg_modal);
    lua_setfield(L, -2, "arg_modal");
    lua_pushinteger(L, (lua_Integer)p.features.result_modal);
    lua_setfield(L, -2, "result_modal");
    lua_pushboolean(L, p.features.epoch_fixed);
    lua_setfield(L, -2, "epoch_fixed");
    lua_pushboolean(L, p.features.deterministic);
    lua_setfield(L, -2, "deterministic");
    lua_pushboolean(L, p.features.nondeterministic);
    lua_setfield(L, -2, "nondeterministic");
    lua_pushboolean(L, p.features.verified);
    lua_setfield(L, -2, "verified");
    return 1;
}

/* sweep:run_with(table verdicts (a list, 0 accept, 1 reject, 2 defer, one
 *   per plan; fixed plans' entries are not read)) -> counts (12), verdicts,
 *   codes | nil, message, code */
static int l_sweep_run_with(lua_State *L)
{
    tg_sweep_t *sw = check_sweep(L, 1);
    size_t n = tg_sweep_count(sw);
    unsigned char *table, *verdicts;
    const char **codes;
    tg_sweep_counts_t counts;
    tg_error_t err;
    luaL_checktype(L, 2, LUA_TTABLE);
    table = lua_newuserdatauv(L, n ? n : 1, 0);
    verdicts = lua_newuserdatauv(L, n ? n : 1, 0);
    codes = lua_newuserdatauv(L, (n ? n : 1) * sizeof *codes, 0);
    for (size_t i = 0; i < n; i++) {
        lua_Number v;
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        v = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
        table[i] = (unsigned char)(v == 0 ? 0 : v == 1 ? 1 : v == 2 ? 2 : 255);
        lua_pop(L, 1);
    }
    if (tg_sweep_run_with(sw, table, &counts, verdicts, codes, &err) != TG_OK)
        return push_error(L, &err, 0);
    push_sweep_counts(L, &counts);
    push_sweep_plans(L, verdicts, codes, n);
    return 3;
}

/* ---- the determinism store -------------------------------------------------------- */

/* engine:store() -> store | nil, message, code */
static int l_engine_store(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_error_t err;
    store_ud *st = new_child(L, sizeof *st, STORE_MT, 1, 1);
    if (!(st->s = tg_store_new(u->e, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_store_gc(lua_State *L)
{
    store_ud *st = luaL_checkudata(L, 1, STORE_MT);
    tg_store_free(st->s);
    st->s = NULL;
    return 0;
}

static tg_store_t *check_store(lua_State *L)
{
    store_ud *st = luaL_checkudata(L, 1, STORE_MT);
    if (!st->s)
        luaL_error(L, "toolgate store already freed");
    return st->s;
}

static const char *opt_lstring(lua_State *L, int i, size_t *len)
{
    *len = 0;
    return lua_isnoneornil(L, i) ? NULL : check_string(L, i, len);
}

/* ---- MCP messages (tg_mcp_read, tg_mcp_check) ------------------------------------- */

static void set_bool(lua_State *L, const char *key, int b)
{
    lua_pushboolean(L, b);
    lua_setfield(L, -2, key);
}

static void set_lstring(lua_State *L, const char *key, const char *s, size_t n)
{
    lua_pushlstring(L, s, n);
    lua_setfield(L, -2, key);
}

/* Pushes a message's frame: the table core_ffi.lua's mcp_frame makes, field
 * for field (see Node:mcp there). */
static void push_mcp_frame(lua_State *L, const tg_mcp_message_t *m)
{
    static const char *const kinds[] = {"not_json", "batch", "not_object", "message"};
    lua_createtable(L, 0, 8);
    lua_pushstring(L, kinds[m->kind]);
    lua_setfield(L, -2, "kind");
    if (m->kind == TG_MCP_NOT_JSON) {
        lua_pushstring(L, m->error.message);
        lua_setfield(L, -2, "why");
    }
    if (m->kind != TG_MCP_MESSAGE)
        return;
    set_bool(L, "id_null", m->id_null);
    set_bool(L, "result", m->has_result);
    set_bool(L, "error", m->has_error);
    set_bool(L, "cursor", m->has_cursor);
    if (m->id_text) {
        set_lstring(L, "id_text", m->id_text, m->id_len);
        if (m->id == TG_MCP_ID_OK)
            set_lstring(L, "id", m->id_text, m->id_len);
        else
            set_bool(L, "bad_id", 1);
    }
    if (m->method == 1)
        set_lstring(L, "method", m->method_name, m->method_len);
    else if (m->method == 2)
        set_bool(L, "bad_method", 1);
    if (m->protocol_version)
        set_lstring(L, "protocol_version", m->protocol_version, m->protocol_version_len);
    if (m->name)
        set_lstring(L, "name", m->name, m->name_len);
    if (m->call)
        set_lstring(L, "call", m->call, m->call_len);
    if (m->call_error) {
        lua_pushstring(L, m->call_error);
        lua_setfield(L, -2, "call_error");
    }
}

/* node:mcp([server]) -> the message's frame | nil, message, code */
static int l_node_mcp(lua_State *L)
{
    node_ud *n = check_node(L, 1);
    size_t slen;
    const char *server = opt_lstring(L, 2, &slen);
    engine_ud *u = engine_of(L, 1);
    tg_mcp_message_t m;
    tg_error_t err;
    tg_buf_reset(&u->out);
    if (tg_mcp_read(n->v, server, slen, &m, &u->out, &err) != TG_OK)
        return push_error(L, &err, 0);
    push_mcp_frame(L, &m);
    return 1;
}

/* decider:mcp(policy, context|nil, text, server, format, flags, decide) ->
 * frame | frame, the outcome of its call's check (frame.checked) | nil,
 * message, code */
static int l_decider_mcp(lua_State *L)
{
    decider_ud *d = check_decider(L);
    policy_ud *p = luaL_checkudata(L, 2, POLICY_MT);
    context_ud *c = lua_isnoneornil(L, 3) ? NULL : luaL_checkudata(L, 3, CONTEXT_MT);
    size_t len, slen;
    const char *text = check_string(L, 4, &len), *server = check_string(L, 5, &slen);
    int format = (int)luaL_optinteger(L, 6, 0), flags = (int)luaL_optinteger(L, 7, 0);
    int decide = lua_toboolean(L, 8), rc, n;
    tg_mcp_message_t m;
    tg_error_t err;
    end_pending(L); /* the nodes of the previous check die with it */
    rc = tg_mcp_check(d->d, p->p, c ? c->c : NULL, text, len, server, slen, format, flags, decide,
                      &m, &d->out, &err);
    if (!m.checked) {
        if (rc != TG_OK)
            return push_error(L, &err, 0);
        push_mcp_frame(L, &m);
        return 1;
    }
    push_mcp_frame(L, &m);
    set_bool(L, "checked", 1);
    if (rc == TG_OK && d->out.status == TG_DECIDED) {
        if (m.tool >= 0) {
            lua_pushinteger(L, (lua_Integer)m.tool + 1);
            lua_setfield(L, -2, "tool");
        }
        if (m.args_digest[0])
            set_lstring(L, "digest", m.args_digest, 32);
    }
    n = push_outcome(L, d, rc, &err);
    return n + 1;
}

/* A record as toolgate.state documents it. */
static void push_record(lua_State *L, const tg_store_record_t *r)
{
    lua_createtable(L, 0, 2);
    if (r->verified_epoch) {
        lua_pushlstring(L, r->verified_epoch, r->verified_epoch_len);
        lua_setfield(L, -2, "verified_epoch");
    }
    if (r->quarantined) {
        lua_createtable(L, 0, 3);
        lua_pushlstring(L, r->reason, r->reason_len);
        lua_setfield(L, -2, "reason");
        lua_pushinteger(L, (lua_Integer)r->since);
        lua_setfield(L, -2, "since");
        if (r->epoch) {
            lua_pushlstring(L, r->epoch, r->epoch_len);
            lua_setfield(L, -2, "epoch");
        }
        lua_setfield(L, -2, "quarantined");
    }
}

/* store:get(server|nil, name) -> record | nil */
static int l_store_get(lua_State *L)
{
    tg_store_t *s = check_store(L);
    size_t slen, nlen;
    const char *server = opt_lstring(L, 2, &slen), *name = check_string(L, 3, &nlen);
    tg_store_record_t r;
    if (!tg_store_get(s, server, slen, name, nlen, &r))
        return lua_pushnil(L), 1;
    push_record(L, &r);
    return 1;
}

/* store:verified(server|nil, name, epoch|nil) -> true | nil, message, code */
static int l_store_verified(lua_State *L)
{
    tg_store_t *s = check_store(L);
    size_t slen, nlen, elen;
    const char *server = opt_lstring(L, 2, &slen), *name = check_string(L, 3, &nlen);
    const char *epoch = opt_lstring(L, 4, &elen);
    tg_error_t err;
    if (tg_store_verified(s, server, slen, name, nlen, epoch, elen, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    return 1;
}

/* store:quarantine(server|nil, name, reason, epoch|nil, since)
 *   -> true, newly quarantined | nil, message, code */
static int l_store_quarantine(lua_State *L)
{
    tg_store_t *s = check_store(L);
    size_t slen, nlen, rlen, elen;
    const char *server = opt_lstring(L, 2, &slen), *name = check_string(L, 3, &nlen);
    const char *reason = check_string(L, 4, &rlen), *epoch = opt_lstring(L, 5, &elen);
    lua_Integer since = luaL_checkinteger(L, 6);
    tg_error_t err;
    int changed;
    if (tg_store_quarantine(s, server, slen, name, nlen, reason, rlen, (int64_t)since, epoch, elen,
                            &changed, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    lua_pushboolean(L, changed);
    return 2;
}

/* store:records() -> {{server =, name =, record =}, ...} in the order tools were first written */
static int l_store_records(lua_State *L)
{
    tg_store_t *s = check_store(L);
    size_t n = tg_store_count(s);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        const char *server, *name;
        size_t slen, nlen;
        tg_store_record_t r;
        tg_store_at(s, i, &server, &slen, &name, &nlen, &r);
        lua_createtable(L, 0, 3);
        lua_pushlstring(L, server, slen);
        lua_setfield(L, -2, "server");
        lua_pushlstring(L, name, nlen);
        lua_setfield(L, -2, "name");
        push_record(L, &r);
        lua_setfield(L, -2, "record");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* ---- the JSON Lines commands, one core call per chunk --------------------------- */

/* Pushes true (every complete line done) | nil, message, code, offset, then
 * the position after what was read, the last line number and the output
 * of the lines done. */
static int push_chunk(lua_State *L, int rc, const tg_error_t *err, lua_Integer pos, size_t used,
                      size_t line, const tg_buf_t *out)
{
    if (rc == TG_OK) {
        lua_pushboolean(L, 1);
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushnil(L);
    } else {
        push_error(L, err, 1);
    }
    lua_pushinteger(L, pos + (lua_Integer)used);
    lua_pushinteger(L, (lua_Integer)line);
    lua_pushlstring(L, out->data, out->len);
    return 7;
}

/* engine:canon_lines(text, pos, hash, line) */
static int l_engine_canon_lines(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len, used = 0, line;
    const char *text = check_string(L, 2, &len);
    lua_Integer pos = luaL_checkinteger(L, 3);
    int hash = lua_toboolean(L, 4), rc;
    tg_error_t err;
    luaL_argcheck(L, pos >= 1 && (size_t)pos <= len + 1, 3, "position out of range");
    line = (size_t)luaL_optinteger(L, 5, 0);
    tg_buf_reset(&u->out);
    rc = tg_canon_lines(u->e, text + pos - 1, len - (size_t)pos + 1, hash, &line, &used, &u->out,
                        &err);
    return push_chunk(L, rc, &err, pos, used, line, &u->out);
}

/* schema:validate_lines(text, pos, line) */
static int l_schema_validate_lines(lua_State *L)
{
    schema_ud *sc = luaL_checkudata(L, 1, SCHEMA_MT);
    engine_ud *u = engine_of(L, 1);
    size_t len, used = 0, line;
    const char *text = check_string(L, 2, &len);
    lua_Integer pos = luaL_checkinteger(L, 3);
    tg_error_t err;
    int rc;
    luaL_argcheck(L, pos >= 1 && (size_t)pos <= len + 1, 3, "position out of range");
    line = (size_t)luaL_optinteger(L, 4, 0);
    tg_buf_reset(&u->out);
    rc = tg_validate_lines(u->e, sc->s, text + pos - 1, len - (size_t)pos + 1, &line, &used,
                           &u->out, &err);
    return push_chunk(L, rc, &err, pos, used, line, &u->out);
}

/* The values of canon_reader and validate_reader: true (every line held
 * done) | nil, message, code, offset (a line failed: report it and call
 * again), then the last line number and whether the input is done |
 * false, message, code (reading or writing failed: the stream stops). */
static int push_reader_chunk(lua_State *L, int rc, int end, const tg_error_t *err, size_t line)
{
    if (end == -1)
        return push_stopped(L, err);
    if (rc == TG_OK) {
        lua_pushboolean(L, 1);
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushnil(L);
    } else {
        push_error(L, err, 1);
    }
    lua_pushinteger(L, (lua_Integer)line);
    lua_pushboolean(L, end == 1);
    return 6;
}

/* engine:canon_reader(reader, want, hash, line, fd) -> see push_reader_chunk */
static int l_engine_canon_reader(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_reader_t *r = check_reader(L, 2);
    size_t want = (size_t)luaL_checkinteger(L, 3), line;
    int hash = lua_toboolean(L, 4), fd, rc, end = 0;
    tg_error_t err;
    line = (size_t)luaL_optinteger(L, 5, 0);
    fd = check_fd(L, 6);
    tg_buf_reset(&u->out);
    rc = tg_canon_reader(u->e, r, want, fd, hash, &line, &u->out, &end, &err);
    return push_reader_chunk(L, rc, end, &err, line);
}

/* schema:validate_reader(reader, want, line, fd) -> see push_reader_chunk */
static int l_schema_validate_reader(lua_State *L)
{
    schema_ud *sc = luaL_checkudata(L, 1, SCHEMA_MT);
    engine_ud *u = engine_of(L, 1);
    tg_reader_t *r = check_reader(L, 2);
    size_t want = (size_t)luaL_checkinteger(L, 3), line;
    int fd, rc, end = 0;
    tg_error_t err;
    line = (size_t)luaL_optinteger(L, 4, 0);
    fd = check_fd(L, 5);
    tg_buf_reset(&u->out);
    rc = tg_validate_reader(u->e, sc->s, r, want, fd, &line, &u->out, &end, &err);
    return push_reader_chunk(L, rc, end, &err, line);
}

/* ---- registry images ------------------------------------------------------------ */

static const char *const image_formats[] = {"auto", "native", "openai", "anthropic", "mcp", NULL};

/* engine:image_write({{text=, server=, label=, path=, format=, trusted=}, ...})
 *   -> image bytes | nil, message, code */
static int l_engine_image_write(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t n, i;
    tg_image_source_t *src;
    tg_error_t err;
    luaL_checktype(L, 2, LUA_TTABLE);
    n = (size_t)luaL_len(L, 2);
    src = lua_newuserdatauv(L, (n ? n : 1) * sizeof *src, 0); /* Lua-owned: a raise leaks nothing */
    for (i = 0; i < n; i++) {
        tg_image_source_t *s = &src[i];
        memset(s, 0, sizeof *s);
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        luaL_checktype(L, -1, LUA_TTABLE);
        lua_getfield(L, -1, "text");
        s->text = check_string(L, -1, &s->text_len);
        lua_getfield(L, -2, "server");
        if (!lua_isnil(L, -1))
            s->server = check_string(L, -1, &s->server_len);
        lua_getfield(L, -3, "label");
        if (!lua_isnil(L, -1))
            s->label = check_string(L, -1, &s->label_len);
        lua_getfield(L, -4, "path");
        if (!lua_isnil(L, -1))
            s->path = check_string(L, -1, &s->path_len);
        lua_getfield(L, -5, "format");
        s->format = luaL_checkoption(L, -1, "auto", image_formats);
        lua_getfield(L, -6, "trusted");
        s->trusted = lua_isnil(L, -1) || lua_toboolean(L, -1);
        lua_pop(L, 6); /* the strings stay alive in the source table (index -1) */
        lua_pop(L, 1);
    }
    tg_buf_reset(&u->out);
    if (tg_image_write(u->e, src, n, &u->out, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushlstring(L, u->out.data, u->out.len);
    return 1;
}

/* engine:image_map(path) -> image | nil, message, code */
static int l_engine_image_map(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    const char *path = check_string(L, 2, NULL);
    tg_error_t err;
    image_ud *im = new_child(L, sizeof *im, IMAGE_MT, 1, 2);
    if (tg_image_map(u->e, path, &im->img, &err) != TG_OK)
        return push_error(L, &err, 0);
    return 1;
}

/* engine:image_open(bytes) -> image | nil, message, code, offset; the
 * image keeps the string alive (its second user value) */
static int l_engine_image_open(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    size_t len;
    const char *s = check_string(L, 2, &len);
    tg_error_t err;
    image_ud *im = new_child(L, sizeof *im, IMAGE_MT, 1, 2);
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 2);
    if (tg_image_open(u->e, s, len, &im->img, &err) != TG_OK)
        return push_error(L, &err, 1);
    return 1;
}

static tg_image_t *check_image(lua_State *L)
{
    image_ud *im = luaL_checkudata(L, 1, IMAGE_MT);
    if (!im->img)
        luaL_error(L, "registry image used after free");
    return im->img;
}

static int l_image_gc(lua_State *L)
{
    image_ud *im = luaL_checkudata(L, 1, IMAGE_MT);
    tg_image_free(im->img);
    im->img = NULL;
    return 0;
}

static int l_image_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_image_count(check_image(L)));
    return 1;
}

/* image:source(i) -> {server=, label=, path=, format=, trusted=, hash=} (i from 1) */
static int l_image_source(lua_State *L)
{
    tg_image_t *img = check_image(L);
    lua_Integer i = luaL_checkinteger(L, 2);
    tg_image_source_t s;
    char hex[TG_HASH_HEX];
    if (i < 1 || (size_t)i > tg_image_count(img))
        luaL_argerror(L, 2, "no such source");
    tg_image_source(img, (size_t)i - 1, &s);
    lua_createtable(L, 0, 6);
    if (s.server) {
        lua_pushlstring(L, s.server, s.server_len);
        lua_setfield(L, -2, "server");
    }
    lua_pushlstring(L, s.label, s.label_len);
    lua_setfield(L, -2, "label");
    lua_pushlstring(L, s.path, s.path_len);
    lua_setfield(L, -2, "path");
    lua_pushstring(L, image_formats[s.format]);
    lua_setfield(L, -2, "format");
    lua_pushboolean(L, s.trusted);
    lua_setfield(L, -2, "trusted");
    tg_hash128_hex(&s.hash, hex);
    lua_pushlstring(L, hex, 32);
    lua_setfield(L, -2, "hash");
    return 1;
}

/* image:parse(i) -> doc | nil, message, code, offset: source i's text,
 * parsed straight from the image */
static int l_image_parse(lua_State *L)
{
    tg_image_t *img = check_image(L);
    lua_Integer i = luaL_checkinteger(L, 2);
    tg_image_source_t s;
    tg_error_t err;
    engine_ud *u;
    doc_ud *d;
    if (i < 1 || (size_t)i > tg_image_count(img))
        luaL_argerror(L, 2, "no such source");
    tg_image_source(img, (size_t)i - 1, &s);
    u = engine_of(L, 1);
    lua_getiuservalue(L, 1, 1); /* the engine, the doc's owner */
    d = new_child(L, sizeof *d, DOC_MT, -1, 1);
    if (tg_parse_registry(u->e, s.text, s.text_len, &d->d, &err) != TG_OK)
        return push_error(L, &err, 1);
    return 1;
}

/* image:check_sources() -> true | nil, message, code */
static int l_image_check_sources(lua_State *L)
{
    tg_error_t err;
    if (tg_image_check_sources(check_image(L), &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    return 1;
}

/* is_image(bytes) -> whether they start with a registry image's magic */
static int l_is_image(lua_State *L)
{
    size_t len;
    const char *s = check_string(L, 1, &len);
    lua_pushboolean(L, tg_image_is(s, len));
    return 1;
}

/* ---- registries ---------------------------------------------------------------- */

static int l_engine_registry(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_error_t err;
    registry_ud *r = new_child(L, sizeof *r, REGISTRY_MT, 1, 1);
    if (!(r->r = tg_registry_new(u->e, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_registry_gc(lua_State *L)
{
    registry_ud *r = luaL_checkudata(L, 1, REGISTRY_MT);
    tg_registry_free(r->r);
    r->r = NULL;
    return 0;
}

static tg_registry_t *check_registry(lua_State *L)
{
    return ((registry_ud *)luaL_checkudata(L, 1, REGISTRY_MT))->r;
}

/* registry:add(server, name, description, input_node, output_node, opts)
 *   -> index (from 1) | nil, message, code, pointer */
static int l_registry_add(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    size_t slen, nlen, dlen = 0;
    const char *server = check_string(L, 2, &slen), *name = check_string(L, 3, &nlen);
    const char *desc = lua_isnoneornil(L, 4) ? NULL : check_string(L, 4, &dlen);
    const tg_value_t *input = opt_node(L, 5), *output = opt_node(L, 6);
    tg_schema_options_t o;
    tg_error_t err;
    size_t index;
    read_schema_options(L, 7, &o);
    if (tg_registry_add(r, server, slen, name, nlen, desc, dlen, input, output, &o, &index, &err) !=
        TG_OK)
        return push_schema_error(L, &err);
    lua_pushinteger(L, (lua_Integer)index + 1);
    return 1;
}

static int l_registry_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_registry_count(check_registry(L)));
    return 1;
}

static int l_registry_find(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    size_t slen, nlen;
    const char *server = check_string(L, 2, &slen), *name = check_string(L, 3, &nlen);
    long i = tg_registry_find(r, server, slen, name, nlen);
    if (i < 0)
        return lua_pushnil(L), 1;
    lua_pushinteger(L, (lua_Integer)i + 1);
    return 1;
}

static void push_index_list(lua_State *L, const size_t *idx, size_t n);

/* registry:validate_output(i, node) -> findings (empty when valid)
 *   | nil, message, code (NO_OUTPUT_SCHEMA when the tool declares none) */
static int l_registry_validate_output(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    lua_Integer i = luaL_checkinteger(L, 2);
    const tg_value_t *v = check_node(L, 3)->v;
    engine_ud *u = engine_of(L, 1);
    const tg_schema_t *s = i >= 1 ? tg_registry_output_schema(r, (size_t)(i - 1)) : NULL;
    size_t count;
    tg_error_t err;
    if (!s) {
        lua_pushnil(L);
        lua_pushliteral(L, "the tool declares no output schema");
        lua_pushliteral(L, "NO_OUTPUT_SCHEMA");
        return 3;
    }
    if (tg_validate(u->e, s, v, u->findings, TG_RUNG_MAX_FINDINGS, &count, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_createtable(L, (int)count, 0);
    for (size_t k = 0; k < count; k++) {
        push_finding(L, &u->findings[k]);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    return 1;
}

/* registry:model_text(i|nil, name, deferred, code, path, message, approval_id, hint)
 *   -> the text a model reads about a refused or deferred call (tg_model_text) */
static int l_registry_model_text(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    lua_Integer i = luaL_optinteger(L, 2, 0);
    const char *name = check_string(L, 3, NULL);
    int deferred = lua_toboolean(L, 4);
    const char *code = check_string(L, 5, NULL);
    const char *path = luaL_optstring(L, 6, NULL);
    const char *message = luaL_optstring(L, 7, NULL);
    const char *approval_id = luaL_optstring(L, 8, NULL);
    const char *hint = luaL_optstring(L, 9, NULL);
    engine_ud *u = engine_of(L, 1);
    tg_error_t err;
    tg_buf_reset(&u->out);
    if (tg_model_text(r, (long)i - 1, name, deferred, code, path, message, approval_id, hint,
                      &u->out, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushlstring(L, u->out.data, u->out.len);
    return 1;
}

/* registry:find_name(name) -> indexes (from 1) of the tools with that name */
static int l_registry_find_name(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    size_t nlen, small[64], *idx = small;
    const char *name = check_string(L, 2, &nlen);
    size_t n = tg_registry_find_name(r, name, nlen, NULL, 0);
    if (n > 64) /* rare: many servers share one name; the GC owns this buffer */
        idx = lua_newuserdatauv(L, n * sizeof *idx, 0);
    tg_registry_find_name(r, name, nlen, idx, n);
    push_index_list(L, idx, n);
    return 1;
}

/* registry:tool(i) -> {server =, name =, pin = hex} | nil */
static int l_registry_tool(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    lua_Integer i = luaL_checkinteger(L, 2);
    const tg_hash128_t *pin = i >= 1 ? tg_registry_pin(r, (size_t)(i - 1)) : NULL;
    size_t len;
    const char *s;
    char hex[TG_HASH_HEX];
    if (!pin)
        return lua_pushnil(L), 1;
    lua_createtable(L, 0, 3);
    s = tg_registry_server(r, (size_t)(i - 1), &len);
    lua_pushlstring(L, s, len);
    lua_setfield(L, -2, "server");
    s = tg_registry_name(r, (size_t)(i - 1), &len);
    lua_pushlstring(L, s, len);
    lua_setfield(L, -2, "name");
    tg_hash128_hex(pin, hex);
    lua_pushlstring(L, hex, 32);
    lua_setfield(L, -2, "pin");
    return 1;
}

static void push_index_list(lua_State *L, const size_t *idx, size_t n)
{
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushinteger(L, (lua_Integer)idx[i] + 1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* registry:check(server|nil, name, args_node, report_also) -> result | nil, message, code */
static int l_registry_check(lua_State *L)
{
    tg_registry_t *r = check_registry(L);
    size_t slen = 0, nlen;
    const char *server = lua_isnoneornil(L, 2) ? NULL : check_string(L, 2, &slen);
    const char *name = check_string(L, 3, &nlen);
    const tg_value_t *args = check_node(L, 4)->v;
    int also = lua_toboolean(L, 5);
    engine_ud *u = engine_of(L, 1);
    tg_rung_result_t *res = &u->rung;
    tg_error_t err;
    if (tg_rung_check(u->e, r, server, slen, name, nlen, args, also, res, &err) != TG_OK)
        return push_error(L, &err, 0);
    /* the lists are present only when not empty: no tables built for nothing */
    lua_createtable(L, 0, 6);
    lua_pushstring(L, resolution_names[res->resolution]);
    lua_setfield(L, -2, "resolution");
    if (res->resolution == TG_RESOLVED) {
        lua_pushinteger(L, (lua_Integer)res->tool + 1);
        lua_setfield(L, -2, "tool");
    }
    lua_pushinteger(L, (lua_Integer)res->n_candidates);
    lua_setfield(L, -2, "n_candidates");
    if (res->n_candidates) {
        push_index_list(L, res->candidates,
                        res->n_candidates < TG_RUNG_MAX_FINDINGS ? res->n_candidates
                                                                 : TG_RUNG_MAX_FINDINGS);
        lua_setfield(L, -2, "candidates");
    }
    if (res->n_findings) {
        lua_createtable(L, (int)res->n_findings, 0);
        for (size_t i = 0; i < res->n_findings; i++) {
            push_finding(L, &res->findings[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, "findings");
    }
    if (res->n_also) {
        push_index_list(L, res->also, res->n_also);
        lua_setfield(L, -2, "also");
    }
    return 1;
}

/* ---- normalization plans and agreement ----------------------------------------- */

static const char *const op_names[] = {"trim", "lower", "path", "id", NULL};
static const unsigned op_bits[] = {TG_NORM_TRIM, TG_NORM_LOWER, TG_NORM_PATH, TG_NORM_ID};

/* engine:norm() -> norm | nil, message, code */
static int l_engine_norm(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_error_t err;
    norm_ud *p = new_child(L, sizeof *p, NORM_MT, 1, 1);
    if (!(p->n = tg_norm_new(u->e, &err)))
        return push_error(L, &err, 0);
    return 1;
}

static int l_norm_gc(lua_State *L)
{
    norm_ud *p = luaL_checkudata(L, 1, NORM_MT);
    tg_norm_free(p->n);
    p->n = NULL;
    return 0;
}

static tg_norm_t *check_norm(lua_State *L, int i)
{
    return ((norm_ud *)luaL_checkudata(L, i, NORM_MT))->n;
}

static const tg_norm_t *opt_norm(lua_State *L, int i)
{
    if (lua_isnoneornil(L, i))
        return NULL;
    return check_norm(L, i);
}

/* The bits of the list of operation names at index i; misuse raises. */
static unsigned read_ops(lua_State *L, int i, const char *fname)
{
    unsigned ops = 0;
    lua_Integer count;
    luaL_checktype(L, i, LUA_TTABLE);
    count = luaL_len(L, i);
    for (lua_Integer k = 1; k <= count; k++) {
        const char *name;
        int j;
        if (lua_geti(L, i, k) != LUA_TSTRING)
            luaL_error(L, "bad argument #2 to '%s' (operation %d is not a string)", fname, (int)k);
        name = lua_tostring(L, -1);
        for (j = 0; op_names[j] && strcmp(op_names[j], name) != 0; j++)
            ;
        if (!op_names[j])
            luaL_error(L, "bad argument #2 to '%s' (unknown operation '%s')", fname, name);
        ops |= op_bits[j];
        lua_pop(L, 1);
    }
    return ops;
}

/* norm:apply(s, {"trim", "lower", "path", "id"...}) -> s as those operations
 * leave it ("id" with this plan's aliases) | nil, message, code */
static int l_norm_apply(lua_State *L)
{
    tg_norm_t *n = check_norm(L, 1);
    size_t len;
    const char *str = check_string(L, 2, &len);
    unsigned ops = read_ops(L, 3, "apply");
    engine_ud *u = engine_of(L, 1);
    tg_error_t err;
    tg_buf_reset(&u->out);
    if (tg_norm_string(n, ops, str, len, &u->out, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushlstring(L, u->out.data, u->out.len);
    return 1;
}

/* norm:add_rule(pattern, {"trim", "lower", "path", "id"...}) -> true | nil, message, code
 * (an unknown operation name is misuse and raises) */
static int l_norm_add_rule(lua_State *L)
{
    tg_norm_t *n = check_norm(L, 1);
    size_t len;
    const char *pattern = check_string(L, 2, &len);
    unsigned ops = read_ops(L, 3, "add_rule");
    tg_error_t err;
    if (tg_norm_add_rule(n, pattern, len, ops, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    return 1;
}

/* norm:add_alias(from, to) -> true | nil, message, code */
static int l_norm_add_alias(lua_State *L)
{
    tg_norm_t *n = check_norm(L, 1);
    size_t flen, tlen;
    const char *from = check_string(L, 2, &flen), *to = check_string(L, 3, &tlen);
    tg_error_t err;
    if (tg_norm_add_alias(n, from, flen, to, tlen, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_pushboolean(L, 1);
    return 1;
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads item i of the list at index idx, 32 hex digits, into *h; raises
 * when it is anything else. */
static void read_hex(lua_State *L, int idx, lua_Integer i, tg_hash128_t *h)
{
    size_t len;
    const char *s = NULL;
    if (lua_geti(L, idx, i) == LUA_TSTRING)
        s = lua_tolstring(L, -1, &len);
    if (s && len == sizeof *h) { /* a node:digest() token */
        memcpy(h, s, sizeof *h);
        lua_pop(L, 1);
        return;
    }
    if (!s || len != 32)
        luaL_error(L, "bad argument #1 to 'agree' (item %d is not 32 hex digits)", (int)i);
    h->hi = h->lo = 0;
    for (int k = 0; k < 32; k++) {
        int d = hex_digit((unsigned char)s[k]);
        if (d < 0)
            luaL_error(L, "bad argument #1 to 'agree' (item %d is not 32 hex digits)", (int)i);
        if (k < 16)
            h->hi = (h->hi << 4) | (uint64_t)d;
        else
            h->lo = (h->lo << 4) | (uint64_t)d;
    }
    lua_pop(L, 1);
}

/* engine:agree({hex or digest token, ...})
 *   -> {n =, distinct =, modal_count =, representative = (from 1)}
 *   | nil, message, code */
static int l_engine_agree(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    tg_hash128_t small[32], *v = small;
    tg_agreement_t a;
    tg_error_t err;
    lua_Integer n;
    luaL_checktype(L, 2, LUA_TTABLE);
    n = luaL_len(L, 2);
    if (n > 32) /* the GC owns this buffer: nothing to free if we raise */
        v = lua_newuserdatauv(L, (size_t)n * sizeof *v, 0);
    for (lua_Integer i = 1; i <= n; i++)
        read_hex(L, 2, i, &v[i - 1]);
    if (tg_agree(u->e, v, (size_t)(n > 0 ? n : 0), &a, &err) != TG_OK)
        return push_error(L, &err, 0);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, (lua_Integer)a.n);
    lua_setfield(L, -2, "n");
    lua_pushinteger(L, (lua_Integer)a.distinct);
    lua_setfield(L, -2, "distinct");
    lua_pushinteger(L, (lua_Integer)a.modal_count);
    lua_setfield(L, -2, "modal_count");
    lua_pushinteger(L, (lua_Integer)a.representative + 1);
    lua_setfield(L, -2, "representative");
    return 1;
}

/* The first call asks for this many pointers; a caller that wants more and
 * has more gets a second call sized to the answer. */
#define POINTERS_FIRST 64

/* engine:pointer_agreement({node, ...}, rep (from 1), norm | nil, max)
 *   -> {{pointer =, agree =, present =}, ...} (lowest agreement first), total
 *   | nil, message, code */
static int l_engine_pointer_agreement(lua_State *L)
{
    engine_ud *u = check_engine(L, 1);
    lua_Integer n, rep, max;
    const tg_norm_t *plan;
    const tg_value_t **docs;
    tg_pointer_agreement_t *out;
    size_t count, asked, shown;
    tg_error_t err;

    luaL_checktype(L, 2, LUA_TTABLE);
    n = luaL_len(L, 2);
    rep = luaL_checkinteger(L, 3);
    luaL_argcheck(L, rep >= 1 && rep <= n, 3, "representative out of range");
    plan = opt_norm(L, 4);
    max = luaL_checkinteger(L, 5);
    luaL_argcheck(L, max >= 0, 5, "max must not be negative");
    docs = lua_newuserdatauv(L, (size_t)n * sizeof *docs, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        node_ud *nd;
        lua_geti(L, 2, i);
        if (!(nd = luaL_testudata(L, -1, NODE_MT)))
            return luaL_error(
                L, "bad argument #1 to 'pointer_agreement' (item %d is not a toolgate node)",
                (int)i);
        check_alive(L, -1);
        docs[i - 1] = nd->v; /* the list keeps the node, and so its document, alive */
        lua_pop(L, 1);
    }
    asked = max < POINTERS_FIRST ? (size_t)max : POINTERS_FIRST;
    out = lua_newuserdatauv(L, (asked ? asked : 1) * sizeof *out, 0);
    if (tg_pointer_agreement(u->e, docs, (size_t)n, (size_t)(rep - 1), plan, out, asked, &count,
                             &err) != TG_OK)
        return push_error(L, &err, 0);
    if (count > asked && (size_t)max > asked) {
        asked = (size_t)max < count ? (size_t)max : count;
        out = lua_newuserdatauv(L, asked * sizeof *out, 0);
        if (tg_pointer_agreement(u->e, docs, (size_t)n, (size_t)(rep - 1), plan, out, asked, &count,
                                 &err) != TG_OK)
            return push_error(L, &err, 0);
    }
    shown = count < asked ? count : asked;
    lua_createtable(L, (int)shown, 0);
    for (size_t i = 0; i < shown; i++) {
        lua_createtable(L, 0, 3);
        lua_pushstring(L, out[i].pointer);
        lua_setfield(L, -2, "pointer");
        lua_pushinteger(L, (lua_Integer)out[i].agree);
        lua_setfield(L, -2, "agree");
        lua_pushinteger(L, (lua_Integer)out[i].present);
        lua_setfield(L, -2, "present");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_pushinteger(L, (lua_Integer)count);
    return 2;
}

/* ---- plain functions ---------------------------------------------------------- */

/* format_number(x) -> ECMAScript string | nil, message, code */
static int l_format_number(lua_State *L)
{
    char buf[TG_NUMBER_BUF];
    size_t n;
    if (lua_type(L, 1) != LUA_TNUMBER) /* no string coercion: as in the FFI binding */
        luaL_typeerror(L, 1, "number");
    n = tg_number_format((double)lua_tonumber(L, 1), buf);
    if (!n) {
        lua_pushnil(L);
        lua_pushstring(L, "NaN and Infinity have no JSON form");
        lua_pushstring(L, tg_code_name(TG_E_NONFINITE));
        return 3;
    }
    lua_pushlstring(L, buf, n);
    return 1;
}

/* hash_bytes(s) -> 32 hex digits of XXH3-128(s), no canonicalization */
static int l_hash_bytes(lua_State *L)
{
    size_t len;
    const char *s = check_string(L, 1, &len);
    char hex[TG_HASH_HEX];
    tg_hash128_t h;
    tg_hash128(s, len, &h);
    tg_hash128_hex(&h, hex);
    lua_pushlstring(L, hex, 32);
    return 1;
}

/* A string field of the record's table: absent when nil or false. */
static tg_text_t record_text(lua_State *L, const char *field)
{
    tg_text_t t = {NULL, 0};
    if (lua_getfield(L, 1, field) == LUA_TSTRING)
        t.p = lua_tolstring(L, -1, &t.n);
    else if (!lua_isnil(L, -1) && !(lua_isboolean(L, -1) && !lua_toboolean(L, -1)))
        luaL_error(L, "decision_record: %s must be a string", field);
    lua_pop(L, 1); /* (the string stays alive: the table holds it) */
    return t;
}

/* An integer field: -1 when nil. */
static long long record_integer(lua_State *L, const char *field)
{
    long long v = -1;
    if (lua_getfield(L, 1, field) != LUA_TNIL) {
        int ok;
        v = (long long)lua_tointegerx(L, -1, &ok);
        if (!ok || v < 0)
            luaL_error(L, "decision_record: %s must be a whole number >= 0", field);
    }
    lua_pop(L, 1);
    return v;
}

static int record_bool(lua_State *L, const char *field)
{
    int b = (lua_getfield(L, 1, field), lua_toboolean(L, -1));
    lua_pop(L, 1);
    return b;
}

/* decision_record(t) -> the line of a decision's record (tg_decision_record):
 * t's fields as the struct's, strings (nil: absent), enforced, approved
 * and arguments_truncated booleans (arguments_truncated nil: no member),
 * time a number, worker and arguments_bytes integers (nil: none). */
static int l_decision_record(lua_State *L)
{
    tg_decision_record_t r;
    char buf[4096];
    luaL_checktype(L, 1, LUA_TTABLE);
    r.route = record_text(L, "route"), r.source = record_text(L, "source");
    r.trace_id = record_text(L, "trace_id"), r.span_id = record_text(L, "span_id");
    lua_getfield(L, 1, "time");
    r.time = luaL_checknumber(L, -1);
    lua_pop(L, 1);
    r.worker = record_integer(L, "worker");
    r.phase = record_text(L, "phase"), r.decision = record_text(L, "decision");
    r.outcome = record_text(L, "outcome"), r.mode = record_text(L, "mode");
    r.enforced = record_bool(L, "enforced"), r.approved = record_bool(L, "approved");
    r.approval_id = record_text(L, "approval_id"), r.principal = record_text(L, "principal");
    r.arguments = record_text(L, "arguments"),
    r.arguments_bytes = record_integer(L, "arguments_bytes");
    r.arguments_digest = record_text(L, "arguments_digest");
    r.arguments_redacted = record_text(L, "arguments_redacted");
    lua_getfield(L, 1, "arguments_truncated");
    r.arguments_truncated = lua_isnil(L, -1) ? -1 : lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!r.source.p || !r.decision.p || !r.outcome.p || !r.mode.p)
        return luaL_error(L, "decision_record: source, decision, outcome and mode are required");
    size_t n = tg_decision_record(&r, buf, sizeof buf);
    if (n <= sizeof buf) {
        lua_pushlstring(L, buf, n);
        return 1;
    }
    luaL_Buffer b;
    char *big = luaL_buffinitsize(L, &b, n);
    tg_decision_record(&r, big, n);
    luaL_pushresultsize(&b, n);
    return 1;
}

static int l_default_limits(lua_State *L)
{
    tg_limits_t lim;
    tg_limits_default(&lim);
    push_limits(L, &lim);
    return 1;
}

static const luaL_Reg engine_methods[] = {
    {"canon", l_engine_canon},
    {"hash", l_engine_hash},
    {"limits", l_engine_limits},
    {"set_limits", l_engine_set_limits},
    {"parse", l_engine_parse},
    {"parse_registry", l_engine_parse_registry},
    {"image_write", l_engine_image_write},
    {"image_map", l_engine_image_map},
    {"image_open", l_engine_image_open},
    {"decode_call", l_engine_decode_call},
    {"decode_calls", l_engine_decode_calls},
    {"compile_schema", l_engine_compile_schema},
    {"registry", l_engine_registry},
    {"norm", l_engine_norm},
    {"agree", l_engine_agree},
    {"pointer_agreement", l_engine_pointer_agreement},
    {"decider", l_engine_decider},
    {"canon_lines", l_engine_canon_lines},
    {"canon_reader", l_engine_canon_reader},
    {"store", l_engine_store},
    {"workers", l_engine_workers},
    {"reader", l_engine_reader},
    {"write_fd", l_engine_write_fd},
    {NULL, NULL},
};

/* doc:free(), call:free() and calls:free() release the C memory now rather than at the
 * next garbage collection (which knows nothing of its size); the object and
 * its nodes are unusable afterwards. */
static const luaL_Reg doc_methods[] = {{"root", l_doc_root}, {"free", l_doc_gc}, {NULL, NULL}};

static const luaL_Reg node_methods[] = {
    {"type", l_node_type},   {"len", l_node_len},         {"offset", l_node_offset},
    {"at", l_node_at},       {"key", l_node_key},         {"get", l_node_get},
    {"value", l_node_value}, {"text", l_node_text},       {"canon", l_node_canon},
    {"hash", l_node_hash},   {"digest", l_node_digest},   {"exact", l_node_exact},
    {"mcp", l_node_mcp},     {"has_key", l_node_has_key}, {NULL, NULL},
};

/* A view's free() only makes the view unusable: its set owns it. */
static const luaL_Reg call_methods[] = {
    {"format", l_call_format},
    {"shape", l_call_shape},
    {"server", l_call_server},
    {"name", l_call_name},
    {"arguments", l_call_arguments},
    {"id", l_call_id},
    {"context", l_call_context},
    {"free", l_call_gc},
    {NULL, NULL},
};

static const luaL_Reg calls_methods[] = {
    {"count", l_calls_count},
    {"shape", l_calls_shape},
    {"at", l_calls_at},
    {"free", l_calls_gc},
    {NULL, NULL},
};

static const luaL_Reg schema_methods[] = {{"validate", l_schema_validate},
                                          {"validate_lines", l_schema_validate_lines},
                                          {"validate_reader", l_schema_validate_reader},
                                          {NULL, NULL}};

static const luaL_Reg registry_methods[] = {
    {"add", l_registry_add},
    {"count", l_registry_count},
    {"find", l_registry_find},
    {"find_name", l_registry_find_name},
    {"tool", l_registry_tool},
    {"check", l_registry_check},
    {"validate_output", l_registry_validate_output},
    {"model_text", l_registry_model_text},
    {"policy", l_registry_policy},
    {NULL, NULL},
};

static const luaL_Reg policy_methods[] = {{"context", l_policy_context},
                                          {"set_norm", l_policy_set_norm},
                                          {"sweep", l_policy_sweep},
                                          {NULL, NULL}};

static const luaL_Reg sweep_methods[] = {
    {"count", l_sweep_count}, {"tool_label", l_sweep_tool_label}, {"run", l_sweep_run},
    {"plan", l_sweep_plan},   {"run_with", l_sweep_run_with},     {NULL, NULL}};

static const luaL_Reg decider_methods[] = {
    {"check", l_decider_check},
    {"next", l_decider_next},
    {"answer", l_decider_answer},
    {"call", l_decider_call},
    {"resolved", l_decider_resolved},
    {"verdict_so_far", l_decider_verdict_so_far},
    {"mcp", l_decider_mcp},
    {"check_lines", l_decider_check_lines},
    {"check_reader", l_decider_check_reader},
    {"classify", l_decider_classify},
    {"classify_lines", l_decider_classify_lines},
    {"classify_reader", l_decider_classify_reader},
    {"query", l_decider_query},
    {"resolve", l_decider_resolve},
    {"store_tool", l_decider_store_tool},
    {"record", l_decider_record},
    {"quarantines", l_decider_quarantines},
    {"sweep_lines", l_decider_sweep_lines},
    {NULL, NULL},
};

static const luaL_Reg norm_methods[] = {
    {"add_rule", l_norm_add_rule},
    {"add_alias", l_norm_add_alias},
    {"apply", l_norm_apply},
    {NULL, NULL},
};

/* ---- Lua values to JSON text, in one walk --------------------------------------- */

/* toolgate.value.encode's rules (lua/toolgate/value.lua's header says them;
 * spec/value_spec.lua holds this walk and value.lua's to the same bytes):
 * nil and the null mark are null; integers exactly, floats in ECMAScript
 * form, NaN and infinities refused; strings escaped as JSON; an exact box
 * its text; a table marked as an array, or with keys exactly 1..n, an array;
 * one with string keys an object, an empty one {} unless marked.  The text
 * grows in a userdata of its own (freed by __gc), so a Lua error cannot
 * leak it. */
typedef struct {
    char *data;
    size_t len, cap;
    lua_Alloc alloc;
    void *ud;
} text_ud;

#define ENC_MAX_DEPTH 1000
#define TEXT_MT "toolgate.core.text"

static int l_text_gc(lua_State *L)
{
    text_ud *t = luaL_checkudata(L, 1, TEXT_MT);
    if (t->data)
        t->alloc(t->ud, t->data, t->cap, 0);
    t->data = NULL;
    return 0;
}

static int put_text(text_ud *t, const char *s, size_t n)
{
    if (n > t->cap - t->len) {
        size_t cap = t->cap ? t->cap : 256;
        char *p;
        while (cap - t->len < n) {
            if (cap > SIZE_MAX / 2)
                return 0;
            cap *= 2;
        }
        if (!(p = t->alloc(t->ud, t->data, t->cap, cap)))
            return 0;
        t->data = p;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    return 1;
}

static int put_quoted(text_ud *t, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    if (!put_text(t, "\"", 1))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        size_t k = 6;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c, k = 2;
            break;
        case '\b':
            esc[1] = 'b', k = 2;
            break;
        case '\f':
            esc[1] = 'f', k = 2;
            break;
        case '\n':
            esc[1] = 'n', k = 2;
            break;
        case '\r':
            esc[1] = 'r', k = 2;
            break;
        case '\t':
            esc[1] = 't', k = 2;
            break;
        default:
            break;
        }
        if (!put_text(t, s + run, i - run) || !put_text(t, esc, k))
            return 0;
        run = i + 1;
    }
    return put_text(t, s + run, n - run) && put_text(t, "\"", 1);
}

/* The marks: upvalue 1 the null mark, 2 toolgate.value.array_mt, 3 the exact
 * box's metatable, 4 a set of other array metatables (lua-cjson's), 5
 * cjson.empty_array. */
static const char *encode_value(lua_State *L, text_ud *t, int idx, int depth);

static int is_number_text(const char *s, size_t n)
{
    size_t i = 0, d;
    if (i < n && s[i] == '-')
        i++;
    for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        ;
    if (i == d || (s[d] == '0' && i - d > 1))
        return 0;
    if (i < n && s[i] == '.') {
        for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return 0;
    }
    return i == n;
}

static const char *encode_table(lua_State *L, text_ud *t, int idx, int depth)
{
    lua_Integer n = 0, max = 0, count = 0;
    int marked = 0, has_string = 0, has_other = 0;
    const char *err;
    if (lua_getmetatable(L, idx)) {
        if (lua_rawequal(L, -1, lua_upvalueindex(3))) {
            size_t len;
            const char *text;
            lua_pop(L, 1);
            lua_getfield(L, idx, "text");
            text = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
            if (!text || !is_number_text(text, len)) {
                lua_pop(L, 1);
                return "an exact number box must hold a JSON number text";
            }
            err = put_text(t, text, len) ? NULL : "out of memory";
            lua_pop(L, 1);
            return err;
        }
        marked = lua_rawequal(L, -1, lua_upvalueindex(2));
        if (!marked) {
            lua_pushvalue(L, -1);
            marked = lua_rawget(L, lua_upvalueindex(4)) != LUA_TNIL;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    if (marked) {
        n = (lua_Integer)lua_rawlen(L, idx);
    } else {
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            lua_pop(L, 1);
            count++;
            if (lua_type(L, -1) == LUA_TSTRING) {
                has_string = 1;
            } else if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1) {
                lua_Integer k = lua_tointeger(L, -1);
                if (k > max)
                    max = k;
            } else if (lua_type(L, -1) == LUA_TNUMBER) {
                lua_Number k = lua_tonumber(L, -1);
                if (k >= 1 && k == (lua_Number)(lua_Integer)k) {
                    if ((lua_Integer)k > max)
                        max = (lua_Integer)k;
                } else {
                    has_other = 1;
                }
            } else {
                has_other = 1;
            }
        }
        if (count && !has_string && !has_other) {
            if (max != count) {
                lua_pushfstring(L, "sparse array (keys 1..%I with %I values)", max, count);
                return lua_tostring(L, -1);
            }
            marked = 1;
            n = count;
        } else if (count && (has_other || (has_string && max))) {
            return "object key of a type other than string (keys must all be strings, or exactly 1..n)";
        }
    }
    if (marked) {
        if (!put_text(t, "[", 1))
            return "out of memory";
        for (lua_Integer i = 1; i <= n; i++) {
            if (i > 1 && !put_text(t, ",", 1))
                return "out of memory";
            lua_rawgeti(L, idx, i);
            if ((err = encode_value(L, t, lua_gettop(L), depth + 1)) != NULL)
                return err;
            lua_pop(L, 1);
        }
        return put_text(t, "]", 1) ? NULL : "out of memory";
    }
    if (!put_text(t, "{", 1))
        return "out of memory";
    count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        size_t len;
        const char *k = lua_tolstring(L, -2, &len); /* a string: checked above */
        if ((count++ && !put_text(t, ",", 1)) || !put_quoted(t, k, len) || !put_text(t, ":", 1))
            return "out of memory";
        if ((err = encode_value(L, t, lua_gettop(L), depth + 1)) != NULL)
            return err;
        lua_pop(L, 1);
    }
    return put_text(t, "}", 1) ? NULL : "out of memory";
}

static const char *encode_value(lua_State *L, text_ud *t, int idx, int depth)
{
    if (depth > ENC_MAX_DEPTH)
        return "nested deeper than 1000 (a cycle?)";
    luaL_checkstack(L, 4, "encode");
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return put_text(t, "null", 4) ? NULL : "out of memory";
    case LUA_TBOOLEAN:
        return (lua_toboolean(L, idx) ? put_text(t, "true", 4) : put_text(t, "false", 5))
                   ? NULL
                   : "out of memory";
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            char buf[32];
            int k = snprintf(buf, sizeof buf, LUA_INTEGER_FMT, lua_tointeger(L, idx));
            return put_text(t, buf, (size_t)k) ? NULL : "out of memory";
        } else {
            char buf[TG_NUMBER_BUF];
            size_t k = tg_number_format((double)lua_tonumber(L, idx), buf);
            if (!k)
                return "NaN and Infinity have no JSON form";
            return put_text(t, buf, k) ? NULL : "out of memory";
        }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        return put_quoted(t, s, len) ? NULL : "out of memory";
    }
    case LUA_TTABLE:
        if (lua_rawequal(L, idx, lua_upvalueindex(5)))
            return put_text(t, "[]", 2) ? NULL : "out of memory";
        return encode_table(L, t, idx, depth);
    default:
        if (lua_rawequal(L, idx, lua_upvalueindex(1)))
            return put_text(t, "null", 4) ? NULL : "out of memory";
        if (lua_rawequal(L, idx, lua_upvalueindex(5)))
            return put_text(t, "[]", 2) ? NULL : "out of memory";
        lua_pushfstring(L, "cannot encode a %s as JSON", luaL_typename(L, idx));
        return lua_tostring(L, -1);
    }
}

/* encoder(null, array_mt, exact_mt, other_array_mts, empty_array) -> encode:
 * encode(v) -> JSON text | nil, message, "BAD_VALUE" */
static int l_encode(lua_State *L)
{
    text_ud *t;
    const char *err;
    luaL_checkany(L, 1);
    t = lua_newuserdatauv(L, sizeof *t, 0);
    t->data = NULL;
    t->len = t->cap = 0;
    t->alloc = lua_getallocf(L, &t->ud);
    luaL_setmetatable(L, TEXT_MT);
    lua_pushvalue(L, 1);
    err = encode_value(L, t, lua_gettop(L), 0);
    if (err) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        lua_pushliteral(L, "BAD_VALUE");
        return 3;
    }
    lua_pushlstring(L, t->data, t->len);
    return 1;
}

static int l_encoder(lua_State *L)
{
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_settop(L, 5);
    lua_pushcclosure(L, l_encode, 5);
    return 1;
}

static int l_cpu_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)tg_cpu_count());
    return 1;
}

static const luaL_Reg store_methods[] = {{"get", l_store_get},
                                         {"verified", l_store_verified},
                                         {"quarantine", l_store_quarantine},
                                         {"records", l_store_records},
                                         {NULL, NULL}};

static const luaL_Reg image_methods[] = {
    {"count", l_image_count}, {"source", l_image_source},
    {"parse", l_image_parse}, {"check_sources", l_image_check_sources},
    {"free", l_image_gc},     {NULL, NULL}};
static const luaL_Reg no_methods[] = {{NULL, NULL}};

static const luaL_Reg workers_methods[] = {{"count", l_workers_count}, {NULL, NULL}};

/* reader:close() closes what it opened now rather than at collection */
static const luaL_Reg reader_methods[] = {
    {"close", l_reader_gc}, {"lines", l_reader_lines}, {"take", l_reader_take}, {NULL, NULL}};

static const luaL_Reg functions[] = {
    {"new_engine", l_new_engine},
    {"format_number", l_format_number},
    {"hash_bytes", l_hash_bytes},
    {"decision_record", l_decision_record},
    {"default_limits", l_default_limits},
    {"is_image", l_is_image},
    {"cpu_count", l_cpu_count},
    {"encoder", l_encoder},
    {NULL, NULL},
};

LUAMOD_API int luaopen_toolgate_core_c(lua_State *L);

static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc)
{
    if (luaL_newmetatable(L, name)) {
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
        if (gc) {
            lua_pushcfunction(L, gc);
            lua_setfield(L, -2, "__gc");
        }
    }
    lua_pop(L, 1);
}

LUAMOD_API int luaopen_toolgate_core_c(lua_State *L)
{
    new_class(L, ENGINE_MT, engine_methods, l_engine_gc);
    new_class(L, DOC_MT, doc_methods, l_doc_gc);
    new_class(L, NODE_MT, node_methods, NULL);
    new_class(L, CALL_MT, call_methods, l_call_gc);
    new_class(L, CALLS_MT, calls_methods, l_calls_gc);
    new_class(L, SCHEMA_MT, schema_methods, l_schema_gc);
    new_class(L, REGISTRY_MT, registry_methods, l_registry_gc);
    new_class(L, NORM_MT, norm_methods, l_norm_gc);
    new_class(L, POLICY_MT, policy_methods, l_policy_gc);
    new_class(L, CONTEXT_MT, no_methods, l_context_gc);
    new_class(L, DECIDER_MT, decider_methods, l_decider_gc);
    new_class(L, PENDING_MT, no_methods, NULL);
    new_class(L, WORKERS_MT, workers_methods, l_workers_gc);
    new_class(L, TEXT_MT, no_methods, l_text_gc);
    new_class(L, STORE_MT, store_methods, l_store_gc);
    new_class(L, SWEEP_MT, sweep_methods, l_sweep_gc);
    new_class(L, READER_MT, reader_methods, l_reader_gc);
    new_class(L, IMAGE_MT, image_methods, l_image_gc);
    luaL_newlib(L, functions);
    lua_pushliteral(L, TG_VERSION);
    lua_setfield(L, -2, "VERSION");
    lua_pushliteral(L, "capi");
    lua_setfield(L, -2, "BINDING");
    return 1;
}
