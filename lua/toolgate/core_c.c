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

typedef struct {
    tg_engine_t *e;
    tg_buf_t out; /* reused by every call on this engine */
} engine_ud;

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
    "max_input_bytes", "max_depth", "max_string_bytes", "max_members", "max_items", NULL,
};

static size_t *limit_field(tg_limits_t *l, int i)
{
    size_t *f[] = {&l->max_input_bytes, &l->max_depth, &l->max_string_bytes,
                   &l->max_members, &l->max_items};
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
    lua_createtable(L, 0, 5);
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
    {NULL, NULL},
};

static const luaL_Reg functions[] = {
    {"new_engine", l_new_engine},
    {"format_number", l_format_number},
    {"hash_bytes", l_hash_bytes},
    {"default_limits", l_default_limits},
    {NULL, NULL},
};

LUAMOD_API int luaopen_toolgate_core_c(lua_State *L);

LUAMOD_API int luaopen_toolgate_core_c(lua_State *L)
{
    if (luaL_newmetatable(L, ENGINE_MT)) {
        luaL_newlib(L, engine_methods);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, l_engine_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushliteral(L, "toolgate.core.engine");
        lua_setfield(L, -2, "__name");
    }
    lua_pop(L, 1);
    luaL_newlib(L, functions);
    lua_pushliteral(L, TG_VERSION);
    lua_setfield(L, -2, "VERSION");
    lua_pushliteral(L, "capi");
    lua_setfield(L, -2, "BINDING");
    return 1;
}
