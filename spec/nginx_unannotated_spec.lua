-- A server without annotations through the nginx gateway, end to end:
-- nginx/test/bare-monitor.mjs (system-monitor's tools, none annotated) over
-- Streamable HTTP, its registry recorded, `toolgate gateway` run once under the
-- shipped `gateway` policy copied verbatim (the read is deferred, saying it
-- comes from MCP's defaults) and once with the one registry.tools line
-- docs/policies.md gives ("Tools without annotations"): the read passes.  Both
-- through the SDK 1.32.2 client and an SDK 2.4.0 client in auto mode.
-- Everything listens on 127.0.0.1 on ports the kernel gave and is stopped by
-- its PID.  Runs under Lua 5.4 only, like spec/nginx_spec.lua.
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local spawn, alive, stop, wait_for = fx.spawn, fx.alive, fx.stop, fx.wait_for

local root = h.root
local q = h.shell_quote
local value = require "toolgate.value"
local function enc(v) return (assert(value.encode(v))) end

local shipped = h.read_file(root .. "/policies/gateway.lua")
-- the line of docs/policies.md's example, for this spec's server name
local one_line = '  registry = { on_shadowing = "allow",\n'
  .. '    tools = { ["monitor/get-system-info"] = { readOnlyHint = true } } },'

describe("toolgate gateway (nginx) in front of a server without annotations", function()
  local env, pids = {}, {}
  local ready, why

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    env.dir = fx.tempdir("toolgate-unannotated-spec")
    local ports = fx.ports(3)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    env.log = env.dir .. "/monitor.log"
    pids.monitor = spawn("PORT=" .. ports[3] .. " exec node bare-monitor.mjs", env.log)
    env.monitor = fx.upstream_port(env.log)
    fx.record("monitor", env.monitor, env.dir .. "/monitor.json")
    h.write_file(env.dir .. "/monitor.ctx", '{"scopes":["monitor:read","monitor:write"]}')
    h.write_file(env.dir .. "/token", "spec-token-" .. tostring(math.random(1e9)) .. "-0123456789\n")
    ready = true
  end)

  teardown(function()
    stop(pids.gateway)
    stop(pids.monitor)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  local function need(pending)
    if ready then return true end
    pending(why or "the upstream did not start")
    return false
  end

  -- Runs the gateway under the policy text (in its own prefix) until the
  -- test ends; returns the path of its log (its stderr included).
  local function gateway(name, policy)
    local dir = env.dir
    h.write_file(dir .. "/" .. name .. ".lua", policy)
    local log = dir .. "/" .. name .. ".log"
    pids.gateway = spawn(table.concat({
      "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen, "--admin", env.admin,
      "--admin-token-file", q(dir .. "/token"), "--workers 1", "--prefix", q(dir .. "/" .. name),
      "--policy", q(dir .. "/" .. name .. ".lua"),
      "--upstream", "monitor=http://127.0.0.1:" .. env.monitor .. "/mcp",
      "--registry", q("monitor=" .. dir .. "/monitor.json"), "--context", q("monitor=" .. dir .. "/monitor.ctx"),
    }, " "), log)
    finally(function()
      stop(pids.gateway)
      pids.gateway = nil
      -- nginx goes with the toolgate process that ran it
      local pid = tonumber(h.read_file(dir .. "/" .. name .. "/nginx.pid") or "")
      if pid then wait_for("nginx to stop", function() return not alive(pid) end) end
    end)
    wait_for("the gateway's /healthz", function()
      local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. env.listen .. "/healthz"))
      return c == 0 and health:find('"ok"')
    end, log)
    return log
  end

  local url = function() return "http://" .. env.listen .. "/mcp/monitor" end
  local call = '{"op":"call","name":"get-system-info","arguments":{}}'
  -- the SDK 1.32.2 client (client.mjs) and an SDK 2.4.0 client in auto mode
  -- (client2026.mjs): the answer each hands to the host.  Not pin mode: the
  -- server speaks 2025-06-18 only, as system-monitor does, and a client pinned
  -- to 2026-07-28 refuses any server that does not offer it
  local function answers()
    local v1 = fx.client(url(), "[" .. call .. "]")[2]
    local code, out, err = h.run("cd " .. q(fx.testdir) .. " && timeout 60 node client2026.mjs auto "
      .. q("[" .. call .. "]") .. " " .. q(url()))
    assert(code == 0, "client2026.mjs auto failed (" .. tostring(code) .. "):\n" .. out .. err)
    local auto = fx.lines(out)
    assert.equals("2025-06-18", auto[1].ok and auto[1].ok.version, out)
    return { ["SDK 1.32.2"] = v1, ["SDK 2.4.0 auto"] = auto[2] }
  end
  local function ran() return select(2, (h.read_file(env.log) or ""):gsub("ran get%-system%-info", "")) end

  it("under the shipped gateway policy says at load that 2 of 2 tools carry no annotations and defers "
    .. "get-system-info as a tool result saying MCP's defaults read it as destructive; it does not run", function()
    if not need(pending) then return end
    local log = gateway("shipped", shipped)
    assert.truthy((h.read_file(log) or ""):find("server monitor: 2 of 2 tools carry no annotations (MCP's defaults "
      .. 'read them as not read-only, destructive, open world); the policy gives them risk "high" and scope '
      .. "monitor:write", 1, true), h.read_file(log))
    local before = ran()
    for client, r in pairs(answers()) do
      local res = assert(r.ok, client .. ": a tool result expected, got " .. enc(r))
      assert.is_true(res.isError, client .. ": " .. enc(r))
      assert.equals("defer", res._meta["toolgate/decision"].verdict, client)
      assert.truthy(res.content[1].text:find("toolgate asked a person to approve this call to get-system-info (H4: no "
        .. "annotations: MCP's defaults read it as destructive, so a person approves each call); it has not run.",
        1, true), client .. ": " .. res.content[1].text)
    end
    assert.equals(before, ran())
  end)

  it("passes get-system-info to the server and its result to the client after the one line docs/policies.md "
    .. "gives", function()
    if not need(pending) then return end
    local policy, n = shipped:gsub('  registry = { on_shadowing = "allow" },', function() return one_line end)
    assert.equals(1, n)
    local log = gateway("one-line", policy)
    assert.truthy((h.read_file(log) or ""):find("server monitor: 1 of 2 tools carry no annotations", 1, true),
      h.read_file(log))
    local before = ran()
    for client, r in pairs(answers()) do
      assert.same({ { type = "text", text = "ran get-system-info {}" } }, r.ok and r.ok.content, client .. ": " .. enc(r))
      assert.is_not_true(r.ok.isError, client)
    end
    assert.equals(before + 2, ran())
  end)
end)
