-- The adversarial review's fail-open, less-severe-verdict and crash classes
-- that live in the engine, the gate, the verifier, the registry loader, the
-- policy loader and the command line (issue 10; the C core's classes are
-- pinned in spec/c, the sandbox's in spec/sandbox_spec.lua).  Each case
-- failed on the code before its fix.
local toolgate = require "toolgate"
local h = require "helpers"

local REG = h.root .. "/examples/registries/"
local DATA = h.root .. "/spec/data/registries/"

local function decisions(out)
  local list = {}
  for line in out:gmatch("[^\n]+") do
    list[#list + 1] = assert(require("cjson").decode(line))
  end
  return list
end

local function fs_engine(extra)
  local opts = { policy = h.root .. "/policies/mcp.lua", registry = { REG .. "mcp-filesystem.json" },
                 context = { scopes = { "filesystem:read" }, max_risk = "critical" } }
  for k, v in pairs(extra or {}) do opts[k] = v end
  return assert(toolgate.new(opts))
end

local WRITE = { server = "filesystem", name = "write_file", arguments = { path = "/srv/a", content = "x" } }
local GRANT_ALL = { scopes = { "filesystem:write", "filesystem:read" }, max_risk = "critical" }

describe("class 1: a call never grants itself context", function()
  local write_line = '{"server":"filesystem","name":"write_file","arguments":{"path":"/srv/a","content":"x"},'
    .. '"context":{"scopes":["filesystem:write"],"max_risk":"critical"}}'

  it("refuses a call text carrying a context member", function()
    local e = fs_engine()
    local d = e:check(write_line)
    assert.equal("reject", d.verdict)
    assert.equal("CONTEXT_IN_CALL", d.code)
    assert.equal("decode", d.stage)
    -- the same call without the smuggled grant is an ordinary H4
    assert.equal("H4", e:check(WRITE).code)
  end)

  it("refuses a call table carrying a context field, and a table with unknown fields", function()
    local e = fs_engine()
    local t = { server = WRITE.server, name = WRITE.name, arguments = WRITE.arguments, context = GRANT_ALL }
    local d = e:check(t)
    assert.equal("CONTEXT_IN_CALL", d.code)
    assert.equal("reject", d.verdict)
    d = e:check({ server = WRITE.server, name = WRITE.name, args = WRITE.arguments })
    assert.equal("BAD_CALL", d.code)
    assert.matches('"args"', d.message, 1, true)
    d = e:verify(t, '{"content":[]}')
    assert.equal("CONTEXT_IN_CALL", d.code)
  end)

  it("merges a line's context only when the operator trusts the input", function()
    local e = fs_engine({ trust_call_context = true })
    assert.equal("accept", e:check(write_line).verdict)
    local t = { server = WRITE.server, name = WRITE.name, arguments = WRITE.arguments, context = GRANT_ALL }
    assert.equal("accept", e:check(t).verdict)
  end)

  it("toolgate check refuses a line's context unless --line-context", function()
    local ctx = h.tmpname(".json")
    h.write_file(ctx, '{"scopes":["filesystem:read"],"max_risk":"medium"}')
    local base = "cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy mcp --context " .. ctx
      .. " --registry examples/registries/mcp-filesystem.json"
    local code, out = h.run(base, write_line .. "\n")
    assert.equal(0, code)
    local d = decisions(out)[1]
    assert.equal("reject", d.verdict)
    assert.equal("CONTEXT_IN_CALL", d.code)
    code, out = h.run(base .. " --line-context", write_line .. "\n")
    os.remove(ctx)
    assert.equal(0, code)
    assert.equal("accept", decisions(out)[1].verdict)
  end)
end)

describe("class 5: wrong-typed contract fields fail the load", function()
  local function load_native(tool_json)
    local path = h.tmpname(".json")
    h.write_file(path, '{"toolgate":1,"server":"ops","tools":[' .. tool_json .. ']}')
    local e, err, code = toolgate.new({ policy = { name = "t", version = "1" }, registry = { path } })
    os.remove(path)
    return e, err, code
  end
  local base = '"name":"deploy","input_schema":{"type":"object"}'

  for _, case in ipairs({
    { '"contract":{"scopes":"ops:deploy"}', "scopes" },
    { '"contract":{"scopes":{"a":"ops:deploy"}}', "scopes" },
    { '"contract":{"scopes":["ops:deploy",7]}', "scopes" },
    { '"contract":{"effects":"read"}', "effects" },
    { '"effects":{"read":true}', "effects" },
    { '"contract":{"risk":3}', "risk" },
    { '"contract":{"deterministic":"yes"}', "deterministic" },
    { '"scopes":"ops:deploy"', "scopes" },
  }) do
    it("refuses " .. case[1], function()
      local e, err, code = load_native("{" .. base .. "," .. case[1] .. "}")
      assert.is_nil(e)
      assert.equal("BAD_CONTRACT", code)
      assert.matches('"deploy"', err, 1, true)
      assert.matches(case[2], err, 1, true)
    end)
  end

  it("checks what a policy's contract(tool) returns the same way", function()
    local e, err, code = toolgate.new({
      policy = { name = "t", version = "1", contract = function() return { scopes = "filesystem:write" } end },
      registry = { REG .. "mcp-filesystem.json" } })
    assert.is_nil(e)
    assert.equal("BAD_CONTRACT", code)
    assert.matches("scopes", err, 1, true)
    assert.matches("policy contract", err, 1, true)
  end)
end)

describe("class 7: the verifier refuses undeclared effects", function()
  local e = assert(toolgate.new({ policy = { name = "t", version = "1" }, registry = { DATA .. "contracts.json" },
    context = { scopes = { "logs:read", "ops:write" }, max_risk = "critical" } }))

  it("when the tool declares no effects at all", function()
    local d = e:verify({ server = "ops", name = "mystery", arguments = {} }, "{}",
      { observed_effects = { "read", "delete", "network" } })
    assert.equal("reject", d.verdict)
    assert.equal("CONTRACT_EFFECTS", d.code)
    assert.matches('"read"', d.message, 1, true)
  end)

  it("when some observed effect is not among the declared ones", function()
    local d = e:verify({ server = "ops", name = "read_log", arguments = {} }, '{"lines":[]}',
      { observed_effects = { "read", "delete" } })
    assert.equal("CONTRACT_EFFECTS", d.code)
    assert.matches('"delete"', d.message, 1, true)
    assert.equal("accept", e:verify({ server = "ops", name = "read_log", arguments = {} }, '{"lines":[]}',
      { observed_effects = { "read" } }).verdict)
  end)

  it("when the observed effects are not a list of strings", function()
    local d = e:verify({ server = "ops", name = "read_log", arguments = {} }, '{"lines":[]}',
      { observed_effects = "delete" })
    assert.equal("reject", d.verdict)
    assert.equal("CONTRACT_EFFECTS", d.code)
  end)
end)

describe("class 9: a risk order must order something", function()
  it("refuses an empty, non-string or repeated risk order", function()
    for _, levels in ipairs({ {}, { "low", 2 }, { "low", "low" } }) do
      local e, err, code = toolgate.new({ policy = { name = "t", version = "1", gate = { risk_levels = levels } },
        registry = { DATA .. "contracts.json" } })
      assert.is_nil(e, err)
      assert.equal("POLICY_INVALID", code)
      assert.matches("risk_levels", err, 1, true)
    end
  end)

  it("refuses a registry risk outside the order at load, naming the levels", function()
    local path = h.tmpname(".json")
    h.write_file(path, '{"toolgate":1,"server":"ops","tools":[{"name":"x","input_schema":{"type":"object"},'
      .. '"risk":"spicy"}]}')
    local e, err, code = toolgate.new({ policy = { name = "t", version = "1" }, registry = { path } })
    os.remove(path)
    assert.is_nil(e)
    assert.equal("BAD_CONTRACT", code)
    assert.matches('"spicy"', err, 1, true)
    assert.matches("none, low, medium, high, critical", err, 1, true)
  end)

  it("rejects a context whose max_risk is outside the order, naming the levels", function()
    local e = assert(toolgate.new({ policy = { name = "t", version = "1" }, registry = { DATA .. "contracts.json" } }))
    local d = e:check({ server = "ops", name = "read_log", arguments = {} },
      { scopes = { "logs:read" }, max_risk = "extreme" })
    assert.equal("reject", d.verdict)
    assert.equal("H4", d.code)
    assert.matches('"extreme"', d.message, 1, true)
    assert.matches("none, low, medium, high, critical", d.message, 1, true)
  end)

  it("refuses a policy whose own context names a max_risk outside its order", function()
    local e, err, code = toolgate.new({ policy = { name = "t", version = "1", context = { max_risk = "extreme" } },
      registry = { DATA .. "contracts.json" } })
    assert.is_nil(e)
    assert.equal("POLICY_INVALID", code)
    assert.matches('"extreme"', err, 1, true)
  end)
end)

-- A single-tool plan of n identical samples whose results agree in
-- `agree` of them; epochs as given.
local function plan(n, agree, epochs, tool)
  local samples = {}
  for i = 1, n do
    samples[i] = string.format('{"arguments":%s,"result":{"r":%d},"epoch":%s}',
      tool and '{"n":1}' or '{"service":"web"}', i <= agree and 0 or i, epochs and epochs[i] or '"e1"')
  end
  return string.format('{"plan_id":"p","tool":{"server":"ops","name":"%s"},"samples":[%s]}',
    tool or "restart", table.concat(samples, ","))
end

describe("class 11: a reject from any stage wins over a defer from another", function()
  local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency", "gate" } },
    registry = { DATA .. "contracts.json" }, context = { scopes = {}, max_risk = "low" } }))

  for _, case in ipairs({
    { "RESULT_UNSTABLE", plan(10, 7) },
    { "INSUFFICIENT_SAMPLES", plan(3, 3) },
    { "EPOCH_NOT_FIXED", plan(6, 6, { '"a"', '"a"', '"a"', '"b"', '"b"', '"b"' }) },
  }) do
    it("the gate's H4 beats consistency's " .. case[1], function()
      local d = e:classify(case[2])
      assert.equal("reject", d.verdict)
      assert.equal("gate", d.stage)
      assert.equal("H4", d.code)
      assert.is_nil(d.binding) -- nobody is asked to approve what the gate forbids
      assert.same({ "consistency", "defer", case[1] },
        { d.outcomes[1].stage, d.outcomes[1].verdict, d.outcomes[1].code })
      assert.same({ "gate", "reject", "H4" }, { d.outcomes[2].stage, d.outcomes[2].verdict, d.outcomes[2].code })
    end)
  end

  it("in check too: a custom stage's defer does not hide a later reject", function()
    local c = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung",
      { name = "ask", run = function() return { verdict = "defer", code = "ASK" } end }, "gate" } },
      registry = { DATA .. "contracts.json" } }))
    local d = c:check({ server = "ops", name = "restart", arguments = { service = "web" } },
      { scopes = {}, max_risk = "low" })
    assert.equal("reject", d.verdict)
    assert.equal("H4", d.code)
    assert.equal("ASK", d.outcomes[1].code)
  end)
end)

describe("class 12: one epoch rule for both kinds of plan", function()
  local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency" } },
    registry = { DATA .. "contracts.json" } }))

  local function multi(epochs)
    local samples = {}
    for i, ep in ipairs(epochs) do
      samples[i] = string.format('{"epoch":%s,"calls":[{"server":"ops","name":"read_log","arguments":{"n":1}}],'
        .. '"results":[{"lines":[]}]}', ep)
    end
    return '{"plan_id":"m","samples":[' .. table.concat(samples, ",") .. "]}"
  end

  for _, pair in ipairs({ { '"1"', "1" }, { '"[1]"', "[1]" }, { '"true"', "true" } }) do
    it(pair[1] .. " and " .. pair[2] .. " are two epochs in both", function()
      local eps = { pair[1], pair[1], pair[1], pair[2], pair[2], pair[2] }
      assert.equal("EPOCH_NOT_FIXED", e:classify(multi(eps)).code)
      assert.equal("EPOCH_NOT_FIXED", e:classify(plan(6, 6, eps, "read_log")).code)
    end)
  end

  it("equal epochs written differently are one epoch in both", function()
    local eps = { "1", "1.0", "1", "1e0", "1", "10e-1" }
    assert.is_not.equal("EPOCH_NOT_FIXED", e:classify(multi(eps)).code)
    assert.is_not.equal("EPOCH_NOT_FIXED", e:classify(plan(6, 6, eps, "read_log")).code)
  end)
end)

describe("class 13: toolgate writes a decision for every line, whatever it holds", function()
  local function run(args, input)
    return h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate " .. args, input)
  end

  it("a message cut inside a UTF-8 character still encodes", function()
    local key = ("\u{e9}"):rep(40) -- 80 bytes of 2-byte characters: a 64-byte cut splits none...
    local odd = "x" .. ("\u{e9}"):rep(40) -- ...but one byte more puts the cut inside one
    local lines = {}
    for _, k in ipairs({ key, odd }) do
      lines[#lines + 1] = string.format('{"name":"read_text_file","arguments":{"%s":1,"%s":2}}', k, k)
    end
    local code, out, err = run("check --registry filesystem=examples/registries/mcp-filesystem.json",
      table.concat(lines, "\n") .. "\n")
    assert.equal(0, code, err)
    local ds = decisions(out)
    assert.equal(2, #ds)
    for _, d in ipairs(ds) do assert.equal("DUPLICATE_KEY", d.code) end
  end)

  it("an echoed id larger than the input limit, or tight string limits, do not stop the output", function()
    local pol, reg = h.tmpname(".lua"), h.tmpname(".json")
    h.write_file(pol, "return { name = 't', version = '1', stages = { 'rung' }, limits = { max_input_bytes = 600,"
      .. " max_string_bytes = 40 } }")
    h.write_file(reg, '{"toolgate":1,"server":"s","tools":[{"name":"t","input_schema":{"type":"object",'
      .. '"properties":{"a":{"type":"string","pattern":"^abcdefghijklmnopqrstuvwxyz0123$"}}}}]}')
    local id = ("i"):rep(39)
    local input = '{"jsonrpc":"2.0","id":"' .. id .. '","method":"tools/call","params":{"name":"' .. ("n"):rep(39)
      .. '","arguments":{"' .. ("k"):rep(39) .. '":"' .. ("v"):rep(39) .. '"}}}\n'
      .. '{"server":"s","name":"t","arguments":{"a":"x"}}\n'
    local code, out, err = run("check --policy " .. pol .. " --registry " .. reg, input)
    os.remove(pol)
    os.remove(reg)
    assert.equal(0, code, err)
    local ds = decisions(out)
    assert.equal(2, #ds)
    assert.equal("H1", ds[1].code)
    assert.equal(id, ds[1].id)
    assert.equal("H3", ds[2].code)
    assert.is_true(#ds[2].message > 40)
  end)

  it("one output line per input line on a hostile corpus", function()
    local input = table.concat({
      '{"name":"read_text_file","arguments":{"path":"\\ud800"}}',
      '{"name":"read_text_file","arguments":{"path":"' .. ("/"):rep(5000) .. '"}}',
      "[" .. ("["):rep(200),
      '{"jsonrpc":"2.0","id":{"a":[1,2,{"b":null}]},"method":"tools/call","params":{"name":"x"}}',
      "\255\254",
      '"just a string"',
      '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}',
    }, "\n") .. "\n"
    local code, out, err = run("check --registry filesystem=examples/registries/mcp-filesystem.json", input)
    assert.equal(0, code, err)
    local ds = decisions(out)
    assert.equal(7, #ds)
    for i, d in ipairs(ds) do assert.equal(i, d.line) end
  end)
end)

describe("class 3: an unknown call shape is never a call without arguments", function()
  local function everything()
    return assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung" } },
      registry = { REG .. "mcp-everything.json" } }))
  end
  -- both were read as native calls with {} arguments, and accepted (count
  -- defaults to 3), while the executor would run them with count 999
  local langchain = '{"name":"get-resource-links","args":{"count":999},"type":"tool_call","id":"call_1"}'
  local mcp_tool_use = '{"type":"mcp_tool_use","id":"mcptoolu_1","name":"get-resource-links",'
    .. '"server_name":"everything","input":{"count":999}}'

  it("refuses a LangChain tool call, naming the member a native call does not have", function()
    local e = everything()
    local d = e:check(langchain)
    assert.same({ "reject", "decode", "BAD_CALL" }, { d.verdict, d.stage, d.code })
    assert.matches('unknown member "args" in a native call', d.message, 1, true)
    -- with its real arguments the same call is an H3
    assert.equal("H3", e:check('{"name":"get-resource-links","arguments":{"count":999}}').code)
  end)

  it("refuses an Anthropic mcp_tool_use block: Anthropic runs it, not the caller", function()
    local d = everything():check(mcp_tool_use)
    assert.same({ "reject", "UNSUPPORTED_CALL" }, { d.verdict, d.code })
    assert.matches("mcp_tool_use", d.message, 1, true)
  end)

  it("refuses a native call without arguments, or with a member it does not know", function()
    local e = everything()
    local d = e:check('{"name":"get-resource-links"}')
    assert.equal("BAD_CALL", d.code)
    assert.matches('"arguments"', d.message, 1, true)
    d = e:check('{"name":"get-resource-links","arguments":{},"count":999}')
    assert.equal("BAD_CALL", d.code)
    assert.matches('unknown member "count"', d.message, 1, true)
  end)

  it("toolgate check refuses them too", function()
    local code, out = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --fail-on reject"
      .. " --registry examples/registries/mcp-everything.json", langchain .. "\n" .. mcp_tool_use .. "\n")
    assert.equal(1, code)
    local ds = decisions(out)
    assert.same({ "BAD_CALL", "UNSUPPORTED_CALL" }, { ds[1].code, ds[2].code })
  end)
end)

describe("class 4: a line in two formats is never read one way", function()
  -- read as MCP (read_text_file) and accepted, while an OpenAI executor
  -- runs write_file
  local mixed = '{"type":"function","id":"c1","function":{"name":"write_file","arguments":'
    .. '"{\\"path\\":\\"/srv/a\\",\\"content\\":\\"x\\"}"},"jsonrpc":"2.0","method":"tools/call",'
    .. '"params":{"name":"read_text_file","arguments":{"path":"/srv/a"}}}'

  it("refuses OpenAI function with MCP method and params under auto", function()
    local d = fs_engine():check(mixed)
    assert.same({ "reject", "decode", "BAD_CALL" }, { d.verdict, d.stage, d.code })
    assert.matches("members of both an OpenAI tool call", d.message, 1, true)
    assert.matches("refusing to guess", d.message, 1, true)
  end)

  it("refuses Anthropic input with native arguments, and type tool_use with function", function()
    local e = fs_engine()
    for _, line in ipairs({
      '{"type":"tool_use","id":"t","name":"read_text_file","input":{"path":"/a"},"arguments":{"path":"/b"}}',
      '{"type":"tool_use","id":"t","name":"read_text_file","input":{"path":"/a"},'
        .. '"function":{"name":"write_file","arguments":"{}"}}',
      '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"},"method":"tools/call"}',
    }) do
      local d = e:check(line)
      assert.equal("BAD_CALL", d.code, line)
      assert.matches("refusing to guess", d.message, 1, true)
    end
  end)

  it("under an explicit --format, the other format's members are unknown members", function()
    local base = "cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy mcp"
      .. " --registry examples/registries/mcp-filesystem.json --format "
    local code, out = h.run(base .. "openai", mixed .. "\n")
    assert.equal(0, code)
    local d = decisions(out)[1]
    assert.equal("BAD_CALL", d.code)
    assert.matches('unknown member "jsonrpc" in an OpenAI tool call', d.message, 1, true)
    code, out = h.run(base .. "mcp", mixed .. "\n")
    assert.equal(0, code)
    d = decisions(out)[1]
    assert.equal("BAD_CALL", d.code)
    assert.matches('unknown member "function" in an MCP request', d.message, 1, true)
  end)
end)
