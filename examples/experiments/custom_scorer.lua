-- custom_scorer.lua: a scorer of your own, in Lua, next to toolgate's.
--
--   lua5.4 examples/experiments/custom_scorer.lua POLICY LABELED.jsonl [THRESHOLD]
--
-- The custom scorer here is the seed's warning turned into code: it rejects
-- a plan when its samples' arguments agree less than THRESHOLD (default
-- 0.20), whatever the tool's determinism, and accepts it otherwise.  Its
-- verdicts are compared, plan by plan, with toolgate's built-in table at
-- the policy's settings (exp:verdicts), and both are summed up the same
-- way (experiment.metrics).  Replace score() with your own.
local toolgate = require "toolgate"
local experiment = require "toolgate.experiment"
local json = require "toolgate.json"

local policy, plans, threshold = arg[1], arg[2], tonumber(arg[3] or "0.20")
if not plans then
  io.stderr:write("usage: custom_scorer.lua POLICY LABELED.jsonl [THRESHOLD]\n")
  os.exit(2)
end

-- The modal share of the samples' canonical arguments.
local function score(plan)
  local counts, modal = {}, 0
  for _, s in ipairs(plan.samples) do
    local h = assert(toolgate.hash_value(s.arguments or s.calls))
    counts[h] = (counts[h] or 0) + 1
    if counts[h] > modal then modal = counts[h] end
  end
  return #plan.samples > 0 and modal / #plan.samples or 0
end

local engine = assert(toolgate.new({ policy = policy }))
local exp = assert(experiment.load(engine, plans))
local builtin = assert(exp:verdicts())

local codec = assert(toolgate.codec())
local function empty() return { accept = {}, reject = {}, defer = {} } end
local mine, theirs, agree, i = empty(), empty(), 0, 0
for line in io.lines(plans) do
  if line:find("%S") then
    i = i + 1
    local plan = assert(json.decode(codec.engine, line))
    local label = plan.label == "fabricated" and "fabricated" or "correct"
    local v = score(plan) < threshold and "reject" or "accept"
    mine[v][label] = (mine[v][label] or 0) + 1
    theirs[builtin[i]][label] = (theirs[builtin[i]][label] or 0) + 1
    if v == builtin[i] then agree = agree + 1 end
  end
end

local function filled(c)
  for _, v in ipairs({ "accept", "reject", "defer" }) do
    for _, l in ipairs({ "correct", "fabricated" }) do c[v][l] = c[v][l] or 0 end
  end
  return c
end
local function pct(x) return x and string.format("%.1f%%", 100 * x) or "-" end
for _, row in ipairs({ { "toolgate", filled(theirs) }, { "custom", filled(mine) } }) do
  local name, c = row[1], row[2]
  local m = experiment.metrics(c)
  print(string.format("%-8s rejects %4d (%4d correct)  fp_share %6s  recall %6s  defers %4d", name,
    c.reject.correct + c.reject.fabricated, c.reject.correct, pct(m.fp_share), pct(m.recall),
    c.defer.correct + c.defer.fabricated))
end
print(string.format("same verdict on %d of %d plans", agree, i))
