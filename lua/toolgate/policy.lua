--- toolgate.policy: loading and checking policy files.
--
-- A policy is a Lua chunk that returns a table (docs/policies.md describes
-- every field):
--   name, version      identify it in every decision (policy_version)
--   registry           sources and load settings (toolgate.registry)
--   limits             core limits (docs/limits.md)
--   stages             the pipeline, in order: "rung", "gate", "verifier",
--                      "consistency", "quota" (last), or custom stage tables
--   rung, gate, verifier, consistency   each built-in stage's settings
--   quota              { rules = {...} }: the quota stage's (toolgate.quota)
--   contract           function(tool) -> contract fields, run at load
--   context            the default per-call context
--   on_error           "reject" (default) or "defer": what a failing policy
--                      function makes of the decision -- never an accept
--   defer              { requires_approval = bool }
--   budget             VM instructions per call into policy code
--   resolvers          ID resolvers for x-toolgate-canonical "id"
--   mode, modes, always_enforce   shadow mode (toolgate.shadow)
--   audit              { arguments =, redact = }: what the audit records
--                      show of a call's arguments (toolgate.audit)
-- The loader runs the chunk in the sandbox and then checks the table: every
-- field of every section for its kind and range, and every key against the
-- known ones (a typo is named, with the name it most likely meant).  Any
-- problem is data, never an error raised: nil, a message naming the field,
-- POLICY_INVALID (POLICY_LOAD for a file that does not run, POLICY_ORDER
-- for stages in an order that cannot work).  The stage order is checked here:
-- a stage that reads a tool's contract (gate, verifier, consistency, custom
-- stages with reads_contract = true) before the rung is refused, because
-- a fabricated tool has no contract, so such a stage cannot reject it.
-- @module toolgate.policy

local audit = require "toolgate.audit"
local core = require "toolgate.core"
local quota_mod = require "toolgate.quota"
local registry_mod = require "toolgate.registry"
local sandbox = require "toolgate.sandbox"
local shadow = require "toolgate.shadow"
local suggest = require "toolgate.suggest"

local M = {}

local BUILTIN = {
  rung = { reads_contract = false },
  gate = { reads_contract = true },
  verifier = { reads_contract = true },
  consistency = { reads_contract = true },
  quota = { reads_contract = false },
}
local BUILTIN_NAMES = { "rung", "gate", "verifier", "consistency", "quota" }

M.DEFAULT_STAGES = { "rung", "gate", "verifier" }
M.DEFAULT_RISK_LEVELS = { "none", "low", "medium", "high", "critical" }

local function invalid(where, msg)
  return nil, "policy " .. where .. ": " .. msg, "POLICY_INVALID"
end

-- The name of a field inside where: "registry.closed", "stages[2]".
local function at(where, key)
  if type(key) == "number" then return where .. "[" .. key .. "]" end
  key = tostring(key)
  return where == "" and key or where .. "." .. key
end

-- Kinds and ranges.  Each check takes a value and returns true, or nil, a
-- message and the part of the field's name below it ("[3]") when the
-- problem is inside.

local function describe(v)
  if type(v) == "string" then return string.format("%q", v) end
  return "a " .. type(v)
end

local function is_list(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" then return false end
    n = n + 1
  end
  for i = 1, n do
    if t[i] == nil then return false end
  end
  return true
end

local function is(kind, what)
  what = what or "a " .. kind
  return function(v)
    if type(v) == kind then return true end
    return nil, "must be " .. what .. ", not " .. describe(v)
  end
end
local boolean, a_function, a_table, a_string = is("boolean", "true or false"), is("function"), is("table"), is("string")

local function nonempty(v)
  if type(v) == "string" and v ~= "" then return true end
  return nil, "must be a non-empty string, not " .. describe(v)
end

local function one_of(...)
  local names = { ... }
  local quoted = {}
  for i, n in ipairs(names) do quoted[i] = string.format("%q", n) end
  local text = table.concat(quoted, ", ", 1, #quoted - 1) .. " or " .. quoted[#quoted]
  return function(v)
    for _, n in ipairs(names) do
      if v == n then return true end
    end
    return nil, "must be " .. text .. ", not " .. describe(v) .. suggest.hint(v, names)
  end
end

-- Counts (samples, instructions) are C ints where they end up.
local MAX_WHOLE = 2147483647

local function whole(lo)
  return function(v)
    if type(v) ~= "number" then return nil, "must be a number, not " .. describe(v) end
    if v ~= math.floor(v) or v < lo or v > MAX_WHOLE then
      return nil, string.format("must be a whole number from %d to 2^31-1", lo)
    end
    return true
  end
end

local function fraction(v)
  if type(v) ~= "number" then return nil, "must be a number, not " .. describe(v) end
  if not (v >= 0 and v <= 1) then return nil, "must be between 0 and 1" end
  return true
end

local function list_of(item, what)
  return function(v)
    if not is_list(v) then
      return nil, "must be " .. what .. ", not " .. (type(v) == "table" and "a table with named keys" or describe(v))
    end
    for i, x in ipairs(v) do
      local ok, msg, below = item(x)
      if not ok then return nil, msg, "[" .. i .. "]" .. (below or "") end
    end
    return true
  end
end
local strings = list_of(a_string, "a list of strings")

-- The keys of t in a stable order (pairs' order differs between Lua 5.4
-- and LuaJIT, and the first problem reported must not).
local function keys_of(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out, function(a, b)
    if type(a) ~= type(b) then return type(a) < type(b) end
    if type(a) == "number" or type(a) == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return out
end

-- An unknown key: named, with the valid one it most likely meant, or the
-- valid ones when none is close.
local function unknown(where, key, known, what)
  local hint = suggest.hint(key, known)
  return invalid(where, "unknown " .. what .. (hint ~= "" and hint or " (known: " .. table.concat(known, ", ") .. ")"))
end

-- check_fields(where, t, fields, what) -> true | nil, message, code: every
-- key of t is one of fields (key -> check), and its value passes the check.
local function check_fields(where, t, fields, what)
  local known = suggest.sorted_keys(fields)
  for _, k in ipairs(keys_of(t)) do
    local check = type(k) == "string" and fields[k]
    if not check then return unknown(at(where, k), k, known, what) end
    local ok, msg, below = check(t[k])
    if not ok then return invalid(at(where, k) .. (below or ""), msg) end
  end
  return true
end

-- Each built-in stage's settings: defaults, and the check each must pass.
local function risk_levels(v)
  if not is_list(v) then return nil, "must be a list of level names, lowest first, not " .. describe(v) end
  if #v == 0 then return nil, "must list at least one level, lowest first" end
  local seen = {}
  for i, level in ipairs(v) do
    if type(level) ~= "string" or level == "" then
      return nil, "must be a non-empty string, not " .. describe(level), "[" .. i .. "]"
    end
    if seen[level] then return nil, "repeats \"" .. level .. "\"", "[" .. i .. "]" end
    seen[level] = true
  end
  return true
end

local STAGE_SETTINGS = {
  rung = {
    report_also = { false, boolean },
  },
  gate = {
    risk_levels = { M.DEFAULT_RISK_LEVELS, risk_levels },
    admissible = { false, a_function },      -- false: the default rule
  },
  verifier = {
    require_contract = { false, boolean },   -- refuse calls to tools with nothing to verify
    on_mismatch = { "reject", one_of("reject", "defer") }, -- what a result that breaks the contract gets
  },
  consistency = {
    min_samples = { 5, whole(1) },
    max_samples = { 10000, whole(1) },      -- a limit: more samples are TOO_MANY_SAMPLES (reject)
    arg_accept = { 0.80, fraction },
    arg_reject = { 0.20, fraction },
    result_accept = { 0.80, fraction },
    result_quarantine = { 0.50, fraction },
    on_invalid = { "defer", one_of("defer", "reject") }, -- INSUFFICIENT_SAMPLES etc.
    quarantine = { true, boolean },         -- false: a RESULT_DISAGREE defers without quarantining
  },
}

local STAGE_CHECKS = {}
for name, spec in pairs(STAGE_SETTINGS) do
  STAGE_CHECKS[name] = {}
  for k, d in pairs(spec) do STAGE_CHECKS[name][k] = d[2] end
end

-- Shadow mode (toolgate.shadow): modes maps "server" or "server/tool" to
-- a mode; always_enforce lists codes, one a typo away from a code toolgate
-- writes being taken for that typo (it would leave that code shadowed).
local a_mode = one_of("enforce", "shadow")

local function check_modes(v)
  if type(v) ~= "table" then return nil, "must be a table, not " .. describe(v) end
  for _, k in ipairs(keys_of(v)) do
    local below = type(k) == "string" and string.format("[%q]", k) or "[" .. tostring(k) .. "]"
    if type(k) ~= "string" or not (k:find("^[^/]+$") or k:find("^[^/]+/.")) then
      return nil, 'a key is a server ("pay") or a server and a tool ("pay/transfer")', below
    end
    local ok, msg = a_mode(v[k])
    if not ok then return nil, msg, below end
  end
  return true
end

local KNOWN_CODE = {}
for _, code in ipairs(shadow.KNOWN_CODES) do KNOWN_CODE[code] = true end

local function check_always_enforce(v)
  if not is_list(v) then return nil, "must be a list of codes, not " .. describe(v) end
  for i, code in ipairs(v) do
    if type(code) ~= "string" or code == "" then return nil, "must be a code, not " .. describe(code), "[" .. i .. "]" end
    if not KNOWN_CODE[code] and suggest.closest(code, shadow.KNOWN_CODES) then
      return nil, string.format("%q is a typo away from a code toolgate writes", code)
        .. suggest.hint(code, shadow.KNOWN_CODES) .. "; a custom stage's own code may be listed, but not one a typo "
        .. "away", "[" .. i .. "]"
    end
  end
  return true
end

local TOP_LEVEL = {
  mode = a_mode, modes = check_modes, always_enforce = check_always_enforce,
  name = nonempty, version = nonempty, description = a_string, registry = a_table, limits = a_table,
  stages = a_table, rung = a_table, gate = a_table, verifier = a_table, consistency = a_table,
  contract = a_function, context = a_table, on_error = one_of("reject", "defer"), defer = a_table,
  budget = whole(1000), resolvers = a_table, mcp = a_table, audit = a_table,
  quota = a_table,
}

-- A stage's defer no longer stops the pipeline (a later reject must win),
-- so the setting that chose between the two is gone; say so to a policy
-- written for it.
local ON_DEFER_GONE = "on_defer was removed: after a defer the later stages always run, and a reject from any of them "
  .. "wins (delete the setting)"

local function stage_settings(p, name)
  local given = p[name] or {}
  if given.on_defer ~= nil then return invalid(name, ON_DEFER_GONE) end
  local ok, err, code = check_fields(name, given, STAGE_CHECKS[name], "setting")
  if not ok then return nil, err, code end
  local out = {}
  for k, d in pairs(STAGE_SETTINGS[name]) do
    if given[k] == nil then out[k] = d[1] else out[k] = given[k] end
  end
  return out
end

-- check_consistency(given, settings, warnings) -> true | nil, message,
-- code: the consistency settings' errors, and (into warnings) the
-- thresholds that make a verdict unreachable
local function check_consistency(given, c, warnings)
  if c.max_samples < c.min_samples then
    return invalid("consistency.max_samples", "must be a whole number from min_samples to 2^31-1")
  end
  if c.arg_reject > c.arg_accept then
    return invalid("consistency.arg_reject", "must not be above arg_accept")
  end
  -- The modal share of n samples is at least 1/n; with a strict "<", a
  -- reject needs 1/n < arg_reject for some n the policy accepts.  The
  -- defaults (5 and 0.20) are so on purpose, and docs/policies.md says it
  -- once: the warning is for settings of the policy's own.
  if (given.min_samples ~= nil or given.arg_reject ~= nil) and 1 / c.min_samples >= c.arg_reject then
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

M.check_consistency = check_consistency

-- The registry section: its sources, and the settings toolgate.registry
-- checks (closed, assert_formats, on_*, ...).
local function check_source(s)
  local ok, field, msg = registry_mod.check_source(s)
  if ok then return true end
  return nil, msg, field and "." .. field or nil
end

local list_of_sources = list_of(check_source, 'a list of registry files (paths, "SERVER=PATH" or tables)')
local function check_sources(v)
  if type(v) == "string" then
    return nil, string.format("must be a list of registry files, not a string (for one file: sources = { %q })", v)
  end
  return list_of_sources(v)
end

local REGISTRY_FIELDS = { sources = check_sources }
for k in pairs(registry_mod.DEFAULTS) do
  if k ~= "resolvers" then REGISTRY_FIELDS[k] = function() return true end end -- checked by toolgate.registry
end

local function check_registry(registry)
  if registry.resolvers ~= nil then
    return invalid("registry.resolvers", "resolvers are a field of the policy itself (resolvers = {...}, beside "
      .. "registry), not a registry setting")
  end
  local ok, err, code = check_fields("registry", registry, REGISTRY_FIELDS, "setting")
  if not ok then return nil, err, code end
  local settings = {}
  for k, v in pairs(registry) do
    if k ~= "sources" then settings[k] = v end
  end
  local s, key, msg = registry_mod.check_settings(settings)
  if not s then return invalid("registry." .. key, msg) end
  return settings
end

-- The core's limits: their names and kinds here, their ranges the core's
-- own (tg_engine_new names a limit outside its range).
local function a_limit(v)
  if type(v) ~= "number" then return nil, "must be a number, not " .. describe(v) end
  if v ~= math.floor(v) or v < 0 or v > 2 ^ 53 then return nil, "must be a whole number (docs/limits.md)" end
  return true
end

local LIMIT_CHECKS = {}
for k in pairs(core.default_limits()) do LIMIT_CHECKS[k] = a_limit end

local function check_limits(limits)
  local ok, err, code = check_fields("limits", limits, LIMIT_CHECKS, "limit")
  if not ok then return nil, err, code end
  for _, k in ipairs(keys_of(limits)) do
    local e, why = core.new_engine({ [k] = limits[k] })
    if not e then return invalid("limits." .. k, why) end
  end
  return true
end

-- The context's keys toolgate reads; a context may hold others (a custom
-- stage or gate rule reads them), but a key one typo away from one of
-- these is taken for that typo: a "scope" would otherwise grant nothing,
-- silently.
local CONTEXT_KEYS = {
  scopes = strings, max_risk = a_string, epoch = function() return true end, server = a_string,
  observed_effects = strings,
}
local CONTEXT_KEY_NAMES = suggest.sorted_keys(CONTEXT_KEYS)

local function check_context(context, levels)
  for _, k in ipairs(keys_of(context)) do
    local check = CONTEXT_KEYS[k]
    if check then
      local ok, msg, below = check(context[k])
      if not ok then return invalid(at("context", k) .. (below or ""), msg) end
    elseif suggest.closest(k, CONTEXT_KEY_NAMES) then
      return invalid(at("context", k), "unknown key" .. suggest.hint(k, CONTEXT_KEY_NAMES) .. "; a context may "
        .. "hold keys of your own, but not one a typo away from a key toolgate reads")
    end
  end
  local max_risk, known = context.max_risk, {}
  for _, l in ipairs(levels) do known[l] = true end
  if max_risk ~= nil and not known[max_risk] then
    return invalid("context.max_risk", string.format("%q is not one of the risk levels (%s)", tostring(max_risk),
      table.concat(levels, ", ")) .. suggest.hint(max_risk, levels))
  end
  return true
end

-- Resolvers: name -> an alias table {alias = canonical id} or a function.
local function check_resolvers(resolvers)
  for _, k in ipairs(keys_of(resolvers)) do
    local r, where = resolvers[k], at("resolvers", k)
    if type(k) ~= "string" then return invalid(where, "a resolver needs a name (resolvers = { name = ... })") end
    if type(r) == "table" then
      for _, alias in ipairs(keys_of(r)) do
        if type(alias) ~= "string" or type(r[alias]) ~= "string" then
          return invalid(at(where, alias), "an alias table maps strings (aliases) to strings (canonical ids)")
        end
      end
    elseif type(r) ~= "function" then
      return invalid(where, "must be an alias table or a function, not " .. describe(r))
    end
  end
  return true
end

local CUSTOM_STAGE_FIELDS = { name = nonempty, run = a_function, reads_contract = boolean, code = nonempty }

-- Normalizes and checks the stage list; returns the stage records.
local function build_stages(p, settings)
  local list = p.stages or M.DEFAULT_STAGES
  if not is_list(list) then return invalid("stages", "must be a list of stages, in order") end
  local stages, seen, rung_at = {}, {}, nil
  for i, s in ipairs(list) do
    local rec
    local where = at("stages", i)
    if type(s) == "string" then
      if not BUILTIN[s] then
        return invalid(where, "unknown stage \"" .. s .. "\" (built-in: rung, gate, verifier, consistency, quota)"
          .. suggest.hint(s, BUILTIN_NAMES))
      end
      rec = { name = s, builtin = true, reads_contract = BUILTIN[s].reads_contract, settings = settings[s],
              quota = s == "quota" or nil }
    elseif type(s) == "table" then
      if s.on_defer ~= nil then return invalid(where, ON_DEFER_GONE) end
      local ok, err, code = check_fields(where, s, CUSTOM_STAGE_FIELDS, "field")
      if not ok then return nil, err, code end
      if s.name == nil then return invalid(where, "a custom stage needs a name") end
      if BUILTIN[s.name] then return invalid(at(where, "name"), "\"" .. s.name .. "\" is a built-in stage's name") end
      if s.run == nil then return invalid(where, "a custom stage needs a run function") end
      rec = { name = s.name, custom = true, run = s.run, reads_contract = s.reads_contract == true,
              code = s.code or s.name:upper(), settings = {} }
    else
      return invalid(where, "must be a stage name or a stage table, not " .. describe(s))
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
    if stages[#stages] and stages[#stages].quota then
      return nil, "policy stages: \"quota\" must be the last stage: it counts a call only once every other stage "
        .. "let it through, and a stage after it could still refuse or defer a call it counted", "POLICY_ORDER"
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

-- The quota section and the "quota" stage go together: rules without the
-- stage would limit nothing, silently.  -> the compiled rules | nil (no
-- quota) | nil, message, code
local function check_quota(p, stages)
  local stage
  for _, st in ipairs(stages) do if st.quota then stage = st end end
  if p.quota == nil then
    if stage then return invalid("quota", "the \"quota\" stage needs quota = { rules = { ... } }") end
    return nil
  end
  if not stage then
    return invalid("quota", "quota rules limit nothing unless \"quota\" is in stages (last: stages = { \"rung\", "
      .. "\"gate\", \"verifier\", \"quota\" })")
  end
  local compiled, why, below = quota_mod.compile(p.quota)
  if not compiled then return invalid("quota" .. (below or ""), why) end
  stage.settings = compiled
  return compiled
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

-- Where the shipped policies are.  `make install` writes its POLICYDIR here.
local INSTALLED_DIR = nil

-- The directory this module was loaded from, when it was a file.
local function module_dir()
  local info = debug.getinfo(1, "S")
  return info and info.source:match("^@(.*)/[^/]*$")
end

--- The directories a shipped policy is looked for in, by name, in order:
-- $TOOLGATE_POLICY_DIR alone when it is set; else the POLICYDIR of `make
-- install`, the modules' own toolgate/policies/ (where the LuaRocks build
-- puts them) and a source tree's policies/.
function M.shipped_dirs()
  local env = os.getenv("TOOLGATE_POLICY_DIR")
  if env and env ~= "" then return { env } end
  local dirs = { INSTALLED_DIR }
  local here = module_dir()
  if here then
    dirs[#dirs + 1] = here .. "/policies"
    local root = here:match("^(.*)/lua/toolgate$") or ((here == "lua/toolgate" or here == "./lua/toolgate") and ".")
    if root then dirs[#dirs + 1] = root .. "/policies" end
  end
  return dirs
end

--- resolve(arg) -> path | nil, message: a policy named as --policy and
-- toolgate.new{policy = ...} name one.  An argument with a slash or ending
-- in .lua is a path; any other is the name of a shipped policy ("strict").
function M.resolve(arg)
  if arg:find("/", 1, true) or arg:match("%.lua$") then return arg end
  local dirs = M.shipped_dirs()
  for _, dir in ipairs(dirs) do
    local path = dir .. "/" .. arg .. ".lua"
    local f = io.open(path, "rb")
    if f then
      f:close()
      return path
    end
  end
  return nil, string.format("no shipped policy named '%s' in %s (a policy file of your own: give its path, "
    .. "./%s.lua)", arg, #dirs > 0 and table.concat(dirs, " or ") or "any known directory", arg)
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
  local ok, err, code = check_fields("", p, TOP_LEVEL, "field")
  if not ok then return nil, err, code end
  if not p.name or not p.version then return invalid("name/version", "both are required strings") end
  local on_error = p.on_error or "reject"
  local budget = p.budget or sandbox.DEFAULT_BUDGET

  local settings, warnings = {}, {}
  for _, name in ipairs(suggest.sorted_keys(STAGE_SETTINGS)) do
    local s
    s, err, code = stage_settings(p, name)
    if not s then return nil, err, code end
    settings[name] = s
  end
  local stages
  stages, err, code = build_stages(p, settings)
  if not stages then return nil, err, code end
  local quota
  quota, err, code = check_quota(p, stages)
  if not quota and err then return nil, err, code end
  local has_consistency = false
  for _, st in ipairs(stages) do has_consistency = has_consistency or st.name == "consistency" end
  -- the warnings concern the consistency stage: only a pipeline with it
  ok, err, code = check_consistency(p.consistency or {}, settings.consistency, has_consistency and warnings or {})
  if not ok then return nil, err, code end
  local context = p.context or {}
  ok, err, code = check_context(context, settings.gate.risk_levels)
  if ok and p.limits then ok, err, code = check_limits(p.limits) end
  if ok and p.resolvers then ok, err, code = check_resolvers(p.resolvers) end
  if ok and p.defer then ok, err, code = check_fields("defer", p.defer, { requires_approval = boolean }, "setting") end
  if not ok then return nil, err, code end
  local audit_settings, audit_err = audit.settings(p.audit)
  if not audit_settings then return invalid("audit", audit_err) end
  local registry_settings
  registry_settings, err, code = check_registry(p.registry or {})
  if not registry_settings then return nil, err, code end

  local sources = {}
  for i, s in ipairs((p.registry or {}).sources or {}) do
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
  local defer = p.defer or {}

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
    context = context,
    on_error = on_error,
    requires_approval = defer.requires_approval == true,
    budget = budget,
    resolvers = p.resolvers,
    mcp = p.mcp, -- checked by toolgate.mcp, which reads it
    quota = quota, -- the compiled rules (toolgate.quota), when "quota" is a stage
    shadow = shadow.compile(p), -- nil: every decision enforced
    audit = audit_settings, -- what the audit records show of the arguments (toolgate.audit)
    warnings = warnings,
    given = p, -- the table as the file wrote it (toolgate policy lint reads what it sets)
  }
end

return M
