#!/bin/sh
# make bench-nginx, its last part (issue 37): the gateway (toolgate gateway's
# conf, Debian's nginx) serving a registry of 10,000 generated MCP tools
# (bench/gen_tools.py; BENCH_NGINX_TOOLS=N for another count): memory and
# reloads, the accept path's speed being bench/nginx.sh's.
#   memory  each worker's RSS, and the PSS (/proc/PID/smaps_rollup: shared
#           pages split between the processes sharing them) of 4 workers
#           together against 1 worker's, each gateway answering calls;
#           target: 4 workers' total PSS <= 1.3x one worker's
#   reload  POST /v1/reload while bench/rate_load sends calls at a fixed
#           rate (BENCH_RELOAD_RATE, default 200/s, over BENCH_RELOAD_SECONDS,
#           default 40: long enough for today's workers to rebuild one after
#           another; the first second a warm-up), against the same run
#           without a reload just before: the p99 a reload adds (target
#           <= 10 ms), requests lost (target 0), the time the POST takes and
#           the time until every answer carries the new registry's hash.
#           The registry reloaded is the same tools plus one (another hash).
# BENCH_TREE=DIR measures another built checkout (its lua/, bin/, build/)
# instead of this one; BENCH_BEFORE=DIR measures that one first, then this
# one (or BENCH_TREE), and prints both.  Every process it starts is stopped
# by its PID when it ends.
# Called by `make bench-nginx` with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set.
set -eu
. mk/node-env.sh
LUA=${LUA:-lua5.4}
BUILD=${BUILD:-build}
N=${BENCH_NGINX_TOOLS:-10000}
RATE=${BENCH_RELOAD_RATE:-200}
SECS=${BENCH_RELOAD_SECONDS:-40}
BEFORE=${BENCH_BEFORE:-}
root=$PWD
TREE=${BENCH_TREE:-$root}
RATE_LOAD=$PWD/$BUILD/bench/rate_load
[ -x "$RATE_LOAD" ] || { echo "registry-nginx: $RATE_LOAD is not built (make $BUILD/bench/rate_load)" >&2; exit 1; }
out=bench/out/registry-nginx
rm -rf "$out"
mkdir -p "$out/up/tmp"

set -- $(node nginx/test/http.mjs port 3)
up_port=$1 gw_port=$2 admin_port=$3
pids=""
cleanup() { for p in $pids; do kill -QUIT "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

# the fixed upstream: an MCP server's answer to tools/call, always the same
cat >"$out/up/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $root/$out/up/nginx.pid;
error_log $root/$out/up/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $root/$out/up/tmp/body;
    proxy_temp_path $root/$out/up/tmp/proxy;
    fastcgi_temp_path $root/$out/up/tmp/fastcgi;
    uwsgi_temp_path $root/$out/up/tmp/uwsgi;
    scgi_temp_path $root/$out/up/tmp/scgi;
    server {
        listen 127.0.0.1:$up_port;
        location /mcp {
            default_type application/json;
            return 200 '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}';
        }
    }
}
EOF
/usr/sbin/nginx -p "$root/$out/up" -c "$root/$out/up/nginx.conf" -e "$root/$out/up/error.log" 2>/dev/null &
pids="$pids $!"

reg_a=$(sh bench/registry_file.sh "$N")
reg_b=$(sh bench/registry_file.sh $((N + 1)))
tool=$(sh bench/registry_file.sh tool)
printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{}}}' "$tool" >"$out/call.body"
printf '{"server":"gen","name":"%s","arguments":{}}' "$tool" >"$out/check.body"
printf '{"scopes":["gen:read"]}' >"$out/context.json"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$out/token"
chmod 600 "$out/token"

# in_tree TREE CMD...: run a command with that checkout's modules and libraries
in_tree() {
  t=$1
  shift
  LUA_PATH="$t/lua/?.lua;;" LUA_CPATH="$t/$BUILD/lua54/?.so;$t/$BUILD/?.so;;" TOOLGATE_LIB="$t/$BUILD/libtoolgate.so" "$@"
}

call_ok() { curl -sf --max-time 5 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  --data-binary "@$out/call.body" "http://127.0.0.1:$gw_port/mcp/gen" | grep -q '"result"'; }
hash_now() { curl -s --max-time 30 -H 'Content-Type: application/json' --data-binary "@$out/check.body" \
  "http://127.0.0.1:$gw_port/v1/check" | sed -n 's/.*"registry_hash":"\([0-9a-f]*\)".*/\1/p'; }

# gateway TREE DIR WORKERS: write its conf and start it (the registry: $out/registry.json)
gateway() {
  policy=""
  if ! grep -q max_registry_bytes "$1/core/toolgate.h"; then
    # a tree without max_registry_bytes reads a registry within max_input_bytes: raise it
    sed 's/^  version = "2",$/  version = "2", limits = { max_input_bytes = 1073741824 },/' "$1/policies/mcp.lua" >"$out/policy.lua"
    policy="--policy $root/$out/policy.lua"
  fi
  in_tree "$1" "$LUA" "$1/bin/toolgate" gateway --conf-only --listen "127.0.0.1:$gw_port" --workers "$3" \
    --prefix "$root/$2" --upstream "gen=http://127.0.0.1:$up_port/mcp" --registry "gen=$root/$out/registry.json" \
    --context "gen=$root/$out/context.json" --admin "127.0.0.1:$admin_port" --admin-token-file "$root/$out/token" \
    $policy >"$root/$2.conf.log" 2>&1 || { echo "registry-nginx: toolgate gateway failed: $(cat "$root/$2.conf.log")" >&2; exit 1; }
  /usr/sbin/nginx -p "$root/$2" -c "$root/$2/nginx.conf" -e "$root/$2/error.log" 2>"$root/$2/stderr.log" &
  gw_pid=$!
  pids="$pids $gw_pid"
  # ready when it answers a call (at most 600 s; a gateway that exited ends the wait)
  i=0
  until call_ok; do
    kill -0 "$gw_pid" 2>/dev/null || { echo "registry-nginx: the gateway exited (see $2/stderr.log)" >&2; exit 1; }
    i=$((i + 1))
    [ "$i" -lt 3000 ] || { echo "registry-nginx: the gateway in $2 never answered a call" >&2; exit 1; }
    sleep 0.2
  done
  # every worker answers some calls (each builds what it builds lazily)
  i=0
  while [ "$i" -lt 200 ]; do call_ok || true; i=$((i + 1)); done
}
stop() { kill -QUIT "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; }

kb() { awk -v k="$2" '$1 == k ":" { print $2 }' "/proc/$1/$3" 2>/dev/null || echo 0; }
workers_of() { ps -o pid= --ppid "$1" | tr -d ' '; }

# memory TREE LABEL: per-worker RSS and PSS, master's PSS, 1 worker then 4
memory() {
  for w in 1 4; do
    gateway "$1" "$out/$2-w$w" "$w"
    rss="" pss=0 private=""
    for p in $(workers_of "$gw_pid"); do
      rss="$rss $(kb "$p" VmRSS status)"
      pss=$((pss + $(kb "$p" Pss smaps_rollup)))
      private="$private $(($(kb "$p" Private_Clean smaps_rollup) + $(kb "$p" Private_Dirty smaps_rollup)))"
    done
    echo "$2 w$w rss_kb=$(echo $rss | tr ' ' ,) pss_kb=$pss private_kb=$(echo $private | tr ' ' ,)" \
      "master_pss_kb=$(kb "$gw_pid" Pss smaps_rollup) master_rss_kb=$(kb "$gw_pid" VmRSS status)"
    if [ "$w" = 4 ]; then reload "$2"; fi
    stop
  done
}

# rate_run NAME: calls at RATE for SECS, 16 connections -> "p50=.. p99=.. non2xx=.. errors=.. late=.."
rate_run() {
  "$RATE_LOAD" 127.0.0.1 "$gw_port" /mcp/gen "$out/call.body" "$RATE" "$SECS" 16 >"$out/$1.rate" 2>&1 || true
  sed -n 's/^RATE_RESULT //p' "$out/$1.rate"
}

now_ms() { date +%s%3N; }

# reload LABEL: on the 4-worker gateway, a run without a reload, then one with
reload() {
  cp "$reg_a" "$out/registry.json"
  quiet=$(rate_run "$1-quiet")
  old=$(hash_now)
  cp "$reg_b" "$out/registry.json.tmp"
  mv "$out/registry.json.tmp" "$out/registry.json"
  rate_run "$1-reload" >"$out/$1-reload.result" &
  rl=$!
  sleep 3
  t0=$(now_ms)
  code=$(curl -s -o "$out/$1-reload.json" -w '%{http_code}' --max-time 300 -X POST \
    -H "Authorization: Bearer $(cat "$out/token")" "http://127.0.0.1:$admin_port/v1/reload")
  t1=$(now_ms)
  # every answer new: 16 in a row on fresh connections carry the new hash (at most 300 s)
  seen=0 tries=0
  while [ "$seen" -lt 16 ] && [ "$tries" -lt 3000 ]; do
    h=$(hash_now)
    if [ -n "$h" ] && [ "$h" != "$old" ]; then seen=$((seen + 1)); else seen=0; fi
    tries=$((tries + 1))
  done
  t2=$(now_ms)
  wait "$rl" || true
  echo "$1 reload status=$code post_ms=$((t1 - t0)) all_new_ms=$((t2 - t0)) old=$old new=$(hash_now)"
  echo "$1 quiet $quiet"
  echo "$1 during $(cat "$out/$1-reload.result")"
  cp "$reg_a" "$out/registry.json"
}

results="$out/results.txt"
: >"$results"
cp "$reg_a" "$out/registry.json"
[ -z "$BEFORE" ] || memory "$BEFORE" before >>"$results"
memory "$TREE" after >>"$results"

echo
echo "== the gateway with $N generated tools ($(wc -c <"$reg_a" | awk '{ printf "%.1f MB", $1 / 1e6 }') of JSON; $(uptime | sed 's/^ *//'))"
echo "   ${BEFORE:+before: $BEFORE; after: }$TREE"
awk -v rate="$RATE" -v secs="$SECS" -v both="${BEFORE:+1}" '
  function kv(s, k,   a, i, n) { n = split(s, a, " "); for (i = 1; i <= n; i++) if (index(a[i], k "=") == 1) return substr(a[i], length(k) + 2); return "" }
  function mb(k) { return sprintf("%.0f MB", k * 1024 / 1e6) }
  $2 == "w1" { w1[$1] = $0 }
  $2 == "w4" { w4[$1] = $0 }
  $2 == "reload" { rl[$1] = $0 }
  $2 == "quiet" { q[$1] = $0 }
  $2 == "during" { d[$1] = $0 }
  END {
    for (s = 1; s <= 2; s++) {
      t = s == 1 ? "before" : "after"
      if (!(t in w1)) continue
      if (both) printf "%s\n", t
      split(kv(w1[t], "rss_kb"), r1, ","); n4 = split(kv(w4[t], "rss_kb"), r4, ",")
      line = ""; for (i = 1; i <= n4; i++) line = line (i > 1 ? ", " : "") mb(r4[i])
      printf "  %-34s %-36s %s\n", "worker RSS, 1 worker", mb(r1[1]), "(the issue: 478 MB at 10,000)"
      printf "  %-34s %-36s\n", "worker RSS, 4 workers", line
      p1 = kv(w1[t], "pss_kb"); p4 = kv(w4[t], "pss_kb")
      printf "  %-34s %-36s %s\n", "PSS: 4 workers / 1 worker", sprintf("%s / %s = %.2fx", mb(p4), mb(p1), p4 / p1), "target <= 1.3x"
      n4 = split(kv(w4[t], "private_kb"), v4, ","); line = ""; for (i = 1; i <= n4; i++) line = line (i > 1 ? ", " : "") mb(v4[i])
      printf "  %-34s %-36s %s\n", "private to each worker (4 workers)", line, "(Private_Clean + Private_Dirty: shared with none)"
      m1 = kv(w1[t], "master_pss_kb"); m4 = kv(w4[t], "master_pss_kb")
      printf "  %-34s %-36s %s\n", "PSS: master (1 worker, 4 workers)", mb(m1) ", " mb(m4), ""
      printf "  %-34s %-36s %s\n", "PSS: all 4 workers + master", mb(p4 + m4), "(the issue: 2,068 MB at 10,000)"
      printf "  %-34s %-36s %s\n", "PSS with the master: 4 / 1 worker", sprintf("%s / %s = %.2fx", mb(p4 + m4), mb(p1 + m1), (p4 + m4) / (p1 + m1)),
        "(the whole gateway: the master shares its pages too)"
      printf "  %-34s %-36s %s\n", "reload: POST /v1/reload answered", sprintf("%s ms (%s)", kv(rl[t], "post_ms"), kv(rl[t], "status")), ""
      printf "  %-34s %-36s %s\n", "reload: every answer new after", kv(rl[t], "all_new_ms") " ms", "(hash " kv(rl[t], "old") " -> " kv(rl[t], "new") ")"
      printf "  %-34s %-36s %s\n", sprintf("calls at %d/s, %d s, no reload", rate, secs),
        sprintf("p50 %s, p99 %s, p99.9 %s, max %s us", kv(q[t], "p50"), kv(q[t], "p99"), kv(q[t], "p999"), kv(q[t], "max")), ""
      printf "  %-34s %-36s %s\n", "the same with a reload",
        sprintf("p50 %s, p99 %s, p99.9 %s, max %s us", kv(d[t], "p50"), kv(d[t], "p99"), kv(d[t], "p999"), kv(d[t], "max")), ""
      printf "  %-34s %-36s %s\n", "p99 added by the reload", sprintf("%.1f ms", (kv(d[t], "p99") - kv(q[t], "p99")) / 1000), "target <= 10 ms"
      lost = kv(d[t], "non2xx") + kv(d[t], "errors")
      printf "  %-34s %-36s %s\n", "calls lost during the reload", sprintf("%d (non-2xx %s, errors %s, late %s)", lost, kv(d[t], "non2xx"), kv(d[t], "errors"), kv(d[t], "late")), "target 0"
    }
  }' "$results"
