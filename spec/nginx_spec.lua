-- The MCP gateway end to end: `toolgate gateway` runs Debian's nginx with
-- its lua module on a generated conf in a temporary prefix, in front of a
-- real MCP server (@modelcontextprotocol/server-everything, Streamable HTTP,
-- SSE answers) and two servers built with the MCP TypeScript SDK
-- (nginx/test/upstream.mjs: one answering JSON that counts the calls that
-- reach it, one that changes its tools under the gateway); the SDK's client
-- (nginx/test/client.mjs) and raw HTTP (nginx/test/http.mjs) talk to it.
-- Everything started here listens on 127.0.0.1 on ports the kernel gave, and
-- is stopped by its PID.  Runs once, under the interpreter of the toolgate
-- command (Lua 5.4); nginx itself runs LuaJIT.
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, sleep, spawn, alive, stop, wait_for = fx.json, fx.sleep, fx.spawn, fx.alive, fx.stop, fx.wait_for
local upstream_port, metric = fx.upstream_port, fx.metric

local root = h.root
local testdir = fx.testdir
local q = h.shell_quote

local env = {}
local pids = {}

-- the SDK client: returns the JSON lines it printed (initialize first)
local function client(server, steps) return fx.client("http://" .. env.listen .. "/mcp/" .. server, steps) end
local call_body, curl = fx.call_body, fx.curl

-- raw POSTs to an MCP endpoint: count identical ones at once
local function send(server, body, count, headers)
  return fx.send("http://" .. env.listen .. "/mcp/" .. server, body, count, headers)
end

local function admin(method, path, body)
  return curl("-X " .. method .. " -H " .. q("Authorization: Bearer " .. env.token) .. " " ..
    (body and "-H 'Content-Type: application/json' --data-binary " .. q(body) .. " " or "") ..
    q("http://" .. env.admin .. path))
end

local function calls(which)
  return json(curl(q("http://127.0.0.1:" .. env[which] .. "/calls")))
end

-- /metrics once every series holds (workers add their counts every 0.1 s)
local function metrics_when(check)
  local text
  wait_for("the metrics", function()
    text = curl(q("http://" .. env.listen .. "/metrics"))
    return check(function(series) return metric(text, series) or 0 end)
  end)
  return text
end

local record = fx.record
local value = require "toolgate.value"
local value_null = value.null
local function enc(v) return (assert(value.encode(v))) end

-- A refusal as the shipped policy answers it (mcp.refusal = "result"): a
-- tool result with isError, raw (result) or as the SDK client hands it to
-- the host (ok) -> its decision, approval id and the text the model reads.
local function refused(msg)
  local r = assert(msg.result or msg.ok, "a tool result expected, got " .. enc(msg))
  assert(r.isError == true, "isError expected")
  return r._meta["toolgate/decision"], r._meta["toolgate/approval_id"], r.content[1].text
end

describe("toolgate gateway (nginx)", function()
  local ready, why

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    local dir = fx.tempdir("toolgate-gateway-spec")
    env.dir = dir
    local ports = fx.ports(9)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]

    pids.everything = spawn("PORT=" .. ports[3] .. " exec node " ..
      "node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp", dir .. "/everything.log")
    pids.counter = spawn("PORT=" .. ports[4] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
    pids.rug = spawn("PORT=" .. ports[5] .. " RUG_PULL=1 exec node upstream.mjs", dir .. "/rug.log")
    env.everything = upstream_port(dir .. "/everything.log")
    env.counter = upstream_port(dir .. "/counter.log")
    env.rug = upstream_port(dir .. "/rug.log")
    -- the SDK README's server on express, which decodes a body by its charset and Content-Encoding
    pids.express = spawn("PORT=" .. ports[6] .. " EXPRESS=1 exec node upstream.mjs", dir .. "/express.log")
    env.express = upstream_port(dir .. "/express.log")
    -- two SDK 2.4.0 servers (MCP 2026-07-28 and 2025), keep-alives every 200 ms; a touch of rug26 changes get-info
    pids.u26 = spawn("PORT=" .. ports[7] .. " KA=200 exec node upstream2026.mjs", dir .. "/u26.log")
    pids.rug26 = spawn("PORT=" .. ports[8] .. " KA=200 RUG=1 exec node upstream2026.mjs", dir .. "/rug26.log")
    env.u26 = upstream_port(dir .. "/u26.log")
    env.rug26 = upstream_port(dir .. "/rug26.log")
    -- a 2025 server with sessions and GET streams (SDK 1.32.2); a touch changes echo
    pids.legacy = spawn("PORT=" .. ports[9] .. " exec node legacy_stream.mjs", dir .. "/legacy.log")
    env.legacy = upstream_port(dir .. "/legacy.log")
    -- the registries: the trusted snapshots, recorded before the gateway
    -- starts (the counter's without the tool "hidden")
    record("counter", env.counter, dir .. "/counter.json", "hidden")
    record("rug", env.rug, dir .. "/rug.json")
    local hostile = h.read_file(dir .. "/counter.json"):gsub('"server":"counter"', '"server":"hostile"')
    h.write_file(dir .. "/hostile.json", hostile)
    record("express", env.express, dir .. "/express.json")
    record("u26", env.u26, dir .. "/u26.json")
    record("rug26", env.rug26, dir .. "/rug26.json")
    record("legacy", env.legacy, dir .. "/legacy.json")
    -- u26's tools, get-info's key mirrored in the header Mcp-Param-Key (x-mcp-header)
    local params = h.read_file(dir .. "/u26.json"):gsub('"server":"u26"', '"server":"params"')
      :gsub('"key":{', '"key":{"x-mcp-header":"Key",')
    h.write_file(dir .. "/params.json", params)
    -- the counter's /gzip/json and /gzip/sse: its tools (and secret_tool, which no registry has), gzip-compressed
    for _, s in ipairs({ "gzipjson", "gzipsse", "gzipdecoy" }) do
      h.write_file(dir .. "/" .. s .. ".json", (hostile:gsub('"server":"hostile"', '"server":"' .. s .. '"')))
    end

    env.token = "spec-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(dir .. "/token", env.token .. "\n")
    env.policy = dir .. "/policy.lua"
    -- the shipped gateway policy; its defers are granted by an operator here
    -- (a 2.4.0 client declares elicitation, and would be asked itself:
    -- approvals in the client are spec/mcp2026_spec.lua's)
    local shipped, n = h.read_file(root .. "/policies/gateway.lua"):gsub("(mcp = {[^}\n]*) }",
      "%1, client_approval = false }", 1)
    assert(n == 1, "policies/gateway.lua has no mcp = { ... } line to add client_approval to")
    h.write_file(env.policy, shipped)
    for _, s in ipairs({ "everything", "counter", "rug", "express", "gzipjson", "gzipsse", "gzipdecoy", "u26", "rug26",
      "params", "legacy" }) do
      h.write_file(dir .. "/" .. s .. ".ctx", '{"scopes":["' .. s .. ':read","' .. s .. ':write"]}')
    end
    local cmd = table.concat({
      "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen, "--admin", env.admin,
      "--admin-token-file", q(dir .. "/token"), "--workers 2", "--prefix", q(dir .. "/prefix"),
      "--policy", q(env.policy),
      "--upstream", "everything=http://127.0.0.1:" .. env.everything .. "/mcp",
      "--registry", q("everything=" .. root .. "/examples/registries/mcp-everything.json"),
      "--context", q("everything=" .. dir .. "/everything.ctx"),
      "--upstream", "counter=http://127.0.0.1:" .. env.counter .. "/mcp",
      "--registry", q("counter=" .. dir .. "/counter.json"), "--context", q("counter=" .. dir .. "/counter.ctx"),
      "--upstream", "rug=http://127.0.0.1:" .. env.rug .. "/mcp",
      "--registry", q("rug=" .. dir .. "/rug.json"), "--context", q("rug=" .. dir .. "/rug.ctx"),
      "--upstream", "hostile=http://127.0.0.1:" .. env.counter .. "/hostile",
      "--registry", q("hostile=" .. dir .. "/hostile.json"),
      "--upstream", "express=http://127.0.0.1:" .. env.express .. "/mcp",
      "--registry", q("express=" .. dir .. "/express.json"), "--context", q("express=" .. dir .. "/express.ctx"),
    }, " ")
    for _, s in ipairs({ "u26", "rug26", "legacy" }) do
      cmd = cmd .. " --upstream " .. s .. "=http://127.0.0.1:" .. env[s] .. "/mcp --registry " .. q(s .. "=" .. dir .. "/"
        .. s .. ".json") .. " --context " .. q(s .. "=" .. dir .. "/" .. s .. ".ctx")
    end
    cmd = cmd .. " --upstream params=http://127.0.0.1:" .. env.u26 .. "/mcp --registry "
      .. q("params=" .. dir .. "/params.json") .. " --context " .. q("params=" .. dir .. "/params.ctx")
    for _, s in ipairs({ "json", "sse", "decoy" }) do
      cmd = cmd .. " --upstream gzip" .. s .. "=http://127.0.0.1:" .. env.counter .. "/gzip/" .. s
        .. " --registry " .. q("gzip" .. s .. "=" .. dir .. "/gzip" .. s .. ".json")
        .. " --context " .. q("gzip" .. s .. "=" .. dir .. "/gzip" .. s .. ".ctx")
    end
    pids.gateway = spawn(cmd, dir .. "/gateway.log")
    wait_for("the gateway's /healthz", function()
      local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. env.listen .. "/healthz"))
      return c == 0 and health:find('"ok"')
    end, dir .. "/gateway.log")
    ready = true
  end)

  teardown(function()
    stop(pids.gateway)
    if env.dir then
      -- nginx goes with the toolgate process that ran it
      local pid = tonumber(h.read_file(env.dir .. "/prefix/nginx.pid") or "")
      if pid then wait_for("nginx to stop", function() return not alive(pid) end) end
    end
    stop(pids.everything)
    stop(pids.counter)
    stop(pids.rug)
    stop(pids.express)
    stop(pids.u26)
    stop(pids.rug26)
    stop(pids.legacy)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  local function need(pending)
    if ready then return true end
    pending(why or "the gateway did not start")
    return false
  end

  it("initializes, lists exactly the registry's tools and returns the real server's answers (SSE)", function()
    if not need(pending) then return end
    local r = client("everything", '[{"op":"list"},{"op":"call","name":"echo","arguments":{"message":"hello"}},' ..
      '{"op":"call","name":"get-sum","arguments":{"a":2,"b":3}}]')
    assert.equals("mcp-servers/everything", r[1].ok.server.name)
    assert.is_string(r[1].ok.session) -- Mcp-Session-Id kept through the gateway
    local names = {}
    for _, t in ipairs(r[2].ok.tools) do names[#names + 1] = t.name end
    local reg = json(h.read_file(root .. "/examples/registries/mcp-everything.json"))
    local want = {}
    for _, t in ipairs(reg.tools) do want[#want + 1] = t.name end
    table.sort(names)
    table.sort(want)
    assert.same(want, names)
    assert.same({ { type = "text", text = "Echo: hello" } }, r[3].ok.content)
    assert.matches("5", r[4].ok.content[1].text)
  end)

  it("passes GET streams and DELETE with the session's Mcp-Session-Id", function()
    if not need(pending) then return end
    local url = q("http://" .. env.listen .. "/mcp/everything")
    local hdr = h.tmpname(".headers")
    curl("-o /dev/null -D " .. q(hdr) .. " -H 'content-type: application/json' " ..
      "-H 'accept: application/json, text/event-stream' " .. url .. " --data-binary " ..
      q('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' ..
        '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}'))
    local sid = assert((h.read_file(hdr) or ""):match("[Mm]cp%-[Ss]ession%-[Ii]d: ([%w%-]+)"))
    local session = " -H " .. q("mcp-session-id: " .. sid) .. " -H 'mcp-protocol-version: 2025-06-18' "
    -- the server's own stream stays open: curl gives up after a second, with its headers read
    local _, out = h.run("curl -s -i --max-time 1 -H 'accept: text/event-stream'" .. session .. url)
    assert.matches("^HTTP/1.1 200", out)
    assert.matches("[Cc]ontent%-[Tt]ype: text/event%-stream", out)
    assert.equals("200", curl("-o /dev/null -w '%{http_code}' -X DELETE" .. session .. url))
    -- the session is gone at the server (server-everything answers 400 for an unknown one)
    assert.equals("400", curl("-o /dev/null -w '%{http_code}' -X DELETE" .. session .. url))
  end)

  it("hides a tool the registry lacks and answers JSON responses verified against outputSchema", function()
    if not need(pending) then return end
    local r = client("counter", '[{"op":"list"},{"op":"call","name":"add","arguments":{"a":2,"b":40}}]')
    local names = {}
    for _, t in ipairs(r[2].ok.tools) do names[t.name] = true end
    assert.is_nil(names.hidden)
    assert.is_true(names.echo and names.add and true)
    assert.same({ sum = 42 }, r[3].ok.structuredContent)
    local raw = send("counter", call_body(7, "echo", '{"message":"json"}'))[1]
    assert.matches("application/json", raw.type)
    assert.equals("Echo: json", raw.json.result.content[1].text)
  end)

  it("refuses H1 with -32602, H2, H3 and H4 as tool results the SDK client hands on, and the server never sees them", function()
    if not need(pending) then return end
    local before = calls("counter").total
    local r = client("counter", table.concat({
      '[{"op":"call","name":"hidden"}',
      '{"op":"call","name":"echo","arguments":{"message":"x","extra":1}}',
      '{"op":"call","name":"echo","arguments":{"message":7}}',
      '{"op":"call","name":"delete_all"}]' }, ","))
    local e = r[2].error
    assert.equals(-32602, e.code)
    assert.equals("H1", e.data.decision.code)
    assert.equals("counter", e.data.decision.server)
    for i, code in ipairs({ "H2", "H3", "H4" }) do
      local d = refused(r[i + 2])
      assert.equals(code, d.code)
      assert.equals("counter", d.server)
    end
    local d, _, text = refused(r[3])
    assert.equals("/extra", d.path)
    -- the text the model reads, written by the core: the bytes mcp_spec pins
    assert.equals('toolgate refused this call to echo: H2 at /extra: (root): key "extra" is not declared by the '
      .. "schema. echo accepts: message (string, at most 100 characters, required). Correct the arguments and call "
      .. "again.", text)
    assert.equals(before, calls("counter").total)
  end)

  it("filters a tools/list answer whatever its status and content type say", function()
    if not need(pending) then return end
    local r = send("hostile", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}')[1]
    assert.equals(500, r.status)
    local names = {}
    for _, t in ipairs(json(r.body).result.tools) do names[t.name] = true end
    assert.is_nil(names.secret_tool)
    assert.is_nil(names.hidden)
    assert.is_true(names.echo)
  end)

  it("reads an answer as the client's SSE parser does: CR line ends, a byte order mark, an unended event, a string id", function()
    if not need(pending) then return end
    for _, mode in ipairs({ "sse-cr", "sse-bom", "sse-tail", "string-id" }) do
      local r = send("hostile", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}', 1, '{"x-hostile":"' .. mode .. '"}')[1]
      assert.equals(200, r.status, mode)
      assert.is_nil(r.body:find("secret_tool", 1, true), mode .. ": " .. r.body)
      -- what came back is the filtered list, or an error for the request the server did not answer
      assert.truthy(r.body:find('"name":"echo"', 1, true) or r.body:find('"id":3,"error"', 1, true), mode .. ": " .. r.body)
    end
    local r = send("hostile", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}', 1, '{"x-hostile":"string-id"}')[1]
    assert.equals(-31003, r.json.error.code)
    assert.matches("answers no request in flight", r.json.error.message)
  end)

  it("refuses a message the gateway would not decide: another method, a body on a GET or DELETE", function()
    if not need(pending) then return end
    local before = calls("counter").total
    local url = q("http://" .. env.listen .. "/mcp/counter")
    local body = q(call_body(41, "delete_all", "{}"))
    for _, c in ipairs({ { "PUT", "405", "method PUT is not allowed" }, { "PATCH", "405", "method PATCH is not allowed" },
                         { "GET", "400", "a GET request with a body" }, { "DELETE", "400", "a DELETE request with a body" } }) do
      local out = curl("-w '\n%{http_code}' -X " .. c[1] .. " -H 'content-type: application/json' --data-binary " .. body
        .. " " .. url)
      assert.equals(c[2], out:match("(%d+)$"), c[1])
      assert.truthy(out:find(c[3], 1, true), out)
    end
    assert.equals(before, calls("counter").total)
  end)

  it("never holds an answer longer than MAX_MESSAGE_BYTES: JSON gets an error, an event stream loses the event", function()
    if not need(pending) then return end
    local r = send("hostile", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}', 1, '{"x-hostile":"huge-json"}')[1]
    assert.equals(-31003, r.json.error.code)
    assert.matches("an answer longer than 67108864 bytes", r.json.error.message)
    r = send("hostile", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}', 1, '{"x-hostile":"huge-sse"}')[1]
    assert.is_true(#r.body < 100000, "the long event passed")
    assert.is_nil(r.body:find("secret_tool", 1, true), r.body)
    assert.truthy(r.body:find('"name":"echo"', 1, true), r.body)
  end)

  it("drops an answer on a GET stream, which answers no request of its own, and passes its notifications", function()
    if not need(pending) then return end
    local out = curl("-H 'accept: text/event-stream' " .. q("http://" .. env.listen .. "/mcp/hostile"))
    assert.truthy(out:find("notifications/tools/list_changed", 1, true), out)
    assert.is_nil(out:find("secret_tool", 1, true), out)
    assert.truthy(out:find(": toolgate dropped a message: an answer that answers no request in flight (id 3)", 1, true), out)
  end)

  it("decides a body nginx buffered to a file", function()
    if not need(pending) then return end
    local before = calls("counter").total
    local file = env.dir .. "/big.json"
    h.write_file(file, call_body(31, "echo", '{"message":"' .. string.rep("x", 200000) .. '"}'))
    local r = send("counter", "@" .. file)[1]
    assert.equals("H3", refused(r.json).code) -- maxLength 100: the whole body was read
    assert.equals(before, calls("counter").total)
    assert.matches("a client request body is buffered to a temporary file", h.read_file(env.dir .. "/gateway.log"),
      1, true)
  end)

  it("replaces a result that breaks the tool's outputSchema", function()
    if not need(pending) then return end
    local before = calls("counter").broken_add or 0
    local r = send("counter", call_body(9, "broken_add", '{"a":1,"b":2}'))[1]
    assert.equals("CONTRACT_OUTPUT", refused(r.json).code)
    assert.equals(before + 1, calls("counter").broken_add) -- it ran; its result did not reach the client
  end)

  it("defers a write, lets the identical call through once after approval, not other arguments", function()
    if not need(pending) then return end
    local body = call_body(11, "write_note", '{"text":"approve me"}')
    local before = calls("counter").total
    local d, id, text = refused(send("counter", body)[1].json)
    assert.matches("^%x+$", id)
    assert.equals("defer", d.verdict)
    -- the model is told a person was asked, and how the approval is granted here
    assert.truthy(text:find("Approval " .. id .. ". A person grants it on the gateway's admin API: POST /v1/approvals/"
      .. id .. "/grant Once it is granted", 1, true), text)
    assert.same({ "server", "tool", "args_digest", "policy_version", "registry_hash", "epoch" }, (function()
      local keys = {}
      for _, k in ipairs({ "server", "tool", "args_digest", "policy_version", "registry_hash", "epoch" }) do
        if d.binding[k] ~= nil then keys[#keys + 1] = k end
      end
      return keys
    end)())
    local listed = json(admin("GET", "/v1/approvals"))
    local found
    for _, a in ipairs(listed.approvals) do if a.id == id then found = a end end
    assert.equals("pending", found.status)
    assert.equals("write_note", found.tool)
    -- the same call again, before approval: the same request, still deferred
    assert.equals(id, select(2, refused(send("counter", body)[1].json)))
    assert.equals("granted", json(admin("POST", "/v1/approvals/" .. id .. "/grant")).status)
    -- one use: of four identical calls at once, across both workers, one passes
    local r = send("counter", body, 4)
    local passed, deferred = 0, 0
    for _, x in ipairs(r) do
      if x.json.result and not x.json.result.isError then passed = passed + 1 end
      if x.json.result and x.json.result.isError and refused(x.json).verdict == "defer" then deferred = deferred + 1 end
    end
    assert.equals(1, passed)
    assert.equals(3, deferred)
    assert.equals(before + 1, calls("counter").total)
    -- other arguments: another approval, still deferred
    local od, other = refused(send("counter", call_body(12, "write_note", '{"text":"something else"}'))[1].json)
    assert.equals("defer", od.verdict)
    assert.not_equals(id, other)
    -- denied: refused from then on
    assert.equals("denied", json(admin("POST", "/v1/approvals/" .. other .. "/deny")).status)
    local denied = refused(send("counter", call_body(13, "write_note", '{"text":"something else"}'))[1].json)
    assert.equals("APPROVAL_DENIED", denied.code)
    assert.equals(before + 1, calls("counter").total)
    -- a second decision on one approval is refused
    assert.matches("ALREADY_DECIDED", admin("POST", "/v1/approvals/" .. id .. "/deny"))
  end)

  it("grants and denies with a JSON body: uses, expires_in, note and who decided kept; a bad body decides nothing",
    function()
      if not need(pending) then return end
      local body = call_body(14, "write_note", '{"text":"twice, by ops"}')
      local before = calls("counter").total
      local _, id = refused(send("counter", body)[1].json)
      for _, bad in ipairs({ '{"uses":0}', '{"uses":2,"expires":60}', '{"expires_in":1.5}', '[2]', 'uses=2',
        '{"uses":99999999999999999999}', '{"note":7}' }) do
        local out = json(admin("POST", "/v1/approvals/" .. id .. "/grant", bad))
        assert.equals("INVALID", out.code, bad)
      end
      assert.equals("pending", json(admin("GET", "/v1/approvals/" .. id)).status)
      local r = json(admin("POST", "/v1/approvals/" .. id .. "/grant",
        '{"uses":2,"expires_in":30,"note":"twice, for the demo","by":"ops@example"}'))
      assert.same({ "granted", 2, "twice, for the demo", "ops@example", 30 },
        { r.status, r.uses, r.note, r.decided_by, r.ttl })
      assert.is_true(math.abs(r.expires - r.decided_at - 30) < 0.01)
      for i = 1, 2 do assert.is_nil(send("counter", body)[1].json.result.isError, "use " .. i) end
      assert.equals("defer", (refused(send("counter", body)[1].json)).verdict)
      assert.equals(before + 2, calls("counter").total)
      local _, other = refused(send("counter", call_body(15, "write_note", '{"text":"no, by ops"}'))[1].json)
      local d = json(admin("POST", "/v1/approvals/" .. other .. "/deny", '{"note":"not today"}'))
      assert.same({ "denied", "not today", "admin-api" }, { d.status, d.note, d.decided_by })
      assert.same({ "denied", "not today" }, (function()
        local a = json(admin("GET", "/v1/approvals/" .. other))
        return { a.status, a.note }
      end)())
    end)

  it("detects a rug pull: the changed and the new tool are hidden, reported, and their calls refused", function()
    if not need(pending) then return end
    local r = client("rug", '[{"op":"list"},{"op":"call","name":"echo","arguments":{"message":"hi"}},' ..
      '{"op":"call","name":"add","arguments":{"a":1,"b":1}}]')
    local names = {}
    for _, t in ipairs(r[2].ok.tools) do names[t.name] = true end
    assert.is_nil(names.echo)       -- its description changed under its pin
    assert.is_nil(names.exfiltrate) -- new: not in the registry
    assert.is_true(names.add)
    assert.equals("PIN_CHANGED", refused(r[3]).code)
    assert.same({ sum = 2 }, r[4].ok.structuredContent) -- the unchanged tools still work
    assert.is_nil(calls("rug").echo)
    local pins = json(admin("GET", "/v1/pins"))
    local changes = {}
    for _, p in ipairs(pins.reports) do
      if p.server == "rug" then changes[p.tool] = p.change.change end
    end
    assert.same({ echo = "changed", exfiltrate = "added" }, changes)
    local m = metrics_when(function(v) return v('toolgate_pin_changes_total{change="changed",server="rug"}') >= 1 end)
    assert.equals(1, metric(m, 'toolgate_pin_changes_total{change="changed",server="rug"}'))
    assert.equals(1, metric(m, 'toolgate_quarantined{kind="tool"}'))
  end)

  it("shows an approval's exact arguments: GET /v1/approvals/ID and the list, for a write the SDK client deferred", function()
    if not need(pending) then return end
    local text = "rm -rf / --no-preserve-root " .. tostring(math.random(1e9))
    local r = client("counter", '[{"op":"call","name":"write_note","arguments":{"text":"' .. text .. '"}}]')
    local d, id = refused(r[2])
    assert.equals("defer", d.verdict)
    local canonical = '{"text":"' .. text .. '"}'
    local a = json(admin("GET", "/v1/approvals/" .. id))
    assert.same({ "write_note", canonical, #canonical, false },
      { a.tool, a.arguments, a.arguments_bytes, a.arguments_truncated })
    local found
    for _, x in ipairs(json(admin("GET", "/v1/approvals")).approvals) do
      if x.id == id then found = x end
    end
    assert.equals(canonical, found and found.arguments)
    -- and the decision log's line for the defer
    local logged = wait_for("the defer's line in the decision log", function()
      for _, l in ipairs(h.lines_of(h.read_file(env.dir .. "/prefix/decisions.jsonl") or "")) do
        local t = json(l)
        if t.approval_id == id then return t end
      end
    end)
    assert.same({ canonical, #canonical, false }, { logged.arguments, logged.arguments_bytes, logged.arguments_truncated })
  end)

  it("refuses a rug pull behind a flood of made-up tools: reports bounded, a full store fails closed", function()
    if not need(pending) then return end
    local gateway = require "toolgate.cli.gateway"
    local max = require("toolgate.state").MAX_ADDED_REPORTS
    local dir = env.dir .. "/flood"
    assert(os.execute("mkdir -p " .. q(dir)))
    local ports = fx.ports(3)
    local listen, admin_at = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    local own = {}
    local ok, err = pcall(function()
      -- the first tools/list is the registry; the second adds 3000 made-up tools; later ones change echo too
      own.upstream = spawn("PORT=" .. ports[3] .. " FLOOD=3000 JSON_RESPONSE=1 exec node upstream.mjs",
        dir .. "/upstream.log")
      local port = upstream_port(dir .. "/upstream.log")
      record("flood", port, dir .. "/flood.json")
      local registered = #json(h.read_file(dir .. "/flood.json")).tools
      h.write_file(dir .. "/flood.ctx", '{"scopes":["flood:read","flood:write"]}')
      -- a gateway of its own: a state dict of 32 KiB (toolgate gateway's is 16 MiB), which MAX_ADDED_REPORTS
      -- reports overflow: every record of their size then fails, echo's change too; two workers, one of
      -- which reads the listing while the other may decide the calls
      local code, out, cerr = h.run(table.concat({ h.lua, q(root .. "/bin/toolgate"), "gateway", "--conf-only",
        "--listen", listen, "--admin", admin_at, "--admin-token-file", q(env.dir .. "/token"), "--workers 2",
        "--prefix", q(dir .. "/prefix"), "--policy", q(env.policy),
        "--upstream", "flood=http://127.0.0.1:" .. port .. "/mcp", "--registry", q("flood=" .. dir .. "/flood.json"),
        "--context", q("flood=" .. dir .. "/flood.ctx") }, " "))
      assert(code == 0, cerr)
      local conf = out:match("[^\n]+")
      local text, n = h.read_file(conf):gsub("lua_shared_dict toolgate 16m;", "lua_shared_dict toolgate 32k;")
      assert.equals(1, n)
      h.write_file(conf, text)
      own.nginx = spawn("exec " .. gateway.NGINX .. " -p " .. q(dir .. "/prefix") .. " -c " .. q(conf) .. " -e stderr",
        dir .. "/nginx.log")
      wait_for("the flood gateway's /healthz", function()
        local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. listen .. "/healthz"))
        return c == 0 and health:find('"ok"')
      end, dir .. "/nginx.log")
      local url = "http://" .. listen .. "/mcp/flood"
      -- 3000 made-up tools: none shown, at most MAX_ADDED_REPORTS kept and one record more; the rest did not fit
      local r = fx.client(url, '[{"op":"list"}]')
      assert.equals(registered, #r[2].ok.tools)
      local reports = json(curl("-H " .. q("Authorization: Bearer " .. env.token) .. " "
        .. q("http://" .. admin_at .. "/v1/pins"))).reports
      assert.is_true(#reports > 0 and #reports <= max + 1)
      local function errors()
        return metric(curl(q("http://" .. listen .. "/metrics")), 'toolgate_state_store_errors_total{op="pin_report"}')
          or 0
      end
      wait_for("the store errors in /metrics", function() return errors() >= 1 end)
      local log = h.read_file(dir .. "/nginx.log")
      assert.matches("the state store cannot keep a pin_report of server flood tool made_up_%d+_of_a_flood: [^\n]*no "
        .. "memory", log)
      -- a defer, which needs a record, fails closed
      local deferred = fx.send(url, call_body(7, "write_note", '{"text":"a note"}'))[1].json
      assert.is_nil(deferred.result)
      assert.equals(-31003, deferred.error.code)
      -- the rug pull: echo's report cannot be stored, and its calls are refused all the same, by both workers
      local before = errors()
      r = fx.client(url, '[{"op":"list"},{"op":"call","name":"echo","arguments":{"message":"hi"}}]')
      assert.equals(registered - 1, #r[2].ok.tools)
      assert.equals("PIN_CHANGED", refused(r[3]).code)
      local function workers()
        local seen, count = {}, 0
        for l in (h.read_file(dir .. "/prefix/decisions.jsonl") or ""):gmatch("[^\n]+") do
          local t = json(l)
          if t.decision and t.decision.code == "PIN_CHANGED" and not seen[t.worker] then
            seen[t.worker], count = true, count + 1
          end
        end
        return count
      end
      -- new connections at once, until both workers decided some (the log is written every 0.1 s)
      for _ = 1, 10 do
        for _, x in ipairs(fx.send(url, call_body(8, "echo", '{"message":"hi"}'), 12, '{"connection":"close"}')) do
          assert.equals("PIN_CHANGED", refused(x.json).code)
        end
        sleep(0.3)
        if workers() == 2 then break end
      end
      assert.equals(2, workers())
      assert.is_nil(json(curl(q("http://127.0.0.1:" .. port .. "/calls"))).echo)
      wait_for("echo's store error in /metrics", function() return errors() > before end)
      assert.matches("cannot keep a pin_report of server flood tool echo:", h.read_file(dir .. "/nginx.log"))
      -- and the admin API lists it, kept by its mark
      local listed
      for _, p in ipairs(json(curl("-H " .. q("Authorization: Bearer " .. env.token) .. " "
          .. q("http://" .. admin_at .. "/v1/pins"))).reports) do
        if p.tool == "echo" then listed = p.change end
      end
      assert.same({ "changed", false }, { listed and listed.change, listed and listed.stored })
    end)
    stop(own.nginx)
    stop(own.upstream)
    assert(ok, err)
  end)

  -- a 2026-07-28 request: params._meta claims the version
  local META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientCapabilities":{}}'
  local function modern_call(id, name, args)
    return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":' .. enc(name) .. ',"arguments":'
      .. args .. "," .. META .. "}}"
  end
  local function std_headers(more)
    local t = { ["mcp-protocol-version"] = "2026-07-28", ["mcp-method"] = "tools/call" }
    for k, v in pairs(more or {}) do t[k] = v end
    return enc(t)
  end

  it("refuses a request whose MCP headers disagree with its body: 400 and -32020 from the gateway, never forwarded", function()
    if not need(pending) then return end
    local mismatch = require("toolgate.mcp").CODES.HEADER_MISMATCH
    -- what reached each server: the counter counts the calls it was sent, u26 those that ran
    local function reached()
      return (calls("counter").methods["tools/call"] or 0) + #json(curl(q("http://127.0.0.1:" .. env.u26 .. "/calls")))
    end
    local before = reached()
    local cases = {
      -- a router behind would route by Mcp-Name: add, the server would run echo
      { "counter", modern_call(31, "echo", '{"message":"h1"}'), std_headers({ ["mcp-name"] = "add" }), "Mcp%-Name" },
      { "counter", modern_call(32, "echo", '{"message":"h2"}'), std_headers({ ["mcp-name"] = "=?base64?YWRk?=" }),
        'names "add"' },
      { "counter", modern_call(33, "echo", '{"message":"h3"}'), std_headers(), "Mcp%-Name header is absent" },
      { "counter", modern_call(34, "echo", '{"message":"h4"}'),
        std_headers({ ["mcp-name"] = "echo", ["mcp-protocol-version"] = "2025-11-25" }), "body claims" },
      { "counter", modern_call(35, "echo", '{"message":"h5"}'), enc({ ["mcp-name"] = "echo" }),
        "MCP%-Protocol%-Version header is absent" },
      { "counter", modern_call(36, "echo", '{"message":"h6"}'), std_headers({ ["mcp-name"] = "=?base64?ZWNobw?=" }),
        "not valid" },
      -- a legacy request may go without them; one it carries must agree, and none may claim a modern version
      { "counter", call_body(37, "echo", '{"message":"h7"}'), enc({ ["mcp-name"] = "add" }), "Mcp%-Name" },
      { "counter", call_body(38, "echo", '{"message":"h8"}'), enc({ ["mcp-protocol-version"] = "2026-07-28" }),
        "no params._meta" },
      -- x-mcp-header: get-info's key must ride in Mcp-Param-Key too
      { "params", modern_call(39, "get-info", '{"key":"h9"}'), std_headers({ ["mcp-name"] = "get-info" }),
        "Mcp%-Param%-Key header is absent" },
      { "params", modern_call(40, "get-info", '{"key":"h10"}'),
        std_headers({ ["mcp-name"] = "get-info", ["mcp-param-key"] = "h11" }), "Mcp%-Param%-Key header names" },
      { "u26", modern_call(41, "get-info", '{"key":"h12"}'),
        std_headers({ ["mcp-name"] = "get-info", ["mcp-param-key"] = "h12" }), "does not declare" },
    }
    for i, c in ipairs(cases) do
      local r = send(c[1], c[2], 1, c[3])[1]
      assert.equals(400, r.status, "case " .. i .. ": " .. r.body)
      assert.equals(mismatch, r.json.error.code, "case " .. i)
      assert.matches(c[4], r.json.error.message)
      assert.equals("HEADER_MISMATCH", r.json.error.data.decision.code)
    end
    assert.equals(before, reached())
    -- a GET or DELETE names no message: a header naming one is refused too
    for _, m in ipairs({ "GET", "DELETE" }) do
      local out = curl("-X " .. m .. " -w ' %{http_code}' -H 'accept: text/event-stream' -H 'mcp-name: delete_all' "
        .. q("http://" .. env.listen .. "/mcp/counter"))
      assert.matches(" 400$", out)
      assert.equals(mismatch, json(out:gsub(" 400$", "")).error.code)
    end
    -- headers that agree on a version the gateway does not serve: -32022, with 400 too
    local r = send("u26", modern_call(45, "get-info", '{"key":"v"}'):gsub("2026%-07%-28", "2099-01-01"), 1,
      std_headers({ ["mcp-name"] = "get-info", ["mcp-protocol-version"] = "2099-01-01" }))[1]
    assert.equals(400, r.status, r.body)
    assert.equals(require("toolgate.mcp").CODES.UNSUPPORTED_PROTOCOL_VERSION, r.json.error.code)
    assert.equals(before, reached())
    -- headers that agree, encoded or not, pass
    local ok = {
      { "u26", modern_call(42, "get-info", '{"key":"ok1"}'), std_headers({ ["mcp-name"] = "=?base64?Z2V0LWluZm8=?=" }),
        "info:ok1" },
      { "counter", call_body(43, "echo", '{"message":"ok2"}'), nil, "Echo: ok2" },
      { "params", modern_call(44, "get-info", '{"key":"Zürich"}'), std_headers({ ["mcp-name"] = "get-info",
        ["mcp-param-key"] = "=?base64?WsO8cmljaA==?=" }), "info:Zürich" },
    }
    for i, c in ipairs(ok) do
      r = send(c[1], c[2], 1, c[3])[1]
      assert.equals(200, r.status, "ok " .. i .. ": " .. r.body)
      assert.equals(c[4], r.json.result.content[1].text)
    end
    assert.equals(before + 3, reached())
  end)

  it("streams subscriptions/listen as it comes: keep-alive comments and a list_changed event pass unbuffered", function()
    if not need(pending) then return end
    local code, out, err = fx.node("listen.mjs " .. q("http://" .. env.listen .. "/mcp/u26") .. " 2000 "
      .. q("http://127.0.0.1:" .. env.u26 .. "/touch") .. " 1000")
    assert.equals(0, code, err)
    local r = json(out)
    assert.equals(200, r.status)
    assert.matches("text/event%-stream", r.type)
    local acked, keepalives, changed = nil, {}, nil
    for _, c in ipairs(r.chunks) do
      if c.text:find("notifications/subscriptions/acknowledged", 1, true) then acked = acked or c.t end
      for _ in c.text:gmatch(": keepalive\n\n") do keepalives[#keepalives + 1] = c.t end
      if c.text:find('"method":"notifications/tools/list_changed"', 1, true) then changed = changed or c.t end
    end
    assert.is_number(acked)
    -- a keep-alive every 200 ms, each passed when it came: several before the touch, spread over the wait
    local early = 0
    for _, t in ipairs(keepalives) do if t < 1000 then early = early + 1 end end
    assert.is_true(early >= 3, "keep-alives before the touch: " .. out)
    assert.is_true(keepalives[1] < 600, out)
    -- the event came after the touch, while the stream was open, not at its end
    assert.is_number(changed, out)
    assert.is_true(changed >= 950 and changed < 1800, out)
    assert.is_true(changed < r.closed)
  end)

  it("passes a tools/call's SSE answer event by event (POSTs are proxied buffered): each progress when sent", function()
    if not need(pending) then return end
    -- a 2025 server (SDK) answering with an event stream: a progress every 300 ms, the result after the fourth
    local code, out, err = fx.node("progress.mjs " .. q("http://" .. env.listen .. "/mcp/everything")
      .. " trigger-long-running-operation '{\"duration\":1.2,\"steps\":4}'")
    assert.equals(0, code, tostring(err) .. out)
    local r = json(out)
    assert.matches("completed", r.result.content[1].text)
    assert.equals(4, #r.progress, out)
    -- each came when the server sent it, spread over the call, the first long before the result
    assert.is_true(r.progress[1] < 800, out)
    assert.is_true(r.progress[4] - r.progress[1] >= 600, out)
    assert.is_true(r.result_ms - r.progress[1] >= 600, out)
  end)

  it("lists the tools again itself on list_changed: a rug pull is refused before any client lists again", function()
    if not need(pending) then return end
    local function ran() return #json(curl(q("http://127.0.0.1:" .. env.rug26 .. "/calls"))) end
    local headers = std_headers({ ["mcp-name"] = "get-info" })
    local r = send("rug26", modern_call(51, "get-info", '{"key":"a"}'), 1, headers)[1]
    assert.equals("info:a", r.json.result.content[1].text)
    local before = ran()
    -- a client listens; the server changes get-info and says so; nobody calls tools/list
    local code, _, err = fx.node("listen.mjs " .. q("http://" .. env.listen .. "/mcp/rug26") .. " 800 "
      .. q("http://127.0.0.1:" .. env.rug26 .. "/touch") .. " 200")
    assert.equals(0, code, err)
    wait_for("the gateway's report of get-info's change", function()
      for _, p in ipairs(json(admin("GET", "/v1/pins")).reports) do
        if p.server == "rug26" and p.tool == "get-info" and p.change.change == "changed" then return true end
      end
    end, env.dir .. "/gateway.log", 5)
    r = send("rug26", modern_call(52, "get-info", '{"key":"b"}'), 1, headers)[1]
    -- refused (a tool result with isError or an error, as the policy's mcp.refusal says)
    assert.is_true(r.json.error ~= nil or r.json.result.isError == true, r.body)
    assert.matches("PIN_CHANGED", r.body)
    assert.equals(before, ran())
  end)

  -- client2026.mjs (SDK 2.4.0 in MODE) against a route: the JSON lines it printed
  local function client2026(mode, server, list)
    local code, out, err = h.run("cd " .. q(testdir) .. " && timeout 120 node client2026.mjs " .. mode .. " "
      .. q("[" .. table.concat(list, ",") .. "]") .. " " .. q("http://" .. env.listen .. "/mcp/" .. server))
    assert(code == 0, "client2026.mjs " .. mode .. " failed (" .. tostring(code) .. "):\n" .. out .. err)
    return fx.lines(out)
  end
  -- a refusal as the client got it: the decision (a JSON-RPC error's data, or a CallToolResult's _meta)
  local function decision_of(line)
    if line.error then return line.error.data and line.error.data.decision, line.error.data.approval_id end
    local m = line.ok and line.ok.isError and line.ok._meta
    return m and m["toolgate/decision"], m and m["toolgate/approval_id"]
  end

  it("lets a write that asks for input through every round by one approval, each retry held to its round", function()
    if not need(pending) then return end
    local function publish(title, more)
      return '{"op":"call_manual","name":"publish","arguments":{"channel":"blog","title":"' .. title .. '"}'
        .. (more or "") .. "}"
    end
    local yes = ',"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},'
      .. '"requestState":"{{requestState}}"'
    local d, approval = decision_of(client2026("pin", "u26", { publish("rounds") })[2])
    assert.equals("defer", d and d.verdict)
    assert.equals("granted", json(admin("POST", "/v1/approvals/" .. approval .. "/grant")).status)
    local r = client2026("pin", "u26", {
      publish("rounds"),                                      -- round 1, by the grant's one use
      publish("other", yes),                                  -- its state, other arguments
      publish("rounds", ',"inputResponses":{"confirm":{"action":"accept","content":{"confirm":"yes"}}},'
        .. '"requestState":"{{requestState}}"'),              -- an answer that does not fit the schema asked
      publish("rounds", ',"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},'
        .. '"requestState":"made-up"'),                       -- a state no round issued
      publish("rounds", yes),                                 -- round 2: the same approval, no use spent
      publish("rounds"),                                      -- a new exchange: deferred again
    })
    assert.equals("input_required", r[2].ok and r[2].ok.resultType, enc(r[2]))
    for i, code in ipairs({ "ROUND_MISMATCH", "INPUT_RESPONSE_INVALID", "ROUND_UNKNOWN" }) do
      assert.equals(code, (decision_of(r[2 + i]) or {}).code, enc(r[2 + i]))
    end
    assert.equals("published rounds to blog", r[6].ok and r[6].ok.content[1].text, enc(r[6]))
    assert.equals("defer", (decision_of(r[7]) or {}).verdict, enc(r[7]))
    local ran = {}
    for _, c in ipairs(calls("u26")) do
      if c.name == "publish" then ran[#ran + 1] = c.arguments.title .. ":" .. tostring(c.completed) end
    end
    assert.same({ "rounds:false", "rounds:true" }, ran)
    -- a 2.4.0 client in auto mode answers the question itself: one grant, both rounds
    d, approval = decision_of(client2026("auto", "u26", { '{"op":"call","name":"publish","arguments":'
      .. '{"channel":"feed","title":"auto"}}' })[2])
    assert.equals("defer", d and d.verdict)
    admin("POST", "/v1/approvals/" .. approval .. "/grant")
    r = client2026("auto", "u26", { '{"op":"call","name":"publish","arguments":{"channel":"feed","title":"auto"}}' })
    assert.equals("published auto to feed", r[2].ok and r[2].ok.content[1].text, enc(r[2]))
  end)

  it("lists the tools again itself on a 2025 GET stream's list_changed: initialize first, the rug pull refused", function()
    if not need(pending) then return end
    local url = "http://" .. env.listen .. "/mcp/legacy"
    local hdr = h.tmpname(".headers")
    curl("-o /dev/null -D " .. q(hdr) .. " -H 'content-type: application/json' " ..
      "-H 'accept: application/json, text/event-stream' " .. q(url) .. " --data-binary " ..
      q('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' ..
        '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}'))
    local sid = assert((h.read_file(hdr) or ""):match("[Mm]cp%-[Ss]ession%-[Ii]d: ([%w%-]+)"))
    local session = enc({ ["mcp-session-id"] = sid, ["mcp-protocol-version"] = "2025-06-18" })
    assert.equals("202", curl("-o /dev/null -w '%{http_code}' -H 'content-type: application/json' " ..
      "-H 'accept: application/json, text/event-stream' -H " .. q("mcp-session-id: " .. sid) .. " " .. q(url) ..
      " --data-binary '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}'"))
    assert.matches("Echo: before", send("legacy", call_body(61, "echo", '{"message":"before"}'), 1, session)[1].body)
    local function counts() return json(curl(q("http://127.0.0.1:" .. env.legacy .. "/calls"))) end
    local before = counts()
    -- the client's GET stream gets list_changed; nobody calls tools/list
    local code, out, err = fx.node("listen.mjs " .. q(url) .. " 800 " .. q("http://127.0.0.1:" .. env.legacy .. "/touch")
      .. " 200 " .. q(sid))
    assert.equals(0, code, err)
    assert.matches("notifications/tools/list_changed", out)
    wait_for("the gateway's report of echo's change", function()
      for _, p in ipairs(json(admin("GET", "/v1/pins")).reports) do
        if p.server == "legacy" and p.tool == "echo" and p.change.change == "changed" then return true end
      end
    end, env.dir .. "/gateway.log", 5)
    local r = send("legacy", call_body(62, "echo", '{"message":"after"}'), 1, session)[1]
    assert.matches("PIN_CHANGED", r.body)
    local after = counts()
    assert.equals(before.calls, after.calls)
    assert.equals(before.sessions + 1, after.sessions) -- the gateway's own, opened by its initialize
    -- ten announcements at once: one re-list, one more for those that came meanwhile, a second apart (not ten)
    local stream = fx.spawn("exec node listen.mjs " .. q(url) .. " 4000 '' 0 " .. q(sid), env.dir .. "/stream.log")
    fx.sleep(0.5)
    for _ = 1, 10 do curl(q("http://127.0.0.1:" .. env.legacy .. "/touch")) end
    fx.sleep(3)
    stop(stream)
    local relists = counts().sessions - after.sessions
    assert.is_true(relists >= 1 and relists <= 3, relists .. " re-lists")
  end)

  it("answers the decision API and health; the admin API needs its token", function()
    if not need(pending) then return end
    local d = json(curl("-X POST --data-binary " ..
      q('{"server":"counter","name":"echo","arguments":{"message":"x","bad":1}}') .. " " ..
      q("http://" .. env.listen .. "/v1/check")))
    assert.equals("H2", d.code)
    local ok = json(curl("-X POST --data-binary " .. q('{"server":"counter","name":"hidden","arguments":{}}') .. " " ..
      q("http://" .. env.listen .. "/v1/check")))
    assert.equals("H1", ok.code)
    -- one context rule for both: a call naming a route's server is decided in
    -- that route's context, as /mcp/counter decides it (counter:read granted)
    local read = json(curl("-X POST --data-binary " ..
      q('{"server":"counter","name":"echo","arguments":{"message":"x"}}') .. " " .. q("http://" .. env.listen .. "/v1/check")))
    assert.same({ "accept", "counter" }, { read.verdict, read.server })
    -- the hostile route has no --context: the same tool there lacks its scope, H4
    local other = json(curl("-X POST --data-binary " ..
      q('{"server":"hostile","name":"echo","arguments":{"message":"x"}}') .. " " .. q("http://" .. env.listen .. "/v1/check")))
    assert.same({ "reject", "H4" }, { other.verdict, other.code })
    local v = json(curl("-X POST --data-binary " .. q('{"call":{"server":"counter","name":"add","arguments":{"a":1,' ..
      '"b":2}},"result":{"content":[],"structuredContent":{"sum":"three"}}}') .. " " ..
      q("http://" .. env.listen .. "/v1/verify")))
    assert.equals("CONTRACT_OUTPUT", v.code)
    -- a deterministic tool whose identical calls returned six different results: its
    -- declaration is quarantined in the shared store, which every worker reads
    local samples = {}
    for i = 1, 6 do samples[i] = '{"arguments":{"a":1,"b":2},"result":{"n":' .. i .. '},"epoch":"e1"}' end
    local plan = '{"plan_id":"p1","tool":{"server":"counter","name":"add","deterministic":true},"samples":[' ..
      table.concat(samples, ",") .. "]}"
    local c = json(curl("-X POST --data-binary " .. q(plan) .. " " .. q("http://" .. env.listen .. "/v1/classify")))
    assert.equals("RESULT_DISAGREE", c.outcomes[1].code)
    metrics_when(function(get) return get('toolgate_quarantined{kind="determinism"}') == 1 end)
    local reg = json(curl(q("http://" .. env.listen .. "/v1/registry")))
    assert.matches("^%x+$", reg.registry_hash)
    assert.matches("^%x+$", reg.tools[1].pin)
    assert.equals("ok", json(curl(q("http://" .. env.listen .. "/healthz"))).status)
    local code = curl("-o /dev/null -w '%{http_code}' -X POST " .. q("http://" .. env.admin .. "/v1/reload"))
    assert.equals("401", code)
  end)

  it("counts decisions, approvals and latencies in /metrics", function()
    if not need(pending) then return end
    local m = metrics_when(function(v)
      return v('toolgate_approval_events_total{event="used"}') >= 1 and v('toolgate_approval_events_total{event="granted"}') >= 1
    end)
    assert.is_true(metric(m, 'toolgate_decisions_total{code="H2",mode="enforce",phase="call",stage="rung",'
      .. 'verdict="reject"}') >= 1)
    assert.is_true(metric(m, 'toolgate_tool_decisions_total{mode="enforce",server="counter",tool="write_note",'
      .. 'verdict="defer"}') >= 1)
    assert.is_true(metric(m, 'toolgate_approval_events_total{event="granted"}') >= 1)
    assert.is_true(metric(m, 'toolgate_approval_events_total{event="used"}') >= 1)
    assert.is_true(metric(m, 'toolgate_decision_seconds_count{phase="request"}') >= 1)
    assert.is_true(metric(m, 'toolgate_decision_seconds_bucket{phase="request",le="+Inf"}') >= 1)
    assert.matches('toolgate_info{policy_version="gateway@1', m)
  end)

  it("logs one audit record per decision, from both workers, every record one the schema takes (ajv and toolgate "
    .. "validate: docs/schemas/decision-record.schema.json)", function()
    if not need(pending) then return end
    local workers, n = {}, 0
    local lines = h.lines_of(h.read_file(env.dir .. "/prefix/decisions.jsonl") or "")
    if h.npm_peer("ajv", pending) then require("audit_records").assert_valid(lines, "nginx_spec's gateway") end
    for _, l in ipairs(lines) do
      local r = json(l)
      if r.decision then
        n = n + 1
        workers[r.worker] = true
        assert.is_string(r.decision.verdict)
      end
    end
    assert.is_true(n > 10)
    local distinct = 0
    for _ in pairs(workers) do distinct = distinct + 1 end
    assert.equals(2, distinct)
  end)

  local function load(ms, agent, log)
    return spawn("exec node http.mjs load " .. q("http://" .. env.listen .. "/mcp/counter") .. " " ..
      q(call_body(21, "echo", '{"message":"load"}')) .. " " .. ms .. " 8 " .. agent, env.dir .. "/" .. log)
  end

  local function loaded(pid, log)
    wait_for("the load to finish", function() return not alive(pid) end)
    local res = json(h.read_file(env.dir .. "/" .. log))
    assert.equals(0, res.failed, h.read_file(env.dir .. "/" .. log))
    assert.is_true(res.ok > 50)
  end

  it("reloads under load without a failed request; a broken policy keeps the old snapshot", function()
    if not need(pending) then return end
    -- the admin API's reload: every worker swaps snapshots between requests
    local keep = load(2000, "keep", "load-keep.log")
    sleep(0.5)
    local r = json(admin("POST", "/v1/reload"))
    assert.equals("success", r.result)
    h.write_file(env.policy, "return {")
    local bad = json(admin("POST", "/v1/reload"))
    assert.equals("failure", bad.result)
    assert.equals("POLICY_LOAD", bad.code)
    h.write_file(env.policy, h.read_file(root .. "/policies/gateway.lua"))
    loaded(keep, "load-keep.log")
    -- nginx -s reload: new workers, new engines.  (Old workers close their
    -- idle keep-alive connections, which a client may be reusing that very
    -- moment, as with any nginx reload: this load opens a connection per request.)
    local fresh = load(2000, "close", "load-close.log")
    sleep(0.5)
    local master = assert(tonumber(h.read_file(env.dir .. "/prefix/nginx.pid")))
    assert.equals(0, (h.run("kill -HUP " .. master)))
    loaded(fresh, "load-close.log")
    local m = metrics_when(function(v) return v('toolgate_reloads_total{result="failure"}') >= 1 end)
    assert.is_true(metric(m, 'toolgate_reloads_total{result="failure"}') >= 1)
    assert.is_true(metric(m, 'toolgate_reloads_total{result="success"}') >= 1)
    -- still deciding with the old snapshot's rules
    assert.equals("Echo: after", send("counter", call_body(22, "echo", '{"message":"after"}'))[1].json.result
      .content[1].text)
  end)

  -- the body of issue 32's first example: read as UTF-8, an echo whose message is
  -- UTF-7 text; read as UTF-7 (express.json() with iconv-lite), a call to delete_all
  local UTF7_CALL = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":'
    .. '"+ACIAfQ-,+ACI-name+ACI-:+ACI-delete+AF8-all+ACI-,+ACI-arguments+ACI-:+AHsAIg-a+ACI-:+ACI-"}}}'

  local function refused_415(r, code, what)
    assert.equals(415, r.status, what)
    assert.equals(value_null, r.json.id, what)
    assert.equals(-32600, r.json.error.code, what)
    assert.equals(code, r.json.error.data.decision.code, what)
  end

  it("refuses a body in a charset other than UTF-8 with 415: the server never reads what was not decided", function()
    if not need(pending) then return end
    local before = calls("express")
    for _, ctype in ipairs({ "application/json; charset=utf-7", 'application/json;charset="UTF-7"',
        "application/json; charset=utf-16", "application/json; charset=latin1", "application/json ; CHARSET = utf-7",
        "application/json; charset=utf-8; charset=utf-7", "application/json; charset=utf8" }) do
      refused_415(send("express", UTF7_CALL, 1, enc({ ["content-type"] = ctype }))[1], "UNSUPPORTED_CHARSET", ctype)
    end
    -- a body that is not labelled JSON at all is not decided either (the SDK's servers refuse it too)
    for _, ctype in ipairs({ "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "" }) do
      refused_415(send("express", UTF7_CALL, 1, enc({ ["content-type"] = ctype }))[1], "UNSUPPORTED_MEDIA_TYPE", ctype)
    end
    local out = curl("-w '\n%{http_code}' -H 'Content-Type:' --data-binary " .. q(UTF7_CALL) .. " "
      .. q("http://" .. env.listen .. "/mcp/express"))
    assert.equals("415", out:match("(%d+)$"))
    assert.truthy(out:find("UNSUPPORTED_MEDIA_TYPE", 1, true), out)
    local after = calls("express")
    assert.equals(before.total, after.total)
    assert.is_nil(after.delete_all)
    -- the refusals were decisions: logged and counted
    metrics_when(function(v)
      return v('toolgate_decisions_total{code="UNSUPPORTED_CHARSET",mode="enforce",phase="method",stage="decode",'
        .. 'verdict="reject"}') >= 7
    end)
  end)

  it("refuses a body with a Content-Encoding with 415; the server reads exactly application/json, unencoded", function()
    if not need(pending) then return end
    local before = calls("express")
    local file = env.dir .. "/call.json"
    h.write_file(file, call_body(2, "delete_all", "{}"))
    assert.equals(0, (h.run("gzip -n -c " .. q(file) .. " > " .. q(file .. ".gz"))))
    for _, ce in ipairs({ "gzip", "deflate", "br", "GZIP", "identity, gzip" }) do
      refused_415(send("express", "@" .. file .. ".gz", 1, enc({ ["content-encoding"] = ce }))[1], "ENCODED_REQUEST", ce)
    end
    local after = calls("express")
    assert.equals(before.total, after.total)
    assert.is_nil(after.delete_all)
    -- what passes: UTF-8 however it is written, identity; the server is told exactly what was decided
    for i, hd in ipairs({ { ["content-type"] = 'application/json; charset="UTF-8"', ["content-encoding"] = "identity" },
                          { ["content-type"] = "Application/JSON;charset=utf-8" } }) do
      local r = send("express", call_body(2 + i, "echo", '{"message":"utf-8"}'), 1, enc(hd))[1]
      assert.equals("Echo: utf-8", r.json.result.content[1].text)
      assert.same({ type = "application/json", encoding = value_null }, calls("express").last)
    end
  end)

  it("refuses an answer that still arrives encoded: the SDK client sees neither the unlisted tool nor the result", function()
    if not need(pending) then return end
    local before = calls("counter").broken_add or 0
    for _, s in ipairs({ "gzipjson", "gzipsse" }) do
      local r = client(s, '[{"op":"list"},{"op":"call","name":"broken_add","arguments":{"a":1,"b":2}}]')
      for i = 2, 3 do
        assert.is_nil(r[i].ok, s .. ": " .. enc(r[i]))
        assert.equals(-32603, r[i].error.code, s)
        assert.equals("ENCODED_ANSWER", r[i].error.data.decision.code, s)
        assert.matches("Content%-Encoding gzip", r[i].error.message)
      end
    end
    assert.equals(before + 2, calls("counter").broken_add) -- it ran: its answer was refused unread
    local m = metrics_when(function(v)
      return v('toolgate_decisions_total{code="ENCODED_ANSWER",mode="enforce",phase="result",stage="decode",'
        .. 'verdict="reject"}') >= 4
    end)
    assert.equals(4, metric(m, 'toolgate_decisions_total{code="ENCODED_ANSWER",mode="enforce",phase="result",'
      .. 'stage="decode",verdict="reject"}'))
    assert.truthy(h.read_file(env.dir .. "/gateway.log"):find("%[error%][^\n]*toolgate: the server gzipsse answered with "
      .. "Content%-Encoding gzip"))
  end)

  it("refuses an encoded answer at its first bytes, whatever its compressed bytes read as: a decoy event", function()
    if not need(pending) then return end
    -- the gzip header's comment holds an event answering with an empty list; the
    -- client inflates the real list, secret_tool in it; the server keeps the answer open
    local r = client("gzipdecoy", '[{"op":"list"},{"op":"call","name":"echo","arguments":{"message":"x"}}]')
    for i = 2, 3 do
      assert.is_nil(r[i].ok, enc(r[i]))
      assert.equals(-32603, r[i].error.code, enc(r[i]))
      assert.equals("ENCODED_ANSWER", r[i].error.data.decision.code)
    end
  end)

  it("asks every upstream for identity encoding", function()
    if not need(pending) then return end
    local conf = h.read_file(env.dir .. "/prefix/nginx.conf")
    local n = 0
    for loc in conf:gmatch("location = /mcp/[^{]+(%b{})") do
      n = n + 1
      assert.truthy(loc:find("proxy_set_header Accept-Encoding identity;", 1, true), loc)
    end
    assert.equals(12, n)
  end)

  it("refuses a request disguised as a notification: the server never sees it", function()
    if not need(pending) then return end
    local before = calls("counter")
    local r = send("counter", '{"jsonrpc":"2.0","id":7,"method":"notifications/tools/call","params":{"name":'
      .. '"delete_all","arguments":{}}}')[1]
    assert.equals(7, r.json.id)
    assert.equals(-32600, r.json.error.code)
    assert.equals("NOTIFICATION_WITH_ID", r.json.error.data.decision.code)
    local after = calls("counter")
    assert.is_nil(after.methods["notifications/tools/call"])
    assert.equals(before.total, after.total)
  end)

  it("checks the structuredContent of an isError result against the outputSchema", function()
    if not need(pending) then return end
    local before = calls("counter").failing_add or 0
    local r = client("counter", '[{"op":"call","name":"failing_add","arguments":{"a":1,"b":2}}]')
    assert.equals("CONTRACT_OUTPUT", refused(r[2]).code)
    assert.equals(before + 1, calls("counter").failing_add) -- it ran; its result did not reach the client
  end)

  it("sends a filtered tools/list out private with the policy's ttlMs, not the server's day and public", function()
    if not need(pending) then return end
    local raw = send("counter", '{"jsonrpc":"2.0","id":5,"method":"tools/list"}')[1].json.result
    assert.equals("private", raw.cacheScope)
    assert.equals(60000, raw.ttlMs)
    local r = client("counter", '[{"op":"list"}]')
    assert.equals("private", r[2].ok.cacheScope)
    assert.equals(60000, r[2].ok.ttlMs)
  end)

  it("refuses the admin API a wrong token, or the real one less its last character: 401, nothing changed", function()
    if not need(pending) then return end
    local version = json(admin("POST", "/v1/reload")).reload_version
    local _, id = refused(send("counter", call_body(51, "write_note", '{"text":"a wrong token"}'))[1].json)
    local last = env.token:sub(-1)
    for _, auth in ipairs({ "Bearer " .. env.token:sub(1, -2), "Bearer " .. env.token:sub(1, -2)
        .. (last == "9" and "8" or "9"), "Bearer " .. env.token .. "0", "Bearer wrong-token-0123456789abcdef",
        env.token, "Basic " .. env.token, "Bearer " }) do
      for _, path in ipairs({ "/v1/reload", "/v1/approvals/" .. id .. "/grant" }) do
        local out = curl("-i -X POST -H " .. q("Authorization: " .. auth) .. " " .. q("http://" .. env.admin .. path))
        assert.truthy(out:find("^HTTP/1.1 401"), auth .. " " .. path .. ": " .. out)
        assert.truthy(out:find('WWW-Authenticate: Bearer realm="toolgate admin"', 1, true), out)
      end
    end
    assert.equals(version + 1, json(admin("POST", "/v1/reload")).reload_version)
    assert.equals("pending", json(admin("GET", "/v1/approvals/" .. id)).status)
  end)

  it("exits non-zero with nginx's message when the port is taken", function()
    if not need(pending) then return end
    local code, _, err = h.run(table.concat({ h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen,
      "--upstream", "counter=http://127.0.0.1:" .. env.counter .. "/mcp", "--registry",
      q("counter=" .. env.dir .. "/counter.json"), "--prefix", q(env.dir .. "/second") }, " "))
    assert.equals(1, code)
    assert.matches("Address already in use", err, 1, true)
    assert.matches("toolgate gateway: nginx stopped with status 1", err, 1, true)
  end)

  it("stops nginx when the toolgate process that runs it gets SIGTERM", function()
    if not need(pending) then return end
    local master = assert(tonumber(h.read_file(env.dir .. "/prefix/nginx.pid")))
    assert.is_true(alive(master))
    stop(pids.gateway)
    pids.gateway = nil
    wait_for("nginx to stop", function() return not alive(master) end)
    assert.not_equals(0, (h.run("curl -s --max-time 1 " .. q("http://" .. env.listen .. "/healthz"))))
  end)
end)
