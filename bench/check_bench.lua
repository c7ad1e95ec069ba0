-- check_bench.lua: engine:check in process, as an nginx worker or an
-- embedding host pays for it: one call text in, one decision out, under
-- whichever interpreter runs it.
--
--   luajit bench/check_bench.lua --calls CALLS.jsonl [--policy P] [--min-seconds S]
--
-- CALLS.jsonl: native call lines (bench/gen_mcp_calls.py --native) against
-- the three recorded MCP registries in examples/registries.  P: a policy
-- file or a shipped policy's name (default: rung, the Resolution Rung and
-- the verifier).  One untimed warm-up pass, then whole passes timed with
-- os.clock until S seconds (default 1); prints
--   toolgate-<lua54|luajit>-check-<policy> calls=<n> seconds=<s> ns_per_call=<y> accepted=<a>
local toolgate = require "toolgate"

local opts = { ["min-seconds"] = "1", policy = "rung" }
for i = 1, #arg, 2 do
  local k = arg[i]:match("^%-%-(.+)$")
  if not k or arg[i + 1] == nil then
    io.stderr:write("check_bench.lua: usage: --calls FILE [--policy P] [--min-seconds S]\n")
    os.exit(2)
  end
  opts[k] = arg[i + 1]
end
local reg = "examples/registries/"
local engine = assert(toolgate.new({ policy = opts.policy, context = { max_risk = "critical" },
  registry = { reg .. "mcp-filesystem.json", reg .. "mcp-everything.json", reg .. "mcp-memory.json" } }))
local calls = {}
for line in io.lines(opts.calls) do
  if line:find("%S") then calls[#calls + 1] = line end
end

local accepted = 0
for i = 1, #calls do
  if engine:check(calls[i]).verdict == "accept" then accepted = accepted + 1 end
end
local limit, seconds, passes = tonumber(opts["min-seconds"]), 0, 0
while seconds < limit do
  local t0 = os.clock()
  for i = 1, #calls do engine:check(calls[i]) end
  seconds = seconds + os.clock() - t0
  passes = passes + 1
end
local name = opts.policy:match("([^/]+)%.lua$") or opts.policy
print(string.format("toolgate-%s-check-%s calls=%d seconds=%.6f ns_per_call=%.1f accepted=%d",
  rawget(_G, "jit") and "luajit" or "lua54", name, #calls, seconds, seconds * 1e9 / (passes * #calls), accepted))
