-- toolgate log: the decision log the stdio proxies keep in the local state.
local audit = require "toolgate.audit"
local cli = require "toolgate.cli"
local decision = require "toolgate.decision"
local json = require "toolgate.json"
local log_shadow = require "toolgate.cli.log_shadow"
local value = require "toolgate.value"

local M = {}

M.usage = [[
usage: toolgate log [--state DIR] [--after SEQ] [--follow] [--human|--json]
       toolgate log --shadow [--state DIR [--after SEQ] | --file PATH] [--human|--json]

Writes the audit records (docs/audit.md) of the decisions the stdio
proxies (toolgate mcp-proxy) sharing the state directory made, and of the
approvals decided there (in a client, or with toolgate approvals), oldest
first.  On a terminal (or with --human) a table, a row each:
  TIME (UTC)           VERDICT   SERVER/TOOL   CODE   PRINCIPAL (who asked)
the verdict "approved" for a call an approval let through, "pin" for a
tools/list difference (its change as the code), "granted" or "denied"
for an approval (its id as the code, who decided as the principal).
Else (or with --json) one JSON line each, the record as the nginx
gateway's decision log has it (docs/schemas/decision-record.schema.json),
with its sequence number in the state:
  {"approval_id":null,"approved":false,"decision":{...},"enforced":true,
   "kind":"decision","mode":"enforce","outcome":"refused","phase":"call",
   "principal":...,"route":"filesystem","seq":N,"source":"mcp-proxy",
   "time":...}
A call that asks for an approval (or passes by one) shows the arguments
it binds, as the policy's audit section says: "arguments" (their exact
canonical JSON text, as a string; past 64 KiB its first 64 KiB),
"arguments_bytes" and "arguments_truncated".  A tools/list difference
from the registry's pins is {"kind":"pin_change","pin_change":{...},...}
(past 100 tools the registry lacks, one {"change":"more","count":N} for
the rest of a listing), an approval {"approval":{...},"event":"granted",
"kind":"approval",...}.

  --state DIR   the state directory (default $XDG_STATE_HOME/toolgate, or
                ~/.local/state/toolgate)
  --after SEQ   only the lines after sequence number SEQ
  --follow      keep writing new lines as they come (until interrupted)
  --human       the table (the default on a terminal)
  --json        the JSON lines (the default otherwise)
  --shadow      instead of the lines, what shadow mode let run that enforce
                would have refused (decisions with "enforced":false), a
                group per server, tool, code and verdict, most frequent
                first, with its count and up to 2 example arguments (when
                the records hold them: the policy's audit.arguments): a
                table, or a JSON line each {"code","count","examples",
                "first","last","server","tool","verdict"}.  To enforce a
                tool: modes = { ["server/tool"] = "enforce" } in the
                policy, and a reload (docs/shadow.md)
  --file PATH   with --shadow: read a gateway's decision log
                (PREFIX/decisions.jsonl of toolgate gateway) instead of
                the state directory
]]

-- A field as a cell: "-" when absent, control characters escaped.
local function cell(v)
  if v == nil or v == value.null or v == "" then return "-" end
  return (tostring(v):gsub("%c", function(c) return string.format("\\x%02x", c:byte()) end))
end

local ROW = "%-19s  %-8s  %-32s  %-20s  %s"
local HEADER = string.format(ROW, "TIME", "VERDICT", "SERVER/TOOL", "CODE", "PRINCIPAL")

-- row(line) -> a log line as the table's row
local function row(line)
  local r = json.decode(decision.codec(), line)
  if type(r) ~= "table" then return "(a line that is not JSON: " .. cell(line:sub(1, 80)) .. ")" end
  local time = type(r.time) == "number" and os.date("!%Y-%m-%d %H:%M:%S", math.floor(r.time)) or "-"
  if type(r.pin_change) == "table" then
    return string.format(ROW, time, "pin", cell(r.route) .. "/" .. cell(r.pin_change.tool), cell(r.pin_change.change), "-")
  end
  if type(r.approval) == "table" then
    local a = r.approval
    return string.format(ROW, time, cell(r.event), cell(a.server or r.route) .. "/" .. cell(a.tool), cell(a.id),
      cell(a.decided_by))
  end
  local d = type(r.decision) == "table" and r.decision or {}
  return string.format(ROW, time, r.approved == true and "approved" or cell(d.verdict),
    cell(d.server or r.route) .. "/" .. cell(d.tool), cell(d.code), cell(r.principal))
end

local POLL_MS = 250
local PAGE = 1000

function M.run(args)
  local opts, pos = cli.parse(args, { options = { state = true, after = true, file = true },
    flags = { follow = true, human = true, json = true, shadow = true } })
  if #pos > 0 then cli.usage_error("no FILE: the log is in the state directory (a gateway's: --shadow --file PATH)") end
  if opts.human and opts.json then cli.usage_error("--human or --json, not both") end
  if opts.shadow and opts.follow then cli.usage_error("--shadow sums up the log as it is: not with --follow") end
  if opts.file and not opts.shadow then cli.usage_error("--file is read by --shadow") end
  if opts.file and (opts.state or opts.after) then cli.usage_error("--file or the state directory, not both") end
  local human = opts.human or (not opts.json and cli.is_terminal(1))
  local after = 0
  if opts.after then
    after = tonumber(opts.after)
    if not after or after < 0 or after ~= math.floor(after) then cli.usage_error("--after takes a sequence number") end
  end
  local report = opts.shadow and log_shadow.new()
  if opts.file then
    local f, ferr = io.open(opts.file, "rb")
    if not f then
      cli.diag("log", tostring(ferr))
      return cli.EXIT_USAGE
    end
    for line in f:lines() do log_shadow.add(report, line) end
    f:close()
    log_shadow.write(report, human)
    return cli.EXIT_OK
  end
  local store = cli.open_state("log", opts.state)
  if not store then return cli.EXIT_USAGE end
  if human and not report then cli.out(HEADER, "\n") end
  while true do
    local got = store:log_lines(after, PAGE)
    for _, r in ipairs(got) do
      if report then
        log_shadow.add(report, r.line)
      elseif human then
        cli.out(row(r.line), "\n")
      else
        -- the sequence number joins the record's members
        cli.out(audit.with_seq(r.line, r.seq), "\n")
      end
      after = r.seq
    end
    cli.flush()
    if #got < PAGE then
      if not opts.follow then break end
      require("toolgate.proc").poll({}, {}, POLL_MS)
    end
  end
  store:close()
  if report then log_shadow.write(report, human) end
  return cli.EXIT_OK
end

return M
