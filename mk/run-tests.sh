#!/bin/sh
# Runs every test suite and ends with one line: "N passed, N failed".
# Every suite speaks TAP; a suite that dies without reporting a failure
# counts as one failed test, so a crash can never read as a pass.
# Called by `make test` with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set.
set -u
BUILD=${BUILD:-build}
LUA=${LUA:-lua5.4}
LUAJIT=${LUAJIT:-luajit}
logs="$BUILD/test-logs"
mkdir -p "$logs"
# Each suite adds a line "PASSED FAILED SKIPPED" here (suites may run side by side)
counts="$logs/counts"
: >"$counts"

# run_suite NAME COMMAND...
run_suite() {
  name=$1
  shift
  log="$logs/$(echo "$name" | tr '/' '_').tap"
  "$@" >"$log" 2>&1
  rc=$?
  p=$(grep -c '^ok ' "$log" 2>/dev/null) || p=0
  f=$(grep -c '^not ok ' "$log" 2>/dev/null) || f=0
  s=$(grep -c '^ok .*# SKIP' "$log" 2>/dev/null) || s=0
  if { [ "$rc" != 0 ] || [ "$p" = 0 ]; } && [ "$f" = 0 ]; then
    f=1
    echo "not ok - suite $name exited with status $rc after $p passing tests" >>"$log"
  fi
  # a skipped test (TAP "# SKIP") is neither a pass nor a failure
  p=$((p - s))
  echo "$p $f $s" >>"$counts"
  if [ "$s" != 0 ]; then
    printf '%-28s %5d passed %5d failed %5d skipped\n' "$name" "$p" "$f" "$s"
  else
    printf '%-28s %5d passed %5d failed\n' "$name" "$p" "$f"
  fi
  if [ "$f" != 0 ]; then
    # show what failed, with the diagnostics that follow each failure
    awk '/^not ok /{show=1} /^ok /{show=0} show' "$log" | head -80
  fi
}

# ---- set-up the suites rely on ----------------------------------------------
. mk/node-env.sh
# A decimal-comma locale, so the C tests can prove numbers ignore LC_NUMERIC.
export LOCPATH="$PWD/$BUILD/locale"
if [ ! -d "$LOCPATH/de_DE.UTF-8" ]; then
  mkdir -p "$LOCPATH"
  localedef -i de_DE -f UTF-8 "$LOCPATH/de_DE.UTF-8" >"$logs/localedef.log" 2>&1 ||
    echo "warning: localedef de_DE.UTF-8 failed (see $logs/localedef.log)"
fi
# The npm peers the differential specs compare against (pinned in bench/),
# the SDKs the call fixtures come from (pinned in spec/sdk/), and the MCP
# server, SDK client and SDK-built servers of the nginx gateway's end-to-end
# tests (pinned in nginx/test/), and the filesystem server and SDK stdio
# client of the stdio proxy's (pinned in spec/stdio/).
# If the registry cannot be reached (a network that refuses it, a TLS proxy
# whose CA this machine lacks), those specs are reported as skipped, with
# the reason, rather than passed: anything else that stops npm ci fails them.
# npm ci runs again when package-lock.json is newer than what was installed
# from it (npm's own hidden lockfile), so a peer added later is installed.
for npm_dir in bench spec/sdk nginx/test spec/stdio; do
  [ "$npm_dir/node_modules/.package-lock.json" -nt "$npm_dir/package-lock.json" ] && continue
  npm_log="$logs/npm-$(basename "$npm_dir").log"
  npm ci --prefix "$npm_dir" --no-audit --no-fund >"$npm_log" 2>&1 || {
    echo "warning: npm ci --prefix $npm_dir failed:"
    grep -m3 'ERR!' "$npm_log" | sed 's/^/  /'
    reason=$(grep -m1 -oE 'code (E[A-Z_]+|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_[A-Z_]+|CERT_[A-Z_]+)' \
      "$npm_log" | head -1)
    case "$reason" in
      *ENOTFOUND*|*ETIMEDOUT*|*ECONNREFUSED*|*ECONNRESET*|*EAI_AGAIN*|*SELF_SIGNED*|*UNABLE_TO_*|*CERT_*)
        export TOOLGATE_NPM_UNAVAILABLE="npm registry unreachable ($reason)" ;;
    esac
  }
done
export TOOLGATE_ROOT="$PWD" TG_SPEC_DATA="$PWD/spec/data"
# The official JSON Schema Test Suite is read from the shared data beside the
# checkout (never copied in); test_schema_suite says so when it is absent.
if [ -z "${JSON_SCHEMA_TEST_SUITE:-}" ] &&
  [ -d "$PWD/../shared/data/json-schema-test-suite/draft2020-12" ]; then
  export JSON_SCHEMA_TEST_SUITE="$PWD/../shared/data/json-schema-test-suite/draft2020-12"
fi

for t in "$BUILD"/spec/test_*; do
  [ -x "$t" ] || continue
  run_suite "c/$(basename "$t")" "$t"
done

busted=$(command -v busted)
run_suite "busted/$LUA" "$LUA" "$busted" -o TAP spec

# Hostile input (mk/hostile.sh): the C unit tests and the CLI over the example
# corpora under ASan + UBSan, the CLI under valgrind memcheck, every fuzz
# target for a few seconds, and the fuzz regression corpus and seeds replayed.
# They run beside the LuaJIT suite (each mostly one core busy, the machine
# has two); their lines are shown once both are done.
(
  for src in spec/c/test_*.c; do
    t=$(basename "$src" .c)
    run_suite "asan/$t" sh mk/hostile.sh asan-c "$BUILD/asan/spec/$t"
  done
  run_suite asan/cli sh mk/hostile.sh asan-cli
  run_suite valgrind/cli sh mk/hostile.sh valgrind-cli
  run_suite fuzz/smoke sh mk/hostile.sh fuzz-smoke
  run_suite fuzz/replay sh mk/hostile.sh fuzz-replay
) >"$logs/hostile.out" 2>&1 &
hostile=$!
run_suite "busted/$LUAJIT" "$LUAJIT" "$busted" -o TAP spec

# Code health and packaging: luacheck, cppcheck, clang-format, the man page
# and LDoc (mk/lint.sh); make install/uninstall, pkg-config and a C program
# (mk/test-install.sh); the LuaRocks build into a scratch tree (mk/test-rock.sh).
run_suite lint sh mk/lint.sh
run_suite install sh mk/test-install.sh
run_suite rock sh mk/test-rock.sh

# a hostile group that died without reporting counts as a failure too
wait "$hostile" || echo "0 1 0" >>"$counts"
cat "$logs/hostile.out"

passed=$(awk '{n += $1} END {print n + 0}' "$counts")
failed=$(awk '{n += $2} END {print n + 0}' "$counts")
skipped=$(awk '{n += $3} END {print n + 0}' "$counts")
if [ "$skipped" != 0 ]; then
  echo "$skipped skipped: ${TOOLGATE_NPM_UNAVAILABLE:-see the # SKIP lines in $logs}"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
