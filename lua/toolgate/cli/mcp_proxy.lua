-- toolgate mcp-proxy: a stdio MCP gateway around a local server
-- (toolgate.stdio relays, toolgate.mcp decides).
local approvals = require "toolgate.cli.approvals"
local audit = require "toolgate.audit"
local audit_log = require "toolgate.audit_log"
local cli = require "toolgate.cli"
local http_client = require "toolgate.mcp.http_client"
local mcp = require "toolgate.mcp"
local proc = require "toolgate.proc"
local stdio = require "toolgate.stdio"
local stdio_trace = require "toolgate.stdio_trace"
local webhooks = require "toolgate.webhooks"

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
A defer's line on standard error, and the model's text, give the exact
command that grants it (toolgate approvals grant ID --state DIR, the
directory absolute and quoted for the shell).

The server's standard error is passed on, and so are SIGINT, SIGTERM,
SIGHUP (not with --audit-log) and SIGQUIT.  When the client closes standard input the server's
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
  --approval-wait SECONDS   how long a call held for the person's answer in
                            their client (a 2025 client that declared
                            elicitation) waits before it is refused
                            (default 300)
  --state DIR               the local state: approvals, pin reports,
                            quarantines, determinism records and the decision
                            log, in DIR/state.sqlite, shared by every proxy
                            given the same DIR and kept across restarts
                            (default $XDG_STATE_HOME/toolgate, or
                            ~/.local/state/toolgate); see toolgate approvals
                            and toolgate log.  Made 0700, its files 0600; a
                            DIR group or others may write, or another user
                            owns, is refused (exit 2)
  --webhook URL             POST each new pending approval to URL as JSON (the
                            approval record; repeatable); slack=URL: in
                            Slack's shape (text and blocks).  http:// to an IP
                            address or localhost only (no TLS).  Sent between
                            messages, a try at most every 100 ms and bounded
                            by 2 s; retried with backoff; a hook that goes
                            down or comes back is a line on standard error
                            (docs/stdio-proxy.md)
  --audit-log FILE|syslog   also write every audit record (decisions,
                            approvals, pin changes: docs/audit.md) to FILE,
                            opened by name for each batch (every 100 ms), so
                            a logrotate move takes effect at once; SIGHUP
                            writes the batch now and is not passed to the
                            server.  syslog: the local syslog (/dev/log),
                            syslog:PATH another unix datagram socket
  --otlp-endpoint URL       export a trace span per client message (and one
                            for the server's part of each request) to this
                            OpenTelemetry collector as OTLP/HTTP JSON: a base
                            URL such as http://127.0.0.1:4318, to which
                            /v1/traces is appended (http:// to an IP address
                            or localhost).  Sent between messages, at most a
                            batch a second, each bounded by 1 s; a collector
                            that is away is tried again with a backoff, its
                            spans dropped and counted (docs/tracing.md)

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

-- The webhooks: a new pending approval is noted by the observer; the
-- relay's tick (every 100 ms, between messages) reads its record, queues
-- a notification per hook (toolgate.webhooks: bounded, retried with
-- backoff) and sends at most one due notification per tick, over
-- toolgate.mcp.http_client (http:// only: it has no TLS), its exchange
-- bounded by webhooks.TIMEOUT.  A hook that goes down or comes back, and
-- a dropped notification, are a line on standard error.
local function hook_sender(hooks, store, say)
  local queue = webhooks.queue(hooks)
  local events = {}
  local function log(msg) if say[1] then say[1](msg) end end
  local function noted(ev)
    if #events >= queue.limit then
      log("webhooks: the notification of approval " .. ev.id .. " is dropped: more than " .. queue.limit .. " wait")
    else
      events[#events + 1] = ev
    end
  end
  local function tick(now)
    for _, ev in ipairs(events) do
      local ok, r = pcall(store.approval, store, ev.id)
      r = ok and r or { id = ev.id, status = "pending", server = ev.server, tool = ev.tool }
      local _, dropped = queue:push(r, nil, now)
      if dropped > 0 then log("webhooks: " .. dropped .. " notification(s) of approval " .. ev.id
        .. " dropped: more than " .. queue.limit .. " wait") end
    end
    events = {}
    local item = queue:next(now)
    if not item then return end
    local answer, why = http_client.post(item.hook, { { "Content-Type", "application/json" },
      { "User-Agent", "toolgate" } }, item.body, { timeout = webhooks.TIMEOUT, max_body = 65536 })
    local sent = answer and webhooks.delivered(answer.status)
    if answer then
      why = why or ("answered " .. tostring(answer.status))
      answer:close()
    end
    local result, changed = queue:done(item, sent, proc.now())
    if result == "dropped" then
      log("webhook " .. item.hook.url .. ": the notification of approval " .. item.id .. " is dropped after "
        .. queue.attempts .. " tries: " .. tostring(why))
    elseif changed and result == "delivered" then
      log("webhook " .. item.hook.url .. " delivers again")
    elseif changed then
      log("webhook " .. item.hook.url .. " is down (" .. tostring(why) .. "): approval " .. item.id
        .. " is tried again later")
    end
  end
  local function finish()
    local left = #events * #hooks + #queue.items
    if left > 0 then log("webhooks: " .. left .. " notification(s) not sent: the proxy exits") end
  end
  return noted, tick, finish
end

-- Every decision, pin change and approval a person gave in their client
-- goes to the state's decision log as an audit record (toolgate.audit,
-- toolgate log) through record(line); what the person at the terminal
-- sees is a line per refusal, defer and pin change, a defer's with the
-- commands that show and grant it (command(verb, id)).
local function observer(say, record, hook_noted, command, audit_opts)
  return function(ev)
    if hook_noted and ev.kind == "approval" and ev.event == "requested" then hook_noted(ev) end
    if ev.kind == "decision" then
      record(audit.decision(ev, proc.time(), audit_opts()))
    elseif ev.kind == "pin_change" then
      record(audit.pin_change(ev, proc.time(), audit_opts()))
    elseif ev.kind == "approval" and ev.record then
      record(audit.approval(ev.record, ev.event, proc.time(), audit_opts()))
    end
    local log = say[1]
    if not log then return end
    if ev.kind == "decision" and ev.approved then
      log("approved call " .. tostring(ev.tool) .. " passes (approval " .. ev.approval_id .. ")")
    elseif ev.kind == "decision" and ev.decision.verdict ~= "accept" then
      local d = ev.decision
      local how = d.verdict == "defer" and ev.approval_id and ("; a person reads it with: "
        .. command("show", ev.approval_id) .. ", and grants it with: " .. command("grant", ev.approval_id)) or ""
      log(string.format("%s%s %s %s: %s%s%s", ev.enforced == false and "shadow, let run: " or "", d.verdict, ev.phase,
        tostring(ev.tool or "-"), tostring(d.code),
        ev.approval_id and (" (approval " .. ev.approval_id .. ")") or "", how))
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
    options = { policy = true, server = true, context = true, grace = true, state = true, ["approval-wait"] = true,
      ["audit-log"] = true, ["otlp-endpoint"] = true },
    multi = { registry = true, webhook = true },
  })
  if #argv == 0 then cli.usage_error("the server's command is missing (after --)") end
  local grace = stdio.DEFAULT_GRACE
  if opts.grace then
    grace = tonumber(opts.grace)
    if not grace or grace <= 0 or grace > 3600 then cli.usage_error("--grace takes seconds from 0 to 3600") end
  end
  local approval_wait = stdio.DEFAULT_APPROVAL_WAIT
  if opts["approval-wait"] then
    approval_wait = tonumber(opts["approval-wait"])
    if not approval_wait or approval_wait <= 0 or approval_wait > 3600 then
      cli.usage_error("--approval-wait takes seconds from 0 to 3600")
    end
  end
  opts.policy = opts.policy or "mcp"
  local hooks = {}
  for _, spec in ipairs(opts.webhook or {}) do
    local hook, herr = webhooks.parse(spec)
    if not hook then cli.usage_error("--webhook: " .. herr) end
    hooks[#hooks + 1] = hook
  end
  local sink, serr
  if opts["audit-log"] then
    sink, serr = audit_log.open(opts["audit-log"])
    if not sink then cli.usage_error("--audit-log: " .. serr) end
  end
  local trace
  if opts["otlp-endpoint"] then
    local terr
    trace, terr = stdio_trace.new{ endpoint = opts["otlp-endpoint"], log = function(msg) cli.diag("mcp-proxy", msg) end }
    if not trace then cli.usage_error("--otlp-endpoint: " .. terr) end
  end
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
  -- (and to the audit log, each batch once: its own failures are said, never retried)
  local audit_pending, audit_said = {}, nil
  local function record(line)
    pending[#pending + 1] = line
    if sink then audit_pending[#audit_pending + 1] = line end
  end
  local function write_audit()
    if #audit_pending == 0 then return end
    local _, aerr = sink:write(audit_pending)
    audit_pending = {}
    -- (said once, not every batch, until the records are written again)
    if aerr and not audit_said and say[1] then say[1]("--audit-log: " .. aerr) end
    audit_said = aerr
  end
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
  -- the person and the model are told how a defer is granted: the exact
  -- command, on this proxy's store, whatever directory it is run from
  local state_dir = cli.state_dir(opts.state)
  local function command(verb, id) return approvals.command(verb, id, state_dir) end
  local grant = "A person grants it with: " .. command("grant", "%s"):gsub("%%", "%%%%"):gsub("%%%%s", "%%s", 1)
  local hook_noted, hook_tick, hook_finish
  if #hooks > 0 then hook_noted, hook_tick, hook_finish = hook_sender(hooks, store, say) end
  -- who asks is the local user (cli.local_user), in every decision and approval
  local observe = observer(say, record, hook_noted, command,
    function() return { source = "mcp-proxy", audit = engine:snapshot().policy.audit } end)
  -- (a decision goes on its message's span first: its record names the trace)
  local traced = trace and function(ev)
    trace:decided(ev)
    return observe(ev)
  end
  local gw, gerr, code = mcp.new{ engine = engine, state = store, observe = traced or observe,
    hints = { approval = grant }, principal = cli.local_user() }
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
  local status = stdio.run{ gateway = gw, route = route, argv = argv, grace = grace, approval_wait = approval_wait,
    ready = function(log) say[1] = log end, hup = sink and write_audit, every = function()
      write_log(proc.now())
      if sink then write_audit() end
      if hook_tick then hook_tick(proc.now()) end
      if trace then trace:tick(proc.now()) end
    end, trace = trace }
  say[1] = function(msg) cli.diag("mcp-proxy", msg) end
  if hook_finish then hook_finish() end
  if trace then trace:finish() end
  write_log()
  if sink then
    write_audit()
    sink:close()
  end
  store:close()
  return status
end

return M
