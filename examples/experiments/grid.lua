-- grid.lua: a grid search with toolgate.experiment, in a script.
--
--   lua5.4 examples/experiments/grid.lua POLICY LABELED.jsonl
--
-- Reads the labeled plans once, tries arg_reject from 0.05 to 0.50 with
-- the quarantine on and off, and prints, for each, the false-positive
-- share of rejects and the recall of fabricated plans; then the setting
-- with the best recall whose rejects are at most 5% correct plans.
local toolgate = require "toolgate"
local experiment = require "toolgate.experiment"

local policy, plans = arg[1], arg[2]
if not plans then
  io.stderr:write("usage: grid.lua POLICY LABELED.jsonl\n")
  os.exit(2)
end
local engine = assert(toolgate.new({ policy = policy }))
local exp = assert(experiment.load(engine, plans))
local axes = assert(experiment.parse_grid("arg_reject=0.05:0.5:0.05,quarantine=on|off"))
local results = exp:grid(axes)

local function pct(x) return x and string.format("%5.1f%%", 100 * x) or "    -" end
print(string.format("%d plans: %d correct, %d fabricated", exp.n, exp.labels.correct, exp.labels.fabricated))
print("arg_reject  quarantine  fp_share  recall  quarantined")
for _, r in ipairs(results) do
  print(string.format("%10.2f  %10s  %8s  %6s  %d", r.point.arg_reject, r.point.quarantine and "on" or "off",
    pct(r.metrics.fp_share), pct(r.metrics.recall), #r.quarantined))
end
local best = experiment.best(results, assert(experiment.parse_objective("max recall with fp_share <= 0.05")))[1]
if best then
  print(string.format("best: arg_reject %.2f, quarantine %s (recall %s, fp_share %s)", best.point.arg_reject,
    best.point.quarantine and "on" or "off", pct(best.metrics.recall), pct(best.metrics.fp_share)))
else
  print("best: no setting keeps the false-positive share at or below 5%")
end
