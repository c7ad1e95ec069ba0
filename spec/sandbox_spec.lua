-- toolgate.sandbox: policy code and what it returns stay inside the
-- protected call and the budget.  Whatever a policy function returns is
-- copied into plain values in there; the string library (as functions and
-- as string methods) and the table functions are bounded and charged to
-- the budget; every attack of issue #10's class 14 ends in POLICY_ERROR,
-- quickly, through engine:check and engine:classify alike.
local toolgate = require "toolgate"
local sandbox = require "toolgate.sandbox"
local value = require "toolgate.value"
local h = require "helpers"

local DATA = h.root .. "/spec/data/registries/"

local REGISTRY = { { label = "fs.json", text = [[{"toolgate":1,"server":"fs","tools":[
  {"name":"read","input_schema":{"type":"object","properties":{"path":{"type":"string"},
   "list":{"type":"array","items":{"type":"string"}}}},
   "risk":"low","scopes":["fs:read"],"deterministic":true}]}]] } }
local CTX = { scopes = { "fs:read" }, max_risk = "critical" }
local SLASHES = "/srv/" .. string.rep("/", 2000) -- the issue's path: 2,000 slashes

local function call(path)
  return { server = "fs", name = "read", arguments = { path = path or "/srv/a/b/c/d.txt", list = { "x" } } }
end

-- Five identical samples: the consistency stage accepts, the other stages
-- then run on the representative call.
local function plan(path)
  local samples = {}
  for i = 1, 5 do samples[i] = { arguments = call(path).arguments, result = { ok = true }, epoch = "e1" } end
  return { plan_id = "p", tool = { server = "fs", name = "read", deterministic = true, verified = true },
           samples = samples }
end

local function engine_from(text)
  local path = h.tmpname(".lua")
  h.write_file(path, text)
  local ok, e, err, code = pcall(toolgate.new, { policy = path, registry = REGISTRY })
  os.remove(path)
  assert.is_true(ok, "toolgate.new raised: " .. tostring(e))
  return e, err, code
end

local HEAD = "return { name = 'sb', version = '1', consistency = { min_samples = 5 }, budget = %d, "
-- A policy file whose gate rule (contract, ctx, call) or custom stage
-- (call, tool, ctx) has the body given.
local function in_gate(body, budget)
  return string.format(HEAD, budget or sandbox.DEFAULT_BUDGET) .. "stages = { 'rung', 'consistency', 'gate' }, "
    .. "gate = { admissible = function(contract, ctx, call)\n" .. body .. "\nend } }"
end
local function in_stage(body, budget)
  return string.format(HEAD, budget or sandbox.DEFAULT_BUDGET) .. "stages = { 'rung', 'consistency', "
    .. "{ name = 'c', run = function(call, tool, ctx)\n" .. body .. "\nend } } }"
end

-- decide(e, path) -> {check = decision, classify = decision}: neither may
-- raise; each is timed (CPU seconds).
local function decide(e, path)
  local out = {}
  for _, how in ipairs({ "check", "classify" }) do
    local t0 = os.clock()
    local ok, d = pcall(function()
      if how == "check" then return e:check(call(path), CTX) end
      return e:classify(plan(path), CTX)
    end)
    assert.is_true(ok, how .. " raised: " .. tostring(d))
    d.took = os.clock() - t0
    out[how] = d
  end
  return out
end

local function refused(e, path, what)
  for how, d in pairs(decide(e, path)) do
    local label = what .. " (" .. how .. ")"
    assert.equal("POLICY_ERROR", d.code, label .. ": " .. tostring(d.code) .. " " .. tostring(d.message))
    assert.equal("reject", d.verdict, label)
    assert.is_true(d.took < 1, label .. " took " .. d.took .. " s")
  end
end

-- Runs body as a function of N in a fresh policy environment.
local function try(body, n, budget)
  local fn = assert(sandbox.load("return function(N)\n" .. body .. "\nend", "=try"))
  return sandbox.call(budget or 1e9, fn, n)
end

describe("what a policy function returns", function()
  it("crosses out as a plain copy: array marks as toolgate.array_mt, null as itself, nothing shared", function()
    local fns = assert(sandbox.load([[
      local kept = { a = 1 }
      return {
        get = function()
          return { kept = kept, list = setmetatable({ "x", "y" }, array_mt), none = null, n = 1.5, flag = false,
                   [3] = "three" }, "second"
        end,
        kept = function() return kept.a end,
      }]], "=plain"))
    local ok, r, second = sandbox.call(100000, fns.get)
    assert.is_true(ok, r)
    assert.equal("second", second)
    assert.same({ a = 1 }, r.kept)
    assert.same({ "x", "y" }, r.list)
    assert.equal(value.array_mt, getmetatable(r.list))
    assert.equal(value.null, r.none)
    assert.equal(1.5, r.n)
    assert.is_false(r.flag)
    assert.equal("three", r[3])
    r.kept.a = 2 -- the copy, not the policy's table
    assert.same({ true, 1 }, { sandbox.call(100000, fns.kept) })
    -- a table met twice is copied twice: the copy is a tree
    local shared = { 1 }
    ok, r = sandbox.call(100000, function() return { shared, shared } end)
    assert.is_true(ok)
    assert.same({ { 1 }, { 1 } }, r)
    assert.are_not.equal(r[1], r[2])
  end)

  it("is refused, saying what and where, when it is not plain", function()
    local cyclic = {}
    cyclic.self = cyclic
    local cases = {
      { setmetatable({}, { __tostring = error }), "a table with a metatable" },
      { setmetatable({}, { __index = function() while true do end end }), "a table with a metatable" },
      { setmetatable({}, { __pairs = function() while true do end end }), "a table with a metatable" },
      { setmetatable({}, { __metatable = "hidden" }), "a table with a metatable" },
      { { deep = { fn = print } }, "a function at .deep.fn" },
      { { coroutine.create(function() end) }, "a thread at [1]" },
      { { out = io.stdout }, "a userdata at .out" },
      { cyclic, "a table that contains itself (a cycle) at .self" },
      { { [{}] = 1 }, "a key of type table" },
      { { [true] = 1 }, "a key of type boolean" },
    }
    for _, c in ipairs(cases) do
      local ok, err = sandbox.call(100000, function() return "fine", c[1] end)
      assert.is_false(ok, c[2])
      assert.matches(c[2], err, 1, true)
    end
    -- a function returned from a policy's own table at load is fine: they are its stages
    local p = assert(sandbox.load("return { run = function() return 1 end }", "=load"))
    assert.is_function(p.run)
  end)

  it("MAX_RESULT_DEPTH: tables nested N deep pass, N + 1 are refused", function()
    local function nested(n)
      local t = {}
      for _ = 2, n do t = { t } end
      return t
    end
    local N = sandbox.MAX_RESULT_DEPTH
    assert.is_true((sandbox.call(100000, function() return nested(N) end)))
    local ok, err = sandbox.call(100000, function() return nested(N + 1) end)
    assert.is_false(ok)
    assert.matches("deeper than MAX_RESULT_DEPTH = " .. N, err, 1, true)
  end)

  it("MAX_RESULT_ENTRIES: N table entries in all the results pass, N + 1 are refused", function()
    local N = sandbox.MAX_RESULT_ENTRIES
    local function entries(n)
      local a, b = {}, {}
      for i = 1, n - 1 do a[i] = i end
      b.last = true
      return a, b -- counted across the results: n - 1 + 1
    end
    assert.is_true((sandbox.call(1e7, function() return entries(N) end)))
    local ok, err = sandbox.call(1e7, function() return entries(N + 1) end)
    assert.is_false(ok)
    assert.matches("more than MAX_RESULT_ENTRIES = " .. N, err, 1, true)
    -- a policy file's own table is bounded by the budget only (alias tables may be long)
    assert.is_table(sandbox.load("local t = {} for i = 1, " .. N + 1 .. " do t[i] = 'x' end return { t = t }",
      "=load"))
  end)

  it("never hands the host's array mark to policy code", function()
    local host = setmetatable({ "x" }, value.array_mt)
    local fn = assert(sandbox.load([[return function(list)
      local mt = getmetatable(list)
      mt.__newindex = function() while true do end end
      mt.__index = function() while true do end end
      return mt == array_mt, setmetatable({ "y" }, mt)
    end]], "=mark"))
    local ok, own, marked = sandbox.call(100000, fn, value.copy(host))
    assert.is_true(ok, own)
    assert.is_true(own) -- the environment's own mark
    assert.equal(value.array_mt, getmetatable(marked))
    assert.is_nil(rawget(value.array_mt, "__newindex"))
    assert.is_nil(rawget(value.array_mt, "__index"))
    host[2] = "y"
    assert.equal("y", host[2])
  end)

  it("keeps exact-number boxes as values, made afresh, and the host's box metatable out of reach", function()
    local BIG = "12345678901234567890"
    local fn = assert(sandbox.load([[return function(box)
      local mt = getmetatable(box)
      local named = mt.__name
      mt.__tostring = function() while true do end end
      mt.__eq = function() return true end
      return { kept = box, named = named, text = rawget(box, "text") }
    end]], "=box"))
    local ok, r = sandbox.call(100000, fn, value.exact(BIG))
    assert.is_true(ok, r)
    assert.equal("toolgate.exact", r.named)
    assert.equal(BIG, r.text)
    assert.equal(value.exact_mt, getmetatable(r.kept))
    assert.equal(BIG, tostring(r.kept))
    -- the host's boxes are as they were
    assert.equal(BIG, tostring(value.exact(BIG)))
    assert.is_false(value.exact(BIG) == value.exact("12345678901234567891"))
    -- a box whose text is not a number's does not cross out
    local bad = assert(sandbox.load("return function(box) rawset(box, 'text', {}) return box end", "=bad"))
    local ok2, err = sandbox.call(100000, bad, value.exact(BIG))
    assert.is_false(ok2)
    assert.matches("an exact-number box without a JSON number text", err, 1, true)
  end)

  it("is an error value the sandbox describes without running it", function()
    for _, e in ipairs({
      setmetatable({}, { __tostring = function() while true do end end }),
      setmetatable({}, { __tostring = error }),
    }) do
      local ok, err = sandbox.call(100000, function() error(e) end)
      assert.is_false(ok)
      assert.equal("a policy raised a table as its error (not a message)", err)
    end
  end)
end)

describe("the budget", function()
  it("cannot be swallowed by a policy's xpcall whose handler loops too", function()
    local t0 = os.clock()
    local ok, err = try([[while true do
      xpcall(function() while true do end end, function() while true do end end)
    end]], nil, 100000)
    assert.is_false(ok)
    assert.matches("instruction budget of 100000 exceeded", err, 1, true)
    assert.is_true(os.clock() - t0 < 1)
  end)

  it("counts the work of library functions: loops of capped calls end quickly", function()
    for _, body in ipairs({
      "for i = 1, 1e9 do local s = ('x'):rep(2^20) end",
      "for i = 1, 1e9 do local s = string.rep('x', 2^20) end",
      "local s = ('x'):rep(2^20) for i = 1, 1e9 do local u = s:upper() end",
      "local s = ('x'):rep(2^20) for i = 1, 1e9 do local u = s:sub(2) end",
      "local s = ('x'):rep(2^18) for i = 1, 1e9 do local u = s:find('y', 1, true) end",
      "local s = ('x'):rep(2^20) for i = 1, 1e9 do local u = tonumber(s) end",
      "local t = { ('x'):rep(2^12):byte(1, -1) } for i = 1, 1e9 do table.insert(t, 1, 0) end",
      "local t = { ('x'):rep(2^12):byte(1, -1) } for i = 1, 1e9 do local a = unpack(t) end",
    }) do
      local t0 = os.clock()
      local ok, err = try(body, nil, sandbox.DEFAULT_BUDGET)
      assert.is_false(ok, body)
      assert.matches("instruction budget of " .. sandbox.DEFAULT_BUDGET .. " exceeded", err, 1, true)
      assert.is_true(os.clock() - t0 < 1, body .. " took " .. os.clock() - t0 .. " s")
    end
  end)

  it("puts the string methods and the host's hook back, after a return, an error and a spent budget", function()
    local real = getmetatable("").__index
    local calls = 0
    local hook = function() calls = calls + 1 end
    debug.sethook(hook, "", 1000)
    for _, body in ipairs({ "return ('x'):rep(3)", "error('boom')", "while true do end", "return ('x'):rep(2^21)" }) do
      try(body, nil, 100000)
      assert.equal(real, getmetatable("").__index, body)
      assert.equal(hook, (debug.gethook()), body)
    end
    debug.sethook()
    -- and inside a call, string methods are the bounded ones, for host code too
    local ok, method_ran = sandbox.call(100000, function() return (pcall(function() return ("x"):rep(2^21) end)) end)
    assert.is_true(ok)
    assert.is_false(method_ran)
  end)
end)

describe("the bounded string and table functions", function()
  local N = sandbox.MAX_BUILD_BYTES

  local function passes(body, n, budget)
    local ok, err = try(body, n, budget)
    assert.is_true(ok, body .. " with N = " .. tostring(n) .. ": " .. tostring(err))
    assert.is_true(err, body .. " did not run to its end")
  end
  local function over(body, n, limit)
    local ok, err = try(body, n)
    assert.is_false(ok, body .. " with N = " .. tostring(n))
    assert.matches("over the policy limit " .. limit, err, 1, true)
  end

  it("MAX_BUILD_BYTES: string.rep builds N bytes, not N + 1, as a function and as a method, with a sep", function()
    for _, body in ipairs({ "return #string.rep('x', N) == N", "return #('x'):rep(N) == N" }) do
      passes(body, N)
      over(body, N + 1, "MAX_BUILD_BYTES")
    end
    -- 'a' and 'bc' k times: 3k - 2 bytes; k = (N + 2) / 3 gives exactly N
    local k = (N + 2) / 3
    passes("return #('a'):rep(N, 'bc') == " .. N, k)
    over("return ('a'):rep(N, 'bc')", k + 1, "MAX_BUILD_BYTES")
    -- the count is bounded too: rep('', 2^31) copies nothing 2^31 times
    passes("return ('' ):rep(N) == ''", N)
    over("return ('' ):rep(N)", N + 1, "MAX_BUILD_BYTES")
    over("return string.rep('', 2^31)", nil, "MAX_BUILD_BYTES")
    over("return ('x'):rep(2^24)", nil, "MAX_BUILD_BYTES")
  end)

  it("MAX_BUILD_BYTES: string.format, table.concat and string.gsub build N bytes, not N + 1", function()
    -- a subject of N - 1 bytes: '..' is not bounded (see the module comment)
    local head = "local s = ('x'):rep(N - 1) .. 'x' "
    passes(head .. "return #string.format('%s', s) == N", N)
    over(head .. "return string.format('%s', s)", N + 1, "MAX_BUILD_BYTES")
    passes(head .. "return #('%s'):format(s) == N", N)
    over(head .. "return ('%s'):format(s)", N + 1, "MAX_BUILD_BYTES")
    -- a %s of a table is its __tostring, counted
    over("local t = setmetatable({}, { __tostring = function() return ('x'):rep(N) end }) "
      .. "return string.format('%s!', t)", N, "MAX_BUILD_BYTES")
    passes("local h = ('x'):rep(N / 2) return #table.concat({ h, h }) == N", N)
    over("local h = ('x'):rep(N / 2) return table.concat({ h, h, 'x' })", N, "MAX_BUILD_BYTES")
    passes("local h = ('x'):rep(N / 2 - 1) return #table.concat({ h, h }, '-') == N - 1", N)
    over("local h = ('x'):rep(N / 2) return table.concat({ h, h }, '-')", N, "MAX_BUILD_BYTES")
    -- gsub: the subject plus every replacement
    local r = "local r = ('y'):rep(N - 1024) "
    passes(r .. "return #(('x'):rep(1024):gsub('^', function() return r end)) == N", N)
    over(r .. "return (('x'):rep(1024):gsub('^', function() return r .. 'y' end))", N, "MAX_BUILD_BYTES")
    passes(r .. "return #(('x'):rep(1024):gsub('^', r)) == N", N)
    over(r .. "return (('x'):rep(1024):gsub('^', r .. 'y'))", N, "MAX_BUILD_BYTES")
    passes(r .. "return #(('x'):rep(1024):gsub('^', { [''] = r })) == N", N)
    over("return (('x'):rep(1024):gsub('', ('y'):rep(2048)))", N, "MAX_BUILD_BYTES")
    over("local s = ('x'):rep(2048) for i = 1, 3 do s = s:gsub('x', '%0%0%0%0%0%0%0%0%0%0') end", N,
      "MAX_BUILD_BYTES")
    -- and what the replacements give is the real gsub's, escapes included
    passes("return (('ab'):gsub('(a)(b)', '%2%1%%%0')) == 'ba%ab'", N)
  end)

  it("MAX_FORMAT_WIDTH: a width or precision of 99 is used, 100 is refused", function()
    passes("return #string.format('%99d', 1) == 99", nil)
    over("return string.format('%100d', 1)", nil, "MAX_FORMAT_WIDTH")
    passes("return #string.format('%.99f', 1) == 101", nil)
    over("return string.format('%.100f', 1)", nil, "MAX_FORMAT_WIDTH")
    over("return string.format('%99999999d', 1)", nil, "MAX_FORMAT_WIDTH")
    passes("return string.format('%5.2f|%-3s|%%|%q', 1, 'a', 'b\\n') == ' 1.00|a  |%|\"b\\\\\\n\"'", nil)
  end)

  it("MAX_SUBJECT_BYTES: find, match, gmatch and gsub take a subject of N bytes, not N + 1", function()
    local S = sandbox.MAX_SUBJECT_BYTES
    local head = "local s = ('x'):rep(N - 1) .. 'y' "
    for _, use in ipairs({ "return s:find('y', 1, true) == N", "return s:find('y') == N",
        "return #s:match('^x*y') == N", "for w in s:gmatch('y') do return w == 'y' end",
        "return select(2, s:gsub('y', 'y')) == 1" }) do
      passes(head .. use, S)
      local ok, err = try(head .. use, S + 1)
      assert.is_false(ok, use)
      assert.matches("a subject of " .. S + 1 .. " bytes is over the policy limit MAX_SUBJECT_BYTES", err, 1, true)
    end
  end)

  it("MAX_PATTERN_WORK: a pattern whose estimate is N runs, one over N is refused", function()
    local W = sandbox.MAX_PATTERN_WORK
    -- a 40-byte literal, unanchored: work = 40 * (n + 1 + (n + 1)) = 80 (n + 1)
    local literal = string.rep("0123456789", 4)
    local n = W / 80 - 1
    assert.equal(W, sandbox.pattern_work(string.rep("x", n), literal, true))
    assert.equal(W + 80, sandbox.pattern_work(string.rep("x", n + 1), literal, true))
    passes("return ('x'):rep(N):find('" .. literal .. "') == nil", n)
    local ok, err = try("return ('x'):rep(N):find('" .. literal .. "')", n + 1)
    assert.is_false(ok)
    assert.matches("over the policy limit MAX_PATTERN_WORK = " .. W, err, 1, true)
  end)

  it("estimates pattern work by its documented formula", function()
    local function choose(n, k)
      local c = 1
      for j = 1, k do c = c * (n + j) / j end
      return c
    end
    local attack = "^/srv/(.-)/(.-)/(.-)/(.-)%.txt$"
    local n = #SLASHES
    -- anchored (one start), four items that try every length
    assert.equal(#attack * (n + 1 + choose(n, 4)), sandbox.pattern_work(SLASHES, attack, true))
    assert.is_true(sandbox.pattern_work(SLASHES, attack, true) > 1e13)
    -- a quantified item that ends the pattern scans once and succeeds: not counted;
    -- followed by "$" it can fail after its scan: counted
    local a100 = string.rep("a", 100)
    assert.equal(6 * (100 + 1 + 1), sandbox.pattern_work(a100, "^%w+()", true))
    assert.equal(7 * (100 + 1 + choose(100, 1)), sandbox.pattern_work(a100, "^(%w+)$", true))
    -- unanchored, led by one literal: the starts are the places it matches (3 slashes)
    local path = "/srv/project/.env"
    assert.equal(9 * (#path + 1 + 3 * choose(#path, 1)), sandbox.pattern_work(path, "/%.[^/]+$", true))
    -- led by a quantified item: every place is a start; ? doubles the paths
    assert.equal(4 * (50 + 1 + 51 * choose(50, 1)), sandbox.pattern_work(string.rep("a", 50), "a*b$", true))
    assert.equal(4 * (50 + 1 + 51 * 2 * 2), sandbox.pattern_work(string.rep("a", 50), "a?b?", true))
    -- gmatch never anchors
    assert.equal(3 * (50 + 1 + 51), sandbox.pattern_work(string.rep("a", 50), "^ab", false))
    -- %b and back-references scan: counted wherever they are
    assert.equal(6 * (50 + 1 + 51 * choose(50, 2)), sandbox.pattern_work(string.rep("a", 50), "%b()%1", true))
  end)
end)

describe("hostile policy code, through engine:check and engine:classify", function()
  it("the control: the same policies accept when their code behaves", function()
    for _, text in ipairs({ in_gate("return true"), in_stage("return true"),
        in_gate("return call.arguments.path:find('^/srv/(.-)/(.-)/(.-)/(.-)%.txt$') ~= nil"),
        in_stage("if call.arguments.path:find('^/srv/(.-)/(.-)/(.-)/(.-)%.txt$') then return true end return false") }) do
      local e = assert(engine_from(text))
      for how, d in pairs(decide(e)) do assert.equal("accept", d.verdict, how .. ": " .. tostring(d.message)) end
    end
  end)

  -- What a hook returns, as a reason (gate and stage) and as the stage's result.
  local RETURNED = {
    { "a reason whose __tostring is error", "setmetatable({}, { __tostring = error })" },
    { "a table whose __index loops", "setmetatable({}, { __index = function() while true do end end })" },
    { "a table whose __pairs loops", "setmetatable({}, { __pairs = function() while true do end end })" },
    { "a table whose __tostring loops", "setmetatable({}, { __tostring = function() while true do end end })" },
    { "a function", "function() end" },
    { "a cyclic table", "(function() local t = {} t.t = t return t end)()" },
    { "a huge table", "(function() local t = {} for i = 1, 20000 do t[i] = i end return t end)()" },
  }

  it("refuses a hook's result that is not plain: POLICY_ERROR, at once", function()
    for _, r in ipairs(RETURNED) do
      local what, x = r[1], r[2]
      refused(engine_from(in_gate("return false, " .. x)), nil, "gate: false, " .. what)
      refused(engine_from(in_gate("return 'defer', " .. x)), nil, "gate: defer, " .. what)
      refused(engine_from(in_stage("return false, " .. x)), nil, "stage: false, " .. what)
      refused(engine_from(in_stage("return " .. x)), nil, "stage: " .. what)
      refused(engine_from(in_stage("return { verdict = 'defer', message = " .. x .. " }")), nil,
        "stage: a defer whose message is " .. what)
      refused(engine_from(in_stage("return { verdict = 'reject', code = " .. x .. " }")), nil,
        "stage: a reject whose code is " .. what)
    end
    -- a reason that is neither a string nor a number
    refused(engine_from(in_gate("return false, true")), nil, "gate: false, true")
    refused(engine_from(in_stage("return false, {}")), nil, "stage: false, {}")
    -- a number is a reason
    local d = engine_from(in_stage("return false, 42")):check(call(), CTX)
    assert.equal("42", d.message)
  end)

  it("refuses a coroutine or a userdata from a policy given as a table", function()
    for what, x in pairs({ coroutine = coroutine.create(function() end), userdata = io.stdout }) do
      for _, p in ipairs({
        { stages = { "rung", "gate" }, gate = { admissible = function() return false, x end } },
        { stages = { "rung", { name = "c", run = function() return false, x end } } },
        { stages = { "rung", { name = "c", run = function() return { verdict = "defer", message = x } end } } },
      }) do
        p.name, p.version = "sb", "1"
        local e = assert(toolgate.new({ policy = p, registry = REGISTRY }))
        local ok, d = pcall(e.check, e, call(), CTX)
        assert.is_true(ok, what)
        assert.equal("POLICY_ERROR", d.code, what)
      end
    end
  end)

  it("stops the issue's pattern over 2,000 slashes, in gate.admissible and in a custom stage", function()
    local pattern = "'^/srv/(.-)/(.-)/(.-)/(.-)%.txt$'"
    refused(engine_from(in_gate("return call.arguments.path:find(" .. pattern .. ") ~= nil")), SLASHES,
      "gate: find")
    refused(engine_from(in_gate("return string.match(call.arguments.path, " .. pattern .. ") ~= nil")), SLASHES,
      "gate: string.match")
    -- gmatch takes "^" as itself: unanchored, every slash is a start
    refused(engine_from(in_stage("for a in call.arguments.path:gmatch('/srv/(.-)/(.-)/(.-)/(.-)%.txt$') do end "
      .. "return true")), SLASHES, "stage: gmatch")
    refused(engine_from(in_stage("return (call.arguments.path:gsub(" .. pattern .. ", '')) == ''")), SLASHES,
      "stage: gsub")
    local d = engine_from(in_gate("return call.arguments.path:find(" .. pattern .. ") ~= nil")):check(call(SLASHES),
      CTX)
    assert.matches("MAX_PATTERN_WORK", d.message, 1, true)
  end)

  it("stops what builds too much or runs too long in library functions", function()
    for _, body in ipairs({
      "local s = ('x'):rep(2^24) return true",
      "local s = ('ab'):rep(2^20, ',') return true",
      "local s = string.rep('ab', 2^20, ',') return true",
      "local s = string.rep('', 2^31) return true",
      "local s = string.format('%99999999d', 1) return true",
      "local big = ('x'):rep(2^20) local s = string.format('%s%s', big, big) return true",
      "local piece = ('x'):rep(1024) local t = {} for i = 1, 2048 do t[i] = piece end "
        .. "local s = table.concat(t) return true",
      "local s = ('x'):rep(1024):gsub('', ('y'):rep(2048)) return true",
      "for i = 1, 1e9 do local s = ('x'):rep(2^20) end return true",
      "local s = ('x'):rep(2^20) for i = 1, 1e9 do local u = s:upper() end return true",
    }) do
      refused(engine_from(in_gate(body)), nil, "gate: " .. body)
      refused(engine_from(in_stage(body)), nil, "stage: " .. body)
    end
  end)

  it("stops an error value whose __tostring loops, and an xpcall whose handler loops", function()
    for _, body in ipairs({
      "error(setmetatable({}, { __tostring = function() while true do end end }))",
      "while true do xpcall(function() while true do end end, function() while true do end end) end",
    }) do
      refused(engine_from(in_gate(body, 100000)), nil, "gate: " .. body)
      refused(engine_from(in_stage(body, 100000)), nil, "stage: " .. body)
    end
  end)

  it("keeps the host's array mark out of reach: a policy that poisons its metatable poisons its own", function()
    local e = assert(engine_from(in_stage([[
      local mt = getmetatable(call.arguments.list)
      mt.__newindex = function() while true do end end
      mt.__index = function() while true do end end
      mt.__len = function() while true do end end
      return true]])))
    for _ = 1, 2 do
      for how, d in pairs(decide(e)) do
        assert.equal("accept", d.verdict, how)
        assert.is_true(d.took < 1, how)
      end
    end
    assert.is_nil(next(value.array_mt, next(value.array_mt))) -- still only __name
  end)

  it("fails the load, cleanly, when a contract mapping returns anything that is not plain", function()
    local results = {}
    for _, r in ipairs(RETURNED) do results[#results + 1] = { r[1], r[2] } end
    results[#results + 1] = { "a contract with a function in it", "{ risk = 'low', scopes = {}, f = function() end }" }
    results[#results + 1] = { "a contract whose scopes loop",
      "{ risk = 'low', scopes = setmetatable({}, { __index = function() while true do end end }) }" }
    for _, r in ipairs(results) do
      local e, err, code = engine_from("return { name = 'sb', version = '1', budget = 100000, "
        .. "contract = function(tool) return " .. r[2] .. " end }")
      assert.is_nil(e, r[1])
      assert.equal("POLICY_ERROR", code, r[1])
      assert.matches("policy contract mapping failed for \"read\" on \"fs\": ", err, 1, true)
    end
    for what, x in pairs({ coroutine = coroutine.create(function() end), userdata = io.stdout }) do
      local ok, e, err, code = pcall(toolgate.new, { registry = REGISTRY,
        policy = { name = "sb", version = "1", contract = function() return { risk = "low", x = x } end } })
      assert.is_true(ok, what)
      assert.is_nil(e, what)
      assert.equal("POLICY_ERROR", code, what)
      assert.matches("a " .. (what == "coroutine" and "thread" or what) .. " at .x", err, 1, true)
    end
  end)

  it("lets a contract mapping keep an exact number of the tool's contract", function()
    local BIG = "12345678901234567890"
    local path = h.tmpname(".lua")
    h.write_file(path, [[return { name = 'sb', version = '1', stages = { 'rung', 'gate' },
      contract = function(tool) return { risk = 'low', scopes = {}, limit = tool.contract.limit } end,
      gate = { admissible = function(contract) return tostring(contract.limit) == "]] .. BIG .. [[" end } }]])
    local ok, e, err = pcall(toolgate.new, { policy = path, registry = { { label = "big.json", text =
      '{"toolgate":1,"server":"fs","tools":[{"name":"read","input_schema":{"type":"object"},'
      .. '"contract":{"limit":' .. BIG .. '}}]}' } } })
    os.remove(path)
    assert.is_true(ok, e)
    assert.is_table(e, err)
    local limit = e:snapshot().registry.tools[1].contract.limit
    assert.equal(value.exact_mt, getmetatable(limit))
    assert.equal("accept", e:check({ server = "fs", name = "read", arguments = {} }).verdict)
  end)

  it("makes a resolver's error value that loops in __tostring a POLICY_ERROR of the plan", function()
    local path = h.tmpname(".lua")
    h.write_file(path, [[return { name = 'sb', version = '1', budget = 100000, stages = { 'rung', 'consistency' },
      consistency = { min_samples = 3 },
      resolvers = { accounts = function(id)
        error(setmetatable({}, { __tostring = function() while true do end end }))
      end } }]])
    local e = assert(toolgate.new({ policy = path, registry = { DATA .. "consistency.json" } }))
    os.remove(path)
    local s = '{"arguments":{"account":"acme"},"result":1,"epoch":"e1"}'
    local ok, d = pcall(e.classify, e, '{"plan_id":"r","tool":{"server":"sb","name":"lookup","deterministic":true,'
      .. '"verified":true},"samples":[' .. s .. "," .. s .. "," .. s .. "]}")
    assert.is_true(ok, d)
    assert.equal("POLICY_ERROR", d.code)
    assert.equal("reject", d.verdict)
  end)

  it("copies a policy file's own table at load: its closures cannot change what the engine holds", function()
    local e = assert(engine_from([[
      local context = { max_risk = "critical", scopes = { "fs:read" } }
      return { name = 'sb', version = '1', context = context, budget = 100000,
        stages = { 'rung', { name = 'c', run = function()
          setmetatable(context, { __pairs = function() while true do end end })
          context.scopes = {}
          return true
        end }, 'gate' } }]]))
    for _ = 1, 2 do
      local t0 = os.clock()
      assert.equal("accept", e:check(call()).verdict)
      assert.is_true(os.clock() - t0 < 1)
    end
    -- and a policy file whose table has metatables does not load
    local bad, err, code = engine_from([[return setmetatable({ name = 'sb', version = '1' },
      { __index = function() while true do end end })]])
    assert.is_nil(bad)
    assert.equal("POLICY_LOAD", code)
    assert.matches("a table with a metatable", err, 1, true)
  end)
end)
