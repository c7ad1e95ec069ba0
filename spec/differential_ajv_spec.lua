-- Differential test of toolgate's JSON Schema validation against ajv 8 (npm,
-- draft 2020-12, the peer of `make bench`), on tool calls generated from the
-- three registries recorded from real MCP servers (examples/registries).
--
-- bench/gen_mcp_calls.py writes ~2,000 calls (a different seed from the
-- bench's), a quarter of them with exactly one violation, plus the schemas
-- made explicitly closed (additionalProperties: false wherever toolgate's
-- closed world closes an object), which ajv reads.  toolgate decides the same
-- calls as a user of the rung does: an engine whose policy runs the rung
-- alone, on the original MCP registries (closed world by default), each
-- call as a native call line through engine:check.  ajv is the ground truth:
--   * toolgate must never accept a call ajv rejects (every such call is
--     listed in the failure message);
--   * toolgate must not reject a call ajv accepts either: on this corpus
--     there is no principled reason for it (both read numbers as IEEE
--     doubles, neither asserts "format", and the conversion to
--     additionalProperties: false is exact for these schemas, which combine
--     no object schemas in place).
-- Where toolgate does differ from JSON.parse + ajv on purpose (input that
-- JSON.parse accepts but RFC 8259/I-JSON read strictly refuses: a number
-- beyond the double range, a lone surrogate escape, a duplicate key), the
-- last test pins each case, outside the generated corpus.
--
-- The C validator (build/bench/validate_bench --check: tg_parse +
-- tg_validate on the converted schemas) is compared too; the spec builds it
-- with make when it is missing.
--
-- Needs python3, node and bench/node_modules (make test installs them); the
-- tests fail, never skip, without them.
local core = require "toolgate.core"
local toolgate = require "toolgate"
local h = require "helpers"

local SEED, COUNT = 2, 2000
local REG = h.root .. "/examples/registries/"

local function requirements()
  assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
end

local lines_of = h.lines_of

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
end

local function short(s, n)
  n = n or 160
  s = s:gsub("\n", "\\n")
  return #s > n and (s:sub(1, n) .. "... (" .. #s .. " bytes)") or s
end

-- The rung's verdict on calls {tool = "server/name", arguments = "<text>"}.
local engine = assert(toolgate.new({ policy = { name = "rung", version = "1", stages = { "rung" } },
  registry = { REG .. "mcp-everything.json", REG .. "mcp-filesystem.json", REG .. "mcp-memory.json" } }))

local function decide(call)
  local server, name = call.tool:match("^([^/]*)/(.*)$")
  return engine:check('{"server":' .. json_string(server) .. ',"name":' .. json_string(name) ..
    ',"arguments":' .. call.arguments .. "}")
end

-- ajv's verdicts on a calls file (validate_node.js --check), as booleans.
local function ajv_check(schemas, calls_file)
  local code, out, err = h.run("node " .. h.root .. "/bench/peers/validate_node.js --check --schemas " ..
    h.shell_quote(schemas) .. " --calls " .. h.shell_quote(calls_file))
  assert.equal(0, code, "validate_node.js --check failed: " .. err)
  local verdicts = {}
  for _, line in ipairs(lines_of(out)) do verdicts[#verdicts + 1] = line == '{"valid":true}' end
  return verdicts
end

-- The corpus, ajv's verdicts and toolgate's decisions, made once.
local corpus
local function get_corpus()
  if corpus then return corpus end
  requirements()
  local schemas, calls_file = h.tmpname(".json"), h.tmpname(".jsonl")
  local code, text, err = h.run(string.format("python3 %s/bench/gen_mcp_calls.py --seed %d --count %d --schemas-out %s",
    h.root, SEED, COUNT, h.shell_quote(schemas)))
  assert.equal(0, code, "gen_mcp_calls.py failed: " .. err)
  h.write_file(calls_file, text)
  local reader = assert(core.new_engine({ max_input_bytes = 0x7fffffff, max_string_bytes = 0x7fffffff }))
  local calls = {}
  for _, line in ipairs(lines_of(text)) do
    local root = assert(reader:parse(line)):root()
    local mutation = root:get("mutation")
    calls[#calls + 1] = {
      tool = root:get("tool"):value(), arguments = root:get("arguments"):value(),
      expect = root:get("expect"):value(),
      mutation = mutation:type() == "string" and mutation:value() or "none",
    }
  end
  local ajv = ajv_check(schemas, calls_file)
  local decisions = {}
  for i, c in ipairs(calls) do decisions[i] = decide(c) end
  corpus = { schemas = schemas, calls_file = calls_file, calls = calls, ajv = ajv, decisions = decisions }
  return corpus
end

local function describe_call(i, c, extra)
  return string.format("  call %d %s mutation=%s%s\n    arguments %s", i, c.tool, c.mutation,
    extra and (" " .. extra) or "", short(c.arguments))
end

describe("differential against ajv on calls to the real MCP registries", function()
  teardown(function()
    if corpus then
      os.remove(corpus.schemas)
      os.remove(corpus.calls_file)
    end
  end)

  it("has a corpus of ~2,000 calls, a quarter invalid by ajv, on which the generator's expect is ajv's verdict",
    function()
      if not h.npm_peer("ajv", pending) then return end
      local k = get_corpus()
      assert.equal(COUNT, #k.calls)
      assert.equal(COUNT, #k.ajv, "one ajv verdict per call")
      local invalid, wrong = 0, {}
      for i, c in ipairs(k.calls) do
        if not k.ajv[i] then invalid = invalid + 1 end
        if c.expect ~= k.ajv[i] then
          wrong[#wrong + 1] = describe_call(i, c, "expect=" .. tostring(c.expect) .. " ajv=" .. tostring(k.ajv[i]))
        end
      end
      assert.is_true(invalid > COUNT * 0.18 and invalid < COUNT * 0.35, "ajv finds " .. invalid .. " invalid calls")
      assert.equal(0, #wrong, "gen_mcp_calls.py's expect differs from ajv on " .. #wrong .. " calls:\n" ..
        table.concat(wrong, "\n", 1, math.min(#wrong, 40)))
    end)

  it("never accepts a call ajv rejects (the rung in the core)", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    local bad = {}
    for i, c in ipairs(k.calls) do
      if not k.ajv[i] and k.decisions[i].verdict == "accept" then bad[#bad + 1] = describe_call(i, c) end
    end
    assert.equal(0, #bad, "toolgate accepts " .. #bad .. " calls ajv rejects:\n" .. table.concat(bad, "\n"))
  end)

  it("rejects no call ajv accepts (the rung in the core)", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    local bad, accepted = {}, 0
    for i, c in ipairs(k.calls) do
      local d = k.decisions[i]
      if d.verdict == "accept" then accepted = accepted + 1 end
      if k.ajv[i] and d.verdict ~= "accept" then
        bad[#bad + 1] = describe_call(i, c, string.format("toolgate %s %s: %s", d.code, tostring(d.path or ""),
          short(d.message or "", 200)))
      end
    end
    -- disagreements in this direction on the seed-2 corpus: 0
    assert.equal(0, #bad, "toolgate rejects " .. #bad .. " calls ajv accepts:\n" ..
      table.concat(bad, "\n", 1, math.min(#bad, 40)))
    local valid = 0
    for _, v in ipairs(k.ajv) do if v then valid = valid + 1 end end
    assert.equal(valid, accepted)
  end)

  it("gives ajv's verdict on every call at the C level (validate_bench --check)", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    local verdicts = h.validate_bench_check(k.schemas, k.calls_file)
    assert.equal(#k.calls, #verdicts)
    local accepts_invalid, rejects_valid = {}, {}
    for i, c in ipairs(k.calls) do
      local mine = verdicts[i]
      if mine and not k.ajv[i] then accepts_invalid[#accepts_invalid + 1] = describe_call(i, c) end
      if k.ajv[i] and not mine then rejects_valid[#rejects_valid + 1] = describe_call(i, c) end
    end
    assert.equal(0, #accepts_invalid, "tg_validate accepts " .. #accepts_invalid .. " calls ajv rejects:\n" ..
      table.concat(accepts_invalid, "\n"))
    assert.equal(0, #rejects_valid, "tg_validate rejects " .. #rejects_valid .. " calls ajv accepts:\n" ..
      table.concat(rejects_valid, "\n", 1, math.min(#rejects_valid, 40)))
  end)

  -- The principled differences: JSON.parse reads these arguments texts, and
  -- ajv then accepts them; toolgate refuses the text itself, before any
  -- schema (RFC 8259 read strictly, I-JSON; docs/canonical-json.md).  The "__proto__" key
  -- is a control: JSON.parse makes it an own property, so ajv sees it as
  -- an extra key like toolgate does.
  it("differs from JSON.parse + ajv only on input toolgate reads strictly", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    local cases = {
      -- { tool, arguments, ajv valid, toolgate code }
      { "everything/get-sum", '{"a":1e400,"b":1}', true, "NUMBER_OUT_OF_RANGE" }, -- ajv: a = Infinity
      { "everything/echo", '{"message":"\\ud800"}', true, "LONE_SURROGATE" },
      { "everything/echo", '{"message":"a","message":"b"}', true, "DUPLICATE_KEY" }, -- JSON.parse keeps "b"
      { "everything/echo", '{"message":"x","__proto__":{}}', false, "H2" },
    }
    local lines = {}
    for i, c in ipairs(cases) do
      lines[i] = '{"tool":' .. json_string(c[1]) .. ',"arguments":' .. json_string(c[2]) .. "}"
    end
    local file = h.tmpname(".jsonl")
    h.write_file(file, table.concat(lines, "\n") .. "\n")
    local ajv = ajv_check(k.schemas, file)
    os.remove(file)
    for i, c in ipairs(cases) do
      assert.equal(c[3], ajv[i], "ajv on " .. c[2])
      local d = decide({ tool = c[1], arguments = c[2] })
      assert.equal("reject", d.verdict, c[2])
      assert.equal(c[4], d.code, c[2])
    end
  end)
end)
