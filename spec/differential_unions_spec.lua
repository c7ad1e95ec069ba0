-- Differential test of toolgate's closed world on unions against ajv 8's
-- unevaluatedProperties (npm, draft 2020-12).
--
-- Closed world's rule (docs/rung.md, "Closed world"): a key is declared
-- where a subschema that validated at that instance location evaluates it,
-- which is what "unevaluatedProperties": false on every closed group head
-- says in standard JSON Schema.  bench/gen_unions.py writes union schemas
-- of the shapes Pydantic and zod-to-json-schema emit (anyOf of $refs,
-- discriminated unions, nullable anyOf, anyOf of inline objects with
-- additionalProperties: false, nested unions, allOf with
-- patternProperties, oneOf), each also as that reference schema, and
-- ~2,900 instances: valid ones, and ones with one edit (a key only another
-- branch declares, that key with a bad value, an unknown key, a wrong
-- type, a missing key, ...).  ajv on the reference schemas is the ground
-- truth; toolgate must give its verdict on every instance, through the C
-- validator (build/bench/validate_bench --check) and through the binding of
-- the interpreter running the spec (Lua 5.4 C API or LuaJIT FFI).
--
-- Needs python3, node and bench/node_modules (make test installs them).
local core = require "toolgate.core"
local h = require "helpers"

local SEED = 7

local lines_of = h.lines_of

local corpus
local function get_corpus()
  if corpus then return corpus end
  assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
  local schemas, reference, calls_file = h.tmpname(".json"), h.tmpname(".json"), h.tmpname(".jsonl")
  local code, text, err = h.run(string.format("python3 %s/bench/gen_unions.py --seed %d --schemas-out %s " ..
    "--reference-out %s", h.root, SEED, h.shell_quote(schemas), h.shell_quote(reference)))
  assert.equal(0, code, "gen_unions.py failed: " .. err)
  h.write_file(calls_file, text)
  local acode, aout, aerr = h.run("node " .. h.root .. "/bench/peers/validate_node.js --check --no-inline-refs " ..
    "--schemas " .. h.shell_quote(reference) .. " --calls " .. h.shell_quote(calls_file))
  assert.equal(0, acode, "validate_node.js --check failed: " .. aerr)
  local ajv = {}
  for _, line in ipairs(lines_of(aout)) do ajv[#ajv + 1] = line == '{"valid":true}' end
  local reader = assert(core.new_engine({ max_input_bytes = 0x7fffffff, max_string_bytes = 0x7fffffff }))
  local calls = {}
  for _, line in ipairs(lines_of(text)) do
    local root = assert(reader:parse(line)):root()
    calls[#calls + 1] = { tool = root:get("tool"):value(), arguments = root:get("arguments"):value(),
      mutation = root:get("mutation"):value() }
  end
  corpus = { schemas = schemas, reference = reference, calls_file = calls_file, calls = calls, ajv = ajv,
    schemas_text = h.read_file(schemas) }
  return corpus
end

local function describe_call(i, c, mine, ajv)
  return string.format("  instance %d %s mutation=%s: toolgate %s, ajv %s\n    %s", i, c.tool, c.mutation,
    mine and "valid" or "invalid", ajv and "valid" or "invalid", c.arguments)
end

local function compare(k, verdicts, who)
  local bad = {}
  for i, c in ipairs(k.calls) do
    if verdicts[i] ~= k.ajv[i] then bad[#bad + 1] = describe_call(i, c, verdicts[i], k.ajv[i]) end
  end
  assert.equal(0, #bad, who .. " differs from ajv's unevaluatedProperties on " .. #bad .. " instances:\n" ..
    table.concat(bad, "\n", 1, math.min(#bad, 30)))
end

describe("closed world on unions, differential against ajv's unevaluatedProperties", function()
  teardown(function()
    if corpus then
      os.remove(corpus.schemas)
      os.remove(corpus.reference)
      os.remove(corpus.calls_file)
    end
  end)

  it("has a corpus of every shape and edit, valid and invalid by ajv", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    assert.is_true(#k.calls > 2500, #k.calls .. " instances")
    assert.equal(#k.calls, #k.ajv, "one ajv verdict per instance")
    local by = {}
    for i, c in ipairs(k.calls) do
      local shape = c.tool:match("^(%a+)")
      for _, key in ipairs({ shape, c.mutation }) do
        by[key] = by[key] or { valid = 0, invalid = 0 }
        local t = by[key]
        if k.ajv[i] then t.valid = t.valid + 1 else t.invalid = t.invalid + 1 end
      end
    end
    for _, key in ipairs({ "pydantic", "zod", "nested", "allof", "oneof", "none", "foreign_key", "foreign_bad",
        "unknown_key", "pattern_key", "wrong_type" }) do
      assert.is_truthy(by[key], key)
      assert.is_true(by[key].invalid > 0, key .. ": no instance ajv refuses")
    end
    -- the edit the issue is about: a key only another branch declares
    assert.is_true(by.foreign_key.invalid > 3 * by.foreign_key.valid / 2,
      "foreign_key: " .. by.foreign_key.invalid .. " refused, " .. by.foreign_key.valid .. " accepted")
    assert.is_true(by.none.valid > by.none.invalid, "most unedited instances are valid")
  end)

  it("gives ajv's verdict on every instance at the C level (validate_bench --check)", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    local verdicts = h.validate_bench_check(k.schemas, k.calls_file)
    assert.equal(#k.calls, #verdicts)
    compare(k, verdicts, "tg_validate")
  end)

  it("gives ajv's verdict on every instance through the binding (" .. core.BINDING .. ")", function()
    if not h.npm_peer("ajv", pending) then return end
    local k = get_corpus()
    local e = assert(core.new_engine({ max_input_bytes = 0x7fffffff, max_string_bytes = 0x7fffffff }))
    local sroot = assert(e:parse(k.schemas_text)):root()
    local compiled, verdicts = {}, {}
    for i, c in ipairs(k.calls) do
      local s = compiled[c.tool]
      if not s then
        s = assert(e:compile_schema(assert(sroot:get(c.tool)), { closed = true }))
        compiled[c.tool] = s
      end
      local doc = assert(e:parse(c.arguments))
      local findings = assert(s:validate(doc:root()))
      verdicts[i] = #findings == 0
    end
    compare(k, verdicts, "the " .. core.BINDING .. " binding")
  end)
end)
