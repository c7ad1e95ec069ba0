#!/bin/sh
# make bench: toolgate next to the peers a user would pick instead, measured
# in this one run on the same generated corpus, reported as ratios (absolute
# times on a shared machine mean little; ratios measured together do).
# Called by `make bench` with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set.
set -eu
BUILD=${BUILD:-build}
LUA=${LUA:-lua5.4}
LUAJIT=${LUAJIT:-luajit}
SECONDS_PER=${BENCH_SECONDS:-2}
out=bench/out
mkdir -p "$out"

if [ ! -f bench/node_modules/canonicalize/package.json ]; then
  npm ci --prefix bench --no-audit --no-fund >"$out/npm.log" 2>&1 ||
    { echo "bench: npm ci --prefix bench failed (see $out/npm.log)"; exit 1; }
fi
python3 bench/gen_corpus.py --seed 1 --count 3000 >"$out/corpus.jsonl"

echo "== canonicalize + hash, from JSON text ($(python3 bench/gen_corpus.py --stats <"$out/corpus.jsonl"))"
results="$out/canon.txt"
{
  "$BUILD/bench/canon_bench" "$out/corpus.jsonl" "$SECONDS_PER" 2>/dev/null
  "$LUA" bench/canon_bench.lua "$out/corpus.jsonl" "$SECONDS_PER"
  "$LUAJIT" bench/canon_bench.lua "$out/corpus.jsonl" "$SECONDS_PER"
  node bench/peers/canon_node.js "$out/corpus.jsonl" --min-seconds "$SECONDS_PER"
} >"$results"

# One row per measurement; the ratio is node-canonicalize's ns/doc over ours.
awk '
  { name = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[name, kv[1]] = kv[2] } names[++n] = name }
  END {
    base = v["node-canonicalize", "ns_per_doc"]
    printf "%-28s %10s %10s %14s\n", "", "MB/s", "ns/doc", "vs node-canon"
    for (i = 1; i <= n; i++) {
      nm = names[i]
      printf "%-28s %10.1f %10.0f %13.1fx\n", nm, v[nm, "MB_per_s"], v[nm, "ns_per_doc"], base / v[nm, "ns_per_doc"]
    }
  }' "$results"

# ---- parse + validate: calls against the three recorded MCP registries ------
# ajv reads the explicitly closed copies of the schemas gen_mcp_calls.py
# writes; toolgate-c-validate compiles the same copies; the Lua rows load the
# original registries (closed world) and run the whole rung on native call
# lines (decode + resolve + validate + args digest + decision table).
python3 bench/gen_mcp_calls.py --seed 1 --count 3000 --schemas-out "$out/mcp-schemas.json" >"$out/mcp-calls.jsonl"
python3 bench/gen_mcp_calls.py --stats <"$out/mcp-calls.jsonl" >"$out/mcp-calls.stats"
echo
echo "== parse + validate, real MCP registries ($(sed -n 1p "$out/mcp-calls.stats"))"
results="$out/validate.txt"
node bench/peers/validate_node.js --schemas "$out/mcp-schemas.json" --calls "$out/mcp-calls.jsonl" \
  --min-seconds "$SECONDS_PER" >"$out/validate.node.txt"
ajv_valid=$(sed -n 's/.* valid=\([0-9]*\).*/\1/p' "$out/validate.node.txt")
{
  "$BUILD/bench/validate_bench" --schemas "$out/mcp-schemas.json" --calls "$out/mcp-calls.jsonl" \
    --min-seconds "$SECONDS_PER"
  "$LUA" bench/validate_bench.lua --calls "$out/mcp-calls.jsonl" --min-seconds "$SECONDS_PER" --ajv-valid "$ajv_valid"
  "$LUAJIT" bench/validate_bench.lua --calls "$out/mcp-calls.jsonl" --min-seconds "$SECONDS_PER" --ajv-valid "$ajv_valid"
  cat "$out/validate.node.txt"
} >"$results"

# One row per measurement; the ratio is node-ajv's ns/call over ours.  The
# accepted column must read the same on every row (ajv is the ground truth).
validate_table() {
  awk '
    { name = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[name, kv[1]] = kv[2] } names[++n] = name }
    END {
      base = v["node-ajv", "ns_per_call"]
      printf "%-28s %10s %10s %14s\n", "", "ns/call", "accepted", "vs node-ajv"
      for (i = 1; i <= n; i++) {
        nm = names[i]
        ok = v[nm, "valid"] != "" ? v[nm, "valid"] : v[nm, "accepted"]
        printf "%-28s %10.0f %10d %13.1fx\n", nm, v[nm, "ns_per_call"], ok, base / v[nm, "ns_per_call"]
        if (ok != v["node-ajv", "valid"]) bad = 1
      }
      if (bad) print "bench: WARNING: the accepted counts differ from ajv'"'"'s valid count"
    }' "$1"
}
validate_table "$results"

# ---- parse + validate: union schemas, closed world ------------------------------
# The shapes Pydantic and zod emit (bench/gen_unions.py): toolgate's closed
# world against ajv's unevaluatedProperties: false on the same groups (the
# reference schemas; --no-inline-refs, without which ajv 8 gets unions
# under `items` wrong, see gen_unions.py).
python3 bench/gen_unions.py --seed 1 --schemas-out "$out/union-schemas.json" \
  --reference-out "$out/union-reference.json" >"$out/union-calls.jsonl"
echo
echo "== parse + validate, union schemas, closed world ($(wc -l <"$out/union-calls.jsonl") instances)"
results="$out/union.txt"
{
  "$BUILD/bench/validate_bench" --schemas "$out/union-schemas.json" --calls "$out/union-calls.jsonl" \
    --min-seconds "$SECONDS_PER"
  node bench/peers/validate_node.js --no-inline-refs --schemas "$out/union-reference.json" \
    --calls "$out/union-calls.jsonl" --min-seconds "$SECONDS_PER"
} >"$results"
validate_table "$results"

# ---- hostile input: what one call costs the validator (issue #10) -------------
echo
echo "== hostile calls, one tg_validate each, default limits"
"$BUILD/bench/hostile_bench" --min-seconds "$SECONDS_PER" | awk '
  { name = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    if (NR == 1) printf "%-28s %10s %12s %14s\n", "", "bytes", "ms/call", "result"
    printf "%-28s %10d %12.3f %14s\n", name, v["bytes"], v["ms_per_call"],
      v["result"] == "OK" ? "OK, " v["findings"] " found" : v["result"] }'

# ---- 3. self-consistency: 5-sample plans, from JSON text -----------------------
python3 bench/gen_plans.py --seed 1 --count 2000 --samples 5 --registry-out "$out/plans-registry.json" \
  >"$out/plans.jsonl"
echo
echo "== classify 5-sample plans from JSON text (2000 plans, $(wc -c <"$out/plans.jsonl") bytes)"
results="$out/classify.txt"
{
  "$LUA" bench/classify_bench.lua "$out/plans.jsonl" "$out/plans-registry.json" "$SECONDS_PER"
  "$LUAJIT" bench/classify_bench.lua "$out/plans.jsonl" "$out/plans-registry.json" "$SECONDS_PER"
  "$BUILD/bench/plan_bench" --registry "$out/plans-registry.json" --plans "$out/plans.jsonl" \
    --min-seconds "$SECONDS_PER"
  python3 bench/peers/seed_reference.py --bench --with-parse "$out/plans.jsonl"
  python3 bench/peers/seed_reference.py --bench "$out/plans.jsonl"
} >"$results"
# The ratio is the Python reference's us/plan, parsing included, over ours.
awk '
  { name = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[name, kv[1]] = kv[2] } names[++n] = name }
  END {
    base = v["python-seed-reference+parse", "us_per_plan"]
    printf "%-34s %12s %18s\n", "", "us/plan", "vs python (+parse)"
    for (i = 1; i <= n; i++) {
      nm = names[i]
      printf "%-34s %12.1f %17.1fx\n", nm, v[nm, "us_per_plan"], base / v[nm, "us_per_plan"]
    }
  }' "$results"
