-- toolgate.core: normalization plans, normalized canonical forms and
-- agreement counting (the C side of the self-consistency gate), through the
-- binding of this interpreter, and the same answers through the other one.
local core = require "toolgate.core"
local h = require "helpers"

local function roots(e, texts)
  local list = {}
  for i, t in ipairs(texts) do list[i] = assert(e:parse(t)):root() end
  return list
end

local FABRICATED = {
  '{"path":"/tmp/a","user_id":"u-1093","mode":"r"}',
  '{"path":"/tmp/a","user_id":"u-2231","mode":"r"}',
  '{"path":"/tmp/a/","user_id":"u-7","mode":"r"}',
  '{"mode":"r","user_id":"u-448","path":"/tmp//a"}',
  '{"path":"/tmp/a","mode":"r","user_id":"u-90"}',
}

describe("toolgate.core normalization and agreement", function()
  local e
  before_each(function() e = assert(core.new_engine()) end)

  it("normalizes the strings a plan's rules select", function()
    local norm = assert(e:norm())
    assert.is_true(norm:add_rule("/path", { "trim", "path" }))
    assert.is_true(norm:add_rule("/user/*/id", { "lower", "id" }))
    assert.is_true(norm:add_alias("alice", "user:17"))
    local node = assert(e:parse('{"path":" /a//b/../c/ ","user":[{"id":"ALICE"},{"id":"Bob","n":"X"}],"K":"V"}')):root()
    assert.equal('{"K":"V","path":"/a/c","user":[{"id":"user:17"},{"id":"bob","n":"X"}]}', node:canon(norm))
    assert.equal('{"K":"V","path":" /a//b/../c/ ","user":[{"id":"ALICE"},{"id":"Bob","n":"X"}]}', node:canon())
    assert.equal(node:canon(), node:canon(nil))
    assert.equal(core.hash_bytes(node:canon(norm)), node:hash(norm))
    assert.equal(core.hash_bytes(node:canon()), node:hash())
    assert.not_equal(node:hash(), node:hash(norm))
  end)

  it("returns nil, message, CODE for bad rules and aliases, and raises on misuse", function()
    local norm = assert(e:norm())
    local ok, msg, code, _ = norm:add_rule("no-slash", { "trim" })
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", code)
    assert.matches("'/'", msg)
    ok, _, code = norm:add_rule("/a~2", { "trim" })
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", code)
    ok, _, code = norm:add_rule("/a", {})
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", code)
    ok, _, code = norm:add_rule("/" .. string.rep("x", 256), { "trim" })
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", code)
    assert.is_true(norm:add_rule("/" .. string.rep("x", 255), { "trim" }))
    assert.is_true(norm:add_rule("/a", { "trim", "trim", "lower" })) -- repeats are one
    assert.is_true(norm:add_alias("a", "b"))
    ok, msg, code = norm:add_alias("a", "c")
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", code)
    assert.matches("another id", msg)
    assert.has_error(function() norm:add_rule("/a", { "upper" }) end)
    assert.has_error(function() norm:add_rule("/a", "trim") end)
    assert.has_error(function() norm:add_rule(1, { "trim" }) end)
    assert.has_error(function() norm:add_rule("/a", { 1 }) end)
    assert.has_error(function() norm:add_alias("a", nil) end)
    local node = assert(e:parse("[1]")):root()
    assert.has_error(function() node:canon({}) end)
    assert.has_error(function() node:hash("trim") end)
  end)

  it("counts agreement of hashes (1-based representative)", function()
    local nodes = roots(e, { '{"a":1}', '{"a":2}', '{"a":1.0}', '{"a":2}', '{"a":1}' })
    local hashes = {}
    for i, n in ipairs(nodes) do hashes[i] = n:hash() end
    assert.same({ n = 5, distinct = 2, modal_count = 3, representative = 1 }, e:agree(hashes))
    assert.same({ n = 1, distinct = 1, modal_count = 1, representative = 1 }, e:agree({ hashes[2] }))
    assert.same({ n = 2, distinct = 1, modal_count = 2, representative = 1 },
                e:agree({ hashes[1], hashes[1]:upper() }))
    local many = {}
    for i = 1, 100 do many[i] = i % 3 == 0 and hashes[2] or core.hash_bytes(tostring(i)) end
    assert.same({ n = 100, distinct = 68, modal_count = 33, representative = 3 }, e:agree(many))
    local ok, msg, code = e:agree({})
    assert.is_nil(ok)
    assert.equal("BAD_ARGUMENT", code)
    assert.is_string(msg)
    assert.has_error(function() e:agree({ "abc" }) end)
    assert.has_error(function() e:agree({ string.rep("g", 32) }) end)
    assert.has_error(function() e:agree({ hashes[1], 42 }) end)
    assert.has_error(function() e:agree("nope") end)
  end)

  it("says which argument was made up", function()
    local nodes = roots(e, FABRICATED)
    local list, total = e:pointer_agreement(nodes, 1, nil, 10)
    assert.equal(3, total)
    assert.same({
      { pointer = "/user_id", agree = 1, present = 5 },
      { pointer = "/path", agree = 3, present = 5 },
      { pointer = "/mode", agree = 5, present = 5 },
    }, list)
    local norm = assert(e:norm())
    assert(norm:add_rule("/path", { "path" }))
    list = e:pointer_agreement(nodes, 1, norm, 10)
    assert.same({ pointer = "/path", agree = 5, present = 5 }, list[3])
    list, total = e:pointer_agreement(nodes, 1, nil, 0)
    assert.same({}, list)
    assert.equal(3, total)
    list, total = e:pointer_agreement(nodes, 2, nil, 1)
    assert.same({ { pointer = "/user_id", agree = 1, present = 5 } }, list)
    assert.equal(3, total)
  end)

  it("returns more than the first 64 pointers when asked", function()
    local texts = {}
    for i = 1, 100 do texts[i] = string.format('{"k%03d":%d,"same":true}', i, i) end
    local nodes = roots(e, texts)
    local list, total = e:pointer_agreement(nodes, 1, nil, 1000)
    assert.equal(101, total)
    assert.equal(101, #list)
    assert.same({ pointer = "/k001", agree = 1, present = 1 }, list[1])
    assert.same({ pointer = "/k002", agree = 99, present = 1 }, list[2])
    assert.same({ pointer = "/same", agree = 100, present = 100 }, list[101])
    list, total = e:pointer_agreement(nodes, 1, nil, 80)
    assert.equal(80, #list)
    assert.equal(101, total)
  end)

  it("raises on misuse of pointer_agreement", function()
    local nodes = roots(e, FABRICATED)
    assert.has_error(function() e:pointer_agreement(nodes, 0, nil, 4) end)
    assert.has_error(function() e:pointer_agreement(nodes, 6, nil, 4) end)
    assert.has_error(function() e:pointer_agreement(nodes, 1.5, nil, 4) end)
    assert.has_error(function() e:pointer_agreement(nodes, 1, nil, -1) end)
    assert.has_error(function() e:pointer_agreement(nodes, 1, nil) end)
    assert.has_error(function() e:pointer_agreement(nodes, 1, {}, 4) end)
    assert.has_error(function() e:pointer_agreement({ nodes[1], "x" }, 1, nil, 4) end)
    assert.has_error(function() e:pointer_agreement({}, 1, nil, 4) end)
    assert.has_error(function() e:pointer_agreement("x", 1, nil, 4) end)
  end)

  it("keeps what nodes and norms need alive, whatever order they are collected in", function()
    local eng = assert(core.new_engine())
    local norm = assert(eng:norm())
    assert(norm:add_rule("", { "lower" }))
    local node = assert(eng:parse('"ABC"')):root() -- the document is only reachable through the node
    local nodes = roots(eng, FABRICATED)
    eng = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.equal('"abc"', node:canon(norm))
    -- nodes of a dropped engine, counted by another: it only lends scratch memory
    assert.equal(3, select(2, e:pointer_agreement(nodes, 1, norm, 1)))
    -- drop everything at once: finalizers run in any order
    node, norm, nodes = nil, nil, nil -- luacheck: ignore
    for _ = 1, 3 do
      local en = assert(core.new_engine())
      local no = assert(en:norm())
      assert(no:add_rule("/*", { "trim" }))
      local _ = en:parse('{"a":" x "}'):root():canon(no)
      en, no = nil, nil -- luacheck: ignore
      collectgarbage()
    end
    collectgarbage()
  end)

  it("gives the same results through both bindings", function()
    local script = h.tmpname(".lua")
    h.write_file(script, [==[
      local core = require "toolgate.core"
      local e = core.new_engine()
      local out = {}
      local function put(...)
        local t = {}
        for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
        out[#out + 1] = table.concat(t, "\t")
      end
      local norm = e:norm()
      put(norm:add_rule("/p", { "trim", "path" }))
      put(norm:add_rule("/u/*", { "lower", "id" }))
      put(norm:add_rule("/bad~", { "trim" }))
      put(norm:add_rule("/x", {}))
      put(norm:add_alias("alice", "user:17"))
      put(norm:add_alias("alice", "user:18"))
      put(norm:add_alias("\255", "x"))
      local texts = {
        '{"p":" /a/./b/ ","u":["ALICE","bob"],"n":1.0}',
        '{"p":"/a/b","u":["alice","Bob"],"n":1}',
        '{"p":"/a//b/","u":["user:17","BOB"],"n":2,"extra":[{}]}',
        '{"p":"a/b","u":["carol"],"n":1e0}',
        '"\\u00e9\\u0000"', '[]', '{"~/":{"0":[1,{"":null}]}}',
      }
      local nodes, hashes, plain = {}, {}, {}
      for i, t in ipairs(texts) do
        nodes[i] = e:parse(t):root()
        hashes[i] = nodes[i]:hash(norm)
        plain[i] = nodes[i]:hash()
        put(nodes[i]:canon(norm), hashes[i], nodes[i]:canon(), plain[i])
      end
      for _, list in ipairs({ hashes, plain, { hashes[1] }, {} }) do
        local a, msg, code = e:agree(list)
        if a then put(a.n, a.distinct, a.modal_count, a.representative) else put(a, msg, code) end
      end
      for rep = 1, #nodes do
        for _, plan in ipairs({ false, norm }) do
          for _, max in ipairs({ 0, 2, 100 }) do
            local list, total = e:pointer_agreement(nodes, rep, plan or nil, max)
            local row = { rep, plan and "norm" or "-", max, total }
            for _, p in ipairs(list) do row[#row + 1] = p.pointer .. "=" .. p.agree .. "/" .. p.present end
            put(table.concat(row, " "))
          end
        end
      end
      for _, bad in ipairs({ function() norm:add_rule("/a", { "upper" }) end,
                             function() e:agree({ "xyz" }) end,
                             function() e:pointer_agreement(nodes, 99, nil, 1) end }) do
        put(pcall(bad) and "no error" or "raised")
      end
      io.write(core.BINDING, "\n", table.concat(out, "\n"), "\n")
    ]==])
    local mine, theirs = h.run_both(script)
    os.remove(script)
    local binding1, rest1 = mine:match("^(%w+)\n(.*)$")
    local binding2, rest2 = theirs:match("^(%w+)\n(.*)$")
    assert.not_equal(binding1, binding2) -- they really were the two bindings
    assert.is_true(select(2, rest1:gsub("\n", "")) > 60)
    assert.equal(rest1, rest2)
  end)
end)
