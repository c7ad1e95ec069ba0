-- toolgate log: the decision log the stdio proxies keep in the local state.
local audit = require "toolgate.audit"
local cli = require "toolgate.cli"
local decision = require "toolgate.decision"
local json = require "toolgate.json"
local value = require "toolgate.value"

local M = {}

M.usage = [[
usage: toolgate log [--state DIR] [--after SEQ] [--follow] [--human|--json]

Writes the decisions the stdio proxies (toolgate mcp-proxy) sharing the
state directory made, oldest first.  On a terminal (or with --human) a
table, a row each:
  TIME (UTC)           VERDICT   SERVER/TOOL   CODE   PRINCIPAL (who asked)
the verdict "approved" for a call an approval let through, "pin" for a
tools/list difference (its change as the code).  Else (or with --json)
one JSON line each, as the nginx gateway's decision log has them:
  {"approval_id":...,"approved":false,"decision":{...},"phase":"call",
   "principal":...,"route":"filesystem","seq":N,"time":...}
A call that asks for an approval (or passes by one) shows the arguments
it binds: "arguments" (their exact canonical JSON text, as a string; past
64 KiB its first 64 KiB), "arguments_bytes" and "arguments_truncated".
And a line per tools/list difference from the registry's pins
({"pin_change":{...},"route":...,"seq":N,"time":...}; past 100 tools the
registry lacks, one {"change":"more","count":N} for the rest of a listing).

  --state DIR   the state directory (default $XDG_STATE_HOME/toolgate, or
                ~/.local/state/toolgate)
  --after SEQ   only the lines after sequence number SEQ
  --follow      keep writing new lines as they come (until interrupted)
  --human       the table (the default on a terminal)
  --json        the JSON lines (the default otherwise)
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
  local d = type(r.decision) == "table" and r.decision or {}
  return string.format(ROW, time, r.approved == true and "approved" or cell(d.verdict),
    cell(d.server or r.route) .. "/" .. cell(d.tool), cell(d.code), cell(r.principal))
end

local POLL_MS = 250
local PAGE = 1000

function M.run(args)
  local opts, pos = cli.parse(args, { options = { state = true, after = true },
    flags = { follow = true, human = true, json = true } })
  if #pos > 0 then cli.usage_error("no FILE: the log is in the state directory") end
  if opts.human and opts.json then cli.usage_error("--human or --json, not both") end
  local human = opts.human or (not opts.json and cli.is_terminal(1))
  local after = 0
  if opts.after then
    after = tonumber(opts.after)
    if not after or after < 0 or after ~= math.floor(after) then cli.usage_error("--after takes a sequence number") end
  end
  local store = cli.open_state("log", opts.state)
  if not store then return cli.EXIT_USAGE end
  if human then cli.out(HEADER, "\n") end
  while true do
    local got = store:log_lines(after, PAGE)
    for _, r in ipairs(got) do
      if human then
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
  return cli.EXIT_OK
end

return M
