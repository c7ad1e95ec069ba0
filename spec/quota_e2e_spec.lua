-- The quota stage end to end (toolgate.quota, docs/quotas.md): `toolgate
-- gateway` (nginx, its shared dict counting) in front of
-- nginx/test/upstream.mjs, driven by the MCP TypeScript SDK's client with
-- a principal header.  A call past its principal's limit gets the QUOTA
-- refusal as a tool result whose text says the limit, the window and when
-- to call again; calls the rung refused or the gate deferred spent
-- nothing; another principal has a count of its own.  And `toolgate
-- mcp-proxy` in front of spec/stdio/pyserver.py, counting in its SQLite
-- state: a second proxy finds the first's calls counted.  Runs under Lua
-- 5.4 only (nginx runs LuaJIT itself; the logic under both is
-- spec/quota_spec.lua's).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, stop = fx.json, fx.spawn, fx.stop
local q = h.shell_quote
local root = h.root

describe("quotas through the nginx gateway", function()
  local env, pids, ready, why = {}, {}, false, nil

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    local dir = fx.tempdir("toolgate-quota-spec")
    env.dir = dir
    local ports = fx.ports(2)
    env.listen = "127.0.0.1:" .. ports[1]
    pids.upstream = spawn("PORT=" .. ports[2] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/upstream.log")
    env.upstream = fx.upstream_port(dir .. "/upstream.log")
    fx.record("counter", env.upstream, dir .. "/counter.json")
    -- the same server as a second route, "notes"
    h.write_file(dir .. "/notes.json", (h.read_file(dir .. "/counter.json"):gsub('"server":"counter"', '"server":"notes"')))
    -- the shipped gateway policy (write_note defers: a person approves writes), with quotas
    local shipped = h.read_file(root .. "/policies/gateway.lua")
    local policy, n = shipped:gsub('stages = { "rung", "gate", "verifier" }', 'stages = { "rung", "gate", "verifier", '
      .. '"quota" },\n  quota = { rules = {\n'
      .. '    { server = "counter", tool = "add", where = "/a > 1000", limit = 3, window = 3600, per = "principal" },\n'
      .. '    { server = "notes", limit = 2, window = 3600 } } }', 1)
    assert(n == 1, "policies/gateway.lua has no stages line")
    policy, n = policy:gsub("(mcp = {[^}\n]*) }", "%1, client_approval = false }", 1)
    assert(n == 1, "policies/gateway.lua has no mcp = { ... } line")
    h.write_file(dir .. "/policy.lua", policy)
    local cmd = { "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen, "--workers 2",
      "--prefix", q(dir .. "/prefix"), "--policy", q(dir .. "/policy.lua"), "--principal-header X-Principal" }
    for _, s in ipairs({ "counter", "notes" }) do
      h.write_file(dir .. "/" .. s .. ".ctx", '{"scopes":["' .. s .. ':read","' .. s .. ':write"]}')
      cmd[#cmd + 1] = "--upstream " .. s .. "=http://127.0.0.1:" .. env.upstream .. "/mcp --registry "
        .. q(s .. "=" .. dir .. "/" .. s .. ".json") .. " --context " .. q(s .. "=" .. dir .. "/" .. s .. ".ctx")
    end
    pids.gateway = fx.start_gateway(table.concat(cmd, " "), env.listen, dir .. "/gateway.log")
    ready = true
  end)

  teardown(function()
    if env.dir then fx.stop_gateway(pids.gateway, env.dir .. "/prefix") end
    stop(pids.upstream)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  local function calls() return json(fx.curl(q("http://127.0.0.1:" .. env.upstream .. "/calls"))) end

  -- the SDK client as principal who, on route, making the calls given
  local function as(who, route, steps)
    local code, out, err = h.run("cd " .. q(fx.testdir) .. " && HEADERS=" .. q('{"X-Principal":"' .. who .. '"}')
      .. " node client.mjs " .. q("http://" .. env.listen .. "/mcp/" .. route) .. " "
      .. q("[" .. table.concat(steps, ",") .. "]"))
    assert(code == 0, "client.mjs failed: " .. err .. out)
    return fx.lines(out)
  end

  local function add(a, b) return '{"op":"call","name":"add","arguments":{"a":' .. a .. ',"b":' .. b .. '}}' end

  it("refuses a principal's call past the limit with QUOTA as a tool result that says the limit, the window and "
    .. "when to call again; refused calls spent nothing, another principal counts apart", function()
    if not ready then return pending(why or "the gateway did not start") end
    local before = calls()
    -- two calls the rung refuses (b is no number), then three that fit, then one past the limit
    local r = as("alice", "counter", { add(5000, '"x"'), add(5000, '"y"'), add(5000, 1), add(5001, 1), add(5002, 1),
      add(5003, 1), add(5, 1) })
    for i = 2, 3 do
      assert.is_true(r[i].ok and r[i].ok.isError or r[i].error ~= nil, "call " .. (i - 1) .. " refused")
    end
    for i = 4, 6 do assert.same({ sum = 5000 + (i - 4) + 1 }, r[i].ok.structuredContent, "call " .. (i - 1)) end
    local refused = r[7].ok
    assert.is_true(refused.isError)
    local d = refused._meta["toolgate/decision"]
    assert.same({ "reject", "QUOTA", "quota", 3, 3600 }, { d.verdict, d.code, d.stage, d.limit, d.window })
    assert.truthy(d.retry_after >= 1 and d.retry_after <= 3600, tostring(d.retry_after))
    local text = refused.content[1].text
    for _, want in ipairs({ "QUOTA", "at most 3 calls per 3600 s", "per principal",
      string.format("the next call fits in %d s", d.retry_after), "calling sooner gets the same answer" }) do
      assert.truthy(text:find(want, 1, true), want .. " in: " .. text)
    end
    assert.same({ sum = 6 }, r[8].ok.structuredContent, "a call the rule's where leaves out")
    -- bob has his own count; alice stays refused
    local b = as("bob", "counter", { add(7000, 1) })
    assert.same({ sum = 7001 }, b[2].ok.structuredContent)
    assert.equals("QUOTA", as("alice", "counter", { add(9000, 1) })[2].ok._meta["toolgate/decision"].code)
    local after = calls()
    assert.equals(5, (after.add or 0) - (before.add or 0), "three of alice's, her small one, bob's")
  end)

  it("counts nothing of a call the gate deferred: after three deferred write_note calls two calls still fit",
    function()
      if not ready then return pending(why or "the gateway did not start") end
      local note = '{"op":"call","name":"write_note","arguments":{"text":"n"}}'
      local echo = '{"op":"call","name":"echo","arguments":{"message":"m"}}'
      local r = as("carol", "notes", { note, note, note, echo, echo, echo })
      for i = 2, 4 do
        local d = r[i].ok._meta["toolgate/decision"]
        assert.equals("defer", d.verdict, "write_note " .. (i - 1) .. " is deferred, not counted")
      end
      assert.same({ { type = "text", text = "Echo: m" } }, r[5].ok.content)
      assert.same({ { type = "text", text = "Echo: m" } }, r[6].ok.content)
      assert.equals("QUOTA", r[7].ok._meta["toolgate/decision"].code)
    end)
end)

describe("quotas through the stdio proxy", function()
  it("counts in the proxy's SQLite state, so a second proxy on it finds the first's calls counted", function()
    if not h.have("python3") then return pending("needs python3") end
    local dir = fx.tempdir("toolgate-quota-stdio")
    local state, reg, rec = dir .. "/state", dir .. "/notes.json", dir .. "/calls.jsonl"
    local c, o, e = h.toolgate("registry record --server notes --output " .. q(reg) .. " -- python3 "
      .. q(root .. "/spec/stdio/pyserver.py"))
    assert(c == 0, o .. e)
    local policy, n = h.read_file(root .. "/policies/gateway.lua"):gsub('stages = { "rung", "gate", "verifier" }',
      'stages = { "rung", "gate", "verifier", "quota" },\n'
      .. '  quota = { rules = { { server = "notes", tool = "read_note", limit = 2, window = 3600 } } }', 1)
    assert(n == 1, "policies/gateway.lua has no stages line")
    h.write_file(dir .. "/policy.lua", policy)
    h.write_file(dir .. "/notes.ctx", '{"scopes":["notes:read","notes:write"]}')
    local function proxy(...)
      local lines = { '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        .. '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' }
      for i, text in ipairs({ ... }) do
        lines[#lines + 1] = '{"jsonrpc":"2.0","id":' .. (i + 1) .. ',"method":"tools/call","params":{"name":'
          .. '"read_note","arguments":{"text":"' .. text .. '"}}}'
      end
      local code, out, err = h.run("timeout 60 " .. h.lua .. " " .. q(root .. "/bin/toolgate") .. " mcp-proxy --policy "
        .. q(dir .. "/policy.lua") .. " --state " .. q(state) .. " --context " .. q(dir .. "/notes.ctx")
        .. " --registry " .. q("notes=" .. reg) .. " -- env PYSERVER_RECORD=" .. q(rec) .. " python3 "
        .. q(root .. "/spec/stdio/pyserver.py"), table.concat(lines, "\n") .. "\n")
      assert.equals(0, code, err)
      local answers = {}
      for _, l in ipairs(h.lines_of(out)) do
        local a = json(l)
        answers[a.id] = a
      end
      return answers
    end
    local first = proxy("a")
    assert.same({ content = { { type = "text", text = "a" } } }, first[2].result)
    local second = proxy("b", "c")
    assert.same({ content = { { type = "text", text = "b" } } }, second[2].result)
    local refused = second[3].result
    assert.is_true(refused.isError)
    local d = refused._meta["toolgate/decision"]
    assert.same({ "QUOTA", 2, 3600 }, { d.code, d.limit, d.window })
    assert.truthy(refused.content[1].text:find("at most 2 calls per 3600 s", 1, true), refused.content[1].text)
    local ran = {}
    for _, x in ipairs(h.lines_of(h.read_file(rec) or "")) do ran[#ran + 1] = json(x).arguments.text end
    assert.same({ "a", "b" }, ran)
    os.execute("rm -rf " .. q(dir))
  end)
end)
