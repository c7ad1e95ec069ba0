-- toolgate.quota: the quota stage's predicates and rules, the policy's
-- checks of them, and the stage in the engine (in memory, as toolgate
-- check counts): a call past its limit is QUOTA with limit, window and
-- retry_after; a refused or deferred call spends nothing.  The stores'
-- counts are spec/state_contract.lua's; the gateway's, spec/quota_e2e_spec.lua.
local h = require "helpers"
local core = require "toolgate.core"
local json = require "toolgate.json"
local policy = require "toolgate.policy"
local quota = require "toolgate.quota"
local state = require "toolgate.state"
local toolgate = require "toolgate"

local e = assert(core.new_engine())
local docs = {} -- (the parsed documents live as long as the spec)

local function args(text)
  local doc = assert(e:parse(text))
  docs[#docs + 1] = doc
  return doc:root()
end

local function test(where, text)
  local t = assert(quota.predicate(where))
  return t(args(text))
end

describe("toolgate.quota predicates", function()
  it("compare numbers by their exact value, however many digits", function()
    assert.is_true(test("/amount > 1000", '{"amount": 1000.5}'))
    assert.is_false(test("/amount > 1000", '{"amount": 1000}'))
    assert.is_true(test("/amount >= 1000", '{"amount": 1e3}'))
    assert.is_true(test("/amount == 1000", '{"amount": 1000.000}'))
    assert.is_false(test("/amount < -1", '{"amount": -0.5}'))
    assert.is_true(test("/amount < 0.1", '{"amount": 0.09999999999999999999999}'))
    -- past 2^53 a double cannot tell them apart; the predicate does
    assert.is_true(test("/n > 9007199254740992", '{"n": 9007199254740993}'))
    assert.is_false(test("/n != 12345678901234567890123", '{"n": 12345678901234567890123}'))
    assert.is_true(test("/n < 12345678901234567890124", '{"n": 12345678901234567890123}'))
  end)

  it("compare strings by their bytes, and true, false and null by ==, !=", function()
    assert.is_true(test('/to == "acme"', '{"to": "acme"}'))
    assert.is_true(test('/to != "acme"', '{"to": "acme-2"}'))
    assert.is_true(test('/to >= "b"', '{"to": "bz"}'))
    assert.is_true(test('/to == "a\\"b"', '{"to": "a\\"b"}'))
    assert.is_true(test("/urgent == true", '{"urgent": true}'))
    assert.is_false(test("/urgent == true", '{"urgent": false}'))
    assert.is_true(test("/memo != null", '{"memo": "x"}'))
  end)

  it("follow a JSON pointer into objects and arrays; a value that is absent does not apply", function()
    assert.is_true(test("/to/amounts/1 > 5", '{"to": {"amounts": [1, 7]}}'))
    assert.is_true(test("/a~1b > 5", '{"a/b": 6}'))
    assert.is_nil(test("/amount > 1000", '{"other": 5000}'))
    assert.is_nil(test("/to/amounts/2 > 5", '{"to": {"amounts": [1, 7]}}'))
    assert.is_nil(test("/to/x > 5", '{"to": [1]}'))
  end)

  it("hold for a value of another kind than the literal's (a quota counts when in doubt)", function()
    assert.is_true(test("/amount > 1000", '{"amount": "5"}'))
    assert.is_true(test('/to == "acme"', '{"to": 7}'))
  end)

  it("refuse what is not POINTER OP LITERAL, with a message", function()
    for _, bad in ipairs({ "amount > 1000", "/amount >> 1000", "/amount > 01", "/amount > 1e", "/amount > abc",
      "/amount", '/to == "open', "/x > true", "/a~2 > 1" }) do
      local t, why = quota.predicate(bad)
      assert.is_nil(t, bad)
      assert.is_string(why, bad)
    end
  end)
end)

describe("toolgate.quota rules", function()
  local q = assert(quota.compile({ rules = {
    { server = "pay", tool = "transfer", where = "/amount > 1000", limit = 3, window = 60, per = "principal" },
    { server = "pay", limit = 100, window = 3600, per = "context.team" },
    { tool = "transfer", where = { "/amount > 10", '/currency == "EUR"' }, limit = 5, window = 60 },
  } }))

  it("apply by server, tool and every where of theirs, each with its own key per principal or context value", function()
    local big = args('{"amount": 5000, "currency": "CHF"}')
    local t = quota.takes(q, "pay", "transfer", big, { team = "red" }, "alice")
    assert.equal(2, #t)
    assert.same({ 3, 60, 100, 3600 }, { t[1].limit, t[1].window, t[2].limit, t[2].window })
    local bob = quota.takes(q, "pay", "transfer", big, { team = "red" }, "bob")
    assert.are_not.equal(t[1].key, bob[1].key) -- per principal
    assert.equal(t[2].key, bob[2].key)          -- per team: both red
    local blue = quota.takes(q, "pay", "transfer", big, { team = "blue" }, "bob")
    assert.are_not.equal(t[2].key, blue[2].key)
    -- nobody named: one shared count, not none
    local anon = quota.takes(q, "pay", "transfer", big, {}, nil)
    assert.equal(2, #anon)
    assert.equal(anon[1].key, quota.takes(q, "pay", "transfer", big, {}, nil)[1].key)
    assert.equal(1, #quota.takes(q, "pay", "transfer", args('{"amount": 5}'), {}, "alice"))
    assert.equal(1, #quota.takes(q, "other", "transfer", args('{"amount": 50, "currency": "EUR"}'), {}, "alice"))
    assert.equal(0, #quota.takes(q, "other", "transfer", args('{"amount": 50, "currency": "CHF"}'), {}, "alice"))
  end)

  it("are checked field by field, each problem named", function()
    local cases = {
      { { rules = { { limit = 3 } } }, "%.rules%[1%]%.window" },
      { { rules = { { limit = 0, window = 60 } } }, "%.rules%[1%]%.limit" },
      { { rules = { { limit = 1.5, window = 60 } } }, "%.rules%[1%]%.limit" },
      { { rules = { { limit = 1, window = 60, per = "tenant" } } }, "%.rules%[1%]%.per" },
      { { rules = { { limit = 1, window = 60, where = "/a >" } } }, "%.rules%[1%]%.where" },
      { { rules = { { limit = 1, window = 60, where = { "/a > 1", "a" } } } }, "%.rules%[1%]%.where%[2%]" },
      { { rules = { { limit = 1, window = 60, servr = "x" } } }, "%.rules%[1%]%.servr" },
      { { rules = { { limit = 1, window = 60, server = "" } } }, "%.rules%[1%]%.server" },
      { { rule = {} }, "%.rule" },
      { { rules = { x = {} } }, "%.rules" },
    }
    for _, c in ipairs(cases) do
      local ok, why, below = quota.compile(c[1])
      assert.is_nil(ok)
      assert.is_string(why)
      assert.truthy(below:find("^" .. c[2] .. "$"), tostring(below) .. " for " .. c[2])
    end
  end)
end)

describe("the in-process store's quota counts", function()
  it("drop the keys of ended windows as they go (a key per principal does not pile up)", function()
    local now = 0
    local s = state.memory({ clock = function() return now end })
    for i = 1, 500 do assert.is_true(s:quota_take({ { key = "q1:p" .. i, limit = 1, window = 10 } })) end
    now = 20
    for _ = 1, 500 do assert.is_true(s:quota_take({ { key = "q1:fresh", limit = 1000, window = 10 } })) end
    local n = 0
    for _ in pairs(s.quotas) do n = n + 1 end
    assert.equal(1, n)
  end)
end)

describe("a policy's quota", function()
  local function load(p)
    p.name, p.version = p.name or "q", p.version or "1"
    return policy.load(p)
  end

  it("loads with \"quota\" last in stages", function()
    local p = assert(load({ stages = { "rung", "gate", "quota" },
      quota = { rules = { { tool = "transfer", limit = 3, window = 60 } } } }))
    assert.equal(1, #p.quota.rules)
  end)

  it("is refused anywhere but last (POLICY_ORDER), without its stage, or its stage without rules", function()
    local _, why, code = load({ stages = { "rung", "quota", "gate" }, quota = { rules = {} } })
    assert.equal("POLICY_ORDER", code)
    assert.truthy(why:find("last", 1, true))
    _, why, code = load({ stages = { "rung", "gate" }, quota = { rules = { { limit = 1, window = 1 } } } })
    assert.equal("POLICY_INVALID", code)
    assert.truthy(why:find("stages", 1, true))
    _, why, code = load({ stages = { "rung", "quota" } })
    assert.equal("POLICY_INVALID", code)
    assert.truthy(why:find("rules", 1, true), why)
    _, why, code = load({ stages = { "rung", "quota" }, quota = { rules = { { limit = 1, window = 1, where = "/a ~ 1" } } } })
    assert.equal("POLICY_INVALID", code)
    assert.truthy(why:find("quota.rules[1].where", 1, true), why)
    _, why, code = load({ stages = { "rung", "qouta" } })
    assert.equal("POLICY_INVALID", code)
    assert.truthy(why:find("quota", 1, true), why)
  end)
end)

-- A registry of one server, pay: transfer (amount) and ping.
local REGISTRY = [[{"toolgate": 1, "server": "pay", "tools": [
  {"name": "transfer", "risk": "low", "input_schema": {"type": "object", "properties": {
    "amount": {"type": "number"}, "hold": {"type": "boolean"}}, "required": ["amount"]}},
  {"name": "ping", "risk": "low", "input_schema": {"type": "object"}}]}]]

local function call(amount, hold)
  return { server = "pay", name = "transfer", arguments = { amount = amount, hold = hold } }
end

describe("the quota stage in the engine", function()
  local reg = h.tmpname(".json")
  h.write_file(reg, REGISTRY)
  teardown(function() os.remove(reg) end)

  local clock_now = 1000
  local function engine()
    return assert(toolgate.new({ registry = { reg }, state = state.memory({ clock = function() return clock_now end }),
      policy = { name = "q", version = "1", context = { max_risk = "low" },
        -- a call with hold = true is deferred by a stage before the quota's
        stages = { "rung", "gate", { name = "hold", run = function(c)
          if c.arguments.hold then return { verdict = "defer", message = "held for a person" } end
        end }, "quota" },
        quota = { rules = { { server = "pay", tool = "transfer", where = "/amount > 1000", limit = 3, window = 60 } } },
      } }))
  end

  it("refuses the call past the limit with QUOTA, its limit, window and retry_after", function()
    local en = engine()
    clock_now = 1000 -- (the window is [960, 1020): 20 s left)
    for i = 1, 3 do assert.equal("accept", en:check(call(5000)).verdict, "call " .. i) end
    assert.equal("accept", en:check(call(10)).verdict, "a call the rule's where leaves out")
    local d = en:check(call(5000))
    assert.same({ "reject", "QUOTA", "quota" }, { d.verdict, d.code, d.stage })
    local t = d:table()
    assert.same({ 3, 60, 20 }, { t.limit, t.window, t.retry_after })
    assert.truthy(t.message:find("at most 3 calls per 60 s", 1, true), t.message)
    assert.truthy(t.message:find("20 s", 1, true), t.message)
    -- the decision is still one canonical text
    assert.equal(d:json(), (assert(e:canon(d:json()))))
    clock_now = 1020
    assert.equal("accept", en:check(call(5000)).verdict, "the next window")
  end)

  it("counts nothing of a call an earlier stage deferred or refused", function()
    local en = engine()
    clock_now = 2000
    for _ = 1, 5 do
      local d = en:check(call(5000, true))
      assert.same({ "defer", "hold" }, { d.verdict, d.stage })
    end
    for _ = 1, 5 do assert.equal("H3", en:check({ server = "pay", name = "transfer", arguments = { amount = "x" } }).code) end
    for i = 1, 3 do assert.equal("accept", en:check(call(5000)).verdict, "call " .. i .. " after the deferred ones") end
    assert.equal("QUOTA", en:check(call(5000)).code)
    -- past the limit a deferred call is still the defer: the quota is not asked
    assert.equal("defer", en:check(call(5000, true)).verdict)
  end)

  it("refuses, never passes, when the store cannot count (QUOTA_UNAVAILABLE)", function()
    local en = engine()
    en.store.quota_take = function() error("disk I/O error") end
    local d = en:check(call(5000))
    assert.same({ "reject", "QUOTA_UNAVAILABLE" }, { d.verdict, d.code })
    assert.truthy(d:table().message:find("disk I/O error", 1, true))
    assert.equal("accept", en:check(call(10)).verdict, "a call no rule applies to is not counted")
  end)

  it("is the fourth call's QUOTA, with retry_after, in toolgate check", function()
    local pol = h.tmpname(".lua")
    h.write_file(pol, 'return { name = "q", version = "1", registry = { sources = { ' .. string.format("%q", reg)
      .. ' } }, stages = { "rung", "gate", "quota" }, context = { max_risk = "low" },\n'
      .. '  quota = { rules = { { server = "pay", tool = "transfer", where = "/amount > 1000", limit = 3,\n'
      .. '    window = 3600 } } } }\n')
    local line = '{"server": "pay", "name": "transfer", "arguments": {"amount": 5000}}\n'
    local code, out, err = h.toolgate("check --fail-on reject --policy " .. h.shell_quote(pol), string.rep(line, 4))
    os.remove(pol)
    assert.equal(1, code, err)
    local lines = h.lines_of(out)
    assert.equal(4, #lines)
    for i = 1, 3 do assert.equal("accept", json.decode(e, lines[i]).verdict, lines[i]) end
    local d = json.decode(e, lines[4])
    assert.same({ "reject", "QUOTA", 3, 3600 }, { d.verdict, d.code, d.limit, d.window })
    assert.truthy(d.retry_after >= 1 and d.retry_after <= 3600, lines[4])
  end)
end)
