#!/bin/sh
# Hostile-input suites of `make test`, each printing TAP for mk/run-tests.sh,
# and the runner of `make fuzz`.
#
#   mk/hostile.sh asan-c TEST      one C unit test built with ASan + UBSan
#   mk/hostile.sh asan-cli         the CLI over the example corpora, Lua 5.4
#                                  module built with ASan + UBSan
#   mk/hostile.sh valgrind-cli     the same commands under valgrind memcheck,
#                                  normal build: no error, no definite or
#                                  indirect leak
#   mk/hostile.sh fuzz-smoke [S]   every fuzz target for S seconds (default
#                                  $FUZZ_SMOKE_SECONDS or 5)
#   mk/hostile.sh fuzz-replay      every input of fuzz/regressions/<target>/
#   mk/hostile.sh fuzz S T...      `make fuzz`: targets T for S seconds each
#
# Run from the repository root with BUILD set (make does both).
#
# The sanitized CLI on Debian 12: lua5.4 itself is not instrumented, so the
# ASan runtime must be the first library loaded: LD_PRELOAD names gcc's
# libasan.so (the module is built with gcc, whose UBSan runtime then loads
# as the module's own dependency).  The ASan module is put in place by
# preloading it into package.loaded before bin/toolgate runs, so the command
# runs unchanged.  Both runs make os.exit close the Lua state first
# (os.exit(code, true)), so every finalizer runs and all memory goes back:
# a block the binding or the core forgot is then a definite leak, not
# memory still reachable from a live state.  With that, lua5.4 itself
# leaks nothing (valgrind: "All heap blocks were freed"), so neither run
# needs a suppression file.
set -u
BUILD=${BUILD:-build}
LUA=${LUA:-lua5.4}
ASAN_BUILD="$BUILD/asan"
FUZZ_BUILD="$BUILD/fuzz"
work="$BUILD/hostile"
mkdir -p "$work"

# Sanitizer settings for everything below: stop at the first error with an
# exit status of our own (1 means "some input was refused" to the CLI).
ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:exitcode=86:abort_on_error=0:detect_stack_use_after_return=1:strict_string_checks=1"
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87"
LSAN_OPTIONS="suppressions=$PWD/mk/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS

n=0
failures=0
tap() { # tap OK|FAIL description
  n=$((n + 1))
  if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failures=$((failures + 1)); fi
}
diag() { sed 's/^/# /' "$@" | head -40; }

regs="--registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-everything.json"
regs="$regs --registry examples/registries/mcp-memory.json"

# The CLI commands both the ASan and the valgrind run go through: every
# command over the shipped example corpora, and the fuzz seeds as calls.
# Each line: the exit statuses that mean "done" (0, or 1 when some input
# is refused), then the arguments of bin/toolgate.
cli_commands() {
  cat <<EOF
0 canon examples/documents/read_file.json
0 canon --hash examples/documents/search_flights.json
1 canon --lines examples/documents/calls.jsonl
1 canon --lines --hash examples/documents/calls.jsonl
0 check --policy rung $regs examples/calls/mcp-calls.jsonl
0 check --policy mcp --context examples/calls/context.json $regs examples/calls/pipeline-calls.jsonl
1 check --also --fail-on reject --format auto $regs $work/calls.jsonl
1 validate --schema $work/schema.json --closed --lines examples/documents/calls.jsonl
0 classify --policy $work/plans/policy.lua $work/plans/plans.jsonl
0 sweep --no-progress --policy $work/plans/policy.lua --baseline naive --grid arg_reject=0.05:0.5:0.15,quarantine=on|off --csv $work/sweep.csv $work/plans/plans.jsonl
0 registry lint examples/registries/mcp-filesystem.json examples/registries/mcp-everything.json examples/registries/mcp-memory.json
0 registry lint web=spec/data/registries/openai.json spec/data/registries/anthropic.json spec/data/registries/bad_names.json spec/data/registries/native.json
0 registry compile --output $work/mcp.tgimg examples/registries/mcp-filesystem.json examples/registries/mcp-everything.json examples/registries/mcp-memory.json
0 check --policy rung --registry $work/mcp.tgimg examples/calls/mcp-calls.jsonl
EOF
}

# Inputs the commands need that the tree does not hold as files.
cli_inputs() {
  # the fuzz_call seeds (calls in every format, malformed ones too), one a line
  for f in fuzz/corpus/fuzz_call/*; do
    tr '\n' ' ' <"$f"
    echo
  done >"$work/calls.jsonl"
  echo '{"type":"object","properties":{"name":{"type":"string","pattern":"^[a-z_]+$"},"arguments":{"type":"object","maxProperties":3}},"required":["name"]}' >"$work/schema.json"
  # 40 simulated plans of 20 samples (the seed demo's generator, fixed seed),
  # made afresh each run so an edit to the generator or the policy shows
  python3 examples/seed-demo/generate.py --plans 40 --out "$work/plans" >/dev/null &&
    cp examples/seed-demo/policy.lua "$work/plans/policy.lua"
}

# Makes bin/toolgate's os.exit(code) close the state first (see above).
CLOSE_AT_EXIT='local exit = os.exit; os.exit = function(code) exit(code, true) end'

# run_cli LABEL RUNNER... : every command of cli_commands under RUNNER
run_cli() {
  label=$1
  shift
  cli_inputs
  cli_commands | while read -r want args; do
    out="$work/out.$label"
    # shellcheck disable=SC2086
    "$@" bin/toolgate $args >"$out.stdout" 2>"$out.stderr"
    rc=$?
    bad=$(grep -c -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|^==[0-9]+== [A-Z]' "$out.stderr")
    if [ "$rc" = "$want" ] && [ "$bad" = 0 ] && [ -s "$out.stdout" ]; then
      tap OK "$label: toolgate $(echo "$args" | cut -c1-90)"
    else
      tap FAIL "$label: toolgate $args (exit $rc, want $want)"
      diag "$out.stderr"
    fi
  done
}

case "${1:-}" in
asan-c)
  "$2"
  ;;

asan-cli)
  libasan=$(gcc -print-file-name=libasan.so)
  mod="$ASAN_BUILD/lua54/toolgate/core_c.so"
  if [ ! -f "$mod" ] || [ ! -f "$libasan" ]; then
    echo "not ok 1 - asan-cli: $mod or $libasan is missing"
    exit 1
  fi
  run_cli asan env LD_PRELOAD="$libasan" "$LUA" -e "$CLOSE_AT_EXIT" -e \
    "package.loaded['toolgate.core_c'] = assert(package.loadlib('$mod', 'luaopen_toolgate_core_c'))()"
  echo "1..$(cli_commands | wc -l)"
  ;;

valgrind-cli)
  if ! command -v valgrind >/dev/null; then
    echo "not ok 1 - valgrind is not installed"
    exit 1
  fi
  run_cli valgrind valgrind -q --error-exitcode=85 --leak-check=full \
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect "$LUA" \
    -e "$CLOSE_AT_EXIT"
  echo "1..$(cli_commands | wc -l)"
  ;;

fuzz-smoke | fuzz)
  if [ "$1" = fuzz ]; then
    seconds=$2
    shift 2
    targets="$*"
  else
    seconds=${2:-${FUZZ_SMOKE_SECONDS:-5}}
    targets=$(cd fuzz && ls fuzz_*.c | sed 's/\.c$//')
  fi
  for t in $targets; do
    bin="$FUZZ_BUILD/$t"
    corpus="$FUZZ_BUILD/corpus/$t" # what this machine's runs found; seeds stay as committed
    log="$FUZZ_BUILD/$t.log"
    mkdir -p "$corpus" "$FUZZ_BUILD/crashes"
    if [ ! -x "$bin" ]; then
      tap FAIL "$t: $bin is missing (make fuzz-build)"
      continue
    fi
    start=$(date +%s)
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -dict=fuzz/json.dict -artifact_prefix="$FUZZ_BUILD/crashes/$t-" "$corpus" "fuzz/corpus/$t" \
      >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    last=$(grep -E '^#[0-9]+.*(cov|DONE)' "$log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    if [ "$rc" = 0 ]; then
      tap OK "$t: ${took}s, ${runs:-?} executions, cov ${cov:-?} ft ${ft:-?}"
    else
      tap FAIL "$t: exit $rc after ${took}s (log $log)"
      grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" | diag
      # keep what crashed: make test replays fuzz/regressions/ from now on
      for a in "$FUZZ_BUILD/crashes/$t-"*; do
        [ -f "$a" ] || continue
        mkdir -p "fuzz/regressions/$t"
        cp "$a" "fuzz/regressions/$t/$(basename "$a" | sed "s/^$t-//")"
        echo "# added fuzz/regressions/$t/$(basename "$a" | sed "s/^$t-//")"
        rm -f "$a"
      done
    fi
  done
  echo "1..$n"
  [ "$failures" = 0 ]
  ;;

fuzz-replay)
  # libFuzzer runs each file once; the seeds too, so a change that breaks
  # an invariant on known data fails here even if the smoke run misses it.
  for dir in fuzz/regressions/* fuzz/corpus/*; do
    [ -d "$dir" ] || continue
    t=$(basename "$dir")
    count=$(find "$dir" -type f ! -name '*.md' | wc -l)
    [ "$count" -gt 0 ] || continue
    log="$FUZZ_BUILD/replay-$(basename "$(dirname "$dir")")-$t.log"
    # shellcheck disable=SC2046
    "$FUZZ_BUILD/$t" -runs=1 $(find "$dir" -type f ! -name '*.md' | sort) >"$log" 2>&1
    if [ $? = 0 ]; then
      tap OK "$dir: $count inputs replayed"
    else
      tap FAIL "$dir: replay failed (log $log)"
      grep -E 'ERROR|invariant|SUMMARY|Running:' "$log" | tail -20 | diag
    fi
  done
  echo "1..$n"
  [ "$failures" = 0 ]
  ;;

*)
  echo "usage: mk/hostile.sh asan-c TEST | asan-cli | valgrind-cli | fuzz-smoke [S] | fuzz-replay | fuzz S T..." >&2
  exit 2
  ;;
esac
