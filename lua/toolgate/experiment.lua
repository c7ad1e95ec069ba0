--- toolgate.experiment: threshold experiments on labeled plans.
--
--   local experiment = require "toolgate.experiment"
--   local exp = assert(experiment.load(engine, "plans.jsonl"))
--   local r = exp:run{ arg_reject = 0.15 }      -- the policy's settings, one changed
--   print(r.metrics.fp_share, r.metrics.recall)
--   local axes = assert(experiment.parse_grid("arg_reject=0.05:0.5:0.05,arg_accept=0.6:0.95:0.05"))
--   for _, r in ipairs(exp:grid(axes)) do ... end
--
-- The plans are read once, by classify's own pass in the core
-- (engine:sweep_stream); every run decides them again with the engine's
-- decision table under its settings, in input order, quarantines carried
-- from plan to plan as classify carries them in one process.  A run gives,
-- plan for plan, the verdict classify gives under a policy with those
-- settings (spec/experiment_spec.lua holds the two to each other).
--
-- A labeled plan is a classify plan with "label": "correct" | "fabricated"
-- and, optionally, "tool_labels": [{"server", "name", "deterministic"}]
-- (docs/self-consistency.md, "Threshold sweeps").
-- @module toolgate.experiment

local lines = require "toolgate.lines"

local M = {}

--- The settings a grid may sweep, in the order a table shows them.
M.KEYS = { "arg_reject", "arg_accept", "result_accept", "result_quarantine", "min_samples", "quarantine" }
local IS_KEY = {}
for _, k in ipairs(M.KEYS) do IS_KEY[k] = true end

local VERDICTS = { [0] = "accept", "reject", "defer" }
local LABELS = { [0] = "none", "correct", "fabricated", "other" }

local Experiment = {}
Experiment.__index = Experiment

--- Reads labeled plans.
-- load(engine, source[, ctx]) -> experiment | nil, message, code
-- @param engine a toolgate engine (its policy, registry and store)
-- @param source a path, or a read function (the next piece, nil at the end)
function M.load(engine, source, ctx)
  local read, f, read_failed
  if type(source) == "function" then
    read = source
  elseif type(source) == "string" then
    local err
    f, err = io.open(source, "rb")
    if not f then return nil, "cannot read " .. tostring(err), "READ" end
    read, read_failed = lines.reader(f)
  else
    error("experiment.load: a path or a read function expected, got " .. type(source), 2)
  end
  local sweep, tools, base = engine:sweep_stream(read, ctx)
  if f then f:close() end
  if read_failed and read_failed() then return nil, "cannot read " .. source .. ": " .. read_failed(), "READ" end
  if not sweep then return nil, tools, base end
  local self = setmetatable({ sweep = sweep, tools = tools, base = base, n = sweep:count() }, Experiment)
  -- the labels of the plans, counted at any setting (accept + reject + defer)
  local c = sweep:run(base)
  self.labels = {}
  for l = 0, 3 do self.labels[LABELS[l]] = c[l + 1] + c[4 + l + 1] + c[8 + l + 1] end
  return self
end

--- The settings of a run: the policy's, with those given over them.
function Experiment:settings(over)
  local s = {}
  for k, v in pairs(self.base) do s[k] = v end
  for k, v in pairs(over or {}) do s[k] = v end
  return s
end

--- The share a over a + b, nil when there is nothing to share.
local function share(a, b)
  return a + b > 0 and a / (a + b) or nil
end

--- What a confusion says.
-- metrics(counts) -> {fp_share, recall, defer_rate, accept_precision, fabricated_accepted}
-- counts: counts[verdict][label] (verdict accept|reject|defer, label correct|fabricated)
function M.metrics(c)
  local fab = c.accept.fabricated + c.reject.fabricated + c.defer.fabricated
  local labeled = fab + c.accept.correct + c.reject.correct + c.defer.correct
  return {
    -- the seed's figure: of the plans rejected, the share that was correct
    fp_share = share(c.reject.correct, c.reject.fabricated),
    recall = fab > 0 and c.reject.fabricated / fab or nil,
    defer_rate = labeled > 0 and (c.defer.correct + c.defer.fabricated) / labeled or nil,
    accept_precision = share(c.accept.correct, c.accept.fabricated),
    fabricated_accepted = c.accept.fabricated,
  }
end

local function confusion(flat)
  local c = {}
  for v = 0, 2 do
    local row = {}
    for l = 0, 3 do row[LABELS[l]] = flat[v * 4 + l + 1] end
    c[VERDICTS[v]] = row
  end
  return c
end

--- One run.
-- run(over) -> result | nil, message: result.settings, result.counts
-- (counts[verdict][label]), result.metrics, result.quarantined (the tools
-- the run quarantined: {server, name, label = true|false|"conflicting"|nil})
function Experiment:run(over)
  local s = self:settings(over)
  local flat, q = self.sweep:run(s)
  if not flat then return nil, q end
  local counts = confusion(flat)
  local quarantined = {}
  for i, t in ipairs(q) do
    local l, label = self.sweep:tool_label(t), nil
    if l == 0 or l == 1 then label = l == 1 elseif l == 2 then label = "conflicting" end
    quarantined[i] = { server = self.tools[t].server, name = self.tools[t].name, label = label }
  end
  return { settings = s, counts = counts, metrics = M.metrics(counts), quarantined = quarantined }
end

--- Each plan's verdict and code at one setting.
-- verdicts(over) -> verdicts, codes (lists in input order) | nil, message
function Experiment:verdicts(over)
  local flat, q, vs, codes = self.sweep:run(self:settings(over), true)
  if not flat then return nil, q end
  for i, v in ipairs(vs) do vs[i] = VERDICTS[v] end
  return vs, codes
end

local VERDICT_CODES = { accept = 0, reject = 1, defer = 2 }

--- The plans' features, for a decision function of your own (read once,
-- then kept): one table per plan, in input order, with label ("correct",
-- "fabricated", "none", "other") and fixed; a fixed plan (decided before
-- the table: a rung failure, a malformed plan) has its verdict and code,
-- the others n, arg_modal, result_modal, arg_agreement, result_agreement,
-- epoch_fixed, deterministic, nondeterministic and verified (as the
-- store's records said when the plan was read: no quarantine of a run).
function Experiment:features()
  if self.plan_features then return self.plan_features end
  local list = {}
  for i = 1, self.n do
    local p = assert(self.sweep:plan(i))
    p.label = LABELS[p.label]
    if p.fixed then
      p.verdict = VERDICTS[p.verdict]
    else
      p.arg_agreement = p.n > 0 and p.arg_modal / p.n or 0
      p.result_agreement = p.n > 0 and p.result_modal / p.n or 0
    end
    list[i] = p
  end
  self.plan_features = list
  return list
end

--- Decides the plans with a function of your own in place of toolgate's
-- table: fn(features) -> "accept" | "reject" | "defer" for each plan that
-- is not fixed.  A fixed plan keeps its verdict, and the policy's later
-- stages still have their word, as in classify (their reject wins, their
-- defer stands over your accept).  Nothing is quarantined.
-- evaluate(fn) -> result (as run's, with .verdicts and .codes) | nil, message
function Experiment:evaluate(fn)
  if type(fn) ~= "function" then error("evaluate: a function expected, got " .. type(fn), 2) end
  local table_ = {}
  for i, f in ipairs(self:features()) do
    if f.fixed then
      table_[i] = 0
    else
      local v = VERDICT_CODES[fn(f)]
      if not v then return nil, "plan " .. i .. ": the function must return accept, reject or defer" end
      table_[i] = v
    end
  end
  local flat, vs, codes = self.sweep:run_with(table_)
  if not flat then return nil, vs end
  for i, v in ipairs(vs) do vs[i] = VERDICTS[v] end
  local counts = confusion(flat)
  return { counts = counts, metrics = M.metrics(counts), quarantined = {}, verdicts = vs, codes = codes }
end

--- The tools labeled "deterministic": false (really nondeterministic) that
-- the registry declares deterministic: what a quarantine should find.
function Experiment:misdeclared()
  local out = {}
  for i, t in ipairs(self.tools) do
    if self.sweep:tool_label(i) == 0 and t.contract and t.contract.deterministic == true then
      out[#out + 1] = { server = t.server, name = t.name }
    end
  end
  return out
end

-- ---- grids -------------------------------------------------------------------

local function number_text(x)
  local s = string.format("%.10g", x)
  return s
end

local function check_value(key, v)
  if key == "quarantine" then return true end
  if key == "min_samples" then
    if v ~= math.floor(v) or v < 1 or v > 2147483647 then
      return nil, "min_samples takes whole numbers from 1, not " .. number_text(v)
    end
  elseif v < 0 or v > 1 then
    return nil, key .. " takes numbers from 0 to 1, not " .. number_text(v)
  end
  return true
end

local MAX_AXIS = 10000

-- The values of one axis: "a:b:step", "v1|v2|...", or one value; for
-- quarantine "on", "off" (or true, false).
local function axis_values(key, text)
  local values = {}
  if key == "quarantine" then
    for word in (text .. "|"):gmatch("([^|]*)|") do
      if word == "on" or word == "true" then values[#values + 1] = true
      elseif word == "off" or word == "false" then values[#values + 1] = false
      else return nil, "quarantine takes on, off or on|off, not \"" .. word .. "\"" end
    end
    return values
  end
  local a, b, step = text:match("^([^:]+):([^:]+):([^:]+)$")
  if a then
    local x, y, d = tonumber(a), tonumber(b), tonumber(step)
    if not x or not y or not d then return nil, key .. "=" .. text .. ": a range is FROM:TO:STEP, three numbers" end
    if d <= 0 then return nil, key .. "=" .. text .. ": the step must be above 0" end
    if y < x then return nil, key .. "=" .. text .. ": the range ends below its start" end
    local count = math.floor((y - x) / d + 1e-9) + 1
    if count > MAX_AXIS then return nil, key .. "=" .. text .. ": more than " .. MAX_AXIS .. " values" end
    for i = 0, count - 1 do
      -- a + i * step, rounded to 9 decimals so 0.05 * 3 is 0.15, not 0.15000000000000002
      values[#values + 1] = math.floor((x + i * d) * 1e9 + 0.5) / 1e9
    end
  else
    for word in (text .. "|"):gmatch("([^|]*)|") do
      local v = tonumber(word)
      if not v then return nil, key .. "=" .. text .. ": \"" .. word .. "\" is not a number" end
      values[#values + 1] = v
    end
  end
  for _, v in ipairs(values) do
    local ok, err = check_value(key, v)
    if not ok then return nil, err end
  end
  return values
end

--- Parses a grid.
-- parse_grid("k=a:b:step,k2=v1|v2,...") -> axes | nil, message
-- axes: {{key =, values = {...}}, ...} in the order given; the first axis
-- is the swept threshold of a plot, the second its series.
function M.parse_grid(text)
  if type(text) ~= "string" or not text:find("%S") then return nil, "an empty grid" end
  local axes, seen = {}, {}
  for part in (text .. ","):gmatch("([^,]*),") do
    local key, spec = part:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
    if not key or spec == "" then return nil, "\"" .. part .. "\": each part is KEY=FROM:TO:STEP or KEY=V1|V2|..." end
    if not IS_KEY[key] then
      return nil, "unknown setting \"" .. key .. "\" (a grid sweeps " .. table.concat(M.KEYS, ", ") .. ")"
    end
    if seen[key] then return nil, key .. " is given twice" end
    seen[key] = true
    local values, err = axis_values(key, spec)
    if not values then return nil, err end
    axes[#axes + 1] = { key = key, values = values }
  end
  local total = 1
  for _, a in ipairs(axes) do total = total * #a.values end
  if total > 1000000 then return nil, "the grid has " .. total .. " points; at most 1000000" end
  return axes
end

--- The points of a grid: every combination, the first axis varying fastest.
-- points(axes) -> {{key = value, ...}, ...}
function M.points(axes)
  local out, at = {}, {}
  for i = 1, #axes do at[i] = 1 end
  repeat
    local p = {}
    for i, a in ipairs(axes) do p[a.key] = a.values[at[i]] end
    out[#out + 1] = p
    local i = 1
    while i <= #axes do -- an odometer, its first wheel the fastest
      at[i] = at[i] + 1
      if at[i] <= #axes[i].values then break end
      at[i] = 1
      i = i + 1
    end
  until i > #axes
  return out
end

--- Every point of a grid.
-- grid(axes[, progress]) -> results, skipped: results as run's (each with
-- .point, the grid's values), skipped the points whose settings cannot
-- hold (arg_reject above arg_accept), with why.  progress(done, total) is
-- called as the points go.
function Experiment:grid(axes, progress)
  local results, skipped = {}, {}
  local pts = M.points(axes)
  for i, p in ipairs(pts) do
    local r, err = self:run(p)
    if r then
      r.point = p
      results[#results + 1] = r
    else
      skipped[#skipped + 1] = { point = p, why = err }
    end
    if progress then progress(i, #pts) end
  end
  return results, skipped
end

-- ---- objectives ---------------------------------------------------------------

local METRICS = { fp_share = true, recall = true, defer_rate = true, accept_precision = true,
                  fabricated_accepted = true }

--- Parses an objective: "max|min METRIC [with METRIC OP NUMBER [and ...]]",
-- OP one of <= >= < > ==.
-- parse_objective(text) -> objective | nil, message
function M.parse_objective(text)
  local words = {}
  for w in tostring(text):gmatch("%S+") do words[#words + 1] = w end
  local dir, metric = words[1], words[2]
  local names = "fp_share, recall, defer_rate, accept_precision, fabricated_accepted"
  if dir ~= "max" and dir ~= "min" then return nil, "an objective starts with max or min" end
  if not METRICS[metric] then return nil, "unknown metric \"" .. tostring(metric) .. "\" (" .. names .. ")" end
  local obj = { dir = dir, metric = metric, limits = {}, text = table.concat(words, " ") }
  local i = 3
  while words[i] do
    if (i == 3 and words[i] ~= "with") or (i > 3 and words[i] ~= "and") then
      return nil, "expected \"" .. (i == 3 and "with" or "and") .. "\" before \"" .. words[i] .. "\""
    end
    local m, op, v = words[i + 1], words[i + 2], tonumber(words[i + 3] or "")
    if not METRICS[m] then return nil, "unknown metric \"" .. tostring(m) .. "\" (" .. names .. ")" end
    if op ~= "<=" and op ~= ">=" and op ~= "<" and op ~= ">" and op ~= "==" then
      return nil, "a limit is METRIC <=|>=|<|>|== NUMBER"
    end
    if not v then return nil, "a limit needs a number after " .. op end
    obj.limits[#obj.limits + 1] = { metric = m, op = op, value = v }
    i = i + 4
  end
  return obj
end

M.DEFAULT_OBJECTIVE = "max recall with fp_share <= 0.05"

local function holds(x, op, v)
  if x == nil then return false end
  if op == "<=" then return x <= v elseif op == ">=" then return x >= v
  elseif op == "<" then return x < v elseif op == ">" then return x > v end
  return x == v
end

--- The results that meet the objective's limits, best first (ties: the
-- lower defer rate, then grid order).  A result without a value for the
-- metric (no rejects for fp_share) meets no limit on it: a run that
-- rejects nothing has no false-positive share to be proud of.
-- best(results, objective) -> list
function M.best(results, obj)
  local ok = {}
  for i, r in ipairs(results) do
    local fine = r.metrics[obj.metric] ~= nil
    for _, l in ipairs(obj.limits) do fine = fine and holds(r.metrics[l.metric], l.op, l.value) end
    if fine then ok[#ok + 1] = { r = r, i = i } end
  end
  table.sort(ok, function(a, b)
    local x, y = a.r.metrics[obj.metric], b.r.metrics[obj.metric]
    if x ~= y then
      if obj.dir == "max" then return x > y end
      return x < y
    end
    local dx, dy = a.r.metrics.defer_rate or 0, b.r.metrics.defer_rate or 0
    if dx ~= dy then return dx < dy end
    return a.i < b.i
  end)
  local out = {}
  for i, e in ipairs(ok) do out[i] = e.r end
  return out
end

--- The ranks of best's list: competition ranking (1, 2, 2, 4), a tie
-- being an equal objective metric and defer rate, all that best orders by
-- before grid order, which says nothing of a point's merit.
-- ranks(best, objective) -> list of whole numbers
function M.ranks(best, obj)
  local out = {}
  for i, r in ipairs(best) do
    local prev = best[i - 1]
    if prev and prev.metrics[obj.metric] == r.metrics[obj.metric]
        and (prev.metrics.defer_rate or 0) == (r.metrics.defer_rate or 0) then
      out[i] = out[i - 1]
    else
      out[i] = i
    end
  end
  return out
end

-- ---- the naive baseline ---------------------------------------------------------

--- The seed's naive scorer on one plan (a single-tool plan as a Lua table):
-- the modal share of the samples' (arguments, result) pairs, canonical
-- (RFC 8785, toolgate.hash_value), rejecting below a threshold.  Tools
-- nondeterministic by contract ("deterministic": false on the plan's
-- tool) are scored on their arguments alone, as the seed's scope says,
-- unless contract_blind.  A plan of several calls is scored on each
-- sample's calls and results together.
-- naive_score(plan[, contract_blind]) -> score in [0, 1]
function M.naive_score(plan, contract_blind)
  local toolgate = require "toolgate"
  local samples = type(plan.samples) == "table" and plan.samples or {}
  local args_only = not contract_blind and type(plan.tool) == "table" and plan.tool.deterministic == false
  local counts, modal = {}, 0
  for _, s in ipairs(samples) do
    local v
    if plan.tool then
      v = args_only and s.arguments or { arguments = s.arguments, result = s.result }
    else
      v = { calls = s.calls, results = s.results }
    end
    local h = toolgate.hash_value(v) or "unhashable"
    local c = (counts[h] or 0) + 1
    counts[h] = c
    if c > modal then modal = c end
  end
  return #samples > 0 and modal / #samples or 0
end

--- The naive scorer on labeled plans: their scores and labels, read once.
-- naive_load(path) -> scores ({score, label} per plan) | nil, message
function M.naive_load(path)
  local json = require "toolgate.json"
  local codec = assert(require("toolgate").codec())
  local f, err = io.open(path, "rb")
  if not f then return nil, "cannot read " .. tostring(err) end
  local out, n = {}, 0
  for line in f:lines() do
    n = n + 1
    if line:find("%S") then
      local plan, derr = json.decode(codec.engine, line)
      if type(plan) ~= "table" then
        f:close()
        return nil, path .. ":" .. n .. ": " .. tostring(derr)
      end
      out[#out + 1] = { score = M.naive_score(plan), label = plan.label }
    end
  end
  f:close()
  return out
end

--- The naive scorer's confusion at one threshold (it never defers).
-- naive_run(scores, threshold) -> result (as run's: counts, metrics, settings.threshold)
function M.naive_run(scores, threshold)
  local c = {}
  for v = 0, 2 do c[VERDICTS[v]] = { none = 0, correct = 0, fabricated = 0, other = 0 } end
  for _, s in ipairs(scores) do
    local label = s.label == nil and "none" or (s.label == "correct" or s.label == "fabricated") and s.label or "other"
    local v = s.score < threshold and "reject" or "accept"
    c[v][label] = c[v][label] + 1
  end
  return { settings = { threshold = threshold }, counts = c, metrics = M.metrics(c), quarantined = {} }
end

return M
