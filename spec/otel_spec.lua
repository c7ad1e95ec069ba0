-- toolgate.otel: W3C trace context, ids, spans, the bounded queue and the
-- OTLP/HTTP JSON encoding, in plain Lua under both interpreters.  The
-- exports end to end (nginx, the stdio proxy, a receiver that decodes them
-- with the OpenTelemetry project's protobuf definitions): spec/otel_e2e_spec.lua.
local json = require "toolgate.json"
local decision = require "toolgate.decision"
local otel = require "toolgate.otel"

local function decode(text) return assert(json.decode(decision.codec(), text)) end

-- a random source that gives the bytes it is handed, then 0x11 repeated
local function scripted(list)
  return function(n)
    local s = table.remove(list, 1)
    if s then return s:sub(1, n) .. ("\0"):rep(n - #s) end
    return ("\17"):rep(n)
  end
end

local TRACE, SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"

describe("toolgate.otel", function()
  it("reads a W3C traceparent of version 00 strictly", function()
    assert.same({ TRACE, SPAN }, { otel.parse_traceparent("00-" .. TRACE .. "-" .. SPAN .. "-01") })
    assert.same({ TRACE, SPAN }, { otel.parse_traceparent("00-" .. TRACE .. "-" .. SPAN .. "-00") })
    for _, bad in ipairs({
      "01-" .. TRACE .. "-" .. SPAN .. "-01",              -- another version
      "ff-" .. TRACE .. "-" .. SPAN .. "-01",              -- the invalid version
      "00-" .. TRACE:upper() .. "-" .. SPAN .. "-01",      -- upper-case hex
      "00-" .. TRACE .. "-" .. SPAN:upper() .. "-01",
      "00-" .. ("0"):rep(32) .. "-" .. SPAN .. "-01",      -- all-zero trace id
      "00-" .. TRACE .. "-" .. ("0"):rep(16) .. "-01",     -- all-zero span id
      "00-" .. TRACE:sub(2) .. "-" .. SPAN .. "-01",       -- short
      "00-" .. TRACE .. "-" .. SPAN .. "-01-extra",        -- 00 has nothing after the flags
      "00-" .. TRACE .. "-" .. SPAN .. "-0g",
      " 00-" .. TRACE .. "-" .. SPAN .. "-01",
      "00_" .. TRACE .. "_" .. SPAN .. "_01", "", 42,
    }) do
      assert.is_nil(otel.parse_traceparent(bad), tostring(bad))
    end
    assert.equals("00-" .. TRACE .. "-" .. SPAN .. "-01", otel.traceparent(TRACE, SPAN))
  end)

  it("makes ids of 16 and 8 random bytes in lower-case hex, never all zeros", function()
    local t = otel.tracer{ random = scripted({ "", "\1\2\254\255" }) }
    local s = t:start("x", otel.KIND.SERVER, 1)
    -- the all-zero draw is drawn again
    assert.equals("0102feff000000000000000000000000", s.trace_id)
    assert.equals(("11"):rep(8), s.span_id)
    local real = otel.tracer{ random = otel.urandom() }
    local a, b = real:start("a", 2, 1), real:start("b", 2, 1)
    assert.truthy(a.trace_id:find("^" .. ("[0-9a-f]"):rep(32) .. "$"))
    assert.truthy(a.span_id:find("^" .. ("[0-9a-f]"):rep(16) .. "$"))
    assert.are_not.equal(a.trace_id, b.trace_id)
    -- a child keeps its parent's trace
    local c = real:start("c", otel.KIND.CLIENT, 1, a.trace_id, a.span_id)
    assert.same({ a.trace_id, a.span_id }, { c.trace_id, c.parent_span_id })
  end)

  it("reads an endpoint as a base URL and appends /v1/traces", function()
    local e = assert(otel.endpoint("http://127.0.0.1:4318"))
    assert.same({ "127.0.0.1", 4318, "/v1/traces" }, { e.host, e.port, e.path })
    assert.equals("/otlp/v1/traces", assert(otel.endpoint("http://localhost:9/otlp/")).path)
    assert.equals(80, assert(otel.endpoint("http://[::1]/")).port)
    for bad, says in pairs({ ["https://127.0.0.1:4318"] = "no TLS", ["http://collector:4318"] = "looks up no names",
      ["127.0.0.1:4318"] = "http://HOST", ["http://127.0.0.1:0"] = "bad port" }) do
      local ok, err = otel.endpoint(bad)
      assert.is_nil(ok)
      assert.truthy(err:find(says, 1, true), bad .. ": " .. err)
    end
  end)

  it("encodes a batch as OTLP/HTTP JSON: ids in hex, times as decimal nanoseconds, typed attributes", function()
    local t = otel.tracer{ random = scripted({}), service_name = "gw-7", version = "1.2" }
    local s = t:start("tools/call get_weather", otel.KIND.SERVER, 1700000000.25, TRACE, SPAN)
    s:set("mcp.method.name", "tools/call"):set("toolgate.decision.enforced", true):set("n", 3):set("x", 0.5)
    s:set("quote", 'a"b\n\1'):set("n", 4)
    s:event("toolgate.decision", 1700000000.5, { { "k", "v" } })
    s:error("H2")
    s:finish(1700000000.000001)
    local root = t:start("root", otel.KIND.CLIENT, 1.5)
    root:finish(2)
    local body = decode(t:encode(t:take(10)))
    local rs = body.resourceSpans[1]
    assert.same({ { key = "service.name", value = { stringValue = "gw-7" } } }, rs.resource.attributes)
    local ss = rs.scopeSpans[1]
    assert.same({ name = "toolgate", version = "1.2" }, ss.scope)
    local a, b = ss.spans[1], ss.spans[2]
    assert.same({ TRACE, SPAN, ("11"):rep(8), 2 }, { a.traceId, a.parentSpanId, a.spanId, a.kind })
    assert.equals("tools/call get_weather", a.name)
    assert.equals("1700000000250000000", a.startTimeUnixNano)
    assert.equals("1700000000000001000", a.endTimeUnixNano)
    assert.same({
      { key = "mcp.method.name", value = { stringValue = "tools/call" } },
      { key = "toolgate.decision.enforced", value = { boolValue = true } },
      { key = "n", value = { intValue = "4" } },
      { key = "x", value = { doubleValue = 0.5 } },
      { key = "quote", value = { stringValue = 'a"b\n\1' } },
      { key = "error.type", value = { stringValue = "H2" } },
    }, a.attributes)
    assert.same({ code = 2 }, a.status)
    assert.same({ { timeUnixNano = "1700000000500000000", name = "toolgate.decision",
      attributes = { { key = "k", value = { stringValue = "v" } } } } }, a.events)
    assert.is_nil(b.parentSpanId)
    assert.equals(3, b.kind)
    assert.equals("1500000000", b.startTimeUnixNano)
    assert.same({ code = 0 }, b.status)
  end)

  it("holds at most max_queue ended spans, counts the rest dropped, and hands them out in batches", function()
    local t = otel.tracer{ random = scripted({}), max_queue = 3 }
    for i = 1, 5 do t:start("s" .. i, 2, i):finish(i + 1) end
    assert.equals(3, t:waiting())
    assert.equals(2, t.dropped)
    local first = t:take(2)
    assert.same({ "s1", "s2" }, { first[1].name, first[2].name })
    assert.equals("s3", t:take(2)[1].name)
    assert.equals(0, t:waiting())
    -- a span ended twice is queued once
    local s = t:start("once", 2, 1)
    s:finish(2)
    s:finish(3)
    assert.equals(1, t:waiting())
  end)

  it("names MCP spans and sets the semantic conventions' attributes", function()
    local t = otel.tracer{ random = scripted({}) }
    local s = otel.mcp(t:start("mcp", 2, 1), { method = "tools/call", id = 7.0, name = "get_weather",
      protocol_version = "2025-06-18", session = "abc", transport = "tcp" })
    assert.equals("tools/call get_weather", s.name)
    assert.same({ "tools/call", "get_weather", "execute_tool", "7", "2025-06-18", "abc", "tcp" }, {
      s:get("mcp.method.name"), s:get("gen_ai.tool.name"), s:get("gen_ai.operation.name"), s:get("jsonrpc.request.id"),
      s:get("mcp.protocol.version"), s:get("mcp.session.id"), s:get("network.transport") })
    local p = otel.mcp(t:start("mcp", 2, 1), { method = "prompts/get", id = "x", name = "greet", transport = "pipe" })
    assert.same({ "prompts/get greet", "greet" }, { p.name, p:get("gen_ai.prompt.name") })
    assert.is_nil(p:get("gen_ai.operation.name"))
    assert.equals("tools/list", otel.mcp(t:start("mcp", 2, 1), { method = "tools/list", id = 1 }).name)
  end)

  it("puts toolgate's decision on the span; an enforced refusal is its error, a shadowed one is not", function()
    local t = otel.tracer{ random = scripted({}) }
    local function d(tbl) return decision.from_table(tbl) end
    local s = t:start("tools/call x", 2, 1)
    otel.decided(s, { kind = "decision", phase = "call", decision = d({ verdict = "accept", stage = "gate",
      policy_version = "p@1" }) }, 1)
    assert.same({ "accept", "call", true, "p@1", 0 }, { s:get("toolgate.decision.verdict"),
      s:get("toolgate.decision.phase"), s:get("toolgate.decision.enforced"), s:get("toolgate.policy.version"), s.status })
    assert.is_nil(s:get("error.type"))
    -- the result refused after the call passed: the span shows the refusal
    otel.decided(s, { kind = "decision", phase = "result", decision = d({ verdict = "reject", stage = "verify",
      code = "CONTRACT", policy_version = "p@1" }) }, 2)
    assert.same({ "reject", "result", "CONTRACT", "CONTRACT", 2 }, { s:get("toolgate.decision.verdict"),
      s:get("toolgate.decision.phase"), s:get("toolgate.decision.code"), s:get("error.type"), s.status })
    local sh = t:start("tools/call y", 2, 1)
    otel.decided(sh, { kind = "decision", phase = "call", enforced = false, mode = "shadow",
      decision = d({ verdict = "reject", stage = "schema", code = "H2" }) }, 1)
    assert.same({ "H2", false, "shadow", 0 }, { sh:get("toolgate.decision.code"), sh:get("toolgate.decision.enforced"),
      sh:get("toolgate.decision.mode"), sh.status })
    assert.is_nil(sh:get("error.type"))
    -- a defer that passed by its approval ran
    local ap = t:start("tools/call z", 2, 1)
    otel.decided(ap, { kind = "decision", phase = "call", approved = true, approval_id = "ab12",
      decision = d({ verdict = "defer", stage = "gate", code = "H4" }) }, 1)
    assert.same({ "defer", "ab12", 0 }, { ap:get("toolgate.decision.verdict"), ap:get("toolgate.approval.id"), ap.status })
    assert.is_nil(ap:get("error.type"))
    -- a batch: each decision an event
    local b = t:start("batch", 2, 1)
    b.batch = true
    otel.decided(b, { kind = "decision", phase = "call", tool = "x", decision = d({ verdict = "reject", stage = "gate",
      code = "H1" }) }, 1.5)
    assert.equals(1, #b.events)
    assert.equals("toolgate.decision", b.events[1].name)
    assert.is_nil(b:get("toolgate.decision.verdict"))
    assert.equals("H1", b:get("error.type"))
  end)

  it("cuts an attribute before a UTF-8 character that would not fit", function()
    assert.equals("ab", otel.cut("ab\195\169", 3))
    assert.equals("ab\195\169", otel.cut("ab\195\169", 4))
    assert.equals("abc", otel.cut("abc", 10))
  end)
end)
