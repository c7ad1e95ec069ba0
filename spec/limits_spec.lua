-- Limits (docs/limits.md): every limit, at N and at N + 1, through the
-- engine.  Each exceeded limit has its own code, and the decision it gives
-- is a reject (or a defer where the policy says so), never an accept; a
-- limit on what a registry may hold fails the load instead, so nothing is
-- accepted against it.
local toolgate = require "toolgate"

local REGISTRY = [[{"toolgate": 1, "server": "t", "tools": [
  {"name": "echo", "deterministic": true, "input_schema": {"type": "object", "properties": {
    "s": {"type": "string"}, "o": {"type": "object", "additionalProperties": true},
    "a": {"type": "array"}, "n": {"type": "integer"}}}},
  {"name": "re", "input_schema": {"type": "object", "properties": {
    "s": {"type": "string", "pattern": "^(a+)+$"}}}}
]}]]

local function engine(limits, fields)
  local p = { name = "limits", version = "1", stages = { "rung" } }
  for k, v in pairs(fields or {}) do p[k] = v end
  return toolgate.new({ policy = p, registry = { { text = REGISTRY, label = "limits.json" } }, limits = limits })
end

local function call_text(args_json)
  return '{"server":"t","name":"echo","arguments":' .. args_json .. "}"
end

-- nested(m): m objects inside each other, the innermost {}
local function nested(m)
  return string.rep('{"a":', m) .. "{}" .. string.rep("}", m)
end

local codes = {} -- every limit's code, to check they are all different

local function refused(d, code, verdict)
  assert.equal(verdict or "reject", d.verdict)
  assert.equal(code, d.code)
  assert.is_string(d.message)
  codes[#codes + 1] = code
end

describe("limits", function()
  it("max_input_bytes: a call of N bytes is read, N + 1 is INPUT_TOO_LARGE", function()
    -- (the registry text is read under the same limits: 1000 leaves room for it)
    local e = assert(engine({ max_input_bytes = 1000 }))
    local fill = 1000 - #call_text('{"s":""}')
    local at = call_text('{"s":"' .. string.rep("x", fill) .. '"}')
    assert.equal(1000, #at)
    assert.equal("accept", e:check(at).verdict)
    refused(e:check(call_text('{"s":"' .. string.rep("x", fill + 1) .. '"}')), "INPUT_TOO_LARGE")
  end)

  it("max_depth: nesting N deep is read, N + 1 is TOO_DEEP", function()
    local e = assert(engine({ max_depth = 8 }))
    -- max_depth counts containers inside each other: the call and its
    -- arguments are two, nested(m) as "o" adds m + 1
    assert.equal("accept", e:check(call_text('{"o":' .. nested(5) .. "}")).verdict)
    refused(e:check(call_text('{"o":' .. nested(6) .. "}")), "TOO_DEEP")
    assert.equal("[[[[[[[[]]]]]]]]", toolgate.codec({ max_depth = 8 }):canon("[[[[[[[[]]]]]]]]"))
    assert.equal("TOO_DEEP", select(3, toolgate.codec({ max_depth = 8 }):canon("[[[[[[[[[]]]]]]]]]")))
  end)

  it("max_string_bytes: a string of N bytes is read, N + 1 is STRING_TOO_LONG", function()
    local e = assert(engine({ max_string_bytes = 64 }))
    assert.equal("accept", e:check(call_text('{"s":"' .. string.rep("\\u00e9", 32) .. '"}')).verdict) -- 64 bytes decoded
    refused(e:check(call_text('{"s":"' .. string.rep("\\u00e9", 32) .. 'x"}')), "STRING_TOO_LONG")
  end)

  it("max_members: an object of N members is read, N + 1 is TOO_MANY_MEMBERS", function()
    local e = assert(engine({ max_members = 10 }))
    local function members(k)
      local m = {}
      for i = 1, k do m[i] = '"k' .. i .. '":' .. i end
      return "{" .. table.concat(m, ",") .. "}"
    end
    assert.equal("accept", e:check(call_text('{"o":' .. members(10) .. "}")).verdict)
    refused(e:check(call_text('{"o":' .. members(11) .. "}")), "TOO_MANY_MEMBERS")
  end)

  it("max_items: an array of N items is read, N + 1 is TOO_MANY_ITEMS", function()
    local e = assert(engine({ max_items = 10 }))
    assert.equal("accept", e:check(call_text('{"a":[' .. string.rep("0,", 9) .. "0]}")).verdict)
    refused(e:check(call_text('{"a":[' .. string.rep("0,", 10) .. "0]}")), "TOO_MANY_ITEMS")
  end)

  it("limits apply to an OpenAI call's arguments string too", function()
    local e = assert(engine({ max_depth = 8 }))
    local inner = '{"o":' .. nested(7) .. "}" -- 9 containers, parsed on its own
    local d = e:check(string.format('{"type":"function","function":{"name":"echo","arguments":%q}}', inner),
      { server = "t" })
    assert.equal("reject", d.verdict)
    assert.equal("BAD_ARGUMENTS", d.code)
    assert.matches("TOO_DEEP", d.message)
  end)

  it("regex_match_limit: a match within the budget decides, one beyond it is REGEX_LIMIT", function()
    local e = assert(engine({ regex_match_limit = 10000 }))
    local function re(s) return e:check({ server = "t", name = "re", arguments = { s = s } }) end
    assert.equal("accept", re(string.rep("a", 30)).verdict)
    assert.equal("H3", re("ab").code) -- a quick non-match is a plain H3
    refused(re(string.rep("a", 30) .. "!"), "REGEX_LIMIT") -- catastrophic backtracking
    assert.equal("H3", assert(engine()):check({ server = "t", name = "re",
      arguments = { s = string.rep("a", 12) .. "!" } }).code) -- the default budget decides small cases
  end)

  -- Each match is charged the PCRE2 match limit it finished under: 100
  -- first, then 1,000, 10,000, ... up to regex_match_limit (tg_regex.c).
  -- A limit of its own, with a code of its own (REGEX_LIMIT is one match's).
  it("max_regex_steps: matches within the budget decide, one that would pass it is REGEX_BUDGET", function()
    local function check(limits, s)
      return assert(engine(limits)):check({ server = "t", name = "re", arguments = { s = s } })
    end
    assert.equal("accept", check({ max_regex_steps = 100 }, "aaaa").verdict) -- one match, charged 100
    local d = check({ max_regex_steps = 99 }, "aaaa")
    refused(d, "REGEX_BUDGET")
    assert.matches("max_regex_steps (99)", d.message, 1, true)
    -- a backtracking non-match of a few thousand steps is charged 10,000
    local slow = string.rep("a", 10) .. "!"
    assert.equal("H3", check({ max_regex_steps = 10000 }, slow).code)
    assert.equal("REGEX_BUDGET", check({ max_regex_steps = 9999 }, slow).code)
    -- the default (10,000,000) fits 100 matches that use the whole default match limit
    assert.equal(10000000, require("toolgate.core").default_limits().max_regex_steps)
  end)

  -- The hostile calls of issue #10 (each took 12-15 s before): refused,
  -- and at once (make bench times them: milliseconds).
  it("hostile calls: 65,536 copies of 1 under uniqueItems, 50,000 near-limit pattern matches", function()
    local e = assert(toolgate.new({ policy = { name = "limits", version = "1", stages = { "rung" } },
      registry = { { label = "hostile.json", text = [[{"toolgate": 1, "server": "t", "tools": [
        {"name": "hostile", "input_schema": {"type": "object", "properties": {
          "u": {"type": "array", "uniqueItems": true},
          "p": {"type": "array", "items": {"type": "string", "pattern": "^(\\w+\\s?)*$"}},
          "q": {"type": "array", "items": {"anyOf": [{"pattern": "^(\\w+\\s?)*$"}, {"type": "string"}]}}}}}
      ]}]] } } }))
    local function hostile(args) return e:check('{"server":"t","name":"hostile","arguments":' .. args .. "}") end
    local d = hostile('{"u":[' .. string.rep("1,", 65535) .. "1]}")
    assert.equal("H3", d.code)
    assert.equal("/u", d.path)
    assert.matches("items 0 and 1 are equal", d.message, 1, true)
    local near = string.rep('"aaaaaaaaaaaaaaa!",', 49999) .. '"aaaaaaaaaaaaaaa!"'
    d = hostile('{"p":[' .. near .. "]}") -- each one a finding: the check stops at the 16th
    assert.equal("H3", d.code)
    assert.equal(16, #d.findings)
    d = hostile('{"q":[' .. near .. "]}") -- silent (anyOf): the budget stops it
    assert.equal("reject", d.verdict)
    assert.equal("REGEX_BUDGET", d.code)
    assert.matches("max_regex_steps", d.message, 1, true)
  end)

  it("max_validation_steps: N steps validate, N - 1 is VALIDATION_LIMIT", function()
    local args = '{"s":"x","o":{},"a":[],"n":1}'
    local need
    for steps = 1, 50 do
      local d = assert(engine({ max_validation_steps = steps })):check(call_text(args))
      if d.verdict == "accept" then need = steps break end
      assert.equal("VALIDATION_LIMIT", d.code)
    end
    assert.is_number(need)
    assert.is_true(need > 1)
    refused(assert(engine({ max_validation_steps = need - 1 })):check(call_text(args)), "VALIDATION_LIMIT")
  end)

  it("max_pattern_bytes: a schema pattern of N bytes compiles, N + 1 fails the load with PATTERN_TOO_LONG", function()
    local function reg(len)
      return { text = string.format(
        '{"toolgate":1,"server":"p","tools":[{"name":"x","input_schema":{"type":"object","properties":'
        .. '{"s":{"type":"string","pattern":"%s"}}}}]}', string.rep("a", len)), label = "pattern.json" }
    end
    local p = { name = "p", version = "1", stages = { "rung" } }
    assert.is_truthy(toolgate.new({ policy = p, registry = { reg(4096) } }))
    local e, msg, code = toolgate.new({ policy = p, registry = { reg(4097) } })
    assert.is_nil(e)
    assert.equal("PATTERN_TOO_LONG", code)
    assert.matches("max_pattern_bytes", msg)
    codes[#codes + 1] = code
    -- raised per engine (or per policy: limits = {...})
    assert.is_truthy(toolgate.new({ policy = p, registry = { reg(4097) }, limits = { max_pattern_bytes = 4097 } }))
    local q = { name = "p", version = "1", stages = { "rung" }, limits = { max_pattern_bytes = 16 } }
    assert.is_truthy(toolgate.new({ policy = q, registry = { reg(16) } }))
    assert.equal("PATTERN_TOO_LONG", select(3, toolgate.new({ policy = q, registry = { reg(17) } })))
    -- patternProperties and propertyNames patterns count too
    local pp = { text = '{"toolgate":1,"tools":[{"name":"y","input_schema":{"type":"object",'
      .. '"patternProperties":{"' .. string.rep("b", 17) .. '":{}}}}]}', label = "pp.json" }
    assert.equal("PATTERN_TOO_LONG", select(3, toolgate.new({ policy = q, registry = { pp } })))
  end)

  it("max_samples: a plan of N samples is classified, N + 1 is TOO_MANY_SAMPLES", function()
    local e = assert(engine(nil, { stages = { "rung", "consistency" },
      consistency = { min_samples = 2, max_samples = 6 } }))
    local function plan(n)
      local s = {}
      for i = 1, n do s[i] = '{"arguments":{"n":1},"result":{"ok":true},"epoch":"e1"}' end
      return '{"plan_id":"p","tool":{"server":"t","name":"echo"},"samples":[' .. table.concat(s, ",") .. "]}"
    end
    local d = e:classify(plan(6))
    assert.equal(6, d.n)
    assert.are_not.equal("TOO_MANY_SAMPLES", d.code)
    refused(e:classify(plan(7)), "TOO_MANY_SAMPLES")
    -- the default is 10,000
    assert.equal(10000, assert(engine(nil, { stages = { "rung", "consistency" } })):snapshot()
      .policy.settings.consistency.max_samples)
    -- below min_samples or not whole: the policy does not load
    local bad, _, code = engine(nil, { stages = { "rung", "consistency" },
      consistency = { min_samples = 5, max_samples = 4 } })
    assert.is_nil(bad)
    assert.equal("POLICY_INVALID", code)
  end)

  it("the policy instruction budget: a stage within it runs, one beyond it is POLICY_ERROR", function()
    local function spin(n) return function() local x = 0 for i = 1, n do x = x + i end return true end end
    local ok = assert(engine(nil, { budget = 100000, stages = { "rung", { name = "spin", run = spin(100) } } }))
    assert.equal("accept", ok:check(call_text("{}")).verdict)
    local over = assert(engine(nil, { budget = 100000, stages = { "rung", { name = "spin", run = spin(1e7) } } }))
    refused(over:check(call_text("{}")), "POLICY_ERROR")
    local soft = assert(engine(nil, { budget = 100000, on_error = "defer",
      stages = { "rung", { name = "spin", run = spin(1e7) } } }))
    local d = soft:check(call_text("{}"))
    assert.equal("defer", d.verdict)
    assert.equal("POLICY_ERROR", d.code)
  end)

  it("a result too large to read is never verified", function()
    local e = assert(engine({ max_input_bytes = 1000 }))
    local d = e:verify(call_text("{}"), '{"data":"' .. string.rep("x", 1000) .. '"}')
    assert.equal("reject", d.verdict)
    assert.equal("INPUT_TOO_LARGE", d.code)
  end)

  it("max_registry_bytes: a registry file of N bytes loads past max_input_bytes, N + 1 is REGISTRY_TOO_LARGE", function()
    local p = { name = "limits", version = "1", stages = { "rung" } }
    local function reg(n)
      local head, tail = '{"toolgate": 1, "server": "t", "tools": [{"name": "echo", "description": "', '"}]}'
      return head .. string.rep("d", n - #head - #tail) .. tail
    end
    local path = os.tmpname()
    for _, source in ipairs({ "text", "path" }) do
      local function load(n)
        local text = reg(n)
        if source == "text" then
          return toolgate.new({ policy = p, registry = { { text = text } },
            limits = { max_input_bytes = 1000, max_registry_bytes = 5000 } })
        end
        local f = assert(io.open(path, "wb"))
        f:write(text)
        f:close()
        return toolgate.new({ policy = p, registry = { path }, limits = { max_input_bytes = 1000, max_registry_bytes = 5000 } })
      end
      local e = assert(load(5000))
      -- calls keep their own limit
      assert.equal("INPUT_TOO_LARGE", e:check(call_text('{"s":"' .. string.rep("x", 1000) .. '"}')).code)
      local none, msg, code = load(5001)
      assert.is_nil(none)
      assert.equal("REGISTRY_TOO_LARGE", code)
      assert.matches("max_registry_bytes (5000)", msg, 1, true)
    end
    os.remove(path)
    assert.is_true(require("toolgate.core").default_limits().max_registry_bytes >= 256 * 1024 * 1024)
  end)

  it("max_input_bytes bounds calls, not what a registry's load builds from its tools (registry_hash, the policy)",
    function()
      local tools = {}
      for i = 1, 200 do
        tools[i] = string.format('{"name":"t%d","risk":"low","input_schema":{"type":"object","properties":{"a":'
          .. '{"type":"string"}}}}', i)
      end
      local text = '{"toolgate":1,"server":"s","tools":[' .. table.concat(tools, ",") .. "]}"
      local small = assert(toolgate.new({ policy = "default", registry = { { text = text } },
        limits = { max_input_bytes = 2000 } }))
      local big = assert(toolgate.new({ policy = "default", registry = { { text = text } } }))
      assert.equal(big:snapshot().hash, small:snapshot().hash)
      local call = '{"server":"s","name":"t7","arguments":{"a":"x"}}'
      assert.equal(big:check(call).verdict, small:check(call).verdict)
    end)

  it("refuses limits outside their range, naming the limit", function()
    for _, bad in ipairs({ { max_depth = 0 }, { max_depth = 1001 }, { max_input_bytes = 2 ^ 31 },
        { regex_match_limit = 2 ^ 32 }, { max_pattern_bytes = 0 }, { max_validation_steps = 0 },
        { max_regex_steps = 0 }, { max_regex_steps = 2 ^ 32 }, { max_registry_bytes = 0 },
        { max_registry_bytes = 2 ^ 31 } }) do
      local e, msg, code = engine(bad)
      assert.is_nil(e)
      assert.equal("BAD_ARGUMENT", code)
      assert.matches((next(bad)), msg, 1, true)
    end
  end)

  it("gives every limit its own code", function()
    local seen = {}
    for _, c in ipairs(codes) do
      assert.is_nil(seen[c], c .. " is used by two limits")
      seen[c] = true
    end
    assert.equal(11, #codes)
  end)
end)
