-- toolgate log --shadow: what shadow mode let run that enforce would have
-- refused (toolgate.shadow), summed up from decision records: a group per
-- server, tool, code and verdict, with its count, the first and last time
-- and up to MAX_EXAMPLES distinct arguments (when the records hold them),
-- so that a person can decide which tools to enforce.
local cli = require "toolgate.cli"
local decision = require "toolgate.decision"
local json = require "toolgate.json"
local value = require "toolgate.value"

local M = {}

M.MAX_EXAMPLES = 2
-- the longest example a table row shows (--json gives them whole)
local SHOWN_BYTES = 60

--- new() -> an empty report
function M.new() return { by_key = {}, list = {}, lines = 0 } end

-- A record a shadowed decision's: the audit record says enforced false, and
-- so does its decision (a record of an older shape, the decision alone).
local function shadowed(r)
  return type(r) == "table" and type(r.decision) == "table" and (r.enforced == false or r.decision.enforced == false)
end

--- add(report, line): one line of a decision log, read; any other record
-- (an accept, an approval, a pin change, a line that is not JSON) is
-- passed over.
function M.add(report, line)
  local r = json.decode(decision.codec(), line)
  if not shadowed(r) then return end
  local d = r.decision
  local server, tool = d.server or r.route or "-", d.tool or "-"
  local code, verdict = d.code or "-", d.verdict or "-"
  local key = table.concat({ server, tool, code, verdict }, "\0")
  local g = report.by_key[key]
  if not g then
    g = { server = server, tool = tool, code = code, verdict = verdict, count = 0, examples = {}, seen = {} }
    report.by_key[key] = g
    report.list[#report.list + 1] = g
  end
  g.count = g.count + 1
  report.lines = report.lines + 1
  if type(r.time) == "number" then
    g.first = g.first and math.min(g.first, r.time) or r.time
    g.last = g.last and math.max(g.last, r.time) or r.time
  end
  local args = r.arguments
  if type(args) == "string" and not g.seen[args] and #g.examples < M.MAX_EXAMPLES then
    g.seen[args] = true
    g.examples[#g.examples + 1] = args
  end
end

--- groups(report) -> the groups, most frequent first (then by server,
-- tool, code, verdict: the same order whatever the interpreter)
function M.groups(report)
  local out = {}
  for i, g in ipairs(report.list) do out[i] = g end
  table.sort(out, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    for _, k in ipairs({ "server", "tool", "code", "verdict" }) do
      if a[k] ~= b[k] then return a[k] < b[k] end
    end
    return false
  end)
  return out
end

-- A field as a cell: control characters escaped, a long one cut.
local function cell(s)
  s = tostring(s):gsub("%c", function(c) return string.format("\\x%02x", c:byte()) end)
  if #s > SHOWN_BYTES then s = s:sub(1, SHOWN_BYTES - 3) .. "..." end
  return s
end

local ROW = "%-32s  %-20s  %-7s  %7s  %s"

--- write(report, human): the groups to standard output, a table (human)
-- or a JSON line each:
-- {"code","count","examples":[...],"first","last","server","tool","verdict"}
function M.write(report, human)
  local groups = M.groups(report)
  if human then
    cli.out(string.format(ROW, "SERVER/TOOL", "CODE", "VERDICT", "COUNT", "EXAMPLE ARGUMENTS"), "\n")
    for _, g in ipairs(groups) do
      cli.out(string.format(ROW, cell(g.server .. "/" .. g.tool), cell(g.code), cell(g.verdict), g.count,
        g.examples[1] and cell(g.examples[1]) or "-"), "\n")
      for i = 2, #g.examples do cli.out(string.format(ROW, "", "", "", "", cell(g.examples[i])), "\n") end
    end
    cli.out(string.format("%d refusal(s) shadow let run, in %d group(s); to enforce a tool, set its mode in the "
      .. "policy (modes = { [\"server/tool\"] = \"enforce\" }) and reload\n", report.lines, #groups))
    return
  end
  for _, g in ipairs(groups) do
    cli.out(cli.encode({ server = g.server, tool = g.tool, code = g.code, verdict = g.verdict, count = g.count,
      first = g.first, last = g.last, examples = setmetatable(g.examples, value.array_mt) }), "\n")
  end
end

return M
