-- The flow matrix of issue 33: MCP 2026-07-28 and 2025 clients through both
-- front ends.  Each front end (the nginx gateway, the stdio proxy
-- `toolgate mcp-proxy`) x each client mode (@modelcontextprotocol/client
-- 2.4.0 legacy, auto, pin; @modelcontextprotocol/sdk 1.32.2 "v1") runs the
-- same flows against real servers: nginx/test/upstream2026.mjs (the SDK 2.4.0
-- server, dual-era) and nginx/test/tasks2026.mjs (a hand-written tasks
-- server: the SDK has none), driven by nginx/test/client2026.mjs.  What
-- reached a server is read from the server (GET /calls, or $CALLS_FILE), so
-- a refusal is proved from its side.  One gateway, one upstream per kind, all
-- in this process (and, for a pinned client under each shipped policy, one
-- short-lived gateway per policy); processes stopped by their PID.  With
-- TOOLGATE_FLOW_TABLE=FILE the table of outcomes (front end x mode x flow:
-- pass, refused as expected, n/a and why, FAIL) is written to FILE.  Runs
-- once, under Lua 5.4 (nginx itself runs LuaJIT).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, stop, wait_for, curl = fx.json, fx.spawn, fx.stop, fx.wait_for, fx.curl
local value = require "toolgate.value"

local root = h.root
local testdir = fx.testdir
local q = h.shell_quote

local FRONTS = { "nginx", "stdio" }
local MODES = { "legacy", "auto", "pin", "v1" }
local MODERN = { auto = true, pin = true }

local env, pids = {}, {}
local outcomes, order = {}, {}

-- the JSON-RPC _meta of a 2026 request (tasks: declaring the tasks extension)
local function meta(tasks)
  return '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":'
    .. (tasks and '{"extensions":{"io.modelcontextprotocol/tasks":{}}}' or "{}") .. "}"
end

local function call(name, args) return '{"op":"call","name":"' .. name .. '","arguments":' .. args .. "}" end
local function steps(list) return "[" .. table.concat(list, ",") .. "]" end

-- the stdio proxy in front of a server command, under the spec's policy (or another) and state
local function proxy(server, command, policy)
  return table.concat({ h.lua, q(root .. "/bin/toolgate"), "mcp-proxy", "--policy", policy or q(env.policy),
    "--state", q(env.dir .. "/stdio-state"), "--context", q(env.dir .. "/" .. server .. ".ctx"),
    "--registry", q(server .. "=" .. env.dir .. "/" .. server .. ".json"), "--", command }, " ")
end

local STDIO_SERVERS = {
  up = "node upstream2026.mjs stdio",
  tasks = "node tasks2026.mjs stdio",
  tasksbad = "env BREAK_TASK=1 node tasks2026.mjs stdio",
  rug = "env RUG=1 node upstream2026.mjs stdio",
  statsbad = "env BREAK_STATS=1 node upstream2026.mjs stdio",
}
local SERVERS = { "up", "tasks", "tasksbad", "rug", "statsbad" }
local HTTP_SERVERS = { up = "", tasks = "", tasksbad = "BREAK_TASK=1", rug = "RUG=1", statsbad = "BREAK_STATS=1" }

-- client2026.mjs MODE STEPS against server through front: the lines it printed
local function client(front, mode, server, list, vars, policy, listen)
  local target = front == "nginx" and q("http://" .. (listen or env.listen) .. "/mcp/" .. server)
    or ("-- " .. proxy(server, STDIO_SERVERS[server], policy))
  local code, out, err = h.run("cd " .. q(testdir) .. " && " .. (vars or "") .. " CALLS_FILE=" .. q(env.dir .. "/stdio-calls")
    .. " timeout 120 node client2026.mjs " .. mode .. " " .. q(steps(list)) .. " " .. target)
  assert(code == 0 or code == 1, "client2026.mjs " .. mode .. " failed (" .. tostring(code) .. "):\n" .. out .. err)
  local lines = fx.lines(out)
  lines.stderr = err
  return lines
end

-- the tool calls that ran at the upstream of front (its own log; stdio: every server's)
local function ran(front, server)
  if front == "nginx" then return json(curl(q("http://127.0.0.1:" .. env[server or "up"] .. "/calls"))) end
  return fx.lines(h.read_file(env.dir .. "/stdio-calls") or "")
end

local function count(front, name, pred, server)
  local n = 0
  for _, c in ipairs(ran(front, server)) do
    if c.name == name and (not pred or pred(c.arguments or {}, c)) then n = n + 1 end
  end
  return n
end

-- What a refusal looks like to the client: a JSON-RPC error, or (policy
-- mcp.refusal = "result") a tool result with isError and toolgate's decision.
local function refusal(line)
  if line.error then
    local d = line.error.data
    return { code = line.error.code, message = line.error.message,
      approval_id = type(d) == "table" and d.approval_id or nil }
  end
  local r = line.ok
  local m = type(r) == "table" and type(r._meta) == "table" and r._meta or {}
  if r and r.isError == true and m["toolgate/decision"] ~= nil then
    return { result = r, text = r.content and r.content[1] and r.content[1].text, approval_id = m["toolgate/approval_id"] }
  end
  return nil
end

local function refused(line, what)
  local r = refusal(line)
  assert(r, what .. ": not refused: " .. value.encode(line))
  return r
end

-- A refusal as a tool result (the policy's mcp.refusal = "result": what the
-- host hands the model) names the fault: fragments plain-matched in its text.
local function says(r, ...)
  if not r.result then return end
  local said = r.text or ""
  for _, want in ipairs({ ... }) do
    assert(said:find(want, 1, true), "the refusal does not say " .. want .. ": " .. said)
  end
end

-- how the client got a refusal, for the table
local function shape(r)
  if r.result then return "refused as expected (isError result)" end
  return "refused as expected (error " .. tostring(r.code) .. ")"
end

local function text_of(line)
  assert(line.ok and line.ok.content, "no result: " .. value.encode(line))
  assert.is_not_true(line.ok.isError, value.encode(line))
  return line.ok.content[1].text
end

local function grant(front, id)
  assert(id, "no approval id")
  if front == "nginx" then
    local out = curl("-X POST -H " .. q("Authorization: Bearer " .. env.token) .. " "
      .. q("http://" .. env.admin .. "/v1/approvals/" .. id .. "/grant"))
    assert.equals("granted", json(out).status)
  else
    local code, out, err = h.toolgate("approvals grant " .. id .. " --state " .. q(env.dir .. "/stdio-state"))
    assert(code == 0, out .. err)
  end
end

-- the runs of one front end x mode, run once and kept
local runs = {}
local function run(front, mode, which)
  local key = front .. "|" .. mode .. "|" .. which
  if runs[key] then return runs[key] end
  local m = mode
  local list
  if which == "A" then
    list = {
      '{"op":"list"}',
      call("get-info", '{"key":"k-' .. m .. '"}'),
      call("stats", '{"n":21}'),
      call("nope", "{}"),
      call("get-info", '{"key":"h2-' .. m .. '","extra":1}'),
      call("get-info", '{"key":"h3-xxxxxxxxxxxxxxxxxxxxxxxxxxx-' .. m .. '"}'),
      call("delete_all", "{}"),
      call("write_note", '{"text":"note-' .. m .. '"}'),
      call("publish", '{"channel":"blog","title":"post-' .. m .. '"}'),
      call("deploy", '{"service":"api-' .. m .. '","env":"staging"}'),
    }
  elseif which == "B" then -- after the grant of run A's write_note
    local note = call("write_note", '{"text":"note-' .. m .. '"}')
    list = { note, note }
  elseif which == "P" then -- after the grant of run A's publish
    local post = call("publish", '{"channel":"blog","title":"post-' .. m .. '"}')
    list = { post, post }
  elseif which == "C" then -- multi round-trip by hand (2026 only)
    local args = '{"service":"rt-' .. m .. '","env":"staging"}'
    local yes = '"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"{{requestState}}"'
    list = {
      '{"op":"call_manual","name":"deploy","arguments":' .. args .. "}",
      '{"op":"call_manual","name":"deploy","arguments":{"service":"rt-' .. m .. '","env":"prod"},' .. yes .. "}",
      '{"op":"call_manual","name":"deploy","arguments":' .. args .. "}",
      '{"op":"call_manual","name":"deploy","arguments":' .. args .. "," .. yes .. "}",
    }
  elseif which == "L" then
    local touch = front == "nginx" and ("http://127.0.0.1:" .. env.up .. "/touch") or ("pidfile:" .. env.dir .. "/up.pid")
    list = { '{"op":"listen","ms":1500,"touch":"' .. touch .. '"}' }
  end
  runs[key] = client(front, mode, "up", list, which == "L" and ("PID_FILE=" .. q(env.dir .. "/up.pid")) or nil)
  return runs[key]
end

-- The first line of a run: connected, in the era the mode expects.
local function connected(front, mode, which)
  local r = run(front, mode, which)
  assert(r[1] and r[1].ok, "did not connect: " .. value.encode(r[1] or {}) .. (r.stderr or ""))
  return r
end

-- raw JSON-RPC through front (tasks and headers): the answers, one per step
local function raw(front, server, list)
  local r = client(front, "raw", server, list)
  local answers = {}
  for i = 2, #r do
    assert(r[i].ok, value.encode(r[i]))
    local got = r[i].ok
    local messages = got.messages or { got.json }
    local last = messages[#messages] or {}
    answers[#answers + 1] = { status = got.status, msg = last }
  end
  return answers
end

local function raw_step(front, method, name, params, extra)
  local headers = ""
  if front == "nginx" then
    headers = ',"headers":{"mcp-protocol-version":"2026-07-28","mcp-method":"' .. method .. '"'
      .. (name and (',"mcp-name":"' .. name .. '"') or "") .. "}"
  end
  return '{"op":"raw"' .. headers .. (extra or "") .. ',"body":{"jsonrpc":"2.0","id":' .. math.random(1e6)
    .. ',"method":"' .. method .. '","params":{' .. params .. "}}}"
end

local function task_steps(front, tool, args)
  return {
    raw_step(front, "tools/call", tool, '"name":"' .. tool .. '","arguments":' .. args .. "," .. meta(true)),
    raw_step(front, "tasks/get", "{{taskId}}", '"taskId":"{{taskId}}",' .. meta(true), ',"until":"completed"'),
  }
end

-- with_gateway(policy, fn): fn(listen) with a gateway of its own in front of
-- the upstream under that policy (shipped name), stopped after, nginx too
local function with_gateway(policy, fn)
  local dir = env.dir .. "/gw-" .. policy
  assert(os.execute("mkdir -p " .. q(dir)))
  local listen = "127.0.0.1:" .. fx.ports(1)[1]
  local pid = spawn(table.concat({ "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", listen,
    "--workers 1", "--prefix", q(dir .. "/prefix"), "--policy", policy, "--upstream", "up=http://127.0.0.1:" .. env.up .. "/mcp",
    "--registry", q("up=" .. env.dir .. "/up.json"), "--context", q("up=" .. env.dir .. "/up.ctx") }, " "), dir .. "/gateway.log")
  local ok, got = pcall(function()
    wait_for("the " .. policy .. " gateway's /healthz", function()
      local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. listen .. "/healthz"))
      return c == 0 and health:find('"ok"')
    end, dir .. "/gateway.log")
    return fn(listen)
  end)
  stop(pid)
  local npid = tonumber(h.read_file(dir .. "/prefix/nginx.pid") or "")
  if npid then wait_for("nginx to stop", function() return not fx.alive(npid) end) end
  if not ok then error(got, 0) end
  return got
end

-- The gateway under env.client_policy (a person may approve a defer in
-- their own client), with an admin listener to read its approvals; started
-- by the first flow that needs it, stopped in teardown.
local function client_gateway()
  if env.client_listen then return env.client_listen end
  local dir = env.dir .. "/gw-client"
  assert(os.execute("mkdir -p " .. q(dir)))
  local ports = fx.ports(2)
  local listen, admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
  pids.client_gateway = spawn(table.concat({ "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", listen,
    "--admin", admin, "--admin-token-file", q(env.dir .. "/token"), "--workers 2", "--prefix", q(dir .. "/prefix"),
    "--policy", q(env.client_policy), "--upstream", "up=http://127.0.0.1:" .. env.up .. "/mcp",
    "--registry", q("up=" .. env.dir .. "/up.json"), "--context", q("up=" .. env.dir .. "/up.ctx") }, " "),
    dir .. "/gateway.log")
  wait_for("the client-approval gateway's /healthz", function()
    local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. listen .. "/healthz"))
    return c == 0 and health:find('"ok"')
  end, dir .. "/gateway.log")
  env.client_listen, env.client_admin = listen, admin
  return listen
end

-- the approval record of id as the front end keeps it
local function approval_record(front, id)
  if front == "nginx" then
    return json(curl("-H " .. q("Authorization: Bearer " .. env.token) .. " "
      .. q("http://" .. env.client_admin .. "/v1/approvals/" .. id)))
  end
  local store = assert(require("toolgate.state.sqlite").open(env.dir .. "/stdio-state/state.sqlite"))
  local r = store:approval(id)
  if store.close then store:close() end
  return r
end

describe("MCP 2026-07-28 flows through both front ends", function()
  local ready, why

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/client")
    if why then return end
    local dir = fx.tempdir("toolgate-mcp2026-spec")
    env.dir = dir
    local ports = fx.ports(#SERVERS + 2)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    for i, s in ipairs(SERVERS) do
      pids[s] = spawn("PORT=" .. ports[i + 2] .. " KA=500 " .. HTTP_SERVERS[s] .. " exec node "
        .. (s:find("^tasks") and "tasks2026.mjs" or "upstream2026.mjs"), dir .. "/" .. s .. ".log")
    end
    for _, s in ipairs(SERVERS) do env[s] = fx.upstream_port(dir .. "/" .. s .. ".log") end
    -- the registries, recorded from the real servers before the gateway starts
    fx.record("up", env.up, dir .. "/up.json")
    fx.record("rug", env.rug, dir .. "/rug.json")
    fx.record("statsbad", env.statsbad, dir .. "/statsbad.json")
    local code, out, err = h.run("cd " .. q(testdir) .. " && timeout 60 node client2026.mjs pin '[{\"op\":\"list\"}]' "
      .. q("http://127.0.0.1:" .. env.tasks .. "/mcp"))
    assert(code == 0, out .. err)
    local tools = fx.lines(out)[2].ok.tools
    for _, s in ipairs({ "tasks", "tasksbad" }) do
      h.write_file(dir .. "/" .. s .. ".json", assert(value.encode({ server = s, tools = tools })))
    end
    env.registry_names = {}
    for _, t in ipairs(json(h.read_file(dir .. "/up.json")).tools) do env.registry_names[#env.registry_names + 1] = t.name end
    table.sort(env.registry_names)
    -- the shipped gateway policy; deploy's confirmation is the server's, so the spec lets it run
    local policy, n = h.read_file(root .. "/policies/gateway.lua"):gsub("(contract = function%(tool%)\n)",
      '%1    if tool.name == "deploy" then return { risk = "low", scopes = { tool.server .. ":read" } } end\n', 1)
    assert(n == 1, "policies/gateway.lua's contract changed: the spec cannot add deploy")
    -- the matrix's defers are granted by an operator; the person answering in the client has flows of its own
    -- (env.client_policy: the shipped mcp.client_approval, true)
    env.client_policy = dir .. "/client-policy.lua"
    h.write_file(env.client_policy, policy)
    policy, n = policy:gsub("(mcp = {[^}\n]*) }", "%1, client_approval = false }", 1)
    assert(n == 1, "policies/gateway.lua's mcp table changed: the spec cannot turn client approval off")
    env.policy = dir .. "/policy.lua"
    h.write_file(env.policy, policy)
    for _, s in ipairs(SERVERS) do
      h.write_file(dir .. "/" .. s .. ".ctx", '{"scopes":["' .. s .. ':read","' .. s .. ':write"]}')
    end
    env.token = "spec-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(dir .. "/token", env.token .. "\n")
    local cmd = { "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen, "--admin", env.admin,
      "--admin-token-file", q(dir .. "/token"), "--workers 2", "--prefix", q(dir .. "/prefix"), "--policy", q(env.policy) }
    for _, s in ipairs(SERVERS) do
      for _, a in ipairs({ "--upstream", s .. "=http://127.0.0.1:" .. env[s] .. "/mcp", "--registry",
        q(s .. "=" .. dir .. "/" .. s .. ".json"), "--context", q(s .. "=" .. dir .. "/" .. s .. ".ctx") }) do
        cmd[#cmd + 1] = a
      end
    end
    pids.gateway = spawn(table.concat(cmd, " "), dir .. "/gateway.log")
    wait_for("the gateway's /healthz", function()
      local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. env.listen .. "/healthz"))
      return c == 0 and health:find('"ok"')
    end, dir .. "/gateway.log")
    ready = true
  end)

  teardown(function()
    stop(pids.gateway)
    if env.dir then
      local pid = tonumber(h.read_file(env.dir .. "/prefix/nginx.pid") or "")
      if pid then wait_for("nginx to stop", function() return not fx.alive(pid) end) end
    end
    if pids.client_gateway then
      stop(pids.client_gateway)
      local pid = tonumber(h.read_file(env.dir .. "/gw-client/prefix/nginx.pid") or "")
      if pid then wait_for("nginx to stop", function() return not fx.alive(pid) end) end
    end
    for _, s in ipairs(SERVERS) do stop(pids[s]) end
    local path = os.getenv("TOOLGATE_FLOW_TABLE")
    if path then
      local out = { "| front end | client | flow | outcome |", "|---|---|---|---|" }
      for _, key in ipairs(order) do
        local front, mode, name = key:match("^([^|]*)|([^|]*)|(.*)$")
        out[#out + 1] = "| " .. front .. " | " .. mode .. " | " .. name .. " | " .. (outcomes[key] or "FAIL") .. " |"
      end
      h.write_file(path, table.concat(out, "\n") .. "\n")
    end
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  -- flow(front, mode, name, fn): fn returns the outcome ("pass",
  -- "refused as expected", "n/a: why"), kept for the table.
  local function flow(front, mode, name, fn)
    local key = front .. "|" .. mode .. "|" .. name
    order[#order + 1] = key
    it(front .. " x " .. mode .. ": " .. name, function()
      if not ready then
        outcomes[key] = "pending (" .. (why or "the gateway did not start") .. ")"
        return pending(why or "the gateway did not start")
      end
      local ok, got = pcall(fn)
      if not ok then
        outcomes[key] = "FAIL: " .. tostring(got):gsub("\n.*", ""):sub(1, 160)
        error(got, 0)
      end
      outcomes[key] = got
    end)
  end

  for _, front in ipairs(FRONTS) do
    for _, mode in ipairs(MODES) do
      local A = function() return connected(front, mode, "A") end

      flow(front, mode, "connect", function()
        local first = A()[1].ok
        assert.equals(MODERN[mode] and "modern" or "legacy", first.era)
        if MODERN[mode] then assert.equals("2026-07-28", first.version) end
        -- SDK 1.32.2 does not say the version it negotiated over stdio
        return "pass (" .. first.era .. (type(first.version) == "string" and (" " .. first.version) or "") .. ")"
      end)

      flow(front, mode, "list: exactly the registry's tools", function()
        local names = {}
        for _, t in ipairs(A()[2].ok.tools) do names[#names + 1] = t.name end
        table.sort(names)
        assert.same(env.registry_names, names)
        return "pass"
      end)

      flow(front, mode, "valid call (read-only; outputSchema)", function()
        local r = A()
        assert.equals("info:k-" .. mode, text_of(r[3]))
        assert.same({ double = 42 }, r[4].ok.structuredContent)
        return "pass"
      end)

      flow(front, mode, "H1 unknown tool", function()
        local r = A()[5]
        assert.equals(-32602, r.error and r.error.code, value.encode(r))
        return "refused as expected (-32602)"
      end)

      flow(front, mode, "H2 undeclared key", function()
        local r = refused(A()[6], "H2")
        says(r, "get-info", "extra")
        assert.equals(0, count(front, "get-info", function(a) return a.key == "h2-" .. mode end))
        return shape(r)
      end)

      flow(front, mode, "H3 too long", function()
        local r = refused(A()[7], "H3")
        says(r, "get-info", "20")
        assert.equals(0, count(front, "get-info", function(a) return tostring(a.key):find("^h3%-") ~= nil end))
        return shape(r)
      end)

      flow(front, mode, "H4 destructive", function()
        local r = refused(A()[8], "H4")
        says(r, "delete_all", "destructive")
        assert.equals(0, count(front, "delete_all"))
        return shape(r)
      end)

      flow(front, mode, "defer -> grant -> retry (once)", function()
        local d = refused(A()[9], "defer")
        says(d, "write_note", d.approval_id)
        grant(front, d.approval_id)
        local B = connected(front, mode, "B")
        assert.equals("noted: note-" .. mode, text_of(B[2]))
        refused(B[3], "the second use of a one-use approval")
        assert.equals(1, count(front, "write_note", function(a) return a.text == "note-" .. mode end))
        return "pass (deferred: " .. shape(d):match("%((.*)%)") .. ")"
      end)

      flow(front, mode, "multi round-trip: confirmed passes", function()
        local r = A()[11]
        if front == "nginx" and not MODERN[mode] then
          -- the SDK's stateless 2025 leg cannot send elicitation/create (no stream back)
          assert.matches("Cannot request input", r.ok.content[1].text)
          return "n/a: the SDK server's 2025 HTTP leg cannot ask"
        end
        assert.equals("Deploy api-" .. mode .. " to staging?", r.asked and r.asked[1])
        assert.matches("^deployed api%-" .. mode .. " to staging", text_of(r))
        return "pass"
      end)

      flow(front, mode, "multi round-trip: retried with changed arguments", function()
        if not MODERN[mode] then return "n/a: a 2025 connection has no retries (the server asks by elicitation)" end
        local C = connected(front, mode, "C")
        assert.equals("input_required", C[2].ok and C[2].ok.resultType, value.encode(C[2]))
        local r = refused(C[3], "a retry with env prod under the staging round's state")
        assert.equals(0, count(front, "deploy", function(a, c) return a.env == "prod" and c.completed end))
        assert.matches("^deployed rt%-" .. mode .. " to staging", text_of(C[5]))
        return (shape(r):gsub("%)$", "; the same retry unchanged passes)"))
      end)

      flow(front, mode, "write behind an approval that asks for input (passes once)", function()
        local d = refused(A()[10], "defer of publish")
        if front == "nginx" and not MODERN[mode] then
          return "n/a: the SDK server's 2025 HTTP leg cannot ask"
        end
        grant(front, d.approval_id)
        local P = connected(front, mode, "P")
        assert.equals("published post-" .. mode .. " to blog", text_of(P[2]))
        assert.equals("Publish post-" .. mode .. " to blog?", P[2].asked and P[2].asked[1])
        refused(P[3], "publish after its one use")
        assert.equals(1, count(front, "publish", function(a, c) return a.title == "post-" .. mode and c.completed end))
        return "pass"
      end)

      flow(front, mode, "defer approved in the client (once), declined in the client (refused)", function()
        local ok_args, no_args = '{"text":"client-ok-' .. mode .. '"}', '{"text":"client-no-' .. mode .. '"}'
        local yes = '"answer":{"action":"accept","content":{"approve":true}}'
        local R = client(front, mode, "up", {
          '{"op":"call","name":"write_note","arguments":' .. ok_args .. "," .. yes .. "}",
          '{"op":"call","name":"write_note","arguments":' .. ok_args .. "," .. yes .. "}",
          '{"op":"call","name":"write_note","arguments":' .. no_args .. ',"answer":{"action":"decline"}}',
        }, nil, q(env.client_policy), front == "nginx" and client_gateway() or nil)
        assert(R[1] and R[1].ok, value.encode(R[1] or {}) .. (R.stderr or ""))
        if front == "nginx" and not MODERN[mode] then
          -- a 2025 client over HTTP cannot be asked (a stateless POST has no channel for the gateway's own
          -- request): deferred as before, for the inbox or the admin API
          local d = refused(R[2], "a 2025 client's deferred call over HTTP")
          assert.is_nil(R[2].asked)
          assert.truthy(d.approval_id)
          assert.equals(0, count(front, "write_note", function(a) return a.text == "client-ok-" .. mode end))
          return "refused as expected (deferred: 2025 over HTTP is not asked in the client)"
        end
        -- the person saw the tool, the server, the arguments and the approval, and said yes: it ran once
        assert.equals("noted: client-ok-" .. mode, text_of(R[2]))
        local asked = R[2].asked and R[2].asked[1] or ""
        assert.truthy(asked:find("Tool: write_note\nServer: up\nArguments: " .. ok_args, 1, true), asked)
        local id = asked:match("Approval: (%x+)")
        assert.equals(1, count(front, "write_note", function(a) return a.text == "client-ok-" .. mode end))
        local rec = approval_record(front, id)
        assert.equals("used", rec.status)
        -- decided by the client, for the principal who asked when there is one (stdio: the local user)
        assert.equals(rec.principal and ("client:" .. rec.principal) or "client", rec.decided_by)
        -- its one use is spent: the same call again is deferred as before (nothing asked)
        local again = refused(R[3], "the second use of a one-use approval")
        assert.is_nil(R[3].asked)
        assert.equals(id, again.approval_id)
        -- declined: refused saying so, nothing ran, the approval still waits for an operator
        local no = refused(R[4], "declined in the client")
        says(no, "the person declined this call in their client")
        assert.equals(0, count(front, "write_note", function(a) return a.text == "client-no-" .. mode end))
        return "pass (approved once; declined: " .. shape(no):match("%((.*)%)") .. ")"
      end)

      flow(front, mode, "subscriptions: list_changed", function()
        if front == "nginx" and not MODERN[mode] then
          return "n/a: the SDK server's stateless 2025 leg has no stream (GET is 405)"
        end
        local L = connected(front, mode, "L")[2]
        assert(L.ok, value.encode(L))
        if MODERN[mode] then assert.same({ toolsListChanged = true }, L.ok.honored) end
        local got = false
        for _, n in ipairs(L.ok.notifications) do got = got or n.method == "notifications/tools/list_changed" end
        assert.is_true(got, value.encode(L.ok))
        return "pass"
      end)
    end

    flow(front, "raw", "tasks: result verified", function()
      local ok = raw(front, "tasks", task_steps(front, "long_job", '{"n":3}'))
      assert.equals("task", ok[1].msg.result and ok[1].msg.result.resultType, value.encode(ok[1].msg))
      assert.equals("completed", ok[2].msg.result and ok[2].msg.result.status, value.encode(ok[2].msg))
      assert.same({ count = 3 }, ok[2].msg.result.result.structuredContent)
      local bad = raw(front, "tasksbad", task_steps(front, "long_job", '{"n":3}'))
      assert.equals("task", bad[1].msg.result and bad[1].msg.result.resultType, value.encode(bad[1].msg))
      local got = bad[2].msg
      local broken = got.result and got.result.result and got.result.result.structuredContent
      assert(not (broken and broken.count == "many"), "a result that breaks the outputSchema passed: " .. value.encode(got))
      assert(got.error or (got.result and got.result.result and got.result.result.isError), value.encode(got))
      return "pass (a broken result refused)"
    end)

    flow(front, "raw", "tasks: unknown id refused", function()
      local steps_ = { raw_step(front, "tasks/get", "no-such-task", '"taskId":"no-such-task",' .. meta(true)) }
      if front == "nginx" then
        -- a task the server has but the gateway never saw created
        local made = json(curl("-X POST -H 'content-type: application/json' "
          .. "-H 'accept: application/json, text/event-stream' "
          .. q("http://127.0.0.1:" .. env.tasks .. "/mcp") .. " --data-binary "
          .. q('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long_job","arguments":{"n":1},'
            .. meta(true) .. "}}")))
        local id = made.result.taskId
        steps_[#steps_ + 1] = raw_step(front, "tasks/get", id, '"taskId":"' .. id .. '",' .. meta(true))
      end
      for _, a in ipairs(raw(front, "tasks", steps_)) do
        assert(a.msg.error, "not refused: " .. value.encode(a.msg))
        assert.is_nil(a.msg.error.message:find("Unknown task", 1, true), "refused by the server, not toolgate")
      end
      return "refused as expected"
    end)

    flow(front, "raw", "tasks: input asked, answered by tasks/update", function()
      local update = function(responses)
        return raw_step(front, "tasks/update", "{{taskId}}", '"taskId":"{{taskId}}","inputResponses":' .. responses .. ","
          .. meta(true))
      end
      local a = raw(front, "tasks", {
        raw_step(front, "tools/call", "long_echo", '"name":"long_echo","arguments":{"text":"asked-' .. front .. '"},'
          .. meta(true)),
        raw_step(front, "tasks/get", "{{taskId}}", '"taskId":"{{taskId}}",' .. meta(true), ',"until":"input_required"'),
        update('{"unasked":{"action":"accept","content":{"confirm":true}}}'),
        update('{"confirm":{"action":"accept","content":{"confirm":true}}}'),
        raw_step(front, "tasks/get", "{{taskId}}", '"taskId":"{{taskId}}",' .. meta(true), ',"until":"completed"'),
      })
      assert.equals("task", a[1].msg.result and a[1].msg.result.resultType, value.encode(a[1].msg))
      assert.equals("input_required", a[2].msg.result and a[2].msg.result.status, value.encode(a[2].msg))
      assert(a[3].msg.error, "an answer to a question never asked passed: " .. value.encode(a[3].msg))
      assert.equals("complete", a[4].msg.result and a[4].msg.result.resultType, value.encode(a[4].msg))
      assert.equals("echo: asked-" .. front, a[5].msg.result.result.content[1].text)
      for _, c in ipairs(ran(front, "tasks")) do
        assert.is_nil(c.inputResponses and c.inputResponses.unasked, "the unasked answer reached the server")
      end
      return "pass (an unasked answer refused)"
    end)

    flow(front, "raw", "unsupported version: -32022", function()
      local v = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",'
        .. '"io.modelcontextprotocol/clientCapabilities":{}}'
      local odd = '{"op":"raw",' .. (front == "nginx" and
        '"headers":{"mcp-protocol-version":"2099-01-01","mcp-method":"tools/call","mcp-name":"get-info"},' or "")
        .. '"body":{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-info","arguments":'
        .. '{"key":"v2099-' .. front .. '"},' .. v .. "}}}"
      -- first a 2026 request: the SDK's stdio server then serves any version claimed after it
      local a = raw(front, "up", { raw_step(front, "tools/call", "get-info",
        '"name":"get-info","arguments":{"key":"v2026-' .. front .. '"},' .. meta(false)), odd })
      assert.equals("info:v2026-" .. front, a[1].msg.result and a[1].msg.result.content[1].text, value.encode(a[1].msg))
      local e = a[2].msg.error
      assert.equals(-32022, e and e.code, value.encode(a[2].msg))
      assert.equals("2099-01-01", e.data and e.data.requested)
      if front == "nginx" then assert.equals(400, a[2].status) end
      assert.equals(0, count(front, "get-info", function(x) return x.key == "v2099-" .. front end))
      return "refused as expected (-32022" .. (front == "nginx" and ", HTTP 400)" or ")")
    end)

    flow(front, "pin", "list_changed: the pins checked again", function()
      local touch = front == "nginx" and ("http://127.0.0.1:" .. env.rug .. "/touch") or ("pidfile:" .. env.dir .. "/rug.pid")
      local r = client(front, "pin", "rug", { '{"op":"listen","ms":1500,"touch":"' .. touch .. '"}',
        call("get-info", '{"key":"after-' .. front .. '"}'), '{"op":"list"}' }, "PID_FILE=" .. q(env.dir .. "/rug.pid"))
      assert(r[2] and r[2].ok, value.encode(r[2] or r[1]))
      local got = false
      for _, n in ipairs(r[2].ok.notifications) do got = got or n.method == "notifications/tools/list_changed" end
      assert.is_true(got, "no list_changed: " .. value.encode(r[2].ok))
      local x = refused(r[3], "a call to a tool whose description changed")
      assert.equals(0, count(front, "get-info", function(a) return a.key == "after-" .. front end, "rug"))
      for _, t in ipairs(r[4].ok.tools) do assert.is_not.equals("get-info", t.name) end
      return shape(x)
    end)

    flow(front, "pin", "a result that breaks its outputSchema refused", function()
      local r = client(front, "pin", "statsbad", { call("stats", '{"n":7}') })
      assert(r[1] and r[1].ok, "did not connect: " .. value.encode(r[1] or {}) .. (r.stderr or ""))
      local got = r[2].ok and r[2].ok.structuredContent
      assert(not (got and got.double == "not a number"), "the broken result passed: " .. value.encode(r[2]))
      local x = refused(r[2], "the broken result")
      -- the server ran it: the answer, not the call, is what was refused
      assert.equals(1, count(front, "stats", function(a) return a.n == 7 end, "statsbad"))
      return shape(x)
    end)

    -- every shipped policy lets a client pinned to 2026-07-28 connect and list; a read is the policy's to decide
    for _, name in ipairs({ "default", "example", "gateway", "mcp", "rung", "strict" }) do
      flow(front, "pin", "shipped policy " .. name .. ": connect, list, a read", function()
        local steps_ = { '{"op":"list"}', call("get-info", '{"key":"policy-' .. name .. '"}') }
        local r
        if front == "stdio" then
          r = client(front, "pin", "up", steps_, nil, name .. (name == "example" and " --server up" or ""))
        else
          r = with_gateway(name, function(listen)
            local code, out, err = h.run("cd " .. q(testdir) .. " && timeout 60 node client2026.mjs pin "
              .. q(steps(steps_)) .. " " .. q("http://" .. listen .. "/mcp/up"))
            assert(code == 0 or code == 1, out .. err)
            local lines = fx.lines(out)
            lines.stderr = err
            return lines
          end)
        end
        assert(r[1] and r[1].ok, "did not connect: " .. value.encode(r[1] or {}) .. (r.stderr or ""))
        assert.equals("modern", r[1].ok.era)
        local names = {}
        for _, t in ipairs(r[2].ok.tools) do names[#names + 1] = t.name end
        table.sort(names)
        assert.same(env.registry_names, names)
        if r[3].ok and not r[3].ok.isError then
          assert.equals("info:policy-" .. name, text_of(r[3]))
          return "pass (the read accepted)"
        end
        local x = refused(r[3], "the read")
        assert.equals(0, count(front, "get-info", function(a) return a.key == "policy-" .. name end))
        return "pass (the read " .. shape(x):gsub("^refused as expected", "refused") .. ")"
      end)
    end

    if front == "nginx" then
      flow(front, "raw", "header/body mismatch", function()
        local body = '"name":"long_echo","arguments":{"text":"mismatch"},' .. meta(false)
        local a = raw(front, "tasks", {
          '{"op":"raw","headers":{"mcp-protocol-version":"2026-07-28","mcp-method":"tools/call","mcp-name":"long_job"},'
            .. '"body":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{' .. body .. "}}}",
          '{"op":"raw","headers":{"mcp-protocol-version":"2025-11-25","mcp-method":"tools/call","mcp-name":"long_echo"},'
            .. '"body":{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{' .. body .. "}}}",
        })
        for _, x in ipairs(a) do
          assert.equals(400, x.status)
          assert.equals(-32020, x.msg.error and x.msg.error.code, value.encode(x.msg))
        end
        for _, c in ipairs(json(curl(q("http://127.0.0.1:" .. env.tasks .. "/calls")))) do
          assert.is_not.equals("mismatch", c.arguments and c.arguments.text)
        end
        return "refused as expected (400, -32020)"
      end)
    end
  end
end)
