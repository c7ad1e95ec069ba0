#!/bin/sh
# make bench: toolgate next to the peers a user would pick instead, measured
# in this one run on the same generated corpus, reported as ratios (absolute
# times on a shared machine mean little; ratios measured together do).
# Called by `make bench` with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set.
set -eu
. mk/node-env.sh
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
python3 bench/gen_mcp_calls.py --seed 1 --count 3000 --native --schemas-out "$out/mcp-schemas.json" \
  >"$out/mcp-native.jsonl"
echo
echo "== parse + validate, real MCP registries ($(sed -n 1p "$out/mcp-calls.stats"))"
results="$out/validate.txt"
node bench/peers/validate_node.js --schemas "$out/mcp-schemas.json" --calls "$out/mcp-calls.jsonl" \
  --min-seconds "$SECONDS_PER" >"$out/validate.node.txt"
{
  "$BUILD/bench/validate_bench" --schemas "$out/mcp-schemas.json" --calls "$out/mcp-calls.jsonl" \
    --min-seconds "$SECONDS_PER"
  # tg_check alone on the lines engine:check gets: the C floor under the Lua rows
  "$BUILD/bench/check_c_bench" --schemas "$out/mcp-schemas.json" --calls "$out/mcp-native.jsonl" \
    --min-seconds "$SECONDS_PER"
  for lua in "$LUA" "$LUAJIT"; do
    for pol in rung default; do
      "$lua" bench/check_bench.lua --calls "$out/mcp-native.jsonl" --policy "$pol" --min-seconds "$SECONDS_PER"
    done
  done
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
# The floor under the engine:check rows: the very lines they decide, parsed
# by simdjson and nothing else done with them.
if [ -x "$BUILD/bench/simdjson_floor" ]; then
  "$BUILD/bench/simdjson_floor" "$out/mcp-native.jsonl" --min-seconds "$SECONDS_PER" >"$out/floor-native.txt"
  awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%-28s %10.0f %10s %14s   (parse only: the floor under engine:check, %.0f%% of its 1 us target)\n",
      "simdjson-dom-parse", v["ns_per_line"], "", "", v["ns_per_line"] / 10 }' "$out/floor-native.txt"
fi
# The same lines through toolgate's own parse alone: tg_check's row less
# this one is what a check does besides parsing (decode, resolve, validate,
# digest, decide, write the decision), which no faster parser takes off.
"$BUILD/bench/check_c_bench" --parse-only --schemas "$out/mcp-schemas.json" --calls "$out/mcp-native.jsonl" \
  --min-seconds "$SECONDS_PER" >"$out/parse-native.txt"
{ grep '^toolgate-c-check ' "$results"; cat "$out/parse-native.txt"; } | awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$1, kv[1]] = kv[2] } }
  END { parse = v["toolgate-c-parse", "ns_per_call"]; rest = v["toolgate-c-check", "ns_per_call"] - parse
    printf "%-28s %10.0f %10s %14s   (toolgate-c-check less this: %.0f ns of other work, %.0f%% of the 1 us target)\n",
      "toolgate-c-parse", parse, "", "", rest, rest / 10 }'

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

# ---- 3. self-consistency: 5-sample plans, in process -----------------------------
# engine:classify plan by plan, the C core alone (plan_bench: parse, the
# one-pass count, tg_classify, tg_classify_lines on 1 and N threads) and
# the reference's loop; the whole process is in the last section.
THREADS=$(python3 -c 'import os; print(min(os.cpu_count() or 1, 4))')
python3 bench/gen_plans.py --seed 1 --count 2000 --samples 5 --registry-out "$out/plans-registry.json" \
  >"$out/plans-2000.jsonl"
echo
echo "== classify 5-sample plans in process (2000 plans, $(wc -c <"$out/plans-2000.jsonl") bytes)"
results="$out/classify.txt"
{
  "$LUA" bench/classify_bench.lua "$out/plans-2000.jsonl" "$out/plans-registry.json" "$SECONDS_PER"
  "$LUAJIT" bench/classify_bench.lua "$out/plans-2000.jsonl" "$out/plans-registry.json" "$SECONDS_PER"
  "$BUILD/bench/plan_bench" --registry "$out/plans-registry.json" --plans "$out/plans-2000.jsonl" \
    --min-seconds "$SECONDS_PER" --threads "$THREADS"
  python3 bench/peers/seed_reference.py --bench --with-parse "$out/plans-2000.jsonl"
  python3 bench/peers/seed_reference.py --bench "$out/plans-2000.jsonl"
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

# ---- whole process: the commands a user runs, next to the peers ----------------
# The same input files through `toolgate check`, `canon --lines --hash` and
# `classify`, and through the peers a user would pick instead, each a
# whole process (start-up, reading, deciding, writing); wall and CPU time
# measured in this one run, each row the least of BENCH_RUNS runs (3; the
# peers' rows too: on a shared machine other work only adds time).
# simdjson's DOM parse of the call lines is the floor: what parsing alone
# costs on this machine at its fastest.
N_CALLS=${BENCH_CALLS:-100000}
N_PLANS=${BENCH_PLANS:-20000}
RUNS=${BENCH_RUNS:-3}
python3 bench/gen_mcp_calls.py --seed 2 --count "$N_CALLS" --native --schemas-out "$out/wp-schemas.json" \
  >"$out/wp-calls.jsonl"
python3 bench/gen_corpus.py --seed 2 --count "$N_CALLS" >"$out/wp-docs.jsonl"
python3 bench/gen_plans.py --seed 2 --count "$N_PLANS" --samples 5 --registry-out "$out/wp-plans-registry.json" \
  >"$out/wp-plans.jsonl"
regs="--registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-everything.json
  --registry examples/registries/mcp-memory.json"
echo
echo "== whole process: $N_CALLS calls ($(wc -c <"$out/wp-calls.jsonl") bytes), $N_CALLS documents," \
  "$N_PLANS plans, least of $RUNS runs; $(uptime | sed 's/.*load/load/')"
results="$out/whole.txt"
t() { python3 bench/timeit.py --runs "$RUNS" "$@"; }
{
  t node-ajv "$out/wp-ajv.out" -- node bench/peers/check_node.js --schemas "$out/wp-schemas.json" "$out/wp-calls.jsonl"
  for lua in "$LUA" "$LUAJIT"; do
    for pol in rung default; do
      t "toolgate-check-$pol-$lua-1" "$out/wp-check.out" -- "$lua" bin/toolgate check --threads 1 --policy "$pol" \
        --context examples/calls/context.json $regs "$out/wp-calls.jsonl"
      t "toolgate-check-$pol-$lua-2" "$out/wp-check.out" -- "$lua" bin/toolgate check --threads 2 --policy "$pol" \
        --context examples/calls/context.json $regs "$out/wp-calls.jsonl"
    done
  done
  t node-canonicalize "$out/wp-canon-node.out" -- node bench/peers/canon_node.js --check "$out/wp-docs.jsonl"
  for lua in "$LUA" "$LUAJIT"; do
    t "toolgate-canon-hash-$lua" "$out/wp-canon.out" -- "$lua" bin/toolgate canon --lines --hash "$out/wp-docs.jsonl"
  done
  t python-seed-reference "$out/wp-py.out" -- python3 bench/peers/seed_reference.py "$out/wp-plans.jsonl"
  for lua in "$LUA" "$LUAJIT"; do
    for n in 1 "$THREADS"; do
      t "toolgate-classify-$lua-$n" "$out/wp-classify.out" -- "$lua" bin/toolgate classify --threads "$n" \
        --policy rung --registry "$out/wp-plans-registry.json" "$out/wp-plans.jsonl"
    done
  done
} >"$results"
if [ -x "$BUILD/bench/simdjson_floor" ]; then
  "$BUILD/bench/simdjson_floor" "$out/wp-calls.jsonl" --min-seconds "$SECONDS_PER" >"$out/floor.txt"
  "$BUILD/bench/simdjson_floor" "$out/wp-plans.jsonl" --min-seconds "$SECONDS_PER" >"$out/floor-plans.txt"
fi
awk -v floor="$out/floor.txt" -v floor_plans="$out/floor-plans.txt" -v n="$N_CALLS" -v n_plans="$N_PLANS" '
  { name = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[name, kv[1]] = kv[2] } names[++k] = name }
  function peer(nm) { return nm ~ /-check-/ ? "node-ajv" : nm ~ /-canon-/ ? "node-canonicalize" : "python-seed-reference" }
  END {
    printf "%-34s %9s %9s %14s %14s\n", "", "wall s", "cpu s", "vs peer, wall", "vs peer, cpu"
    for (i = 1; i <= k; i++) {
      nm = names[i]; p = peer(nm)
      if (nm !~ /^toolgate-/) { printf "%-34s %9.3f %9.3f\n", nm, v[nm, "wall"], v[nm, "cpu"]; continue }
      note = (v[nm, "rc"] > 1) ? "  (exit " v[nm, "rc"] ")" : ""
      printf "%-34s %9.3f %9.3f %13.1fx %13.1fx%s\n", nm, v[nm, "wall"], v[nm, "cpu"],
        v[p, "wall"] / v[nm, "wall"], v[p, "cpu"] / v[nm, "cpu"], note
    }
    if ((getline line < floor) > 0) {
      split(line, f, " "); for (j = 2; j in f; j++) { split(f[j], kv, "="); fl[kv[1]] = kv[2] }
      printf "%-34s %9.3f %9s   (parse only: the floor for the calls, %.0f ns a line)\n", "simdjson-dom-parse",
        fl["ns_per_line"] * n / 1e9, "", fl["ns_per_line"]
    }
    # the plans through the same parse on one thread: no classify that
    # parses its input beats this ratio to the Python reference per thread
    if ((getline line < floor_plans) > 0) {
      split(line, f, " "); for (j = 2; j in f; j++) { split(f[j], kv, "="); fp[kv[1]] = kv[2] }
      t = fp["ns_per_line"] * n_plans / 1e9
      printf "%-34s %9.3f %9s %13.1fx   (parse only, in process: the floor for the plans, %.0f ns a line)\n",
        "simdjson-dom-parse-plans", t, "", v["python-seed-reference", "wall"] / t, fp["ns_per_line"]
    }
  }' "$results"

# ---- the threshold sweep: 100 grid points against classify once per point ---------
LUA="$LUA" sh bench/sweep_bench.sh

# ---- the stdio MCP proxy: what it adds to a tools/call round trip ------------
# The same bare echo server (spec/stdio/echo.mjs), over its own stdio and
# under toolgate mcp-proxy (decide the call, relay it, verify the result,
# log the decision to the SQLite state), alternating runs so that the
# machine's noise falls on both; added = proxied - direct, per quantile.
echo
echo "== stdio MCP proxy: one tools/call round trip at a time (uptime:$(uptime | sed 's/.*load average//'))"
reg="$out/stdio-echo.json"
printf '%s\n' '{"server":"echo","tools":[{"name":"echo","description":"Echoes the message back.","annotations":{"readOnlyHint":true,"openWorldHint":false},"inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}' >"$reg"
rm -rf "$out/stdio-state"
results="$out/stdio.txt"
: >"$results"
for round in 1 2 3; do
  node bench/stdio_rtt.mjs direct 5000 node spec/stdio/echo.mjs >>"$results"
  for lua in "$LUA" "$LUAJIT"; do
    node bench/stdio_rtt.mjs "proxy-$lua" 5000 "$lua" bin/toolgate mcp-proxy --state "$out/stdio-state" \
      --registry "echo=$reg" -- node spec/stdio/echo.mjs >>"$results"
  done
done
# the median of the three rounds, per row and quantile
awk '
  { name = $1; names[name] = 1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[name, kv[1], ++c[name, kv[1]]] = kv[2] } }
  function med(nm, k,   a, b, x) { a = v[nm, k, 1]; b = v[nm, k, 2]; x = v[nm, k, 3]
    if ((a <= b && b <= x) || (x <= b && b <= a)) return b
    if ((b <= a && a <= x) || (x <= a && a <= b)) return a
    return x }
  END {
    printf "%-28s %9s %9s %9s %14s %14s\n", "", "p50 us", "p90 us", "p99 us", "p50 added us", "p99 added us"
    d50 = med("direct", "p50_us"); d99 = med("direct", "p99_us")
    printf "%-28s %9.1f %9.1f %9.1f %14s %14s\n", "direct", d50, med("direct", "p90_us"), d99, "-", "-"
    for (nm in names) if (nm != "direct")
      printf "%-28s %9.1f %9.1f %9.1f %14.1f %14.1f\n", nm, med(nm, "p50_us"), med(nm, "p90_us"), med(nm, "p99_us"),
        med(nm, "p50_us") - d50, med(nm, "p99_us") - d99
  }' "$results"
