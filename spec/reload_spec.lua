-- The gateway's engine across workers and reloads, end to end (Debian's
-- nginx, `toolgate gateway`, a JSON-RPC upstream and its load in
-- nginx/test/reload-load.mjs): the master builds the engine once, before
-- the workers fork, and they use it (its pages shared); a reload of the
-- admin API swaps every worker to the new registry between requests, so a
-- request is decided, and its answer checked, on one registry, and no
-- request is lost; a reload that fails keeps the old one.  Runs once, under
-- Lua 5.4 (nginx runs LuaJIT).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, stop, wait_for, metric = fx.json, fx.spawn, fx.stop, fx.wait_for, fx.metric
local q = h.shell_quote
local function value_encode(v) return (assert(require("toolgate.value").encode(v))) end

-- A registry of server s: echo under name, and ping.
local function registry(name)
  local function tool(n)
    return '{"name":"' .. n .. '","description":"Says the message again.","inputSchema":{"type":"object",'
      .. '"properties":{"message":{"type":"string"}},"required":["message"]},'
      .. '"annotations":{"readOnlyHint":true,"openWorldHint":false}}'
  end
  return '{"server":"s","tools":[' .. tool(name) .. "," .. tool("ping") .. "]}"
end

describe("the gateway's engine across workers and reloads", function()
  local env, pids, why = {}, {}, nil

  local function admin(method, path)
    return fx.curl("-X " .. method .. " -H " .. q("Authorization: Bearer " .. env.token) .. " "
      .. q("http://" .. env.admin .. path))
  end

  local function metrics() return fx.curl(q("http://" .. env.listen .. "/metrics")) end

  -- CONNECTIONS x CALLS calls of tool, in the background: its pid
  local function load(tool, connections, calls, log)
    return spawn("exec node reload-load.mjs load " .. q("http://" .. env.listen .. "/mcp/s") .. " " .. tool .. " "
      .. connections .. " " .. calls, env.dir .. "/" .. log)
  end

  local function loaded(pid, log)
    wait_for("the load to finish", function() return not fx.alive(pid) end, nil, 60)
    return json(h.read_file(env.dir .. "/" .. log))
  end

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    env.dir = fx.tempdir("toolgate-reload-spec")
    local ports = fx.ports(3)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    pids.upstream = spawn("PORT=" .. ports[3] .. " exec node reload-load.mjs serve", env.dir .. "/upstream.log")
    local up = fx.upstream_port(env.dir .. "/upstream.log")
    env.registry = env.dir .. "/s.json"
    h.write_file(env.registry, registry("echo"))
    h.write_file(env.dir .. "/s.ctx", '{"scopes":["s:read"]}')
    env.token = "reload-spec-token-" .. tostring(math.random(1e9))
    h.write_file(env.dir .. "/token", env.token .. "\n")
    pids.gateway = spawn(table.concat({ "exec", h.lua, q(h.root .. "/bin/toolgate"), "gateway",
      "--listen", env.listen, "--admin", env.admin, "--admin-token-file", q(env.dir .. "/token"), "--workers 2",
      "--prefix", q(env.dir .. "/prefix"), "--upstream", "s=http://127.0.0.1:" .. up .. "/mcp",
      "--registry", q("s=" .. env.registry), "--context", q("s=" .. env.dir .. "/s.ctx") }, " "),
      env.dir .. "/gateway.log")
    wait_for("the gateway", function()
      return h.run("curl -s -f -o /dev/null " .. q("http://" .. env.listen .. "/healthz")) == 0
    end, env.dir .. "/gateway.log")
  end)

  teardown(function()
    stop(pids.gateway)
    stop(pids.upstream)
  end)

  local function need()
    if why then
      pending(why)
      return false
    end
    return true
  end

  it("builds the engine once, in the master: the workers use it and build none at start", function()
    if not need() then return end
    local text = metrics()
    assert.equals(1, metric(text, 'toolgate_engine_builds_total{process="master"}'), text)
    assert.is_nil(metric(text, 'toolgate_engine_builds_total{process="worker"}'), text)
    -- both workers decide (with the master's engine)
    local r = loaded(load("echo", 4, 10, "start.log"), "start.log")
    assert.same({ echo = 40 }, r.answers)
  end)

  it("a reload under load loses no request, and decides each one and checks its answer on one registry", function()
    if not need() then return end
    local log = env.dir .. "/prefix/decisions.jsonl"
    wait_for("the earlier records", function() return h.read_file(log) end)
    fx.sleep(0.3) -- (the workers write their records every 0.1 s)
    local start = #h.read_file(log)
    local pid = load("echo", 8, 80, "load.log")
    -- echo renamed and back, again and again, while the calls run
    local reloads, name = 0, "echo"
    while fx.alive(pid) and reloads < 40 do
      name = name == "echo" and "echo_v2" or "echo"
      h.write_file(env.registry, registry(name))
      assert.equals("success", json(admin("POST", "/v1/reload")).result)
      reloads = reloads + 1
      fx.sleep(0.1)
    end
    local r = loaded(pid, "load.log")
    h.write_file(env.registry, registry("echo"))
    assert.equals("success", json(admin("POST", "/v1/reload")).result)
    assert.is_true(reloads >= 4, "the load ended before the reloads")
    assert.equals(0, r.failed, h.read_file(env.dir .. "/load.log"))
    -- each answer is one registry's: echoed (echo known) or the call refused (unknown)
    local classes = {}
    for k in pairs(r.answers) do classes[#classes + 1] = k end
    table.sort(classes)
    assert.same({ "echo", "refused rung H1" }, classes, h.read_file(env.dir .. "/load.log"))
    assert.equals(640, r.answers.echo + r.answers["refused rung H1"])
    -- a call's record and its result's name the same registry
    local calls, results, checked = {}, {}, 0
    wait_for("the results' records", function()
      calls, results = {}, {}
      for _, line in ipairs(h.lines_of(h.read_file(log):sub(start + 1))) do
        local rec = json(line)
        local d = rec.kind == "decision" and rec.decision
        if d and d.verdict == "accept" and rec.phase == "call" then calls[d.args_digest] = d.registry_hash end
        if d and rec.phase == "result" then results[#results + 1] = d end
      end
      return #results >= r.answers.echo
    end)
    for _, d in ipairs(results) do
      assert.equals(calls[d.args_digest], d.registry_hash, "a result on another registry: " .. value_encode(d))
      checked = checked + 1
    end
    assert.is_true(checked >= r.answers.echo)
  end)

  it("a reload answers once every worker decides with the new registry, each having built it once", function()
    if not need() then return end
    local builds = 'toolgate_engine_builds_total{process="worker"}'
    local before = metric(metrics(), builds) or 0
    h.write_file(env.registry, registry("echo_v3"))
    local r = json(admin("POST", "/v1/reload"))
    h.write_file(env.registry, registry("echo"))
    assert.equals("success", r.result)
    -- new connections, spread over both workers: each answers with the new registry at once
    for _ = 1, 8 do assert.equals(r.registry_hash, json(fx.curl(q("http://" .. env.listen .. "/healthz"))).registry_hash) end
    assert.equals(before + 2, metric(metrics(), builds))
    assert.equals("success", json(admin("POST", "/v1/reload")).result)
  end)

  it("a reload that fails keeps the old registry in every worker", function()
    if not need() then return end
    local before = json(fx.curl(q("http://" .. env.listen .. "/healthz"))).registry_hash
    h.write_file(env.registry, '{"server":"s","tools":[')
    local bad = json(admin("POST", "/v1/reload"))
    h.write_file(env.registry, registry("echo"))
    assert.equals("failure", bad.result)
    assert.equals(before, bad.registry_hash)
    local r = loaded(load("echo", 4, 10, "after.log"), "after.log")
    assert.same({ echo = 40 }, r.answers)
    for _ = 1, 4 do assert.equals(before, json(fx.curl(q("http://" .. env.listen .. "/healthz"))).registry_hash) end
    wait_for("the failure counted", function()
      return (metric(metrics(), 'toolgate_reloads_total{result="failure"}') or 0) >= 1
    end)
  end)
end)
