#!/bin/sh
# `make install` and `make uninstall`, as a user would run them (TAP; make
# test runs it as the suite "install"):
#  1. into a staging DESTDIR with PREFIX=/usr/local: the files and links are
#     where they belong, and a C program builds with
#     `pkg-config --cflags --libs toolgate` and runs;
#  2. into a scratch PREFIX: the installed toolgate command, and
#     `require "toolgate"` under Lua 5.4 and LuaJIT with nothing but the
#     interpreters' default search paths (rebased onto the scratch PREFIX),
#     so an install into /usr/local needs no LUA_PATH and no TOOLGATE_LIB;
#  3. `make uninstall` leaves no file behind in either.
set -u
BUILD=${BUILD:-build}
LUA=${LUA:-lua5.4}
LUAJIT=${LUAJIT:-luajit}
CC=${CC:-cc}
top=$PWD
work="$top/$BUILD/test-install"
rm -rf "$work"
mkdir -p "$work"
n=0

. "$top/mk/tap.sh"

# run NAME LOG COMMAND...: ok when COMMAND exits 0
run() {
  name=$1 log=$2
  shift 2
  if "$@" >"$log" 2>&1; then ok "$name"; else not_ok "$name" "$log"; fi
}
# make with the knobs of this build, quietly; ldconfig only for real installs.
mk() {
  make --no-print-directory -C "$top" BUILD="$BUILD" LDCONFIG=true "$@"
}

# ---- 1. DESTDIR staging, PREFIX=/usr/local -----------------------------------
dest="$work/dest"
p="$dest/usr/local"
run "make install PREFIX=/usr/local DESTDIR=..." "$work/install1.log" \
  mk install PREFIX=/usr/local DESTDIR="$dest"

missing=""
for f in bin/toolgate include/toolgate.h lib/libtoolgate.a lib/libtoolgate.so \
  lib/libtoolgate.so.0 lib/pkgconfig/toolgate.pc share/man/man1/toolgate.1 \
  share/lua/5.4/toolgate.lua share/lua/5.4/toolgate/engine.lua \
  share/lua/5.4/toolgate/cli/check.lua lib/lua/5.4/toolgate/core_c.so \
  share/lua/5.1/toolgate.lua share/lua/5.1/toolgate/core_ffi.lua \
  share/lua/5.1/toolgate/cli/canon.lua share/lua/5.1/toolgate/nginx.lua \
  share/lua/5.1/toolgate/state/shared_dict.lua share/lua/5.1/toolgate/state/redis.lua \
  share/toolgate/policies/default.lua \
  share/toolgate/policies/strict.lua share/toolgate/policies/mcp.lua; do
  [ -e "$p/$f" ] || missing="$missing $f"
done
same "$missing" "" "the library, header, .pc, Lua modules (5.4 and 5.1), policies, command and man page are installed"

version=$(sed -n 's/^#define TG_VERSION "\(.*\)"/\1/p' core/toolgate.h)
same "$(readlink "$p/lib/libtoolgate.so") $(readlink "$p/lib/libtoolgate.so.0") $(readlink "$p/lib/lua/5.1/libtoolgate.so")" \
  "libtoolgate.so.0 libtoolgate.so.$version /usr/local/lib/libtoolgate.so.0" \
  "libtoolgate.so -> .so.0 -> .so.$version; lib/lua/5.1/libtoolgate.so -> the library (for the FFI binding)"
same "$(objdump -p "$p/lib/libtoolgate.so.$version" 2>/dev/null | awk '/SONAME/ {print $2}')" "libtoolgate.so.0" \
  "the shared library's SONAME is libtoolgate.so.0"
same "$(grep -c '^local installed = { path = \[\[/usr/local/share/lua/5.4/?.lua;' "$p/bin/toolgate")" 1 \
  "the installed command carries the install's module paths"
same "$(grep -h '^local INSTALLED_DIR = ' "$p/share/lua/5.4/toolgate/policy.lua" "$p/share/lua/5.1/toolgate/policy.lua")" \
  "local INSTALLED_DIR = [[/usr/local/share/toolgate/policies]]
local INSTALLED_DIR = [[/usr/local/share/toolgate/policies]]" \
  "the installed toolgate.policy (5.4 and 5.1) knows where the policies are"

pc() {
  PKG_CONFIG_PATH="$p/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" pkg-config "$@"
}
same "$(pc --modversion toolgate)" "$version" "pkg-config --modversion toolgate"
same "$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs toolgate | sed "s/ *$//")" \
  "-I/usr/local/include -L/usr/local/lib -ltoolgate" "pkg-config --cflags --libs toolgate (PREFIX=/usr/local)"

# shellcheck disable=SC2046 # pkg-config's words
run "a C program builds with \$(pkg-config --cflags --libs toolgate)" "$work/cc-shared.log" \
  "$CC" -std=c11 -Wall -Wextra -Werror examples/c/canon.c $(pc --cflags --libs toolgate) \
  -o "$work/canon-shared"
out=$(LD_LIBRARY_PATH="$p/lib" "$work/canon-shared" '{"b":[1.0,2e21],"a":"x"}' '{"a":1,"a":2}')
rc=$?
same "$rc: $out" '1: {"a":"x","b":[1,2e+21]} 31625f44bde443ecb1511eae99f35359
DUPLICATE_KEY at byte 7: duplicate object key "a"' "... and runs against the installed libtoolgate.so"
same "$(LD_LIBRARY_PATH="$p/lib" ldd "$work/canon-shared" | awk '/libtoolgate/ {print $1, $3}')" \
  "libtoolgate.so.0 $p/lib/libtoolgate.so.0" "... which it finds by its SONAME"

# shellcheck disable=SC2046
run "a C program links the static library (pkg-config --static)" "$work/cc-static.log" \
  "$CC" -std=c11 -Wall -Wextra -Werror examples/c/canon.c $(pc --cflags toolgate) \
  "$p/lib/libtoolgate.a" $(pc --static --libs-only-l toolgate | sed 's/-ltoolgate//') \
  -o "$work/canon-static"
same "$("$work/canon-static" '[1.50,{"z":0,"y":1}]' 2>&1)" '[1.5,{"y":1,"z":0}] 47bbd76337f42713052f47f7d6a48055' \
  "... and runs"

run "make uninstall PREFIX=/usr/local DESTDIR=..." "$work/uninstall1.log" \
  mk uninstall PREFIX=/usr/local DESTDIR="$dest"
same "$(cd "$dest" && find . ! -type d | sort | tr '\n' ' ')" "" "make uninstall removes every file it installed"

# ---- 2. a scratch PREFIX, used for real -------------------------------------
prefix="$work/prefix"
run "make install PREFIX=<scratch>" "$work/install2.log" mk install PREFIX="$prefix"
tg="$prefix/bin/toolgate"

same "$(cd /tmp && clean_env "$tg" --version)" "toolgate $version (capi binding, Lua 5.4)" \
  "the installed toolgate --version"
same "$(echo '{"b":[1.0,2e21],"a":"x"}' | (cd /tmp && clean_env "$tg" canon))" '{"a":"x","b":[1,2e+21]}' \
  "the installed toolgate canon"
same "$(echo '{"server":"filesystem","name":"read_fil","arguments":{}}' |
  (cd /tmp && clean_env "$tg" check --policy strict \
    --registry "filesystem=$top/examples/registries/mcp-filesystem.json") |
  grep -o '"code":"H1".*"policy_version":"strict@[^"]*"' | sed 's/@.*//')" \
  '"code":"H1","format":"native","index":0,"line":1,"message":"no tool \"read_fil\" on server \"filesystem\"","policy_version":"strict' \
  "the installed toolgate check --policy strict finds the installed policy by name"

# The interpreters' default paths with /usr/local/ moved to the scratch
# prefix: what an install into /usr/local gives a plain `lua5.4` or `luajit`
# (and nginx's lua module, which uses LuaJIT's).
rebased() {
  clean_env "$1" -e "io.write(package.$2)" | sed "s|/usr/local/|$prefix/|g"
}
probe='local t = require "toolgate"
io.write(t.BINDING, " ", t.canon("[1.0,{\"b\":1,\"a\":2}]"), " ",
  package.searchpath("toolgate", package.path), "\n")'
same "$(cd /tmp && clean_env LUA_PATH="$(rebased "$LUA" path)" LUA_CPATH="$(rebased "$LUA" cpath)" \
  "$LUA" -e "$probe" 2>&1)" "capi [1,{\"a\":2,\"b\":1}] $prefix/share/lua/5.4/toolgate.lua" \
  "lua5.4: require \"toolgate\" from the install, with the default paths"
same "$(cd /tmp && clean_env LUA_PATH="$(rebased "$LUAJIT" path)" LUA_CPATH="$(rebased "$LUAJIT" cpath)" \
  "$LUAJIT" -e "$probe" 2>&1)" "ffi [1,{\"a\":2,\"b\":1}] $prefix/share/lua/5.1/toolgate.lua" \
  "luajit: require \"toolgate\" (FFI binding) from the install, no TOOLGATE_LIB"
# a shipped policy by name, from the Lua API, under both interpreters
by_name="local e, err = require(\"toolgate\").new{ policy = \"strict\",
  registry = { \"$top/examples/registries/mcp-filesystem.json\" } }
io.write(e and e:snapshot().version:match(\"^[^+]*\") or tostring(err), \"\\n\")"
for lua in "$LUA" "$LUAJIT"; do
  same "$(cd /tmp && clean_env LUA_PATH="$(rebased "$lua" path)" LUA_CPATH="$(rebased "$lua" cpath)" \
    "$lua" -e "$by_name" 2>&1)" "strict@1" "$lua: toolgate.new{policy = \"strict\"} finds the installed policy"
done

# toolgate gateway's conf points nginx's LuaJIT at the install's 5.1 modules
# and library, and at the installed policy
(cd /tmp && clean_env "$tg" gateway --conf-only --listen 127.0.0.1:8080 --prefix "$work/gw" \
  --upstream "everything=http://127.0.0.1:3001/mcp" \
  --registry "everything=$top/examples/registries/mcp-everything.json") >"$work/gateway.log" 2>&1
same "$(grep -c -e "lua_package_path \"$prefix/share/lua/5.1/?.lua;;\";" \
  -e "lua_package_cpath \"$prefix/lib/lua/5.1/?.so;;\";" -e "policy = \"$prefix/share/toolgate/policies/mcp.lua\"" \
  "$work/gw/nginx.conf" 2>/dev/null)" 3 "the installed toolgate gateway writes a conf that uses the install"

run "make uninstall PREFIX=<scratch>" "$work/uninstall2.log" mk uninstall PREFIX="$prefix"
same "$(cd "$prefix" && find . ! -type d | sort | tr '\n' ' ')" "" "make uninstall leaves no file in the scratch prefix"

echo "1..$n"
