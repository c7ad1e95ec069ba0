#!/bin/sh
# Code health, as TAP (make lint; make test runs it as the suite "lint"):
# luacheck on all Lua, LuaJIT-parsable modules, cppcheck on core/,
# clang-format on the C files, toolgate.h on its own, the man page and the
# LDoc API reference without a warning.  Zero findings is a pass.
set -u
BUILD=${BUILD:-build}
LUAJIT=${LUAJIT:-luajit}
CC=${CC:-cc}
out="$BUILD/lint"
mkdir -p "$out"
n=0

# check NAME COMMAND...: ok when COMMAND exits 0 and prints nothing
check() {
  name=$1
  shift
  n=$((n + 1))
  log="$out/$n.log"
  "$@" >"$log" 2>&1
  rc=$?
  if [ "$rc" = 0 ] && [ ! -s "$log" ]; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name (exit $rc)"
    head -40 "$log" | sed 's/^/# /'
  fi
}

# -- Lua --------------------------------------------------------------------
# .luacheckrc says which standard each directory is held to.
check "luacheck: lua/, bin/toolgate, spec/, bench/, policies/, examples/" \
  sh -c 'luacheck -q --no-color --formatter plain bin/toolgate lua spec bench policies examples >/dev/null 2>&1 ||
         luacheck -q --no-color --formatter plain bin/toolgate lua spec bench policies examples'

# luacheck reads Lua 5.4 syntax; the modules and policies must also parse
# under LuaJIT (no //, no bitwise operators, no <const>/<close>).
luajit_parse() {
  printf '%s\n' 'for i = 1, #arg do local f, err = loadfile(arg[i]); if not f then print(err) end end' \
    >"$out/parse.lua"
  find lua policies -name '*.lua' | sort | xargs "$LUAJIT" "$out/parse.lua"
}
check "every module and policy parses under LuaJIT" luajit_parse

# -- C ----------------------------------------------------------------------
# Inline suppressions (/* cppcheck-suppress id */) sit beside the line they
# excuse, each with a comment saying why it is a false positive.
check "cppcheck core/ (warning, performance, portability)" \
  cppcheck --quiet --std=c11 --enable=warning,performance,portability --inline-suppr \
    --error-exitcode=1 -Icore core/

c_files=$(ls core/*.c core/*.h lua/toolgate/core_c.c lua/toolgate/proc_c.c spec/c/*.c spec/c/*.h bench/*.c bench/*.h examples/c/*.c \
  fuzz/*.c fuzz/*.h 2>/dev/null)
# shellcheck disable=SC2086 # one word per file
check "clang-format --dry-run --Werror (.clang-format) on the C files" \
  clang-format --dry-run --Werror $c_files

printf '#include "toolgate.h"\nint main(void) { return tg_code_name(0) == 0; }\n' >"$out/header.c"
check "toolgate.h compiles on its own (-std=c99 -pedantic -Wall -Wextra -Werror)" \
  "$CC" -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -Icore "$out/header.c"
if command -v c++ >/dev/null 2>&1; then
  cp "$out/header.c" "$out/header.cc"
  check "toolgate.h compiles as C++ (extern \"C\")" \
    c++ -Wall -Wextra -Werror -fsyntax-only -Icore "$out/header.cc"
fi

# -- documentation ------------------------------------------------------------
check "man page renders without a warning (groff -man -ww)" \
  sh -c 'groff -man -Tutf8 -ww -z docs/toolgate.1 2>&1'

version=$(sed -n 's/^#define TG_VERSION "\(.*\)"/\1/p' core/toolgate.h)
check "man page names version $version" \
  sh -c "grep -q '^\.TH TOOLGATE 1 .*\"toolgate $version\"' docs/toolgate.1 || echo 'docs/toolgate.1: .TH does not say toolgate $version'"

# Every command and every option its --help lists is in the man page.
man_covers_cli() {
  for c in canon check classify sweep test policy probe validate registry gateway mcp-proxy approvals log; do
    grep -q "^\.SS \"toolgate $c" docs/toolgate.1 || echo "docs/toolgate.1: no section for $c"
    for o in $(lua5.4 bin/toolgate "$c" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
      roff=$(printf '%s' "$o" | sed 's/-/\\-/g') # --fail-on is written \-\-fail\-on
      grep -qF -- "$roff" docs/toolgate.1 || echo "docs/toolgate.1: $c $o is not described"
    done
  done
}
check "man page covers every command and option of toolgate --help" man_covers_cli

ldoc_clean() {
  ldoc --fatalwarnings -q -d "$out/docs" . >"$out/ldoc.log" 2>&1
  rc=$?
  grep -v '^reading configuration from config.ld$' "$out/ldoc.log"
  return $rc
}
check "LDoc API reference builds without a warning (make docs)" ldoc_clean

echo "1..$n"
