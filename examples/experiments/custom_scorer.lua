-- custom_scorer.lua: a decision function of your own, next to toolgate's.
--
--   lua5.4 examples/experiments/custom_scorer.lua POLICY LABELED.jsonl [THRESHOLD]
--
-- The custom function here is the seed's warning turned into code: it
-- rejects a plan when its samples' arguments agree less than THRESHOLD
-- (default 0.20), whatever the tool's determinism, and accepts it
-- otherwise.  It reads the features the core kept (exp:features()), in
-- place of toolgate's decision table (exp:evaluate); the rung's word and
-- the policy's later stages still stand, as in classify.  Its verdicts are
-- compared, plan by plan, with toolgate's table at the policy's settings
-- (exp:verdicts), and both are summed up the same way.  Replace decide()
-- with your own.
local toolgate = require "toolgate"
local experiment = require "toolgate.experiment"

local policy, plans, threshold = arg[1], arg[2], tonumber(arg[3] or "0.20")
if not plans then
  io.stderr:write("usage: custom_scorer.lua POLICY LABELED.jsonl [THRESHOLD]\n")
  os.exit(2)
end

-- f: n, arg_agreement, result_agreement, epoch_fixed, deterministic, verified, ...
local function decide(f)
  return f.arg_agreement < threshold and "reject" or "accept"
end

local engine = assert(toolgate.new({ policy = policy }))
local exp = assert(experiment.load(engine, plans))
local mine = assert(exp:evaluate(decide))
local theirs = assert(exp:run())
local builtin = assert(exp:verdicts())

local function pct(x) return x and string.format("%.1f%%", 100 * x) or "-" end
for _, row in ipairs({ { "toolgate", theirs }, { "custom", mine } }) do
  local c, m = row[2].counts, row[2].metrics
  print(string.format("%-8s rejects %4d (%4d correct)  fp_share %6s  recall %6s  defers %4d", row[1],
    c.reject.correct + c.reject.fabricated, c.reject.correct, pct(m.fp_share), pct(m.recall),
    c.defer.correct + c.defer.fabricated))
end
local agree = 0
for i, v in ipairs(builtin) do
  if v == mine.verdicts[i] then agree = agree + 1 end
end
print(string.format("same verdict on %d of %d plans", agree, #builtin))
