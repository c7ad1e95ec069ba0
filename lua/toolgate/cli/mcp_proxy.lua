-- toolgate mcp-proxy: a stdio MCP gateway around a local server
-- (toolgate.stdio relays, toolgate.mcp decides).
local cli = require "toolgate.cli"
local mcp = require "toolgate.mcp"
local proc = require "toolgate.proc"
local stdio = require "toolgate.stdio"

local M = {}

--- How long the proxy waits for the state's lock, in milliseconds: a
-- store another process holds longer is a refusal of the calls that need
-- it (approvals), answered at once, not a stall of the whole relay, which
-- runs on one thread (a person's command, toolgate approvals, waits
-- toolgate.state.sqlite's default).
M.BUSY_MS = 200
--- A decision log that cannot be written is tried again after this many
-- seconds, doubled at each failure up to LOG_RETRY_MAX; its lines wait,
-- at most LOG_MAX_WAITING of them (the oldest go first, said once).
M.LOG_RETRY = 0.5
M.LOG_RETRY_MAX = 8
M.LOG_MAX_WAITING = 100000

M.usage = [[
usage: toolgate mcp-proxy [--policy FILE|NAME] [--registry SERVER=FILE]... [options] -- COMMAND [ARGS...]

Starts the MCP server COMMAND as a child process and relays newline-
delimited JSON-RPC between the client (standard input and output) and the
server, every message through the gateway the nginx face uses: a refused
tools/call is answered by toolgate and never reaches the server; a
tools/list answer holds only the registry's tools whose pins match (every
difference is reported on standard error); a tools/call result that breaks
its tool's contract is refused.  Refusals are tool results with isError
whose text tells the model what was wrong and what the tool accepts, or
how a person can allow the call (the policy's mcp.refusal = "result", the
default); a call to a tool the registry lacks (H1) is a -32602 error naming
the closest tools.  With mcp.refusal = "error" they are JSON-RPC errors, as
in nginx/README.md: -32602 for H1, H2, H3; -31001 for H4, pins, quarantine;
-31002 for a defer (data.approval_id); -31003 when deciding failed.

The server's standard error is passed on, and so are SIGINT, SIGTERM,
SIGHUP and SIGQUIT.  When the client closes standard input the server's
input is closed; after --grace seconds it gets SIGTERM, then SIGKILL.
Requests the server leaves unanswered when it exits get an error.  The
exit status is the server's (128 + N when signal N ended it).

  --policy FILE|NAME        the policy (default: mcp)
  --registry SERVER=FILE    a registry file (repeatable): toolgate's format or
                            an MCP tools/list result; SERVER= names its server
  --assert-formats          check every "format" the tools' schemas use, as
                            toolgate check --assert-formats does (a value
                            that fails is H3, -32602)
  --server NAME             the server the calls are for (default: the one
                            server the registry holds)
  --context FILE            what the operator grants the calls (scopes,
                            max_risk, ...), a JSON object
  --grace SECONDS           how long the server has to exit (default 5)
  --state DIR               the local state: approvals, pin reports,
                            quarantines, determinism records and the decision
                            log, in DIR/state.sqlite, shared by every proxy
                            given the same DIR and kept across restarts
                            (default $XDG_STATE_HOME/toolgate, or
                            ~/.local/state/toolgate); see toolgate approvals
                            and toolgate log.  Made 0700, its files 0600; a
                            DIR group or others may write, or another user
                            owns, is refused (exit 2)

Exit status: the server's; 1 when it could not be started; 2 on bad usage
or a policy or registry that cannot be loaded.
]]

local function pick_server(engine, name)
  if name then
    for _, t in ipairs(engine:snapshot().registry.tools) do
      if t.server == name then return name end
    end
    return nil, "the registry holds no tool of server " .. name
  end
  local seen, list = {}, {}
  for _, t in ipairs(engine:snapshot().registry.tools) do
    if t.server and t.server ~= "" and not seen[t.server] then
      seen[t.server] = true
      list[#list + 1] = t.server
    end
  end
  if #list == 1 then return list[1] end
  if #list == 0 then return nil, "the registry names no server: give it as --registry SERVER=FILE" end
  table.sort(list)
  return nil, "the registry holds several servers (" .. table.concat(list, ", ") .. "): say which with --server"
end

-- Every decision and pin change goes to the state's decision log
-- (toolgate log) through record(line); what the person at the terminal
-- sees is a line per refusal, defer and pin change.
local function observer(say, record)
  return function(ev)
    if ev.kind == "decision" then
      record(mcp.decision_line(ev, os.time()))
    elseif ev.kind == "pin_change" then
      record(mcp.pin_change_line(ev, os.time()))
    end
    local log = say[1]
    if not log then return end
    if ev.kind == "decision" and ev.approved then
      log("approved call " .. tostring(ev.tool) .. " passes (approval " .. ev.approval_id .. ")")
    elseif ev.kind == "decision" and ev.decision.verdict ~= "accept" then
      local d = ev.decision
      log(string.format("%s %s %s: %s%s", d.verdict, ev.phase, tostring(ev.tool or "-"), tostring(d.code),
        ev.approval_id and (" (approval " .. ev.approval_id .. ")") or ""))
    elseif ev.kind == "pin_change" then
      log("tools/list of " .. ev.server .. ": tool " .. ev.tool .. " " .. ev.change.change .. " (not shown to the client)")
    elseif ev.kind == "store_error" then
      log("the state store could not keep a " .. ev.op .. " of tool " .. tostring(ev.tool) .. " (" .. ev.message
        .. "): its calls are refused all the same")
    end
  end
end

function M.run(args)
  local opts, argv = cli.parse(args, {
    flags = { ["assert-formats"] = true },
    options = { policy = true, server = true, context = true, grace = true, state = true },
    multi = { registry = true },
  })
  if #argv == 0 then cli.usage_error("the server's command is missing (after --)") end
  local grace = stdio.DEFAULT_GRACE
  if opts.grace then
    grace = tonumber(opts.grace)
    if not grace or grace <= 0 or grace > 3600 then cli.usage_error("--grace takes seconds from 0 to 3600") end
  end
  opts.policy = opts.policy or "mcp"
  local store = cli.open_state("mcp-proxy", opts.state, { busy_ms = M.BUSY_MS })
  if not store then return cli.EXIT_USAGE end
  local engine = cli.load_engine("mcp-proxy", opts, { state = store }, true)
  if not engine then return cli.EXIT_USAGE end
  local server, err = pick_server(engine, opts.server)
  if not server then
    cli.diag("mcp-proxy", err)
    return cli.EXIT_USAGE
  end
  local context = {}
  if opts.context then
    context = cli.read_context("mcp-proxy", engine:snapshot().core, opts.context)
    if not context then return cli.EXIT_USAGE end
  end
  local say = {}
  -- the log is written in batches, one transaction every 100 ms and at the
  -- end (a commit per decision would cost more than the decision)
  local pending, retry_at, retry_in, dropped = {}, 0, M.LOG_RETRY, false
  local function record(line) pending[#pending + 1] = line end
  local function write_log(now)
    if #pending == 0 or (now and now < retry_at) then return end
    local ok, lerr = pcall(store.log, store, pending)
    if ok then
      pending, retry_in = {}, M.LOG_RETRY
      return
    end
    if say[1] then say[1]("cannot write the decision log (tried again in " .. retry_in .. " s): " .. tostring(lerr)) end
    retry_at, retry_in = (now or 0) + retry_in, math.min(retry_in * 2, M.LOG_RETRY_MAX)
    if #pending > M.LOG_MAX_WAITING then
      if not dropped and say[1] then say[1]("the decision log loses its oldest lines: more than "
        .. M.LOG_MAX_WAITING .. " wait") end
      dropped = true
      local keep = {}
      for i = #pending - M.LOG_MAX_WAITING + 1, #pending do keep[#keep + 1] = pending[i] end
      pending = keep
    end
  end
  -- the model is told how a person grants a defer: the command, on this proxy's store
  local grant = mcp.HINTS.approval .. (opts.state and (" --state " .. opts.state:gsub("%%", "%%%%")) or "")
  local gw, gerr, code = mcp.new{ engine = engine, state = store, observe = observer(say, record),
    hints = { approval = grant } }
  if not gw then
    cli.diag("mcp-proxy", tostring(code) .. ": " .. tostring(gerr))
    return cli.EXIT_USAGE
  end
  local route = gw:route(server, context)
  -- the context must compile before the server starts
  local ok, cerr = engine:context(context)
  if not ok then
    cli.diag("mcp-proxy", "--context: " .. tostring(cerr))
    return cli.EXIT_USAGE
  end
  io.stdout:flush()
  local status = stdio.run{ gateway = gw, route = route, argv = argv, grace = grace,
    ready = function(log) say[1] = log end, every = function() write_log(proc.now()) end }
  say[1] = function(msg) cli.diag("mcp-proxy", msg) end
  write_log()
  store:close()
  return status
end

return M
