--- toolgate.policy: loading and checking policy files.
--
-- A policy is a Lua chunk that returns a table (docs/policies.md describes
-- every field):
--   name, version      identify it in every decision (policy_version)
--   registry           sources and load settings (toolgate.registry)
--   limits             core limits (README, "Limits")
--   stages             the pipeline, in order: "rung", "gate", "verifier",
--                      "consistency", or custom stage tables
--   rung, gate, verifier, consistency   each built-in stage's settings
--   contract           function(tool) -> contract fields, run at load
--   context            the default per-call context
--   on_error           "reject" (default) or "defer": what a failing policy
--                      function makes of the decision -- never an accept
--   defer              { requires_approval = bool }
--   budget             VM instructions per call into policy code
-- The loader runs the chunk in the sandbox and then checks the table; any
-- problem is an error naming the field.  The stage order is checked here:
-- a stage that reads a tool's contract (gate, verifier, consistency, custom
-- stages with reads_contract = true) before the rung is refused, because
-- a fabricated tool has no contract, so such a stage cannot reject it.
-- @module toolgate.policy

local registry_mod = require "toolgate.registry"
local sandbox = require "toolgate.sandbox"

local M = {}

local BUILTIN = {
  rung = { reads_contract = false },
  gate = { reads_contract = true },
  verifier = { reads_contract = true },
  consistency = { reads_contract = true },
}

M.DEFAULT_STAGES = { "rung", "gate", "verifier" }
M.DEFAULT_RISK_LEVELS = { "none", "low", "medium", "high", "critical" }

-- Each built-in stage's settings: defaults, and the kind each must have.
local STAGE_SETTINGS = {
  rung = {
    report_also = { false, "boolean" },
  },
  gate = {
    risk_levels = { M.DEFAULT_RISK_LEVELS, "table" },
    admissible = { false, "function" },   -- false: the default rule
  },
  verifier = {
    require_contract = { false, "boolean" }, -- refuse calls to tools with nothing to verify
    on_mismatch = { "reject", "string" },    -- what a result that breaks the contract gets
  },
  consistency = {
    min_samples = { 5, "number" },
    max_samples = { 10000, "number" },      -- a limit: more samples are TOO_MANY_SAMPLES (reject)
    arg_accept = { 0.80, "number" },
    arg_reject = { 0.20, "number" },
    result_accept = { 0.80, "number" },
    result_quarantine = { 0.50, "number" },
    on_invalid = { "defer", "string" },      -- INSUFFICIENT_SAMPLES etc.: "defer" or "reject"
  },
}

local TOP_LEVEL = {
  name = "string", version = "string", description = "string", registry = "table",
  limits = "table", stages = "table", rung = "table", gate = "table", verifier = "table",
  consistency = "table", contract = "function", context = "table", on_error = "string",
  defer = "table", budget = "number", resolvers = "table",
}

-- A stage's defer no longer stops the pipeline (a later reject must win),
-- so the setting that chose between the two is gone; say so to a policy
-- written for it.
local ON_DEFER_GONE = "on_defer was removed: after a defer the later stages always run, and a reject from any of them "
  .. "wins (delete the setting)"

local function invalid(where, msg)
  return nil, "policy " .. where .. ": " .. msg, "POLICY_INVALID"
end

local function stage_settings(p, name)
  local given = p[name] or {}
  local spec = STAGE_SETTINGS[name]
  local out = {}
  for k, v in pairs(given) do
    if k == "on_defer" then return invalid(name, ON_DEFER_GONE) end
    if not spec[k] then
      return invalid(name .. "." .. tostring(k), "unknown setting (known: " ..
        (function()
          local ks = {}
          for key in pairs(spec) do ks[#ks + 1] = key end
          table.sort(ks)
          return table.concat(ks, ", ")
        end)() .. ")")
    end
    if type(v) ~= spec[k][2] then
      return invalid(name .. "." .. k, "must be a " .. spec[k][2] .. ", not a " .. type(v))
    end
    out[k] = v
  end
  for k, d in pairs(spec) do
    if out[k] == nil then out[k] = d[1] end
  end
  return out
end

local function check_consistency(c, warnings)
  for _, k in ipairs({ "arg_accept", "arg_reject", "result_accept", "result_quarantine" }) do
    if c[k] < 0 or c[k] > 1 then return invalid("consistency." .. k, "must be between 0 and 1") end
  end
  if c.min_samples < 1 or c.min_samples ~= math.floor(c.min_samples) then
    return invalid("consistency.min_samples", "must be a whole number of at least 1")
  end
  if c.max_samples < c.min_samples or c.max_samples > 2147483647 or c.max_samples ~= math.floor(c.max_samples) then
    return invalid("consistency.max_samples", "must be a whole number from min_samples to 2^31-1")
  end
  if c.arg_reject > c.arg_accept then
    return invalid("consistency.arg_reject", "must not be above arg_accept")
  end
  if c.on_invalid ~= "defer" and c.on_invalid ~= "reject" then
    return invalid("consistency.on_invalid", 'must be "defer" or "reject"')
  end
  -- The modal share of n samples is at least 1/n; with a strict "<", a
  -- reject needs 1/n < arg_reject for some n the policy accepts.
  if 1 / c.min_samples >= c.arg_reject then
    warnings[#warnings + 1] = string.format(
      "consistency: with min_samples = %d and arg_reject = %.2f, an ARG_DISAGREE reject needs more than %d "
      .. "samples (the modal share of n samples is at least 1/n); at exactly %d samples it cannot happen",
      c.min_samples, c.arg_reject, math.floor(1 / c.arg_reject), c.min_samples)
  end
  if c.result_quarantine > c.result_accept then
    warnings[#warnings + 1] = "consistency: result_quarantine above result_accept makes RESULT_UNSTABLE unreachable"
  end
  return true
end

-- Normalizes and checks the stage list; returns the stage records.
local function build_stages(p, settings)
  local list = p.stages or M.DEFAULT_STAGES
  local stages, seen, rung_at = {}, {}, nil
  for i, s in ipairs(list) do
    local rec
    if type(s) == "string" then
      if not BUILTIN[s] then
        return invalid("stages[" .. i .. "]", "unknown stage \"" .. s .. "\" (built-in: rung, gate, verifier, consistency)")
      end
      rec = { name = s, builtin = true, reads_contract = BUILTIN[s].reads_contract, settings = settings[s] }
    elseif type(s) == "table" then
      if type(s.name) ~= "string" or s.name == "" then return invalid("stages[" .. i .. "]", "a custom stage needs a name") end
      if BUILTIN[s.name] then return invalid("stages[" .. i .. "]", "\"" .. s.name .. "\" is a built-in stage's name") end
      if type(s.run) ~= "function" then return invalid("stages[" .. i .. "]", "a custom stage needs a run function") end
      for k in pairs(s) do
        if k == "on_defer" then return invalid("stages[" .. i .. "]", ON_DEFER_GONE) end
        if k ~= "name" and k ~= "run" and k ~= "reads_contract" and k ~= "code" then
          return invalid("stages[" .. i .. "]." .. tostring(k), "unknown field (name, run, reads_contract, code)")
        end
      end
      rec = { name = s.name, custom = true, run = s.run, reads_contract = s.reads_contract == true,
              code = s.code or s.name:upper(), settings = {} }
    else
      return invalid("stages[" .. i .. "]", "must be a stage name or a stage table")
    end
    if seen[rec.name] then return invalid("stages", "stage \"" .. rec.name .. "\" appears twice") end
    seen[rec.name] = true
    if rec.name == "rung" then rung_at = i end
    if rec.reads_contract and not rung_at then
      return nil, string.format(
        "policy stages: \"%s\" reads the tool's contract but comes before \"rung\"; a fabricated tool has no "
        .. "contract, so a stage placed there cannot reject it (the lookup of an undefined contract never "
        .. "produces a reject): put \"rung\" first", rec.name), "POLICY_ORDER"
    end
    stages[#stages + 1] = rec
  end
  if not rung_at then
    return nil, "policy stages: the pipeline has no \"rung\"; without it nothing checks that a called tool "
      .. "exists or that its arguments fit its schema, and the stages that read a tool's contract cannot "
      .. "reject a fabricated tool", "POLICY_ORDER"
  end
  return stages
end

--- The policy used when none is given: policies/default.lua's rules, with
-- no registry sources of its own.
function M.builtin_default()
  return {
    name = "builtin-default",
    version = "1",
    stages = { "rung", "gate", "verifier" },
  }
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("*a")
  f:close()
  return text
end

local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

--- load(source[, budget]) -> policy | nil, message, code
-- source: a path to a policy file, or a policy table (already built).
-- The policy record holds the checked settings, the stage list, warnings,
-- and version (name@version, plus the XXH3-128 prefix of the file's text).
function M.load(source, hash_text)
  local p, text, base
  if type(source) == "string" then
    local err
    text, err = read_file(source)
    if not text then return nil, "cannot read policy " .. tostring(err), "POLICY_LOAD" end
    p, err = sandbox.load(text, "@" .. source, sandbox.DEFAULT_BUDGET)
    if p == nil then return nil, "policy " .. source .. ": " .. tostring(err), "POLICY_LOAD" end
    base = dirname(source)
  elseif type(source) == "table" then
    p = source
  else
    error("policy: a path or a table expected, got " .. type(source), 2)
  end
  if type(p) ~= "table" then return invalid("file", "must return a table, returned a " .. type(p)) end
  sandbox.confine(p)
  for k, v in pairs(p) do
    if not TOP_LEVEL[k] then return invalid(tostring(k), "unknown field") end
    if type(v) ~= TOP_LEVEL[k] then return invalid(k, "must be a " .. TOP_LEVEL[k] .. ", not a " .. type(v)) end
  end
  if not p.name or not p.version then return invalid("name/version", "both are required strings") end
  local on_error = p.on_error or "reject"
  if on_error ~= "reject" and on_error ~= "defer" then return invalid("on_error", 'must be "reject" or "defer"') end
  local budget = p.budget or sandbox.DEFAULT_BUDGET
  if budget < 1000 or budget ~= math.floor(budget) then return invalid("budget", "must be a whole number of at least 1000") end

  local settings, warnings = {}, {}
  for name in pairs(STAGE_SETTINGS) do
    local s, err, code = stage_settings(p, name)
    if not s then return nil, err, code end
    settings[name] = s
  end
  local stages_listed = {}
  for _, s in ipairs(p.stages or M.DEFAULT_STAGES) do stages_listed[s] = true end
  -- the warnings concern the consistency stage: only a pipeline with it
  local ok, err, code = check_consistency(settings.consistency, stages_listed.consistency and warnings or {})
  if not ok then return nil, err, code end
  -- a risk order that orders nothing would let every risk through
  local levels, seen_level = settings.gate.risk_levels, {}
  if #levels == 0 then return invalid("gate.risk_levels", "must list at least one level, lowest first") end
  for i, level in ipairs(levels) do
    if type(level) ~= "string" then return invalid("gate.risk_levels[" .. i .. "]", "must be a string") end
    if seen_level[level] then return invalid("gate.risk_levels[" .. i .. "]", "repeats \"" .. level .. "\"") end
    seen_level[level] = true
  end
  local max_risk = p.context and p.context.max_risk
  if max_risk ~= nil and not seen_level[max_risk] then
    return invalid("context.max_risk", string.format("%q is not one of the risk levels (%s)", tostring(max_risk),
      table.concat(levels, ", ")))
  end
  local stages
  stages, err, code = build_stages(p, settings)
  if not stages then return nil, err, code end

  local registry = p.registry or {}
  local sources = {}
  for i, s in ipairs(registry.sources or {}) do
    if type(s) == "string" and base and not s:match("^/") then
      -- relative paths are relative to the policy file, like includes
      local server, path = registry_mod.split_source(s)
      if server then s = server .. "=" .. (path:match("^/") and path or base .. "/" .. path)
      else s = base .. "/" .. s end
    elseif type(s) == "table" and s.path and base and not s.path:match("^/") then
      local c = {}
      for k, v in pairs(s) do c[k] = v end
      c.path = base .. "/" .. s.path
      s = c
    end
    sources[i] = s
  end
  local registry_settings = {}
  for k, v in pairs(registry) do
    if k ~= "sources" then registry_settings[k] = v end
  end
  local defer = p.defer or {}
  for k in pairs(defer) do
    if k ~= "requires_approval" then return invalid("defer." .. tostring(k), "unknown setting (requires_approval)") end
  end

  local version = p.name .. "@" .. p.version
  if text and hash_text then version = version .. "+" .. hash_text(text):sub(1, 12) end
  return {
    name = p.name,
    version = version,
    source = type(source) == "string" and source or nil,
    stages = stages,
    settings = settings,
    registry_sources = sources,
    registry_settings = registry_settings,
    limits = p.limits,
    contract = p.contract,
    context = p.context or {},
    on_error = on_error,
    requires_approval = defer.requires_approval == true,
    budget = budget,
    resolvers = p.resolvers,
    warnings = warnings,
  }
end

return M
