-- toolgate.engine: the pipeline end to end -- each stage alone and
-- together, the causal gate (H4), the contract verifier, failing closed,
-- defer bindings, and atomic hot reload.
local toolgate = require "toolgate"
local h = require "helpers"

local REG = h.root .. "/examples/registries/"
local DATA = h.root .. "/spec/data/registries/"

local function policy(fields)
  local p = { name = "test", version = "1" }
  for k, v in pairs(fields or {}) do p[k] = v end
  return p
end

local function engine(fields, sources)
  return assert(toolgate.new({ policy = policy(fields), registry = sources or { DATA .. "contracts.json" } }))
end

local function call(name, args, server)
  return { server = server or "ops", name = name, arguments = args or {} }
end

describe("the pipeline", function()
  it("runs the rung alone", function()
    local e = engine({ stages = { "rung" } })
    local d = e:check(call("restart", { service = "web" }))
    assert.equal("accept", d.verdict)
    assert.same({ "rung" }, { d.stages[1], d.stages[2] })
    assert.equal("H1", e:check(call("reboot")).code)
    assert.equal("H2", e:check(call("restart", {})).code)
  end)

  it("runs rung, gate and verifier together; the first reject stops it", function()
    local e = engine()
    local d = e:check(call("read_log", { n = 3 }), { scopes = { "logs:read" }, max_risk = "low" })
    assert.equal("accept", d.verdict)
    assert.equal(3, #d.stages)
    d = e:check(call("read_log", { n = "3" }), { scopes = { "logs:read" }, max_risk = "low" })
    assert.equal("H3", d.code)
    assert.equal("rung", d.stage)
    assert.equal(1, #d.stages) -- nothing after the rung ran
  end)

  it("never calls a stage after a reject: a custom stage that records its calls", function()
    local after = 0
    local e = engine({ stages = { "rung",
      { name = "no", run = function(c) if c.arguments.n == 1 then return false, "not one" end end },
      { name = "after", run = function() after = after + 1 end }, "gate" } })
    local ctx = { scopes = { "logs:read" }, max_risk = "low" }
    local d = e:check(call("read_log", { n = 2 }), ctx)
    assert.same({ "accept", 1 }, { d.verdict, after }) -- it records the calls it gets
    after = 0
    for _, c in ipairs({ call("read_log", { n = 1 }), call("reboot"), call("read_log", { n = "x" }) }) do
      d = e:check(c, ctx)
      assert.equal("reject", d.verdict)
      assert.equal(0, after, d.code)
      assert.equal(d.code == "NO" and 2 or 1, #d.stages, d.code)
    end
  end)

  it("carries policy_version, registry_hash, args_digest and the call id", function()
    local e = engine({ stages = { "rung" } })
    local d = e:check('{"type":"tool_use","id":"toolu_9","name":"read_log","input":{"n":1}}', { server = "ops" })
    assert.equal("accept", d.verdict)
    assert.equal("test@1", d.policy_version)
    assert.equal(e:snapshot().hash, d.registry_hash)
    assert.equal(toolgate.hash('{"n":1}'), d.args_digest)
    assert.equal("toolu_9", d.id)
  end)

  it("rejects what cannot be decoded before any stage runs", function()
    local e = engine()
    local d = e:check('{"name":"read_log","arguments":{"n":1,"n":2}}')
    assert.equal("reject", d.verdict)
    assert.equal("decode", d.stage)
    assert.equal("DUPLICATE_KEY", d.code)
    assert.equal("BAD_CALL", e:check('{"nothing":1}').code)
  end)
end)

describe("lines of several calls", function()
  local function tool_call(id, name, args)
    return string.format('{"id":"%s","type":"function","function":{"name":"%s","arguments":%q}}', id, name, args)
  end
  local chat = '{"object":"chat.completion","id":"x","choices":[{"index":0,"message":{"role":"assistant",'
    .. '"content":null,"tool_calls":[' .. tool_call("c1", "read_log", '{"n":1}') .. ","
    .. tool_call("c2", "reboot", "{}") .. "]}}]}"

  it("check_all decides each call in order, with index, format and id, on one snapshot", function()
    local e = engine({ stages = { "rung" } })
    local ds = e:check_all(chat, { server = "ops" })
    assert.equal(2, #ds)
    assert.same({ "accept", 0, "openai-chat", "c1", "read_log" },
      { ds[1].verdict, ds[1].index, ds[1].format, ds[1].id, ds[1].tool })
    assert.same({ "H1", 1, "openai-chat", "c2" }, { ds[2].code, ds[2].index, ds[2].format, ds[2].id })
    assert.equal(ds[1].registry_hash, ds[2].registry_hash)
    assert.equal(toolgate.hash('{"n":1}'), ds[1].args_digest)
  end)

  it("check refuses a line of several calls, or of none, saying how many and what decides them", function()
    local e = engine({ stages = { "rung" } })
    local d = e:check(chat, { server = "ops" })
    assert.same({ "reject", "decode", "BAD_CALL" }, { d.verdict, d.stage, d.code })
    assert.matches("the text (openai-chat) holds 2 calls", d.message, 1, true)
    assert.matches("check_all", d.message, 1, true)
    local text = '{"type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}]}'
    d = e:check(text)
    assert.equal("BAD_CALL", d.code)
    assert.matches("holds 0 calls", d.message, 1, true)
    local none = e:check_all(text)
    assert.equal(0, #none)
    assert.equal("[]", toolgate.canon_value(none))
  end)

  it("check reads the one call of an envelope", function()
    local e = engine({ stages = { "rung" } })
    local line = '{"type":"message","role":"assistant","content":[{"type":"text","text":"Reading."},'
      .. '{"type":"tool_use","id":"toolu_1","name":"read_log","input":{"n":2}}]}'
    local d = e:check(line, { server = "ops" })
    assert.same({ "accept", "toolu_1", "anthropic-message" }, { d.verdict, d.id, d.format })
    assert.equal(0, d.index)
    assert.equal("native", e:check(call("read_log", { n = 1 })).format)
  end)

  it("check_all gives a line that cannot be decoded, or a table call, one decision", function()
    local e = engine({ stages = { "rung" } })
    local ds = e:check_all('{"object":"chat.completion","choices":[{"message":{"role":"assistant",'
      .. '"tool_calls":[' .. tool_call("c1", "read_log", '{"n":') .. "]}}]}")
    assert.equal(1, #ds)
    assert.same({ "reject", "decode", "BAD_ARGUMENTS" }, { ds[1].verdict, ds[1].stage, ds[1].code })
    assert.is_nil(ds[1].index)
    ds = e:check_all(call("read_log", { n = 1 }))
    assert.same({ 1, "accept", 0, "native" }, { #ds, ds[1].verdict, ds[1].index, ds[1].format })
  end)

  it("refuses the context of an envelope as of any call line, unless the input is trusted", function()
    local line = chat:sub(1, -2) .. ',"context":{"scopes":["logs:read"]}}'
    local ds = engine({ stages = { "rung" } }):check_all(line, { server = "ops" })
    assert.same({ 1, "CONTEXT_IN_CALL", "openai-chat" }, { #ds, ds[1].code, ds[1].format })
    local e = assert(toolgate.new({ policy = policy({ stages = { "rung" } }), registry = { DATA .. "contracts.json" },
      trust_call_context = true }))
    ds = e:check_all(line, { server = "ops" })
    assert.same({ 2, "accept", "H1" }, { #ds, ds[1].verdict, ds[2].code })
  end)
end)

describe("the causal gate (H4)", function()
  local e = engine({ stages = { "rung", "gate" } })

  it("refuses a call whose required scope is not granted", function()
    local d = e:check(call("read_log"), { scopes = {}, max_risk = "critical" })
    assert.equal("H4", d.code)
    assert.equal("gate", d.stage)
    assert.matches('scope "logs:read"', d.message, 1, true)
  end)

  it("refuses a risk above the context's maximum", function()
    local d = e:check(call("restart", { service = "web" }), { scopes = { "ops:write" }, max_risk = "medium" })
    assert.equal("H4", d.code)
    assert.matches('risk "high" is above the allowed "medium"', d.message, 1, true)
    assert.equal("accept", e:check(call("restart", { service = "web" }),
      { scopes = { "ops:write" }, max_risk = "high" }).verdict)
  end)

  it("counts a missing risk as the highest, a missing max_risk as the lowest", function()
    assert.equal("H4", e:check(call("mystery"), { max_risk = "high" }).code)
    assert.equal("accept", e:check(call("mystery"), { max_risk = "critical" }).verdict)
    local d = e:check(call("read_log"), { scopes = { "logs:read" } })
    assert.equal("H4", d.code)
    assert.matches("no max_risk given", d.message, 1, true)
  end)

  it("takes the policy's own admissibility function", function()
    local custom = engine({ stages = { "rung", "gate" }, gate = {
      admissible = function(contract, ctx)
        if ctx.on_call then return true end
        if contract.risk == "high" then return "defer", "needs the on-call engineer" end
        return false, "off hours"
      end,
    } })
    assert.equal("accept", custom:check(call("restart", { service = "x" }), { on_call = true }).verdict)
    local d = custom:check(call("restart", { service = "x" }), {})
    assert.equal("defer", d.verdict)
    assert.equal("H4", d.code)
    assert.equal("needs the on-call engineer", d.message)
    d = custom:check(call("read_log"), {})
    assert.equal("reject", d.verdict)
    assert.equal("off hours", d.message)
  end)
end)

describe("failing closed", function()
  it("turns a policy function's error into POLICY_ERROR, never an accept", function()
    local e = engine({ stages = { "rung", "gate" }, gate = { admissible = function() error("boom") end } })
    local d = e:check(call("read_log"), { scopes = { "logs:read" }, max_risk = "critical" })
    assert.equal("reject", d.verdict)
    assert.equal("POLICY_ERROR", d.code)
    assert.matches("boom", d.message)
    local soft = engine({ stages = { "rung", "gate" }, on_error = "defer",
      gate = { admissible = function() error("boom") end } })
    assert.equal("defer", soft:check(call("read_log"), {}).verdict)
  end)

  it("stops a custom stage that loops forever", function()
    local e = engine({ budget = 100000, stages = { "rung",
      { name = "spin", run = function() while true do end end } } })
    local d = e:check(call("read_log"))
    assert.equal("reject", d.verdict)
    assert.equal("POLICY_ERROR", d.code)
    assert.matches("instruction budget of 100000 exceeded", d.message, 1, true)
  end)

  it("fails closed when a policy file's function reaches for os.execute or io.open", function()
    local path = h.tmpname(".lua")
    h.write_file(path, [[return { name = "evil", version = "1", stages = { "rung",
      { name = "escape", run = function() os.execute("touch /tmp/toolgate-pwned") return true end },
      { name = "read", run = function() return io.open("/etc/passwd") end } } }]])
    local e = assert(toolgate.new({ policy = path, registry = { DATA .. "contracts.json" } }))
    os.remove(path)
    local d = e:check(call("read_log"))
    assert.equal("reject", d.verdict)
    assert.equal("POLICY_ERROR", d.code)
    assert.equal("escape", d.stage)
    assert.is_nil(io.open("/tmp/toolgate-pwned"))
  end)

  it("treats a custom stage's odd return value as an error", function()
    local e = engine({ stages = { "rung", { name = "odd", run = function() return 42 end } } })
    assert.equal("POLICY_ERROR", e:check(call("read_log")).code)
    e = engine({ stages = { "rung", { name = "odd", run = function() return { verdict = "maybe" } end } } })
    assert.equal("POLICY_ERROR", e:check(call("read_log")).code)
  end)
end)

describe("custom stages", function()
  it("see the call's arguments and, when they read it, the contract", function()
    local seen
    local e = engine({ stages = { "rung", { name = "look", reads_contract = true, code = "LOOKED",
      run = function(c, tool, ctx)
        seen = { c.arguments.service, tool.contract.risk, ctx.who }
        return false, "no restarts today"
      end } } })
    local d = e:check(call("restart", { service = "db" }), { who = "ada" })
    assert.same({ "db", "high", "ada" }, seen)
    assert.equal("LOOKED", d.code)
    assert.equal("no restarts today", d.message)
  end)

  it("defer and go on: later stages still run, a later reject wins", function()
    local function defer() return { verdict = "defer", code = "LATER", message = "ask" } end
    local e = engine({ stages = { "rung", { name = "soft", run = defer }, "gate" } })
    local d = e:check(call("read_log"), { scopes = { "logs:read" }, max_risk = "low" })
    assert.equal("defer", d.verdict)
    assert.equal("LATER", d.code)
    assert.same({ "rung", "soft", "gate" }, { d.stages[1], d.stages[2], d.stages[3] })
    d = e:check(call("read_log"), { scopes = {}, max_risk = "low" })
    assert.equal("reject", d.verdict)
    assert.equal("H4", d.code)
  end)

  it("refuses the removed on_defer setting, saying why", function()
    local _, err, code = toolgate.new({ policy = policy({ stages = { "rung",
      { name = "soft", on_defer = "continue", run = function() end } } }), registry = { DATA .. "contracts.json" } })
    assert.equal("POLICY_INVALID", code)
    assert.matches("on_defer was removed", err, 1, true)
    _, err = toolgate.new({ policy = policy({ gate = { on_defer = "stop" } }), registry = { DATA .. "contracts.json" } })
    assert.matches("policy gate: on_defer was removed", err, 1, true)
  end)
end)

describe("defers", function()
  it("are bound to the exact call, policy, registry and epoch", function()
    local e = engine({ stages = { "rung", "gate" }, gate = { admissible = function() return "defer", "ask" end } })
    local d = e:check(call("read_log", { n = 5 }), { epoch = "e7" })
    assert.equal("defer", d.verdict)
    assert.same({
      server = "ops", tool = "read_log", args_digest = toolgate.hash('{"n":5}'),
      policy_version = "test@1", registry_hash = e:snapshot().hash, epoch = "e7",
    }, d.binding)
    assert.is_nil(d.requires_approval)
    local other = e:check(call("read_log", { n = 6 }), { epoch = "e7" })
    assert.not_equal(d.binding.args_digest, other.binding.args_digest)
  end)

  -- a check's defer is written by the core; a verify's is built in Lua
  -- (engine.lua's finish), and must bind the same fields
  it("raised while verifying a result, are bound to the exact call, policy, registry and epoch", function()
    local e = engine({ verifier = { on_mismatch = "defer" } })
    local c = call("read_log", { n = 1 })
    local decode = require("toolgate.json").decode
    local codec = toolgate.codec()
    for _, epoch in ipairs({ "e9", { "run", 2 } }) do
      local ctx = { max_risk = "critical", scopes = { "logs:read" }, epoch = epoch }
      local want = {
        server = "ops", tool = "read_log", args_digest = toolgate.hash('{"n":1}'),
        policy_version = "test@1", registry_hash = e:snapshot().hash, epoch = epoch,
      }
      local _, resolved = e:check_resolved(c, ctx)
      for how, d in pairs({
        table = e:verify(c, '{"lines":[1]}', ctx),
        context = e:verify(c, '{"lines":[1]}', e:context(ctx)),
        resolved = e:verify_resolved(resolved, '{"lines":[1]}', ctx),
      }) do
        assert.equal("defer", d.verdict, how)
        assert.equal("CONTRACT_OUTPUT", d.code, how)
        assert.same(want, d.binding, how)
        assert.same(want, assert(decode(codec.engine, d:json())).binding, how)
      end
    end
  end)

  it("need approval under the strict policy", function()
    local e = assert(toolgate.new({ policy = h.root .. "/policies/strict.lua",
      registry = { DATA .. "contracts.json" } }))
    local d = e:check(call("restart", { service = "web" }), { scopes = { "ops:write" }, max_risk = "critical" })
    assert.equal("accept", d.verdict) -- no defer here: the call is within bounds
    local ok_e = assert(toolgate.new({ policy = policy({ stages = { "rung", "gate" }, defer = { requires_approval = true },
      gate = { admissible = function() return "defer" end } }), registry = { DATA .. "contracts.json" } }))
    assert.is_true(ok_e:check(call("read_log")).requires_approval)
  end)
end)

describe("the contract verifier", function()
  it("checks a native tool's result against its output schema", function()
    local e = engine()
    assert.equal("accept", e:verify(call("read_log", { n = 1 }), { lines = { "a", "b" } }).verdict)
    local d = e:verify(call("read_log", { n = 1 }), '{"lines":[1]}')
    assert.equal("reject", d.verdict)
    assert.equal("CONTRACT_OUTPUT", d.code)
    assert.equal("/lines/0", d.path)
    assert.equal("verifier", d.stage)
  end)

  it("checks declared effects against the effects observed", function()
    local e = engine()
    assert.equal("accept", e:verify(call("restart", { service = "x" }), {}, { observed_effects = { "restart" } }).verdict)
    local d = e:verify(call("restart", { service = "x" }), {}, { observed_effects = { "restart", "delete" } })
    assert.equal("CONTRACT_EFFECTS", d.code)
    assert.matches('"delete"', d.message, 1, true)
  end)

  it("checks an MCP tool's structuredContent, and defers a tool error", function()
    local e = assert(toolgate.new({ policy = policy({ verifier = { on_mismatch = "defer" } }),
      registry = { REG .. "mcp-filesystem.json" } }))
    local c = { server = "filesystem", name = "list_allowed_directories", arguments = {} }
    local good = { content = { { type = "text", text = "/srv" } }, structuredContent = { content = "/srv" } }
    assert.equal("accept", e:verify(c, good).verdict)
    local d = e:verify(c, { content = {}, structuredContent = { content = 7 } })
    assert.equal("defer", d.verdict) -- on_mismatch = "defer"
    assert.equal("CONTRACT_OUTPUT", d.code)
    assert.equal("CONTRACT_OUTPUT", e:verify(c, { content = {} }).code)
    assert.equal("TOOL_ERROR", e:verify(c, { content = {}, isError = true }).code)
  end)

  it("writes each accept as the whole decision would be: its own call's digest, per tool", function()
    local e = engine()
    local value = require "toolgate.value"
    local digests = {}
    for _, c in ipairs({ call("read_log", { n = 1 }), call("read_log", { n = 2 }), call("read_log", { n = 1 }),
                         call("restart", { service = "x" }) }) do
      local d = c.name == "read_log" and e:verify(c, { lines = { "a" } })
        or e:verify(c, {}, { observed_effects = { "restart" } })
      assert.equal("accept", d.verdict)
      local t = d:table()
      local want = { verdict = "accept", stage = "verifier", server = t.server, tool = c.name,
        args_digest = e:check(c, { max_risk = "critical", scopes = { "logs:read", "svc:restart" } }).args_digest,
        policy_version = e:snapshot().version, registry_hash = e:snapshot().hash }
      assert.equal(toolgate.canon(assert(value.encode(want))), d:json())
      digests[#digests + 1] = t.args_digest
    end
    assert.are_not.equal(digests[1], digests[2])
    assert.equal(digests[1], digests[3])
  end)

  it("verifies a call check_resolved let through as verify does, and resolves it again after a reload", function()
    local e = engine()
    local ctx = { max_risk = "critical", scopes = { "logs:read" } }
    local c = call("read_log", { n = 1 })
    local d, resolved = e:check_resolved(c, ctx)
    assert.equal(e:check(c, ctx):json(), d:json())
    assert.is_table(resolved)
    for _, result in ipairs({ { lines = { "a" } }, '{"lines":[1]}', "not json", { lines = {} } }) do
      assert.equal(e:verify(c, result, ctx):json(), e:verify_resolved(resolved, result, ctx):json())
    end
    -- refused calls carry nothing to verify with
    local r, none = e:check_resolved(call("read_log", { n = "x" }), ctx)
    assert.equal("H3", r.code)
    assert.is_nil(none)
    assert.is_nil(select(2, e:check_resolved(call("reboot"), ctx)))
    -- a reload in between: the call is resolved on the snapshot in force
    -- (here the tool moved in the registry and its output schema changed)
    local reg = h.tmpname(".json")
    local function registry(first, item)
      h.write_file(reg, '{"toolgate":1,"server":"ops","tools":[' .. first .. '{"name":"read_log",' ..
        '"input_schema":{"type":"object","properties":{"n":{"type":"integer"}}},"risk":"low",' ..
        '"scopes":["logs:read"],"effects":["read"],"output_schema":{"type":"object","properties":' ..
        '{"lines":{"type":"array","items":{"type":"' .. item .. '"}}},"required":["lines"]}}]}')
    end
    registry("", "string")
    local live = assert(toolgate.new({ policy = policy(), registry = { reg } }))
    local _, held = live:check_resolved(c, ctx)
    registry('{"name":"other","input_schema":{"type":"object"},"output_schema":{"type":"object"},' ..
      '"risk":"low","effects":["read"]},', "integer")
    assert(live:reload())
    local after = live:verify_resolved(held, { lines = { "a" } }, ctx)
    os.remove(reg)
    assert.equal("CONTRACT_OUTPUT", after.code) -- the new schema's verdict, not the old one's
    assert.equal(live:verify(c, { lines = { "a" } }, ctx):json(), after:json())
  end)

  it("does not verify a call the rung refuses", function()
    local e = engine()
    local d = e:verify(call("read_log", { n = "x" }), { lines = {} })
    assert.equal("reject", d.verdict)
    assert.equal("H3", d.code)
    assert.equal("rung", d.stage)
  end)

  it("refuses unverifiable tools when the policy requires a contract", function()
    local e = engine({ verifier = { require_contract = true } })
    local d = e:check(call("mystery"), { max_risk = "critical" })
    assert.equal("UNVERIFIABLE", d.code)
    assert.equal("accept", e:check(call("read_log"), { scopes = { "logs:read" }, max_risk = "low" }).verdict)
  end)
end)

describe("hot reload", function()
  local function policy_file(version, extra)
    local path = h.tmpname(".lua")
    h.write_file(path, string.format([[return { name = "live", version = %q, stages = { "rung" %s } }]],
      version, extra or ""))
    return path
  end

  it("swaps in a new policy and registry, and keeps the old ones when the new fail to load", function()
    local path = policy_file("1")
    local reg = h.tmpname(".json")
    h.write_file(reg, h.read_file(DATA .. "contracts.json"))
    local e = assert(toolgate.new({ policy = path, registry = { reg } }))
    local v1, hash1 = e:check(call("read_log")).policy_version, e:snapshot().hash
    assert.matches("^live@1%+", v1)

    h.write_file(path, "return { name = 'live', version = '2', stages = { 'gate', 'rung' } }")
    local ok, err, code = e:reload()
    assert.is_nil(ok)
    assert.equal("POLICY_ORDER", code)
    assert.is_string(err)
    assert.equal(v1, e:check(call("read_log")).policy_version) -- the old one stays in force

    h.write_file(path, "return { name = 'live', version = '2', stages = { 'rung' } }")
    h.write_file(reg, '{"toolgate":1,"tools":[{"name":"x","input_schema":{"if":{}}}]}')
    ok, err, code = e:reload()
    assert.is_nil(ok)
    assert.is_string(err)
    assert.equal("UNSUPPORTED_KEYWORD", code)
    assert.equal(hash1, e:snapshot().hash)

    h.write_file(reg, (h.read_file(DATA .. "contracts.json"):gsub('"read_log"', '"read_logs"')))
    assert.is_true((e:reload()))
    local d = e:check(call("read_log"))
    assert.equal("H1", d.code)
    assert.matches("^live@2%+", d.policy_version)
    assert.not_equal(hash1, d.registry_hash)
    os.remove(path)
    os.remove(reg)
  end)

  it("never mixes two snapshots in one decision, whatever reloads while it runs", function()
    local path = policy_file("1")
    local reg = h.tmpname(".json")
    h.write_file(reg, h.read_file(DATA .. "contracts.json"))
    local seen, pausing = {}, true
    local e = assert(toolgate.new({ policy = path, registry = { reg },
      observe = function(stage, state)
        if not pausing then return end
        seen[#seen + 1] = state.snap
        coroutine.yield(stage)
      end }))
    -- a stream of decisions, each paused at its stage boundaries, with a
    -- reload between every two steps
    local running, decisions, version = {}, {}, 1
    for i = 1, 6 do
      running[i] = coroutine.create(function() return e:check(call("read_log")) end)
    end
    local active = #running
    while active > 0 do
      active = 0
      for i, co in ipairs(running) do
        if coroutine.status(co) == "suspended" then
          local ok, out = coroutine.resume(co)
          assert.is_true(ok, tostring(out))
          if coroutine.status(co) == "dead" then decisions[i] = out else active = active + 1 end
        end
      end
      version = version + 1
      h.write_file(path, string.format("return { name = 'live', version = '%d', stages = { 'rung' } }", version))
      assert.is_true((e:reload()))
    end
    pausing = false
    assert.equal(6, #decisions)
    for _, d in ipairs(decisions) do
      assert.equal("accept", d.verdict)
      -- one snapshot per decision: the one current when it started
      assert.matches("^live@1%+", d.policy_version)
    end
    for _, snap in ipairs(seen) do assert.matches("^live@1%+", snap.version) end
    assert.matches("^live@" .. version .. "%+", e:check(call("read_log")).policy_version)
    os.remove(path)
    os.remove(reg)
  end)
end)

describe("every shipped policy decides", function()
  local regs = { REG .. "mcp-filesystem.json", REG .. "mcp-memory.json" }
  local read = { server = "filesystem", name = "read_text_file", arguments = { path = "/srv/a" } }
  local write = { server = "filesystem", name = "write_file", arguments = { path = "/srv/a", content = "x" } }
  local ctx = { scopes = { "filesystem:read", "filesystem:write" }, max_risk = "medium" }

  it("default: no contracts in MCP lists, so every tool counts as the highest risk", function()
    local e = assert(toolgate.new({ policy = h.root .. "/policies/default.lua", registry = regs }))
    assert.equal("H4", e:check(read, ctx).code)
    assert.equal("accept", e:check(read, { max_risk = "critical" }).verdict)
  end)

  it("mcp: read-only tools are low risk and need no scope, writes are refused at medium", function()
    local e = assert(toolgate.new({ policy = h.root .. "/policies/mcp.lua", registry = regs }))
    assert.equal("accept", e:check(read, ctx).verdict)
    local d = e:check(write, ctx)
    assert.equal("H4", d.code) -- write_file is destructive by MCP's defaults: high
    assert.equal("accept", e:check(read, { max_risk = "medium" }).verdict) -- no scope granted, none needed
    local t = e:snapshot().registry.by_key["filesystem\0read_text_file"]
    assert.equal("low", t.contract.risk)
    assert.same({}, t.contract.scopes)
  end)

  it("strict: a registry with a collision does not load", function()
    local e, err, code = toolgate.new({ policy = h.root .. "/policies/strict.lua",
      registry = { "web=" .. DATA .. "openai.json", DATA .. "anthropic.json" } })
    assert.is_nil(e)
    assert.equal("REGISTRY_COLLISION", code)
    assert.is_string(err)
  end)

  it("example: its custom stage refuses dotfiles", function()
    local e = assert(toolgate.new({ policy = h.root .. "/policies/example.lua" }))
    local d = e:check({ server = "filesystem", name = "read_text_file", arguments = { path = "/home/a/.ssh" } },
      { scopes = { "filesystem:read" }, max_risk = "medium" })
    assert.equal("DOTFILE", d.code)
    assert.equal("accept", e:check(read, { scopes = { "filesystem:read" }, max_risk = "medium" }).verdict)
  end)
end)

describe("toolgate.new", function()
  local OPENAI = h.root .. "/examples/quickstart/openai-tools.json"

  it("finds a shipped policy by name, as --policy does", function()
    local e = assert(toolgate.new({ policy = "rung", registry = { OPENAI } }))
    assert.matches("^rung@1%+", e:snapshot().version)
    assert.equal("accept", e:check({ name = "get_weather", arguments = { city = "Paris" } }).verdict)
    e = assert(toolgate.new({ policy = "mcp", registry = { REG .. "mcp-filesystem.json" } }))
    assert.matches("^mcp@2%+", e:snapshot().version)
    local _, err, code = toolgate.new({ policy = "nosuch", registry = { OPENAI } })
    assert.equal("POLICY_LOAD", code)
    assert.matches("no shipped policy named 'nosuch'", err, 1, true)
  end)

  it("raises for options of the wrong kind (misuse), never for what a policy or registry holds", function()
    for _, opts in ipairs({
      { registry = OPENAI }, { policy = 42 }, { context = "fs:read" }, { limits = 8 }, { format = 1 },
      { trust_call_context = "yes" }, { report_also = 1 }, { observe = {} }, { state = "memory" },
      { registry = { 42 } }, { registry = { { server = "fs" } } }, { registry = { { path = OPENAI, trusted = "no" } } },
      { registry = { fs = OPENAI } }, { polcy = "rung" },
    }) do
      assert.has_error(function() toolgate.new(opts) end)
    end
    assert.has_error(function() toolgate.new("rung") end)
    -- a policy's mistakes and a registry's are data
    for _, p in ipairs({
      { name = "t", version = "1", registry = { closed = "no" } },
      { name = "t", version = "1", limits = { max_depht = 8 } },
      { name = "t", version = "1", registry = { sources = { { path = OPENAI, trusted = "no" } } } },
      { name = "t", version = "1", stages = "rung" },
    }) do
      local ok, e, err, code = pcall(toolgate.new, { policy = p, registry = { OPENAI } })
      assert.is_true(ok, tostring(e))
      assert.is_nil(e)
      assert.equal("POLICY_INVALID", code, err)
    end
    local ok, e, _, code = pcall(toolgate.new, { policy = "rung", registry = { DATA .. "unsupported.json" } })
    assert.is_true(ok)
    assert.is_nil(e)
    assert.equal("UNSUPPORTED_KEYWORD", code)
  end)

  it("warns, once, of tools the gate refuses only for want of a risk; not where nothing needs one", function()
    local e = assert(toolgate.new({ registry = { OPENAI } }))
    assert.equal(1, #e:warnings())
    assert.matches('2 of 2 tools declare no risk ("get_weather", "send_email")', e:warnings()[1], 1, true)
    for _, opts in ipairs({
      { policy = "rung", registry = { OPENAI } },                              -- no gate
      { policy = policy({ gate = { admissible = function() return true end } }), registry = { OPENAI } }, -- own rule
      { registry = { OPENAI }, context = { max_risk = "critical" } },          -- the highest allowed anyway
      { policy = policy({ contract = function() return { risk = "low" } end }), registry = { OPENAI } },
    }) do
      assert.same({}, assert(toolgate.new(opts)):warnings())
    end
  end)

  it("says a max_risk outside the risk levels is one, wherever it comes from", function()
    local _, err, code = toolgate.new({ policy = policy({ context = { max_risk = "meduim" } }), registry = { OPENAI } })
    assert.equal("POLICY_INVALID", code)
    assert.matches('context.max_risk: "meduim" is not one of the risk levels (none, low, medium, high, critical) '
      .. '(did you mean "medium"?)', err, 1, true)
    local e = assert(toolgate.new({ registry = { OPENAI }, context = { max_risk = "meduim" } }))
    local c = { name = "get_weather", arguments = { city = "Paris" } }
    local trusting = assert(toolgate.new({ registry = { OPENAI }, trust_call_context = true }))
    for _, d in ipairs({ e:check(c), e:check(c, { max_risk = 3 }),
      (trusting:check('{"name":"get_weather","arguments":{"city":"Paris"},"context":{"max_risk":"High"}}')) }) do
      assert.equal("H4", d.code)
      assert.matches("is not one of the policy's risk levels", d.message, 1, true)
      assert.is_nil(d.message:find("no max_risk given", 1, true))
    end
  end)
end)
