-- toolgate.pipeline: the stages a policy runs in Lua -- custom stages and
-- a gate with the policy's own admissible function.  (How the objections
-- of several stages, or of a plan's several calls, conclude is the core's:
-- tg_check, tg_classify.)
--
-- The built-in stages run in the C core (tg_check), which hands a call to
-- the host when it meets one of these.  Each returns nil (pass) or the
-- fields of its objection {verdict, stage, code, message}.  A policy
-- function that fails (an error, a spent budget) makes the objection the
-- policy's on_error verdict with code POLICY_ERROR: a failure inside the
-- engine never turns into an accept.  What a policy function returns is
-- read inside the sandbox's protected call (read_gate, read_stage), from
-- plain copies: nothing of the policy's runs out here.

local json = require "toolgate.json"
local sandbox = require "toolgate.sandbox"
local value = require "toolgate.value"

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

-- A reason a policy gave, read inside the sandbox (sandbox.call_then):
-- nil gives the default, a string or a number is the message, anything
-- else is the policy's error.
local function reason_text(reason, default)
  if reason == nil then return default end
  local kind = type(reason)
  if kind == "string" then return reason end
  if kind == "number" then return tostring(reason) end
  error("a reason must be a string or a number, not a " .. kind, 0)
end

-- What a gate rule returned: true (pass), "defer"[, reason] or anything
-- else (reject)[, reason].
local function read_gate(_, admitted, reason)
  if admitted == true then return nil end
  if admitted == "defer" then
    return { verdict = "defer", stage = "gate", code = "H4", message = reason_text(reason, "the gate defers") }
  end
  return { verdict = "reject", stage = "gate", code = "H4",
           message = reason_text(reason, "the call is outside the allowed frontier") }
end

-- What a custom stage returned: nil/true (pass), false[, reason] or
-- {verdict=, code=, message=}.
local function read_stage(stage, r1, r2)
  if r1 == nil or r1 == true then return nil end
  if r1 == false then
    return { verdict = "reject", stage = stage.name, code = stage.code,
             message = reason_text(r2, "refused by stage " .. stage.name) }
  end
  if type(r1) ~= "table" then
    error("a stage returns nil/true (pass), false[, reason] or {verdict=, code=, message=}, not a " .. type(r1), 0)
  end
  local verdict = r1.verdict or "reject"
  if verdict == "accept" then return nil end
  if verdict ~= "reject" and verdict ~= "defer" then
    error("stage returned an unknown verdict " .. tostring(verdict), 0)
  end
  return { verdict = verdict, stage = stage.name, code = reason_text(r1.code, stage.code),
           message = reason_text(r1.message or r2, "stage " .. stage.name .. " says " .. verdict) }
end

-- A reader that also keeps what the policy function returned (plain
-- copies already) in seen.returned, for an --explain trace.
local function recording(reader, seen)
  return function(context, ...)
    seen.returned = { n = select("#", ...), ... }
    return reader(context, ...)
  end
end

-- The gate, when the policy gives its own rule.
local function run_gate(state, stage, seen)
  local view, failed = call_view(state, "gate")
  if not view then return failed end
  local ok, d = sandbox.call_then(state.snap.policy.budget, seen and recording(read_gate, seen) or read_gate, nil,
    stage.settings.admissible, copy(state.tool.contract), copy(state.ctx), view)
  if not ok then return policy_error(state, "gate", d) end
  return d
end

local function run_custom(state, stage, seen)
  local view, failed = call_view(state, stage.name)
  if not view then return failed end
  local ok, d = sandbox.call_then(state.snap.policy.budget, seen and recording(read_stage, seen) or read_stage, stage,
    stage.run, view,
    stage.reads_contract and state.tool and tool_view(state.tool) or nil, copy(state.ctx))
  if not ok then return policy_error(state, stage.name, d) end
  return d
end

-- host_stage(state, stage[, seen]) -> nil | objection fields: runs one of
-- the stages the core hands to the host.  state: {snap, server, name,
-- args_digest, args (the arguments node), tool (the registry record), ctx}.
-- seen (a table, for --explain): gets returned, what the policy function
-- returned ({n =, ...}).
function M.host_stage(state, stage, seen)
  if stage.custom then return run_custom(state, stage, seen) end
  return run_gate(state, stage, seen)
end

return M
