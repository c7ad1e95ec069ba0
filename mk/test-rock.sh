#!/bin/sh
# The LuaRocks build (TAP; make test runs it as the suite "rock"): from a
# copy of the tree's sources (LuaRocks compiles next to them), offline,
#   luarocks --lua-version=5.4 make --deps-mode=none --tree=<tmp> toolgate-scm-1.rockspec
# then the rock's toolgate command (with no LUA_PATH: it finds its tree) and
# `require "toolgate"` with the tree's paths (`luarocks path --tree`).
set -u
BUILD=${BUILD:-build}
LUA=${LUA:-lua5.4}
top=$PWD
work="$top/$BUILD/test-rock"
rm -rf "$work"
mkdir -p "$work/src"
n=0

. "$top/mk/tap.sh"

cp -R lua core policies bin docs toolgate-scm-1.rockspec "$work/src/"
tree="$work/tree"
if (cd "$work/src" && HOME="$work" luarocks --lua-version=5.4 make --deps-mode=none \
  --tree="$tree" toolgate-scm-1.rockspec) >"$work/make.log" 2>&1; then
  ok "luarocks make --deps-mode=none --tree=<tmp> toolgate-scm-1.rockspec"
else
  not_ok "luarocks make --deps-mode=none --tree=<tmp> toolgate-scm-1.rockspec" "$work/make.log" tail
fi

version=$(sed -n 's/^#define TG_VERSION "\(.*\)"/\1/p' core/toolgate.h)
tg="$tree/bin/toolgate"
same "$(cd /tmp && clean_env "$tg" --version 2>&1)" "toolgate $version (capi binding, Lua 5.4)" \
  "<tree>/bin/toolgate --version"
same "$(echo '{"b":[1.0,2e21],"a":"x"}' | (cd /tmp && clean_env "$tg" canon 2>&1))" \
  '{"a":"x","b":[1,2e+21]}' "<tree>/bin/toolgate canon"
out=$(echo '{"server":"filesystem","name":"read_file","arguments":{"path":"/etc/passwd","x":1}}' |
  (cd /tmp && clean_env "$tg" check --policy strict \
    --registry "filesystem=$top/examples/registries/mcp-filesystem.json" 2>&1))
same "$(echo "$out" | grep -o '"code":"H2"' | head -1) $(echo "$out" | grep -o '"policy_version":"strict@')" \
  '"code":"H2" "policy_version":"strict@' \
  "<tree>/bin/toolgate check --policy strict (a shipped policy, by name)"
# the policy files (policies/tests/ holds their cases, which are not shipped)
same "$(ls "$tree"/share/lua/5.4/toolgate/policies | tr '\n' ' ')" \
  "$(cd policies && ls *.lua | tr '\n' ' ')" "the rock carries the shipped policies, beside its modules"

probe='local t = require "toolgate"
io.write(t.BINDING, " ", t.hash("{}"), " ", package.searchpath("toolgate", package.path), " ",
  package.searchpath("toolgate.core_c", package.cpath), "\n")'
same "$(cd /tmp && eval "$(clean_env luarocks --lua-version=5.4 path --tree="$tree")" &&
  "$LUA" -e "$probe" 2>&1)" \
  "capi dc7048f8f8747f561349cde127705c16 $tree/share/lua/5.4/toolgate.lua $tree/lib/lua/5.4/toolgate/core_c.so" \
  "$LUA -e 'require \"toolgate\"' with luarocks path --tree"
by_name="local e, err = require(\"toolgate\").new{ policy = \"strict\",
  registry = { \"$top/examples/registries/mcp-filesystem.json\" } }
io.write(e and e:snapshot().version:match(\"^[^+]*\") or tostring(err), \"\\n\")"
same "$(cd /tmp && eval "$(clean_env luarocks --lua-version=5.4 path --tree="$tree")" && "$LUA" -e "$by_name" 2>&1)" \
  "strict@1" "toolgate.new{policy = \"strict\"} finds the rock's policy"

echo "1..$n"
