#!/bin/sh
# The MCP gateway part of make demo: toolgate gateway (Debian's nginx) in
# front of the reference MCP server (server-everything, Streamable HTTP), the
# MCP TypeScript SDK's client talking to it: the menu cut to the registry, a
# call that passes, one refused before it reaches the server, one deferred,
# approved through the admin API and retried.  Everything listens on
# 127.0.0.1 on ports the kernel gave and is stopped by its PID at the end.
# Run by examples/demo.sh (LUA, the npm packages of nginx/test installed).
set -u
tg="$LUA bin/toolgate"
dir=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-demo.XXXXXX")
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done' EXIT INT TERM
# shellcheck disable=SC2046 # three port numbers
set -- $(node nginx/test/http.mjs port 3)
listen=127.0.0.1:$1 admin=127.0.0.1:$2 up=$3

(cd nginx/test && PORT=$up exec node node_modules/@modelcontextprotocol/server-everything/dist/index.js \
  streamableHttp) >"$dir/everything.log" 2>&1 &
pids="$pids $!"
head -c 24 /dev/urandom | base64 >"$dir/admin.token"
echo '{"scopes": ["everything:read", "everything:write"]}' >"$dir/context.json"
$tg gateway --listen "$listen" --admin "$admin" --admin-token-file "$dir/admin.token" --policy gateway \
  --upstream "everything=http://127.0.0.1:$up/mcp" --registry everything=examples/registries/mcp-everything.json \
  --context "everything=$dir/context.json" --prefix "$dir/prefix" >"$dir/gateway.log" 2>&1 &
pids="$pids $!"
wait_for() { # URL LOG: until something answers at URL (10 s at most)
  i=0
  until curl -s -o /dev/null --max-time 1 "$1"; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { echo "nothing answers at $1:"; tail -5 "$2"; exit 1; }
    sleep 0.1
  done
}
wait_for "http://127.0.0.1:$up/mcp" "$dir/everything.log"
wait_for "http://$listen/healthz" "$dir/gateway.log"
sed -n 1p "$dir/gateway.log"

sdk() { # STEPS: the SDK client's answers after initialize, one JSON line each
  (cd nginx/test && node client.mjs "http://$listen/mcp/everything" "$1") | tail -n +2
}
# each answer as a person reads it: the result's text (a refusal is a tool
# result with isError, its text written for the model) or the error
show() {
  $LUA -e 'local cjson = require "cjson"
    for line in io.lines() do
      local r = cjson.decode(line)
      local res = r.ok
      if res then
        local text = res.content and res.content[1] and res.content[1].text or cjson.encode(res)
        print((res.isError and "refused: " or "result: ") .. text:sub(1, 200))
      else
        print("error " .. tostring(r.error.code) .. ": " .. tostring(r.error.message):sub(1, 200))
      end
    end'
}
client() { sdk "$1" | show; }
echo "-- tools/list through the gateway: the registry's tools, each pin checked"
sdk '[{"op":"list"}]' | $LUA -e 'local cjson = require "cjson"
  local names = {}
  for _, t in ipairs(cjson.decode(io.read("*a")).ok.tools) do names[#names + 1] = t.name end
  print(#names .. " tools: " .. table.concat(names, ", "))' ||
  { echo "gateway demo: no tools/list answer through the gateway (logs in $dir)"; exit 1; }
echo "-- echo (read-only: passes), echo with an argument it does not declare (H2: never reaches the server)"
client '[{"op":"call","name":"echo","arguments":{"message":"hello"}},
  {"op":"call","name":"echo","arguments":{"message":"hello","to":"attacker"}}]'
echo "-- toggle-simulated-logging writes: deferred until an operator approves it"
out=$(sdk '[{"op":"call","name":"toggle-simulated-logging","arguments":{}}]')
printf '%s\n' "$out" | show
# (the refusal carries its approval id in _meta["toolgate/approval_id"])
id=$(printf '%s' "$out" | grep -o 'approval_id":"[0-9a-f]*"' | head -1 | cut -d'"' -f3)
[ -n "$id" ] || { echo "gateway demo: the deferred call carried no approval id: $out"; exit 1; }
echo "-- POST /v1/approvals/$id/grant on the admin API, then the same call twice: it passes once"
curl -s -X POST -H "Authorization: Bearer $(cat "$dir/admin.token")" "http://$admin/v1/approvals/$id/grant" |
  cut -c1-100
echo
client '[{"op":"call","name":"toggle-simulated-logging","arguments":{}},
  {"op":"call","name":"toggle-simulated-logging","arguments":{}}]'
echo "-- /metrics (decisions)"
curl -s "http://$listen/metrics" | grep '^toolgate_decisions_total'
