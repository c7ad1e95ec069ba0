-- toolgate.core: the binding for this interpreter, and its twin.
local core = require "toolgate.core"
local h = require "helpers"

describe("toolgate.core", function()
  it("is the FFI binding under LuaJIT and the C-API module under Lua 5.4", function()
    assert.equal(h.is_luajit and "ffi" or "capi", core.BINDING)
    assert.equal("0.1.0", core.VERSION)
  end)

  it("canonicalizes and hashes through an engine", function()
    local e = assert(core.new_engine())
    assert.equal('{"a":2,"b":[1,1e+21]}', e:canon('{"b":[1.0,1e21],"a":2}'))
    assert.equal("dc7048f8f8747f561349cde127705c16", e:hash("{ }"))
  end)

  it("returns nil, message, CODE, offset for bad input", function()
    local e = assert(core.new_engine())
    local ok, msg, code, offset = e:canon('{"a":1,"a":2}')
    assert.is_nil(ok)
    assert.equal("DUPLICATE_KEY", code)
    assert.equal(7, offset)
    assert.matches("duplicate", msg)
    ok, msg, code, offset = e:hash("[1,]")
    assert.is_nil(ok)
    assert.is_string(msg)
    assert.equal("SYNTAX", code)
    assert.equal(3, offset)
  end)

  it("raises on misuse", function()
    local e = assert(core.new_engine())
    assert.has_error(function() e:canon(42) end)
    assert.has_error(function() e:canon() end)
    assert.has_error(function() core.new_engine({ max_depth = "deep" }) end)
    assert.has_error(function() core.new_engine({ no_such_limit = 1 }) end)
    assert.has_error(function() core.new_engine({ max_depth = 1.5 }) end)
    assert.has_error(function() core.format_number("1") end)
  end)

  it("keeps per-engine limits and refuses out-of-range ones", function()
    local defaults = core.default_limits()
    assert.same({ max_input_bytes = 1048576, max_depth = 64, max_string_bytes = 262144,
                  max_members = 4096, max_items = 65536, regex_match_limit = 100000,
                  max_validation_steps = 1000000, max_pattern_bytes = 4096,
                  max_regex_steps = 10000000, max_registry_bytes = 268435456 }, defaults)
    local e = assert(core.new_engine({ max_depth = 2 }))
    assert.equal(2, e:limits().max_depth)
    assert.equal(1048576, e:limits().max_input_bytes)
    local _, _, code = e:canon("[[[]]]")
    assert.equal("TOO_DEEP", code)
    local other = assert(core.new_engine())
    assert.equal('[[[]]]', other:canon("[[[]]]")) -- engines do not share limits
    local ok, msg, c = e:set_limits({ max_items = 0 })
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", c)
    assert.matches("max_items", msg)
    assert.equal(65536, e:limits().max_items)
    assert.is_true(e:set_limits({ max_depth = 3 }))
    assert.equal("[[[]]]", e:canon("[[[]]]"))
    local none, msg2, c2 = core.new_engine({ max_depth = 1001 })
    assert.is_nil(none)
    assert.equal("BAD_ARGUMENT", c2)
    assert.matches("1000", msg2)
  end)

  it("formats numbers as ECMAScript does, NaN and infinities excepted", function()
    assert.equal("0.1", core.format_number(0.1))
    assert.equal("1e+21", core.format_number(1e21))
    assert.equal("0", core.format_number(-0.0))
    local s, _, code = core.format_number(0 / 0)
    assert.is_nil(s)
    assert.equal("NONFINITE_NUMBER", code)
    assert.is_nil(core.format_number(math.huge))
  end)

  it("hashes raw bytes with XXH3-128", function()
    assert.equal("99aa06d3014798d86001c324468d497f", core.hash_bytes(""))
    assert.equal("dc7048f8f8747f561349cde127705c16", core.hash_bytes("{}"))
  end)

  it("declares in its FFI cdef exactly what core/toolgate.h declares", function()
    local header = assert(h.read_file(h.root .. "/core/toolgate.h"))
    local ffi_src = assert(h.read_file(h.root .. "/lua/toolgate/core_ffi.lua"))
    local cdef = assert(ffi_src:match("ffi%.cdef %[%[(.-)%]%]"))
    local function normalize(s)
      return (s:gsub("/%*.-%*/", ""):gsub("TG_API%s+", ""):gsub("%s+", " ")
               :gsub("%[TG_NUMBER_BUF%]", "[32]"):gsub("%[TG_HASH_HEX%]", "[33]")
               :gsub("%[TG_ERROR_POINTER_MAX%]", "[256]"):gsub("%[TG_ERROR_MESSAGE_MAX%]", "[200]")
               :gsub("%[TG_FINDING_POINTER_MAX%]", "[256]"):gsub("%[TG_FINDING_MESSAGE_MAX%]", "[200]")
               :gsub("%[TG_RUNG_MAX_FINDINGS%]", "[16]"))
    end
    local hnorm = normalize(header)
    local count = 0
    for decl in normalize(cdef):gmatch("[^;]+;") do
      decl = decl:gsub("^%s+", "")
      if decl:match("%S") then
        count = count + 1
        local found = hnorm:find(decl, 1, true)
        assert(found, "cdef declaration not in toolgate.h: " .. decl)
      end
    end
    assert.is_true(count > 10)
  end)

  it("gives the same bytes through both bindings", function()
    local inputs = {
      '{"b":[1.5,1e21,-0,0.30000000000000004,9007199254740993],"a":"\\u00e9\\ud83d\\ude00"}',
      '{"\\uffff":1,"\\ud800\\udc00":2,"\\u0000":[null,true,false,{}]}',
      '"\\u001f\\"\\\\/"', "[1e-7,123e-20,5e-324,1.7976931348623157e308]",
      '{"a":1,"a":2}', "[01]", '"\\ud800"', " ",
    }
    local script = h.tmpname(".lua")
    local data = h.tmpname(".txt")
    h.write_file(data, table.concat(inputs, "\n"))
    h.write_file(script, [[
      local core = require "toolgate.core"
      local e = core.new_engine()
      for line in io.lines(arg[1]) do
        local c, _, code, off = e:canon(line)
        local hx = e:hash(line)
        io.write(core.BINDING, "\t", tostring(c or code), "\t", tostring(hx), "\t", tostring(off), "\n")
      end
    ]])
    local mine, theirs = h.run_both(script .. " " .. data)
    os.remove(script)
    os.remove(data)
    local strip = function(s) return (s:gsub("%f[%w](capi)\t", "\t"):gsub("%f[%w](ffi)\t", "\t")) end
    assert.equal(#inputs, select(2, mine:gsub("\n", "")))
    assert.equal(strip(mine), strip(theirs))
    assert.not_equal(mine, theirs) -- they really were the two bindings
  end)

  it("reads documents alike through both bindings (LuaJIT's reads nodes in place)", function()
    -- every accessor on every node of generated documents, written out as
    -- a trace by each interpreter: the FFI binding reads tg_value_t's
    -- fields itself, the C API binding calls tg_dom.c's accessors
    local script, data = h.tmpname(".lua"), h.tmpname(".txt")
    local docs, seed = {}, 7
    local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
    local scalars = { "null", "true", "false", "0", "-0", "1.5", "1e300", "9007199254740993", '"\\u00e9"', '""',
                      '"a\\u0000b"', "12345678901234567890", "-1e-7" }
    local function gen(depth)
      local k = rnd(depth > 3 and 1 or 3)
      if k == 0 then return scalars[rnd(#scalars) + 1] end
      local parts = {}
      for i = 1, rnd(5) do
        parts[i] = k == 1 and gen(depth + 1) or ('"k' .. rnd(9) .. i .. '":' .. gen(depth + 1))
      end
      return k == 1 and ("[" .. table.concat(parts, ",") .. "]") or ("{" .. table.concat(parts, ",") .. "}")
    end
    for i = 1, 300 do docs[i] = gen(0) end
    h.write_file(data, table.concat(docs, "\n"))
    h.write_file(script, [[
      local core = require "toolgate.core"
      local e = core.new_engine()
      local out = {}
      local function walk(n, path)
        local t = n:type()
        out[#out + 1] = table.concat({ path, t, n:len(), n:offset(), tostring(n:value()), tostring(n:text()),
          tostring(n:exact()), tostring(n:at(0)), tostring(n:at(n:len() + 1)), tostring(n:key(n:len() + 1)) }, " ")
        for i = 1, n:len() do
          if t == "object" then walk(n:at(i), path .. "/" .. n:key(i)) end
          if t == "array" then walk(n:at(i), path .. "/" .. i) end
        end
      end
      for line in io.lines(arg[1]) do
        local doc = assert(e:parse(line))
        walk(doc:root(), "")
        doc:free()
      end
      io.write(table.concat(out, "\n"))
    ]])
    local mine, theirs = h.run_both(script .. " " .. data)
    os.remove(script)
    os.remove(data)
    assert.is_true(select(2, mine:gsub("\n", "")) > 1000)
    -- Lua 5.4 prints a float of integral value with ".0", LuaJIT without
    local function norm(s) return (s:gsub("(number %d+ %d+ %-?%d+)%.0 ", "%1 ")) end
    local a, b = h.lines_of(norm(mine)), h.lines_of(norm(theirs))
    assert.equal(#a, #b)
    for i = 1, #a do assert.equal(a[i], b[i], "line " .. i) end
  end)

  it("frees a decider's buffers with it, whatever order the finalizers run in", function()
    -- under LuaJIT the chunk buffer was an object of its own: freed after
    -- the decider and its engine, it read the engine's freed memory
    assert.is_true(h.have("valgrind"), "valgrind is needed (make test installs it)")
    local script = h.tmpname(".lua")
    h.write_file(script, [[
      local core = require "toolgate.core"
      local keep = {}
      for i = 1, 100 do
        local e = core.new_engine()
        local d = e:decider()
        local p = assert(e:registry():policy('{"version":"v","registry_hash":"h","stages":[{"stage":"rung"}],'
          .. '"risk_levels":["x"],"tools":[]}'))
        d:check_lines(p, nil, string.rep('{"name":"a","arguments":{}}\n', 40), 1, 0, 0, 0)
        d:classify_lines(p, nil, nil, string.rep('{"samples":[]}\n', 40), 1, 0, 0, 0)
        keep[i] = { d, p }
      end
      -- the state closes with all of them alive: its own order of finalizers
    ]])
    for _, lua in ipairs({ h.lua, h.other_lua }) do
      local code, _, err = h.run("valgrind -q --error-exitcode=9 " .. lua .. " " .. script)
      assert.equal(0, code, lua .. ": " .. err)
    end
    os.remove(script)
  end)

  it("has_key finds a member name at any depth, through arrays, never in a string or a key's value", function()
    local e = assert(core.new_engine())
    local root = assert(e:parse('{"a":[{"b":{"x-mcp-header":1}}],"s":"x-toolgate-canonical","k":{"v":"id"}}')):root()
    assert.is_true(root:has_key("x-mcp-header"))
    assert.is_true(root:has_key("a"))
    assert.is_true(root:get("a"):has_key("b"))
    assert.is_false(root:has_key("x-toolgate-canonical"))
    assert.is_false(root:has_key("id"))
    assert.is_false(root:get("s"):has_key("s"))
  end)
end)
