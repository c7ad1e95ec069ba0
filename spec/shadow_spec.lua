-- toolgate.shadow: a policy, a server or a tool in shadow (decide, record,
-- let run) or enforce; the policy's fields (policy.lua), the gateway's
-- shadowed calls and results (toolgate.mcp, both interpreters), and
-- `toolgate check --shadow`.  The end-to-end runs (nginx with the SDK's
-- client, the stdio proxy) are in spec/shadow_e2e_spec.lua.
local toolgate = require "toolgate"
local mcp = require "toolgate.mcp"
local policy = require "toolgate.policy"
local shadow = require "toolgate.shadow"
local state = require "toolgate.state"
local decision = require "toolgate.decision"
local h = require "helpers"

local root = h.root
local REGISTRY = "counter=" .. root .. "/spec/data/nginx/counter.json"
local decode = require("toolgate.json").decode
local function json(text) return assert(decode(toolgate.codec().engine, text)) end

local function base(extra)
  local p = { name = "p", version = "1" }
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

local function load_error(extra)
  local p, err, code = policy.load(base(extra))
  assert.is_nil(p)
  assert.equals("POLICY_INVALID", code)
  return err
end

-- the shipped gateway policy with fields of shadow's; refusals as results
local function gateway_policy(extra)
  local p = dofile(root .. "/policies/gateway.lua")
  p.mcp = { refusal = "result", client_approval = false }
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

local function gateway(extra, context)
  local e = assert(toolgate.new{ policy = gateway_policy(extra), registry = { REGISTRY }, state = state.memory() })
  local events = {}
  local gw = assert(mcp.new{ engine = e, observe = function(ev) events[#events + 1] = ev end })
  return gw, gw:route("counter", context or { scopes = { "counter:read", "counter:write" } }), events, e
end

local function call(id, name, args, params_extra)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name .. '","arguments":'
    .. args .. (params_extra or "") .. "}}"
end

local function last_decision(events)
  for i = #events, 1, -1 do
    if events[i].kind == "decision" then return events[i] end
  end
end

describe("toolgate.shadow", function()
  describe("the policy's fields", function()
    it("defaults to enforce: a policy without mode compiles to no shadow rules at all", function()
      local p = assert(policy.load(base()))
      assert.is_nil(p.shadow)
      assert.is_nil(assert(policy.load(base({ mode = "enforce", modes = { s = "enforce" } }))).shadow)
    end)

    it("takes mode, modes and always_enforce, the most specific mode winning", function()
      local p = assert(policy.load(base({ mode = "shadow", modes = { pay = "enforce", ["pay/quote"] = "shadow" } })))
      local r = p.shadow
      assert.equals("shadow", shadow.mode(r, "files", "read"))
      assert.equals("enforce", shadow.mode(r, "pay", "transfer"))
      assert.equals("shadow", shadow.mode(r, "pay", "quote"))
      assert.equals("enforce", shadow.mode(r, "pay", nil))
      r = assert(policy.load(base({ modes = { ["pay/quote"] = "shadow" } }))).shadow
      assert.equals("enforce", shadow.mode(r, "pay", "transfer"))
      assert.equals("shadow", shadow.mode(r, "pay", "quote"))
      assert.same({ H1 = true, PIN_CHANGED = true, SERVER_QUARANTINED = true }, r.always)
      r = assert(policy.load(base({ mode = "shadow", always_enforce = { "H4" } }))).shadow
      assert.same({ H4 = true }, r.always)
    end)

    it("names what is wrong, with the name a typo most likely meant", function()
      assert.equals('policy mode: must be "enforce" or "shadow", not "shadwo" (did you mean "shadow"?)',
        load_error({ mode = "shadwo" }))
      assert.equals('policy modes["pay/quote"]: must be "enforce" or "shadow", not "enforced" (did you mean '
        .. '"enforce"?)', load_error({ modes = { ["pay/quote"] = "enforced" } }))
      assert.equals('policy modes["pay/"]: a key is a server ("pay") or a server and a tool ("pay/transfer")',
        load_error({ modes = { ["pay/"] = "shadow" } }))
      assert.equals('policy modes[1]: a key is a server ("pay") or a server and a tool ("pay/transfer")',
        load_error({ modes = { "shadow" } }))
      assert.equals("policy modes: must be a table, not \"shadow\"", load_error({ modes = "shadow" }))
      assert.equals('policy always_enforce[2]: "PIN_CHANGE" is a typo away from a code toolgate writes (did you '
        .. 'mean "PIN_CHANGED"?); a custom stage\'s own code may be listed, but not one a typo away',
        load_error({ always_enforce = { "H1", "PIN_CHANGE" } }))
      assert.equals('policy always_enforce: must be a list of codes, not "H1"', load_error({ always_enforce = "H1" }))
      assert.matches('unknown field %(did you mean "modes"%?%)', load_error({ mdoes = { s = "shadow" } }))
    end)
  end)

  it("warns of a modes entry that names a server or tool the registry does not hold (a typo stays in shadow)", function()
    local e = assert(toolgate.new{ policy = gateway_policy({ mode = "shadow", modes = { ["counter/delte_all"] = "enforce",
      counter = "shadow", countr = "enforce" } }), registry = { REGISTRY } })
    local w = {}
    for _, x in ipairs(e:warnings()) do
      if x:find("^modes") then w[#w + 1] = x end
    end
    assert.same({
      'modes["counter/delte_all"]: no tool "delte_all" on server "counter" in the registry (did you mean "delete_all"?); '
        .. "the entry decides nothing",
      'modes["countr"]: no server "countr" in the registry (did you mean "counter"?); the entry decides nothing',
    }, w)
  end)

  describe("which decisions are shadowed", function()
    local r = assert(policy.load(base({ mode = "shadow" }))).shadow
    local function d(t) return decision.from_table(t) end

    it("shadows a reject or a defer of the policy's, never an accept, an always-enforced code or a failure", function()
      assert.is_true(shadow.shadows(r, "s", "t", d({ verdict = "reject", stage = "gate", code = "H4" })))
      assert.is_true(shadow.shadows(r, "s", "t", d({ verdict = "defer", stage = "gate", code = "H4" })))
      assert.is_false(shadow.shadows(r, "s", "t", d({ verdict = "accept", stage = "verifier" })))
      assert.is_false(shadow.shadows(r, "s", "t", d({ verdict = "reject", stage = "rung", code = "H1" })))
      assert.is_false(shadow.shadows(r, "s", "t", d({ verdict = "reject", stage = "pins", code = "PIN_CHANGED" })))
      assert.is_false(shadow.shadows(r, "s", "t", d({ verdict = "reject", stage = "policy", code = "POLICY_ERROR" })))
      -- a quota store that could not count decided nothing either
      assert.is_false(shadow.shadows(r, "s", "t", d({ verdict = "reject", stage = "quota", code = "QUOTA_UNAVAILABLE" })))
      assert.is_false(shadow.shadows(r, "s", "t", d({ verdict = "reject", stage = "decode", code = "BAD_CALL" })))
      assert.is_false(shadow.shadows(nil, "s", "t", d({ verdict = "reject", stage = "gate", code = "H4" })))
    end)

    it("marks a decision enforced = false, keeping every field and the verdict it would have had", function()
      local core = d({ verdict = "reject", stage = "gate", code = "H4", server = "s", tool = "t", message = "m" })
      local m = shadow.mark(core)
      assert.equals("reject", m.verdict)
      assert.equals("H4", m.code)
      assert.equals('{"code":"H4","enforced":false,"message":"m","server":"s","stage":"gate","tool":"t",'
        .. '"verdict":"reject"}', m:json())
      assert.is_nil(core:table().enforced) -- the core's own decision is left as it was
    end)
  end)

  describe("the gateway (toolgate.mcp)", function()
    it("forwards a shadowed H2, H4 and defer as they are, and records each enforced = false", function()
      local gw, route, events = gateway({ mode = "shadow" })
      for i, c in ipairs({ { "echo", '{"message":"hi","x":1}', "H2", "reject" }, { "delete_all", "{}", "H4", "reject" },
        { "write_note", '{"text":"n"}', "H4", "defer" } }) do
        local text = call(i, c[1], c[2])
        local plan = gw:request(route, text)
        assert.is_nil(plan.reply)
        assert.equals(text, plan.forward)
        local ev = last_decision(events)
        assert.same({ false, "shadow", c[4], c[3] }, { ev.enforced, ev.mode, ev.decision.verdict, ev.decision.code })
        assert.matches('"enforced":false', ev.decision:json(), 1, true)
        assert.is_nil(ev.approval_id) -- a shadowed defer asks nobody
        assert.same(json(c[2]), json(ev.arguments.arguments))
        -- the server's answer reaches the client unchanged
        local answer = '{"jsonrpc":"2.0","id":' .. i .. ',"result":{"content":[{"type":"text","text":"ran"}]}}'
        local n = #events
        assert.equals(answer, gw:response(route, plan, answer))
        -- its result: the rung's H2 of the call again is not recorded twice
        if c[3] == "H2" then assert.equals(n, #events) end
      end
      assert.same({}, gw.state:approvals())
    end)

    it("keeps H1 refused in shadow, and an accept carries nothing of shadow's", function()
      local gw, route, events = gateway({ mode = "shadow" })
      local plan = gw:request(route, call(1, "hidden", "{}"))
      assert.is_nil(plan.forward)
      assert.equals(-32602, json(plan.reply).error.code)
      assert.is_nil(last_decision(events).enforced)
      plan = gw:request(route, call(2, "echo", '{"message":"hi"}'))
      assert.is_not_nil(plan.forward)
      local ev = last_decision(events)
      assert.same({ "accept" }, { ev.decision.verdict, ev.enforced, ev.mode })
      assert.is_nil(ev.decision:json():find("enforced", 1, true))
    end)

    it("passes a shadowed result that breaks its outputSchema, recorded", function()
      local gw, route, events = gateway({ modes = { ["counter/add"] = "shadow" } })
      local plan = gw:request(route, call(1, "add", '{"a":1,"b":2}'))
      local broken = '{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"sum":"three"}}}'
      assert.equals(broken, gw:response(route, plan, broken))
      local ev = last_decision(events)
      assert.same({ "result", "CONTRACT_OUTPUT", false, "shadow" }, { ev.phase, ev.decision.code, ev.enforced, ev.mode })
      -- another tool of the server stays enforced
      plan = gw:request(route, call(2, "delete_all", "{}"))
      assert.is_nil(plan.forward)
      assert.is_true(json(plan.reply).result.isError)
    end)

    it("passes a shadowed task's completed result that breaks its outputSchema (tasks/get), recorded", function()
      local gw, route, events = gateway({ modes = { ["counter/add"] = "shadow" } })
      local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
      local plan = gw:request(route, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",'
        .. '"arguments":{"a":1,"b":2},' .. meta .. "}}")
      local created = '{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t1","status":"working"}}'
      assert.equals(created, gw:response(route, plan, created))
      plan = gw:request(route, '{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{' .. meta .. ',"taskId":"t1"}}')
      local done = '{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","taskId":"t1","status":"completed",'
        .. '"result":{"content":[],"structuredContent":{"sum":"three"}}}}'
      assert.equals(done, gw:response(route, plan, done))
      local ev = last_decision(events)
      assert.same({ "result", "CONTRACT_OUTPUT", false, "shadow" }, { ev.phase, ev.decision.code, ev.enforced, ev.mode })
    end)

    it("never takes shadow from a context or a call: only the policy file switches it on", function()
      local gw, route, events = gateway(nil, { scopes = { "counter:read" }, mode = "shadow",
        modes = { counter = "shadow" } })
      for i, text in ipairs({ call(1, "delete_all", "{}"), call(2, "delete_all", "{}", ',"mode":"shadow"'),
        call(3, "delete_all", '{"mode":"shadow"}'), call(4, "delete_all", "{}", ',"_meta":{"mode":"shadow"}') }) do
        local plan = gw:request(route, text)
        assert.is_nil(plan.forward, "call " .. i .. " was forwarded")
        assert.is_true(json(plan.reply).result.isError)
        assert.is_nil(last_decision(events).enforced)
      end
    end)
  end)

  describe("toolgate check", function()
    local calls = table.concat({
      '{"server":"counter","name":"echo","arguments":{"message":"hi"}}',
      '{"server":"counter","name":"delete_all","arguments":{}}',
      '{"server":"counter","name":"hidden","arguments":{}}',
    }, "\n") .. "\n"
    local function check(args, pol)
      local input = h.tmpname(".jsonl")
      h.write_file(input, calls)
      local ctx = h.tmpname(".json")
      h.write_file(ctx, '{"scopes":["counter:read","counter:write"]}')
      local code, out, err = h.toolgate("check --policy " .. (pol or "gateway") .. " --registry "
        .. h.shell_quote(REGISTRY) .. " --context " .. h.shell_quote(ctx) .. " " .. args .. " " .. h.shell_quote(input))
      local ds = {}
      for l in out:gmatch("[^\n]+") do ds[#ds + 1] = json(l) end
      return code, ds, err
    end

    it("--shadow marks each refusal it would let run enforced = false, and exit codes stay as they were", function()
      local code, ds = check("--shadow --fail-on reject")
      assert.equals(1, code) -- --fail-on still counts the would-be rejects
      assert.same({ "accept", "reject", "reject" }, { ds[1].verdict, ds[2].verdict, ds[3].verdict })
      assert.same({ "H4", "H1" }, { ds[2].code, ds[3].code })
      assert.is_nil(ds[1].enforced)
      assert.is_false(ds[2].enforced)
      assert.is_nil(ds[3].enforced) -- H1: always enforced
      code, ds = check("")
      assert.equals(0, code)
      assert.is_nil(ds[2].enforced)
    end)

    it("log --shadow sums up a decision log by server, tool, code and verdict; its usage errors are usage errors",
      function()
      local code, out = h.toolgate("log --shadow --json --file " .. h.shell_quote(root .. "/examples/shadow/decisions.jsonl"))
      assert.equals(0, code)
      local groups = {}
      for l in out:gmatch("[^\n]+") do groups[#groups + 1] = json(l) end
      assert.same({ "write_file", 3, 2 }, { groups[1].tool, groups[1].count, #groups[1].examples })
      assert.equals(3, #groups) -- the accept and the H1 are no group
      -- the example is a log the gateway writes today: every record one the audit schema takes
      assert.equals(0, (h.toolgate("validate --schema " .. h.shell_quote(root .. "/docs/schemas/decision-record.schema.json")
        .. " --lines " .. h.shell_quote(root .. "/examples/shadow/decisions.jsonl"))))
      for _, args in ipairs({ "--shadow --follow", "--file x", "--shadow --file x --state y" }) do
        assert.equals(2, (h.toolgate("log " .. args)))
      end
    end)

    it("marks the decisions of a policy whose mode is shadow the same way", function()
      local p = h.tmpname(".lua")
      h.write_file(p, (h.read_file(root .. "/policies/gateway.lua"):gsub("\nreturn {\n", '\nreturn {\n  mode = "shadow",\n', 1)))
      local code, ds = check("", h.shell_quote(p))
      assert.equals(0, code)
      assert.is_false(ds[2].enforced)
      assert.is_nil(ds[3].enforced)
    end)
  end)
end)
