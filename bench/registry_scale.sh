#!/bin/sh
# make bench, its last part (issue 37): registries of 1,000 and 10,000
# generated MCP tools (bench/gen_tools.py, ~3.9 KB a tool; 50,000 too with
# BENCH_50K=1, or any counts with BENCH_TOOLS="1000 50000"): the JSON's size,
# building an engine from it, `toolgate check` start-up, the engine's memory
# against the JSON's size, compiling it into an image and mapping that
# (`toolgate registry compile`; "n/a: not built" where the tree has none),
# and one call decided by each engine.  Each row prints its target beside
# it.  Times are CPU seconds of one process (os.clock, or user + sys of the
# whole `check`), the least of BENCH_ROUNDS runs (default 1): building is
# one thread's work and the machine is shared.
#
# BENCH_TREE=DIR measures another built checkout (its lua/, bin/, build/;
# e.g. a git worktree after `make all`) instead of this one; BENCH_BEFORE=DIR
# measures that one too, each figure of it just before the same figure of
# this one (or BENCH_TREE's), and prints both and their ratio.
#
# Called by `make bench` with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set (they are
# set again here per tree measured).
set -eu
LUA=${LUA:-lua5.4}
LUAJIT=${LUAJIT:-luajit}
BUILD=${BUILD:-build}
ROUNDS=${BENCH_ROUNDS:-1}
BEFORE=${BENCH_BEFORE:-}
counts=${BENCH_TOOLS:-1000 10000}
[ "${BENCH_50K:-0}" = 1 ] && counts="$counts 50000"
out=bench/out/registry
mkdir -p "$out"
root=$PWD
TREE=${BENCH_TREE:-$root}

registry() { sh bench/registry_file.sh "$1"; }
tool=$(sh bench/registry_file.sh tool)
printf '{"max_risk":"critical"}' >"$out/context.json"
printf '{"server":"gen","name":"%s","arguments":{}}\n' "$tool" >"$out/call.jsonl"

# in TREE: run a command with that checkout's modules and libraries
in_tree() { # TREE CMD...
  t=$1
  shift
  LUA_PATH="$t/lua/?.lua;;" LUA_CPATH="$t/$BUILD/lua54/?.so;$t/$BUILD/?.so;;" TOOLGATE_LIB="$t/$BUILD/libtoolgate.so" "$@"
}
# A tree without max_registry_bytes reads a registry file within
# max_input_bytes (1 MiB by default): raise that one for it.
needs_input_limit() { ! grep -q max_registry_bytes "$1/core/toolgate.h"; }
has_compile() {
  help=$(in_tree "$1" "$LUA" "$1/bin/toolgate" registry compile --help 2>&1) && echo "$help" | grep -q "registry compile"
}

# field LINE KEY: KEY's value in a SCALE line (decision, the last, runs to the end)
field() {
  if [ "$2" = decision ]; then echo "$1" | sed -n 's/.* decision=//p'; return; fi
  echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# engine TREE SOURCE -> the SCALE line of the run with the least load_s
engine() {
  limit=""
  needs_input_limit "$1" && limit=1073741824
  best=""
  i=0
  while [ "$i" -lt "$ROUNDS" ]; do
    line=$(in_tree "$1" "$LUAJIT" bench/registry_scale.lua "gen=$2" "$tool" $limit) || { echo "SCALE failed"; return; }
    if [ -z "$best" ] || awk -v a="$(field "$line" load_s)" -v b="$(field "$best" load_s)" 'BEGIN { exit !(a < b) }'; then
      best=$line
    fi
    i=$((i + 1))
  done
  echo "$best"
}

# check_startup TREE FILE -> CPU seconds (user + sys) of `toolgate check` on one call, least of ROUNDS
check_startup() {
  policy=""
  if needs_input_limit "$1"; then
    printf 'return { name = "bench-scale", version = "1", stages = { "rung", "gate", "verifier" },\n  limits = { max_input_bytes = 1073741824 } }\n' >"$out/policy.lua"
    policy="--policy $root/$out/policy.lua"
  fi
  best=""
  i=0
  while [ "$i" -lt "$ROUNDS" ]; do
    in_tree "$1" /usr/bin/time -f "%U %S" -o "$out/time.txt" "$LUA" "$1/bin/toolgate" check $policy \
      --context "$out/context.json" --registry "gen=$2" "$out/call.jsonl" >"$out/check.out" 2>/dev/null || true
    s=$(awk '{ printf "%.2f", $1 + $2 }' "$out/time.txt")
    grep -q '"verdict":"accept"' "$out/check.out" || s="failed"
    if [ -z "$best" ] || [ "$best" = failed ] || { [ "$s" != failed ] && awk "BEGIN { exit !($s < $best) }"; }; then
      best=$s
    fi
    i=$((i + 1))
  done
  echo "$best"
}

# image TREE FILE -> "compile_s=<CPU s> image_bytes=<n>" and the image at $out/tools.tgimg, or "n/a"
image() {
  if ! has_compile "$1"; then echo "n/a"; return; fi
  rm -f "$out/tools.tgimg"
  if ! in_tree "$1" /usr/bin/time -f "%U %S" -o "$out/time.txt" "$LUA" "$1/bin/toolgate" registry compile \
    --output "$out/tools.tgimg" "gen=$2" >"$out/compile.out" 2>&1; then
    echo "failed"
    return
  fi
  echo "compile_s=$(awk '{ printf "%.2f", $1 + $2 }' "$out/time.txt") image_bytes=$(wc -c <"$out/tools.tgimg")"
}

mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
# row LABEL VALUE TARGET: one figure and its target
row() { printf '  %-38s %-34s %s\n' "$1" "$2" "$3"; }
# pair_row LABEL BEFORE AFTER UNIT TARGET (UNIT with its leading space): a figure before and after and their ratio
pair_row() {
  if [ -z "$BEFORE" ]; then row "$1" "$3$4" "$5"; return; fi
  row "$1" "$(awk -v b="$2" -v a="$3" -v u="$4" 'BEGIN {
    if (b + 0 > 0 && a + 0 > 0) printf "%s -> %s%s (%.2fx)", b, a, u, a / b; else printf "%s -> %s%s", b, a, u }')" "$5"
}

echo
echo "== registries of generated MCP tools (bench/gen_tools.py --seed 1, ~3.9 KB a tool; LuaJIT engines;"
echo "   CPU seconds, least of $ROUNDS; $(uptime | sed 's/^ *//'))"
echo "   ${BEFORE:+before: $BEFORE; }tree: $TREE"
for n in $counts; do
  f=$(registry "$n")
  bytes=$(wc -c <"$f")
  scale=$(awk -v n="$n" 'BEGIN { print n / 10000 }')
  echo "$n tools ($(mb "$bytes") of JSON, $(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.0f", b / n }') bytes a tool)"
  a=$(engine "$TREE" "$f")
  b=""
  [ -z "$BEFORE" ] || b=$(engine "$BEFORE" "$f")
  load_target=$(awk -v s="$scale" 'BEGIN { printf "target <= %.2f s (0.4 s at 10,000)", 0.4 * s }')
  pair_row "engine load from JSON" "$(field "$b" load_s)" "$(field "$a" load_s)" " s" "$load_target"
  pair_row "  floor: parsing the JSON alone" "$(field "$b" parse_s)" "$(field "$a" parse_s)" " s" "(the core's parser, nothing built)"
  cb=""
  [ -z "$BEFORE" ] || cb=$(check_startup "$BEFORE" "$f")
  ca=$(check_startup "$TREE" "$f")
  pair_row "check start-up (one call)" "$cb" "$ca" " s" "(the issue's table; $LUA)"
  mem() { [ -n "$1" ] && awk -v r="$(field "$1" rss_kb)" -v z="$(field "$1" rss_base_kb)" 'BEGIN { printf "%.0f", (r - z) * 1024 / 1e6 }'; }
  ratio() { [ -n "$1" ] && awk -v r="$(field "$1" rss_kb)" -v z="$(field "$1" rss_base_kb)" -v b="$bytes" 'BEGIN { printf "%.1f", (r - z) * 1024 / b }'; }
  pair_row "engine RSS (MB)" "$(mem "$b")" "$(mem "$a")" " MB" "(process RSS after the load, less before it)"
  heap() { [ -n "$1" ] && awk -v k="$(field "$1" lua_heap_kb)" 'BEGIN { printf "%.0f", k * 1024 / 1e6 }'; }
  pair_row "  of it the Lua heap (MB)" "$(heap "$b")" "$(heap "$a")" " MB" "(collectgarbage(\"count\"); the rest is C)"
  pair_row "engine RSS / JSON size" "$(ratio "$b")" "$(ratio "$a")" "x" "target <= 3x"
  for side in before after; do
    if [ "$side" = before ]; then [ -n "$BEFORE" ] || continue; t=$BEFORE d=$b; else t=$TREE d=$a; fi
    tag=""
    [ -z "$BEFORE" ] || tag=" ($side)"
    img=$(image "$t" "$f")
    case "$img" in
      n/a)
        row "image: compile$tag" "n/a: not built" "(toolgate registry compile)"
        row "image: map$tag" "n/a: not built" "target <= 10 ms at 10,000"
        ;;
      failed)
        row "image: compile$tag" "failed: $(head -c 200 "$out/compile.out")" ""
        ;;
      *)
        row "image: compile$tag" "$(field "$img" compile_s) s, image $(mb "$(field "$img" image_bytes)")" "(off the request path)"
        m=$(engine "$t" "$out/tools.tgimg")
        row "image: map (toolgate.new)$tag" \
          "$(awk -v s="$(field "$m" load_s)" 'BEGIN { printf "%.1f ms", s * 1000 }'), RSS $(mem "$m") MB" \
          "target <= 10 ms at 10,000 (includes toolgate.new's policy)"
        same=no
        [ "$(field "$m" decision)" = "$(field "$d" decision)" ] && same=yes
        row "image: its decision = JSON's$tag" "$same" "target: byte for byte"
        row "image: check start-up$tag" "$(check_startup "$t" "$out/tools.tgimg") s" "($LUA)"
        ;;
    esac
    row "decide one call$tag" \
      "$(field "$d" verdict | sed "s/$/ $(field "$d" code)/; s/ nil$//"), $(field "$d" decide_first_us) us first, $(field "$d" decide_us) us after" \
      "target: accept (loads and decides)"
  done
done
