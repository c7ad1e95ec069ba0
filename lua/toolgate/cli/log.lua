-- toolgate log: the decision log the stdio proxies keep in the local state.
local cli = require "toolgate.cli"

local M = {}

M.usage = [[
usage: toolgate log [--state DIR] [--after SEQ] [--follow]

Writes the decisions the stdio proxies (toolgate mcp-proxy) sharing the
state directory made, oldest first, one JSON line each, as the nginx
gateway's decision log has them:
  {"approval_id":...,"approved":false,"decision":{...},"phase":"call",
   "route":"filesystem","seq":N,"time":...}
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
]]

local POLL_MS = 250
local PAGE = 1000

function M.run(args)
  local opts, pos = cli.parse(args, { options = { state = true, after = true }, flags = { follow = true } })
  if #pos > 0 then cli.usage_error("no FILE: the log is in the state directory") end
  local after = 0
  if opts.after then
    after = tonumber(opts.after)
    if not after or after < 0 or after ~= math.floor(after) then cli.usage_error("--after takes a sequence number") end
  end
  local store = cli.open_state("log", opts.state)
  if not store then return cli.EXIT_USAGE end
  while true do
    local got = store:log_lines(after, PAGE)
    for _, r in ipairs(got) do
      -- the sequence number joins the line's members (it sorts before "time")
      local line = r.line:gsub(',"time":([%d.]+)}$', ',"seq":' .. string.format("%d", r.seq) .. ',"time":%1}')
      cli.out(line, "\n")
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
