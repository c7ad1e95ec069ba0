-- toolgate.policy and toolgate.sandbox: loading, checking and confining
-- policy files; every shipped policy loads.
local policy = require "toolgate.policy"
local sandbox = require "toolgate.sandbox"
local h = require "helpers"

local function write_policy(body)
  local path = h.tmpname(".lua")
  h.write_file(path, body)
  return path
end

local function load_text(body)
  local path = write_policy(body)
  local p, err, code = policy.load(path)
  os.remove(path)
  return p, err, code
end

describe("policies", function()
  it("loads every shipped policy", function()
    local p = assert(io.popen("ls " .. h.root .. "/policies"))
    local names = {}
    for f in p:lines() do names[#names + 1] = f:match("^(.*)%.lua$") end
    p:close()
    assert.same({ "default", "example", "gateway", "mcp", "rung", "strict" }, names)
    for _, name in ipairs(names) do
      local pol, err = policy.load(h.root .. "/policies/" .. name .. ".lua", require("toolgate.core").hash_bytes)
      assert.is_table(pol, err)
      assert.equal(name, pol.name)
      assert.matches("^" .. name .. "@%d+%+%x+$", pol.version)
      assert.equal("rung", pol.stages[1].name)
    end
  end)

  it("refuses a contract-reading stage before the rung, and says why", function()
    for _, stages in ipairs({ '{ "gate", "rung" }', '{ "verifier", "rung", "gate" }', '{ "consistency", "rung" }',
      '{ { name = "peek", reads_contract = true, run = function() end }, "rung" }' }) do
      local p, err, code = load_text("return { name = 'x', version = '1', stages = " .. stages .. " }")
      assert.is_nil(p, stages)
      assert.equal("POLICY_ORDER", code)
      assert.matches("fabricated tool has no contract", err, 1, true)
      assert.matches("before \"rung\"", err, 1, true)
    end
  end)

  it("refuses a pipeline without the rung", function()
    local p, err, code = load_text("return { name = 'x', version = '1', stages = { 'gate', 'verifier' } }")
    assert.is_nil(p)
    assert.equal("POLICY_ORDER", code)
    -- the first stage met reads the contract; either way the load fails
    assert.matches("rung", err)
    p, err, code = load_text([[return { name = 'x', version = '1',
      stages = { { name = "log", run = function() end } } }]])
    assert.is_nil(p)
    assert.equal("POLICY_ORDER", code)
    assert.matches("has no \"rung\"", err, 1, true)
  end)

  it("allows a stage that does not read the contract before the rung", function()
    local p = assert(load_text([[return { name = 'x', version = '1',
      stages = { { name = "size_cap", run = function() return true end }, "rung", "gate" } }]]))
    assert.equal("size_cap", p.stages[1].name)
    assert.is_false(p.stages[1].reads_contract)
  end)

  it("names what is wrong in a malformed policy", function()
    local cases = {
      { "return 42", "must return a table" },
      { "return { version = '1' }", "name/version" },
      { "return { name = 'x', version = '1', stagse = {} }", "stagse: unknown field" },
      { "return { name = 'x', version = 1 }", "version: must be a non-empty string, not a number" },
      { "return { name = 'x', version = '1', stages = { 'rung', 'audit' } }", 'unknown stage "audit"' },
      { "return { name = 'x', version = '1', stages = { 'rung', 'rung' } }", "appears twice" },
      { "return { name = 'x', version = '1', on_error = 'accept' }", "on_error" },
      { "return { name = 'x', version = '1', gate = { max = 3 } }", "gate.max: unknown setting" },
      { "return { name = 'x', version = '1', gate = { admissible = 'yes' } }", "gate.admissible: must be a function" },
      { "return { name = 'x', version = '1', consistency = { arg_accept = 2 } }", "between 0 and 1" },
      { "return { name = 'x', version = '1', stages = { 'rung', { name = 'c' } } }", "needs a run function" },
      { "return { name = 'x', version = '1', budget = 10 }", "budget" },
    }
    for _, c in ipairs(cases) do
      local p, err, code = load_text(c[1])
      assert.is_nil(p, c[1])
      assert.equal("POLICY_INVALID", code, c[1] .. " -> " .. tostring(err))
      assert.matches(c[2], err, 1, true)
    end
    local p, err, code = policy.load("/nonexistent/policy.lua")
    assert.is_nil(p)
    assert.equal("POLICY_LOAD", code)
    assert.matches("cannot read policy", err)
    p, err, code = load_text("return {")
    assert.is_nil(p)
    assert.is_string(err)
    assert.equal("POLICY_LOAD", code)
  end)

  it("warns when its own consistency settings make a reject unreachable at min_samples, not for the defaults",
    function()
      -- the defaults (5 samples, arg_reject 0.20) are so on purpose: docs/policies.md says it once
      local p = assert(load_text("return { name = 'x', version = '1', stages = { 'rung', 'consistency' } }"))
      assert.same({}, p.warnings)
      for _, settings in ipairs({ "{ min_samples = 5 }", "{ arg_reject = 0.2 }", "{ min_samples = 4, arg_reject = 0.25 }" }) do
        p = assert(load_text("return { name = 'x', version = '1', stages = { 'rung', 'consistency' }, consistency = "
          .. settings .. " }"))
        assert.equal(1, #p.warnings, settings)
        assert.matches("cannot happen", p.warnings[1])
      end
      p = assert(load_text([[return { name = 'x', version = '1', stages = { 'rung', 'consistency' },
        consistency = { min_samples = 6 } }]]))
      assert.equal(0, #p.warnings)
      -- and only for a pipeline with the consistency stage
      p = assert(load_text("return { name = 'x', version = '1', consistency = { min_samples = 5 } }"))
      assert.equal(0, #p.warnings)
    end)
end)

describe("the policy sandbox", function()
  it("has no io, os (but time and clock), debug, load, dofile or require", function()
    for _, body in ipairs({
      "return io.open('/etc/passwd')", "return os.execute('true')", "return debug.getinfo(1)",
      "return load('return 1')", "return dofile('/etc/passwd')", "return require('os')",
      "return loadstring('return 1')", "return string.dump(function() end)",
      "return getmetatable('').__index.rep", "return collectgarbage()",
    }) do
      local r, err = sandbox.load(body, "=test")
      assert.is_nil(r, body)
      assert.is_string(err)
    end
    assert.is_number(sandbox.load("return os.time() + os.clock()", "=test"))
    assert.equal(3, sandbox.load("local t = {1, 2, 3}; table.sort(t); return #t", "=test"))
  end)

  it("says which global is unknown, and refuses new globals", function()
    local r, err = sandbox.load("return io", "=test")
    assert.is_nil(r)
    assert.matches("unknown global 'io'", err, 1, true)
    r, err = sandbox.load("x = 1 return x", "=test")
    assert.is_nil(r)
    assert.matches("may not set the global 'x'", err, 1, true)
  end)

  it("refuses __gc finalizers and huge string.rep", function()
    assert.is_nil(sandbox.load("return setmetatable({}, { __gc = function() end })", "=test"))
    local r, err = sandbox.load("return string.rep('x', 1e9)", "=test")
    assert.is_nil(r)
    assert.matches("over the policy limit", err)
  end)

  -- A finalizer runs when the collector gets to it: later, outside any
  -- budget.  Lua 5.4 marks a table for finalization when setmetatable gives
  -- it a metatable holding __gc (any value: a placeholder counts, and is
  -- replaced later); LuaJIT never finalizes tables, but the rule is one.
  it("refuses at load a chunk that sets a __gc finalizer, naming __gc, whatever it returns", function()
    local good = "return { name = 'x', version = '1', stages = { 'rung' } }"
    assert.is_table((load_text(good)))
    for _, set in ipairs({
      "setmetatable({}, { __gc = function() end })",
      "setmetatable({}, { __gc = true })",
      "local mt = { __gc = false }; setmetatable({}, mt); mt.__gc = function() end",
      "local mt = {}; rawset(mt, '__gc', 1); setmetatable({}, mt)",
    }) do
      local r, err = sandbox.load(set .. "; return {}", "=test")
      assert.is_nil(r, set)
      assert.matches("__gc", err, 1, true)
      local p, perr, code = load_text(set .. "; " .. good)
      assert.is_nil(p, set)
      assert.equal("POLICY_LOAD", code)
      assert.matches("may not set a __gc finalizer", perr, 1, true)
    end
    -- and from a policy function, at run time
    local fn = assert(sandbox.load("return function() setmetatable({}, { __gc = function() end }) end", "=test"))
    local ok, err = sandbox.call(100000, fn)
    assert.is_false(ok)
    assert.matches("__gc", err, 1, true)
  end)

  it("runs no finalizer of a policy's: not one added after setmetatable, not one put in a host's metatable", function()
    local hits = 0
    local Class = {}
    sandbox.register_helper("spec_probe", { hit = function() hits = hits + 1 end,
      new = function() return setmetatable({}, Class) end })
    finally(function() sandbox.register_helper("spec_probe", nil) end)
    local function collected(made)
      hits = 0
      for _ = 1, 10 do made() end
      collectgarbage()
      collectgarbage()
      return hits
    end
    if not h.is_luajit then -- the probe sees a finalizer run where the language runs one
      assert.equal(10, collected(function() setmetatable({}, { __gc = function() hits = hits + 1 end }) end))
    end
    local later = assert(sandbox.load([[
      local probe = require "spec_probe"
      return function()
        local mt = {}
        local t = setmetatable({}, mt)
        mt.__gc = function() probe.hit() end
        return #t
      end]], "=test"))
    assert.equal(0, collected(function() assert(sandbox.call(100000, later)) end))
    -- a host's metatable is not the policy's: it cannot read it, so cannot
    -- make the host's own objects call it back
    local r, err = sandbox.load([[
      local probe = require "spec_probe"
      local mt = getmetatable(probe.new())
      if mt then mt.__gc = function() probe.hit() end end
      return { hidden = mt == nil }]], "=test")
    assert.same({ hidden = true }, r, err)
    assert.is_nil(rawget(Class, "__gc"))
    assert.equal(0, collected(function() setmetatable({}, Class) end))
  end)

  it("stops a policy chunk that loops forever", function()
    local r, err = sandbox.load("while true do end", "=test", 100000)
    assert.is_nil(r)
    assert.matches("instruction budget of 100000 exceeded", err, 1, true)
  end)

  it("stops a policy function that loops forever, even inside its own pcall", function()
    local fns = assert(sandbox.load([[
      return {
        spin = function() local n = 0 while true do n = n + 1 end end,
        hidden = function() while true do pcall(function() while true do end end) end end,
        deep = function() local function f(n) return f(n + 1) + 1 end return f(1) end,
      }]], "=test"))
    for name, fn in pairs(fns) do
      local ok, err = sandbox.call(200000, fn)
      assert.is_false(ok, name)
      assert.is_string(err)
    end
    local ok, err = sandbox.call(200000, fns.spin)
    assert.is_false(ok)
    assert.matches("budget", err)
    ok, err = sandbox.call(200000, fns.hidden)
    assert.is_false(ok)
    assert.matches("budget", err)
  end)

  it("leaves the host's own hook as it was", function()
    local calls = 0
    local hook = function() calls = calls + 1 end
    debug.sethook(hook, "", 1000)
    local fn = assert(sandbox.load("return function() return 1 end", "=test"))
    assert.is_true((sandbox.call(100000, fn)))
    local now = debug.gethook()
    debug.sethook()
    assert.equal(hook, now)
  end)
end)
