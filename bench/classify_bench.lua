-- classify_bench.lua: 5-sample plan classification from JSON text through
-- the Lua API (toolgate's engine:classify: the core parses, runs the rung
-- on every sample, hashes, counts, decides and writes the decision), plan
-- by plan, under whichever interpreter runs it.  Prints one line:
--   toolgate-<binding>-classify plans=<n> samples_per_plan=<k> seconds=<s> us_per_plan=<x>
--   lua5.4 bench/classify_bench.lua PLANS.jsonl REGISTRY.json [MIN_SECONDS]
local toolgate = require "toolgate"

local path, registry, min_seconds = arg[1], arg[2], tonumber(arg[3] or "1")
local plans = {}
for line in io.lines(path) do
  if line:find("%S") then plans[#plans + 1] = line end
end

-- The engine's own in-process store, as toolgate classify has it: the
-- quarantines of the first pass stay (the Python reference keeps none,
-- which changes some verdicts, not the work).
local engine = assert(toolgate.new({
  policy = { name = "bench", version = "1", stages = { "rung", "consistency" } },
  registry = { registry },
}))

local samples = 0
for i = 1, #plans do -- warm-up; every plan must decode
  local d = engine:classify(plans[i])
  assert(d.stage ~= "decode", d.message)
  samples = samples + (d.n or 0)
end

local passes, t0 = 0, os.clock()
local elapsed
repeat
  for i = 1, #plans do engine:classify(plans[i]) end
  passes = passes + 1
  elapsed = os.clock() - t0
until elapsed >= min_seconds

local label = rawget(_G, "jit") and "toolgate-luajit-ffi-classify" or "toolgate-lua54-capi-classify"
print(string.format("%s plans=%d samples_per_plan=%g seconds=%.3f us_per_plan=%.1f", label, #plans,
  samples / #plans, elapsed, elapsed * 1e6 / (passes * #plans)))
