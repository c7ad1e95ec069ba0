--- toolgate.stdio_trace: the stdio proxy's OpenTelemetry traces
-- (toolgate.otel; docs/tracing.md, "The stdio proxy").
--
-- A server span per client message the gateway decides, from the line read
-- to the server's answer (or the gateway's own), with a client span for the
-- server's part: from the forwarded line to its answer.  The parent is the
-- message's params._meta.traceparent when it holds a valid one (the
-- message goes on to the server as decided, that traceparent unchanged: a
-- line is not rewritten to name the proxy's span).  A batch is one span,
-- its decisions events, ended once decided.
--
-- Exports leave from the relay's tick (toolgate.stdio's every, between
-- messages): a batch when one is full or interval seconds passed, over
-- toolgate.mcp.http_client, bounded by timeout; a collector that fails is
-- tried again after a doubling backoff (at most MAX_BACKOFF), its spans
-- dropped and counted, and a line says when it goes down and comes back.
--
--   local trace = stdio_trace.new{ endpoint = url, log = fn }
--   stdio.run{ ..., trace = trace, every = function() trace:tick(proc.now()) end }
--   trace:finish()
-- @module toolgate.stdio_trace

local decision = require "toolgate.decision"
local http_client = require "toolgate.mcp.http_client"
local json = require "toolgate.json"
local otel = require "toolgate.otel"
local proc = require "toolgate.proc"
local value = require "toolgate.value"

local M = {}

M.INTERVAL = 1      -- seconds between exports
M.TIMEOUT = 1       -- seconds one export may take (the relay waits for it)
M.MAX_BACKOFF = 30  -- seconds between tries at a collector that fails
M.MAX_OPEN = 1024   -- requests waiting for their answer, traced at once

local Trace = {}
Trace.__index = Trace

-- Seconds since the epoch, from the monotonic clock and one reading of the
-- wall clock (os.time counts whole seconds).
local function wall_clock()
  local base = os.time()
  local p = io.popen("date +%s.%N 2>/dev/null")
  if p then
    base = tonumber(p:read("*l") or "") or base
    p:close()
  end
  local offset = base - proc.now()
  return function() return proc.now() + offset end
end

--- new{endpoint = URL, log = function(msg), service_name =, capture_content =,
-- max_attribute_bytes =, interval =, timeout =, max_queue =, max_batch =}
-- -> a trace | nil, why (an endpoint that is no http://HOST:PORT URL).
function M.new(o)
  local e, err = otel.endpoint(o.endpoint)
  if not e then return nil, err end
  return setmetatable({
    endpoint = e, log = o.log or function() end, now = wall_clock(),
    tracer = otel.tracer{ service_name = o.service_name, max_queue = o.max_queue },
    capture = o.capture_content and (o.max_attribute_bytes or otel.MAX_ATTRIBUTE_BYTES),
    interval = o.interval or M.INTERVAL, timeout = o.timeout or M.TIMEOUT, max_batch = o.max_batch or otel.MAX_BATCH,
    open = {}, n_open = 0, next_at = 0, backoff = nil, exported = 0, dropped = 0,
  }, Trace)
end

local function key(id) return type(id) .. ":" .. tostring(id) end

--- trace:request(line): a client's line, before the gateway decides it:
-- its span starts (nothing for an answer to the server's own request).
function Trace:request(line)
  self.current = nil
  local v = json.decode(decision.codec(), line)
  if type(v) ~= "table" then return end
  local t = self.now()
  if v[1] ~= nil then -- a batch
    local span = self.tracer:start("batch", otel.KIND.SERVER, t)
    span.batch = true
    span:set("network.transport", "pipe")
    self.current = span
    return
  end
  if type(v.method) ~= "string" then return end
  local params = type(v.params) == "table" and v.params or {}
  local meta = type(params._meta) == "table" and params._meta or {}
  local trace_id, parent_id = otel.parse_traceparent(meta.traceparent)
  local span = self.tracer:start("mcp", otel.KIND.SERVER, t, trace_id, parent_id)
  local pv = meta["io.modelcontextprotocol/protocolVersion"]
  if v.method == "initialize" and type(params.protocolVersion) == "string" then self.protocol = params.protocolVersion end
  otel.mcp(span, { method = v.method, id = v.id, name = type(params.name) == "string" and params.name or nil,
    protocol_version = type(pv) == "string" and pv or self.protocol, transport = "pipe" })
  if self.capture and v.method == "tools/call" and params.arguments ~= nil then
    span:set("gen_ai.tool.call.arguments", otel.cut(assert(value.encode(params.arguments)), self.capture))
  end
  span.id = v.id
  self.current = span
end

--- trace:decided(ev): an observe event of the gateway's: a decision goes
-- on the span of the message being decided, and names it (ev.trace_id,
-- ev.span_id: its audit record carries them).
function Trace:decided(ev)
  local span = self.current
  if not span or ev.kind ~= "decision" then return end
  otel.decided(span, ev, self.now())
  ev.trace_id, ev.span_id = span.trace_id, span.span_id
end

--- trace:requested(plan | nil): the gateway's plan for the line (nil: deciding
-- failed): the span ends unless its request went on to the server, whose
-- part starts now.
function Trace:requested(plan)
  local span = self.current
  self.current = nil
  if not span then return end
  local t = self.now()
  if not plan then
    span:error("POLICY_ERROR")
  elseif plan.reply then
    local code = plan.reply:match('^{"jsonrpc":"2.0","id":.-,"error":{"code":(%-?%d+)[,}]')
    if code then
      span:set("rpc.response.status_code", code)
      if span.status ~= otel.STATUS.ERROR then span:error(code) end
    end
  elseif plan.forward and span.id ~= nil and not span.batch and self.n_open < M.MAX_OPEN then
    local child = self.tracer:start(span.name, otel.KIND.CLIENT, t, span.trace_id, span.span_id)
    for _, a in ipairs(span.attributes) do
      if a[1]:find("^mcp%.") or a[1]:find("^gen_ai%.tool%.name") or a[1] == "jsonrpc.request.id" then
        child:set(a[1], a[2])
      end
    end
    child:set("network.transport", "pipe")
    span.child = child
    self.open[key(span.id)], self.n_open = span, self.n_open + 1
    return
  end
  span:finish(t)
end

--- trace:answer(line): a server's line, before the gateway reads it: the
-- span of the request it answers is the one its decisions go on.
function Trace:answer(line)
  self.current = nil
  if self.n_open == 0 or not line:find('"id"', 1, true) then return end
  local v = json.decode(decision.codec(), line)
  if type(v) ~= "table" or v.method ~= nil or v.id == nil then return end
  local k = key(v.id)
  local span = self.open[k]
  if not span then return end
  self.open[k], self.n_open = nil, self.n_open - 1
  if type(v.error) == "table" and v.error.code ~= nil then
    span.child:error(tostring(v.error.code)):set("rpc.response.status_code", tostring(v.error.code))
  end
  if self.capture and span:get("mcp.method.name") == "tools/call" and v.result ~= nil then
    span:set("gen_ai.tool.call.result", otel.cut(line, self.capture))
  end
  self.current = span
end

--- trace:answered(): the gateway read the answer: its spans end.
function Trace:answered()
  local span = self.current
  self.current = nil
  if not span then return end
  local t = self.now()
  span.child:finish(t)
  span:finish(t)
end

-- Sends one batch: whether the collector took it.
function Trace:send()
  local batch = self.tracer:take(self.max_batch)
  local answer, why = http_client.post(self.endpoint, { { "Content-Type", "application/json" },
    { "User-Agent", "toolgate" } }, self.tracer:encode(batch), { timeout = self.timeout, max_body = 65536 })
  local ok = answer and answer.status >= 200 and answer.status <= 299
  if answer then
    why = why or ("answered " .. tostring(answer.status))
    answer:close()
  end
  if ok then
    self.exported = self.exported + #batch
    if self.backoff then self.log("the OTLP collector " .. self.endpoint.url .. " takes spans again") end
    self.backoff = nil
    return true
  end
  self.dropped = self.dropped + #batch
  if not self.backoff then
    self.log("the OTLP collector " .. self.endpoint.url .. " is away (" .. tostring(why) .. "): its spans are "
      .. "dropped, and it is tried again with a backoff")
  end
  self.backoff = math.min((self.backoff or self.interval) * 2, M.MAX_BACKOFF)
  return false
end

--- trace:tick(now): the relay's tick (now: proc.now()): a batch goes when
-- one is full or interval seconds passed (after a failure: the backoff).
function Trace:tick(now)
  local waiting = self.tracer:waiting()
  if waiting == 0 or (now < self.next_at and (waiting < self.max_batch or self.backoff)) then return end
  self:send()
  self.next_at = now + (self.backoff or self.interval)
end

--- trace:finish(): the relay ended: the requests never answered end as
-- such, what waits is sent (a try per batch), and the spans lost are said.
function Trace:finish()
  local t = self.now()
  for _, span in pairs(self.open) do
    span.child:error("no_answer"):finish(t)
    span:finish(t)
  end
  self.open, self.n_open = {}, 0
  while self.tracer:waiting() > 0 do
    if not self:send() then break end
  end
  local lost = self.dropped + self.tracer.dropped + self.tracer:waiting()
  if lost > 0 then self.log(lost .. " span(s) were not exported (OTLP collector " .. self.endpoint.url .. ")") end
end

return M
