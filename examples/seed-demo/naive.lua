-- naive.lua: the naive mean-agreement scorer the seed warns against.
--
--   lua5.4 examples/seed-demo/naive.lua [--threshold 0.80] [--contract-blind] [PLANS.jsonl]
--
-- For each plan (the single-tool form of `toolgate classify`), one score
-- (toolgate.experiment.naive_score, also `toolgate sweep --baseline naive`):
-- the modal share of the samples' combined (arguments, result) pairs, each
-- pair hashed as the RFC 8785 canonical form of {"arguments":..,"result":..}
-- by toolgate.hash_value, so spelling (key order, 50 vs 50.0) is merged
-- exactly as toolgate merges it.  Below the threshold the plan is rejected,
-- otherwise accepted.  There is no defer.
--
-- Like the seed's scorer, it leaves tools that are nondeterministic by
-- contract ("deterministic": false on the plan's tool) to their arguments
-- alone: the seed's scope excludes them, and scoring their results would
-- reject every one of their plans.  --contract-blind scores those on
-- (arguments, result) too.
--
-- Writes one JSON line per plan: {"plan_id","verdict","score","scored_on"}.

local toolgate = require "toolgate"
local experiment = require "toolgate.experiment" -- the scorer itself, toolgate sweep's baseline
local json = require "toolgate.json"

local threshold, blind, path = 0.80, false, nil
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--threshold" then
    i = i + 1
    threshold = assert(tonumber(arg[i]), "--threshold needs a number")
  elseif a == "--contract-blind" then
    blind = true
  elseif a:sub(1, 1) == "-" and a ~= "-" then
    io.stderr:write("naive.lua: unknown option ", a, "\n")
    os.exit(2)
  else
    path = a
  end
  i = i + 1
end

local codec = assert(toolgate.codec())
local input = (path and path ~= "-") and assert(io.open(path, "rb")) or io.stdin

local lineno = 0
for line in input:lines() do
  lineno = lineno + 1
  if line:find("%S") then
    local plan, err = json.decode(codec.engine, line)
    if type(plan) ~= "table" then
      io.stderr:write(string.format("naive.lua: line %d: %s\n", lineno, tostring(err)))
      os.exit(1)
    end
    local args_only = not blind and plan.tool and plan.tool.deterministic == false
    local score = experiment.naive_score(plan, blind)
    io.stdout:write(toolgate.encode({
      plan_id = plan.plan_id,
      verdict = score < threshold and "reject" or "accept",
      score = math.floor(score * 1e4 + 0.5) / 1e4,
      scored_on = args_only and "arguments" or "arguments+result",
    }), "\n")
  end
end
if input ~= io.stdin then input:close() end
