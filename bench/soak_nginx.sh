#!/bin/sh
# bench/soak_nginx.sh: `make soak`'s gateway half -- REQUESTS (default
# 1,000,000) MCP calls through `toolgate gateway` (nginx, 2 workers, the
# master's engine shared), and each worker's memory along the way, which
# must stay flat.
#
#   sh bench/soak_nginx.sh [REQUESTS]     (SOAK_NGINX_MAX_SECONDS=N bounds
#                                         the run, default 1200)
#
# The calls are a fixed mix, round robin: accepted (echo, its result
# checked), refused by the registry (a tool it lacks) and by the schema
# (an argument echo does not declare), against nginx/test/reload-load.mjs's
# server answering at once.  wrk runs rounds of ROUND seconds until
# REQUESTS were answered; after each, every worker's RSS and PSS
# (/proc/PID/smaps_rollup) is printed.  The run fails when a worker's RSS at
# the end is more than MARGIN above its value after the first round that
# reached 100,000 requests (a tenth of a shorter run: the warm-up, the Lua
# heap reaching its working size), when a worker was replaced (a crash), or when wrk saw an error.
set -eu

TOTAL=${1:-1000000}
MAX_SECONDS=${SOAK_NGINX_MAX_SECONDS:-1200}
ROUND=10
MARGIN_KB=4096 # and 5 %, as bench/soak.lua
WARM=$((TOTAL / 10 < 100000 ? TOTAL / 10 : 100000))

root=$(cd "$(dirname "$0")/.." && pwd)
command -v wrk >/dev/null || { echo "soak_nginx: wrk is needed (make bench installs it)"; exit 1; }
[ -x /usr/sbin/nginx ] || { echo "soak_nginx: Debian's nginx is needed"; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-soak.XXXXXX")
chmod 755 "$dir"
upstream_pid=
gateway_pid=
cleanup() {
  [ -n "$gateway_pid" ] && kill "$gateway_pid" 2>/dev/null || true
  [ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null || true
  [ -n "$gateway_pid" ] && wait "$gateway_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

wait_for() { # what, command: at most 60 s
  i=0
  until sh -c "$2" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 600 ] && { echo "soak_nginx: timed out waiting for $1"; exit 1; }
    sleep 0.1
  done
}

(cd "$root/nginx/test" && DELAY_MS=0 PORT=0 exec node reload-load.mjs serve) >"$dir/upstream.log" 2>&1 &
upstream_pid=$!
wait_for "the upstream" "grep -q '^port ' '$dir/upstream.log'"
up=$(sed -n 's/^port //p' "$dir/upstream.log")

tool() {
  printf '{"name":"%s","description":"Says the message again.","inputSchema":{"type":"object","properties":' "$1"
  printf '{"message":{"type":"string"}},"required":["message"],"additionalProperties":false},'
  printf '"annotations":{"readOnlyHint":true,"openWorldHint":false}}'
}
printf '{"server":"s","tools":[%s,%s]}' "$(tool echo)" "$(tool ping)" >"$dir/s.json"
printf '{"scopes":["s:read"]}' >"$dir/s.ctx"
listen=127.0.0.1:$(free_port)
"$root/bin/toolgate" gateway --listen "$listen" --workers 2 --prefix "$dir/prefix" --audit-log /dev/null \
  --upstream "s=http://127.0.0.1:$up/mcp" --registry "s=$dir/s.json" --context "s=$dir/s.ctx" \
  >"$dir/gateway.log" 2>&1 &
gateway_pid=$!
wait_for "the gateway" "curl -s -f -o /dev/null http://$listen/healthz"

cat >"$dir/soak.lua" <<'EOF'
local bodies = {
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"soak"}}}',
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{"message":"soak"}}}',
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"soak","x":1}}}',
}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[i])
end
done = function(summary)
  io.write(string.format("RESULT %d %d\n", summary.requests, summary.errors.status + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
EOF

master=$(cat "$dir/prefix/nginx.pid")
workers=$(pgrep -P "$master" | sort | tr '\n' ' ')
field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/smaps_rollup"; }

echo "soak_nginx: $TOTAL requests, workers $workers(uptime: $(uptime))"
done_n=0
base=
start=$(date +%s)
while [ "$done_n" -lt "$TOTAL" ]; do
  if [ $(($(date +%s) - start)) -gt "$MAX_SECONDS" ]; then
    echo "soak_nginx: FAIL: $done_n of $TOTAL requests in $MAX_SECONDS s"
    exit 1
  fi
  wrk -t1 -c8 -d"${ROUND}s" -s "$dir/soak.lua" "http://$listen/mcp/s" >"$dir/wrk.out" 2>&1
  set -- $(awk '/^RESULT/ {print $2, $3}' "$dir/wrk.out")
  [ "${2:-1}" -eq 0 ] || { echo "soak_nginx: FAIL: wrk saw errors"; cat "$dir/wrk.out"; exit 1; }
  done_n=$((done_n + $1))
  now_workers=$(pgrep -P "$master" | sort | tr '\n' ' ')
  [ "$now_workers" = "$workers" ] || { echo "soak_nginx: FAIL: workers $workers became $now_workers"; exit 1; }
  line="$done_n requests:"
  rss_all=
  for w in $workers; do
    line="$line worker $w RSS $(field "$w" Rss) kB PSS $(field "$w" Pss) kB;"
    rss_all="$rss_all $(field "$w" Rss)"
  done
  echo "$line"
  if [ -z "$base" ] && [ "$done_n" -ge "$WARM" ]; then base=$rss_all; fi
done

fail=0
i=1
for w in $workers; do
  b=$(echo $base | cut -d' ' -f$i)
  e=$(field "$w" Rss)
  limit=$((b + b / 20 + MARGIN_KB))
  if [ "$e" -gt "$limit" ]; then
    echo "soak_nginx: FAIL: worker $w grew from $b kB (after warm-up) to $e kB (limit $limit kB)"
    fail=1
  else
    echo "soak_nginx: worker $w flat: $b kB after warm-up, $e kB at the end (limit $limit kB)"
  fi
  i=$((i + 1))
done
exit $fail
