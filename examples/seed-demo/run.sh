#!/bin/sh
# The seed demo: simulate the seed's batch, score it naively and with
# toolgate's split scorer, and print the comparison.
#
#   make && sh examples/seed-demo/run.sh [generate.py options, e.g. --seed 7]
#
# Knobs: LUA (default lua5.4), PYTHON (default python3), BUILD (default
# build), OUT (default examples/seed-demo/out, gitignored), SWEEP_SVG (the
# sweep's plot; default docs/seed-demo-sweep.svg for the default batch,
# else $OUT/sweep.svg).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
LUA=${LUA:-lua5.4}
PYTHON=${PYTHON:-python3}
BUILD=${BUILD:-build}
OUT=${OUT:-$here/out}

# the Makefile's LUA_ENV
LUA_PATH="$root/lua/?.lua;$root/spec/?.lua;;"
LUA_CPATH="$root/$BUILD/lua54/?.so;$root/$BUILD/?.so;;"
TOOLGATE_LIB="$root/$BUILD/libtoolgate.so"
export LUA_PATH LUA_CPATH TOOLGATE_LIB

if [ ! -f "$root/$BUILD/lua54/toolgate/core_c.so" ]; then
  echo "run.sh: $BUILD/lua54/toolgate/core_c.so is missing: run make first" >&2
  exit 2
fi

mkdir -p "$OUT"
start=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - start )) s)" >&2; }

step "generate.py: registry.json and plans.jsonl into $OUT"
"$PYTHON" "$here/generate.py" --out "$OUT" "$@"
# the policy names registry.json relative to itself
cp "$here/policy.lua" "$OUT/policy.lua"

step "naive.lua: one score over (arguments, result), reject below 0.80"
$LUA "$here/naive.lua" "$OUT/plans.jsonl" > "$OUT/naive.jsonl"
$LUA "$here/naive.lua" --contract-blind "$OUT/plans.jsonl" > "$OUT/naive-blind.jsonl"

step "toolgate classify --policy $OUT/policy.lua"
status=0
(cd "$root" && $LUA bin/toolgate classify --policy "$OUT/policy.lua" "$OUT/plans.jsonl") \
  > "$OUT/toolgate.jsonl" 2> "$OUT/toolgate.stderr" || status=$?
sed 's/^/   /' "$OUT/toolgate.stderr" >&2
if [ "$status" -ne 0 ]; then
  echo "run.sh: toolgate classify exited with status $status" >&2
  exit "$status"
fi

# The threshold sweep of the same batch: the plot docs/self-consistency.md shows is the one
# of the default batch (no generate.py options), written into docs/.
if [ "$#" -eq 0 ]; then SWEEP_SVG=${SWEEP_SVG:-$root/docs/seed-demo-sweep.svg}; fi
SWEEP_SVG=${SWEEP_SVG:-$OUT/sweep.svg}
step "toolgate sweep --baseline naive (plot: $SWEEP_SVG)"
(cd "$root" && $LUA bin/toolgate sweep --no-progress --policy "$OUT/policy.lua" --baseline naive \
  --grid 'arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5' --top 3 \
  --csv "$OUT/sweep.csv" --json "$OUT/sweep.json" --svg "$SWEEP_SVG" --html "$OUT/sweep.html" \
  "$OUT/plans.jsonl") > "$OUT/sweep.txt" 2>> "$OUT/toolgate.stderr"
sed 's/^/   /' "$OUT/sweep.txt" >&2

step "compare.lua"
echo
$LUA "$here/compare.lua" --plans "$OUT/plans.jsonl" --naive "$OUT/naive.jsonl" \
  --naive-blind "$OUT/naive-blind.jsonl" --toolgate "$OUT/toolgate.jsonl" | tee "$OUT/table.txt"
echo
step "done; decisions and the table are in $OUT"
