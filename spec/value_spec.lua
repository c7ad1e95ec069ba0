-- toolgate.value: how Lua values become JSON.
local toolgate = require "toolgate"
local cjson = require "cjson"

describe("toolgate Lua values", function()
  it("maps scalars", function()
    assert.equal("null", toolgate.canon_value(nil))
    assert.equal("null", toolgate.canon_value(toolgate.null))
    assert.equal("null", toolgate.canon_value(cjson.null))
    assert.equal("true", toolgate.canon_value(true))
    assert.equal("0.1", toolgate.canon_value(0.1))
    assert.equal("1e+21", toolgate.canon_value(1e21))
    assert.equal('"\\n\\u0000\\"\\\\é"', toolgate.canon_value('\n\0"\\é'))
  end)

  it("tells arrays, objects and empty tables apart", function()
    assert.equal("[1,2,3]", toolgate.canon_value({ 1, 2, 3 }))
    assert.equal('{"a":1,"b":2}', toolgate.canon_value({ b = 2, a = 1 }))
    assert.equal("{}", toolgate.canon_value({}))
    assert.equal("[]", toolgate.canon_value(toolgate.empty_array))
    assert.equal("[]", toolgate.canon_value(setmetatable({}, toolgate.array_mt)))
    assert.equal('[null,"x"]', toolgate.canon_value({ toolgate.null, "x" }))
    assert.equal('{"a":[],"b":{}}', toolgate.canon_value({ a = toolgate.empty_array, b = {} }))
  end)

  it("refuses what has no JSON form", function()
    local cases = {
      { { [1] = 1, [3] = 3 }, "sparse" },
      { { 1, 2, x = 3 }, "key" },
      { { [true] = 1 }, "key" },
      { function() end, "function" },
      { 0 / 0, "NaN" },
      { math.huge, "NaN" },
    }
    for _, c in ipairs(cases) do
      local ok, msg, code = toolgate.canon_value(c[1])
      assert.is_nil(ok)
      assert.equal("BAD_VALUE", code == "NONFINITE_NUMBER" and "BAD_VALUE" or code)
      assert.is_string(msg)
    end
    local cyclic = {}
    cyclic.self = cyclic
    local ok, msg = toolgate.canon_value(cyclic)
    assert.is_nil(ok)
    assert.matches("cycle", msg)
  end)

  it("rejects invalid UTF-8 in strings like any JSON text", function()
    local ok, _, code = toolgate.canon_value({ s = "\255" })
    assert.is_nil(ok)
    assert.equal("INVALID_UTF8", code)
  end)

  it("hashes equal values equally, whatever the table order", function()
    local a = { x = { 1, 2, { y = "z" } }, n = 1.5, s = "é" }
    local b = { s = "é", n = 1.5, x = { 1, 2, { y = "z" } } }
    assert.equal(toolgate.hash_value(a), toolgate.hash_value(b))
    assert.equal(toolgate.hash('{"n":1.5,"s":"é","x":[1,2,{"y":"z"}]}'), toolgate.hash_value(a))
  end)

  if math.type then
    it("writes Lua 5.4 integers exactly, then reads them as doubles (RFC 8785)", function()
      assert.equal("9007199254740992", toolgate.canon_value(9007199254740993))
      assert.equal("9223372036854776000", toolgate.canon_value(math.maxinteger))
      assert.equal("3", toolgate.canon_value(3))
      assert.equal("3", toolgate.canon_value(3.0))
    end)
  end

  it("writes an exact number box as its text, and copies it as a value", function()
    local value = require "toolgate.value"
    local big = toolgate.exact("12345678901234567890")
    assert.equal(toolgate.exact_mt, getmetatable(big))
    assert.equal('{"n":[12345678901234567890,1]}', toolgate.encode({ n = { big, 1 } }))
    local t = { a = big }
    local c = value.copy(t)
    assert.not_equal(t, c)
    assert.equal(big, c.a)
    assert.equal(toolgate.exact_mt, getmetatable(c.a))
    -- a box whose text is not a JSON number is refused, not written
    local ok, msg, code = toolgate.encode({ n = setmetatable({ text = "1,5" }, toolgate.exact_mt) })
    assert.is_nil(ok)
    assert.equal("BAD_VALUE", code)
    assert.matches("JSON number", msg)
  end)

  it("makes a box only where a double does not spell the number", function()
    assert.equal(0.1, toolgate.exact("0.1"))
    assert.equal(1e21, toolgate.exact("1e21"))
    assert.equal(9007199254740992, toolgate.exact("9007199254740992"))
    for text, form in pairs({ ["9007199254740993"] = "9007199254740993", ["-0.1000000000000000000001"] =
        "-0.1000000000000000000001", ["18446744073709551616"] = "18446744073709551616",
        ["1e-400"] = "1e-400", ["123456789012345678901234e-2"] = "1.23456789012345678901234e+21",
        ["12345678901234567890123e-2"] = "123456789012345678901.23" }) do
      assert.equal(form, tostring(toolgate.exact(text)), text)
    end
    for _, bad in ipairs({ "", "01", "1.", ".5", "+1", "1e", "--1", "1e400", "NaN", "1 ", "0x10" }) do
      local ok, msg, code = toolgate.exact(bad)
      assert.is_nil(ok, bad)
      assert.equal("BAD_VALUE", code, bad)
      assert.is_string(msg)
    end
    assert.has_error(function() toolgate.exact(1) end)
  end)

  it("refuses to order or compute with a box, under both interpreters", function()
    local big = toolgate.exact("12345678901234567890")
    for _, f in ipairs({
      function() return big < 1 end, function() return 1 <= big end, function() return big < big end,
      function() return big + 1 end, function() return -big end, function() return big * 2 end,
      function() return big .. "" end,
    }) do
      assert.has_error(f)
    end
    assert.is_true(big == toolgate.exact("1.2345678901234567890e19"))
    assert.is_false(big == 12345678901234567890)
  end)

  it("gives module-level and codec results alike, with the codec's own limits", function()
    local codec = assert(toolgate.codec({ max_depth = 1 }))
    assert.equal("[1]", codec:canon_value({ 1 }))
    local ok, _, code = codec:canon_value({ { 1 } })
    assert.is_nil(ok)
    assert.equal("TOO_DEEP", code)
    assert.equal("[[1]]", toolgate.canon_value({ { 1 } }))
  end)
end)

describe("the two encoders", function()
  local value = require "toolgate.value"

  -- A random Lua value of depth at most d, from every kind the rules name.
  local function gen(rnd, d)
    local k = rnd(d > 0 and 16 or 9)
    if k == 1 then return nil end
    if k == 2 then return toolgate.null end
    if k == 3 then return rnd(2) == 1 end
    if k == 4 then return rnd(2000) - 1000 end
    if k == 5 then return (rnd(2000) - 1000) / 7 end
    if k == 6 then
      local chars = { "a", "é", "\n", "\0", '"', "\\", "\127", "😀", "\31", "z" }
      local s = {}
      for i = 1, rnd(6) - 1 do s[i] = chars[rnd(#chars)] end
      return table.concat(s)
    end
    if k == 7 then return value.box(({ "12345678901234567890", "0.1000000000000000000001", "9007199254740993" })[rnd(3)]) end
    if k == 8 then return toolgate.empty_array end
    if k == 9 then return ({ 0 / 0, 1 / 0, print, "ok" })[rnd(4)] end
    local t = {}
    if k <= 12 then
      for i = 1, rnd(4) - 1 do t[i] = gen(rnd, d - 1) end
      if k == 12 then setmetatable(t, toolgate.array_mt) end
    elseif k <= 14 then
      for _ = 1, rnd(4) - 1 do t["k" .. rnd(5)] = gen(rnd, d - 1) end
    elseif k == 15 then
      t[1], t[3] = 1, 3 -- sparse
    else
      t[1], t.x = 1, 2 -- mixed
    end
    return t
  end

  it("write every string as the core's canonical form (the Lua encoder is LuaJIT's only one)", function()
    local samples = { "", "plain", "é中😀", "a\127b", string.rep("x", 100) .. '"' }
    for b = 0, 127 do
      samples[#samples + 1] = string.char(b)
      samples[#samples + 1] = "ab" .. string.char(b) .. "cd"
    end
    for _, s in ipairs(samples) do
      assert.equal(toolgate.canon(cjson.encode(s)), value.encode_lua(s), string.format("%q", s))
      assert.equal(toolgate.canon(cjson.encode(s)), value.encode(s), string.format("%q", s))
    end
  end)

  it("give the same JSON, or both refuse, on random values", function()
    math.randomseed(20261201)
    local rnd = function(n) return math.random(1, n) end
    local same, refused = 0, 0
    for _ = 1, 3000 do
      local v = gen(rnd, 4)
      local a, aerr = value.encode_lua(v)
      local b, berr = value.encode(v)
      assert.equal(a == nil, b == nil, tostring(aerr) .. " / " .. tostring(berr))
      if a then
        -- object members come in pairs() order: compare canonical forms
        assert.equal(toolgate.canon(a), toolgate.canon(b))
        same = same + 1
      else
        refused = refused + 1
      end
    end
    assert.is_true(same > 500 and refused > 100)
  end)
end)
