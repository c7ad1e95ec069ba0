-- toolgate.pipeline: runs a policy's stages, in order, on one call.
--
-- Each stage passes, rejects or defers.  The first reject ends the run and
-- is the decision, whatever deferred before it: a person must never be
-- asked to approve what a later stage forbids.  A defer lets the later
-- stages run; with no reject the decision is the first defer.  When more
-- than one stage objected, the decision lists them all in order as
-- `outcomes` ({stage, verdict, code}).  A policy function that fails (an
-- error, a spent budget) makes the decision the policy's on_error verdict
-- with code POLICY_ERROR: a failure inside the engine never turns into an
-- accept.

local gate = require "toolgate.gate"
local json = require "toolgate.json"
local rung = require "toolgate.rung"
local sandbox = require "toolgate.sandbox"
local value = require "toolgate.value"
local verifier = require "toolgate.verifier"

local M = {}

local copy = value.copy

local function policy_error(state, stage, message)
  return {
    verdict = state.snap.policy.on_error, stage = stage, code = "POLICY_ERROR",
    message = "policy function failed: " .. tostring(message),
  }
end

-- What policy functions see of the call: plain Lua values, their own copy
-- (a number a double cannot hold is a box with its exact text: see
-- toolgate.json).  nil and a decision when the arguments cannot be read.
local function call_view(state, stage)
  local args, err, code = json.to_lua(state.args)
  if err then
    return nil, { verdict = "reject", stage = stage, code = code or "NOMEM",
                  message = "the arguments could not be read for the policy: " .. tostring(err) }
  end
  return { server = state.server, name = state.name, args_digest = state.args_digest, arguments = args }
end

local function tool_view(tool)
  return {
    server = tool.server, name = tool.name, description = tool.description,
    contract = copy(tool.contract), annotations = copy(tool.annotations),
  }
end

local RUNNERS = {}

function RUNNERS.rung(state, stage)
  local snap = state.snap
  local d, tool = rung.check(snap.registry, state.server, state.name, state.args,
    { report_also = stage.settings.report_also })
  state.args_digest = d.args_digest
  if d.verdict ~= "accept" then return d end
  state.tool = tool
  state.also_accepted_by = d.also_accepted_by
  return nil
end

function RUNNERS.gate(state, stage)
  local contract, ctx, settings = state.tool.contract, state.ctx, stage.settings
  local ok, admitted, reason
  if settings.admissible then
    local view, failed = call_view(state, "gate")
    if not view then return failed end
    ok, admitted, reason = sandbox.call(state.snap.policy.budget, settings.admissible,
      copy(contract), copy(ctx), view)
    if not ok then return policy_error(state, "gate", admitted) end
  else
    admitted, reason = gate.default(contract, ctx, settings.risk_levels)
  end
  if admitted == true then return nil end
  if admitted == "defer" then
    return { verdict = "defer", stage = "gate", code = "H4", message = tostring(reason or "the gate defers") }
  end
  return { verdict = "reject", stage = "gate", code = "H4",
           message = tostring(reason or "the call is outside the allowed frontier") }
end

function RUNNERS.verifier(state, stage)
  if stage.settings.require_contract and not verifier.verifiable(state.tool) then
    return { verdict = stage.settings.on_mismatch, stage = "verifier", code = "UNVERIFIABLE",
             message = "the tool declares neither an output schema nor effects, so its result cannot be verified" }
  end
  return nil
end

-- A single call has no samples: agreement is measured by classify (plans).
function RUNNERS.consistency()
  return nil
end

local function run_custom(state, stage)
  local view, failed = call_view(state, stage.name)
  if not view then return failed end
  local ok, r1, r2 = sandbox.call(state.snap.policy.budget, stage.run, view,
    stage.reads_contract and state.tool and tool_view(state.tool) or nil, copy(state.ctx))
  if not ok then return policy_error(state, stage.name, r1) end
  if r1 == nil or r1 == true then return nil end
  if r1 == false then
    return { verdict = "reject", stage = stage.name, code = stage.code,
             message = tostring(r2 or ("refused by stage " .. stage.name)) }
  end
  if type(r1) == "table" then
    local verdict = r1.verdict or "reject"
    if verdict == "accept" then return nil end
    if verdict ~= "reject" and verdict ~= "defer" then
      return policy_error(state, stage.name, "stage returned an unknown verdict " .. tostring(verdict))
    end
    return { verdict = verdict, stage = stage.name, code = tostring(r1.code or stage.code),
             message = tostring(r1.message or r2 or ("stage " .. stage.name .. " says " .. verdict)) }
  end
  return policy_error(state, stage.name,
    "a stage returns nil/true (pass), false[, reason] or {verdict=, code=, message=}, not a " .. type(r1))
end

-- run(state[, observe]) -> decision fields (verdict, stage, code, message...)
-- observe(stage_name, state), when given, is called before each stage (the
-- host's tracing hook; it runs outside the sandbox).  classify runs the
-- rung and consistency itself, then the other stages through run_stages
-- (skip: the names not to run) on each step it would execute, and
-- concludes over all the objections, its own first.
-- Runs one stage; returns its decision fields or nil (pass).
local function run_stage(state, stage, observe)
  if observe then observe(stage.name, state) end
  if stage.custom then return run_custom(state, stage) end
  return RUNNERS[stage.name](state, stage)
end

-- One entry of a decision's outcomes.
local function outcome(d)
  return { stage = d.stage, verdict = d.verdict, code = d.code, step = d.step }
end

-- conclude(objections) -> the decision of a run in which the stages in
-- objections (decision fields, in order) did not pass: the first reject if
-- any, else the first defer, listing every objection when there are
-- several.
function M.conclude(objections)
  local d = objections[1]
  for _, o in ipairs(objections) do
    if o.verdict == "reject" then d = o break end
  end
  if #objections > 1 then
    local list = setmetatable({}, value.array_mt)
    for i, o in ipairs(objections) do list[i] = outcome(o) end
    d.outcomes = list
  end
  return d
end

-- run_stages(state, observe, skip, objections) -> the names of the stages
-- that ran; what did not pass is appended to objections.  Stops at a reject.
function M.run_stages(state, observe, skip, objections)
  local ran = setmetatable({}, value.array_mt)
  for _, stage in ipairs(state.snap.policy.stages) do
    if not (skip and skip[stage.name]) then
      ran[#ran + 1] = stage.name
      local d = run_stage(state, stage, observe)
      if d then
        objections[#objections + 1] = d
        if d.verdict == "reject" then break end
      end
    end
  end
  return ran
end

function M.run(state, observe)
  local objections = {}
  local ran = M.run_stages(state, observe, nil, objections)
  if #objections > 0 then
    local d = M.conclude(objections)
    d.stages = ran
    return d
  end
  return { verdict = "accept", stage = ran[#ran], stages = ran, also_accepted_by = state.also_accepted_by }
end

return M
