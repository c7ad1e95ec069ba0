#!/bin/sh
# make bench, the threshold sweep: toolgate sweep over a grid of 100 points
# on 100,000 labeled plans, whole process, next to what a user would run
# without it: toolgate classify once per grid point, each under a policy
# with that point's settings.  Both measured in this run, on the same plans.
# Called by bench/run.sh with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set.
#
# Knobs: SWEEP_PLANS (100000), SWEEP_CLASSIFY_POINTS (20: how many of the
# grid's 100 points classify is run at, evenly spread; the table says how
# many were measured and scales their mean to 100 -- all 100 take about 5
# minutes on two cores).  The plans are generated once and kept in
# bench/out (generating 100,000 in Python takes longer than the runs).
set -eu
LUA=${LUA:-lua5.4}
out=bench/out
PLANS=${SWEEP_PLANS:-100000}
POINTS=${SWEEP_CLASSIFY_POINTS:-20}
mkdir -p "$out/sweep-policies"

# 6 samples a plan: the fewest with which arg_reject 0.20 can reject
plans_file="$out/sweep-plans-$PLANS.jsonl"
if [ ! -s "$plans_file" ] || [ "$(wc -l <"$plans_file")" -ne "$PLANS" ]; then
python3 bench/gen_plans.py --seed 9 --count "$PLANS" --samples 6 --registry-out "$out/sweep-registry.json" |
  python3 -c '
import json, sys
for line in sys.stdin:
    p = json.loads(line)
    p["label"] = "fabricated" if p.get("category") == "fabricated" else "correct"
    sys.stdout.write(json.dumps(p, separators=(",", ":")) + "\n")
' >"$plans_file.tmp" && mv "$plans_file.tmp" "$plans_file"
fi

AR="0.05 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.45 0.5"
AA="0.55 0.6 0.65 0.7 0.75 0.8 0.85 0.9 0.95 1"
GRID="arg_reject=0.05:0.5:0.05,arg_accept=0.55:1:0.05"
policy() { # policy FILE [arg_reject arg_accept]
  if [ $# -eq 1 ]; then c=""; else c="consistency = { arg_reject = $2, arg_accept = $3 }, "; fi
  printf 'return { name = "sweep-bench", version = "1", stages = { "rung", "consistency" }, %s}\n' "$c" >"$1"
}
policy "$out/sweep-policies/base.lua"

echo
echo "== threshold sweep: 100 grid points ($GRID) over $PLANS labeled plans, $(wc -c <"$plans_file") bytes"
results="$out/sweep.txt"
{
  python3 bench/timeit.py toolgate-sweep "$out/sweep.out" -- "$LUA" bin/toolgate sweep --no-progress \
    --policy "$out/sweep-policies/base.lua" --registry "$out/sweep-registry.json" --grid "$GRID" \
    --csv "$out/sweep.csv" "$plans_file"
  k=0
  for ar in $AR; do
    for aa in $AA; do
      k=$((k + 1))
      # an even spread of the grid when fewer points are measured
      [ $(( (k - 1) % (100 / POINTS) )) -eq 0 ] || continue
      policy "$out/sweep-policies/p$k.lua" "$ar" "$aa"
      python3 bench/timeit.py "classify-$ar-$aa" "$out/sweep-classify.out" -- "$LUA" bin/toolgate classify \
        --policy "$out/sweep-policies/p$k.lua" --registry "$out/sweep-registry.json" "$plans_file"
    done
  done
} >"$results"

awk '
  { name = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[name, kv[1]] = kv[2] } names[++n] = name }
  END {
    for (i = 1; i <= n; i++) {
      nm = names[i]
      if (nm == "toolgate-sweep") continue
      m++; wall += v[nm, "wall"]; cpu += v[nm, "cpu"]
      if (v[nm, "rc"] != 0) bad = 1
    }
    sw = v["toolgate-sweep", "wall"]; sc = v["toolgate-sweep", "cpu"]
    printf "%-40s %9s %9s\n", "", "wall s", "cpu s"
    printf "%-40s %9.3f %9.3f\n", "toolgate sweep, 100 points", sw, sc
    label = m == 100 ? "toolgate classify x100 (one per point)" : sprintf("toolgate classify x100 (%d measured, x%g)", m, 100 / m)
    printf "%-40s %9.3f %9.3f\n", label, wall * 100 / m, cpu * 100 / m
    printf "%-40s %8.1fx %8.1fx   (target: 20x)\n", "sweep vs classify per point", wall * 100 / m / sw, cpu * 100 / m / sc
    if (bad || v["toolgate-sweep", "rc"] != 0) print "bench: WARNING: a run exited non-zero (see bench/out/sweep.txt)"
  }' "$results"
