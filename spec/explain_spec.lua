-- --explain: the trace a decision carries (toolgate.explain), checked field
-- by field for each built-in stage, a custom stage and a gate rule of the
-- policy's own; and explain off byte-identical to the decisions recorded
-- before it existed (spec/data/explain/*.expect.jsonl).
local toolgate = require "toolgate"
local cjson = require "cjson"
local h = require "helpers"

local DATA = "spec/data/explain/"
local MCP = "--registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-memory.json"
local RUNS = {
  default = "--policy default --registry policies/tests/ops.json --context " .. DATA .. "ops-context.json "
    .. DATA .. "ops-calls.jsonl",
  strict = "--policy strict --registry policies/tests/ops.json --context " .. DATA .. "ops-context.json "
    .. DATA .. "ops-calls.jsonl",
  rung = "--policy rung --registry policies/tests/ops.json --context " .. DATA .. "ops-context.json "
    .. DATA .. "ops-calls.jsonl",
  mcp = "--policy mcp " .. MCP .. " --context " .. DATA .. "mcp-context.json " .. DATA .. "mcp-calls.jsonl",
  gateway = "--policy gateway " .. MCP .. " --context " .. DATA .. "mcp-context.json " .. DATA .. "mcp-calls.jsonl",
  example = "--policy example --context " .. DATA .. "mcp-context.json " .. DATA .. "mcp-calls.jsonl",
}

local function check(args)
  return h.run("cd " .. h.shell_quote(h.root) .. " && " .. h.lua .. " bin/toolgate check " .. args)
end

-- a policy file's hash in policy_version changes with any edit to it
local function mask(s) return (s:gsub("(@[%w.-]+%+)%x%x%x%x%x%x%x%x%x%x%x%x", "%1<hash>")) end

local function decoded_lines(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do out[#out + 1] = cjson.decode(line) end
  return out
end

describe("check --explain", function()
  for _, name in ipairs({ "default", "strict", "rung", "mcp", "gateway", "example" }) do
    it(name .. ": without it, the decisions are the bytes recorded before --explain existed, on 1 and 4 threads",
      function()
        local want = assert(h.read_file(h.root .. "/" .. DATA .. name .. ".expect.jsonl"))
        for _, threads in ipairs({ 1, 4 }) do
          local code, out, err = check("--threads " .. threads .. " " .. RUNS[name])
          assert.equal(0, code, err)
          assert.equal(mask(want), mask(out))
        end
      end)

    it(name .. ": with it, each decision is the same with a trace of the stages it lists", function()
      local code, out, err = check("--explain " .. RUNS[name])
      assert.equal(0, code, err)
      local plain = decoded_lines(mask(assert(h.read_file(h.root .. "/" .. DATA .. name .. ".expect.jsonl"))))
      local explained = decoded_lines(mask(out))
      assert.equal(#plain, #explained)
      for i, d in ipairs(explained) do
        local trace = d.explain
        d.explain = nil
        assert.same(plain[i], d)
        if d.stages then
          assert.equal(#d.stages, #trace, "line " .. i)
          for k, e in ipairs(trace) do
            assert.equal(d.stages[k], e.stage)
            assert.is_number(e.cpu_us)
            assert.is_table(e.looked_at)
          end
        else
          assert.equal(0, #trace) -- refused at decode: no stage ran
        end
      end
    end)
  end
end)

describe("the explain trace, field by field", function()
  local OPS = h.root .. "/policies/tests/ops.json"
  local RESTART = '{"server":"ops","name":"restart","arguments":{"service":"db"}}'

  local function trace_of(opts, call, ctx)
    opts.explain = true
    local e = assert(toolgate.new(opts))
    local d = e:check(call, ctx)
    return d:table().explain, d
  end

  it("rung, gate (the default rule) and verifier: what each looked at and said", function()
    local t = trace_of({ policy = "default", registry = { OPS } },
      '{"server":"ops","name":"read_log","arguments":{"service":"web"}}', { scopes = { "logs:read" } })
    assert.equal(3, #t)
    assert.same({ stage = "rung", said = "pass", looked_at = { server = "ops", name = "read_log", closed = true,
      resolved = { server = "ops", name = "read_log" } } }, { stage = t[1].stage, said = t[1].said,
      looked_at = t[1].looked_at })
    assert.same({ risk = "low", scopes = { "logs:read" }, max_risk = "medium", granted = { "logs:read" },
      risk_levels = { "none", "low", "medium", "high", "critical" } }, t[2].looked_at)
    assert.equal("pass", t[2].said)
    assert.same({ require_contract = false, has_output_schema = true, effects = { "read" } }, t[3].looked_at)
    assert.equal("pass", t[3].said)
    for _, e in ipairs(t) do
      assert.is_true(e.cpu_us >= 0)
      assert.is_nil(e.instructions) -- built-in stages run in the core
    end
  end)

  it("the gate's reject says its code and message, and the stages after it are not listed", function()
    local t, d = trace_of({ policy = "default", registry = { OPS } }, RESTART, { scopes = { "ops:write" } })
    assert.equal(2, #t)
    assert.same({ verdict = "reject", code = "H4", message = d.message }, t[2].said)
    assert.equal("high", t[2].looked_at.risk)
    assert.equal("medium", t[2].looked_at.max_risk)
  end)

  it("a made-up tool: the rung resolved nothing and said H1", function()
    local t = trace_of({ policy = "default", registry = { OPS } }, '{"server":"ops","name":"nope","arguments":{}}')
    assert.equal(1, #t)
    assert.equal(cjson.null, t[1].looked_at.resolved)
    assert.equal("H1", t[1].said.code)
  end)

  it("a custom stage and the policy's gate rule: what they returned and the instructions they used", function()
    local t = trace_of({ policy = h.root .. "/examples/authoring/oncall.lua" }, RESTART, { incident = "INC-1" })
    assert.equal(3, #t)
    local stage, gate = t[2], t[3]
    assert.equal("no_db_restart", stage.stage)
    assert.same({ { verdict = "defer", message = "restarting the database needs a person" } }, stage.returned)
    assert.same({ verdict = "defer", code = "DB_RESTART", message = "restarting the database needs a person" },
      stage.said)
    assert.equal(cjson.null, stage.looked_at.contract) -- it does not declare reads_contract
    assert.same({ incident = "INC-1", scopes = { "logs:read", "ops:write" } }, stage.looked_at.context)
    assert.equal("gate", gate.stage)
    assert.same({ true }, gate.returned)
    assert.equal("pass", gate.said)
    assert.equal("high", gate.looked_at.contract.risk)
    for _, e in ipairs({ stage, gate }) do
      assert.equal(1000000, e.budget)
      assert.is_true(e.instructions > 0 and e.instructions < 1000, tostring(e.instructions))
    end
  end)

  it("counts the instructions one at a time: a loop of 5000 costs at least 5000", function()
    local pol = {
      name = "loop", version = "1",
      stages = { "rung", { name = "spin", run = function()
        local n = 0
        for i = 1, 5000 do n = n + i end
        return n > 0
      end } },
    }
    local t = trace_of({ policy = pol, registry = { OPS } }, '{"server":"ops","name":"now","arguments":{}}')
    assert.is_true(t[2].instructions >= 5000, tostring(t[2].instructions))
    assert.is_true(t[2].instructions < 100000, tostring(t[2].instructions))
  end)

  it("a policy function that fails: returned is null, the objection is POLICY_ERROR, and the budget still holds",
    function()
      local pol = {
        name = "spin", version = "1", budget = 20000,
        stages = { "rung", { name = "forever", run = function() while true do end end } },
      }
      local t, d = trace_of({ policy = pol, registry = { OPS } }, '{"server":"ops","name":"now","arguments":{}}')
      assert.equal("reject", d.verdict)
      assert.equal("POLICY_ERROR", d.code)
      assert.equal(cjson.null, t[2].returned)
      assert.equal("POLICY_ERROR", t[2].said.code)
      assert.is_true(t[2].instructions >= 20000, tostring(t[2].instructions))
    end)

  it("a message of several calls: a trace per decision, each its own call's", function()
    local e = assert(toolgate.new({ policy = "default", registry = { OPS }, explain = true }))
    local list = e:check_all('{"role":"assistant","content":null,"tool_calls":['
      .. '{"id":"a","type":"function","function":{"name":"read_log","arguments":"{\\"service\\":\\"web\\"}"}},'
      .. '{"id":"b","type":"function","function":{"name":"nope","arguments":"{}"}}]}', { scopes = { "logs:read" } })
    assert.equal(2, #list)
    assert.equal("read_log", list[1]:table().explain[1].looked_at.name)
    assert.equal(3, #list[1]:table().explain)
    assert.equal("nope", list[2]:table().explain[1].looked_at.name)
    assert.equal(1, #list[2]:table().explain)
  end)

  it("is off by default: no trace, and the decision is the core's own text", function()
    local e = assert(toolgate.new({ policy = "default", registry = { OPS } }))
    local d = e:check(RESTART)
    assert.is_nil(d:table().explain)
  end)
end)

describe("toolgate test --explain", function()
  it("prints each failing case's trace, a line per stage", function()
    local _, out = h.run("cd " .. h.shell_quote(h.root) .. " && " .. h.lua .. " bin/toolgate test --explain "
      .. "--policy examples/authoring/oncall-draft.lua examples/authoring/oncall.jsonl")
    local lines = h.lines_of(out)
    assert.equal(9, #lines)
    assert.matches("^examples/authoring/oncall.jsonl:3: a restart during an incident: verdict:", lines[1])
    assert.matches('^  rung: pass %([%d.]+ us%) looked at {"closed":true,"name":"restart"', lines[2])
    assert.matches("^  no_db_restart: pass %([%d.]+ us%) looked at .*; returned %[true%], %d+ of 1000000 instructions$",
      lines[3])
    assert.matches('^  gate: defer H4 .*; returned %["defer","high%-risk tools need an open incident"%], %d+ of',
      lines[4])
    assert.equal("4 passed, 2 failed", lines[9])
  end)
end)

describe("toolgate test --explain, a policy function that fails", function()
  it("its trace line ends with the function's error, with its file and line", function()
    local dir = h.tmpname(".explainfail")
    assert.equal(0, (h.run("mkdir -p " .. h.shell_quote(dir))))
    local policy, cases = dir .. "/owner.lua", dir .. "/cases.jsonl"
    h.write_file(policy, [[
return {
  name = "owner", version = "1",
  stages = {
    "rung",
    { name = "tool_owner", code = "OWNER",
      run = function(call, tool, ctx)
        return tool.owner ~= nil
      end },
  },
}
]])
    h.write_file(cases, '{"call":{"server":"memory","name":"read_graph","arguments":{}},"expect":{"verdict":"accept"}}\n')
    local code, out = h.toolgate("test --explain --policy " .. h.shell_quote(policy) .. " --registry memory="
      .. h.shell_quote(h.root .. "/examples/registries/mcp-memory.json") .. " " .. h.shell_quote(cases))
    h.run("rm -rf " .. h.shell_quote(dir))
    assert.equal(1, code, out)
    local lines = h.lines_of(out)
    assert.equal(4, #lines, out)
    assert.matches("^  rung: pass ", lines[2])
    local head = "  tool_owner: reject POLICY_ERROR ("
    assert.equal(head, lines[3]:sub(1, #head))
    local tail = lines[3]:match("; returned nothing, %d+ of 1000000 instructions: (.*)$")
    assert.is_string(tail, lines[3])
    -- Lua 5.4 goes on "a nil value (local 'tool')", LuaJIT "local 'tool' (a nil value)"
    local want = "policy function failed: " .. policy .. ":7: attempt to index"
    assert.equal(want, tail:sub(1, #want))
  end)
end)
