-- toolgate test: a policy's behaviour pinned by cases, each a call (or a
-- plan) and the decision fields it must get.  The calls go through
-- engine:check_all and the plans through engine:classify: the very entries
-- check and classify decide with, so a case decides as the command would.
local cli = require "toolgate.cli"
local decision = require "toolgate.decision"
local json = require "toolgate.json"
local sandbox = require "toolgate.sandbox"
local value = require "toolgate.value"

local M = {}

M.usage = [[
usage: toolgate test [--policy FILE|NAME] [--registry [SERVER=]FILE]... [--context FILE]
                     [--update] CASES...

Runs each case of the CASES files under the policy and compares the
decision with what the case expects.  A case file is JSON Lines, one case
per line (blank lines are skipped), or a Lua file (.lua) returning a list
of cases.  A case:
  {"call": CALL | "plan": PLAN, "context": {...}, "expect": {...}, "name": "..."}
  call     a tool call in any shape toolgate check reads (native, OpenAI,
           Anthropic, MCP; a message holding several calls too)
  plan     a plan-sample set as toolgate classify reads it
  context  the operator's context for this case (optional), merged over
           --context and the policy's own
  expect   the decision's fields this case pins: any top-level field
           ("verdict", "code", "stage", "path", "disagreeing", ...), each
           compared whole; null pins a field as absent.  For a call that
           holds several calls, a list: one object per decision, in order
  name     a label shown with the case's failure (optional)
The cases of one file run in order on one engine, as the lines of one
check or classify run do: a quarantine a plan causes holds for the plans
after it.  Each file gets an engine of its own.

Prints one line per failing case, FILE:LINE: and what differs
(field: expected X, got Y), then the decisions it got ("decision: CODE
from STAGE: message": a policy function that failed gives POLICY_ERROR
and its error, with the policy file's name and line), then "N passed,
N failed".

  --policy FILE|NAME        the policy under test (default: default)
  --registry [SERVER=]FILE  registry files (repeatable), added to the policy's
  --assert-formats          check every "format" the tools' schemas use, as
                            toolgate check --assert-formats does
  --context FILE            a context (a JSON object) under every case's own
  --explain                 under each failing case, the trace of each of
                            its decisions (as toolgate check --explain writes
                            it): a line per stage that ran, with what it said,
                            its CPU time, what it looked at and, for a policy
                            function, what it returned and the instructions
                            it used (and, when it failed, its error, with
                            the file and line)
  --update                  write each case's current outcome as its
                            expectation (the fields it already expects; a
                            case that expects nothing gets verdict, code,
                            stage and path): for a reviewed baseline.  Lines
                            whose outcome changed are rewritten in canonical
                            form, the others are left as they are.  JSON
                            Lines files only

exit status: 0 every case passed (or --update wrote them), 1 a case
failed, 2 bad usage, a case file that cannot be read or holds no case
(a run that lost its cases must not pass), or a policy or registry that
cannot be loaded
]]

local CASE_FIELDS = { call = true, plan = true, context = true, expect = true, name = true }
local DEFAULT_FIELDS = { "verdict", "code", "stage", "path" }

-- canonical(v) -> one spelling of a Lua value as JSON (sorted keys, every
-- digit of a number kept: RFC 8785 would round 2^53 + 1), for comparing and
-- for the lines --update writes
local function canonical(v)
  local doc = assert(decision.codec():parse(assert(value.encode(v))))
  local text = assert(doc:root():canon(nil, "exact"))
  doc:free()
  return text
end

local function load_error(where, msg) return nil, where .. ": " .. msg end

-- check_case(case, where) -> true | nil, message
local function check_case(case, where)
  if type(case) ~= "table" or getmetatable(case) == value.array_mt then
    return load_error(where, "a case must be an object")
  end
  for k in pairs(case) do
    if not CASE_FIELDS[k] then
      return load_error(where, string.format("unknown member %q (a case has call or plan, context, expect, name)",
        tostring(k)))
    end
  end
  if (case.call == nil) == (case.plan == nil) then
    return load_error(where, "a case needs exactly one of \"call\" and \"plan\"")
  end
  if case.context ~= nil and (type(case.context) ~= "table" or getmetatable(case.context) == value.array_mt) then
    return load_error(where, "\"context\" must be an object")
  end
  if case.expect ~= nil and type(case.expect) ~= "table" then
    return load_error(where, "\"expect\" must be an object (or a list of them)")
  end
  return true
end

-- read_cases(path, codec) -> { {case =, line =, where =}, ... }, kind | nil, message
-- (also toolgate policy lint's: the cases it reads the gate's outcomes from)
function M.read_cases(path, codec)
  local text = cli.read_all("test", path)
  if not text then return nil end
  local cases = {}
  if path:match("%.lua$") then
    local list, err = sandbox.load(text, "@" .. path)
    if list == nil then return load_error(path, tostring(err)) end
    if type(list) ~= "table" then return load_error(path, "must return a list of cases") end
    for i, case in ipairs(list) do
      local ok, cerr = check_case(case, path .. ": case " .. i)
      if not ok then return nil, cerr end
      cases[#cases + 1] = { case = case, where = path .. ": case " .. i }
    end
    return cases, "lua"
  end
  local n = 0
  for line in (text:gsub("\n$", "") .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local where = path .. ":" .. n
    if line:find("%S") then
      local case, err, code, offset = json.decode(codec, line)
      if case == nil then return load_error(where, cli.describe(err, code, offset)) end
      local ok, cerr = check_case(case, where)
      if not ok then return nil, cerr end
      cases[#cases + 1] = { case = case, line = n, where = where }
    end
  end
  return cases, "jsonl", n
end

-- outcome(engine, case, base_ctx) -> the case's decisions, a list of tables
function M.outcome(engine, case, base_ctx)
  local ctx = {}
  for k, v in pairs(base_ctx) do ctx[k] = v end
  for k, v in pairs(case.context or {}) do ctx[k] = v end
  if case.plan ~= nil then
    local plan = type(case.plan) == "string" and case.plan or assert(value.encode(case.plan))
    return { engine:classify(plan, ctx):table() }
  end
  local call = type(case.call) == "string" and case.call or assert(value.encode(case.call))
  local out = {}
  for i, d in ipairs(engine:check_all(call, ctx)) do out[i] = d:table() end
  return out
end

-- expectations(expect) -> list of objects (a single object is a list of one)
local function expectations(expect)
  if expect == nil then return {} end
  if getmetatable(expect) == value.array_mt or expect[1] ~= nil then return expect end
  return { expect }
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function shown(v)
  if v == nil then return "absent" end
  return canonical(v)
end

-- differences(expected list, got list) -> list of "field: expected X, got Y"
local function differences(want, got)
  local out = {}
  if #want ~= #got then
    out[1] = string.format("decisions: expected %d, got %d", #want, #got)
  end
  for i = 1, math.min(#want, #got) do
    local prefix = #want > 1 and ("[" .. (i - 1) .. "] ") or ""
    for _, field in ipairs(sorted_keys(want[i])) do
      local w, g = want[i][field], got[i][field]
      if w == value.null then w = nil end
      if (w == nil) ~= (g == nil) or (w ~= nil and canonical(w) ~= canonical(g)) then
        out[#out + 1] = string.format("%s%s: expected %s, got %s", prefix, field, shown(w), shown(g))
      end
    end
  end
  return out
end

-- one_line(message) -> the message with no line break (a reason a policy
-- wrote may hold one): a failing case is one line
local function one_line(message) return (tostring(message):gsub("%c", " ")) end

-- decided(got) -> "decision: CODE from STAGE: message" for each decision
-- that has a code, so a failing case says why it got what it got (a
-- policy function's error, with its file and line, among them)
local function decided(got)
  local out = {}
  for i, d in ipairs(got) do
    if d.code ~= nil then
      out[#out + 1] = string.format("decision%s: %s from %s%s", #got > 1 and (" [" .. (i - 1) .. "]") or "",
        tostring(d.code), tostring(d.stage), d.message ~= nil and (": " .. one_line(d.message)) or "")
    end
  end
  return out
end

-- updated(case, got) -> the case's expectation from its outcome: the fields
-- it already expects (over all its objects), or the DEFAULT_FIELDS
local function updated_expect(case, got)
  local fields = {}
  for _, e in ipairs(expectations(case.expect)) do
    for k in pairs(e) do fields[k] = true end
  end
  local list = sorted_keys(fields)
  if #list == 0 then list = DEFAULT_FIELDS end
  local out = setmetatable({}, value.array_mt)
  for i, d in ipairs(got) do
    local e = {}
    for _, k in ipairs(list) do
      if d[k] ~= nil then e[k] = d[k] elseif fields[k] then e[k] = value.null end
    end
    out[i] = e
  end
  if #out == 1 then return out[1] end
  return out
end

-- Each decision's trace, a line per stage, under a failing case.
local function write_traces(got)
  for i, d in ipairs(got) do
    if #got > 1 then cli.out("  [", i - 1, "]\n") end
    for _, e in ipairs(d.explain or {}) do
      local said = e.said == "pass" and "pass" or (e.said.verdict .. " " .. tostring(e.said.code))
      cli.out("  ", e.stage, ": ", said, " (", e.cpu_us, " us) looked at ", canonical(e.looked_at))
      if e.budget then
        cli.out("; returned ", e.returned == value.null and "nothing" or canonical(e.returned),
          ", ", e.instructions, " of ", e.budget, " instructions")
        -- a function that failed, or returned what a stage cannot return: why, with the file and line
        if e.said ~= "pass" and e.said.code == "POLICY_ERROR" then cli.out(": ", one_line(e.said.message)) end
      end
      cli.out("\n")
    end
  end
end

local function write_file(path, text)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  f:close()
  if not ok then return nil, werr end
  return true
end

-- rewrite(path, replaced) -> true | nil, message: the file with the lines
-- in replaced (line number -> new text) swapped in
local function rewrite(path, replaced)
  local text = assert(cli.read_all("test", path))
  local out, n = {}, 0
  local ends_in_newline = text:sub(-1) == "\n"
  for line in (ends_in_newline and text or text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    out[n] = replaced[n] or line
  end
  return write_file(path, table.concat(out, "\n") .. (ends_in_newline and "\n" or ""))
end

-- run_file(opts, path, base_ctx, warn, update) -> passed, failed | nil (after a diagnostic)
local function run_file(opts, path, base_ctx, warn, update)
  local engine = cli.load_engine("test", opts, { explain = opts.explain }, warn)
  if not engine then return nil end
  local cases, kind = M.read_cases(path, engine:snapshot().core)
  if not cases then
    if kind then cli.diag("test", kind) end
    return nil
  end
  if update and kind ~= "jsonl" then
    cli.diag("test", path .. ": --update rewrites JSON Lines case files only")
    return nil
  end
  if #cases == 0 then
    cli.diag("test", path .. ": no case in it (a run that lost its cases must not pass)")
    return nil
  end
  if not update then
    for _, c in ipairs(cases) do
      if c.case.expect == nil then
        cli.diag("test", c.where .. ": a case needs \"expect\" (toolgate test --update writes it)")
        return nil
      end
    end
  end
  local passed, failed, replaced, changed = 0, 0, {}, false
  for _, c in ipairs(cases) do
    local got = M.outcome(engine, c.case, base_ctx)
    local diff = differences(expectations(c.case.expect), got)
    if update then
      if #diff > 0 or c.case.expect == nil then
        c.case.expect = updated_expect(c.case, got)
        replaced[c.line] = canonical(c.case)
        changed = true
        cli.out(c.where, ": updated\n")
      end
    elseif #diff == 0 then
      passed = passed + 1
    else
      failed = failed + 1
      local label = c.case.name and (tostring(c.case.name) .. ": ") or ""
      for _, why in ipairs(decided(got)) do diff[#diff + 1] = why end
      cli.out(c.where, ": ", label, table.concat(diff, "; "), "\n")
      if opts.explain then write_traces(got) end
    end
  end
  if changed then
    local ok, err = rewrite(path, replaced)
    if not ok then
      cli.diag("test", "cannot write " .. path .. ": " .. tostring(err))
      return nil
    end
  end
  if update then passed = #cases end
  return passed, failed
end

function M.run(args)
  local opts, pos = cli.parse(args, {
    flags = { update = true, explain = true, ["assert-formats"] = true },
    options = { policy = true, context = true },
    multi = { registry = true },
  })
  if #pos == 0 then cli.usage_error("no CASES file") end
  local base_ctx = {}
  if opts.context then
    base_ctx = cli.read_context("test", decision.codec(), opts.context)
    if not base_ctx then return cli.EXIT_USAGE end
  end
  local passed, failed = 0, 0
  for i, path in ipairs(pos) do
    local p, f = run_file(opts, path, base_ctx, i == 1, opts.update)
    if not p then return cli.EXIT_USAGE end
    passed, failed = passed + p, failed + f
  end
  if opts.update then
    cli.out(passed, " cases written\n")
    return cli.EXIT_OK
  end
  cli.out(passed, " passed, ", failed, " failed\n")
  return failed > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
