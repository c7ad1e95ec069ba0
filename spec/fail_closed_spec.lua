-- Failing closed, as a property: whatever fails inside a decision -- the
-- core running out of memory or hitting a limit, a policy function that
-- errors or runs past its budget, a registry that does not reload, a
-- result too large to read -- the decision is never an accept.
--
-- Core faults are injected at the binding's surface: every method of the
-- C binding that can fail (returns nil, message, CODE) is made to fail with
-- NOMEM at its k-th call, for every k a decision reaches, on generated
-- calls, results and plans.  (Allocation failure inside the C core itself,
-- at every allocation site, is spec/c/test_fail_closed.c.)  A decision
-- that raises instead of returning is not an accept either, but it is
-- counted and must not happen: an engine that gates untrusted input
-- returns a decision.
local toolgate = require "toolgate"
local unpack = table.unpack or unpack -- luacheck: ignore 143
local h = require "helpers"

local REG = h.root .. "/examples/registries/"
local DATA = h.root .. "/spec/data/registries/"

-- The binding's methods that can fail, by class.
local FALLIBLE = {
  engine = { "canon", "hash", "parse", "decode_call", "decode_calls", "agree", "pointer_agreement", "decider",
              "workers" },
  decider = { "check", "answer", "next", "check_lines", "classify", "classify_lines", "resolve", "record" },
  policy = { "context" },
  node = { "canon", "hash", "digest", "exact" },
  registry = { "check", "validate_output" },
  norm = { "apply" },
}

local function classes(snap)
  local doc = assert(snap.core:parse("{}"))
  local out = {
    engine = getmetatable(snap.core).__index,
    node = getmetatable(doc:root()).__index,
    registry = getmetatable(snap.registry.c).__index,
  }
  local norm = snap.core.norm and snap.core:norm()
  if norm then out.norm = getmetatable(norm).__index end
  out.decider = getmetatable(assert(snap.core:decider())).__index
  out.policy = getmetatable(snap.compiled).__index
  return out
end

-- The chunk methods fail as the core does: at a line not blank, saying
-- where it ends and its number, and giving the decisions of the lines before
-- it (and their counts).  check_lines fails at the chunk's second such line
-- when it has one, after deciding the first for real (f on the text up to
-- it), so a host that drops what came before the failing line is caught;
-- classify_lines at the first (its lines may need the host between them).
-- LINES: where the text, its position and the line number before it are
-- among the method's arguments.
local LINES = { check_lines = { 4, 5, 8 }, classify_lines = { 5, 6, 8 } }

local function failed_line(m, f, ...)
  local at = LINES[m]
  local args = { n = select("#", ...), ... }
  local text, pos, line = args[at[1]], args[at[2]], args[at[3]] or 0
  local function next_line(p, l)
    repeat
      local nl = text:find("\n", p, true)
      if not nl then return nil end
      local blank = not text:sub(p, nl - 1):find("%S")
      p, l = nl + 1, l + 1
    until not blank
    return p, l
  end
  local first_end, first_line = next_line(pos, line)
  if not first_end then return pos, line, "", 0, 0, 0 end
  local second_end, second_line = next_line(first_end, first_line)
  if m == "check_lines" and second_end then
    args[at[1]] = text:sub(1, first_end - 1)
    local status, _, _, out, a, r, d = f(unpack(args, 1, args.n))
    if status == 2 then return second_end, second_line, out, a, r, d end
  end
  return first_end, first_line, "", 0, 0, 0
end

-- with_fault(snap, k, fn) -> fired, ok, result: runs fn with the k-th
-- fallible call failing (k = 0: none), then puts every method back.
local function with_fault(snap, k, fn)
  local saved, count, fired = {}, 0, nil
  for cls_name, cls in pairs(classes(snap)) do
    for _, m in ipairs(FALLIBLE[cls_name]) do
      local f = rawget(cls, m)
      if f then
        saved[#saved + 1] = { cls, m, f }
        cls[m] = function(...)
          count = count + 1
          if count == k then
            fired = cls_name .. ":" .. m
            if LINES[m] then
              return nil, "injected fault: out of memory", "NOMEM", failed_line(m, f, ...)
            end
            return nil, "injected fault: out of memory", "NOMEM"
          end
          return f(...)
        end
      end
    end
  end
  local ok, result = pcall(fn)
  for _, s in ipairs(saved) do s[1][s[2]] = s[3] end
  return fired, ok, result, count
end

-- Runs decide() clean, then with each of its fallible calls failing in turn.
-- Returns how many faults fired, the decisions that became accepts, and the
-- ones that raised.
local function property(snap, decide, tally)
  local _, ok, clean, calls = with_fault(snap, 0, decide)
  assert(ok, clean)
  tally.decisions = tally.decisions + 1
  tally[clean.verdict] = (tally[clean.verdict] or 0) + 1
  for k = 1, calls do
    local fired, ok2, d = with_fault(snap, k, decide)
    if fired then
      tally.faults = tally.faults + 1
      if not ok2 then
        tally.raised[#tally.raised + 1] = tostring(d)
      elseif d.verdict == "accept" then
        tally.accepted[#tally.accepted + 1] = string.format("fault %d of %d (%s): %s/%s %s", k, calls,
          fired, tostring(d.server), tostring(d.tool), tostring(d.code))
      end
    end
  end
end

local function new_tally()
  return { decisions = 0, faults = 0, raised = {}, accepted = {} }
end

local function report(what, t)
  print(string.format("# %s: %d decisions (%d accepted clean), %d faults injected, %d raised, %d accepted",
    what, t.decisions, t.accept or 0, t.faults, #t.raised, #t.accepted))
  assert.is_true(t.faults > 0)
  assert.is_true((t.accept or 0) > 0, "the property needs decisions that accept without a fault")
  assert.same({}, t.accepted)
  -- a raise is fail-closed too, but a decision is owed: list them
  local distinct, seen = {}, {}
  for _, r in ipairs(t.raised) do
    local key = r:gsub("^.-:%d+: ", "")
    if not seen[key] then seen[key] = true distinct[#distinct + 1] = r end
  end
  assert.same({}, distinct)
end

-- Calls: the example calls, and mutations of them.
local function lines(path)
  local out = {}
  for l in io.lines(path) do if l:match("%S") then out[#out + 1] = l end end
  return out
end

local function mutations(text, rnd)
  local out = { text }
  out[#out + 1] = text:gsub('"arguments":{', '"arguments":{"extra":1,', 1)
  out[#out + 1] = text:gsub('"path":"[^"]*"', '"path":' .. rnd(1000), 1)
  out[#out + 1] = text:gsub('"name":"', '"name":"x', 1)
  out[#out + 1] = text:sub(1, math.max(1, #text - rnd(10)))
  return out
end

describe("failing closed", function()
  math.randomseed(20261105)
  local rnd = function(n) return math.random(1, n) end

  it("a core fault at any point of a check is never an accept", function()
    local e = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "gate", "verifier" } },
      registry = { REG .. "mcp-filesystem.json", REG .. "mcp-everything.json", REG .. "mcp-memory.json" },
      context = { max_risk = "critical" },
    }))
    local tally = new_tally()
    local calls = {}
    for _, f in ipairs({ "mcp-calls.jsonl", "pipeline-calls.jsonl" }) do
      for _, l in ipairs(lines(h.root .. "/examples/calls/" .. f)) do
        for _, m in ipairs(mutations(l, rnd)) do calls[#calls + 1] = m end
      end
    end
    for _, text in ipairs(calls) do
      property(e:snapshot(), function() return e:check(text) end, tally)
    end
    report("check", tally)
  end)

  it("a core fault at any point of a check_all never passes every call of the line", function()
    local e = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "gate", "verifier" } },
      registry = { REG .. "mcp-filesystem.json", REG .. "mcp-memory.json" },
      context = { max_risk = "critical" },
    }))
    local function tool_call(i, name, args)
      return string.format('{"id":"c%d","type":"function","function":{"name":"%s","arguments":%q}}', i, name, args)
    end
    local function block(i, name, args)
      return string.format('{"type":"tool_use","id":"t%d","name":"%s","input":%s}', i, name, args)
    end
    local read, graph = '{"path":"/srv/a"}', "{}"
    local envelopes = {
      '{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,'
        .. '"tool_calls":[' .. tool_call(1, "read_text_file", read) .. "," .. tool_call(2, "read_graph", graph)
        .. "]}}]}",
      '{"type":"message","role":"assistant","content":[{"type":"text","text":"x"},'
        .. block(1, "read_text_file", read) .. "," .. block(2, "read_graph", graph) .. "]}",
      '{"object":"response","output":[{"type":"function_call","call_id":"c","name":"read_graph",'
        .. '"arguments":"{}"},{"type":"function_call","call_id":"d","name":"read_text_file","arguments":'
        .. string.format("%q", read) .. "}]}",
      '[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_graph"}},'
        .. '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_text_file","arguments":'
        .. read .. "}}]",
    }
    local tally = new_tally()
    for _, text in ipairs(envelopes) do
      for _, m in ipairs(mutations(text, rnd)) do
        -- the line passes when every one of its calls is accepted
        property(e:snapshot(), function()
          local ds = e:check_all(m)
          for _, d in ipairs(ds) do if d.verdict ~= "accept" then return d end end
          return #ds > 0 and { verdict = "accept" } or { verdict = "empty" }
        end, tally)
      end
    end
    report("check_all", tally)
  end)

  it("a core fault at any point of a verify is never an accept", function()
    local e = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "verifier" } },
      registry = { DATA .. "contracts.json" },
    }))
    local tally = new_tally()
    local cases = {
      { { server = "ops", name = "read_log", arguments = { n = 3 } }, '{"lines":["a","b"]}' },
      { { server = "ops", name = "read_log", arguments = { n = 3 } }, '{"lines":[1]}' },
      { { server = "ops", name = "restart", arguments = { service = "web" } }, '{"ok":true}' },
      { { server = "ops", name = "mystery", arguments = {} }, "{}" },
      { { server = "ops", name = "read_log", arguments = { n = 3 } }, '{"lines":' },
    }
    for _, c in ipairs(cases) do
      property(e:snapshot(), function() return e:verify(c[1], c[2]) end, tally)
    end
    report("verify", tally)
  end)

  it("a core fault at any point of a classify is never an accept", function()
    local e = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "consistency" },
                 consistency = { min_samples = 3 } },
      registry = { DATA .. "consistency.json" },
    }))
    local tally = new_tally()
    local function single(args_list, name)
      local s = {}
      for i, a in ipairs(args_list) do
        s[i] = string.format('{"arguments":%s,"result":{"r":%d},"epoch":"e1"}', a, #a % 2)
      end
      return string.format('{"plan_id":"p","tool":{"server":"sb","name":"%s","deterministic":true,'
        .. '"verified":true},"samples":[%s]}', name or "lookup", table.concat(s, ","))
    end
    local function multi(n, q)
      local s = {}
      for i = 1, n do
        s[i] = string.format('{"epoch":"e1","calls":[{"server":"sb","name":"search","arguments":{"q":"%s"}},'
          .. '{"server":"sb","name":"open","arguments":{"id":"d1"}}],"results":[[1],{"t":"x"}]}', i <= 4 and q or q .. i)
      end
      return '{"plan_id":"m","samples":[' .. table.concat(s, ",") .. "]}"
    end
    local same = '{"user_id":"u1","path":"/a//b/","team":" Ops ","tags":["A"],"limit":5}'
    local plans = {
      single({ same, same, same, same, same }),
      single({ same, same, same, same, '{"user_id":"u2","path":"/a/b"}' }),
      single({ '{"user_id":"u1"}', '{"user_id":"u2"}', '{"user_id":"u3"}', '{"user_id":"u4"}',
               '{"user_id":"u5"}', '{"user_id":"u6"}' }),
      single({ '{"user_id":1}', '{"user_id":1}', '{"user_id":1}' }),
      single({ '{"q":"x"}', '{"q":"x"}', '{"q":"x"}' }, "search"),
      single({ '{"tz":"UTC"}', '{"tz":"UTC"}', '{"tz":"UTC"}' }, "now"),
      multi(5, "alpha"), multi(4, "beta"),
    }
    for _, p in ipairs(plans) do
      property(e:snapshot(), function() return e:classify(p) end, tally)
    end
    -- the host's questions: a store of the engine's own (opts.state), a
    -- resolver function (an ID per account)
    local records = {}
    local store = { get = function(_, server, name) return records[server .. "/" .. name] end,
                    verified = function() end, records = function() return {} end,
                    quarantine = function(_, server, name, reason)
                      records[server .. "/" .. name] = { quarantined = { reason = reason } }
                    end }
    records["sb/lookup"] = { verified_epoch = '"e1"' }
    local asked = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "consistency" }, consistency = { min_samples = 3 },
                 resolvers = { accounts = function(id) return (id:lower():gsub("[^a-z]", "")) end } },
      registry = { DATA .. "consistency.json" }, state = store,
    }))
    for _, p in ipairs({ plans[1], plans[2], plans[3], single({ '{"account":"Acme"}', '{"account":"ACME"}',
        '{"account":" acme"}' }), multi(5, "alpha") }) do
      property(asked:snapshot(), function() return asked:classify(p) end, tally)
    end
    report("classify", tally)
  end)

  it("a core fault at any point of a stream of calls never makes a line an accept, and every line is decided",
      function()
    local e = assert(toolgate.new({ policy = "rung", registry = { REG .. "mcp-filesystem.json" } }))
    local good = '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}'
    local bad = '{"server":"filesystem","name":"read_text_file","arguments":{"path":1}}'
    local text = table.concat({ good, bad, "", good, "{", good, bad, good, "" }, "\n")
    local function run(threads)
      return function()
        local out, sent = {}, false
        local a, r, d = e:check_stream(function() if sent then return nil end sent = true return text end,
          function(...) out[#out + 1] = table.concat({ ... }) end, nil, threads)
        return { lines = table.concat(out), counts = { a, r, d } }
      end
    end
    local faults = 0
    for _, threads in ipairs({ 1, 2 }) do
      local _, ok, clean, calls = with_fault(e:snapshot(), 0, run(threads))
      assert(ok, clean)
      local clean_by_line, n_clean = {}, 0
      for l in clean.lines:gmatch("[^\n]+") do
        clean_by_line[l:match('"line":(%d+)')], n_clean = l, n_clean + 1
      end
      assert.equal(7, n_clean)
      for k = 1, calls do
        local fired, ok2, got = with_fault(e:snapshot(), k, run(threads))
        assert(ok2, got)
        if fired == "engine:workers" then
          assert.equal("", got.lines)
          assert.is_nil(got.counts[1])
        elseif fired then
          faults = faults + 1
          local numbers = {}
          for l in got.lines:gmatch("[^\n]+") do
            local n = l:match('"line":(%d+)')
            numbers[#numbers + 1] = n
            if l ~= clean_by_line[n] then assert.not_matches('"verdict":"accept"', l) end
          end
          -- a decision for every line, in order: none lost before the line that failed
          assert.same({ "1", "2", "4", "5", "6", "7", "8" }, numbers)
          assert.equal(7, got.counts[1] + got.counts[2] + got.counts[3])
        end
      end
    end
    assert.is_true(faults > 0)
  end)

  it("a core fault at any point of a stream of plans never makes a line an accept", function()
    local e = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "consistency" }, consistency = { min_samples = 3 } },
      registry = { DATA .. "consistency.json" },
    }))
    local s = '{"arguments":{"user_id":"u1"},"result":1,"epoch":"e1"}'
    local good = '{"plan_id":"g","tool":{"server":"sb","name":"lookup","deterministic":true,"verified":true},'
      .. '"samples":[' .. s .. "," .. s .. "," .. s .. "]}"
    local text = table.concat({ good, "{", good, '{"samples":[]}', good, "" }, "\n")
    local function run(threads)
      return function()
        local out = {}
        local sent = false
        local a, r, d = e:classify_stream(function() if sent then return nil end sent = true return text end,
          function(...) out[#out + 1] = table.concat({ ... }) end, nil, threads)
        return { lines = table.concat(out), counts = { a, r, d } }
      end
    end
    local faults = 0
    for _, threads in ipairs({ 1, 2 }) do
      local _, ok, clean, calls = with_fault(e:snapshot(), 0, run(threads))
      assert(ok, clean)
      local clean_lines = {}
      for l in clean.lines:gmatch("[^\n]+") do clean_lines[#clean_lines + 1] = l end
      assert.equal(5, #clean_lines)
      for k = 1, calls do
        local fired, ok2, got = with_fault(e:snapshot(), k, run(threads))
        assert(ok2, got)
        if fired == "engine:workers" then
          -- no threads: nothing is decided, and the stream says why
          assert.equal("", got.lines)
          assert.is_nil(got.counts[1])
          assert.matches("injected fault", got.counts[2], 1, true)
        elseif fired then
          faults = faults + 1
          local i = 0
          for l in got.lines:gmatch("[^\n]+") do
            i = i + 1
            if l ~= clean_lines[i] then assert.not_matches('"verdict":"accept"', l) end
          end
          assert.equal(#clean_lines, i) -- a decision for every line
        end
      end
    end
    assert.is_true(faults > 0)
  end)

  -- engine:check_file (what toolgate check runs) reads and writes through
  -- the core: a fault in opening the input, in a step of reading and
  -- deciding, or in writing a line the host decided stops the stream with
  -- a message, after decisions as without the fault -- never a line lost
  -- in the middle, never an accept.  In a child process, whose standard
  -- output the core writes to.  (A core failure at a line is
  -- spec/c/test_fail_closed.c's tg_check_reader property.)
  it("a fault reading or writing a stream read by the core stops it, after decisions as without it", function()
    local calls = h.tmpname(".jsonl")
    local good = '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}'
    local bad = '{"server":"filesystem","name":"read_text_file","arguments":{"path":1}}'
    local call_lines = {}
    for i = 1, 300 do call_lines[i] = i % 3 == 0 and bad or good end
    h.write_file(calls, table.concat(call_lines, "\n") .. "\n")
    local script = h.tmpname(".lua")
    h.write_file(script, [[
      package.path = ]] .. string.format("%q", package.path) .. [[
      package.cpath = ]] .. string.format("%q", package.cpath) .. [[
      local k, threads = tonumber(arg[1]), tonumber(arg[2])
      local toolgate = require "toolgate"
      -- a custom stage, so the host writes lines too
      local e = assert(toolgate.new({ registry = { ]] .. string.format("%q", REG .. "mcp-filesystem.json") .. [[ },
        policy = { name = "io", version = "1", stages = { "rung",
                   { name = "mine", run = function(call) return call.arguments.path == "/a" end } } } }))
      local snap = e:snapshot()
      local count, fired = 0, nil
      local function wrap(cls, m, failure)
        local f = cls[m]
        cls[m] = function(...)
          count = count + 1
          if count == k then fired = m; return failure, "injected fault", "IO_ERROR" end
          return f(...)
        end
      end
      wrap(getmetatable(snap.core).__index, "reader", nil)
      wrap(getmetatable(snap.core).__index, "write_fd", nil)
      wrap(getmetatable(assert(snap.core:decider())).__index, "check_reader", false)
      local a, r, d = e:check_file(]] .. string.format("%q", calls) .. [[, 1, nil, threads)
      io.stderr:write(string.format("fired=%s count=%d result=%s %s %s\n", tostring(fired), count,
        tostring(a), tostring(r), tostring(d)))
    ]])
    local function run(k, threads)
      local code, out, err = h.run(h.lua .. " " .. script .. " " .. k .. " " .. threads)
      assert.equal(0, code, err)
      return out, err
    end
    for _, threads in ipairs({ 1, 2 }) do
      local clean, info = run(0, threads)
      assert.matches("fired=nil", info, 1, true)
      assert.equal(300, select(2, clean:gsub("\n", "")))
      local calls_made = tonumber(info:match("count=(%d+)"))
      assert.is_true(calls_made > 200, info)
      -- the first faults, then a sample of the rest (a child process each)
      local k = 1
      while k <= calls_made do
        local out, err = run(k, threads)
        assert.not_matches("fired=nil", err)
        -- stopped with the fault's message, after a prefix of the clean output
        assert.matches("result=nil injected fault", err, 1, true)
        assert.equal(clean:sub(1, #out), out, "fault " .. k)
        assert.equal("\n", out == "" and "\n" or out:sub(-1))
        k = k + (k < 12 and 1 or 23)
      end
    end
    os.remove(script)
    os.remove(calls)
  end)

  it("a policy that errors in any hook never yields an accept", function()
    local boom = function() error("boom") end
    local call = { server = "ops", name = "read_log", arguments = { n = 1 } }
    local ctx = { scopes = { "logs:read" }, max_risk = "critical" }
    local function new(p)
      p.name, p.version = "fc", "1"
      return toolgate.new({ policy = p, registry = { DATA .. "contracts.json" } })
    end
    -- control: the same call is accepted when nothing fails
    assert.equal("accept", assert(new({ stages = { "rung", "gate", "verifier" } })):check(call, ctx).verdict)
    -- the contract mapping runs at load: a failing one fails the load
    local e, _, code = new({ contract = boom })
    assert.is_nil(e)
    assert.equal("POLICY_ERROR", code)
    e, _, code = new({ contract = function() return "not a table" end })
    assert.is_nil(e)
    assert.equal("POLICY_INVALID", code)
    -- hooks that run per call: an error, a spent budget, a bad return value
    local spin = function() while true do end end
    local hooks = {
      { gate = { admissible = boom }, stages = { "rung", "gate" } },
      { gate = { admissible = spin }, stages = { "rung", "gate" } },
      { gate = { admissible = function() return 42 end }, stages = { "rung", "gate" } },
      { stages = { "rung", { name = "c", run = boom } } },
      { stages = { "rung", { name = "c", run = spin } } },
      { stages = { "rung", { name = "c", run = function() return "yes" end } } },
      { stages = { "rung", { name = "c", run = function() return { verdict = "maybe" } end } } },
      { stages = { "rung", { name = "c", reads_contract = true, run = function(_, tool) return tool.contract.x.y end } } },
      { stages = { "rung", { name = "c", run = function() return { verdict = "defer" } end },
                   { name = "d", run = boom } } },
    }
    for i, p in ipairs(hooks) do
      for _, on_error in ipairs({ "reject", "defer" }) do
        p.on_error = on_error
        p.budget = 100000
        local eng = assert(new(p))
        local d = eng:check(call, ctx)
        assert.are_not.equal("accept", d.verdict, "hook " .. i)
        if d.code ~= "H4" then assert.equal(on_error, d.verdict, "hook " .. i) end
      end
    end
  end)

  it("a resolver that errors makes the plan a non-accept", function()
    local resolver = function() error("directory down") end
    local e = assert(toolgate.new({
      policy = { name = "fc", version = "1", stages = { "rung", "consistency" }, resolvers = { accounts = resolver },
                 consistency = { min_samples = 3 } },
      registry = { DATA .. "consistency.json" },
    }))
    local s = '{"arguments":{"account":"acme"},"result":1,"epoch":"e1"}'
    local d = e:classify('{"plan_id":"r","tool":{"server":"sb","name":"lookup","deterministic":true,"verified":true},'
      .. '"samples":[' .. s .. "," .. s .. "," .. s .. "]}")
    assert.are_not.equal("accept", d.verdict)
  end)

  it("a registry that fails to reload leaves the old one deciding as before", function()
    local path = h.tmpname(".json")
    h.write_file(path, h.read_file(DATA .. "contracts.json"))
    local e = assert(toolgate.new({ policy = { name = "fc", version = "1", stages = { "rung" } },
      registry = { "ops=" .. path } }))
    local calls = {
      { server = "ops", name = "read_log", arguments = { n = 1 } },
      { server = "ops", name = "read_log", arguments = { n = "1" } },
      { server = "ops", name = "nope", arguments = {} },
    }
    local before = {}
    for i, c in ipairs(calls) do before[i] = e:check(c).verdict end
    for _, broken in ipairs({ "{", '{"toolgate":1,"tools":[{"name":"read_log","input_schema":{"if":{}}}]}',
        '{"toolgate":1,"tools":[{"name":"read_log","input_schema":{"type":"object","properties":{"x":'
        .. '{"pattern":"' .. string.rep("a", 5000) .. '"}}}}]}' }) do
      h.write_file(path, broken)
      local ok, _, code = e:reload()
      assert.is_nil(ok)
      assert.is_string(code)
      for i, c in ipairs(calls) do assert.equal(before[i], e:check(c).verdict) end
    end
    os.remove(path)
  end)

  it("a result too large to read or hash is never accepted", function()
    local e = assert(toolgate.new({ policy = { name = "fc", version = "1", stages = { "rung", "verifier" } },
      registry = { DATA .. "contracts.json" }, limits = { max_input_bytes = 4096 } }))
    local call = { server = "ops", name = "read_log", arguments = { n = 1 } }
    for _, size in ipairs({ 4097, 10000, 1000000 }) do
      local big = '{"lines":["' .. string.rep("x", size) .. '"]}'
      local d = e:verify(call, big)
      assert.equal("reject", d.verdict)
      assert.equal("INPUT_TOO_LARGE", d.code)
      -- a plan carrying it is refused whole
      d = e:classify('{"plan_id":"b","tool":{"server":"ops","name":"read_log"},"samples":[{"arguments":{"n":1},'
        .. '"result":' .. big .. ',"epoch":"e"}]}')
      assert.are_not.equal("accept", d.verdict)
    end
    -- a determinism probe whose result cannot be hashed quarantines, never verifies
    local probe = e:probe("ops/read_log", { n = 1 }, function() return '["' .. string.rep("y", 5000) .. '"]' end, "e1")
    assert.equal("quarantined", probe.verdict)
  end)

  it("a check stopped by a limit rejects, on generated arguments", function()
    local reg = { { label = "re.json", text = [[{"toolgate":1,"server":"t","tools":[{"name":"x","input_schema":
      {"type":"object","properties":{"s":{"type":"string","pattern":"^(a|aa)+$"},"n":{"type":"integer"},
       "l":{"type":"array","items":{"type":"string"}}}}}]}]] } }
    local p = { name = "fc", version = "1", stages = { "rung" } }
    local full = assert(toolgate.new({ policy = p, registry = reg }))
    local limited = {}
    for _, lim in ipairs({ { max_validation_steps = 2 }, { max_validation_steps = 4 }, { max_validation_steps = 8 },
        { regex_match_limit = 50 }, { regex_match_limit = 500 } }) do
      local e = assert(toolgate.new({ policy = p, registry = reg, limits = lim }))
      for i = 1, 60 do
        local args = { s = string.rep("a", i % 25) .. (i % 3 == 0 and "b" or ""), n = i }
        if i % 2 == 0 then
          args.l = {}
          for j = 1, i % 7 do args.l[j] = "x" .. j end
        end
        local c = { server = "t", name = "x", arguments = args }
        local d = e:check(c)
        if d.code == "VALIDATION_LIMIT" or d.code == "REGEX_LIMIT" then
          assert.equal("reject", d.verdict)
          limited[d.code] = (limited[d.code] or 0) + 1
        else
          assert.equal(full:check(c).verdict, d.verdict) -- decided in full, as without the limit
        end
      end
    end
    assert.is_true((limited.VALIDATION_LIMIT or 0) > 0 and (limited.REGEX_LIMIT or 0) > 0)
  end)
end)
