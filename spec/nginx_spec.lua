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

local function admin(method, path)
  return curl("-X " .. method .. " -H " .. q("Authorization: Bearer " .. env.token) .. " " ..
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

describe("toolgate gateway (nginx)", function()
  local ready, why

  setup(function()
    if not h.have("node") or h.run("test -x /usr/sbin/nginx") ~= 0 then
      why = "needs node and Debian's nginx (make test installs them)"
      return
    end
    if h.run("test -f " .. q(testdir .. "/node_modules/@modelcontextprotocol/sdk/package.json")) ~= 0 then
      why = os.getenv("TOOLGATE_NPM_UNAVAILABLE")
      if why then return end
      error("nginx/test/node_modules is missing (make test installs it: npm ci --prefix nginx/test)")
    end
    local dir = fx.tempdir("toolgate-gateway-spec")
    env.dir = dir
    local ports = fx.ports(5)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]

    pids.everything = spawn("PORT=" .. ports[3] .. " exec node " ..
      "node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp", dir .. "/everything.log")
    pids.counter = spawn("PORT=" .. ports[4] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
    pids.rug = spawn("PORT=" .. ports[5] .. " RUG_PULL=1 exec node upstream.mjs", dir .. "/rug.log")
    env.everything = upstream_port(dir .. "/everything.log")
    env.counter = upstream_port(dir .. "/counter.log")
    env.rug = upstream_port(dir .. "/rug.log")
    -- the registries: the trusted snapshots, recorded before the gateway
    -- starts (the counter's without the tool "hidden")
    record("counter", env.counter, dir .. "/counter.json", "hidden")
    record("rug", env.rug, dir .. "/rug.json")
    local hostile = h.read_file(dir .. "/counter.json"):gsub('"server":"counter"', '"server":"hostile"')
    h.write_file(dir .. "/hostile.json", hostile)

    env.token = "spec-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(dir .. "/token", env.token .. "\n")
    env.policy = dir .. "/policy.lua"
    h.write_file(env.policy, h.read_file(root .. "/policies/gateway.lua"))
    for _, s in ipairs({ "everything", "counter", "rug" }) do
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
    }, " ")
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

  it("refuses H1, H2, H3 and H4 with the documented codes, and the server never sees them", function()
    if not need(pending) then return end
    local before = calls("counter").total
    local r = client("counter", table.concat({
      '[{"op":"call","name":"hidden"}',
      '{"op":"call","name":"echo","arguments":{"message":"x","extra":1}}',
      '{"op":"call","name":"echo","arguments":{"message":7}}',
      '{"op":"call","name":"delete_all"}]' }, ","))
    local want = { { -32602, "H1" }, { -32602, "H2" }, { -32602, "H3" }, { -32001, "H4" } }
    for i, w in ipairs(want) do
      local e = r[i + 1].error
      assert.equals(w[1], e.code)
      assert.equals(w[2], e.data.decision.code)
      assert.equals("counter", e.data.decision.server)
    end
    assert.equals("/extra", r[3].error.data.decision.path)
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
    assert.equals(-32003, r.json.error.code)
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
    assert.equals(-32003, r.json.error.code)
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
    assert.equals("H3", r.json.error.data.decision.code) -- maxLength 100: the whole body was read
    assert.equals(before, calls("counter").total)
    assert.matches("a client request body is buffered to a temporary file", h.read_file(env.dir .. "/gateway.log"),
      1, true)
  end)

  it("replaces a result that breaks the tool's outputSchema", function()
    if not need(pending) then return end
    local before = calls("counter").broken_add or 0
    local r = send("counter", call_body(9, "broken_add", '{"a":1,"b":2}'))[1]
    assert.equals(-32001, r.json.error.code)
    assert.equals("CONTRACT_OUTPUT", r.json.error.data.decision.code)
    assert.equals(before + 1, calls("counter").broken_add) -- it ran; its result did not reach the client
  end)

  it("defers a write, lets the identical call through once after approval, not other arguments", function()
    if not need(pending) then return end
    local body = call_body(11, "write_note", '{"text":"approve me"}')
    local before = calls("counter").total
    local d = send("counter", body)[1].json.error
    assert.equals(-32002, d.code)
    local id = d.data.approval_id
    assert.matches("^%x+$", id)
    assert.equals("defer", d.data.decision.verdict)
    assert.same({ "server", "tool", "args_digest", "policy_version", "registry_hash", "epoch" }, (function()
      local keys = {}
      for _, k in ipairs({ "server", "tool", "args_digest", "policy_version", "registry_hash", "epoch" }) do
        if d.data.decision.binding[k] ~= nil then keys[#keys + 1] = k end
      end
      return keys
    end)())
    local listed = json(admin("GET", "/v1/approvals"))
    local found
    for _, a in ipairs(listed.approvals) do if a.id == id then found = a end end
    assert.equals("pending", found.status)
    assert.equals("write_note", found.tool)
    -- the same call again, before approval: the same request, still deferred
    assert.equals(id, send("counter", body)[1].json.error.data.approval_id)
    assert.equals("granted", json(admin("POST", "/v1/approvals/" .. id .. "/grant")).status)
    -- one use: of four identical calls at once, across both workers, one passes
    local r = send("counter", body, 4)
    local passed, deferred = 0, 0
    for _, x in ipairs(r) do
      if x.json.result then passed = passed + 1 end
      if x.json.error and x.json.error.code == -32002 then deferred = deferred + 1 end
    end
    assert.equals(1, passed)
    assert.equals(3, deferred)
    assert.equals(before + 1, calls("counter").total)
    -- other arguments: another approval, still deferred
    local other = send("counter", call_body(12, "write_note", '{"text":"something else"}'))[1].json.error
    assert.equals(-32002, other.code)
    assert.not_equals(id, other.data.approval_id)
    -- denied: refused from then on
    assert.equals("denied", json(admin("POST", "/v1/approvals/" .. other.data.approval_id .. "/deny")).status)
    local denied = send("counter", call_body(13, "write_note", '{"text":"something else"}'))[1].json.error
    assert.equals("APPROVAL_DENIED", denied.data.decision.code)
    assert.equals(before + 1, calls("counter").total)
    -- a second decision on one approval is refused
    assert.matches("ALREADY_DECIDED", admin("POST", "/v1/approvals/" .. id .. "/deny"))
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
    assert.equals("PIN_CHANGED", r[3].error.data.decision.code)
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

  it("answers the decision API and health; the admin API needs its token", function()
    if not need(pending) then return end
    local d = json(curl("-X POST --data-binary " ..
      q('{"server":"counter","name":"echo","arguments":{"message":"x","bad":1}}') .. " " ..
      q("http://" .. env.listen .. "/v1/check")))
    assert.equals("H2", d.code)
    local ok = json(curl("-X POST --data-binary " .. q('{"server":"counter","name":"hidden","arguments":{}}') .. " " ..
      q("http://" .. env.listen .. "/v1/check")))
    assert.equals("H1", ok.code)
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
    assert.is_true(metric(m, 'toolgate_decisions_total{code="H2",phase="call",stage="rung",verdict="reject"}') >= 1)
    assert.is_true(metric(m, 'toolgate_tool_decisions_total{server="counter",tool="write_note",verdict="defer"}') >= 1)
    assert.is_true(metric(m, 'toolgate_approval_events_total{event="granted"}') >= 1)
    assert.is_true(metric(m, 'toolgate_approval_events_total{event="used"}') >= 1)
    assert.is_true(metric(m, 'toolgate_decision_seconds_count{phase="request"}') >= 1)
    assert.is_true(metric(m, 'toolgate_decision_seconds_bucket{phase="request",le="+Inf"}') >= 1)
    assert.matches('toolgate_info{policy_version="gateway@1', m)
  end)

  it("logs one JSON line per decision, from both workers", function()
    if not need(pending) then return end
    local workers, n = {}, 0
    for _, l in ipairs(h.lines_of(h.read_file(env.dir .. "/prefix/decisions.jsonl") or "")) do
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
