/* proc_c.c -- the Lua 5.4 binding of tg_proc (core/tg_proc.h): child
 * processes on pipes and signals on a descriptor, for the stdio MCP proxy.
 * lua/toolgate/proc_ffi.lua is the LuaJIT binding of the same functions;
 * toolgate.proc picks one.  Failures return nil, message (misuse raises). */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>

#include "tg_proc.h"

#define READ_CHUNK 65536
#define MAX_ARGS 4096
#define MAX_FDS 16

static int fail(lua_State *L, int rc)
{
    lua_pushnil(L);
    lua_pushstring(L, rc == -EAGAIN ? "again" : tg_proc_strerror(-rc));
    return 2;
}

/* spawn({cmd, arg...}) -> {pid =, stdin =, stdout =, stderr =} | nil, message */
static int l_spawn(lua_State *L)
{
    const char *argv[MAX_ARGS + 1];
    tg_proc_t p;
    lua_Integer i, n;
    int rc;

    luaL_checktype(L, 1, LUA_TTABLE);
    n = (lua_Integer)lua_rawlen(L, 1);
    luaL_argcheck(L, n >= 1 && n <= MAX_ARGS, 1, "a command and at most 4095 arguments expected");
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        argv[i - 1] = luaL_checkstring(L, -1);
        lua_pop(L, 1); /* the table keeps the string alive */
    }
    argv[n] = NULL;
    rc = tg_proc_spawn(argv, &p);
    if (rc != 0) {
        return fail(L, rc);
    }
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, p.pid);
    lua_setfield(L, -2, "pid");
    lua_pushinteger(L, p.in);
    lua_setfield(L, -2, "stdin");
    lua_pushinteger(L, p.out);
    lua_setfield(L, -2, "stdout");
    lua_pushinteger(L, p.err);
    lua_setfield(L, -2, "stderr");
    return 1;
}

/* signals({signo...}) -> fd | nil, message */
static int l_signals(lua_State *L)
{
    int sigs[64];
    int i, n, rc;

    luaL_checktype(L, 1, LUA_TTABLE);
    n = (int)lua_rawlen(L, 1);
    luaL_argcheck(L, n <= 64, 1, "at most 64 signals");
    for (i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        sigs[i] = (int)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
    }
    rc = tg_proc_signals(sigs, n);
    if (rc < 0) {
        return fail(L, rc);
    }
    lua_pushinteger(L, rc);
    return 1;
}

/* next_signal(fd) -> signo | nil (none waits) | nil, message */
static int l_next_signal(lua_State *L)
{
    int rc = tg_proc_next_signal((int)luaL_checkinteger(L, 1));

    if (rc < 0) {
        return fail(L, rc);
    }
    if (rc == 0) {
        lua_pushnil(L);
    } else {
        lua_pushinteger(L, rc);
    }
    return 1;
}

/* poll(fds, events, timeout_ms) -> revents (a list, 0 where nothing is
 * ready) | nil, message */
static int l_poll(lua_State *L)
{
    int fds[MAX_FDS];
    short events[MAX_FDS], revents[MAX_FDS];
    int i, n, rc;

    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    n = (int)lua_rawlen(L, 1);
    luaL_argcheck(L, n <= MAX_FDS, 1, "at most 16 descriptors");
    for (i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        fds[i] = (int)luaL_checkinteger(L, -1);
        lua_rawgeti(L, 2, i + 1);
        events[i] = (short)luaL_checkinteger(L, -1);
        lua_pop(L, 2);
    }
    rc = tg_proc_poll(fds, events, revents, n, (int)luaL_checkinteger(L, 3));
    if (rc < 0) {
        return fail(L, rc);
    }
    lua_createtable(L, n, 0);
    for (i = 0; i < n; i++) {
        lua_pushinteger(L, rc == 0 ? 0 : revents[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* read(fd) -> bytes | false (end of file) | nil, "again" | nil, message */
static int l_read(lua_State *L)
{
    luaL_Buffer b;
    char *buf;
    long n;
    int fd = (int)luaL_checkinteger(L, 1);

    buf = luaL_buffinitsize(L, &b, READ_CHUNK);
    n = tg_proc_read(fd, buf, READ_CHUNK);
    if (n < 0) {
        return fail(L, (int)n);
    }
    if (n == 0) {
        lua_pushboolean(L, 0);
        return 1;
    }
    luaL_pushresultsize(&b, (size_t)n);
    return 1;
}

/* write(fd, s, from) -> bytes written from s[from] on (0 when the pipe is
 * full) | nil, message */
static int l_write(lua_State *L)
{
    size_t len;
    int fd = (int)luaL_checkinteger(L, 1);
    const char *s = luaL_checklstring(L, 2, &len);
    lua_Integer from = luaL_optinteger(L, 3, 1);
    long n;

    luaL_argcheck(L, from >= 1 && (size_t)from <= len + 1, 3, "offset out of range");
    n = tg_proc_write(fd, s + from - 1, len - (size_t)(from - 1));
    if (n == -EAGAIN) {
        n = 0;
    }
    if (n < 0) {
        return fail(L, (int)n);
    }
    lua_pushinteger(L, n);
    return 1;
}

/* connect(host, port, timeout_ms) -> fd (a non-blocking TCP socket) | nil, message */
static int l_connect(lua_State *L)
{
    int rc = tg_proc_connect(luaL_checkstring(L, 1), (int)luaL_checkinteger(L, 2),
                             (int)luaL_checkinteger(L, 3));

    if (rc < 0) {
        return fail(L, rc);
    }
    lua_pushinteger(L, rc);
    return 1;
}

/* nonblock(fd, on) -> was_on | nil, message */
static int l_nonblock(lua_State *L)
{
    int rc = tg_proc_nonblock((int)luaL_checkinteger(L, 1), lua_toboolean(L, 2));

    if (rc < 0) {
        return fail(L, rc);
    }
    lua_pushboolean(L, rc);
    return 1;
}

/* wait(pid, nohang) -> "exited", code | "signaled", signo | false (runs) |
 * nil, message */
static int l_wait(lua_State *L)
{
    int code = 0, signo = 0;
    int rc = tg_proc_wait((int)luaL_checkinteger(L, 1), lua_toboolean(L, 2), &code, &signo);

    if (rc < 0) {
        return fail(L, rc);
    }
    if (rc == 0) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_pushstring(L, signo ? "signaled" : "exited");
    lua_pushinteger(L, signo ? signo : code);
    return 2;
}

static int l_kill(lua_State *L)
{
    int rc = tg_proc_kill((int)luaL_checkinteger(L, 1), (int)luaL_checkinteger(L, 2));

    if (rc < 0) {
        return fail(L, rc);
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_close(lua_State *L)
{
    int rc = tg_proc_close((int)luaL_checkinteger(L, 1));

    if (rc < 0) {
        return fail(L, rc);
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_signum(lua_State *L)
{
    lua_pushinteger(L, tg_proc_signum(luaL_checkstring(L, 1)));
    return 1;
}

static int l_now(lua_State *L)
{
    lua_pushnumber(L, tg_proc_now());
    return 1;
}

static int l_time(lua_State *L)
{
    lua_pushnumber(L, tg_proc_time());
    return 1;
}

/* stat(path) -> {perm =, uid =, dir =} | nil, message, errno */
static int l_stat(lua_State *L)
{
    int perm, uid, is_dir;
    int rc = tg_proc_stat(luaL_checkstring(L, 1), &perm, &uid, &is_dir);

    if (rc < 0) {
        fail(L, rc);
        lua_pushinteger(L, -rc);
        return 3;
    }
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, perm);
    lua_setfield(L, -2, "perm");
    lua_pushinteger(L, uid);
    lua_setfield(L, -2, "uid");
    lua_pushboolean(L, is_dir);
    lua_setfield(L, -2, "dir");
    return 1;
}

static int l_euid(lua_State *L)
{
    lua_pushinteger(L, tg_proc_euid());
    return 1;
}

/* mkdir(path, mode) and chmod(path, mode) -> true | nil, message, errno */
static int done(lua_State *L, int rc)
{
    if (rc < 0) {
        fail(L, rc);
        lua_pushinteger(L, -rc);
        return 3;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_mkdir(lua_State *L)
{
    return done(L, tg_proc_mkdir(luaL_checkstring(L, 1), (int)luaL_checkinteger(L, 2)));
}

static int l_chmod(lua_State *L)
{
    return done(L, tg_proc_chmod(luaL_checkstring(L, 1), (int)luaL_checkinteger(L, 2)));
}

/* datagram(path, data) -> true | nil, message, errno */
static int l_datagram(lua_State *L)
{
    size_t len;
    const char *path = luaL_checkstring(L, 1);
    const char *data = luaL_checklstring(L, 2, &len);

    return done(L, tg_proc_datagram(path, data, len));
}

static int l_umask(lua_State *L)
{
    lua_pushinteger(L, tg_proc_umask((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* clang-format off */
static const luaL_Reg functions[] = {
    {"spawn", l_spawn}, {"signals", l_signals}, {"next_signal", l_next_signal}, {"poll", l_poll},
    {"read", l_read},   {"write", l_write},     {"nonblock", l_nonblock},       {"wait", l_wait},
    {"kill", l_kill},   {"close", l_close},     {"signum", l_signum},           {"now", l_now},
    {"stat", l_stat},   {"euid", l_euid},       {"mkdir", l_mkdir},             {"chmod", l_chmod},
    {"umask", l_umask}, {"connect", l_connect}, {"datagram", l_datagram}, {"time", l_time},
    {NULL, NULL}};
/* clang-format on */

int luaopen_toolgate_proc_c(lua_State *L);

int luaopen_toolgate_proc_c(lua_State *L)
{
    static const char *const bits[] = {"POLLIN", "POLLOUT", "POLLERR", "POLLHUP", "POLLNVAL"};
    int i;

    luaL_newlib(L, functions);
    for (i = 0; i < 5; i++) {
        lua_pushinteger(L, tg_proc_poll_bits(i));
        lua_setfield(L, -2, bits[i]);
    }
    lua_pushliteral(L, "c");
    lua_setfield(L, -2, "BINDING");
    lua_pushinteger(L, READ_CHUNK);
    lua_setfield(L, -2, "READ_CHUNK");
    return 1;
}
