-- OpenTelemetry traces end to end: `toolgate gateway --otlp-endpoint` (nginx)
-- in front of nginx/test/traced-upstream.mjs (a tiny MCP server that keeps
-- the traceparent each POST came with), and `toolgate mcp-proxy
-- --otlp-endpoint` in front of spec/stdio/pyserver.py, both exporting to
-- nginx/test/otlp-receiver.mjs, which decodes every export with the
-- OpenTelemetry project's protobuf definitions (@opentelemetry/otlp-transformer):
-- a misspelt or unknown field is a refused export, not an empty span.
-- Runs under Lua 5.4 only (nginx runs LuaJIT itself).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, stop, wait_for = fx.json, fx.spawn, fx.stop, fx.wait_for
local q = h.shell_quote
local root = h.root

local TRACE, PARENT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

local env, pids = {}, {}

-- the spans the receiver wrote so far (and the exports it refused as malformed)
local function spans()
  local out, bad = {}, {}
  for _, l in ipairs(h.lines_of(h.read_file(env.out) or "")) do
    local s = json(l)
    if s.error then bad[#bad + 1] = s.error else out[#out + 1] = s end
  end
  assert(#bad == 0, "the receiver refused an export: " .. table.concat(bad, "; "))
  return out
end

-- the spans of trace id once there are n of them (exports leave every second)
local function trace_spans(trace_id, n)
  return wait_for(n .. " span(s) of trace " .. trace_id, function()
    local found = {}
    for _, s in ipairs(spans()) do
      if s.traceId == trace_id then found[#found + 1] = s end
    end
    return #found >= n and found
  end, env.dir .. "/gateway.log")
end

local function by_kind(list)
  local k = {}
  for _, s in ipairs(list) do k[s.kind] = s end
  return k[2], k[3] -- SERVER, CLIENT
end

local function mcp_url() return "http://" .. env.listen .. "/mcp/weather" end

local function call(id, args, headers, meta)
  local body = '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"get_weather","arguments":'
    .. args .. (meta and (',"_meta":{"traceparent":"' .. meta .. '"}') or "") .. "}}"
  local r = fx.send(mcp_url(), body, 1, headers and require("toolgate.value").encode(headers))[1]
  assert.equals(200, r.status)
  return r.json
end

local function seen() return json(fx.curl(q("http://127.0.0.1:" .. env.upstream .. "/seen"))) end

local function metric(series)
  return fx.metric(fx.curl(q("http://" .. env.listen .. "/metrics")), series) or 0
end

describe("OpenTelemetry traces", function()
  local why

  setup(function()
    why = fx.not_ready("@opentelemetry/otlp-transformer") or fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    env.dir = fx.tempdir("toolgate-otel-spec")
    env.out = env.dir .. "/spans.jsonl"
    pids.receiver = spawn("PORT=0 exec node otlp-receiver.mjs " .. q(env.out), env.dir .. "/receiver.log")
    pids.upstream = spawn("PORT=0 exec node traced-upstream.mjs", env.dir .. "/upstream.log")
    env.receiver = fx.upstream_port(env.dir .. "/receiver.log")
    env.upstream = fx.upstream_port(env.dir .. "/upstream.log")
    fx.record("weather", env.upstream, env.dir .. "/weather.json")
    env.listen = "127.0.0.1:" .. fx.ports(1)[1]
    pids.gateway = spawn(table.concat({ "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen,
      "--workers 1", "--prefix", q(env.dir .. "/prefix"),
      "--upstream", "weather=http://127.0.0.1:" .. env.upstream .. "/mcp",
      "--registry", q("weather=" .. env.dir .. "/weather.json"),
      "--otlp-endpoint", "http://127.0.0.1:" .. env.receiver }, " "), env.dir .. "/gateway.log")
    wait_for("the gateway", function()
      return h.run("curl -s -f -o /dev/null " .. q("http://" .. env.listen .. "/healthz")) == 0
    end, env.dir .. "/gateway.log")
  end)

  teardown(function()
    for _, name in ipairs({ "gateway", "upstream", "receiver" }) do stop(pids[name]) end
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  it("the receiver refuses an export with a misspelt field (the check the other tests rely on)", function()
    if why then return pending(why) end
    local good = '{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"t"},"spans":[{'
      .. '"traceId":"' .. TRACE .. '","spanId":"' .. PARENT .. '","name":"x","kind":2,'
      .. '"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[],"status":{"code":0}}]}]}]}'
    local function post(body)
      return fx.curl("-o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "
        .. q(body) .. " " .. q("http://127.0.0.1:" .. env.receiver .. "/v1/traces"))
    end
    assert.equals("400", post((good:gsub('"startTimeUnixNano"', '"startTimeUnixNanos"'))))
    assert.equals("400", post((good:gsub('"spanId":"' .. PARENT .. '"', '"spanId":"' .. PARENT:upper() .. '"'))))
    assert.equals("200", post(good))
    -- (the refusals are written as errors: taken off for the next tests)
    local kept = {}
    for _, l in ipairs(h.lines_of(h.read_file(env.out))) do
      if not json(l).error then kept[#kept + 1] = l end
    end
    h.write_file(env.out, table.concat(kept, "\n") .. "\n")
  end)

  it("a tools/call under a traceparent header: a server span under the client's, a client span under it, "
    .. "the upstream gets a traceparent naming that one, and the decision's record names the span", function()
    if why then return pending(why) end
    local answer = call(1, '{"city":"Lyon"}', { traceparent = "00-" .. TRACE .. "-" .. PARENT .. "-01" })
    assert.equals("sunny in Lyon", answer.result.content[1].text)
    local server, client = by_kind(trace_spans(TRACE, 2))
    assert.same({ PARENT, "tools/call get_weather" }, { server.parentSpanId, server.name })
    assert.same({ server.spanId, "tools/call get_weather" }, { client.parentSpanId, client.name })
    local a = server.attributes
    assert.same({ "tools/call", "get_weather", "execute_tool", "1", "tcp", "accept", true, "weather" }, {
      a["mcp.method.name"], a["gen_ai.tool.name"], a["gen_ai.operation.name"], a["jsonrpc.request.id"],
      a["network.transport"], a["toolgate.decision.verdict"], a["toolgate.decision.enforced"], a["toolgate.server"] })
    assert.truthy(a["toolgate.policy.version"]:find("^mcp@"))
    assert.is_nil(a["error.type"])
    assert.same({ code = 0, message = "" }, server.status)
    assert.equals("toolgate", server.resource["service.name"])
    -- the upstream's part: its address and status, inside the server span
    assert.same({ "127.0.0.1", tostring(env.upstream), "200" }, { client.attributes["server.address"],
      tostring(client.attributes["server.port"]), tostring(client.attributes["http.response.status_code"]) })
    assert.truthy(tonumber(client.startTimeUnixNano) >= tonumber(server.startTimeUnixNano))
    assert.truthy(tonumber(client.endTimeUnixNano) <= tonumber(server.endTimeUnixNano))
    local last = seen()[#seen()]
    assert.same({ "tools/call", "00-" .. TRACE .. "-" .. client.spanId .. "-01" }, { last.method, last.traceparent })
    -- the audit record of the decision carries the trace and the server span
    local rec = wait_for("the decision's record", function()
      for _, l in ipairs(h.lines_of(h.read_file(env.dir .. "/prefix/decisions.jsonl") or "")) do
        local r = json(l)
        if r.trace_id == TRACE then return r end
      end
    end)
    assert.equals(server.spanId, rec.span_id)
  end)

  it("params._meta.traceparent parents the span when no header does; a malformed header starts a new trace", function()
    if why then return pending(why) end
    local meta_trace = "5bf92f3577b34da6a3ce929d0e0e4737"
    local meta = "00-" .. meta_trace .. "-" .. PARENT .. "-01"
    call(2, '{"city":"Oslo"}', nil, meta)
    local server, client = by_kind(trace_spans(meta_trace, 2))
    assert.equals(PARENT, server.parentSpanId)
    -- the body goes on as decided (its _meta unchanged); the header names the gateway's client span
    local last = seen()[#seen()]
    assert.same({ meta, "00-" .. meta_trace .. "-" .. client.spanId .. "-01" }, { last.meta, last.traceparent })
    -- an upper-case header is no traceparent: a trace of the gateway's own
    call(3, '{"city":"Rome"}', { traceparent = "00-" .. TRACE:upper() .. "-" .. PARENT .. "-01" })
    local fresh = wait_for("the span of id 3", function()
      for _, s in ipairs(spans()) do
        if s.kind == 2 and s.attributes["jsonrpc.request.id"] == "3" then return s end
      end
    end)
    assert.are_not.equal(TRACE:lower(), fresh.traceId)
    assert.equals("", fresh.parentSpanId)
  end)

  it("a refused call: the span has error.type and the toolgate code, and no upstream span", function()
    if why then return pending(why) end
    local refused_trace = "6bf92f3577b34da6a3ce929d0e0e4738"
    local before = #seen()
    local answer = call(4, '{"city":"' .. ("x"):rep(60) .. '"}', { traceparent = "00-" .. refused_trace .. "-"
      .. PARENT .. "-01" })
    assert.is_true(answer.result.isError)
    local code = answer.result._meta["toolgate/decision"].code
    local list = trace_spans(refused_trace, 1)
    assert.equals(1, #list)
    local s = list[1]
    assert.same({ 2, "reject", code, code, 2 }, { s.kind, s.attributes["toolgate.decision.verdict"],
      s.attributes["toolgate.decision.code"], s.attributes["error.type"], s.status.code })
    assert.equals(before, #seen()) -- never forwarded
  end)

  it("a collector that refuses: spans are dropped and counted, requests are not slowed, exports resume", function()
    if why then return pending(why) end
    fx.curl("-X POST " .. q("http://127.0.0.1:" .. env.receiver .. "/refuse"))
    local dropped0 = metric('toolgate_otel_spans_dropped_total{reason="export_failed"}')
    local t0 = fx.now()
    local answers = fx.send(mcp_url(), fx.call_body(10, "get_weather", '{"city":"Kyiv"}'), 20)
    local took = fx.now() - t0
    for _, r in ipairs(answers) do assert.equals("sunny in Kyiv", r.json.result.content[1].text) end
    assert.truthy(took < 5, "20 calls took " .. took .. " s")
    -- 20 calls: 40 spans, dropped by the next export (every second)
    wait_for("the dropped spans counted", function()
      return metric('toolgate_otel_spans_dropped_total{reason="export_failed"}') >= dropped0 + 40
    end)
    local stats = json(fx.curl(q("http://127.0.0.1:" .. env.receiver .. "/stats")))
    assert.truthy(stats.refused >= 1)
    local log = h.read_file(env.dir .. "/gateway.log")
    local _, lines = log:gsub("span%(s%) dropped %(export_failed%)", "")
    assert.equals(1, lines) -- said once a minute, not once an export
    fx.curl("-X POST " .. q("http://127.0.0.1:" .. env.receiver .. "/accept"))
    local exported0 = metric("toolgate_otel_spans_exported_total")
    call(11, '{"city":"Riga"}')
    wait_for("exports again", function() return metric("toolgate_otel_spans_exported_total") >= exported0 + 2 end)
  end)

  it("mcp-proxy --otlp-endpoint: a span per message, the server's part as a client span, "
    .. "under params._meta.traceparent", function()
    if why then return pending(why) end
    if not h.have("python3") then return pending("needs python3") end
    local py = root .. "/spec/stdio/pyserver.py"
    local reg = env.dir .. "/notes.json"
    local c, o, e = h.toolgate("registry record --server notes --output " .. q(reg) .. " -- python3 " .. q(py))
    assert(c == 0, o .. e)
    local stdio_trace = "7bf92f3577b34da6a3ce929d0e0e4739"
    local input = table.concat({
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        .. '"clientInfo":{"name":"spec","version":"1"}}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_note","arguments":{"text":"hi"},'
        .. '"_meta":{"traceparent":"00-' .. stdio_trace .. '-' .. PARENT .. '-01"}}}',
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{},'
        .. '"_meta":{"traceparent":"00-' .. stdio_trace .. '-' .. PARENT .. '-01"}}}', "" }, "\n")
    local code, _, err = h.run("timeout 60 " .. h.lua .. " " .. q(root .. "/bin/toolgate") .. " mcp-proxy --state "
      .. q(env.dir .. "/state") .. " --registry " .. q("notes=" .. reg) .. " --otlp-endpoint http://127.0.0.1:"
      .. env.receiver .. " -- python3 " .. q(py), input)
    assert.equals(0, code, err)
    -- (sent before the proxy exits)
    local list = trace_spans(stdio_trace, 3)
    local called, refused, client = nil, nil, nil
    for _, s in ipairs(list) do
      if s.kind == 3 then client = s
      elseif s.attributes["jsonrpc.request.id"] == "2" then called = s
      else refused = s end
    end
    assert.same({ PARENT, "tools/call read_note", "pipe", "accept" }, { called.parentSpanId, called.name,
      called.attributes["network.transport"], called.attributes["toolgate.decision.verdict"] })
    assert.same({ called.spanId, "tools/call read_note" }, { client.parentSpanId, client.name })
    assert.same({ "H1", "H1", "-32602", 2 }, { refused.attributes["toolgate.decision.code"],
      refused.attributes["error.type"], refused.attributes["rpc.response.status_code"], refused.status.code })
  end)
end)
