--- toolgate.explain: the trace an --explain decision carries.
--
-- With explain on, the engine asks the core to pause before every stage
-- (the TG_CHECK_PAUSE flag the observe hook uses), so the host sees each
-- stage begin: it notes what the stage will look at (the call, the tool's
-- contract fields, the context's values, the policy's thresholds) and the
-- time; a built-in stage then runs in the core, a custom stage or the
-- policy's gate rule runs here, counted one instruction at a time, with
-- what the function returned.  When the decision is written, each stage
-- that ran gets what it said (pass, or its verdict, code and message) from
-- the decision itself, so the trace never disagrees with the record.
--
-- The trace is the decision's "explain" member, a list, one entry per stage
-- that ran, in order:
--   {"stage": "gate", "looked_at": {...}, "said": "pass" | {"verdict", "code"[, "message"]},
--    "cpu_us": 3.1[, "returned": [...], "instructions": N, "budget": N]}
-- cpu_us is the process's CPU time (os.clock) from the stage's start to the
-- next stage's (or the decision's end): for a built-in stage it includes
-- the crossing from the core to the host and back, which a decision
-- without --explain never makes.  Off (the default), none of this runs:
-- the decisions are the core's bytes as they are.
-- @module toolgate.explain

local decision = require "toolgate.decision"
local pipeline = require "toolgate.pipeline"
local sandbox = require "toolgate.sandbox"
local value = require "toolgate.value"

local M = {}

local null = value.null

local Trace = {}
Trace.__index = Trace

--- new(snap) -> a trace for one decision under the snapshot snap
function M.new(snap)
  return setmetatable({ snap = snap, entries = {} }, Trace)
end

local function or_null(v)
  if v == nil then return null end
  return v
end

local function list(v)
  return setmetatable(value.copy(v or {}), value.array_mt)
end

local function micros(seconds)
  return math.floor(seconds * 1e7 + 0.5) / 10
end

-- What each kind of stage looks at, as the state before it shows it.
local function looked_at(snap, stage, state)
  local tool, ctx = state.tool, state.ctx or {}
  local contract = tool and tool.contract or {}
  local settings = snap.policy.settings
  if stage.name == "rung" then
    return { server = or_null(state.server), name = or_null(state.name),
             closed = snap.policy.registry_settings.closed ~= false }
  elseif stage.custom then
    return { call = { server = or_null(state.server), name = or_null(state.name),
                      args_digest = or_null(state.args_digest) },
             contract = stage.reads_contract and tool and value.copy(contract) or null,
             context = value.copy(ctx) }
  elseif stage.name == "gate" then
    local seen = { risk = or_null(contract.risk), scopes = list(contract.scopes),
                   risk_levels = list(settings.gate.risk_levels) }
    if settings.gate.admissible then
      seen.contract, seen.context = value.copy(contract), value.copy(ctx)
    else
      seen.max_risk, seen.granted = or_null(ctx.max_risk), list(ctx.scopes)
    end
    return seen
  elseif stage.name == "verifier" then
    return { require_contract = settings.verifier.require_contract, has_output_schema = tool and tool.has_output == true,
             effects = list(contract.effects) }
  end
  return {}
end

-- Closes the entry in progress (a built-in stage the core ran) at time now.
function Trace:close(now)
  local open = self.open
  if open then
    open.cpu_us = micros(now - open.started)
    open.started = nil
    self.open = nil
  end
end

--- trace:stage(stage, state) -> the host stage's objection | nil, or
-- RUN_IN_CORE-like false for a built-in stage: called when the core pauses
-- before a stage.  A host stage (custom, or the gate's own rule) runs here.
function Trace:stage(stage, state)
  local now = os.clock()
  self:close(now)
  local entry = { stage = stage.name, looked_at = looked_at(self.snap, stage, state) }
  self.entries[#self.entries + 1] = entry
  if not (stage.custom or stage.settings.admissible) then
    entry.started = now
    self.open = entry
    return false
  end
  local seen = {}
  local t0 = os.clock()
  local spent, objection = sandbox.counted(pipeline.host_stage, state, stage, seen)
  entry.cpu_us = micros(os.clock() - t0)
  entry.instructions, entry.budget = spent, self.snap.policy.budget
  if seen.returned then
    local r = setmetatable({}, value.array_mt)
    for i = 1, seen.returned.n do r[i] = or_null(seen.returned[i]) end
    entry.returned = r
  else
    entry.returned = null -- it failed: the objection says how
  end
  return objection
end

-- What one stage said, read off the decision t.
local function said(t, name)
  if t.outcomes then
    for _, o in ipairs(t.outcomes) do
      if o.stage == name then
        local s = { verdict = o.verdict, code = o.code }
        if t.stage == name then s.message = t.message end
        return s
      end
    end
    return "pass"
  end
  if t.stage == name and t.verdict ~= "accept" then
    return { verdict = t.verdict, code = or_null(t.code), message = or_null(t.message) }
  end
  return "pass"
end

-- text(t) -> canonical JSON of the table t, every digit of its numbers kept
local function text(t)
  local doc = assert(decision.codec():parse(assert(value.encode(t))))
  local out = assert(doc:root():canon(nil, "exact"))
  doc:free()
  return out
end

--- trace:finish(d[, resolved]) -> the decision d with its trace as
-- "explain" (a new decision); resolved: the registry record the rung
-- resolved the call to, when known
function Trace:finish(d, resolved)
  self:close(os.clock())
  local t = value.copy(d:table())
  local entries = setmetatable({}, value.array_mt)
  for i, e in ipairs(self.entries) do
    e.said = said(t, e.stage)
    if e.stage == "rung" then
      e.looked_at.resolved = resolved and { server = resolved.server, name = resolved.name } or null
    end
    entries[i] = e
  end
  t.explain = entries
  return decision.new(d.verdict, d.code, d.stage, text(t))
end

return M
