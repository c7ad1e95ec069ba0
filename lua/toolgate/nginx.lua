--- toolgate.nginx: toolgate inside nginx's lua module (Debian's nginx +
-- libnginx-mod-http-lua, or OpenResty): an MCP gateway over Streamable
-- HTTP, the decision API and the admin API.  nginx/mcp-gateway.conf is the
-- complete example; nginx/README.md walks through it.
--
--   init_by_lua_block        { require("toolgate.nginx").init{ policy = ..., registry = {...}, ... } }
--   init_worker_by_lua_block { require("toolgate.nginx").init_worker() }
--   location = /mcp/S {                       -- one per MCP server S
--     access_by_lua_block        { require("toolgate.nginx").access("S") }
--     proxy_pass http://S_upstream/mcp;
--     header_filter_by_lua_block { require("toolgate.nginx").header_filter() }
--     body_filter_by_lua_block   { require("toolgate.nginx").body_filter() }
--   }
--   location /v1/ ... /healthz /metrics  { content_by_lua_block { require("toolgate.nginx").api() } }
--   admin server                         { content_by_lua_block { require("toolgate.nginx").admin() } }
--
-- init (in the master, before the workers fork) reads the options, the
-- admin token, opens the decision log and builds the engine from the policy
-- and registry files, once: the workers fork with it and use it, so its
-- memory is shared, not copied per worker; init_worker gives each worker
-- its gateway (toolgate.mcp) and stores.  A reload builds a new engine in
-- each worker, which a request that started before it never sees.  A
-- worker whose engine cannot be built answers every request with an error
-- (503): it never forwards an unchecked call.
--
-- Options of init:
--   policy            a policy path or shipped name (default "mcp")
--   registry          list of "SERVER=FILE" sources
--   routes            { [server] = { context = {...}, upstream = URL } }:
--                     the servers the gateway fronts, the context their
--                     calls are decided in (merged over the policy's), and
--                     where the gateway lists their tools itself when one
--                     says they changed ("http://IP:PORT/PATH"; without it,
--                     a client's next tools/list checks them)
--   api_context       the context of what the decision API decides that names
--                     no route's server (POST /v1/classify's plans, a call to
--                     a server without a route); a call to a route's server
--                     is decided in the route's context, as /mcp/SERVER does
--   dict              the lua_shared_dict of the state store (default "toolgate")
--   redis             a fleet's shared state on Redis (toolgate.state.redis's
--                     options, and password_file: a file holding AUTH's
--                     password); the dict then holds this node's copy
--   metrics_dict      the lua_shared_dict of the metrics (default "toolgate_metrics")
--   decision_log      where the audit records go (docs/audit.md: one JSON line per
--                     decision, approval decided and pin change): a file, opened
--                     by name for each batch so a logrotate move takes effect
--                     at the next one (toolgate.audit_log), "syslog" (/dev/log)
--                     or "syslog:PATH" (a unix datagram socket), "error_log",
--                     or nil: none
--   admin_token_file  the file holding the admin API's bearer token; without
--                     one the admin API refuses every request
--   limits            the core's limits (docs/limits.md)
--   principal_header  the request header naming who asks (e.g. "X-Principal"),
--                     set by the operator's auth layer in front, which strips
--                     any copy a client sent (nginx/README.md, "Who asked"):
--                     an MCP request without it, with two, or with a value
--                     that is no principal's name (toolgate.mcp.principal_valid)
--                     is refused, 401 or 400; without the option nobody is named
--   webhooks          { {url = "http://IP:PORT/PATH", kind = "json" | "slack"}, ... }:
--                     where each new pending approval is POSTed
--                     (toolgate.webhooks: the shapes, the bounded queue,
--                     the retries), from a timer of the worker that opened it
--   inbox_url         the approvals inbox's URL the notifications give
--                     (toolgate gateway: http://ADMIN/approvals)
--   webhook_attempts, webhook_backoff   tries of one notification and the
--                     seconds before the second (doubled each time); default
--                     toolgate.webhooks.ATTEMPTS, BACKOFF
--   otlp              OpenTelemetry traces (docs/tracing.md): { endpoint =
--                     "http://127.0.0.1:4318" (a base URL: /v1/traces is
--                     appended), service_name = "toolgate", interval = 1
--                     (seconds between exports), max_queue = 2048 (spans
--                     waiting, per worker), max_batch = 512, timeout = 2
--                     (seconds of one export), capture_content = false (the
--                     calls' arguments and results as attributes, each cut to
--                     max_attribute_bytes = 4096) }
-- @module toolgate.nginx

local bit = require "bit"
local ffi = require "ffi"
local audit = require "toolgate.audit"
local audit_log = require "toolgate.audit_log"
local decision = require "toolgate.decision"
local json = require "toolgate.json"
local metrics_mod = require "toolgate.metrics"
local mcp = require "toolgate.mcp"
local mcp_headers = require "toolgate.mcp.headers"
local otel = require "toolgate.otel"
local shared_dict = require "toolgate.state.shared_dict"
local toolgate = require "toolgate"
local value = require "toolgate.value"
local inbox = require "toolgate.inbox"
local webhooks = require "toolgate.webhooks"

local M = {}

ffi.cdef [[
typedef struct toolgate_timespec { long tv_sec; long tv_nsec; } toolgate_timespec;
int clock_gettime(int clk_id, toolgate_timespec *tp);
]]
local ts = ffi.new("toolgate_timespec")
local CLOCK_MONOTONIC = 1

local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- seconds since the epoch, to the microsecond (a span's times; ngx.now() is the event loop's, to the millisecond)
local CLOCK_REALTIME = 0
local function wall()
  ffi.C.clock_gettime(CLOCK_REALTIME, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- Per process: the options (set in the master, inherited by the workers),
-- then per worker the engine, gateway, routes and stores.
local opts, token, log_file, redis_opts, otlp
local W = { routes = {} }
-- The engine the master built before the workers forked, and the reload
-- version it was built at: a worker starting at that version uses it (its
-- pages stay shared with the master's and the other workers'), not a copy.
local inherited, inherited_version
local built

local VERSION_KEY = "toolgate:reload_version"
-- Reloads: one worker builds at a time (this key, a lease of BUILD_LEASE
-- seconds held by its pid: a worker that dies building does not stop the
-- others), and each says in WORKER_KEY .. id which version it decides with.
local BUILDING_KEY, BUILD_LEASE, WORKER_KEY = "toolgate:reload_building", 120, "toolgate:reload_worker:"

local function enc(v) return (assert(value.encode(v))) end

local function read_secret(what, path)
  local f, err = io.open(path, "rb")
  if not f then error("toolgate.nginx: cannot read the " .. what .. ": " .. tostring(err), 3) end
  local text = (f:read("*a") or ""):match("^%s*(.-)%s*$")
  f:close()
  return text
end

-- The redis options checked in the master, so a wrong one stops nginx at start.
local function redis_options(o)
  if type(o) ~= "table" then error("toolgate.nginx: redis: a table of options expected", 3) end
  local r = {}
  for k, v in pairs(o) do if k ~= "password_file" then r[k] = v end end
  if o.password_file then r.password = read_secret("Redis password", o.password_file) end
  local ok, err = require("toolgate.state.redis").options(r)
  if not ok then error("toolgate.nginx: " .. err, 3) end
  return r
end

-- The otlp options checked in the master, so a wrong one stops nginx at start.
local function otlp_options(o)
  if type(o) ~= "table" then error("toolgate.nginx: otlp: a table of options expected", 3) end
  local e, err = otel.endpoint(o.endpoint)
  if not e then error("toolgate.nginx: otlp.endpoint: " .. err, 3) end
  local r = { endpoint = e, service_name = o.service_name or "toolgate", capture_content = o.capture_content == true }
  for k, d in pairs({ interval = { 1, 0.01, 60 }, max_queue = { otel.MAX_QUEUE, 1, 1e6 },
    max_batch = { otel.MAX_BATCH, 1, 1e5 }, timeout = { 2, 0.01, 60 },
    max_attribute_bytes = { otel.MAX_ATTRIBUTE_BYTES, 16, 1e6 } }) do
    local v = o[k] == nil and d[1] or o[k]
    if type(v) ~= "number" or v < d[2] or v > d[3] then
      error("toolgate.nginx: otlp." .. k .. ": a number from " .. d[2] .. " to " .. d[3] .. " expected", 3)
    end
    r[k] = v
  end
  if type(r.service_name) ~= "string" or r.service_name == "" then
    error("toolgate.nginx: otlp.service_name: a string expected", 3)
  end
  return r
end

--- init(options): in init_by_lua (the master).  Raises on options that
-- are not usable, so nginx refuses to start with the message.
function M.init(o)
  if type(o) ~= "table" then error("toolgate.nginx.init: a table of options expected", 2) end
  opts = o
  opts.policy = opts.policy or "mcp"
  opts.dict = opts.dict or "toolgate"
  opts.metrics_dict = opts.metrics_dict or "toolgate_metrics"
  opts.routes = opts.routes or {}
  token = nil
  if opts.admin_token_file then
    token = read_secret("admin token", opts.admin_token_file)
    if #token < 16 then error("toolgate.nginx: the admin token in " .. opts.admin_token_file .. " is shorter than 16 "
      .. "characters", 2) end
  end
  if log_file then log_file:close() end
  log_file = nil
  if opts.decision_log and opts.decision_log ~= "error_log" then
    local err
    -- (opened here, in the master: the workers write to it when they cannot open its name)
    log_file, err = audit_log.open(opts.decision_log)
    if not log_file then error("toolgate.nginx: the decision log: " .. tostring(err), 2) end
  end
  otlp = nil
  if opts.otlp then otlp = otlp_options(opts.otlp) end
  redis_opts = nil
  if opts.redis then
    redis_opts = redis_options(opts.redis)
    -- (here, in the master: workers that run as another user inherit the file)
    require("toolgate.state.redis").open_journal(redis_opts, ngx.shared[opts.dict])
  end
  -- the engine is built here, so a broken policy or registry stops nginx at start
  for i, w in ipairs(opts.webhooks or {}) do
    local hook, herr = webhooks.parse(type(w) == "table" and w.url, type(w) == "table" and w.kind or nil)
    if not hook then error("toolgate.nginx: webhooks[" .. i .. "]: " .. herr, 2) end
    opts.webhooks[i] = hook
  end
  local t0 = now()
  local e, err, code = toolgate.new{ policy = opts.policy, registry = opts.registry, limits = opts.limits }
  if not e then error("toolgate.nginx: " .. tostring(code) .. ": " .. tostring(err), 2) end
  built("master", e, t0)
  local ok
  ok, err = mcp.settings(e:snapshot().policy)
  if not ok then error("toolgate.nginx: " .. tostring(err), 2) end
  local ph = opts.principal_header
  if ph ~= nil and (type(ph) ~= "string" or #ph > 64 or not ph:find("^[%w%-]+$")) then
    error("toolgate.nginx: principal_header: a header name (letters, digits, -) expected", 2)
  end
  local dict = ngx.shared[opts.dict]
  inherited, inherited_version = e, dict and dict:get(VERSION_KEY) or 0
  -- the load's garbage goes now, not in each worker after the fork
  collectgarbage()
end

-- Decisions: the log and the metrics ---------------------------------------

-- Lines wait in the worker and are written together, whole lines in one
-- write, every FLUSH_SECONDS or LOG_FLUSH_LINES lines, and when the worker
-- exits (a write per decision would cost more than the decision); so do the
-- metrics' additions (toolgate.metrics).
local FLUSH_SECONDS, LOG_FLUSH_LINES = 0.1, 256
local pending_lines = {}
local log_said -- the decision log's last problem said

local function flush_log()
  if #pending_lines == 0 then return end
  local ok, err = log_file:write(pending_lines)
  pending_lines = {}
  -- (said once, not every batch, until the log is written by its name again)
  if err and not log_said then ngx.log(ok and ngx.WARN or ngx.ERR, "toolgate: the decision log: ", err) end
  log_said = err
end

local function log_line(line)
  if log_file then
    pending_lines[#pending_lines + 1] = line
    if #pending_lines >= LOG_FLUSH_LINES then flush_log() end
  elseif opts.decision_log == "error_log" then
    ngx.log(ngx.NOTICE, "toolgate decision ", line)
  end
end

-- Series names, made once per label set: the hot path only concatenates.
-- Their number is bounded: codes, stages and verdicts are toolgate's own,
-- servers are the routes', and a tool the registry does not hold is
-- counted as "(unknown)" (a client's made-up names must not grow the dict).
-- mode is "shadow" for a refusal shadow let run (toolgate.shadow: its
-- verdict is the one it would have had), else "enforce".
local series = {}

local function decision_series(phase, d, mode)
  local k = phase .. "\0" .. (d.stage or "") .. "\0" .. d.verdict .. "\0" .. (d.code or "") .. "\0" .. mode
  local s = series[k]
  if not s then
    s = W.metrics:key("toolgate_decisions_total", { phase = phase, stage = d.stage or "", verdict = d.verdict,
      code = d.code or "", mode = mode })
    series[k] = s
  end
  return s
end

local function tool_series(server, tool, d, mode)
  if not (tool and W.engine:snapshot().registry.by_key[server .. "\0" .. tool]) then tool = "(unknown)" end
  local k = server .. "\0" .. tool .. "\0" .. d.verdict .. "\0" .. mode
  local s = series[k]
  if not s then
    s = W.metrics:key("toolgate_tool_decisions_total", { server = server, tool = tool, verdict = d.verdict,
      mode = mode })
    series[k] = s
  end
  return s
end

-- Webhooks: each new pending approval is POSTed to opts.webhooks from a
-- timer of this worker, never on the request path: observe() only notes
-- the event; the timer reads its record from the store, queues a
-- notification per hook (toolgate.webhooks: bounded, retried with
-- backoff) and sends what is due, one hook at a time, each exchange
-- bounded by webhooks.TIMEOUT.  http:// only: a cosocket could do TLS
-- (sslhandshake), but it would need a CA file in the conf and a test with
-- a TLS receiver; a local relay does it.

local hook_queue, hook_events = nil, {}
local hook_running, hook_timer_at = false, nil

local function hook_post(item)
  local h = item.hook
  local sock = ngx.socket.tcp()
  local ms = webhooks.TIMEOUT * 1000
  sock:settimeouts(ms, ms, ms)
  local ok, err = sock:connect(h.host:find(":", 1, true) and ("[" .. h.host .. "]") or h.host, h.port)
  if not ok then return nil, "cannot connect: " .. tostring(err) end
  ok, err = sock:send(table.concat({ "POST " .. h.path .. " HTTP/1.1", "Host: " .. h.authority,
    "Content-Type: application/json", "Content-Length: " .. #item.body, "User-Agent: toolgate", "Connection: close",
    "", item.body }, "\r\n"))
  if not ok then
    sock:close()
    return nil, "cannot send: " .. tostring(err)
  end
  local line
  line, err = sock:receive("*l")
  sock:close()
  local status = line and tonumber(line:match("^HTTP/%d%.%d (%d%d%d)"))
  if not status then return nil, "no HTTP answer: " .. tostring(err or "not a status line") end
  if not webhooks.delivered(status) then return nil, "answered " .. status end
  return true
end

local function hook_counted(result, hook, id, why, changed)
  W.metrics:inc("toolgate_webhook_deliveries_total", { result = result })
  if result == "dropped" then
    ngx.log(ngx.ERR, "toolgate: webhook ", hook.url, ": the notification of approval ", id, " is dropped: ", why)
  elseif changed then
    if result == "delivered" then
      ngx.log(ngx.NOTICE, "toolgate: webhook ", hook.url, " delivers again")
    else
      ngx.log(ngx.WARN, "toolgate: webhook ", hook.url, " is down (", why, "): approval ", id, " tried again later")
    end
  end
end

local arm_hooks

local function run_hooks(premature)
  hook_timer_at = nil
  if premature or hook_running then return end
  hook_running = true
  -- (ngx.now() is the time the event loop last read: a retry due within a
  -- millisecond would otherwise never look due)
  ngx.update_time()
  local next_at
  local ok, err = pcall(function()
    while true do
      -- the records of the requests opened since: read here, off the request path
      local events = hook_events
      hook_events = {}
      for _, ev in ipairs(events) do
        local r = W.store:approval(ev.id) or { id = ev.id, status = "pending", server = ev.server, tool = ev.tool }
        local _, dropped = hook_queue:push(r, opts.inbox_url, ngx.now())
        for _ = 1, dropped do
          hook_counted("dropped", { url = "a hook" }, ev.id, "more than " .. hook_queue.limit .. " wait")
        end
      end
      local item, at = hook_queue:next(ngx.now())
      if not item then
        next_at = at
        return
      end
      local sent, why = hook_post(item)
      local result, changed = hook_queue:done(item, sent, ngx.now())
      hook_counted(result, item.hook, item.id, why, changed)
    end
  end)
  hook_running = false
  if not ok then ngx.log(ngx.ERR, "toolgate: the webhooks' timer failed: ", tostring(err)) end
  -- the next retry that is due (a request opened since is due now)
  if #hook_events > 0 then next_at = ngx.now() end
  if next_at then arm_hooks(next_at - ngx.now()) end
end

arm_hooks = function(delay)
  delay = delay > 0 and math.max(delay, 0.01) or 0
  local at = ngx.now() + delay
  if hook_running or (hook_timer_at and hook_timer_at <= at) then return end
  local ok, err = ngx.timer.at(delay, run_hooks)
  if ok then hook_timer_at = at else ngx.log(ngx.ERR, "toolgate: cannot start the webhooks' timer: ", err) end
end

-- A new pending approval: noted for the timer (bounded like the queue)
local function notify(ev)
  if #hook_events >= hook_queue.limit then
    for _, hook in ipairs(hook_queue.hooks) do
      hook_counted("dropped", hook, ev.id, "more than " .. hook_queue.limit .. " wait")
    end
    return
  end
  hook_events[#hook_events + 1] = { id = ev.id, server = ev.server, tool = ev.tool }
  arm_hooks(0)
end

-- Traces: a server span per MCP request (a batch's decisions are its
-- events), a client span for the upstream's part, exported as OTLP/HTTP
-- JSON (toolgate.otel, docs/tracing.md).  The request path only makes and
-- ends spans; a timer of the worker sends them, a batch at a time, every
-- otlp.interval: a full queue or a collector that is away drops spans,
-- counted (toolgate_otel_spans_dropped_total) and said in the error log at
-- most once every OTLP_LOG_SECONDS.

local tracer -- this worker's (init_worker), when otlp is set
local OTLP_LOG_SECONDS = 60
local exporting, otlp_down_since, otlp_logged_at, otlp_unlogged = false, nil, nil, 0

-- One export: true | nil, why.
local function otlp_post(body)
  local e = otlp.endpoint
  local sock = ngx.socket.tcp()
  local ms = otlp.timeout * 1000
  sock:settimeouts(ms, ms, ms)
  local ok, err = sock:connect(e.host:find(":", 1, true) and ("[" .. e.host .. "]") or e.host, e.port)
  if not ok then return nil, "cannot connect: " .. tostring(err) end
  ok, err = sock:send(table.concat({ "POST " .. e.path .. " HTTP/1.1", "Host: " .. e.authority,
    "Content-Type: application/json", "Content-Length: " .. #body, "User-Agent: toolgate", "Connection: close",
    "", body }, "\r\n"))
  if not ok then
    sock:close()
    return nil, "cannot send: " .. tostring(err)
  end
  local line
  line, err = sock:receive("*l")
  sock:close()
  local status = line and tonumber(line:match("^HTTP/%d%.%d (%d%d%d)"))
  if not status then return nil, "no HTTP answer: " .. tostring(err or "not a status line") end
  if status < 200 or status > 299 then return nil, "answered " .. status end
  return true
end

local function spans_dropped(reason, n, why)
  W.metrics:inc("toolgate_otel_spans_dropped_total", { reason = reason }, n)
  otlp_unlogged = otlp_unlogged + n
  local t = ngx.now()
  if otlp_logged_at and t - otlp_logged_at < OTLP_LOG_SECONDS then return end
  ngx.log(ngx.ERR, "toolgate: ", otlp_unlogged, " span(s) dropped (", reason, "): ", why)
  otlp_logged_at, otlp_unlogged = t, 0
end

local function export_spans(premature)
  if exporting then return end
  exporting = true
  local ok, err = pcall(function()
    if tracer.dropped > 0 then
      local n = tracer.dropped
      tracer.dropped = 0
      spans_dropped("queue_full", n, "more than " .. tracer.max_queue .. " waited for export in this worker")
    end
    -- (a worker that exits sends one batch more, no retry)
    while tracer:waiting() > 0 do
      local batch = tracer:take(otlp.max_batch)
      local sent, why = otlp_post(tracer:encode(batch))
      if not sent then
        otlp_down_since = otlp_down_since or ngx.now()
        spans_dropped("export_failed", #batch, "the OTLP collector " .. otlp.endpoint.url .. ": " .. why)
        return
      end
      W.metrics:inc("toolgate_otel_spans_exported_total", nil, #batch)
      if otlp_down_since then
        ngx.log(ngx.NOTICE, "toolgate: the OTLP collector ", otlp.endpoint.url, " takes spans again")
        otlp_down_since = nil
      end
      if premature then return end
    end
  end)
  exporting = false
  if not ok then ngx.log(ngx.ERR, "toolgate: exporting spans failed: ", tostring(err)) end
end

-- The MCP attributes a client span repeats from its server span.
local CLIENT_ATTRIBUTES = { "mcp.method.name", "gen_ai.tool.name", "gen_ai.prompt.name", "gen_ai.operation.name",
  "jsonrpc.request.id", "mcp.protocol.version", "mcp.session.id" }

-- The span of a POST to an MCP endpoint, started at the request's start,
-- the child of the client's traceparent header when it has a valid one.
local function trace_request(route)
  local trace_id, parent_id = otel.parse_traceparent(ngx.var.http_traceparent)
  local span = tracer:start("mcp", otel.KIND.SERVER, ngx.req.start_time(), trace_id, parent_id)
  span.route = route
  span:set("network.transport", "tcp"):set("network.protocol.name", "http")
  span:set("toolgate.server", route.server)
  ngx.ctx.otel = span
  return span
end

-- A request without a valid traceparent header may carry one in the
-- message's params._meta (the MCP conventions' place): the span moves
-- under it (before anything of it is decided, so the decisions' records
-- name the trace).
local function meta_parent(span, body)
  if span.parent_span_id or not body:find("traceparent", 1, true) then return end
  local doc = decision.codec():parse(body)
  if not doc then return end
  local root = doc:root()
  local params = root:type() == "object" and root:get("params")
  local meta = params and params:type() == "object" and params:get("_meta")
  local tp = meta and meta:type() == "object" and meta:get("traceparent")
  tp = tp and tp:type() == "string" and tp:value() or nil
  doc:free()
  local trace_id, parent_id = otel.parse_traceparent(tp)
  if trace_id then span.trace_id, span.parent_span_id = trace_id, parent_id end
end

-- What the core read of the message names the span (toolgate.otel.mcp).
local function trace_message(span, frame, headers)
  if not frame or frame.kind ~= "message" then
    if frame and frame.kind == "batch" then span.name = "batch" end
    return
  end
  local id = frame.id
  if id and id:sub(1, 1) == '"' then id = json.decode(decision.codec(), id) end
  local pv = frame.protocol_version or headers["mcp-protocol-version"]
  otel.mcp(span, { method = frame.method, id = id, name = frame.name,
    protocol_version = type(pv) == "string" and pv or nil, session = headers["mcp-session-id"] })
end

-- The upstream's part: a client span, named to the upstream in the traceparent header it gets.
local function trace_upstream(span)
  local child = tracer:start(span.name, otel.KIND.CLIENT, wall(), span.trace_id, span.span_id)
  for _, k in ipairs(CLIENT_ATTRIBUTES) do child:set(k, span:get(k)) end
  child:set("network.transport", "tcp"):set("network.protocol.name", "http")
  span.child = child
  ngx.req.set_header("traceparent", otel.traceparent(child.trace_id, child.span_id))
end

-- The request is answered: its spans end (the upstream's timed by nginx's
-- $upstream_response_time, its address and status from $upstream_addr
-- and $upstream_status).
local function trace_end(span)
  local t = wall()
  local child = span.child
  if child then
    local addr = ngx.var.upstream_addr
    local host, port = (addr or ""):match("^%[?(.-)%]?:(%d+)$")
    child:set("server.address", host):set("server.port", tonumber(port))
    local status = tonumber(ngx.var.upstream_status or "")
    child:set("http.response.status_code", status)
    if not status or status >= 400 then child:error(status and tostring(status) or "no_response") end
    local took = tonumber(ngx.var.upstream_response_time or "")
    child:finish(took and math.min(child.start_time + took, t) or t)
  end
  span:finish(t)
end

-- The JSON-RPC error a reply of the gateway's gives, on a span no decision failed.
local function trace_reply(span, reply)
  local code = reply:match('^{"jsonrpc":"2.0","id":.-,"error":{"code":(%-?%d+)[,}]')
  if code then
    span:set("rpc.response.status_code", code)
    if span.status ~= otel.STATUS.ERROR then span:error(code) end
  end
end

-- The operator's opt-in (otlp.capture_content): a call's arguments, bounded.
local function trace_arguments(span, call)
  if span:get("gen_ai.tool.call.arguments") then return end
  local v = json.decode(decision.codec(), call)
  if type(v) ~= "table" or v.arguments == nil then return end
  span:set("gen_ai.tool.call.arguments", otel.cut(enc(v.arguments), otlp.max_attribute_bytes))
end

-- What every audit record of this worker carries (toolgate.audit).
local function audit_opts()
  return { source = "gateway", worker = ngx.worker.pid(), audit = W.engine and W.engine:snapshot().policy.audit }
end

local function observe(ev)
  local m = W.metrics
  if ev.kind == "decision" then
    local d, mode = ev.decision, ev.mode or "enforce"
    m:add(decision_series(ev.phase, d, mode), 1)
    if ev.phase ~= "method" then m:add(tool_series(ev.server, ev.tool, d, mode), 1) end
    local span = tracer and ngx.ctx.otel
    if span then
      otel.decided(span, ev, wall())
      if otlp.capture_content and ev.call then trace_arguments(span, ev.call) end
      ev.trace_id, ev.span_id = span.trace_id, span.span_id
    end
    if log_file or opts.decision_log then
      log_line(audit.decision(ev, ngx.now(), audit_opts()))
    end
  elseif ev.kind == "approval" then
    m:inc("toolgate_approval_events_total", { event = ev.event })
    if ev.event == "requested" and hook_queue then notify(ev) end
    -- (a person's yes in their client; the admin API's decisions are recorded where they are made)
    if ev.record and (log_file or opts.decision_log) then
      log_line(audit.approval(ev.record, ev.event, ngx.now(), audit_opts()))
    end
  elseif ev.kind == "pin_change" then
    m:inc("toolgate_pin_changes_total", { server = ev.server, change = ev.change.change })
    ngx.log(ngx.WARN, "toolgate: the tools/list of ", ev.server, " differs from the registry's pins: ", ev.change.change,
      " tool ", ev.tool)
    log_line(audit.pin_change(ev, ngx.now(), audit_opts()))
  elseif ev.kind == "store_error" then
    -- (a full shared dict: its calls are refused by this worker, which keeps the record itself)
    m:inc("toolgate_state_store_errors_total", { op = ev.op })
    ngx.log(ngx.ERR, "toolgate: the state store cannot keep a ", ev.op, " of server ", ev.server,
      ev.tool and (" tool " .. ev.tool) or "", ": ", ev.message, "; this worker refuses its calls all the same")
  end
end

-- Engines: built in the master, rebuilt on a reload -------------------------

-- An engine built: said in the error log and counted, by process (the
-- workers share the master's; a worker builds only for a reload).
built = function(where, e, t0)
  local snap = e:snapshot()
  local mdict = ngx.shared[opts.metrics_dict]
  if mdict then
    local m = metrics_mod.new(mdict)
    m:inc("toolgate_engine_builds_total", { process = where })
    m:flush()
  end
  ngx.log(ngx.NOTICE, "toolgate: the ", where, " built the engine: ", #snap.registry.tools, " tools, registry_hash ",
    snap.hash, ", policy_version ", tostring(snap.version), ", in ", string.format("%.3f", now() - t0), " s")
end

-- A new engine from the policy and registry files (a reload).
local function build()
  local t0 = now()
  local e, err, code = toolgate.new{ policy = opts.policy, registry = opts.registry, limits = opts.limits,
    state = W.store }
  if not e then return nil, err, code end
  built("worker", e, t0)
  return e
end

-- Makes e this worker's engine, with a gateway of its own: a request keeps
-- the gateway (and so the snapshot) it started with to its end, whatever
-- a reload swaps in meanwhile (M.access).  What a gateway could not store
-- (mcp.lua: keyed by registry hash) goes on to the next.
local function adopt(e)
  e:use_state(W.store)
  local gw, err, code = mcp.new{ engine = e, state = W.store, observe = observe,
    hints = { approval = "A person grants it on the gateway's admin API: POST /v1/approvals/%s/grant" } }
  if not gw then return nil, err, code end
  if W.gw then gw.unstored = W.gw.unstored end
  local api_ctx = assert(e:context(opts.api_context or {}))
  -- the decision API decides a call naming a route's server in that route's
  -- context, as /mcp/SERVER does (one context rule for both); a context
  -- that does not compile is left to the engine, whose decision says why
  local route_ctx, routes = {}, {}
  for server, r in pairs(opts.routes) do
    route_ctx[server] = e:context(r.context or {}) or (r.context or {})
    routes[server] = gw:route(server, r.context)
  end
  -- (one step, nothing yields in it: a request sees the old set or the new)
  W.engine, W.gw, W.api_ctx, W.route_ctx, W.routes = e, gw, api_ctx, route_ctx, routes
  return true
end

-- Builds an engine from the files and swaps it in, holding the build
-- lease (false: another worker holds it).  -> true | false | nil, message, code
local function rebuild()
  local pid = ngx.worker.pid()
  -- (a dict too full for the lease only loses the one-at-a-time)
  local leased, why = W.dict:add(BUILDING_KEY, pid, BUILD_LEASE)
  if not leased and why == "exists" then return false end
  local ok, err, code = build()
  if ok then ok, err, code = adopt(ok) end
  if W.dict:get(BUILDING_KEY) == pid then W.dict:delete(BUILDING_KEY) end
  W.metrics:inc("toolgate_reloads_total", { result = ok and "success" or "failure" })
  return ok or nil, err, code
end

-- The reload version this worker decides with (or failed to build: then
-- its old snapshot), for the admin API's answer to wait on.
local function decides_with(v)
  W.version = v
  W.dict:set(WORKER_KEY .. ngx.worker.id(), v)
end

-- A reload another worker made: built here too, from the timer, never on a
-- request's path, and by one worker at a time, so the others go on answering
-- while one builds (a request keeps deciding with the snapshot in force
-- until then: M.admin's reload answers when every worker has swapped).
local function follow_reload()
  local v = W.dict:get(VERSION_KEY) or 0
  if v == W.version then return end
  local ok, err, code = rebuild()
  if ok == false then return end -- (the next tick)
  decides_with(v)
  if not ok then ngx.log(ngx.ERR, "toolgate: reload failed in this worker, the old snapshot stays: ", code, ": ", err) end
end

--- init_worker(): in init_worker_by_lua.  This worker's gateway, on the master's engine.
function M.init_worker()
  if not opts then error("toolgate.nginx.init_worker: toolgate.nginx.init did not run (init_by_lua_block)", 2) end
  local dict = ngx.shared[opts.dict]
  local mdict = ngx.shared[opts.metrics_dict]
  if not dict or not mdict then
    ngx.log(ngx.ERR, "toolgate: lua_shared_dict ", opts.dict, " and ", opts.metrics_dict, " are needed")
    return
  end
  W.dict, W.metrics = dict, metrics_mod.new(mdict)
  if opts.webhooks and #opts.webhooks > 0 then
    hook_queue = webhooks.queue(opts.webhooks, { attempts = opts.webhook_attempts, backoff = opts.webhook_backoff })
  end
  if redis_opts then
    W.store = require("toolgate.state.redis").new(dict, redis_opts)
    W.store:start()
  else
    W.store = shared_dict.new(dict)
  end
  W.latency = {}
  for _, phase in ipairs({ "request", "response", "api" }) do
    W.latency[phase] = W.metrics:histogram("toolgate_decision_seconds", { phase = phase })
  end
  -- what waits in this worker (log lines, metric additions) is written out
  -- every FLUSH_SECONDS, and when the worker exits (the timer's last run);
  -- a reload another worker made is followed then too
  if otlp then
    tracer = otel.tracer{ service_name = otlp.service_name, max_queue = otlp.max_queue, random = otel.urandom() }
    ngx.timer.every(otlp.interval, export_spans)
  end
  ngx.timer.every(FLUSH_SECONDS, function(premature)
    if log_file then flush_log() end
    W.metrics:flush()
    if not premature then follow_reload() end
  end)
  W.version = dict:get(VERSION_KEY) or 0
  -- the master's engine, unless a reload came since (a worker nginx started again)
  local e, err, code = inherited, nil, nil
  if W.version ~= inherited_version then e, err, code = build() end
  inherited = nil
  local ok = e
  if e then ok, err, code = adopt(e) end
  if not ok then
    W.error = tostring(code) .. ": " .. tostring(err)
    ngx.log(ngx.ERR, "toolgate: the engine could not be built: ", W.error)
  end
  decides_with(W.version)
end

local function send(status, body, ctype)
  local span = tracer and ngx.ctx.otel
  if span then trace_end(span) end
  ngx.status = status
  ngx.header["Content-Type"] = ctype or "application/json"
  ngx.print(body)
  return ngx.exit(status)
end

local function unavailable()
  return send(503, '{"jsonrpc":"2.0","id":null,"error":{"code":' .. mcp.CODES.POLICY_ERROR .. ',"message":'
    .. enc("toolgate: the gateway has no engine: " .. tostring(W.error or "not initialized")) .. "}}")
end

local function read_body()
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body then return body end
  local path = ngx.req.get_body_file() -- nginx buffered a large body to a file
  if not path then return "" end
  local f = io.open(path, "rb")
  if not f then return nil end
  body = f:read("*a")
  f:close()
  return body
end

-- The MCP endpoint ---------------------------------------------------------------

-- The methods of an MCP endpoint that pass undecided, and only without a body.
local BODYLESS = { GET = true, DELETE = true, HEAD = true, OPTIONS = true }

-- Whether a Content-Encoding header (its values joined) says the bytes are
-- the message itself: absent, or identity only.
local function identity_coding(ce)
  if type(ce) == "table" then ce = table.concat(ce, ",") end
  if ce == nil then return true end
  for coding in (ce .. ","):gmatch("([^,]*),") do
    coding = coding:match("^%s*(.-)%s*$"):lower()
    if coding ~= "identity" and coding ~= "" then return false end
  end
  return true
end

-- Why a POST's body would be read otherwise by the server than the core
-- reads it (UTF-8 JSON bytes): nil, or a code and why.  A server may
-- decode a body by its charset (express.json(): utf-7, utf-16, through
-- iconv-lite) or inflate it (gzip, deflate, br): the same bytes would be
-- another message there.  Only application/json is decided, as the SDK's
-- servers take only that; a charset parameter must say UTF-8 (absent: it is).
local function unreadable_body(headers)
  local ce = headers["content-encoding"]
  if not identity_coding(ce) then
    return "ENCODED_REQUEST", "a body with Content-Encoding " .. (type(ce) == "table" and table.concat(ce, ", ") or ce)
      .. " is not decided: send it unencoded"
  end
  local ct = headers["content-type"]
  if type(ct) ~= "string" then
    return "UNSUPPORTED_MEDIA_TYPE", ct and "a body with more than one Content-Type is not decided"
      or "a body without Content-Type is not decided: application/json"
  end
  ct = ct:lower()
  local semi = ct:find(";", 1, true)
  local media = (semi and ct:sub(1, semi - 1) or ct):match("^%s*(.-)%s*$")
  if media ~= "application/json" then
    return "UNSUPPORTED_MEDIA_TYPE", "a body of Content-Type " .. media .. " is not decided: application/json"
  end
  for name, v in ct:sub(semi or #ct + 1):gmatch(";%s*([^=;%s]*)%s*=%s*([^;]*)") do
    v = v:match("^(.-)%s*$")
    if name == "charset" and (v:match('^"(.*)"$') or v) ~= "utf-8" then
      return "UNSUPPORTED_CHARSET", "a body in charset " .. v .. " is not decided: JSON in UTF-8"
    end
  end
  return nil
end

-- A refusal of what a message came wrapped in, unread: a decision like the
-- core's framing refusals, observed (logged, counted); returns the error's
-- data ({"decision": ...}, JSON text).
local function refused_unread(route, phase, code, message)
  local snap = W.engine:snapshot()
  local d = decision.from_table({ verdict = "reject", stage = "decode", code = code, message = message,
    server = route.server, policy_version = snap.version, registry_hash = snap.hash })
  observe({ kind = "decision", phase = phase, server = route.server, decision = d })
  return '{"decision":' .. d:json() .. "}"
end

-- Who asks: the value of init's principal_header, which the auth layer
-- sets; nil when the option is not set.  A request that names nobody, or
-- names someone twice or in a malformed way, is refused (a second, nil
-- return: the status, the answer): missing means the layer in front did not
-- authenticate it, and deciding it as nobody's would lose who asked.
local function principal_of(route)
  local name = opts.principal_header
  if not name then return nil end
  local v = ngx.req.get_headers(0)[name:lower()]
  local code, why, status
  if v == nil then
    code, why, status = "NO_PRINCIPAL", "the request names no principal: the " .. name .. " header the auth layer "
      .. "sets is missing", 401
  elseif type(v) ~= "string" then
    code, why, status = "BAD_PRINCIPAL", "the " .. name .. " header comes more than once", 400
  elseif not mcp.principal_valid(v) then
    code, why, status = "BAD_PRINCIPAL", "the " .. name .. " header is no principal's name (1 to "
      .. mcp.MAX_PRINCIPAL_BYTES .. " letters, digits or . _ - @ + : / = |)", 400
  else
    return v
  end
  return nil, status, mcp.error_reply("null", mcp.CODES.INVALID_REQUEST, "toolgate: " .. why,
    refused_unread(route, "method", code, why))
end

-- The HTTP status of an answer the gateway gives itself, by its JSON-RPC
-- code: 400 for the codes the spec answers so (2026-07-28, Streamable HTTP:
-- a header mismatch, an unsupported version), 200 for any other.
local STATUS_OF = {}
for name, status in pairs({ HEADER_MISMATCH = 400, UNSUPPORTED_PROTOCOL_VERSION = 400 }) do
  STATUS_OF[assert(mcp.CODES[name], name)] = status
end

local function reply_status(reply)
  local code = reply:match('^{"jsonrpc":"2.0","id":.-,"error":{"code":(%-?%d+)[,}]')
  return code and STATUS_OF[tonumber(code)] or 200
end

-- The value of params[member] of a message, when a string (the Mcp-Name of
-- prompts/get, resources/read, tasks/*: small bodies the frame does not name).
local function param_string(text, member)
  local doc = decision.codec():parse(text)
  if not doc then return nil end
  local root = doc:root()
  local params = root:type() == "object" and root:get("params")
  local v = params and params:type() == "object" and params:get(member)
  v = v and v:type() == "string" and v:value() or nil
  doc:free()
  return v
end

-- A call's arguments (a Lua table) read from its call text when asked for
-- (toolgate.mcp.headers' msg.arguments()): a table called, not a closure
-- made per message (LuaJIT does not compile FNEW).
local ARGUMENTS_MT = { __call = function(self)
  local call = self.call and json.decode(decision.codec(), self.call)
  return type(call) == "table" and call.arguments or {}
end }

-- Whether a POST's MCP headers agree with its body (toolgate.mcp.headers),
-- read from the frame the core read: the body is read again only for an
-- Mcp-Name the frame does not carry, and a call's arguments only when its
-- tool declares Mcp-Param headers or the request carries one.  Runs before
-- the message is decided (Gateway:request's precheck): a mismatch is answered
-- -32020 here, never forwarded, since a router behind may trust the headers.
local function header_check(req, frame, text)
  req.frame = frame
  if req.span and frame.kind == "batch" then req.span.batch = true end
  local msg
  if frame.kind == "batch" then
    msg = { batch = true }
  elseif frame.kind == "message" then
    local m = frame.method
    msg = { request = frame.id ~= nil and m ~= nil, method = m, protocol_version = frame.protocol_version }
    local source = m and mcp_headers.NAME_SOURCE[m]
    if m == "tools/call" then
      msg.name = frame.name
      local t = frame.name and req.gw.engine:snapshot().registry.by_key[req.server .. "\0" .. frame.name]
      if t and t.param_headers_error then
        msg.params, msg.params_error = false, t.param_headers_error
      else
        msg.params = t and t.param_headers
      end
      msg.arguments = setmetatable({ call = frame.call }, ARGUMENTS_MT)
    elseif source and (req.headers["mcp-name"] ~= nil or msg.request and msg.protocol_version) then
      msg.name = param_string(text, source)
    end
  else
    return nil -- (not an object: refused as such)
  end
  local why = mcp_headers.check(req.headers, msg)
  if not why then return nil end
  return mcp.error_reply(frame.id or "null", mcp.CODES.HEADER_MISMATCH, "toolgate: the request's headers and body "
    .. "disagree: " .. why, refused_unread(req.route, "method", "HEADER_MISMATCH", why))
end

--- access(server): in access_by_lua of the location of server's MCP endpoint.
function M.access(server)
  if not W.gw then return unavailable() end
  -- this request's gateway, to its end (header and body filters too)
  local gw, route = W.gw, W.routes[server]
  if not route then
    return send(500, '{"error":' .. enc("toolgate: no route for server " .. tostring(server)) .. "}")
  end
  local method = ngx.req.get_method()
  local span = tracer and method == "POST" and trace_request(route)
  local principal, status, refusal = principal_of(route)
  if status then return send(status, refusal) end
  if method ~= "POST" then
    -- what is not decided carries no message: a server that read one from
    -- a PUT, or from a GET's body, would run what nobody checked
    if not BODYLESS[method] then
      return send(405, '{"error":' .. enc("toolgate: method " .. method .. " is not allowed on an MCP endpoint "
        .. "(POST, GET, DELETE, HEAD, OPTIONS)") .. "}")
    end
    local length = ngx.var.http_content_length
    if ngx.var.http_transfer_encoding or (length and length ~= "0") then
      return send(400, '{"error":' .. enc("toolgate: a " .. method .. " request with a body: only a POST's body "
        .. "is decided") .. "}")
    end
    -- nor do its headers name one: a router behind may trust them
    local why = mcp_headers.check_bodyless(ngx.req.get_headers(0))
    if why then
      return send(400, mcp.error_reply("null", mcp.CODES.HEADER_MISMATCH, "toolgate: " .. why,
        refused_unread(route, "method", "HEADER_MISMATCH", why)))
    end
    -- a GET stream carries the server's requests and notifications; an
    -- answer on it answers no request of this one's, and is dropped (body_filter)
    if method == "GET" then ngx.ctx.toolgate = { plan = { pending = {} }, route = route, gw = gw } end
    return
  end
  -- (every header, not the first 100: a Content-Encoding past them is one all the same;
  -- nginx's large_client_header_buffers bound them)
  local headers = ngx.req.get_headers(0)
  local unreadable, why = unreadable_body(headers)
  if unreadable then
    return send(415, mcp.error_reply("null", mcp.CODES.INVALID_REQUEST, "toolgate: " .. why,
      refused_unread(route, "method", unreadable, why)))
  end
  local body = read_body()
  if not body then return send(500, '{"error":"toolgate: the request body could not be read"}') end
  if span then meta_parent(span, body) end
  local t0 = now()
  local req = { headers = headers, route = route, server = server, span = span, gw = gw }
  local ok, plan = pcall(gw.request, gw, route, body, nil, header_check, req,
    principal and { principal = principal })
  if span then trace_message(span, req.frame, headers) end
  if not ok then
    ngx.log(ngx.ERR, "toolgate: deciding failed: ", plan)
    return send(200, '{"jsonrpc":"2.0","id":null,"error":{"code":' .. mcp.CODES.POLICY_ERROR .. ',"message":'
      .. enc("toolgate: the message could not be decided") .. "}}")
  end
  W.latency.request:observe(now() - t0)
  if plan.reply then
    if span then trace_reply(span, plan.reply) end
    return send(reply_status(plan.reply), plan.reply)
  end
  if not plan.forward then -- refused notifications: nothing to answer
    if span then trace_end(span) end
    return ngx.exit(202)
  end
  if plan.forward ~= body then ngx.req.set_body_data(plan.forward) end
  -- the server is told what was decided: JSON in UTF-8, unencoded
  ngx.req.set_header("Content-Type", "application/json")
  ngx.req.clear_header("Content-Encoding")
  if span then trace_upstream(span) end
  -- every answer is read: one to a request of another stream's would reach
  -- the client unread (clients match answers by id, whatever the stream)
  ngx.ctx.toolgate = { plan = plan, route = route, gw = gw }
end

--- header_filter(): in header_filter_by_lua of an MCP endpoint.
function M.header_filter()
  local c = ngx.ctx.toolgate
  if not c then return end
  if ngx.status == 202 and c.plan.inject then
    -- the server had only notifications to take: the answers are the gateway's
    ngx.status = 200
    ngx.header["Content-Type"] = "application/json"
  end
  -- an answer is read as the client will read it: one still encoded (the
  -- server was asked for identity) is refused unread, never passed
  local ce = ngx.header["Content-Encoding"]
  if not identity_coding(ce) then
    if type(ce) == "table" then ce = table.concat(ce, ", ") end
    local why = "the server " .. c.route.server .. " answered with Content-Encoding " .. ce
    ngx.log(ngx.ERR, "toolgate: ", why, ": refused unread (the gateway asks for identity)")
    c.mode, c.refused = "encoded", why .. ", which the gateway does not read: refused unread"
    c.data = refused_unread(c.route, "result", "ENCODED_ANSWER", c.refused)
    ngx.header["Content-Encoding"] = nil
    ngx.header["Content-Type"] = "application/json"
    ngx.header["Content-Length"] = nil
    return
  end
  -- whatever the status: an answer the gateway watches is read, or refused,
  -- however the server labels it (anything but an event stream is read as JSON)
  local ctype = ngx.header["Content-Type"] or ""
  if type(ctype) == "table" then ctype = ctype[1] end
  c.mode = ctype:find("text/event-stream", 1, true) and "sse" or "json"
  ngx.header["Content-Length"] = nil
end

-- Listing again: a server's notifications/tools/list_changed ----------------
--
-- The gateway fetches the list itself (an ngx.timer, a cosocket to the
-- route's upstream URL: an IP literal, as nginx has no resolver configured)
-- and checks it against the pins (Gateway:check_tools), so a tool changed
-- under its pin is refused before any client lists again.  It speaks the era
-- the stream that announced it spoke: modern, a tools/list with the _meta
-- envelope and the standard headers; legacy, initialize first (its session
-- closed after).  Per worker and route: one at a time, at most one every
-- RELIST_SECONDS; an announcement while one runs or waits makes one more.

local RELIST_SECONDS, RELIST_MAX_PAGES = 1, 100
local MODERN, LEGACY = "2026-07-28", "2025-11-25"
local relists = {}

-- One HTTP/1.0 exchange with the upstream: status, headers (lower-case
-- names), body | nil, why.  The body is read by its Content-Length, its
-- chunks, or to the connection's end, bounded by MAX_MESSAGE_BYTES and the
-- timeouts.
local function upstream_http(url, method, body, extra)
  local host, port, path = url:match("^http://%[?([^%]/]-)%]?:(%d+)(/.*)$")
  if not host then return nil, "the upstream URL " .. url .. " is not http://HOST:PORT/PATH" end
  local sock = ngx.socket.tcp()
  sock:settimeouts(2000, 2000, 5000)
  local ok, err = sock:connect(host, tonumber(port))
  if not ok then return nil, "cannot connect to " .. url .. ": " .. tostring(err) end
  local lines = { method .. " " .. path .. " HTTP/1.0", "Host: " .. host .. ":" .. port,
    "Accept: application/json, text/event-stream", "Accept-Encoding: identity", "Connection: close" }
  for k, v in pairs(extra or {}) do lines[#lines + 1] = k .. ": " .. v end
  if body then
    lines[#lines + 1] = "Content-Type: application/json"
    lines[#lines + 1] = "Content-Length: " .. #body
  end
  ok, err = sock:send(table.concat(lines, "\r\n") .. "\r\n\r\n" .. (body or ""))
  if not ok then
    sock:close()
    return nil, "cannot send to " .. url .. ": " .. tostring(err)
  end
  local function fail(why)
    sock:close()
    return nil, "reading " .. url .. ": " .. tostring(why)
  end
  local line, rerr = sock:receive("*l")
  local status = line and tonumber(line:match("^HTTP/%d%.%d (%d%d%d)"))
  if not status then return fail(rerr or "no HTTP status line") end
  local h = {}
  for _ = 1, 100 do
    line, rerr = sock:receive("*l")
    if not line then return fail(rerr) end
    if line == "" then break end
    local k, v = line:match("^([^:]+):[ \t]*(.-)[ \t]*$")
    if k then h[k:lower()] = v end
  end
  if line ~= "" then return fail("more than 100 header lines") end
  -- the body: by Content-Length, chunks, or to the connection's end, never past MAX_MESSAGE_BYTES
  local parts, size = {}, 0
  local function take(n)
    size = size + n
    if size > mcp.MAX_MESSAGE_BYTES then return nil, "an answer longer than " .. mcp.MAX_MESSAGE_BYTES .. " bytes" end
    local data, why = sock:receive(n)
    if not data then return nil, why end
    parts[#parts + 1] = data
    return true
  end
  local length = tonumber(h["content-length"] or "")
  if (h["transfer-encoding"] or ""):lower():find("chunked", 1, true) then
    while true do
      line, rerr = sock:receive("*l")
      local n = line and tonumber(line:match("^(%x+)"), 16)
      if not n then return fail(rerr or "a broken chunk") end
      if n == 0 then break end
      ok, err = take(n)
      if not ok then return fail(err) end
      sock:receive("*l")
    end
  elseif length then
    ok, err = take(length)
    if not ok then return fail(err) end
  else
    while true do
      local data, e, partial = sock:receive(65536)
      data = data or partial
      size = size + #data
      if size > mcp.MAX_MESSAGE_BYTES then return fail("an answer longer than " .. mcp.MAX_MESSAGE_BYTES .. " bytes") end
      parts[#parts + 1] = data
      if e == "closed" then break end
      if e then return fail(e) end
    end
  end
  sock:close()
  return status, h, table.concat(parts)
end

-- The JSON-RPC answer with id (a string) in an upstream's answer (JSON, or
-- an event stream): its text | nil.
local function answer_with(h, body, id)
  local texts = {}
  if (h["content-type"] or ""):find("text/event-stream", 1, true) then
    for event in (body:gsub("\r\n?", "\n") .. "\n\n"):gmatch("(.-)\n\n") do
      local data = {}
      for d in (event .. "\n"):gmatch("data: ?([^\n]*)\n") do data[#data + 1] = d end
      if #data > 0 then texts[#texts + 1] = table.concat(data, "\n") end
    end
  else
    texts[1] = body
  end
  for _, text in ipairs(texts) do
    local doc = decision.codec():parse(text)
    if doc then
      local root = doc:root()
      local v = root:type() == "object" and root:get("id")
      local same = v and v:type() == "string" and v:value() == id
      doc:free()
      if same then return text end
    end
  end
  return nil
end

-- Every page of the upstream's tools/list: the tools as one JSON array | nil, why.
local function fetch_tools(url, era)
  local extra, sid = { ["MCP-Protocol-Version"] = era == "modern" and MODERN or LEGACY }, nil
  local meta = { ["io.modelcontextprotocol/protocolVersion"] = MODERN, ["io.modelcontextprotocol/clientCapabilities"] =
    {}, ["io.modelcontextprotocol/clientInfo"] = { name = "toolgate", version = "1" } }
  if era ~= "modern" then
    local status, h, body = upstream_http(url, "POST", enc({ jsonrpc = "2.0", id = "toolgate-init", method = "initialize",
      params = { protocolVersion = LEGACY, capabilities = {},
        clientInfo = { name = "toolgate", version = "1" } } }))
    if not status then return nil, h end
    local a = answer_with(h, body, "toolgate-init")
    a = a and json.decode(decision.codec(), a)
    if status ~= 200 or type(a) ~= "table" or type(a.result) ~= "table" then
      return nil, "initialize was answered " .. tostring(status)
    end
    sid = h["mcp-session-id"]
    extra["MCP-Protocol-Version"] = type(a.result.protocolVersion) == "string" and a.result.protocolVersion or LEGACY
    extra["Mcp-Session-Id"] = sid
    upstream_http(url, "POST", '{"jsonrpc":"2.0","method":"notifications/initialized"}', extra)
  else
    extra["Mcp-Method"] = "tools/list"
  end
  local tools, cursor, err = {}, nil, nil
  for page = 1, RELIST_MAX_PAGES do
    local id = "toolgate-relist-" .. page
    local params = { cursor = cursor, _meta = era == "modern" and meta or nil }
    local status, h, body = upstream_http(url, "POST", enc({ jsonrpc = "2.0", id = id, method = "tools/list",
      params = params }), extra)
    if not status then err = h break end
    local a = answer_with(h, body, id)
    local list, next_cursor
    if a then list, next_cursor = mcp.list_page(a) end
    if status ~= 200 or not list then
      err = "tools/list was answered " .. tostring(status) .. ": " .. tostring(a and next_cursor or "no answer")
      break
    end
    for _, t in ipairs(list) do tools[#tools + 1] = t end
    cursor = next_cursor
    if not cursor then break end
    if page == RELIST_MAX_PAGES then err = "more than " .. RELIST_MAX_PAGES .. " pages" end
  end
  if sid then upstream_http(url, "DELETE", nil, { ["Mcp-Session-Id"] = sid }) end
  if err then return nil, err end
  return "[" .. table.concat(tools, ",") .. "]"
end

local start_relist

local function run_relist(premature, route, era)
  local r = relists[route.server]
  if premature then return end
  local ok, n, err = pcall(function()
    local text, why = fetch_tools(opts.routes[route.server].upstream, era)
    if not text then return nil, why end
    return W.gw:check_tools(route, text)
  end)
  if not ok or not n then
    ngx.log(ngx.ERR, "toolgate: listing the tools of ", route.server, " again (it said they changed) failed: ",
      tostring(ok and err or n))
  elseif n > 0 then
    ngx.log(ngx.WARN, "toolgate: ", route.server, " said its tools changed: ", n, " change(s) against the pins")
  end
  r.last, r.busy = ngx.now(), false
  if r.again then
    local e = r.again
    r.again = nil
    start_relist(route, e)
  end
end

start_relist = function(route, era)
  local r = relists[route.server]
  if not r then
    r = {}
    relists[route.server] = r
  end
  if r.busy then
    r.again = r.again or era
    return
  end
  local up = opts.routes[route.server] and opts.routes[route.server].upstream
  if not up then
    ngx.log(ngx.WARN, "toolgate: ", route.server, " said its tools changed, but its route has no upstream URL to "
      .. "list them from (toolgate.nginx.init's routes[server].upstream): a client's next tools/list checks them")
    return
  end
  r.busy = true
  local ok, err = ngx.timer.at(math.max(0, (r.last or 0) + RELIST_SECONDS - ngx.now()), run_relist, route, era)
  if not ok then
    r.busy = false
    ngx.log(ngx.ERR, "toolgate: cannot list the tools of ", route.server, " again: ", err)
  end
end

-- Whether a message of the server's is notifications/tools/list_changed
-- (the text is searched first: most messages are read no further).
local function list_changed(text)
  if not text:find("notifications/tools/list_changed", 1, true) then return false end
  local v = json.decode(decision.codec(), text)
  return type(v) == "table" and v.method == "notifications/tools/list_changed" and v.id == nil
end

-- The server's message as the client gets it: text, or nil and why it is
-- dropped (logged here).
local function respond(c, text)
  if list_changed(text) then start_relist(c.route, c.plan.era) end
  local span = tracer and otlp.capture_content and ngx.ctx.otel
  if span and span:get("mcp.method.name") == "tools/call" and not span:get("gen_ai.tool.call.result") then
    span:set("gen_ai.tool.call.result", otel.cut(text, otlp.max_attribute_bytes))
  end
  local t0 = now()
  local ok, out, why = pcall(c.gw.response, c.gw, c.route, c.plan, text)
  W.latency.response:observe(now() - t0)
  if ok then
    if not out then ngx.log(ngx.WARN, "toolgate: dropped a message from the server ", c.route.server, ": ", why) end
    return out, why
  end
  ngx.log(ngx.ERR, "toolgate: reading the server's answer failed: ", out)
  return '{"jsonrpc":"2.0","id":null,"error":{"code":' .. mcp.CODES.POLICY_ERROR
    .. ',"message":"toolgate: the server\'s answer could not be checked"}}'
end

-- One SSE event (its lines end in LF): its data lines are one JSON-RPC
-- message; the event comes back unchanged unless the gateway rewrote the
-- message, or a comment when it dropped it.
local function sse_event(c, event)
  local data, others = {}, {}
  for line in (event .. "\n"):gmatch("(.-)\n") do
    local d = line == "data" and "" or line:match("^data: ?(.*)$")
    if d then data[#data + 1] = d else others[#others + 1] = line end
  end
  local text = table.concat(data, "\n")
  -- no message (a priming event for resumption: an id and empty data)
  if not text:find("%S") then return event end
  local out, why = respond(c, text)
  if out == text then return event end
  if not out then return ": toolgate dropped a message: " .. tostring(why):gsub("[\r\n]", " ") end
  others[#others + 1] = "data: " .. out
  return table.concat(others, "\n")
end

local function events(list)
  local out = {}
  for _, a in ipairs(list or {}) do out[#out + 1] = "event: message\ndata: " .. a .. "\n\n" end
  return table.concat(out)
end

-- Errors for the requests the server's answer left in flight (it ended).
local function unanswered(c, why)
  return mcp.unanswered(c.plan, "the server's answer ended without answering this request"
    .. (why and (" (it dropped " .. why .. ")") or ""))
end

-- The server's answer, chunk by chunk (ngx.arg), as the client gets it.
local function filter(c)
  local chunk, eof = ngx.arg[1], ngx.arg[2]
  if c.mode == "encoded" then
    -- nothing of it passes, and the answer ends here, at its first bytes
    -- (a server may keep it open): the requests in flight get errors, the
    -- batch's refused their answers
    if c.ended then
      ngx.arg[1] = nil
      return
    end
    local out = mcp.unanswered(c.plan, c.refused, mcp.CODES.INTERNAL_ERROR, c.data)
    for _, a in ipairs(c.plan.inject or {}) do out[#out + 1] = a end
    c.ended = true
    ngx.arg[1] = (#out > 1 or c.plan.batch and #out > 0) and ("[" .. table.concat(out, ",") .. "]") or out[1] or ""
    ngx.arg[2] = true
    return
  end
  if c.mode == "json" then
    -- (an answer longer than MAX_MESSAGE_BYTES is not held: it is dropped)
    if not c.over then
      c.buf, c.size = c.buf or {}, (c.size or 0) + #chunk
      c.buf[#c.buf + 1] = chunk
      if c.size > mcp.MAX_MESSAGE_BYTES then c.over, c.buf = true, {} end
    end
    if not eof then
      ngx.arg[1] = nil
      return
    end
    local text = table.concat(c.buf)
    local out, why
    if text:find("%S") then out, why = respond(c, text) end
    if c.over then
      why = "an answer longer than " .. mcp.MAX_MESSAGE_BYTES .. " bytes"
      ngx.log(ngx.WARN, "toolgate: dropped ", why, " from the server ", c.route.server)
    end
    local left = unanswered(c, why)
    if c.plan.batch then
      for _, a in ipairs(c.plan.inject or {}) do left[#left + 1] = a end
      out = mcp.merge(out, left)
    elseif #left > 0 then
      if out then table.insert(left, 1, out) end
      out = #left == 1 and left[1] or ("[" .. table.concat(left, ",") .. "]")
    end
    ngx.arg[1] = out or ""
    return
  end
  -- text/event-stream: complete events are decided as they arrive, read as
  -- the SSE standard (and so the client's parser) reads them: a line ends
  -- in CRLF, LF or CR alone, and a byte order mark before the first is no
  -- part of it.  What goes on is the gateway's writing of what it read
  -- (lines end in LF), so the client reads what was checked.  An event's
  -- parts wait in a list and only the new bytes are searched, so a long
  -- event costs its length once, not once a chunk; one longer than
  -- MAX_MESSAGE_BYTES is dropped as it comes.
  chunk = (c.held or "") .. chunk
  c.held = nil
  if not c.started then
    if #chunk < 3 and not eof then
      c.held, ngx.arg[1] = chunk, nil
      return
    end
    c.started, chunk = true, chunk:gsub("^\239\187\191", "")
    c.parts, c.size, c.tail = {}, 0, ""
  end
  if not eof and chunk:sub(-1) == "\r" then c.held, chunk = "\r", chunk:sub(1, -2) end -- an LF may follow
  chunk = chunk:gsub("\r\n?", "\n")
  -- the search runs over the last byte before this chunk (an LF there and
  -- one first here end an event) and the chunk
  local search, off = c.tail .. chunk, #c.tail
  local out, pos = {}, 1
  while true do
    local s, e = search:find("\n\n", pos, true)
    if not s then break end
    local event
    if pos == 1 and c.size > 0 then -- the event began in an earlier chunk
      event = c.skipping and "" or table.concat(c.parts)
      event = s <= off and event:sub(1, -2) or (event .. search:sub(off + 1, s - 1))
      c.parts, c.size = {}, 0
    else
      event = search:sub(pos > off and pos or off + 1, s - 1)
    end
    if c.skipping then c.skipping = false else out[#out + 1] = sse_event(c, event) .. "\n\n" end
    pos = e + 1
  end
  local rest = search:sub(math.max(pos, off + 1))
  if rest ~= "" then
    if not c.skipping then c.parts[#c.parts + 1] = rest end
    c.size, c.tail = c.size + #rest, rest:sub(-1) == "\n" and "\n" or ""
  elseif pos > 1 then
    c.tail = ""
  end
  if not c.skipping and c.size > mcp.MAX_MESSAGE_BYTES then
    ngx.log(ngx.WARN, "toolgate: dropped an event longer than ", mcp.MAX_MESSAGE_BYTES, " bytes from the server ",
      c.route.server)
    c.skipping, c.parts = true, {}
  end
  if eof then
    -- an event the stream ended in the middle of is dropped (so does the client's parser)
    if not c.skipping and table.concat(c.parts):find("%S") then
      ngx.log(ngx.WARN, "toolgate: dropped an unended event from the server ", c.route.server)
    end
    out[#out + 1] = events(c.plan.inject) .. events(unanswered(c))
    c.parts, c.size = {}, 0
  end
  ngx.arg[1] = table.concat(out)
end

--- body_filter(): in body_filter_by_lua of an MCP endpoint.
function M.body_filter()
  local c = ngx.ctx.toolgate
  if not c or not c.mode then return end
  filter(c)
  -- (the last chunk: the request's spans end)
  local span = tracer and ngx.arg[2] and ngx.ctx.otel
  if span then trace_end(span) end
end

-- The decision API ----------------------------------------------------------------

local function registry_json()
  local snap = W.engine:snapshot()
  local tools = setmetatable({}, value.array_mt)
  for i, t in ipairs(snap.registry.tools) do
    tools[i] = { server = t.server, name = t.name, pin = t.pin, contract = t.contract }
  end
  return enc({ policy_version = snap.version, registry_hash = snap.hash, tools = tools })
end

local function quarantined_gauges(snap)
  local store = W.store
  local servers, tools, det = 0, 0, 0
  for _, q in ipairs(store:quarantined_servers()) do
    if q.registry_hash == snap.hash then servers = servers + 1 end
  end
  for _, r in ipairs(store:pin_reports()) do
    if r.registry_hash == snap.hash and r.change.change == "changed" then tools = tools + 1 end
  end
  for _, r in pairs(store:records()) do
    if r.quarantined then det = det + 1 end
  end
  return {
    { "toolgate_quarantined", { kind = "server" }, servers },
    { "toolgate_quarantined", { kind = "tool" }, tools },
    { "toolgate_quarantined", { kind = "determinism" }, det },
  }
end

local function metrics_text()
  W.metrics:flush()
  local snap = W.engine:snapshot()
  local gauges = quarantined_gauges(snap)
  -- (a store that cannot list its approvals now, Redis away, shows none: toolgate_state_store_up says why)
  local approvals = W.store:approvals()
  if approvals then
    local counts = { pending = 0, granted = 0, denied = 0, used = 0 }
    for _, r in ipairs(approvals) do counts[r.status] = (counts[r.status] or 0) + 1 end
    for state, n in pairs(counts) do gauges[#gauges + 1] = { "toolgate_approvals", { state = state }, n } end
    -- (this node's events against the store's requests: on a fleet's shared
    -- store the two do not match, and the gauge is left out)
    if not W.store.health then
      local mdict = W.metrics.dict
      local function ev(name) return mdict:get(W.metrics:key("toolgate_approval_events_total", { event = name })) or 0 end
      local expired = ev("requested") - ev("granted") - ev("denied") - counts.pending
      gauges[#gauges + 1] = { "toolgate_approvals_expired", nil, math.max(expired, 0) }
    end
  end
  if W.store.health then
    local hl = W.store:health()
    gauges[#gauges + 1] = { "toolgate_state_store_up", nil, hl.up and 1 or 0 }
    gauges[#gauges + 1] = { "toolgate_state_store_degraded", nil, hl.degraded and 1 or 0 }
    gauges[#gauges + 1] = { "toolgate_state_store_sync_age_seconds", nil, hl.age or -1 }
    gauges[#gauges + 1] = { "toolgate_state_store_pending_writes", nil, hl.pending }
    for op, n in pairs(hl.errors) do gauges[#gauges + 1] = { "toolgate_state_store_errors_total", { op = op }, n } end
  end
  gauges[#gauges + 1] = { "toolgate_info", { policy_version = snap.version, registry_hash = snap.hash }, 1 }
  return W.metrics:render(gauges)
end

-- /v1/verify's body: {"call": ..., "result": ...}
local function verify(body)
  local doc, err = decision.codec():parse(body)
  if not doc then return nil, "the body is not JSON: " .. tostring(err) end
  local root = doc:root()
  local call, result = root:type() == "object" and root:get("call"), root:type() == "object" and root:get("result")
  if not call or not result then
    doc:free()
    return nil, 'the body must be {"call": ..., "result": ...}'
  end
  local ctext, rtext = assert(call:canon(nil, "exact")), assert(result:canon(nil, "exact"))
  doc:free()
  local d = W.engine:verify(ctext, rtext, W.api_ctx)
  local rctx = d.server and W.route_ctx[d.server]
  if rctx then d = W.engine:verify(ctext, rtext, rctx) end
  return d
end

local function api_error(status, msg) return send(status, '{"error":' .. enc(msg) .. "}") end

--- api(): content_by_lua of the decision API: POST /v1/check,
-- /v1/classify, /v1/verify; GET /v1/registry, /healthz, /metrics.
function M.api()
  if not W.engine then
    if ngx.var.uri == "/healthz" then
      return send(503, enc({ status = "error", error = W.error or "not initialized" }))
    end
    return unavailable()
  end
  local uri, method = ngx.var.uri, ngx.req.get_method()
  if uri == "/healthz" then
    local snap = W.engine:snapshot()
    return send(200, enc({ status = "ok", policy_version = snap.version, registry_hash = snap.hash }))
  elseif uri == "/metrics" then
    return send(200, metrics_text(), "text/plain; version=0.0.4")
  elseif uri == "/v1/registry" and method == "GET" then
    return send(200, registry_json())
  end
  local kind = uri:match("^/v1/(%a+)$")
  if method ~= "POST" or not (kind == "check" or kind == "classify" or kind == "verify") then
    return api_error(404, "no such endpoint: " .. method .. " " .. uri)
  end
  local body = read_body()
  if not body then return api_error(500, "the request body could not be read") end
  local t0 = now()
  local d, err
  if kind == "check" then
    d = W.engine:check(body, W.api_ctx)
    -- a call to a route's server: decided again in the route's context
    local rctx = d.server and W.route_ctx[d.server]
    if rctx then d = W.engine:check(body, rctx) end
  elseif kind == "classify" then
    d = W.engine:classify(body, opts.api_context)
  else
    d, err = verify(body)
    if not d then return api_error(400, err) end
  end
  W.latency.api:observe(now() - t0)
  W.metrics:inc("toolgate_decisions_total", { phase = kind, stage = d.stage or "", verdict = d.verdict,
    code = d.code or "", mode = "enforce" })
  return send(200, d:json())
end

-- The admin API --------------------------------------------------------------------

-- Whether given is the expected secret, in a time that depends on given's
-- length alone: every byte is compared, a length difference counts, and
-- nothing stops early (a comparison that stops at the first difference
-- tells a prober how much of a guess was right).
local function same_secret(given, expected)
  local diff = bit.bxor(#given, #expected)
  for i = 1, #given do
    diff = bit.bor(diff, bit.bxor(given:byte(i), expected:byte((i - 1) % #expected + 1)))
  end
  return diff == 0
end

-- authorized() -> who | nil, status, message: the bearer token, or the web
-- inbox's session (toolgate.inbox: its cookie, CSRF token and origin)
local function authorized()
  if not token then return nil, 401, "the admin API has no token configured" end
  local h = ngx.var.http_authorization
  if h ~= nil then
    if same_secret(h, "Bearer " .. token) then return "admin API" end
    return nil, 401, "a valid bearer token is needed"
  end
  return inbox.authorized(W.dict)
end

-- How long POST /v1/reload waits, in all, for the build lease and then for
-- every worker to swap (each builds in turn: seconds each for 10,000 tools).
local RELOAD_WAIT = 600

-- Whether every worker decides with reload version v (or failed to build it).
local function all_at(v)
  for id = 0, ngx.worker.count() - 1 do
    if (W.dict:get(WORKER_KEY .. id) or 0) < v then return false end
  end
  return true
end

local function reload()
  local deadline = ngx.now() + RELOAD_WAIT
  local ok, err, code = rebuild()
  while ok == false and ngx.now() < deadline do -- (a worker still builds an earlier reload)
    ngx.sleep(0.05)
    ok, err, code = rebuild()
  end
  if ok == false then ok, err, code = nil, "another reload is still being built", "RELOAD_BUSY" end
  if not ok then
    ngx.log(ngx.ERR, "toolgate: reload failed, the old snapshot stays: ", code, ": ", err)
    local snap = W.engine:snapshot()
    return send(422, enc({ result = "failure", code = code, error = err, policy_version = snap.version,
      registry_hash = snap.hash }))
  end
  local v = W.dict:incr(VERSION_KEY, 1, 0)
  decides_with(v)
  -- the other workers swap from their timers, one at a time; the answer
  -- says the reload is done when every one decides with it
  while not all_at(v) and ngx.now() < deadline do ngx.sleep(0.05) end
  if not all_at(v) then
    ngx.log(ngx.WARN, "toolgate: reload ", v, ": not every worker swapped within ", RELOAD_WAIT, " s")
  end
  local snap = W.engine:snapshot()
  return send(200, enc({ result = "success", policy_version = snap.version, registry_hash = snap.hash,
    reload_version = v }))
end

local function list(t) return setmetatable(t, value.array_mt) end

-- The fields a grant's or deny's JSON body may hold, as the store's options.
local DECISION_FIELDS = { uses = "uses", expires_in = "ttl", note = "note", by = "by" }

-- A grant's or deny's options from its body ({uses, expires_in, note, by};
-- none at all: the request's own, decided by "admin-api") -> opts | nil,
-- why: a body that is no such object decides nothing, so a misspelt field
-- never grants with the defaults.
local function decision_body()
  local body = read_body()
  if not body then return nil, "the request body could not be read" end
  local how = { by = "admin-api" }
  if not body:find("%S") then return how end
  local v = json.decode(decision.codec(), body)
  if type(v) ~= "table" or getmetatable(v) ~= nil then
    return nil, "the body is a JSON object {uses, expires_in, note, by}"
  end
  for k, x in pairs(v) do
    if not DECISION_FIELDS[k] then return nil, "unknown field " .. enc(k) .. " (uses, expires_in, note, by)" end
    if x ~= value.null then how[DECISION_FIELDS[k]] = x end
  end
  return how
end

--- admin(): content_by_lua of the admin API (its own listen): GET
-- /v1/approvals[/ID], POST /v1/approvals/ID/grant|deny (a JSON body
-- {uses, expires_in (seconds), note, by} optional), POST /v1/reload,
-- GET /v1/pins; every request needs "Authorization: Bearer <token>" or
-- the web inbox's session; GET /approvals is the inbox (toolgate.inbox).
function M.admin()
  if ngx.var.uri == "/approvals" or ngx.var.uri:sub(1, 11) == "/approvals/" then
    return inbox.serve(W.dict, function(given) return token ~= nil and same_secret(given, token) end)
  end
  local who, refused, why = authorized()
  if not who then
    if refused == 401 then ngx.header["WWW-Authenticate"] = 'Bearer realm="toolgate admin"' end
    return api_error(refused, why)
  end
  if not W.engine then return unavailable() end
  local uri, method = ngx.var.uri, ngx.req.get_method()
  if uri == "/v1/reload" and method == "POST" then return reload() end
  if uri == "/v1/approvals" and method == "GET" then
    local all, err = W.store:approvals()
    if not all then return send(503, enc({ error = err, code = "UNAVAILABLE" })) end
    return send(200, enc({ approvals = list(all) }))
  end
  if uri == "/v1/pins" and method == "GET" then
    return send(200, enc({ registry_hash = W.engine:snapshot().hash, reports = list(W.store:pin_reports()),
      quarantined_servers = list(W.store:quarantined_servers()) }))
  end
  local id, verb = uri:match("^/v1/approvals/(%x+)/(%a+)$")
  if id and method == "POST" and (verb == "grant" or verb == "deny") then
    local how, bad = decision_body()
    if not how then return send(400, enc({ error = bad, code = "INVALID" })) end
    if who == inbox.DECIDED_BY then how.by = who end -- the page names no one else
    local r, err, code = W.store:approval_decide(id, verb, how)
    if not r then
      local status = code == "NOT_FOUND" and 404 or code == "UNAVAILABLE" and 503 or code == "INVALID" and 400 or 409
      return send(status, enc({ error = err, code = code }))
    end
    W.metrics:inc("toolgate_approval_events_total", { event = verb == "grant" and "granted" or "denied" })
    log_line(audit.approval(r, verb == "grant" and "granted" or "denied", ngx.now(), audit_opts()))
    return send(200, enc(r))
  end
  id = uri:match("^/v1/approvals/(%x+)$")
  if id and method == "GET" then
    local r, err, code = W.store:approval(id)
    if not r and code == "UNAVAILABLE" then return send(503, enc({ error = err, code = code })) end
    if not r then return api_error(404, "no approval request " .. id) end
    return send(200, enc(r))
  end
  return api_error(404, "no such endpoint: " .. method .. " " .. uri)
end

return M
