-- Shadow mode end to end (toolgate.shadow): `toolgate gateway` (nginx) in
-- front of nginx/test/upstream.mjs, driven by the MCP TypeScript SDK's
-- client, and `toolgate mcp-proxy` in front of spec/stdio/pyserver.py; a
-- shadowed refusal reaches the server and the client reads the server's
-- answer, H1 stays refused, the records say enforced false, and `toolgate
-- log --shadow` sums them up.  Runs under Lua 5.4 only (nginx runs
-- LuaJIT itself; the gateway's logic under both is spec/shadow_spec.lua's).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, stop, wait_for = fx.json, fx.spawn, fx.stop, fx.wait_for
local q = h.shell_quote
local root = h.root

-- the lines of a decision log (or of `toolgate log --json`), read
local function records(text)
  local out = {}
  for _, l in ipairs(h.lines_of(text or "")) do out[#out + 1] = json(l) end
  return out
end

-- the decision records of a tool's calls (phase call, or the one given)
local function of_tool(recs, route, tool, phase)
  local out = {}
  for _, r in ipairs(recs) do
    if r.kind == "decision" and r.route == route and r.decision.tool == tool and r.phase == (phase or "call") then
      out[#out + 1] = r
    end
  end
  return out
end

-- `toolgate log --shadow --json ARGS` -> its groups, keyed "server/tool/code"
local function shadow_report(args)
  local code, out, err = h.toolgate("log --shadow --json " .. args)
  assert(code == 0, err .. out)
  local groups = {}
  for _, g in ipairs(records(out)) do groups[g.server .. "/" .. g.tool .. "/" .. g.code] = g end
  return groups
end

describe("shadow mode through the nginx gateway", function()
  local env, pids, ready, why = {}, {}, false, nil

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    local dir = fx.tempdir("toolgate-shadow-spec")
    env.dir = dir
    local ports = fx.ports(3)
    env.listen = "127.0.0.1:" .. ports[1]
    pids.counter = spawn("PORT=" .. ports[3] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
    env.counter = fx.upstream_port(dir .. "/counter.log")
    fx.record("counter", env.counter, dir .. "/counter.json", "hidden")
    -- the same server on a second route, enforced but for one tool
    h.write_file(dir .. "/strict.json", (h.read_file(dir .. "/counter.json"):gsub('"server":"counter"', '"server":"strict"')))
    -- the shipped gateway policy: the server counter in shadow, and on strict the tool echo
    local shipped, n = h.read_file(root .. "/policies/gateway.lua"):gsub("(mcp = {[^}\n]*) }",
      '%1, client_approval = false },\n  modes = { counter = "shadow", ["strict/echo"] = "shadow" }', 1)
    assert(n == 1, "policies/gateway.lua has no mcp = { ... } line")
    h.write_file(dir .. "/policy.lua", shipped)
    local cmd = { "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen, "--workers 1",
      "--prefix", q(dir .. "/prefix"), "--policy", q(dir .. "/policy.lua") }
    for _, s in ipairs({ "counter", "strict" }) do
      h.write_file(dir .. "/" .. s .. ".ctx", '{"scopes":["' .. s .. ':read","' .. s .. ':write"]}')
      cmd[#cmd + 1] = "--upstream " .. s .. "=http://127.0.0.1:" .. env.counter .. "/mcp --registry "
        .. q(s .. "=" .. dir .. "/" .. s .. ".json") .. " --context " .. q(s .. "=" .. dir .. "/" .. s .. ".ctx")
    end
    pids.gateway = fx.start_gateway(table.concat(cmd, " "), env.listen, dir .. "/gateway.log")
    ready = true
  end)

  teardown(function()
    if env.dir then fx.stop_gateway(pids.gateway, env.dir .. "/prefix") end
    stop(pids.counter)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  it("forwards shadowed H2, H4, defer and a broken result, the SDK client reading the server's answers; H1 and an "
    .. "enforced route's H4 stay refused; the log says enforced false and log --shadow sums it up", function()
    if not ready then return pending(why or "the gateway did not start") end
    local calls = function() return json(fx.curl(q("http://127.0.0.1:" .. env.counter .. "/calls"))) end
    local before = calls()
    local r = fx.client("http://" .. env.listen .. "/mcp/counter", table.concat({
      '[{"op":"call","name":"hidden"}',
      '{"op":"call","name":"echo","arguments":{"message":"x","extra":1}}',
      '{"op":"call","name":"delete_all"}',
      '{"op":"call","name":"write_note","arguments":{"text":"n"}}',
      '{"op":"call","name":"broken_add","arguments":{"a":1,"b":2}}]' }, ","))
    assert.equals(-32602, r[2].error.code)
    assert.equals("H1", r[2].error.data.decision.code)
    assert.same({ { type = "text", text = "Echo: x" } }, r[3].ok.content)
    assert.same({ { type = "text", text = "done" } }, r[4].ok.content)
    assert.same({ { type = "text", text = "noted: n" } }, r[5].ok.content)
    assert.same({ total = "many" }, r[6].ok.structuredContent)
    for _, x in ipairs({ r[3], r[4], r[5], r[6] }) do assert.is_nil(x.ok.isError) end
    -- the enforced route: echo (its tool in shadow) runs, delete_all does not
    local s = fx.client("http://" .. env.listen .. "/mcp/strict", '[{"op":"call","name":"echo","arguments":'
      .. '{"message":"y","extra":2}},{"op":"call","name":"delete_all"}]')
    assert.same({ { type = "text", text = "Echo: y" } }, s[2].ok.content)
    assert.is_true(s[3].ok.isError)
    assert.equals("H4", s[3].ok._meta["toolgate/decision"].code)
    local after = calls()
    local function ran(tool) return (after[tool] or 0) - (before[tool] or 0) end
    assert.same({ 2, 1, 1, 1, 0 }, { ran("echo"), ran("delete_all"), ran("write_note"), ran("broken_add"),
      ran("hidden") })

    -- the decision log: each shadowed decision in full, with the verdict it would have had
    local log = env.dir .. "/prefix/decisions.jsonl"
    local recs = wait_for("the decision log", function()
      local got = records(h.read_file(log))
      return #of_tool(got, "strict", "delete_all") == 1 and #of_tool(got, "counter", "broken_add", "result") == 1
        and got
    end)
    local del = of_tool(recs, "counter", "delete_all")[1]
    assert.same({ false, "shadow", "passed", "reject", "H4", false },
      { del.enforced, del.mode, del.outcome, del.decision.verdict, del.decision.code, del.decision.enforced })
    local note = of_tool(recs, "counter", "write_note")[1]
    assert.same({ false, "defer", "passed" }, { note.enforced, note.decision.verdict, note.outcome })
    assert.same({ text = "n" }, json(note.arguments))
    local broken = of_tool(recs, "counter", "broken_add", "result")[1]
    assert.same({ false, "CONTRACT_OUTPUT" }, { broken.enforced, broken.decision.code })
    local hidden = of_tool(recs, "counter", "hidden")[1]
    assert.same({ true, "enforce", "refused" }, { hidden.enforced, hidden.mode, hidden.outcome })
    local strict = of_tool(recs, "strict", "delete_all")[1]
    assert.same({ true, "refused" }, { strict.enforced, strict.outcome })

    -- every record, shadowed or not, is one the audit schema takes
    local vcode, vout = h.toolgate("validate --schema " .. q(root .. "/docs/schemas/decision-record.schema.json")
      .. " --lines " .. q(log))
    assert.equals(0, vcode, vout)

    -- the metrics carry the mode
    local m = wait_for("the metrics", function()
      local text = fx.curl(q("http://" .. env.listen .. "/metrics"))
      return (fx.metric(text, 'toolgate_decisions_total{code="H4",mode="shadow",phase="call",stage="gate",'
        .. 'verdict="reject"}') or 0) >= 1 and text
    end)
    assert.equals(1, fx.metric(m, 'toolgate_tool_decisions_total{mode="shadow",server="counter",tool="delete_all",'
      .. 'verdict="reject"}'))
    assert.equals(1, fx.metric(m, 'toolgate_tool_decisions_total{mode="enforce",server="strict",tool="delete_all",'
      .. 'verdict="reject"}'))

    -- what shadow would have refused, from the gateway's log
    local groups = shadow_report("--file " .. q(log))
    assert.same({ 1, "reject", { "{}" } }, { groups["counter/delete_all/H4"].count,
      groups["counter/delete_all/H4"].verdict, groups["counter/delete_all/H4"].examples })
    assert.equals("defer", groups["counter/write_note/H4"].verdict)
    assert.same({ '{"extra":1,"message":"x"}' }, groups["counter/echo/H2"].examples)
    assert.equals(1, groups["strict/echo/H2"].count)
    assert.equals(1, groups["counter/broken_add/CONTRACT_OUTPUT"].count)
    assert.is_nil(groups["counter/hidden/H1"])
    assert.is_nil(groups["strict/delete_all/H4"])
    local code, out = h.toolgate("log --shadow --human --file " .. q(log))
    assert.equals(0, code)
    assert.matches("counter/delete_all%s+H4%s+reject%s+1%s+{}", out)
    assert.matches("5 refusal%(s%) shadow let run, in 5 group%(s%)", out)
  end)
end)

describe("shadow mode through the stdio proxy", function()
  it("runs a shadowed H4 and defer on the Python SDK-like server, refuses H1, and log --shadow reads the state",
    function()
    if not h.have("python3") then return pending("needs python3") end
    local dir = fx.tempdir("toolgate-shadow-stdio")
    local state, reg, rec = dir .. "/state", dir .. "/notes.json", dir .. "/calls.jsonl"
    local c, o, e = h.toolgate("registry record --server notes --output " .. q(reg) .. " -- python3 "
      .. q(root .. "/spec/stdio/pyserver.py"))
    assert(c == 0, o .. e)
    h.write_file(dir .. "/policy.lua", (h.read_file(root .. "/policies/gateway.lua"):gsub("\nreturn {\n",
      '\nreturn {\n  mode = "shadow",\n', 1)))
    h.write_file(dir .. "/notes.ctx", '{"scopes":["notes:read","notes:write"]}')
    local function call(id, name, args)
      return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name
        .. '","arguments":' .. args .. "}}"
    end
    local input = table.concat({
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        .. '"clientInfo":{"name":"spec","version":"1"}}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      call(2, "delete_all", "{}"), call(3, "write_note", '{"text":"kept"}'), call(4, "nope", "{}"), "" }, "\n")
    local code, out, err = h.run("timeout 60 " .. h.lua .. " " .. q(root .. "/bin/toolgate") .. " mcp-proxy --policy "
      .. q(dir .. "/policy.lua") .. " --state " .. q(state) .. " --context " .. q(dir .. "/notes.ctx") .. " --registry "
      .. q("notes=" .. reg) .. " -- env PYSERVER_RECORD=" .. q(rec) .. " python3 " .. q(root .. "/spec/stdio/pyserver.py"),
      input)
    assert.equals(0, code, err)
    local answers = {}
    for _, a in ipairs(records(out)) do answers[a.id] = a end
    -- the server's answers, as it wrote them
    assert.same({ content = { { type = "text", text = "done" } } }, answers[2].result)
    assert.same({ content = { { type = "text", text = "kept" } } }, answers[3].result)
    assert.equals(-32602, answers[4].error.code)
    local ran = {}
    for _, x in ipairs(records(h.read_file(rec))) do ran[#ran + 1] = x.tool end
    assert.same({ "delete_all", "write_note" }, ran)
    assert.matches("shadow, let run: reject call delete_all: H4", err, 1, true)
    local groups = shadow_report("--state " .. q(state))
    assert.same({ 1, "reject" }, { groups["notes/delete_all/H4"].count, groups["notes/delete_all/H4"].verdict })
    assert.same({ 1, "defer", { '{"text":"kept"}' } }, { groups["notes/write_note/H4"].count,
      groups["notes/write_note/H4"].verdict, groups["notes/write_note/H4"].examples })
    assert.is_nil(groups["notes/nope/H1"])
    os.execute("rm -rf " .. q(dir))
  end)
end)
