#!/bin/sh
# make bench-nginx: the MCP gateway (toolgate gateway's conf, Debian's nginx)
# against a plain nginx proxy_pass to the same fixed upstream, with wrk on
# loopback, one run, printed as ratios: the gateway on the accept path (a
# tools/call the policy lets through, its result verified), on the reject
# path (an H2, answered by the gateway), and POST /v1/check (the decision
# API, no upstream), and the floor of any Lua gateway that reads what it
# forwards: the plain proxy with Lua phases that only read the request body
# and hold the answer until its end (what inspecting a JSON answer needs),
# deciding nothing.  Targets (DESIGN 6): the gateway's throughput >= 90% of
# the plain proxy's at 64 connections, p99 added <= 200 us, no non-2xx at 256
# connections; /v1/check >= 40,000 decisions/s on the 2-core machine.
# Then a fleet: two gateway nodes on the shared-dict store (each its own
# state) next to two on the Redis store (toolgate.state.redis, one
# redis-server), wrk against both nodes of a pair at once on the accept
# path; target: the Redis pair within 15% of the shared-dict pair's throughput.
# Issue 37 adds the rows of the accept and reject paths as ratios, the floor
# with proxy_buffering on (as the gateway proxies), and the added latency at
# half the plain proxy's saturation, open loop (bench/rate_load.c).
# Called by `make bench-nginx` with LUA_PATH/LUA_CPATH/TOOLGATE_LIB set;
# every process it starts is stopped by its PID when it ends.
set -eu
. mk/node-env.sh
LUA=${LUA:-lua5.4}
SECONDS_PER=${BENCH_SECONDS:-5}
out=bench/out/nginx
rm -rf "$out"
mkdir -p "$out/up/tmp" "$out/proxy/tmp" "$out/floor/tmp" "$out/floor-buf/tmp"
root=$PWD

set -- $(node nginx/test/http.mjs port 11)
up_port=$1 proxy_port=$2 gw_port=$3 admin_port=$4 floor_port=$5 redis_port=$6
fleet_ports="$7 $8 $9 ${10}" floor_buf_port=${11}
pids="" redis_pid=""
cleanup() {
  for p in $pids; do kill -QUIT "$p" 2>/dev/null || true; done
  [ -z "$redis_pid" ] || kill -TERM "$redis_pid" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# nginx_conf DIR WORKERS BODY [PREAMBLE]: a minimal conf around an http{} body
nginx_conf() {
  cat >"$1/nginx.conf" <<EOF
${4:-}
daemon off;
worker_processes $2;
pid $root/$1/nginx.pid;
error_log $root/$1/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $root/$1/tmp/body;
    proxy_temp_path $root/$1/tmp/proxy;
    fastcgi_temp_path $root/$1/tmp/fastcgi;
    uwsgi_temp_path $root/$1/tmp/uwsgi;
    scgi_temp_path $root/$1/tmp/scgi;
$3
}
EOF
}

start_nginx() { # DIR
  /usr/sbin/nginx -p "$root/$1" -c "$root/$1/nginx.conf" -e "$root/$1/error.log" 2>"$root/$1/stderr.log" &
  pids="$pids $!"
}

wait_port() { # PORT PATH
  i=0
  until curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1$2"; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { echo "bench-nginx: nothing answers on port $1" >&2; exit 1; }
    sleep 0.1
  done
}

# The fixed upstream: an MCP server's answer to tools/call, always the same.
nginx_conf "$out/up" 1 "    server {
        listen 127.0.0.1:$up_port;
        location /mcp {
            default_type application/json;
            return 200 '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: hi\"}]}}';
        }
    }"
# The plain proxy: what the gateway would be without toolgate.
nginx_conf "$out/proxy" 2 "    upstream up { server 127.0.0.1:$up_port; keepalive 64; }
    server {
        listen 127.0.0.1:$proxy_port;
        location = /mcp/bench {
            proxy_pass http://up/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_buffering off;
        }
    }"
# The floor: the plain proxy plus the Lua work every body-reading gateway
# does and nothing else (the body read in access, the answer buffered to its
# end in body_filter, Content-Length dropped in header_filter).
mods=$("$LUA" -e 'print(require("toolgate.cli.gateway").MODULE_DIR)')
# floor_conf DIR PORT BUFFERING: the floor, its answers proxied with buffering BUFFERING
floor_conf() {
  nginx_conf "$1" 2 "    upstream up { server 127.0.0.1:$up_port; keepalive 64; }
    server {
        listen 127.0.0.1:$2;
        location = /mcp/bench {
            access_by_lua_block { ngx.req.read_body() }
            header_filter_by_lua_block { ngx.header[\"Content-Length\"] = nil }
            body_filter_by_lua_block {
                local c = ngx.ctx
                c.buf = c.buf or {}
                c.buf[#c.buf + 1] = ngx.arg[1]
                if not ngx.arg[2] then ngx.arg[1] = nil return end
                ngx.arg[1] = table.concat(c.buf)
            }
            proxy_pass http://up/mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_buffering $3;
        }
    }" "load_module $mods/ndk_http_module.so;
load_module $mods/ngx_http_lua_module.so;"
}
# (the gateway proxies a POST's answer with buffering on: the floor of that too)
floor_conf "$out/floor" "$floor_port" off
floor_conf "$out/floor-buf" "$floor_buf_port" on
cat >"$out/registry.json" <<'EOF'
{"server":"bench","tools":[{"name":"echo","description":"Echoes back the message",
 "inputSchema":{"type":"object","properties":{"message":{"type":"string","maxLength":100}},"required":["message"]},
 "annotations":{"readOnlyHint":true,"openWorldHint":false}}]}
EOF
echo '{"scopes":["bench:read"]}' >"$out/context.json"
"$LUA" bin/toolgate gateway --conf-only --listen "127.0.0.1:$gw_port" --workers 2 --prefix "$out/gw" \
  --upstream "bench=http://127.0.0.1:$up_port/mcp" --registry "bench=$out/registry.json" \
  --context "bench=$out/context.json" >/dev/null
# decisions are logged as in production; the log is written to a file
start_nginx "$out/up"
start_nginx "$out/proxy"
start_nginx "$out/gw"
start_nginx "$out/floor"
start_nginx "$out/floor-buf"
wait_port "$up_port" /mcp
wait_port "$proxy_port" /mcp/bench
wait_port "$floor_port" /mcp/bench
wait_port "$floor_buf_port" /mcp/bench
wait_port "$gw_port" /healthz

accept='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
reject='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi","x":1}}}'
check='{"server":"bench","name":"echo","arguments":{"message":"hi"}}'

# wrk_script NAME BODY: the wrk script of a run (POST BODY, print the figures)
wrk_script() {
  body_file="$out/$1.body"
  printf '%s' "$2" >"$body_file"
  cat >"$out/$1.lua" <<EOF
local f = io.open("$root/$body_file", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
done = function(summary, latency)
  io.write(string.format("RESULT %.0f %.0f %.0f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
EOF
}

# run NAME URL BODY CONNECTIONS: one wrk run; prints "NAME rps p50_us p99_us non2xx errors"
run() {
  wrk_script "$1" "$3"
  wrk -t2 -c"$4" -d"${SECONDS_PER}s" -s "$out/$1.lua" "$2" >"$out/$1.wrk" 2>&1
  echo "$1 $(awk '/^RESULT/ {print $2, $3, $4, $5, $6}' "$out/$1.wrk")"
}

# pair NAME URL_A URL_B BODY CONNECTIONS: wrk against both nodes at once, half
# the connections each; prints "NAME rps p50_us p99_us non2xx errors" (the
# throughputs and errors added, the latencies the worse node's)
pair() {
  wrk_script "$1" "$4"
  wrk -t1 -c$(($5 / 2)) -d"${SECONDS_PER}s" -s "$out/$1.lua" "$2" >"$out/$1.a.wrk" 2>&1 &
  wa=$!
  wrk -t1 -c$(($5 / 2)) -d"${SECONDS_PER}s" -s "$out/$1.lua" "$3" >"$out/$1.b.wrk" 2>&1 &
  wb=$!
  wait "$wa" "$wb"
  echo "$1 $(cat "$out/$1.a.wrk" "$out/$1.b.wrk" | awk '/^RESULT/ { r += $2; if ($3 > p50) p50 = $3;
    if ($4 > p99) p99 = $4; n += $5; e += $6 } END { print r, p50, p99, n, e }')"
}

results="$out/results.txt"
{
  run proxy-64 "http://127.0.0.1:$proxy_port/mcp/bench" "$accept" 64
  run lua-floor-64 "http://127.0.0.1:$floor_port/mcp/bench" "$accept" 64
  run lua-floor-buf-64 "http://127.0.0.1:$floor_buf_port/mcp/bench" "$accept" 64
  run accept-64 "http://127.0.0.1:$gw_port/mcp/bench" "$accept" 64
  run reject-64 "http://127.0.0.1:$gw_port/mcp/bench" "$reject" 64
  run check-64 "http://127.0.0.1:$gw_port/v1/check" "$check" 64
  run proxy-256 "http://127.0.0.1:$proxy_port/mcp/bench" "$accept" 256
  run accept-256 "http://127.0.0.1:$gw_port/mcp/bench" "$accept" 256
} >"$results"

# The fleet: Redis on loopback, four single-worker nodes (two pairs)
mkdir -p "$out/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$root/$out/redis" --save '' --appendonly no \
  --daemonize no >"$out/redis.log" 2>&1 &
redis_pid=$!
set -- $fleet_ports
for node in sd-a sd-b redis-a redis-b; do
  store=""
  case "$node" in redis-*) store="--redis 127.0.0.1:$redis_port --redis-prefix bench-fleet:" ;; esac
  "$LUA" bin/toolgate gateway --conf-only --listen "127.0.0.1:$1" --workers 1 --prefix "$out/$node" \
    --upstream "bench=http://127.0.0.1:$up_port/mcp" --registry "bench=$out/registry.json" \
    --context "bench=$out/context.json" $store >/dev/null
  eval "port_$(echo "$node" | tr - _)=$1"
  start_nginx "$out/$node"
  wait_port "$1" /healthz
  shift
done
# three rounds, the two stores in turn (the first of a round alternating),
# so load from elsewhere falls on both
fleet="$out/fleet.txt"
sd_pair() { pair "sd-64-$1" "http://127.0.0.1:$port_sd_a/mcp/bench" "http://127.0.0.1:$port_sd_b/mcp/bench" "$accept" 64; }
redis_pair() {
  pair "redis-64-$1" "http://127.0.0.1:$port_redis_a/mcp/bench" "http://127.0.0.1:$port_redis_b/mcp/bench" "$accept" 64
}
{
  sd_pair 1
  redis_pair 1
  redis_pair 2
  sd_pair 2
  sd_pair 3
  redis_pair 3
  pair sd-256 "http://127.0.0.1:$port_sd_a/mcp/bench" "http://127.0.0.1:$port_sd_b/mcp/bench" "$accept" 256
  pair redis-256 "http://127.0.0.1:$port_redis_a/mcp/bench" "http://127.0.0.1:$port_redis_b/mcp/bench" "$accept" 256
} >"$fleet"

# The added latency, open loop (bench/rate_load: a fixed rate, each request
# timed from when it was due, so a stall counts for every request it held up)
# at half the plain proxy's saturation rate (proxy-64's throughput); each
# row against the plain proxy at the same rate, taken just before it.
half=$(awk '$1 == "proxy-64" { printf "%d", $2 / 2 }' "$results")
latency="$out/latency.txt"
rate_run() { # NAME PORT BODY [RATE]
  printf '%s' "$3" >"$out/$1.rate.body"
  echo "$1 $("${BUILD:-build}/bench/rate_load" 127.0.0.1 "$2" /mcp/bench "$out/$1.rate.body" "${4:-$half}" "$SECONDS_PER" 64 |
    awk '/^RATE_RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      print v["rate"], v["p50"], v["p99"], v["non2xx"], v["errors"] }')"
}
{
  rate_run proxy-a "$proxy_port" "$accept"
  rate_run lua-floor-buf "$floor_buf_port" "$accept"
  rate_run proxy-b "$proxy_port" "$accept"
  rate_run accept "$gw_port" "$accept"
  rate_run proxy-c "$proxy_port" "$accept"
  rate_run reject "$gw_port" "$reject"
  # (while the gateway saturates below the proxy's half, the rows above
  # measure its queue: the same at half the gateway's own saturation)
  half_gw=$(awk '$1 == "accept-64" { printf "%d", $2 / 2 }' "$results")
  rate_run proxy-e "$proxy_port" "$accept" "$half_gw"
  rate_run accept-half-gw "$gw_port" "$accept" "$half_gw"
} >"$latency"

echo "== the MCP gateway under wrk (loopback, ${SECONDS_PER}s a run, 2 threads; $(uptime | sed 's/.*load/load/'))"
awk '
  { rps[$1] = $2; p50[$1] = $3; p99[$1] = $4; non2xx[$1] = $5; err[$1] = $6; order[++n] = $1 }
  END {
    printf "%-12s %10s %9s %9s %8s %7s %12s\n", "", "req/s", "p50 us", "p99 us", "non-2xx", "errors", "vs proxy"
    for (i = 1; i <= n; i++) {
      k = order[i]; c = k; sub(/^.*-/, "", c)
      printf "%-12s %10.0f %9.0f %9.0f %8d %7d %11.2fx\n", k, rps[k], p50[k], p99[k], non2xx[k], err[k], rps[k] / rps["proxy-" c]
    }
    printf "\naccept path at 64 connections: %.0f%% of the plain proxy (target >= 90%%), p99 added %.0f us (target <= 200)\n",
      100 * rps["accept-64"] / rps["proxy-64"], p99["accept-64"] - p99["proxy-64"]
    printf "the floor of a Lua gateway that reads the body and holds the answer: %.0f%% of the plain proxy;\n", 100 * rps["lua-floor-64"] / rps["proxy-64"]
    printf "the accept path at %.0f%% of that floor\n", 100 * rps["accept-64"] / rps["lua-floor-64"]
    printf "at 256 connections: %d non-2xx, %d socket errors (target 0)\n", non2xx["accept-256"], err["accept-256"]
    printf "POST /v1/check: %.0f decisions/s (target >= 40000)\n", rps["check-64"]
    printf "\nissue 37: the accept path at %.2fx the plain proxy (target >= 0.8), the reject path at %.2fx (target >= 0.9);\n",
      rps["accept-64"] / rps["proxy-64"], rps["reject-64"] / rps["proxy-64"]
    printf "the floors: %.2fx (answers unbuffered), %.2fx (proxy_buffering on, as the gateway proxies a POST)\n",
      rps["lua-floor-64"] / rps["proxy-64"], rps["lua-floor-buf-64"] / rps["proxy-64"]
  }' "$results"

echo
echo "== added latency, open loop at half the plain proxy's saturation ($half req/s, 64 connections,"
echo "   bench/rate_load: timed from each request's due time; $(uptime | sed 's/.*load/load/'))"
awk '
  { rate[$1] = $2; p50[$1] = $3; p99[$1] = $4; non2xx[$1] = $5; err[$1] = $6; order[++n] = $1 }
  END {
    printf "%-14s %10s %9s %9s %8s %7s %13s %13s\n", "", "req/s", "p50 us", "p99 us", "non-2xx", "errors", "p50 added", "p99 added"
    base["lua-floor-buf"] = "proxy-a"; base["accept"] = "proxy-b"; base["reject"] = "proxy-c"
    base["accept-half-gw"] = "proxy-e"
    for (i = 1; i <= n; i++) {
      k = order[i]; b = base[k]
      if (b) printf "%-14s %10.0f %9.0f %9.0f %8d %7d %13.0f %13.0f\n", k, rate[k], p50[k], p99[k], non2xx[k], err[k],
        p50[k] - p50[b], p99[k] - p99[b]
      else printf "%-14s %10.0f %9.0f %9.0f %8d %7d\n", k, rate[k], p50[k], p99[k], non2xx[k], err[k]
    }
    printf "\nthe accept path adds %.0f us at p50 (target <= 100) and %.0f us at p99 (target <= 300); the floor %.0f and %.0f\n",
      p50["accept"] - p50["proxy-b"], p99["accept"] - p99["proxy-b"], p50["lua-floor-buf"] - p50["proxy-a"],
      p99["lua-floor-buf"] - p99["proxy-a"]
    printf "at half the gateway'"'"'s own saturation (%.0f req/s): %.0f us added at p50, %.0f us at p99\n", rate["accept-half-gw"],
      p50["accept-half-gw"] - p50["proxy-e"], p99["accept-half-gw"] - p99["proxy-e"]
  }' "$latency"

echo
echo "== a fleet of two nodes (1 worker each), wrk against both at once, accept path ($(uptime | sed 's/.*load/load/'))"
awk '
  { rps[$1] = $2; p50[$1] = $3; p99[$1] = $4; non2xx[$1] = $5; err[$1] = $6; order[++n] = $1 }
  END {
    printf "%-14s %10s %9s %9s %8s %7s %14s\n", "", "req/s", "p50 us", "p99 us", "non-2xx", "errors", "vs shared dict"
    for (i = 1; i <= n; i++) {
      k = order[i]; base = k; sub(/^redis/, "sd", base)
      printf "%-14s %10.0f %9.0f %9.0f %8d %7d %13.2fx\n", k, rps[k], p50[k], p99[k], non2xx[k], err[k], rps[k] / rps[base]
    }
    # the median of the three rounds, per store
    for (r = 1; r <= 3; r++) { s[r] = rps["sd-64-" r]; d[r] = rps["redis-64-" r]; ps[r] = p99["sd-64-" r]; pd[r] = p99["redis-64-" r] }
    ms = median(s); md = median(d)
    printf "\nRedis store at 64 connections, median of 3 rounds: %.0f req/s, %.0f%% of the shared-dict store'"'"'s %.0f ", md, 100 * md / ms, ms
    printf "(target >= 85%%); p99 %.0f us against %.0f us\n", median(pd), median(ps)
    printf "at 256 connections: %d non-2xx, %d socket errors on the Redis pair (target 0)\n", non2xx["redis-256"], err["redis-256"]
  }
  function median(a,   x, y, z) {
    x = a[1]; y = a[2]; z = a[3]
    if ((x <= y && y <= z) || (z <= y && y <= x)) return y
    if ((y <= x && x <= z) || (z <= x && x <= y)) return x
    return z
  }' "$fleet"
