#!/bin/sh
# make demo: toolgate's main job on the shipped examples.
# Run from the repository root by `make demo` (which builds first).
set -u
. mk/node-env.sh
tg="$LUA bin/toolgate"

echo "== RFC 8785 canonical form and XXH3-128 of each example document"
for f in examples/documents/*.json; do
  echo "-- $f"
  $tg canon "$f"
  echo "   hash $($tg canon --hash "$f")"
done

echo
echo "== one call per line: two spellings of one call hash alike; the duplicate key is refused"
$tg canon --lines --hash examples/documents/calls.jsonl
echo "(exit status $? : 1 means some line was refused, as line 3 must be)"

echo
summarize='local cjson = require "cjson"
  for line in io.lines() do
    local d = cjson.decode(line)
    print(string.format("line %-2d %-6s %-13s %-38s %s", d.line, d.verdict, d.code or "",
      (d.server or "?") .. "/" .. (d.tool or "?"), d.path or (d.code == "H4" and d.message) or ""))
  end'
regs="--registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-everything.json
  --registry examples/registries/mcp-memory.json"

echo "== the Resolution Rung (policies/rung.lua: the schemas alone): calls in four formats against three"
echo "   recorded MCP servers"
echo "   (examples/calls/mcp-calls.jsonl; one decision per line)"
$tg check --policy rung $regs examples/calls/mcp-calls.jsonl | $LUA -e "$summarize"

echo
echo "== the whole pipeline (rung -> gate -> verifier) with policies/mcp.lua: contracts from MCP"
echo "   annotations; scopes and max_risk (medium) from examples/calls/context.json; line 6 carries"
echo "   a context of its own that would allow high risk: refused, CONTEXT_IN_CALL (the context is the"
echo "   operator's, never the call's)"
$tg check --policy mcp --context examples/calls/context.json $regs examples/calls/pipeline-calls.jsonl |
  $LUA -e "$summarize"

echo
echo "== registry lint on registries that disagree (examples/registries are clean; these are not)"
$tg registry lint web=spec/data/registries/openai.json spec/data/registries/anthropic.json \
  spec/data/registries/bad_names.json | $LUA -e 'local cjson = require "cjson"
    for line in io.lines() do
      local f = cjson.decode(line)
      if f.summary then print("summary: " .. line) else print(f.severity .. " " .. f.kind .. ": " .. f.message) end
    end'

echo
echo "== self-consistency: the seed's observation, simulated (examples/seed-demo)"
log="${BUILD:-build}/seed-demo.log"
if BUILD=${BUILD:-build} sh examples/seed-demo/run.sh >"$log" 2>&1; then
  sed -n '/^Markdown:/,$p' "$log" | tail -n +2
else
  echo "the seed demo failed:"
  tail -20 "$log"
  failed=1
fi

echo
echo "== the MCP gateway: toolgate gateway (nginx) in front of server-everything (nginx/README.md)"
if [ -x /usr/sbin/nginx ] && [ -f nginx/test/node_modules/@modelcontextprotocol/sdk/package.json ]; then
  sh examples/gateway-demo.sh || failed=1
else
  echo "(skipped: needs Debian's nginx, libnginx-mod-http-lua and npm ci --prefix nginx/test)"
fi
# a part that broke fails make demo (the parts' own refusals are expected output)
exit "${failed:-0}"
