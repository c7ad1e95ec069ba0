--- toolgate.engine: a policy and a registry, used together, swapped together.
--
--   local engine, err, code = toolgate.new{
--     policy = "policies/default.lua",       -- a path or a policy table
--     registry = { "fs=registries/fs.json" }, -- added to the policy's sources
--     context = { scopes = { "fs:read" } },   -- default per-call context
--     format = "auto",                        -- call format of text calls
--   }
--   engine:check(call[, ctx])            -> decision
--   engine:verify(call, result[, ctx])   -> decision
--   engine:classify(plan[, ctx])         -> decision (self-consistency of a sampled plan)
--   engine:probe(tool, args, call_fn, epoch) -> report (determinism probe)
--   engine:reload()                      -> true, version | nil, message, code
--
-- A snapshot (policy + registry + core engine) is immutable once built.
-- Every decision reads the snapshot current when it started, start to end;
-- reload builds a whole new snapshot and swaps it in one assignment, and a
-- policy or registry that fails to load leaves the old snapshot in force.
-- Each decision names what decided it: policy_version and registry_hash,
-- and for a defer the binding {server, tool, args_digest, policy_version,
-- registry_hash, epoch} an approval must match.
-- @module toolgate.engine

local consistency = require "toolgate.consistency"
local core = require "toolgate.core"
local json = require "toolgate.json"
local pipeline = require "toolgate.pipeline"
local policy_mod = require "toolgate.policy"
local registry = require "toolgate.registry"
local rung = require "toolgate.rung"
local sandbox = require "toolgate.sandbox"
local state_mod = require "toolgate.state"
local value = require "toolgate.value"
local verifier = require "toolgate.verifier"

local M = {}

local Engine = {}
Engine.__index = Engine

-- The call formats engine:check reads (toolgate.new's format option).
local FORMATS = { auto = true, native = true, openai = true, anthropic = true, mcp = true }
M.FORMATS = FORMATS

local function merge(...)
  local out = {}
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if t then for k, v in pairs(t) do out[k] = v end end
  end
  return out
end

-- Applies the policy's contract mapping to every tool, at load, under the
-- sandbox budget.  A mapping that fails fails the load.
local function map_contracts(pol, reg)
  if not pol.contract then return true end
  for _, t in ipairs(reg.tools) do
    local view = {
      server = t.server, name = t.name, description = t.description, format = t.format,
      contract = value.copy(t.contract), annotations = value.copy(t.annotations),
    }
    local ok, mapped = sandbox.call(pol.budget, pol.contract, view)
    if not ok then
      return nil, string.format("policy contract mapping failed for %q on %q: %s", t.name, t.server, mapped),
        "POLICY_ERROR"
    end
    if mapped ~= nil then
      if type(mapped) ~= "table" then
        return nil, "policy contract mapping must return a table or nil, not a " .. type(mapped), "POLICY_INVALID"
      end
      local good, why = registry.check_contract(mapped)
      if not good then
        return nil, string.format("policy contract mapping for %q on %q: %s", t.name, t.server, why), "BAD_CONTRACT"
      end
      t.contract = mapped
    end
  end
  return true
end

-- Every declared risk is a level of the gate's risk order (a typo there
-- would count as the highest, silently): checked once the contracts are
-- final, when the pipeline has a gate.
local function check_risks(pol, reg)
  local has_gate = false
  for _, st in ipairs(pol.stages) do has_gate = has_gate or st.name == "gate" end
  if not has_gate then return true end
  local levels = pol.settings.gate.risk_levels
  local known = {}
  for _, l in ipairs(levels) do known[l] = true end
  for _, t in ipairs(reg.tools) do
    local risk = t.contract.risk
    if risk ~= nil and not known[risk] then
      return nil, string.format("tool %q on server %q declares risk %q, which is not one of the policy's risk "
        .. "levels (%s)", t.name, t.server, risk, table.concat(levels, ", ")), "BAD_CONTRACT"
    end
  end
  return true
end

-- Builds a snapshot from the engine's options; nothing is shared with the
-- previous one.
local function build(opts)
  local pol, err, code = policy_mod.load(opts.policy or policy_mod.builtin_default(), core.hash_bytes)
  if not pol then return nil, err, code end
  local ce
  ce, err, code = core.new_engine(merge(pol.limits, opts.limits))
  if not ce then return nil, "limits: " .. tostring(err), code end
  local sources = {}
  for _, s in ipairs(pol.registry_sources) do sources[#sources + 1] = s end
  for _, s in ipairs(opts.registry or {}) do sources[#sources + 1] = s end
  if #sources == 0 then
    return nil, "no registry: give the policy registry.sources or the engine registry = {...}", "NO_REGISTRY"
  end
  local reg_settings = merge(pol.registry_settings, pol.resolvers and { resolvers = pol.resolvers } or nil)
  local reg
  reg, err, code = registry.load(ce, sources, reg_settings)
  if not reg then return nil, err, code end
  local ok
  ok, err, code = map_contracts(pol, reg)
  if ok then ok, err, code = check_risks(pol, reg) end
  if not ok then return nil, err, code end
  return { policy = pol, registry = reg, core = ce, version = pol.version, hash = reg.hash }
end

--- Makes an engine (also toolgate.new).
-- new(opts) -> engine | nil, message, code
-- @tparam table opts policy (a policy file's path or a policy table;
-- default: the built-in default policy), registry (a list of sources added
-- to the policy's: paths, "SERVER=PATH" or {path=, server=, trusted=}),
-- context (the default per-call context), limits (the core's limits),
-- format (the call format of text calls: auto, native, openai, anthropic,
-- mcp), observe (function(stage_name, state) called before each stage),
-- state (a determinism store, see toolgate.state; default: in memory),
-- trust_call_context (true: a call that carries a "context" has it merged
-- over the context, for replaying trusted recorded traffic; by default such
-- a call is refused, CONTEXT_IN_CALL: what a model wrote must never widen
-- what the operator granted)
-- @treturn Engine the engine, or nil, message, code when the policy or a
-- registry cannot be loaded
function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("toolgate.new: a table of options expected", 2) end
  for k in pairs(opts) do
    if k ~= "policy" and k ~= "registry" and k ~= "context" and k ~= "limits" and k ~= "format"
        and k ~= "observe" and k ~= "state" and k ~= "trust_call_context" then
      error("toolgate.new: unknown option '" .. tostring(k) .. "'", 2)
    end
  end
  if opts.format and not FORMATS[opts.format] then error("toolgate.new: unknown call format " .. opts.format, 2) end
  local snap, err, code = build(opts)
  if not snap then return nil, err, code end
  -- what the engine learns about tools' determinism outlives reloads
  return setmetatable({ opts = opts, current = snap, store = opts.state or state_mod.memory() }, Engine)
end

--- An engine: toolgate.new's result.
-- @type Engine

--- Rebuilds the snapshot from the policy and registry files and swaps it in.
-- reload() -> true, policy_version | nil, message, code (the old snapshot stays)
function Engine:reload()
  local snap, err, code = build(self.opts)
  if not snap then return nil, err, code end
  self.current = snap
  return true, snap.version
end

--- The snapshot in force: {policy, registry, core, version, hash}.
function Engine:snapshot()
  return self.current
end

--- The policy loader's warnings (for instance a verdict the settings make unreachable).
function Engine:warnings()
  return self.current.policy.warnings
end

-- The fields a call given as a Lua table may have.
local TABLE_CALL_FIELDS = { server = true, name = true, arguments = true, id = true, context = true }

local function refused(code, message)
  return { verdict = "reject", stage = "decode", code = code, message = message }
end

local CONTEXT_REFUSED = "the call carries a \"context\": the context (granted scopes, allowed risk) comes "
  .. "from the operator, never from the call (a host replaying trusted recorded traffic may allow it: "
  .. "toolgate.new{trust_call_context = true}, toolgate check --line-context)"

-- The call's text: JSON text as given, or a Lua table {server=, name=,
-- arguments=, id=} written as a native call; second, the context a table
-- call carries (a text call's "context" member is found when it is
-- decoded).  Returns text, carried context | nil, failed decision.
local function call_text(call)
  if type(call) == "string" then return call end
  if type(call) == "table" then
    for k in pairs(call) do
      if not TABLE_CALL_FIELDS[k] then
        return nil, refused("BAD_CALL", string.format("unknown field %q in a call table (it may have server, "
          .. "name, arguments and id)", tostring(k)))
      end
    end
    local text, err = value.encode({ server = call.server, name = call.name,
      arguments = call.arguments == nil and {} or call.arguments, id = call.id })
    if not text then return nil, refused("BAD_CALL", "the call cannot be written as JSON: " .. err) end
    return text, call.context
  end
  error("a call (JSON text or a table) expected, got " .. type(call), 3)
end

local function finish(snap, d, ctx, state)
  d.policy_version = snap.version
  d.registry_hash = snap.hash
  local resolved = state and state.tool
  d.server = d.server or (resolved and resolved.server) or (state and state.server)
  d.tool = d.tool or (resolved and resolved.name) or (state and state.name)
  d.args_digest = d.args_digest or (state and state.args_digest)
  if d.findings then setmetatable(d.findings, value.array_mt) end
  if d.verdict == "defer" then
    d.binding = {
      server = d.server == nil and value.null or d.server,
      tool = d.tool == nil and value.null or d.tool,
      args_digest = d.args_digest == nil and value.null or d.args_digest,
      policy_version = snap.version, registry_hash = snap.hash,
      epoch = ctx.epoch == nil and value.null or ctx.epoch,
    }
    if snap.policy.requires_approval then d.requires_approval = true end
  end
  return d
end

-- Decodes and starts the state of one decision on snapshot snap.  A call
-- that carries a context is refused (CONTEXT_IN_CALL) unless the engine
-- trusts its input; then that context is merged over ctx.  Returns the
-- state (state.ctx: the decision's context) | nil, failed decision fields.
local function start(self, snap, call, ctx)
  local text, carried = call_text(call)
  if not text then return nil, carried end
  local c, msg, code, offset = snap.core:decode_call(text, self.opts.format or "auto")
  if not c then
    return nil, { verdict = "reject", stage = "decode", code = code, message = msg, offset = offset }
  end
  local node = carried == nil and c:context()
  if node then carried = node:type() == "object" and json.to_lua(node) or false end
  if carried ~= nil then
    local refusal = not self.opts.trust_call_context and refused("CONTEXT_IN_CALL", CONTEXT_REFUSED)
      or type(carried) ~= "table" and refused("BAD_CALL", "a call's \"context\" must be an object")
    if refusal then
      c:free()
      return nil, refusal
    end
    ctx = merge(ctx, carried)
  end
  local state = {
    snap = snap, ctx = ctx, call = c,
    server = c:server() or ctx.server, name = c:name(), args = c:arguments(),
  }
  local id = c:id()
  if id then
    local v, ierr, icode = json.to_lua(id) -- an id beyond 2^53 keeps its digits (a box)
    if ierr then
      c:free()
      return nil, { verdict = "reject", stage = "decode", code = icode, message = ierr }
    end
    state.id = v
  end
  return state
end

--- Runs the policy's stages on one tool call.
-- check(call[, ctx]) -> decision
-- @param call JSON text in any call format, or a table {server=, name=, arguments=}
-- @tparam[opt] table ctx the call's context (scopes, max_risk, epoch, ...),
-- merged over the policy's and the engine's
-- @treturn table the decision: verdict ("accept", "reject", "defer"), stage,
-- code, message, path, server, tool, args_digest, policy_version, registry_hash, ...
function Engine:check(call, ctx)
  local snap = self.current -- this decision's snapshot, start to end
  ctx = merge(snap.policy.context, self.opts.context, ctx)
  local state, failed = start(self, snap, call, ctx)
  if not state then return finish(snap, failed, ctx) end
  local d = pipeline.run(state, self.opts.observe)
  d.id = state.id
  d = finish(snap, d, state.ctx, state)
  state.call:free() -- now, not at some later collection: the decision holds no node
  return d
end

-- What classify decides itself before the other stages run, and the plan's
-- figures a later stage's decision carries.
local CLASSIFY_RUNS_ITSELF = { rung = true, consistency = true }
local PLAN_FIELDS = { "plan_id", "n", "arg_agreement", "result_agreement", "distinct_args", "distinct_results",
  "representative", "epoch", "steps" }

--- Self-consistency of a plan sampled several times.
-- classify(plan[, ctx]) -> decision
-- plan: JSON text (or a Lua table) in either form:
--   {"plan_id", "tool": {"server", "name"[, "deterministic", "verified"]},
--    "samples": [{"arguments", "result", "epoch"}, ...][, "epoch_fixed"]}
--   {"plan_id", "samples": [{"epoch", "calls": [{"server", "name", "arguments"}...],
--    "results": [...]}, ...]}
-- The rung runs on every call of every sample, the consistency stage
-- decides on the agreement, and the policy's other stages (gate, verifier,
-- custom) then run on each call of the representative sample.
function Engine:classify(plan, ctx)
  local snap = self.current
  ctx = merge(snap.policy.context, self.opts.context, ctx)
  local text = plan
  if type(plan) == "table" then
    local err
    text, err = value.encode(plan)
    if not text then
      return finish(snap, { verdict = "reject", stage = "decode", code = "BAD_PLAN", message = err }, ctx)
    end
  elseif type(plan) ~= "string" then
    error("classify: a plan (JSON text or a table) expected, got " .. type(plan), 2)
  end
  local doc, err, code, offset = snap.core:parse(text)
  if not doc then
    return finish(snap, { verdict = "reject", stage = "decode", code = code, message = err, offset = offset }, ctx)
  end
  local settings = snap.policy.settings.consistency
  local d, rep_steps = consistency.classify(snap, doc:root(), ctx, self.store, settings)
  if rep_steps and #rep_steps == 1 then
    d.server, d.tool = rep_steps[1].tool.server, rep_steps[1].tool.name
  end
  -- the exact arguments of the calls that would run (not normalized); a
  -- hash that fails (out of memory) refuses the plan
  local digests = {}
  for k, step in ipairs(rep_steps or {}) do
    local hex, herr, hcode = step.args:hash(nil, "exact")
    if not hex then
      d, rep_steps = { verdict = "reject", stage = "consistency", code = hcode, plan_id = d.plan_id,
                       message = "the arguments could not be hashed: " .. tostring(herr) }, nil
      break
    end
    digests[k] = hex
  end
  if rep_steps and not d.args_digest then
    d.args_digest = #digests == 1 and digests[1] or core.hash_bytes(table.concat(digests, "\1"))
  end
  -- the other stages run on each call the plan would execute, after a
  -- consistency defer too: their reject wins over it
  if rep_steps and d.verdict ~= "reject" then
    local objections = {}
    if d.verdict == "defer" then objections[1] = d end
    for k, step in ipairs(rep_steps) do
      local state = { snap = snap, ctx = ctx, server = step.tool.server, name = step.tool.name, args = step.args,
                      tool = step.tool, args_digest = digests[k] }
      local before = #objections
      local ran = pipeline.run_stages(state, self.opts.observe, CLASSIFY_RUNS_ITSELF, objections)
      for i = before + 1, #objections do
        local sd = objections[i]
        sd.stages = ran
        for _, key in ipairs(PLAN_FIELDS) do sd[key] = d[key] end
        if #rep_steps > 1 then sd.step = k end
        sd.server, sd.tool = step.tool.server, step.tool.name
      end
      if objections[#objections] and objections[#objections].verdict == "reject" then break end
    end
    if #objections > 0 then d = pipeline.conclude(objections) end
  end
  if d.verdict == "defer" and d.epoch ~= nil and d.epoch ~= value.null then ctx = merge(ctx, { epoch = d.epoch }) end
  doc:free() -- the decision holds no node
  return finish(snap, d, ctx)
end

--- Determinism probe of one tool.
-- probe(tool, arguments, call_fn, epoch) -> report
-- Runs call_fn(call) twice with the same call in the same epoch and
-- compares the canonical results byte for byte.  Equal: the tool's
-- determinism is verified in this epoch (lifting a quarantine from an
-- earlier one).  Different, or an error: the declaration is quarantined.
-- tool: "server/name" or {server =, name =}; call_fn returns the result as
-- JSON text or a Lua value.
function Engine:probe(tool, arguments, call_fn, epoch)
  if type(call_fn) ~= "function" then error("probe: call_fn must be a function", 2) end
  if epoch == nil then error("probe: an epoch is required (determinism is verified per epoch)", 2) end
  local snap = self.current
  local etext, eerr = value.encode(epoch)
  local epoch_key = etext and snap.core:canon(etext)
  if not epoch_key then error("probe: the epoch must be a JSON value: " .. tostring(eerr), 2) end
  local server, name
  if type(tool) == "string" then
    server, name = tool:match("^(.-)/([^/]+)$")
    if not name then server, name = nil, tool end
  elseif type(tool) == "table" then
    server, name = tool.server, tool.name
  else
    error("probe: tool must be \"server/name\" or {server=, name=}", 2)
  end
  local call = { server = server, name = name, arguments = arguments or {} }
  local text, failed = call_text(call)
  local c = text and snap.core:decode_call(text, "native")
  if not c then
    return { verdict = "invalid", code = "BAD_CALL", message = failed and failed.message or "cannot decode the call" }
  end
  local d, t = rung.check(snap.registry, server, name, c:arguments())
  if d.verdict ~= "accept" then
    return { verdict = "invalid", code = d.code, message = d.message, server = server, tool = name }
  end
  local report = { server = t.server, tool = t.name, epoch = epoch, hashes = setmetatable({}, value.array_mt) }
  for i = 1, 2 do
    local ok, result = pcall(call_fn, value.copy(call))
    local hex, herr
    if ok then
      local rtext = type(result) == "string" and result or value.encode(result)
      if rtext then hex, herr = snap.core:hash(rtext) end
      if not hex then ok, result = false, "the result is not valid JSON: " .. tostring(herr) end
    end
    if not ok then
      self.store:quarantine(t.server, t.name, "probe failed: " .. tostring(result), epoch_key)
      report.verdict, report.reason = "quarantined", "probe call " .. i .. " failed: " .. tostring(result)
      return report
    end
    report.hashes[i] = hex
  end
  if report.hashes[1] == report.hashes[2] then
    self.store:verified(t.server, t.name, epoch_key)
    report.verdict = "verified"
  else
    self.store:quarantine(t.server, t.name, "probe: two identical calls returned different results", epoch_key)
    report.verdict, report.reason = "quarantined", "two identical calls in one epoch returned different results"
  end
  return report
end

--- The determinism record of a tool: {verified_epoch =, quarantined =} | nil
function Engine:determinism(server, name)
  return self.store:get(server, name)
end

--- Checks a call's result against the tool's contract, after the call ran.
-- verify(call, result[, ctx]) -> decision
-- result: JSON text or a Lua value (an MCP CallToolResult for MCP tools).
-- The call goes through the rung first: only a call to a known tool with
-- valid arguments has a contract to verify against.
function Engine:verify(call, result, ctx)
  local snap = self.current
  ctx = merge(snap.policy.context, self.opts.context, ctx)
  local state, failed = start(self, snap, call, ctx)
  if not state then return finish(snap, failed, ctx) end
  ctx = state.ctx
  local d, tool = rung.check(snap.registry, state.server, state.name, state.args)
  state.args_digest = d.args_digest
  if d.verdict ~= "accept" then return finish(snap, d, ctx, state) end

  local text = result
  if type(result) ~= "string" then
    local err
    text, err = value.encode(result)
    if not text then
      return finish(snap, { verdict = "reject", stage = "verifier", code = "BAD_RESULT",
        message = "the result cannot be written as JSON: " .. err }, ctx, state)
    end
  end
  local doc, err, code = snap.core:parse(text)
  if not doc then
    return finish(snap, { verdict = "reject", stage = "verifier", code = code,
      message = "the result is not valid JSON: " .. err }, ctx, state)
  end
  local problem = verifier.check(snap.registry, tool, doc:root(), ctx)
  doc:free()
  state.call:free()
  if not problem then
    return finish(snap, { verdict = "accept", stage = "verifier", server = tool.server, tool = tool.name },
      ctx, state)
  end
  problem.verdict = problem.verdict or snap.policy.settings.verifier.on_mismatch
  problem.stage = "verifier"
  problem.server, problem.tool = tool.server, tool.name
  return finish(snap, problem, ctx, state)
end

return M
