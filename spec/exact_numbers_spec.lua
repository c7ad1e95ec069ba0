-- Numbers a double cannot hold (issue #10, class 8): an approval bound to
-- to_account 12345678901234567890 must not cover ...891, which a Python,
-- Go or Java executor reads as another account.  The digests that bind or
-- compare arguments (args_digest, the defer binding, classify's argument
-- agreement) use the canonical form with exact numbers; policy functions
-- see such a number as a box holding its exact text; the RFC 8785 outputs
-- (toolgate canon, toolgate.canon/hash, registry_hash) do not change.
local toolgate = require "toolgate"
local value = require "toolgate.value"
local h = require "helpers"

local BIG, NEXT = "12345678901234567890", "12345678901234567891"

local REGISTRY = [[{"toolgate": 1, "server": "bank", "tools": [
  {"name": "transfer", "deterministic": true, "input_schema": {"type": "object",
    "properties": {"to_account": {"type": "integer"}, "amount": {"type": "number"}},
    "required": ["to_account"]}},
  {"name": "notify", "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}}]}]]

local registry_path = h.tmpname(".json")
h.write_file(registry_path, REGISTRY)

local function engine(fields)
  local p = { name = "exact", version = "1", stages = { "rung" } }
  for k, v in pairs(fields or {}) do p[k] = v end
  return assert(toolgate.new({ policy = p, registry = { "bank=" .. registry_path } }))
end

local function transfer(account, amount)
  return '{"server":"bank","name":"transfer","arguments":{"to_account":' .. account ..
    ',"amount":' .. (amount or "5") .. "}}"
end

local function asks() return "defer", "a person approves transfers" end

describe("exact numbers in argument digests", function()
  it("bind a defer to every digit of an integer beyond 2^53", function()
    local e = engine({ stages = { "rung", "gate" }, gate = { admissible = asks } })
    local a, b = e:check(transfer(BIG)), e:check(transfer(NEXT))
    assert.equal("defer", a.verdict)
    assert.equal("defer", b.verdict)
    assert.not_equal(a.args_digest, b.args_digest)
    assert.not_equal(a.binding.args_digest, b.binding.args_digest)
    assert.equal(a.args_digest, a.binding.args_digest)
  end)

  it("tell apart what a double rounds together, and not what is one decimal", function()
    local e = engine()
    local function digest(account, amount)
      local d = e:check(transfer(account, amount))
      assert.equal("accept", d.verdict, d.message)
      return d.args_digest
    end
    assert.not_equal(digest("9007199254740992"), digest("9007199254740993"))
    assert.not_equal(digest("-9007199254740993"), digest("-9007199254740992"))
    assert.not_equal(digest("18446744073709551616"), digest("18446744073709551617"))
    assert.not_equal(digest("1", "0.1"), digest("1", "0.1000000000000000000001"))
    -- the same decimal in other spellings is the same argument
    assert.equal(digest(BIG), digest("1.2345678901234567890e19"))
    assert.equal(digest(BIG), digest("123456789012345678900e-1"))
    -- ordinary arguments keep their RFC 8785 digests
    assert.equal(toolgate.hash('{"amount":5,"to_account":42}'), digest("42"))
    assert.equal(toolgate.hash('{"amount":1e21,"to_account":1}'), digest("1.0", "1e21"))
    assert.equal(toolgate.hash('{"amount":0.1,"to_account":9007199254740992}'), digest("9007199254740992", "0.1"))
  end)

  it("keep the digits of a table call: a box, or a Lua 5.4 integer", function()
    local e = engine()
    local text = e:check(transfer("9007199254740993")).args_digest
    local rounded = e:check(transfer("9007199254740992")).args_digest
    local boxed = e:check({ server = "bank", name = "transfer",
      arguments = { to_account = value.exact("9007199254740993"), amount = 5 } })
    assert.equal("accept", boxed.verdict, boxed.message)
    assert.equal(text, boxed.args_digest)
    local big = e:check({ server = "bank", name = "transfer",
      arguments = { to_account = toolgate.exact(BIG), amount = 5 } })
    assert.equal(e:check(transfer(BIG)).args_digest, big.args_digest)
    if math.type then -- Lua 5.4: 9007199254740993 is an integer, written with every digit
      local n = 9007199254740993 -- an integer literal under Lua 5.4
      local int = e:check({ server = "bank", name = "transfer", arguments = { to_account = n, amount = 5 } })
      assert.equal(text, int.args_digest)
      assert.not_equal(rounded, int.args_digest)
    end
  end)
end)

describe("exact numbers in self-consistency", function()
  -- n samples, the first `same` with BIG, the rest with NEXT; JSON text, so
  -- the digits reach the engine as written
  local function plan_text(same, n, multi)
    local samples = {}
    for i = 1, n do
      local account = i <= same and BIG or NEXT
      if multi then
        samples[i] = '{"epoch":"e1","calls":[{"server":"bank","name":"notify","arguments":{"to":"ops"}},' ..
          '{"server":"bank","name":"transfer","arguments":{"to_account":' .. account .. "}}]," ..
          '"results":[{"ok":true},{"ok":true}]}'
      else
        samples[i] = '{"epoch":"e1","arguments":{"to_account":' .. account .. '},"result":{"ok":true}}'
      end
    end
    local head = multi and '{"plan_id":"p",' or '{"plan_id":"p","tool":{"server":"bank","name":"transfer"},'
    return head .. '"samples":[' .. table.concat(samples, ",") .. "]}"
  end

  local e = engine({ stages = { "rung", "consistency" } })

  it("count samples differing in the 20th digit as different arguments (one tool, in C)", function()
    local d = e:classify(plan_text(5, 10))
    assert.equal(2, d.distinct_args)
    assert.equal(0.5, d.arg_agreement)
    assert.equal("/to_account", d.disagreeing[1].pointer)
    assert.equal(0.5, d.disagreeing[1].agreement)
    local same = e:classify(plan_text(10, 10))
    assert.equal(1, same.distinct_args)
    local call = transfer(BIG):gsub(',"amount":5', "")
    assert.equal(engine():check(call).args_digest, same.args_digest)
  end)

  it("count them as different arguments in a plan of several calls (in Lua)", function()
    local d = e:classify(plan_text(5, 10, true))
    assert.equal(2, d.distinct_args)
    assert.equal(0.5, d.arg_agreement)
    assert.equal(0.5, d.steps[2].arg_agreement)
    assert.equal("/1/arguments/to_account", d.disagreeing[1].pointer)
  end)
end)

describe("exact numbers in policy functions", function()
  it("reach a custom stage as a box holding the exact text", function()
    local seen = {}
    local e = engine({ stages = { "rung", { name = "look", run = function(call)
      local a = call.arguments
      seen.text, seen.kind, seen.amount = tostring(a.to_account), type(a.to_account), a.amount
      seen.same = a.to_account == call.arguments.to_account
    end } } })
    assert.equal("accept", e:check(transfer("1.2345678901234567890e19")).verdict)
    assert.equal(BIG, seen.text)
    assert.equal("table", seen.kind)
    assert.equal(5, seen.amount) -- a number its double spells stays a Lua number
    assert.is_true(seen.same)
  end)

  it("fail closed when a policy orders or computes with one as a Lua number", function()
    for _, run in ipairs({
      function(call) return call.arguments.to_account > 100 end,
      function(call) return call.arguments.to_account + 0 == 1 end,
    }) do
      local e = engine({ stages = { "rung", { name = "limit", run = run } } })
      local d = e:check(transfer(BIG))
      assert.equal("reject", d.verdict)
      assert.equal("POLICY_ERROR", d.code)
    end
  end)

  it("let a deny list written as texts tell the two accounts apart (docs/policies.md)", function()
    local BLOCKED = { [BIG] = true }
    local e = engine({ stages = { "rung", { name = "blocked", run = function(call)
      if BLOCKED[tostring(call.arguments.to_account)] then return false, "blocked account" end
    end } } })
    assert.equal("reject", e:check(transfer(BIG)).verdict)
    assert.equal("reject", e:check(transfer("1.2345678901234567890e19")).verdict)
    assert.equal("accept", e:check(transfer(NEXT)).verdict)
  end)

  it("compare boxes by value, and a box never equals a Lua number", function()
    local a, b = value.exact(BIG), value.exact("1234567890123456789e1")
    assert.is_true(a == b)
    assert.is_false(a == value.exact(NEXT))
    assert.is_false(a == 12345678901234567890)
    assert.equal(BIG, tostring(a))
    assert.equal(42, value.exact("42.0")) -- its double spells it: a plain number
    local ok, msg, code = value.exact("0x10")
    assert.is_nil(ok)
    assert.equal("BAD_VALUE", code)
    assert.is_string(msg)
  end)
end)

describe("RFC 8785 outputs", function()
  local rounded = "[12345678901234567000,9007199254740992,0.1]"
  local source = "[12345678901234567890,9007199254740993,0.1000000000000000000001]"

  it("do not change: toolgate.canon, toolgate.hash and toolgate canon still round", function()
    assert.equal(rounded, toolgate.canon(source))
    assert.equal(toolgate.hash(rounded), toolgate.hash(source))
    local code, out = h.toolgate("canon", source)
    assert.equal(0, code)
    assert.equal(rounded .. "\n", out)
    -- a box written back is its exact text; RFC 8785 of it rounds as before
    assert.equal('{"a":' .. BIG .. "}", value.encode({ a = value.exact(BIG) }))
    assert.equal('{"a":12345678901234567000}', toolgate.canon_value({ a = value.exact(BIG) }))
  end)

  it("leave registry_hash as it was: a contract's number hashes as its double", function()
    local function snapshot_hash(number)
      local path = h.tmpname(".json")
      h.write_file(path, '{"toolgate":1,"server":"s","tools":[{"name":"t","input_schema":{"type":"object"},' ..
        '"contract":{"limit":' .. number .. "}}]}")
      local e = assert(toolgate.new({ policy = { name = "r", version = "1", stages = { "rung" } },
        registry = { "s=" .. path } }))
      os.remove(path)
      return e:snapshot().hash
    end
    assert.equal(snapshot_hash("12345678901234567000"), snapshot_hash(BIG))
  end)
end)

describe("the exact form and Python's Decimal", function()
  local TABLE = h.root .. "/spec/data/exact_numbers.tsv"

  it("spec/data/exact_numbers.tsv is what its generator writes (the table is checked)", function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    local code, out, err = h.run("python3 " .. h.root .. "/spec/data/gen_exact_numbers.py")
    assert.equal(0, code, err)
    assert.is_true(out == h.read_file(TABLE), "regenerate it: python3 spec/data/gen_exact_numbers.py > " .. TABLE)
  end)

  it("gives every row's form, and box or number as the row says, through this binding", function()
    local e = require("toolgate.core").new_engine()
    local n = 0
    for line in io.lines(TABLE) do
      local literal, form, _, round_trips = line:match("^([^#\t][^\t]*)\t([^\t]+)\t(%d+)\t(%d)$")
      if literal then
        n = n + 1
        local node = assert(e:parse(literal)):root()
        assert.equal(form, node:canon(nil, "exact"), literal)
        assert.equal(round_trips == "0" and form or false, node:exact(), literal)
        local seen = value.exact(literal)
        if round_trips == "0" then
          assert.equal(form, tostring(seen), literal)
        else
          assert.equal("number", type(seen), literal)
        end
      end
    end
    assert.is_true(n > 500)
  end)
end)

describe("the exact form through both bindings", function()
  it("gives the same bytes", function()
    local inputs = {
      '{"a":[' .. BIG .. "," .. NEXT .. ',9007199254740993,-9007199254740993,18446744073709551616]}',
      "[1e21,1e-7,0.1,1.0,-0,0.1000000000000000000001,1.2345678901234567890e19]",
      "[123456789012345678901234567890e-400,1e-1000000000000000000000,5e-324,1.7976931348623157e308]",
    }
    local script, data = h.tmpname(".lua"), h.tmpname(".txt")
    h.write_file(data, table.concat(inputs, "\n"))
    h.write_file(script, [[
      local core = require "toolgate.core"
      local e = core.new_engine()
      for line in io.lines(arg[1]) do
        local root = assert(e:parse(line)):root()
        local exact = {}
        for i = 1, root:len() do
          local v = root:at(i)
          exact[i] = v:type() == "number" and tostring(v:exact()) or v:canon(nil, "exact")
        end
        io.write(root:canon(nil, "exact"), "\t", root:hash(nil, "exact"), "\t", root:canon(), "\t",
          table.concat(exact, " "), "\n")
      end
    ]])
    local mine, theirs = h.run_both(script .. " " .. data)
    os.remove(script)
    os.remove(data)
    assert.equal(mine, theirs)
    local first = mine:match("^[^\t]*")
    assert.equal('{"a":[' .. BIG .. "," .. NEXT .. ',9007199254740993,-9007199254740993,18446744073709551616]}', first)
  end)
end)
