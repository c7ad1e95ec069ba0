--- toolgate.otel: OpenTelemetry traces of the gateway's decisions, without
-- an SDK: W3C trace context, spans, a bounded queue, and the OTLP/HTTP JSON
-- encoding of a batch (ExportTraceServiceRequest), in plain Lua (5.1,
-- LuaJIT, 5.4).  The hosts (toolgate.nginx, toolgate.stdio) start and end
-- the spans and send the batches; docs/tracing.md says what a span holds.
--
--   local tracer = otel.tracer{ service_name = "toolgate", random = otel.urandom() }
--   local span = tracer:start("tools/call", otel.KIND.SERVER, t0, parent)
--   span:set("mcp.method.name", "tools/call")
--   span:finish(t1)                        -- queued (or dropped: queue full)
--   local body = tracer:encode(tracer:take(512))
-- @module toolgate.otel

local M = {}

--- Span kinds and status codes: the OTLP enums' integers.
M.KIND = { INTERNAL = 1, SERVER = 2, CLIENT = 3 }
M.STATUS = { UNSET = 0, OK = 1, ERROR = 2 }

--- Defaults of a tracer's bounds.
M.MAX_QUEUE = 2048          -- spans waiting for export, per process (nginx: per worker)
M.MAX_BATCH = 512           -- spans in one export
M.MAX_ATTRIBUTE_BYTES = 4096 -- an opted-in argument or result attribute, cut to this

local HEX32 = "^" .. ("[0-9a-f]"):rep(32) .. "$"
local HEX16 = "^" .. ("[0-9a-f]"):rep(16) .. "$"
local ZEROS32, ZEROS16 = ("0"):rep(32), ("0"):rep(16)

--- parse_traceparent(s) -> trace_id, parent_span_id | nil: a W3C
-- traceparent of version 00, read strictly: 55 characters, lower-case
-- hex, neither id all zeros.  Anything else is no parent (the span starts
-- a new trace), as the W3C spec says of a header that does not parse.
function M.parse_traceparent(s)
  if type(s) ~= "string" or #s ~= 55 then return nil end
  local version, trace, span, flags = s:match("^(%x%x)%-(%x+)%-(%x+)%-(%x%x)$")
  if version ~= "00" or not trace or not trace:find(HEX32) or not span:find(HEX16) or not flags:find("^[0-9a-f]+$")
    or trace == ZEROS32 or span == ZEROS16 then
    return nil
  end
  return trace, span
end

--- traceparent(trace_id, span_id) -> the header's value naming that span
-- (sampled: toolgate exports every span it makes).
function M.traceparent(trace_id, span_id) return "00-" .. trace_id .. "-" .. span_id .. "-01" end

local function hex(bytes) return (("%02x"):rep(#bytes):format(bytes:byte(1, -1))) end

--- urandom([path]) -> function(n) -> n random bytes, read from
-- /dev/urandom through a buffer of this process's own.  Call it in the
-- process that uses it (nginx: in init_worker): a buffer filled before a
-- fork would give every child the same ids.
function M.urandom(path)
  local f = assert(io.open(path or "/dev/urandom", "rb"))
  f:setvbuf("full", 4096)
  return function(n)
    local s = f:read(n)
    if not s or #s ~= n then error("toolgate.otel: cannot read random bytes") end
    return s
  end
end

--- endpoint(url) -> {url, host, port, path, authority} | nil, why: an
-- OTLP/HTTP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT: /v1/traces is
-- appended to its path), http:// to an IP address or localhost.
function M.endpoint(url)
  if type(url) ~= "string" then return nil, "an http://HOST:PORT URL expected" end
  if url:match("^[Hh][Tt][Tt][Pp][Ss]://") then
    return nil, url .. ": https:// is not supported (toolgate has no TLS): a local collector takes http://"
  end
  local authority, path = url:match("^http://([^/?#]+)(/?[^?#]*)$")
  if not authority then return nil, url .. ": an http://HOST[:PORT][/PATH] URL expected" end
  local host, port = authority:match("^%[([%x:.]+)%]:?(%d*)$")
  if not host then host, port = authority:match("^([%w.-]+):?(%d*)$") end
  if not host or not (host == "localhost" or host:find(":", 1, true) or host:match("^%d+%.%d+%.%d+%.%d+$")) then
    return nil, url .. ": give the host as an IP address or localhost (toolgate looks up no names)"
  end
  port = port == "" and 80 or tonumber(port)
  if not port or port < 1 or port > 65535 then return nil, url .. ": bad port" end
  if path:find("[%c ]") then return nil, url .. ": a path cannot hold spaces or control characters" end
  return { url = url, host = host, port = port, path = path:gsub("/+$", "") .. "/v1/traces", authority = authority }
end

--- cut(s, max) -> at most max bytes of s, cut before a UTF-8 character
-- that would not fit (an attribute stays valid UTF-8).
function M.cut(s, max)
  if #s <= max then return s end
  local n = max
  while n > 0 do
    local b = s:byte(n + 1)
    if b < 0x80 or b >= 0xC0 then break end
    n = n - 1
  end
  return s:sub(1, n)
end

-- JSON -------------------------------------------------------------------

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r",
  ["\t"] = "\\t" }
local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return ESCAPES[c] or string.format("\\u%04x", c:byte()) end) .. '"'
end

-- A time (seconds since the epoch, a float) in nanoseconds, as the
-- decimal string OTLP/JSON gives a fixed64 (a double does not hold it),
-- to the microsecond (what a double of today's epoch seconds holds).
local function nanos(t)
  local s = math.floor(t)
  local us = math.floor((t - s) * 1e6 + 0.5)
  if us > 999999 then us = 999999 end
  return string.format('"%d%06d000"', s, us)
end

local function any_value(v)
  local tv = type(v)
  if tv == "boolean" then return '{"boolValue":' .. tostring(v) .. "}" end
  if tv == "number" then
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return string.format('{"intValue":"%d"}', v) end
    if v ~= v or v == math.huge or v == -math.huge then return '{"stringValue":' .. quote(tostring(v)) .. "}" end
    return string.format('{"doubleValue":%.17g}', v)
  end
  return '{"stringValue":' .. quote(tostring(v)) .. "}"
end

local function attributes(list)
  local out = {}
  for i, a in ipairs(list) do out[i] = '{"key":' .. quote(a[1]) .. ',"value":' .. any_value(a[2]) .. "}" end
  return "[" .. table.concat(out, ",") .. "]"
end

-- Spans ------------------------------------------------------------------

local Span = {}
Span.__index = Span

--- span:set(key, value): an attribute (string, boolean or number; nil
-- leaves it out); a key set again takes the new value.
function Span:set(key, v)
  if v == nil then return self end
  local attrs = self.attributes
  for _, a in ipairs(attrs) do
    if a[1] == key then
      a[2] = v
      return self
    end
  end
  attrs[#attrs + 1] = { key, v }
  return self
end

--- span:get(key) -> the attribute's value | nil
function Span:get(key)
  for _, a in ipairs(self.attributes) do
    if a[1] == key then return a[2] end
  end
  return nil
end

--- span:event(name, time, attrs): an event ({{key, value}, ...}).
function Span:event(name, time, attrs)
  self.events[#self.events + 1] = { name = name, time = time, attributes = attrs or {} }
  return self
end

--- span:error(kind): the span failed (status ERROR, error.type kind).
function Span:error(kind)
  self.status = M.STATUS.ERROR
  return self:set("error.type", kind)
end

--- span:finish(time): ended; queued for export (once).
function Span:finish(time)
  if self.end_time then return end
  self.end_time = time
  self.tracer:queue(self)
end

local Tracer = {}
Tracer.__index = Tracer

--- tracer{service_name =, random = function(n) -> bytes, max_queue =,
-- resource = {{key, value}, ...}} -> a tracer: makes spans and holds the
-- ended ones until take().  dropped counts what a full queue refused.
function M.tracer(o)
  o = o or {}
  local resource = { { "service.name", o.service_name or "toolgate" } }
  for _, a in ipairs(o.resource or {}) do resource[#resource + 1] = a end
  return setmetatable({ random = o.random or M.urandom(), max_queue = o.max_queue or M.MAX_QUEUE,
    resource = resource, version = o.version, spans = {}, dropped = 0 }, Tracer)
end

-- A random id of n bytes, as hex, never all zeros (an invalid id).
function Tracer:id(n)
  while true do
    local s = self.random(n)
    if s:find("[^%z]") then return hex(s) end
  end
end

--- tracer:start(name, kind, time[, trace_id, parent_span_id]) -> span:
-- a child of the parent when given, else the root of a new trace.
function Tracer:start(name, kind, time, trace_id, parent_id)
  return setmetatable({ tracer = self, name = name, kind = kind, start_time = time,
    trace_id = trace_id or self:id(16), span_id = self:id(8), parent_span_id = parent_id,
    attributes = {}, events = {}, status = M.STATUS.UNSET }, Span)
end

function Tracer:queue(span)
  if #self.spans >= self.max_queue then
    self.dropped = self.dropped + 1
    return
  end
  self.spans[#self.spans + 1] = span
end

--- tracer:take(max) -> up to max of the ended spans, oldest first (taken
-- off the queue).
function Tracer:take(max)
  local all = self.spans
  if #all <= max then
    self.spans = {}
    return all
  end
  local batch, rest = {}, {}
  for i = 1, max do batch[i] = all[i] end
  for i = max + 1, #all do rest[#rest + 1] = all[i] end
  self.spans = rest
  return batch
end

--- tracer:waiting() -> how many ended spans wait for export
function Tracer:waiting() return #self.spans end

local function span_json(s)
  local events = {}
  for i, e in ipairs(s.events) do
    events[i] = '{"timeUnixNano":' .. nanos(e.time) .. ',"name":' .. quote(e.name) .. ',"attributes":'
      .. attributes(e.attributes) .. "}"
  end
  return '{"traceId":"' .. s.trace_id .. '","spanId":"' .. s.span_id .. '"'
    .. (s.parent_span_id and (',"parentSpanId":"' .. s.parent_span_id .. '"') or "")
    .. ',"name":' .. quote(s.name) .. ',"kind":' .. s.kind
    .. ',"startTimeUnixNano":' .. nanos(s.start_time) .. ',"endTimeUnixNano":' .. nanos(s.end_time or s.start_time)
    .. ',"attributes":' .. attributes(s.attributes)
    .. (#events > 0 and (',"events":[' .. table.concat(events, ",") .. "]") or "")
    .. ',"status":{"code":' .. s.status .. "}}"
end

--- tracer:encode(spans) -> the OTLP/HTTP JSON body (an
-- ExportTraceServiceRequest) carrying those spans: one resource (this
-- tracer's), one scope ("toolgate").
function Tracer:encode(spans)
  local out = {}
  for i, s in ipairs(spans) do out[i] = span_json(s) end
  return '{"resourceSpans":[{"resource":{"attributes":' .. attributes(self.resource) .. '},"scopeSpans":[{"scope":'
    .. '{"name":"toolgate"' .. (self.version and (',"version":' .. quote(self.version)) or "") .. '},"spans":['
    .. table.concat(out, ",") .. "]}]}]}"
end

-- MCP: the semantic conventions ------------------------------------------

--- span_name(method, target) -> "{mcp.method.name} {target}", or the
-- method alone (the conventions' name of an MCP span).
function M.span_name(method, target)
  if not method then return "mcp" end
  if target then return method .. " " .. target end
  return method
end

-- The params member that names a method's target (the tool's or prompt's
-- name; a resource's URI is no low-cardinality target: left out of the name).
local TARGET = { ["tools/call"] = "gen_ai.tool.name", ["prompts/get"] = "gen_ai.prompt.name" }

--- mcp(span, m): names the span and sets the MCP attributes of a message
-- m = {method, id (Lua value), name, protocol_version, session, transport}.
function M.mcp(span, m)
  local target = m.name and TARGET[m.method] and m.name or nil
  span.name = M.span_name(m.method, target)
  span:set("mcp.method.name", m.method)
  if target then span:set(TARGET[m.method], target) end
  if m.method == "tools/call" then span:set("gen_ai.operation.name", "execute_tool") end
  local id = m.id
  if type(id) == "number" and id == math.floor(id) then id = string.format("%d", id) end
  if id ~= nil then span:set("jsonrpc.request.id", tostring(id)) end
  span:set("mcp.protocol.version", m.protocol_version)
  span:set("mcp.session.id", m.session)
  span:set("network.transport", m.transport)
  return span
end

--- decided(span, ev, time): toolgate's decision on the span (an observe
-- event of kind "decision"): its verdict, stage, code, phase, policy,
-- whether it was enforced; an enforced refusal is the span's error
-- (error.type: the code).  A batch's decisions are events instead.
function M.decided(span, ev, time)
  local d = ev.decision
  local enforced = ev.enforced ~= false
  local attrs = {
    { "toolgate.decision.phase", ev.phase }, { "toolgate.decision.verdict", d.verdict },
    { "toolgate.decision.stage", d.stage or "" }, { "toolgate.decision.code", d.code or "" },
    { "toolgate.decision.enforced", enforced }, { "toolgate.policy.version", d:get("policy_version") or "" },
  }
  if ev.mode then attrs[#attrs + 1] = { "toolgate.decision.mode", ev.mode } end
  if ev.approval_id then attrs[#attrs + 1] = { "toolgate.approval.id", ev.approval_id } end
  if span.batch then
    if ev.tool then attrs[#attrs + 1] = { "gen_ai.tool.name", ev.tool } end
    span:event("toolgate.decision", time, attrs)
  elseif d.verdict ~= "accept" or not span:get("toolgate.decision.verdict") then
    -- (a refusal of the result, after the call passed, is what the span shows)
    for _, a in ipairs(attrs) do span:set(a[1], a[2]) end
  end
  -- (a defer that passed by its approval ran: no error)
  if d.verdict ~= "accept" and enforced and not ev.approved then span:error(d.code or d.verdict) end
end

return M
