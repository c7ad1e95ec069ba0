--- toolgate.lint: what is legal in a policy but likely wrong.
--
-- The loader (toolgate.policy) refuses what cannot work; this module reads
-- a policy that loads and says what will probably not do what its author
-- meant: a verdict its thresholds make unreachable, a custom stage that
-- reads the tool's contract without asking for it (it gets nil: every call
-- it sees fails with POLICY_ERROR), a gate rule that never refuses on the
-- author's own cases, context keys the policy reads that no context gives,
-- settings that only repeat the defaults.  Each finding carries the line of
-- the policy file where Lua can tell it: a function's from debug.getinfo, a
-- setting's from where its key is written in the file's text.
-- @module toolgate.lint

local core = require "toolgate.core"
local decision = require "toolgate.decision"
local policy_mod = require "toolgate.policy"
local registry_mod = require "toolgate.registry"
local sandbox = require "toolgate.sandbox"
local value = require "toolgate.value"

local M = {}

-- spelled(v) -> v's canonical JSON, or nil for a value with functions in it
local function spelled(v)
  local text = value.encode(v)
  if not text then return nil end
  local doc = assert(decision.codec():parse(text))
  text = assert(doc:root():canon())
  doc:free()
  return text
end

-- The file's text with its comments blanked (newlines kept), so a key
-- named in a comment is not taken for the key.
local function code_only(text)
  text = text:gsub("%-%-%[(=*)%[.-%]%1%]", function(c) return (c:gsub("[^\n]", " ")) end)
  return (text:gsub("%-%-[^\n]*", function(c) return (" "):rep(#c) end))
end

local function line_at(text, pos)
  local _, n = text:sub(1, pos):gsub("\n", "")
  return n + 1
end

-- key_line(code, "consistency.min_samples") -> the line its key is
-- written on, or nil: each part looked for after the one before it.
local function key_line(code, path)
  local pos = 1
  for part in path:gmatch("[^.]+") do
    local at = code:find("%f[%w_]" .. part .. "%s*=", pos)
    if not at then return nil end
    pos = at
  end
  return line_at(code, pos)
end

-- The parameter names of a Lua function, in order.
local function params(fn)
  local out = {}
  for i = 1, 8 do
    local name = debug.getlocal(fn, i)
    if not name then break end
    out[i] = name
  end
  return out
end

-- What the text around a read says of it: a read with a fallback
-- (ctx.x or default) or a comparison with nil (ctx.x ~= nil, type(ctx.x))
-- expects the key may be absent.  A truthiness test (if ctx.x then, not
-- ctx.x) is how a flag is read, so it stays a read: a typo there (not
-- ctx.incident_id, docs/policies.md's worked example) only ever takes one
-- branch.  An operand of arithmetic, a comparison or .. is a read whatever
-- follows: in now < ctx.limit or ..., the or is not ctx.limit's fallback.
local FALLBACK_AFTER = "^%s*or%f[^%w_]"
local TESTED_AFTER = { "^%s*[~=]=%s*nil%f[^%w_]" }
local TESTED_BEFORE = { "%f[%w_]nil%s*[~=]=%s*$", "%f[%w_]type%s*%(%s*$" }
local OPERAND_BEFORE = { "%f[%w_]not%s*$", "[<>]=?%s*$", "[=~]=%s*$", "[%+%-%*/%%%^]%s*$", "%.%.%s*$" }

local function how_read(body, from, to)
  local after, before = body:sub(to), body:sub(math.max(1, from - 16), from - 1)
  for _, p in ipairs(TESTED_BEFORE) do
    if before:find(p) then return "tested" end
  end
  for _, p in ipairs(OPERAND_BEFORE) do
    if before:find(p) then return "bare" end
  end
  if after:find(FALLBACK_AFTER) then return "fallback" end
  for _, p in ipairs(TESTED_AFTER) do
    if after:find(p) then return "tested" end
  end
  return "bare"
end

-- reads(code, fn, name) -> { {key =, line =, how =}, ... }: every read the
-- body of fn makes off its parameter called name (name.key, name["key"]),
-- in the order of the text; how is "fallback", "tested" or "bare" (see
-- how_read).  The scan is of the text, not a parse: a fallback may span
-- lines, and a string that spells name.key counts as a read.
local function reads(code, fn, name)
  local info = debug.getinfo(fn, "S")
  if not name or info.what ~= "Lua" or info.linedefined < 1 then return {} end
  local lines, n = {}, 0
  for line in (code .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if n >= info.linedefined and n <= info.lastlinedefined then lines[#lines + 1] = line end
  end
  local body = table.concat(lines, "\n")
  local out = {}
  for _, pattern in ipairs({ "()%f[%w_]" .. name .. "%s*%.%s*([%a_][%w_]*)()",
                             "()%f[%w_]" .. name .. "%s*%[%s*[\"']([^\"']+)[\"']%s*%]()" }) do
    for from, key, to in body:gmatch(pattern) do
      local _, breaks = body:sub(1, from):gsub("\n", "")
      out[#out + 1] = { key = key, line = info.linedefined + breaks, how = how_read(body, from, to), at = from }
    end
  end
  table.sort(out, function(a, b) return a.at < b.at end)
  return out
end

local function fn_line(fn)
  local info = debug.getinfo(fn, "S")
  return info.what == "Lua" and info.linedefined > 0 and info.linedefined or nil
end

-- The settings a policy may give, with the value each has when it does not.
local function defaults()
  local builtin = assert(policy_mod.load(policy_mod.builtin_default()))
  local d = {}
  for section, settings in pairs(builtin.settings) do
    for k, v in pairs(settings) do d[section .. "." .. k] = v end
  end
  d["gate.admissible"] = nil -- a function is never the default's
  for k, v in pairs(registry_mod.DEFAULTS) do d["registry." .. k] = v end
  for k, v in pairs(core.default_limits()) do d["limits." .. k] = v end
  d.on_error, d.budget, d.stages = "reject", sandbox.DEFAULT_BUDGET, policy_mod.DEFAULT_STAGES
  d["defer.requires_approval"] = false
  return d
end

--- line_of(text, "consistency.min_samples") -> the line of a policy file's
-- text a setting's key is written on, or nil
function M.line_of(text, path) return key_line(code_only(text), path) end

local SECTIONS = { "registry", "rung", "gate", "verifier", "consistency", "limits", "defer" }

-- noise(given, code) -> findings: the settings the file gives the value
-- they have anyway
local function noise(given, code)
  local d, out = defaults(), {}
  local function check(path, v)
    local default = d[path]
    local text = type(v) ~= "function" and spelled(v)
    if default ~= nil and text and text == spelled(default) then
      out[#out + 1] = { severity = "note", line = key_line(code, path),
        message = string.format("%s = %s is the default: the line can go", path, text) }
    end
  end
  for _, k in ipairs({ "stages", "on_error", "budget" }) do
    if given[k] ~= nil then check(k, given[k]) end
  end
  for _, section in ipairs(SECTIONS) do
    local t = given[section]
    if type(t) == "table" then
      local keys = {}
      for k in pairs(t) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do check(section .. "." .. k, t[k]) end
    end
  end
  return out
end

-- unreachable(pol, code) -> findings: thresholds under which a verdict of
-- the decision table cannot happen (the loader's own warnings, whether or
-- not the pipeline lists the stage: classify runs it anyway)
local function unreachable(pol, code)
  local c, given, out = pol.settings.consistency, pol.given.consistency or {}, {}
  local warnings = {}
  policy_mod.check_consistency(given, c, warnings)
  local function add(path, message)
    out[#out + 1] = { severity = "warning", line = key_line(code, path) or key_line(code, "consistency"),
      message = message }
  end
  for _, w in ipairs(warnings) do
    add(w:find("min_samples", 1, true) and "consistency.arg_reject" or "consistency.result_quarantine", w)
  end
  if c.arg_reject == c.arg_accept then
    add("consistency.arg_accept", string.format("consistency: arg_accept = arg_reject = %.2f leaves no band for "
      .. "ARG_UNSTABLE: every plan is either accepted on its arguments or refused", c.arg_accept))
  end
  if c.arg_reject == 0 then
    add("consistency.arg_reject", "consistency: arg_reject = 0 makes ARG_DISAGREE unreachable (no share of "
      .. "samples is below 0)")
  end
  if c.result_quarantine == c.result_accept then
    add("consistency.result_quarantine", string.format("consistency: result_quarantine = result_accept = %.2f "
      .. "makes RESULT_UNSTABLE unreachable", c.result_accept))
  end
  return out
end

-- contract_reads(pol, code) -> findings: custom stages that read their tool
-- argument without reads_contract = true (they get nil there)
local function contract_reads(pol, code)
  local out = {}
  for _, st in ipairs(pol.stages) do
    if st.custom and not st.reads_contract then
      local used = reads(code, st.run, params(st.run)[2])
      if #used > 0 then
        out[#out + 1] = { severity = "warning", line = used[1].line,
          message = string.format("stage %q reads its tool argument (%s.%s) but does not declare reads_contract = "
            .. "true: it gets nil there, so every call it sees fails with POLICY_ERROR", st.name,
            params(st.run)[2], used[1].key) }
      end
    end
  end
  return out
end

-- The functions that read the context, and which parameter holds it.
local function context_readers(pol)
  local out = {}
  local admissible = pol.settings.gate.admissible
  if admissible then out[#out + 1] = { fn = admissible, param = params(admissible)[2], what = "gate.admissible" } end
  for _, st in ipairs(pol.stages) do
    if st.custom then out[#out + 1] = { fn = st.run, param = params(st.run)[3], what = "stage " .. st.name } end
  end
  return out
end

-- context_keys(pol, code, provided) -> findings: context keys read that no
-- context given to lint (the policy's, --context, the cases') holds, at
-- their first bare read; a key the function tests for presence anywhere,
-- or reads only with a fallback (ctx.now or os.time()), it expects absent
local function context_keys(pol, code, provided)
  local out = {}
  for _, r in ipairs(context_readers(pol)) do
    local used = reads(code, r.fn, r.param)
    local tested, bare, order = {}, {}, {}
    for _, use in ipairs(used) do
      if use.how == "tested" then tested[use.key] = true end
      if use.how == "bare" and not bare[use.key] then
        bare[use.key] = use
        order[#order + 1] = use
      end
    end
    for _, use in ipairs(order) do
      if not provided[use.key] and not tested[use.key] then
        out[#out + 1] = { severity = "warning", line = use.line,
          message = string.format("%s reads %s.%s, which no context given here holds (the policy's context, "
            .. "--context, the cases'): a typo, or a key the operator must be told to set", r.what, r.param,
            use.key) }
      end
    end
  end
  return out
end

-- admissible_refusals(pol, outcomes) -> findings: a gate rule that refused
-- none of the cases (it may never return false)
local function admissible_refusals(pol, outcomes)
  local admissible = pol.settings.gate.admissible
  if not admissible or not outcomes then return {} end
  local reached, refused = 0, 0
  for _, list in ipairs(outcomes) do
    for _, d in ipairs(list) do
      for _, st in ipairs(d.stages or {}) do
        if st == "gate" then reached = reached + 1 end
      end
      if d.stage == "gate" and d.verdict == "reject" then refused = refused + 1 end
    end
  end
  if refused > 0 then return {} end
  return { { severity = "warning", line = fn_line(admissible), message = string.format(
    "gate.admissible refused none of the %d cases (%d of their decisions ran it): it may never return false; add a "
    .. "case it must refuse", #outcomes, reached) } }
end

--- lint(pol, text[, opts]) -> list of findings {severity = "warning" |
-- "note", line = N | nil, message =}, in the order of the file's lines
-- @param pol a policy record (toolgate.policy.load) loaded from a file
-- @param text the file's text
-- @param[opt] opts.contexts a list of the contexts the policy will see
-- (--context, each case's), opts.outcomes the cases' decisions (a list,
-- per case, of decision tables): without them, no finding needs them
function M.lint(pol, text, opts)
  opts = opts or {}
  local code = code_only(text)
  local provided = {}
  for k in pairs(pol.context or {}) do provided[k] = true end
  for _, ctx in ipairs(opts.contexts or {}) do
    for k in pairs(ctx) do provided[k] = true end
  end
  local all = {}
  for _, group in ipairs({ unreachable(pol, code), contract_reads(pol, code), context_keys(pol, code, provided),
    admissible_refusals(pol, opts.outcomes), noise(pol.given, code) }) do
    for _, f in ipairs(group) do all[#all + 1] = f end
  end
  for i, f in ipairs(all) do f.order = i end
  table.sort(all, function(a, b)
    local la, lb = a.line or 0, b.line or 0
    if la ~= lb then return la < lb end
    return a.order < b.order
  end)
  return all
end

return M
