--- toolgate.engine: a policy and a registry, used together, swapped together.
--
--   local engine, err, code = toolgate.new{
--     policy = "policies/default.lua",       -- a path or a policy table
--     registry = { "fs=registries/fs.json" }, -- added to the policy's sources
--     context = { scopes = { "fs:read" } },   -- default per-call context
--     format = "auto",                        -- call format of text calls
--   }
--   engine:check(call[, ctx])            -> decision
--   engine:check_all(call[, ctx])        -> a decision per call the text holds
--   engine:verify(call, result[, ctx])   -> decision
--   engine:classify(plan[, ctx])         -> decision (self-consistency of a sampled plan)
--   engine:check_file(input, out_fd[, ctx[, threads]])   -> accepts, rejects, defers (what toolgate check runs)
--   engine:check_stream(read, write[, ctx[, threads]])   -> the same, from and to Lua functions
--   engine:classify_file(input, out_fd[, ctx[, threads]]) -> accepts, rejects, defers (toolgate classify)
--   engine:classify_stream(read, write[, ctx[, threads]]) -> accepts, rejects, defers
--   engine:sweep_stream(read[, ctx])     -> the features of labeled plans (toolgate.experiment)
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

local core = require "toolgate.core"
local decision = require "toolgate.decision"
local explain = require "toolgate.explain"
local documents = require "toolgate.documents"
local json = require "toolgate.json"
local lines = require "toolgate.lines"
local pipeline = require "toolgate.pipeline"
local policy_mod = require "toolgate.policy"
local quota = require "toolgate.quota"
local registry = require "toolgate.registry"
local sandbox = require "toolgate.sandbox"
local shadow = require "toolgate.shadow"
local state_mod = require "toolgate.state"
local value = require "toolgate.value"
local verifier = require "toolgate.verifier"

local M = {}

local Engine = {}
Engine.__index = Engine

-- The call formats engine:check reads (toolgate.new's format option): a
-- family, or a shape a decision's "format" names (core/tg_call.c,
-- tg_call_shape_name), which reads its family's every shape.
local FAMILIES = {
  auto = "auto", native = "native", openai = "openai", anthropic = "anthropic", mcp = "mcp",
  ["openai-tool-calls"] = "openai", ["openai-message"] = "openai", ["openai-chat"] = "openai",
  ["openai-function-call"] = "openai", ["openai-responses"] = "openai",
  ["anthropic-message"] = "anthropic", ["mcp-batch"] = "mcp",
}
local FORMATS = {}
for name in pairs(FAMILIES) do FORMATS[name] = true end
M.FORMATS = FORMATS

local compile_context

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

-- The load's warning when the gate will refuse tools only because nothing
-- gave them a risk (an OpenAI, Anthropic or MCP tool list carries none): the
-- default rule counts a missing risk as the highest, which fails closed, and
-- says here, once, how to give them one.
local function contract_warnings(pol, reg, context)
  local has_gate = false
  for _, st in ipairs(pol.stages) do has_gate = has_gate or st.name == "gate" end
  local levels = pol.settings.gate.risk_levels
  local top = levels[#levels]
  if not has_gate or pol.settings.gate.admissible or context.max_risk == top then return {} end
  local names, n, mcp = {}, 0, false
  for _, t in ipairs(reg.tools) do
    if t.contract.risk == nil then
      n = n + 1
      mcp = mcp or t.format == "mcp"
      if n <= 3 then names[n] = string.format("%q", t.name) end
    end
  end
  if n == 0 then return {} end
  return { string.format("gate: %d of %d tools declare no risk (%s%s); the gate counts that as the highest, %q, "
    .. "and refuses their calls: give them one with a \"risk\" in toolgate's registry format or a "
    .. "contract(tool) function in the policy%s, or check the schemas alone with the policy \"rung\" "
    .. "(--policy rung)", n, #reg.tools, table.concat(names, ", "), n > 3 and ", ..." or "", top,
    mcp and pol.contract == nil and " (for MCP tool lists: --policy mcp reads their annotations)" or "") }
end

-- What the core runs of a policy: its built-in parts, the consistency
-- settings, and each tool's contract as the gate, the verifier and
-- classify read them (core/toolgate.h, tg_policy_new), as JSON.
local function describe(pol, reg, opts, only)
  local settings = pol.settings
  local stages = setmetatable({}, value.array_mt)
  for _, st in ipairs(pol.stages) do
    if only and not only[st.name] then -- luacheck: ignore 542
    elseif st.custom then
      stages[#stages + 1] = { stage = "custom", name = st.name, code = st.code }
    elseif st.quota then -- (the host's: it counts in the engine's store)
      stages[#stages + 1] = { stage = "custom", name = "quota", code = "QUOTA" }
    else
      stages[#stages + 1] = { stage = st.name, custom = st.name == "gate" and settings.gate.admissible and true or nil }
    end
  end
  local levels, known = settings.gate.risk_levels, {}
  for _, l in ipairs(levels) do known[l] = true end
  local tools = setmetatable({}, value.array_mt)
  for i, t in ipairs(reg.tools) do
    local c = t.contract
    local resolve
    for _, r in ipairs(t.id_functions or {}) do
      resolve = resolve or setmetatable({}, value.array_mt)
      resolve[#resolve + 1] = { pattern = r.pattern, resolver = r.resolver,
                                pre = setmetatable(value.copy(r.pre_ops), value.array_mt) }
    end
    tools[i] = {
      -- a risk outside the order only loads without a gate, which reads none
      risk = known[c.risk] and c.risk or nil,
      scopes = c.scopes and setmetatable(value.copy(c.scopes), value.array_mt) or nil,
      effects = c.effects and setmetatable(value.copy(c.effects), value.array_mt) or nil,
      has_output = t.has_output or nil,
      refuse = t.refuse,
      deterministic = c.deterministic,
      resolve = resolve,
    }
  end
  local cs = settings.consistency
  return assert(value.encode({
    version = pol.version, registry_hash = reg.hash, stages = stages,
    risk_levels = setmetatable(value.copy(levels), value.array_mt),
    report_also = settings.rung.report_also or opts.report_also or nil,
    require_contract = settings.verifier.require_contract or nil,
    on_mismatch = settings.verifier.on_mismatch, on_error = pol.on_error,
    requires_approval = pol.requires_approval or nil,
    consistency = { min_samples = cs.min_samples, max_samples = cs.max_samples, arg_accept = cs.arg_accept,
                    arg_reject = cs.arg_reject, result_accept = cs.result_accept,
                    result_quarantine = cs.result_quarantine, on_invalid = cs.on_invalid,
                    quarantine = cs.quarantine },
    tools = tools,
  }))
end

-- compile_context(snap, t) -> the core's context for the Lua context t
-- | nil, message, code
compile_context = function(snap, t)
  local text, err = value.encode(t)
  if not text then return nil, "the context cannot be written as JSON: " .. err, "BAD_CONTEXT" end
  return snap.compiled:context(text)
end

-- Builds a snapshot from the engine's options; nothing is shared with the
-- previous one.
local function build(opts)
  local source = opts.policy or policy_mod.builtin_default()
  if type(source) == "string" then -- a path, or a shipped policy's name
    local path, why = policy_mod.resolve(source)
    if not path then return nil, why, "POLICY_LOAD" end
    source = path
  end
  local pol, err, code = policy_mod.load(source, core.hash_bytes)
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
  local reg_settings = merge(pol.registry_settings, opts.assert_formats and { assert_formats = true } or nil,
    pol.resolvers and { resolvers = pol.resolvers } or nil)
  local reg
  reg, err, code = registry.load(ce, sources, reg_settings)
  if not reg then return nil, err, code end
  local ok
  ok, err, code = map_contracts(pol, reg)
  if ok then ok, err, code = check_risks(pol, reg) end
  if not ok then return nil, err, code end
  local compiled
  compiled, err, code = reg.c:policy(describe(pol, reg, opts))
  if not compiled then return nil, "the policy cannot be compiled: " .. tostring(err), code end
  -- classify compares each tool's arguments under its normalization plan
  for i, t in ipairs(reg.tools) do
    if t.norm then compiled:set_norm(i, t.norm) end
  end
  -- engine:verify's first step: the same registry and contracts, the rung alone
  local rung_only = assert(reg.c:policy(describe(pol, reg, opts, { rung = true })))
  local snap = { policy = pol, registry = reg, core = ce, version = pol.version, hash = reg.hash,
                 compiled = compiled, rung_only = rung_only, context_table = merge(pol.context, opts.context),
                 deciders = {}, accepted_results = {} }
  snap.warnings = merge(pol.warnings)
  for _, w in ipairs(contract_warnings(pol, reg, snap.context_table)) do snap.warnings[#snap.warnings + 1] = w end
  for _, w in ipairs(shadow.warnings(pol.shadow, reg.tools)) do snap.warnings[#snap.warnings + 1] = w end
  snap.context, err, code = compile_context(snap, snap.context_table)
  if not snap.context then return nil, "context: " .. tostring(err), code end
  return snap
end

-- The kinds of toolgate.new's options: another kind is the caller's
-- mistake, and raises (a policy's or a registry's content is data).
local OPTIONS = { policy = { string = true, table = true }, registry = { table = true }, context = { table = true },
  limits = { table = true }, format = { string = true }, observe = { ["function"] = true }, state = { table = true },
  trust_call_context = { boolean = true }, report_also = { boolean = true }, explain = { boolean = true },
  assert_formats = { boolean = true }, shadow = { boolean = true } }

--- Makes an engine (also toolgate.new).
-- new(opts) -> engine | nil, message, code
-- @tparam table opts policy (a policy file's path, a shipped policy's name
-- as --policy takes it, "mcp", or a policy table; default: the built-in
-- default policy), registry (a list of sources added
-- to the policy's: paths, "SERVER=PATH" or {path=, server=, trusted=}),
-- context (the default per-call context), limits (the core's limits),
-- format (the call format of text calls: auto, native, openai, anthropic,
-- mcp), observe (function(stage_name, state) called before each stage),
-- state (a determinism store, see toolgate.state; default: in memory),
-- trust_call_context (true: a call that carries a "context" has it merged
-- over the context, for replaying trusted recorded traffic; by default such
-- a call is refused, CONTEXT_IN_CALL: what a model wrote must never widen
-- what the operator granted), report_also (true: list H5 for accepted
-- calls whatever the policy's rung.report_also says), explain (true:
-- the decisions of check and check_all carry a trace of each stage that
-- ran, "explain": see toolgate.explain; slower, for authors and debugging),
-- assert_formats (true: every "format" the tools' schemas use is checked,
-- as the policy's registry.assert_formats = true does, for a policy that
-- leaves it off; a format toolgate cannot check fails the load,
-- UNSUPPORTED_FORMAT.  The registry_hash of the decisions says which),
-- shadow (true: check_file marks its decisions as if the policy's mode
-- were "shadow"; a policy in shadow has them marked without it: see
-- toolgate.shadow)
-- @treturn Engine the engine, or nil, message, code when the policy or a
-- registry cannot be loaded
function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("toolgate.new: a table of options expected", 2) end
  for k, v in pairs(opts) do
    if not OPTIONS[k] then error("toolgate.new: unknown option '" .. tostring(k) .. "'", 2) end
    if not OPTIONS[k][type(v)] then error("toolgate.new: option " .. k .. " cannot be a " .. type(v), 2) end
  end
  if opts.format and not FORMATS[opts.format] then error("toolgate.new: unknown call format " .. opts.format, 2) end
  for i, s in pairs(opts.registry or {}) do
    if type(i) ~= "number" then error("toolgate.new: registry must be a list of sources", 2) end
    local ok, field, msg = registry.check_source(s)
    if not ok then error("toolgate.new: registry[" .. i .. "]" .. (field and "." .. field or "") .. " " .. msg, 2) end
  end
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

--- Makes store the engine's determinism store: an engine built before a
-- fork (nginx's master) takes each worker's own.
function Engine:use_state(store)
  self.store = store
end

--- The snapshot in force: {policy, registry, core, version, hash}.
function Engine:snapshot()
  return self.current
end

--- The load's warnings: a verdict the policy's settings make unreachable,
-- tools the gate refuses only because nothing gave them a risk.
function Engine:warnings()
  return self.current.warnings
end

-- The fields a call given as a Lua table may have.
local TABLE_CALL_FIELDS = { server = true, name = true, arguments = true, id = true, context = true }

local function refused(code, message)
  return { verdict = "reject", stage = "decode", code = code, message = message }
end

-- The call's text: JSON text as given, or a Lua table {server=, name=,
-- arguments=, id=, context=} written as a native call (the core refuses a
-- context the call carries, as it does in a text call).  Returns text |
-- nil, failed decision.
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
      arguments = call.arguments == nil and {} or call.arguments, id = call.id, context = call.context })
    if not text then return nil, refused("BAD_CALL", "the call cannot be written as JSON: " .. err) end
    return text
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


local VERDICTS = { [0] = "accept", "reject", "defer" }
local FORMAT_CODES = {}
for name, family in pairs(FAMILIES) do
  FORMAT_CODES[name] = ({ auto = 0, native = 1, openai = 2, anthropic = 3, mcp = 4 })[family]
end
local TRUST_CONTEXT = 1 -- TG_CHECK_TRUST_CONTEXT
local PAUSE = 2         -- TG_CHECK_PAUSE
local ONE = 4           -- TG_CHECK_ONE
local RUN_IN_CORE = -2  -- TG_RUN_IN_CORE

-- What a check counts in the quota stage: the calls of a check (COUNTED),
-- or of an MCP gateway's request ({principal =}: who asked); a plan's
-- calls (classify, sweeps: recorded traffic) count nothing.
local COUNTED = {}

local function counted_as(snap, principal)
  return principal and snap.policy.quota and { principal = principal } or COUNTED
end

-- The quota stage: a slot of every rule that applies to the call, taken
-- only when no earlier stage objected (a reject ends the run before it,
-- so what can have objected is a defer: a deferred call spends nothing).
-- A refusal's limit, window and retry_after are the fourth value.
local function quota_answer(self, snap, dec, state, who)
  if not who or dec:verdict_so_far() ~= 0 then return -1 end
  local tool = state.tool
  local o, fields = quota.take(self.store, snap.policy.quota, tool and tool.server or state.server,
    tool and tool.name or state.name, state.args, state.ctx, who.principal)
  if not o then return -1 end
  return 1, o.code, o.message, fields
end

-- A QUOTA decision's text (the core's) with the refusal's limit, window
-- and retry_after among its members, in canonical order.
local function with_quota_fields(snap, text, fields)
  local doc = assert(snap.core:parse(text))
  local root, members = doc:root(), {}
  for i = 1, root:len() do
    local k = root:key(i)
    if fields[k] == nil then members[#members + 1] = { k, assert(root:at(i):canon(nil, "exact")) } end
  end
  doc:free()
  for k, v in pairs(fields) do members[#members + 1] = { k, string.format("%d", v) } end
  table.sort(members, function(a, b) return a[1] < b[1] end)
  for i, m in ipairs(members) do members[i] = assert(value.encode(m[1])) .. ":" .. m[2] end
  return "{" .. table.concat(members, ",") .. "}"
end

-- The core hands the host the stages that are Lua (a custom stage, the
-- policy's gate rule, the quota stage), and every stage when an observe
-- hook or an explain trace follows them: the answer is (verdict code,
-- code, message), -1 for a pass; who: what the call counts as (COUNTED,
-- {principal =}, or nil: nothing).
local function host_answer(self, snap, dec, index, lua_ctx, trace, who)
  local stage = snap.policy.stages[index]
  local server, name, args, digest, tool_index, own = dec:call()
  local state = { snap = snap, server = server, name = name, args = args, args_digest = digest,
                  tool = tool_index and snap.registry.tools[tool_index], ctx = lua_ctx }
  -- the core refuses a call's own context unless the input is trusted
  if own then state.ctx = merge(lua_ctx, json.to_lua(own)) end
  if self.opts.observe then self.opts.observe(stage.name, state) end
  if stage.quota then
    if trace then trace:stage(stage, state) end
    return quota_answer(self, snap, dec, state, who)
  end
  local o
  if trace then
    o = trace:stage(stage, state)
    if o == false then return RUN_IN_CORE end
  elseif not (stage.custom or stage.settings.admissible) then
    return RUN_IN_CORE
  else
    o = pipeline.host_stage(state, stage)
  end
  if not o then return -1 end
  return o.verdict == "defer" and 2 or 1, o.code, o.message
end

-- A decider per check in flight: one that pauses in the host (a stage, an
-- observe hook that yields) keeps its own while others run.
local function take_decider(snap)
  local pool = snap.deciders
  local dec = pool[#pool]
  if dec then pool[#pool] = nil else dec = assert(snap.core:decider()) end
  return dec
end

local function flags_of(self)
  return (self.opts.trust_call_context and TRUST_CONTEXT or 0) + ((self.opts.observe or self.opts.explain) and PAUSE or 0)
end

-- A classify's question: an ID for the policy's resolver function, asked
-- in the sandbox (anything but a string is the function failing).
local function resolve_answer(snap, dec)
  local index, name, id = dec:query()
  local tool = snap.registry.tools[index]
  local ok, res = sandbox.call(snap.policy.budget, snap.policy.resolvers[name], id,
    { server = tool.server, name = tool.name })
  if not ok then return dec:resolve(false, tostring(res)) end
  if type(res) ~= "string" then
    return dec:resolve(false, "resolver " .. name .. " returned a " .. type(res) .. ", not a string")
  end
  return dec:resolve(true, res)
end

-- A classify's other question: a tool's record in the engine's own store
-- (opts.state), through the toolgate.state interface.
local function record_answer(self, snap, dec)
  local tool = snap.registry.tools[dec:store_tool()]
  local r = self.store:get(tool.server, tool.name)
  local verified = r and r.verified_epoch
  return dec:record(r ~= nil, r ~= nil and r.quarantined ~= nil, type(verified) == "string" and verified or nil)
end

-- Answers the host's questions about the call or plan in progress (its
-- stages, IDs, records) until it is decided; trace: an explain trace, or nil.
local function settle(self, snap, dec, lua_ctx, trace, who, status, verdict, out, code, stage, pending)
  local quota_fields
  while status == 1 or status == 3 or status == 4 do
    if status == 1 then
      local v, c, m, fields = host_answer(self, snap, dec, pending, lua_ctx, trace, who)
      quota_fields = fields
      status, verdict, out, code, stage, pending = dec:answer(v, c, m)
    elseif status == 3 then
      status, verdict, out, code, stage, pending = resolve_answer(snap, dec)
    else
      status, verdict, out, code, stage, pending = record_answer(self, snap, dec)
    end
  end
  -- (the quota stage is the last: its refusal is the decision)
  if status == 0 and quota_fields then out = with_quota_fields(snap, out, quota_fields) end
  return status, verdict, out, code, stage
end

-- A reject the host writes for what the core could not decide (out of
-- memory): refused, never accepted.  what: "call" or "plan".
local function undecided(snap, line, code, message, what, ctx)
  return decision.from_table(finish(snap, { verdict = "reject", stage = "decode", code = code or "NOMEM",
    message = "the " .. what .. " could not be decided: " .. tostring(message), line = line }, ctx or {}))
end

-- The decision for a context that cannot be compiled.
local function bad_context(snap, message, line)
  return decision.from_table(finish(snap, { verdict = "reject", stage = "decode", code = "BAD_CONTEXT",
    message = tostring(message), line = line }, {}))
end

-- The decision of the check dec began, from the core's outcome (status,
-- verdict, out, code, stage, pending), the host's stages answered in turn;
-- dec goes back to the pool.  With resolved, also the resolved tool's
-- record and the args_digest (known: what the core gave of them with an
-- outcome it decided alone, else they are asked for); who: as for host_answer.
local function conclude(self, snap, dec, lua_ctx, trace, line, resolved, known, who, status, verdict, out, code, stage,
                        pending)
  local alone = status == 0
  status, verdict, out, code, stage = settle(self, snap, dec, lua_ctx, trace, who, status, verdict, out, code, stage,
    pending)
  local tool_index, digest
  if resolved or trace then
    if known and alone then tool_index, digest = known.tool, known.digest else tool_index, digest = dec:resolved() end
  end
  local pool = snap.deciders
  pool[#pool + 1] = dec
  if status ~= 0 then return undecided(snap, line, out, verdict, "call", lua_ctx) end
  local d, tool = decision.new(VERDICTS[verdict], code, stage, out), tool_index and snap.registry.tools[tool_index]
  if trace then d = trace:finish(d, tool) end
  return d, tool, digest
end

-- run_check(self, snap, compiled, text, context, lua_ctx, line, resolved, who)
-- -> decision[, the resolved tool's record | nil, args_digest | nil when
-- resolved is asked for]: the core's pipeline of a compiled policy on one
-- call text, the host's stages answered in turn.  A text that holds
-- several calls, or none, is refused: one decision is about one call
-- (check_all decides each).
local function run_check(self, snap, compiled, text, cctx, lua_ctx, line, resolved, who)
  local dec = take_decider(snap)
  local trace = self.opts.explain and explain.new(snap) or nil
  return conclude(self, snap, dec, lua_ctx, trace, line, resolved, nil, who,
    dec:check(compiled, cctx, text, FORMAT_CODES[self.opts.format or "auto"], flags_of(self) + ONE, line))
end

-- What verifying the result of a call check_resolved let through needs.
local function resolution(snap, text, d, tool, digest)
  if d.verdict == "reject" or not tool or not digest then return nil end
  return { snap = snap, text = text, tool = tool, args_digest = digest }
end

-- The context of one call: the snapshot's own (policy and engine
-- contexts), a context made by engine:context, or that with a table merged
-- over it.  Returns compiled, table | nil, message, code.
local Context = {}
Context.__index = Context

local function call_context(snap, ctx)
  if ctx == nil then return snap.context, snap.context_table end
  if getmetatable(ctx) == Context then
    if ctx.snap ~= snap then return compile_context(snap, ctx.table), ctx.table end
    return ctx.compiled, ctx.table
  end
  if type(ctx) ~= "table" then error("a context must be a table, got " .. type(ctx), 3) end
  local t = merge(snap.context_table, ctx)
  local compiled, err, code = compile_context(snap, t)
  if not compiled then return nil, err, code end
  return compiled, t
end

--- A context compiled once, for a host that decides many calls in it
-- (engine:check(call, ctx) with a plain table compiles it every time).
-- context(t) -> context: t merged over the policy's and the engine's.
function Engine:context(t)
  if type(t) ~= "table" then error("context: a table expected, got " .. type(t), 2) end
  local snap = self.current
  local merged = merge(snap.context_table, t)
  local compiled, err, code = compile_context(snap, merged)
  if not compiled then return nil, err, code end
  return setmetatable({ snap = snap, compiled = compiled, table = merged }, Context)
end

-- One call through the policy's pipeline, on the snapshot in force from
-- start to end (engine:check); with keep, also what verifying its result
-- needs when the call was not refused (engine:check_resolved).
local function check_call(self, call, ctx, line, keep, who)
  local snap = self.current
  local cctx, lua_ctx, cerr = call_context(snap, ctx)
  if not cctx then return bad_context(snap, lua_ctx or cerr, line) end
  local text, failed = call_text(call)
  if not text then
    failed.line = line
    return decision.from_table(finish(snap, failed, lua_ctx))
  end
  local d, tool, digest = run_check(self, snap, snap.compiled, text, cctx, lua_ctx, line, keep, who or COUNTED)
  if not keep then return d end
  return d, resolution(snap, text, d, tool, digest)
end

--- Runs the policy's stages on one tool call.
-- check(call[, ctx[, line]]) -> decision (toolgate.decision)
-- @param call JSON text in any call format, or a table {server=, name=, arguments=, id=}
-- @param[opt] ctx the call's context (a table: scopes, max_risk, epoch,
-- ...; merged over the policy's and the engine's), or one made by
-- engine:context
-- @param[opt] line a line number, written into the decision (the CLI's)
-- @return the decision: d.verdict ("accept", "reject", "defer"), d.code,
-- d.stage, d:json(); message, path, server, tool, format, index,
-- args_digest, policy_version, registry_hash, ... through d:table().  A
-- text that holds several calls, or none, is a BAD_CALL reject saying how
-- many: check_all decides each.
function Engine:check(call, ctx, line)
  return (check_call(self, call, ctx, line))
end

--- Runs the policy's stages on every call a text holds.
-- check_all(call[, ctx]) -> list of decisions (toolgate.decision)
-- @param call JSON text in any call format and shape (a chat.completion,
-- a message, a Responses API response, an MCP batch, ...), or a table
-- @param[opt] ctx as for check
-- @return one decision per call, in order, each with index (from 0) and
-- format (the shape read); {} for a text of no call (a text-only
-- message); a text that cannot be decoded, or whose context is refused,
-- gives one reject (without index).  All are decided on one snapshot.
-- @param[opt] line a line number, written into each decision (the CLI's)
function Engine:check_all(call, ctx, line)
  local snap = self.current
  local list = setmetatable({}, value.array_mt)
  local cctx, lua_ctx, cerr = call_context(snap, ctx)
  if not cctx then
    list[1] = bad_context(snap, lua_ctx or cerr, line)
    return list
  end
  local text, failed = call_text(call)
  if not text then
    failed.line = line
    list[1] = decision.from_table(finish(snap, failed, lua_ctx))
    return list
  end
  local dec = take_decider(snap)
  local trace = self.opts.explain and explain.new(snap) or nil
  local status, verdict, out, code, stage = settle(self, snap, dec, lua_ctx, trace, COUNTED,
    dec:check(snap.compiled, cctx, text, FORMAT_CODES[self.opts.format or "auto"], flags_of(self), line))
  while status == 0 do
    local d = decision.new(VERDICTS[verdict], code, stage, out)
    if trace then
      local tool_index = dec:resolved()
      d = trace:finish(d, tool_index and snap.registry.tools[tool_index])
      trace = explain.new(snap)
    end
    list[#list + 1] = d
    status, verdict, out, code, stage = settle(self, snap, dec, lua_ctx, trace, COUNTED, dec:next())
  end
  local pool = snap.deciders
  pool[#pool + 1] = dec
  if status == nil then
    -- the core could not decide the next call (out of memory): refused
    list[#list + 1] = undecided(snap, nil, out, verdict, "call", lua_ctx)
  end
  return list
end

-- What a stream decides in: the compiled context and its table, and the
-- threads (threads > 1) | nil, message.
local function stream_setup(snap, ctx, threads)
  local cctx, lua_ctx, cerr = call_context(snap, ctx)
  if not cctx then return nil, lua_ctx or cerr end
  local workers, werr
  if threads and threads > 1 then
    workers, werr = snap.core:workers(threads)
    if not workers then return nil, werr end
  end
  return cctx, lua_ctx, workers
end

-- A reject the host writes for a line the core could not decide.
local function refused_line(snap, line, code, message, what)
  return undecided(snap, line, code, message, what or "call"):json()
end

-- A call line the core left to the host (a stage it runs): settled here,
-- its decision or its refusal written and counted.
local function settle_call_line(self, snap, dec, lua_ctx, write, counts, line, pending)
  local st, verdict, text = settle(self, snap, dec, lua_ctx, nil, COUNTED, 1, nil, nil, nil, nil, pending)
  if st == 0 then
    write(text, "\n")
    counts[verdict] = counts[verdict] + 1
  else
    write(refused_line(snap, line, text, verdict), "\n")
    counts[1] = counts[1] + 1
  end
end

local function add_counts(counts, a, r, d)
  counts[0], counts[1], counts[2] = counts[0] + a, counts[1] + r, counts[2] + d
end

--- Decides a stream of JSON Lines, one decision per call, the lines read
-- and decided in chunks by the core.
-- check_stream(read, write[, ctx[, threads]]) -> accepts, rejects, defers
-- @tparam function read returns the next piece of input (any size), nil at the end
-- @tparam function write takes output text (decisions, each ending in "\n")
-- @param[opt] ctx as for check
-- @tparam[opt] number threads threads that decide together (default 1);
-- the output is the same bytes whatever their number
function Engine:check_stream(read, write, ctx, threads)
  local snap = self.current
  local cctx, lua_ctx, workers = stream_setup(snap, ctx, threads)
  if not cctx then return nil, lua_ctx end
  local dec, format, flags = take_decider(snap), FORMAT_CODES[self.opts.format or "auto"], flags_of(self)
  local counts, line = { [0] = 0, 0, 0 }, 0
  lines.pump(read, function(buf)
    local pos = 1
    while true do
      local res = { dec:check_lines(snap.compiled, cctx, buf, pos, format, flags, line, workers) }
      local status = res[1]
      if status == nil then
        -- the core failed on a line (out of memory): the lines before it
        -- stand, that one is refused, the next go on
        local message, code, after, number, before = res[2], res[3], res[4], res[5], res[6]
        write(before, refused_line(snap, number, code, message), "\n")
        add_counts(counts, res[7], res[8] + 1, res[9])
        pos, line = after, number
      else
        write(res[4])
        add_counts(counts, res[5], res[6], res[7])
        pos, line = res[2], res[3]
        if status == 2 then return pos end
        settle_call_line(self, snap, dec, lua_ctx, write, counts, line, res[8])
      end
    end
  end)
  local pool = snap.deciders
  pool[#pool + 1] = dec
  return counts[0], counts[1], counts[2]
end

-- Bytes of input each decider call takes: small on one thread (the
-- lines stay in the cache), large enough with workers that a thread's
-- share is worth waking it for.
local function piece_bytes(workers)
  return workers and lines.SHARED_CHUNK * workers:count() or lines.CHUNK
end

-- The lines of input (a path, a file descriptor the caller keeps, or a
-- reader of either) decided by step(reader, want, line) -- the decider's check_reader or
-- classify_reader with the rest bound -- which writes the core's
-- decisions to the descriptor output itself.  A line the core failed on
-- is refused here (what: "call" or "plan"); a line that waits for the
-- host is host(status, line, counts, write, a, b), a and b the values the
-- step gave after the counts, write writing to output too.
-- -> counts | nil, message
local function drive_reader(snap, input, output, workers, what, step, host)
  local reader, rerr = input, nil
  if type(input) == "number" or type(input) == "string" then reader, rerr = snap.core:reader(input) end
  if not reader then return nil, rerr end
  local counts, line, want, failed = { [0] = 0, 0, 0 }, 0, piece_bytes(workers), nil
  local function write(...)
    if failed then return end
    local ok, err = snap.core:write_fd(output, table.concat({ ... }))
    if not ok then failed = err end
  end
  while not failed do
    local res = { step(reader, want, line) }
    local status = res[1]
    if status == true then break end
    if status == false then
      failed = res[2]
    elseif status == nil then
      -- the core failed on a line (out of memory): the lines before it
      -- are written, that one is refused, the next go on
      local message, code = res[2], res[3]
      line = res[4]
      add_counts(counts, res[5], res[6] + 1, res[7])
      write(refused_line(snap, line, code, message, what), "\n")
    else
      line = res[2]
      add_counts(counts, res[3], res[4], res[5])
      if status ~= 2 then host(status, line, counts, write, res[6], res[7]) end
    end
  end
  reader:close()
  if failed then return nil, failed end
  return counts
end

-- The calls of a reader decided here a text at a time by check_all, and
-- their decisions written to output: each document of an input that is
-- not JSON Lines (toolgate.documents), or each line under explain, whose
-- decisions carry the trace, or under shadow rules, which mark the ones
-- they let run (toolgate.shadow).  -> accepts, rejects, defers[, the line of a
-- document after which nothing was read] | nil, message
local function check_texts(self, snap, reader, output, ctx, as_documents, rules)
  local counts, failed = { accept = 0, reject = 0, defer = 0 }, nil
  local function read(want)
    if failed then return nil end
    local text, err = reader:lines(math.max(lines.CHUNK, want or 0))
    if not text then failed = err end
    if not text or text == "" then return nil end
    reader:take(#text)
    return text
  end
  local function decide(text, line, code, message, offset)
    local list = text and self:check_all(text, ctx, line) or { decision.from_table(finish(snap, {
      verdict = "reject", stage = "decode", code = code, message = message, line = line, offset = offset }, {})) }
    local out = {}
    for i, d in ipairs(list) do
      if rules and d.verdict ~= "accept" and shadow.shadows(rules, d.server, d.tool, d) then d = shadow.mark(d) end
      out[i] = d:json() .. "\n"
      counts[d.verdict] = counts[d.verdict] + 1
    end
    if #out > 0 and not failed then
      local ok, err = snap.core:write_fd(output, table.concat(out))
      if not ok then failed = err end
    end
  end
  local stopped
  if as_documents then
    stopped = documents.each(snap.core, read, decide)
  else
    local line = 0
    for piece in read do
      for text in piece:gmatch("([^\n]*)\n") do
        line = line + 1
        if text:find("%S") then decide(text, line) end
      end
    end
  end
  reader:close()
  if failed then return nil, failed end
  return counts.accept, counts.reject, counts.defer, stopped
end

--- Decides the JSON Lines of a file, one decision per call, as
-- check_stream does, with the reading and writing done by the core: the
-- input read into a buffer of its own, the decisions written from it to
-- a file descriptor (what toolgate check runs; no Lua string per piece,
-- so the pieces are large enough for threads to share).
-- An input whose first line that is not blank is the start of a JSON
-- value that goes on past it (a response saved with indentation, or
-- several such documents one after another) is read as JSON documents
-- instead, each decided as check_all decides a text, with the line it
-- starts on; a document that is not JSON, or larger than max_input_bytes,
-- gets a reject and ends the reading (where the next one would start
-- cannot be told), its line the fourth value returned.
-- check_file(input, output[, ctx[, threads]]) -> accepts, rejects, defers[, line] | nil, message
-- @param input a path, or a file descriptor to read (0: standard input; left open)
-- @tparam number output the file descriptor the decisions are written to
-- (1: standard output; anything buffered for it in Lua must be flushed first)
-- @param[opt] ctx as for check
-- @tparam[opt] number threads as for check_stream
function Engine:check_file(input, output, ctx, threads)
  local snap = self.current
  local opened, oerr = snap.core:reader(input)
  if not opened then return nil, oerr end
  local head, herr = opened:lines(1, lines.CHUNK)
  if not head then
    opened:close()
    return nil, herr
  end
  local as_documents = documents.starts_document(snap.core, head)
  -- the decisions shadow marks ("enforced": false), decided here
  local rules = self.opts.shadow and shadow.compile(snap.policy.given, "shadow") or snap.policy.shadow
  local in_lua = as_documents or self.opts.explain or rules -- a text at a time: no threads to wake
  local cctx, lua_ctx, workers = stream_setup(snap, ctx, not in_lua and threads or nil)
  if not cctx then
    opened:close()
    return nil, lua_ctx
  end
  if in_lua then return check_texts(self, snap, opened, output, ctx, as_documents, rules) end
  local dec, format, flags = take_decider(snap), FORMAT_CODES[self.opts.format or "auto"], flags_of(self)
  local counts, err = drive_reader(snap, opened, output, workers, "call", function(reader, want, line)
    return dec:check_reader(snap.compiled, cctx, reader, want, format, flags, line, output, workers)
  end, function(_, line, counts, write, pending)
    settle_call_line(self, snap, dec, lua_ctx, write, counts, line, pending)
  end)
  local pool = snap.deciders
  pool[#pool + 1] = dec
  if not counts then return nil, err end
  return counts[0], counts[1], counts[2]
end

-- The quarantines a plan decided, written to the engine's own store
-- (opts.state) in order; the core's in-process store has them already.
local function write_quarantines(self, snap, dec)
  for _, q in ipairs(dec:quarantines()) do
    local tool = snap.registry.tools[q.tool]
    self.store:quarantine(tool.server, tool.name, q.reason, q.epoch)
  end
end

--- Self-consistency of a plan sampled several times.
-- classify(plan[, ctx[, line]]) -> decision
-- plan: JSON text (or a Lua table) in either form:
--   {"plan_id", "tool": {"server", "name"[, "deterministic", "verified"]},
--    "samples": [{"arguments", "result", "epoch"}, ...][, "epoch_fixed"]}
--   {"plan_id", "samples": [{"epoch", "calls": [{"server", "name", "arguments"}...],
--    "results": [...]}, ...]}
-- The core decides it (core/toolgate.h, tg_classify): the rung on every
-- call of every sample, agreement, the decision table, then the policy's
-- other stages (gate, verifier, custom) on each call of the representative
-- sample.  The host answers what is Lua's: custom stages, resolver
-- functions, and the records of a store given as opts.state.
function Engine:classify(plan, ctx, line)
  local snap = self.current -- this decision's snapshot, start to end
  local cctx, lua_ctx, cerr = call_context(snap, ctx)
  if not cctx then return bad_context(snap, lua_ctx or cerr, line) end
  local text = plan
  if type(plan) == "table" then
    local err
    text, err = value.encode(plan)
    if not text then
      return decision.from_table(finish(snap, { verdict = "reject", stage = "decode", code = "BAD_PLAN",
        message = err, line = line }, lua_ctx))
    end
  elseif type(plan) ~= "string" then
    error("classify: a plan (JSON text or a table) expected, got " .. type(plan), 2)
  end
  local dec, cstore = take_decider(snap), state_mod.core_store(self.store)
  local status, verdict, out, code, stage = settle(self, snap, dec, lua_ctx, nil, nil,
    dec:classify(snap.compiled, cctx, cstore, text, flags_of(self), line, os.time()))
  if status == 0 and not cstore then write_quarantines(self, snap, dec) end
  local pool = snap.deciders
  pool[#pool + 1] = dec
  if status ~= 0 then return undecided(snap, line, out, verdict, "plan", lua_ctx) end
  return decision.new(VERDICTS[verdict], code, stage, out)
end

-- A plan the core left to the host (a stage, an ID, a record: status 1,
-- 3, 4), or decided with quarantines for the engine's own store (status
-- 0, verdict and text given): settled here, written and counted.
local function settle_plan_line(self, snap, dec, lua_ctx, cstore, write, counts, line, status, verdict, text)
  local st = status
  if status ~= 0 then
    st, verdict, text = settle(self, snap, dec, lua_ctx, nil, nil, status, nil, nil, nil, nil, verdict)
  end
  if st == 0 then
    if not cstore then write_quarantines(self, snap, dec) end
    write(text, "\n")
    counts[verdict] = counts[verdict] + 1
  else
    write(refused_line(snap, line, text, verdict, "plan"), "\n")
    counts[1] = counts[1] + 1
  end
end

--- Classifies a stream of JSON Lines, one decision per plan, the lines
-- read and decided in chunks by the core.
-- classify_stream(read, write[, ctx[, threads]]) -> accepts, rejects, defers
-- @tparam function read returns the next piece of input (any size), nil at the end
-- @tparam function write takes output text (decisions, each ending in "\n")
-- @param[opt] ctx as for classify
-- @tparam[opt] number threads threads that classify together (default 1);
-- the output and the store are the same whatever their number
function Engine:classify_stream(read, write, ctx, threads)
  local snap = self.current
  local cctx, lua_ctx, workers = stream_setup(snap, ctx, threads)
  if not cctx then return nil, lua_ctx end
  local dec, flags, cstore = take_decider(snap), flags_of(self), state_mod.core_store(self.store)
  local counts, line = { [0] = 0, 0, 0 }, 0
  lines.pump(read, function(buf)
    local pos = 1
    while true do
      local res = { dec:classify_lines(snap.compiled, cctx, cstore, buf, pos, flags, line, os.time(), workers) }
      local status = res[1]
      if status == nil then
        -- the core failed on a line (out of memory): the plans before it
        -- stand, that one is refused, the next go on
        local message, code, after, number, before = res[2], res[3], res[4], res[5], res[6]
        write(before, refused_line(snap, number, code, message, "plan"), "\n")
        add_counts(counts, res[7], res[8] + 1, res[9])
        pos, line = after, number
      else
        write(res[4])
        add_counts(counts, res[5], res[6], res[7])
        pos, line = res[2], res[3]
        if status == 2 then return pos end
        settle_plan_line(self, snap, dec, lua_ctx, cstore, write, counts, line, status, res[8], res[9])
      end
    end
  end)
  local pool = snap.deciders
  pool[#pool + 1] = dec
  return counts[0], counts[1], counts[2]
end

--- Classifies the JSON Lines of a file, one decision per plan, as
-- classify_stream does, with the reading and writing done by the core (see
-- check_file; what toolgate classify runs).
-- classify_file(input, output[, ctx[, threads]]) -> accepts, rejects, defers | nil, message
-- @param input a path, or a file descriptor to read (0: standard input; left open)
-- @tparam number output the file descriptor the decisions are written to
-- @param[opt] ctx as for classify
-- @tparam[opt] number threads as for classify_stream
function Engine:classify_file(input, output, ctx, threads)
  local snap = self.current
  local cctx, lua_ctx, workers = stream_setup(snap, ctx, threads)
  if not cctx then return nil, lua_ctx end
  local dec, flags, cstore = take_decider(snap), flags_of(self), state_mod.core_store(self.store)
  local counts, err = drive_reader(snap, input, output, workers, "plan", function(reader, want, line)
    return dec:classify_reader(snap.compiled, cctx, cstore, reader, want, flags, line, os.time(), output, workers)
  end, function(status, line, counts, write, a, b)
    settle_plan_line(self, snap, dec, lua_ctx, cstore, write, counts, line, status, a, b)
  end)
  local pool = snap.deciders
  pool[#pool + 1] = dec
  if not counts then return nil, err end
  return counts[0], counts[1], counts[2]
end

--- The features pass of a threshold sweep: a stream of labeled plans
-- (JSON Lines, classify's plans with "label" and "tool_labels";
-- docs/self-consistency.md, "Threshold sweeps") read and kept by the core
-- as classify reads them, to be decided again under any settings
-- (toolgate.experiment).
-- sweep_stream(read[, ctx]) -> sweep | nil, message, code
-- @tparam function read returns the next piece of input, nil at the end
-- @param[opt] ctx as for classify
-- @return the core's sweep (sweep:run, sweep:count, sweep:tool_label), the
-- snapshot's registry tools, and the policy's consistency settings
function Engine:sweep_stream(read, ctx)
  local snap = self.current
  local cctx, lua_ctx = stream_setup(snap, ctx)
  if not cctx then return nil, lua_ctx end
  local sw, err, code = snap.compiled:sweep()
  if not sw then return nil, err, code end
  local dec, flags, cstore = take_decider(snap), flags_of(self), state_mod.core_store(self.store)
  local line, failed = 0, nil
  lines.pump(read, function(buf)
    local pos = 1
    while not failed do
      local status, next_pos, last, pending = dec:sweep_lines(sw, cctx, cstore, buf, pos, flags, line)
      if status == nil then
        failed = { next_pos, last } -- message, code
        return #buf + 1
      end
      pos, line = next_pos, last
      if status == 2 then return pos end
      -- the host's part of the plan (a stage, an ID, a record): answered, the plan is then kept
      local st, verdict, text = settle(self, snap, dec, lua_ctx, nil, nil, status, nil, nil, nil, nil, pending)
      if st ~= 0 then failed = { "line " .. line .. ": " .. tostring(verdict), text } end
    end
    return #buf + 1
  end)
  local pool = snap.deciders
  pool[#pool + 1] = dec
  if failed then return nil, failed[1], failed[2] end
  return sw, snap.registry.tools, value.copy(snap.policy.settings.consistency)
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
  if not text then return { verdict = "invalid", code = failed.code, message = failed.message } end
  local d, t = run_check(self, snap, snap.rung_only, text, nil, {}, nil, true, nil)
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

-- The verifier's accept of a result is the same text for every call of a
-- tool but the arguments' digest: it is written once per tool and snapshot,
-- by the general path (finish, then the decision's own JSON), and each
-- call's digest put in its place (32 hex digits: nothing to escape, and
-- the members' order does not depend on values).  An MCP gateway verifies
-- every tools/call result, and writing the decision was most of it.
local function accepted_result(snap, tool, state, lua_ctx)
  local digest = state.args_digest
  if type(digest) ~= "string" or not digest:find("^%x+$") then
    return decision.from_table(finish(snap, { verdict = "accept", stage = "verifier" }, lua_ctx, state))
  end
  local cache = snap.accepted_results
  local parts = cache[tool]
  if not parts then
    local text = decision.from_table(finish(snap, { verdict = "accept", stage = "verifier" }, lua_ctx,
      { server = state.server, name = state.name, args_digest = "" })):json()
    local at = assert(text:find('"args_digest":""', 1, true))
    parts = { text:sub(1, at + 14), text:sub(at + 15) }
    cache[tool] = parts
  end
  return decision.new("accept", nil, "verifier", parts[1] .. digest .. parts[2])
end

-- The contract check of a result, for a call the rung let through to tool
-- (state: its server, name and arguments' digest).
local function verify_result(snap, tool, state, result, lua_ctx)
  local rtext = result
  if type(result) ~= "string" then
    local err
    rtext, err = value.encode(result)
    if not rtext then
      return decision.from_table(finish(snap, { verdict = "reject", stage = "verifier", code = "BAD_RESULT",
        message = "the result cannot be written as JSON: " .. err }, lua_ctx, state))
    end
  end
  local doc, perr, code = snap.core:parse(rtext)
  if not doc then
    return decision.from_table(finish(snap, { verdict = "reject", stage = "verifier", code = code,
      message = "the result is not valid JSON: " .. perr }, lua_ctx, state))
  end
  local problem = verifier.check(snap.registry, tool, doc:root(), lua_ctx)
  doc:free()
  if not problem then return accepted_result(snap, tool, state, lua_ctx) end
  problem.verdict = problem.verdict or snap.policy.settings.verifier.on_mismatch
  problem.stage = "verifier"
  return decision.from_table(finish(snap, problem, lua_ctx, state))
end

-- verify's context: the table a context engine:context made, or ctx merged
-- over the snapshot's.
local function verify_context(snap, ctx)
  local made = getmetatable(ctx) == Context
  return made and ctx.snap == snap and ctx.table or merge(snap.context_table, made and ctx.table or ctx), made
end

--- Checks a call's result against the tool's contract, after the call ran.
-- verify(call, result[, ctx]) -> decision
-- result: JSON text or a Lua value (an MCP CallToolResult for MCP tools);
-- ctx: a table, or a context engine:context made.
-- The call goes through the rung first: only a call to a known tool with
-- valid arguments has a contract to verify against.
function Engine:verify(call, result, ctx)
  local snap = self.current
  local lua_ctx, made = verify_context(snap, ctx)
  local text, failed = call_text(call)
  if not text then return decision.from_table(finish(snap, failed, lua_ctx)) end
  -- the rung alone first, in the core, under this call's context (compiled
  -- once for a context engine:context made)
  local rctx, err, code
  if made and ctx.snap == snap and ctx.rung then
    rctx = ctx.rung
  else
    rctx, err, code = snap.rung_only:context(assert(value.encode(lua_ctx)))
    if made and ctx.snap == snap then ctx.rung = rctx end
  end
  if not rctx then
    return decision.from_table(finish(snap, { verdict = "reject", stage = "decode", code = code,
      message = "the context cannot be read: " .. tostring(err) }, lua_ctx))
  end
  local d, tool, digest = run_check(self, snap, snap.rung_only, text, rctx, lua_ctx, nil, true)
  if d.verdict ~= "accept" then return d end
  return verify_result(snap, tool, { server = tool.server, name = tool.name, args_digest = digest }, result, lua_ctx)
end

--- engine:check, and for a call it did not refuse, what verifying its
-- result needs of it (the tool the rung resolved and the arguments'
-- digest, on this snapshot), so that the rung need not run again: an MCP
-- gateway checks each tools/call and verifies its answer.
-- check_resolved(call[, ctx[, principal]]) -> decision, resolved | nil
-- (principal: who asked, what a quota rule's per = "principal" counts)
function Engine:check_resolved(call, ctx, principal)
  return check_call(self, call, ctx, nil, true, counted_as(self.current, principal))
end

--- One client message of an MCP gateway (toolgate.mcp), read and its
-- tools/call decided in one call into the core.
-- check_mcp(text, server[, ctx[, decide[, principal]]]) -> frame[, decision, resolved | nil]
-- @tparam string text the message as the client sent it
-- @tparam string server the server the route leads to: the call's server
-- @param[opt] ctx as for check
-- @tparam[opt] boolean decide check the call of a tools/call request with
-- a valid id (frame.checked), as check_resolved does
-- @tparam[opt] string principal who asked (the quota stage's per = "principal")
-- @return the frame: what the message is (see Node:mcp in the bindings:
-- kind, id, bad_id, id_text, id_null, method, bad_method, result, error,
-- cursor, name, call, call_error, checked); with checked, the call's
-- decision and what verifying its result needs (check_resolved's second
-- value).  Raises when the message cannot be read (out of memory).
function Engine:check_mcp(text, server, ctx, decide, principal)
  local snap = self.current
  local cctx, lua_ctx, cerr
  if decide then
    cctx, lua_ctx, cerr = call_context(snap, ctx)
    if not cctx then
      local frame = self:check_mcp(text, server)
      if frame.call and frame.id then return frame, bad_context(snap, lua_ctx or cerr) end
      return frame
    end
  end
  local dec = take_decider(snap)
  local trace = decide and self.opts.explain and explain.new(snap) or nil
  -- (named values, not a table of them: LuaJIT compiles no unpack of one)
  local frame, status, verdict, out, code, stage, pending = dec:mcp(snap.compiled, cctx, text, server,
    FORMAT_CODES[self.opts.format or "auto"], flags_of(self), decide)
  if not frame or not frame.checked then
    local pool = snap.deciders
    pool[#pool + 1] = dec
    if not frame then error("toolgate: the message could not be read: " .. tostring(status), 2) end
    return frame
  end
  local d, tool, digest = conclude(self, snap, dec, lua_ctx, trace, nil, true, frame, counted_as(snap, principal),
    status, verdict, out, code, stage, pending)
  return frame, d, resolution(snap, frame.call, d, tool, digest)
end

--- verify for a call check_resolved let through: the same decision as
-- verify(call, result, ctx), without the rung's second run.  After a
-- reload the call is resolved again, on the snapshot in force.
-- verify_resolved(resolved, result[, ctx]) -> decision
function Engine:verify_resolved(resolved, result, ctx)
  local snap = self.current
  if resolved.snap ~= snap then return self:verify(resolved.text, result, ctx) end
  local tool = resolved.tool
  return verify_result(snap, tool, { server = tool.server, name = tool.name, args_digest = resolved.args_digest },
    result, (verify_context(snap, ctx)))
end

return M
