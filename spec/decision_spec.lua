-- toolgate.decision and the decision path in C: what engine:check returns,
-- and that every way of deciding the same calls gives the same bytes --
-- the per-call API, the chunk path (check_stream), the input read and the
-- decisions written by the core (check_file, what toolgate check runs),
-- several threads, and the other interpreter's binding.
local toolgate = require "toolgate"
local decision = require "toolgate.decision"
local h = require "helpers"

local REG = h.root .. "/examples/registries/"
local REGS = { REG .. "mcp-filesystem.json", REG .. "mcp-everything.json", REG .. "mcp-memory.json" }

local function lines_of(path)
  local out = {}
  for l in io.lines(path) do out[#out + 1] = l end
  return out
end

-- Every call line the examples and the spec data hold, and hostile ones.
local function corpus()
  local out = {}
  for _, f in ipairs({ "mcp-calls.jsonl", "pipeline-calls.jsonl" }) do
    for _, l in ipairs(lines_of(h.root .. "/examples/calls/" .. f)) do out[#out + 1] = l end
  end
  for _, l in ipairs({
    "", "   ", '{"name":"read_text_file","arguments":{"path":"/a","path":"/b"}}', "[", "\255",
    '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":1}}}',
    '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"},"context":{"scopes":[]}}',
  }) do out[#out + 1] = l end
  return out
end

local POLICIES = { "default", "mcp", "example", "strict" }

local function engine(name, extra)
  local opts = { policy = h.root .. "/policies/" .. name .. ".lua", context = { scopes = { "filesystem:read" },
    max_risk = "medium", epoch = "e1" } }
  -- example.lua names its own filesystem and memory sources
  opts.registry = name == "example" and { REG .. "mcp-everything.json" } or REGS
  for k, v in pairs(extra or {}) do opts[k] = v end
  return assert(toolgate.new(opts))
end

describe("a decision", function()
  local e = engine("mcp")

  it("carries verdict, code and stage, and the core's JSON", function()
    local d = e:check('{"server":"filesystem","name":"write_file","arguments":{"path":"/a","content":"x"}}')
    assert.is_true(decision.is(d))
    assert.same({ "reject", "H4", "gate" }, { d.verdict, d.code, d.stage })
    local t = d:table()
    assert.equal("filesystem", t.server)
    assert.equal(d:json(), toolgate.canon(d:json())) -- canonical already
    assert.equal(t.message, d.message)                -- other fields read through the table
  end)

  it("has no code when it accepts", function()
    local d = e:check('{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}')
    assert.equal("accept", d.verdict)
    assert.is_nil(d.code)
    assert.equal("verifier", d.stage)
  end)

  -- Under LuaJIT (the nginx path) a check is compiled, accept and reject
  -- alike: a trace that cannot be compiled is retried at every exit taken,
  -- and the calls that take it run interpreted.  (A guard on the code after
  -- the decision table was allocated made every reject abort its side trace
  -- with "register coalescing too complex", hundreds of times a run.)
  it("is decided by compiled code under LuaJIT, accepts and rejects alike", function()
    if not jit then return pending("LuaJIT only: Lua 5.4 has no JIT") end
    local calls = {
      '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}',
      '{"server":"filesystem","name":"read_text_file","arguments":{"path":1}}',
      '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/b","x":2}}',
      '{"server":"filesystem","name":"list_allowed_directories","arguments":{}}',
    }
    local r = engine("rung")
    local aborts = {}
    local function on_trace(what, _, func, pc, code, info)
      if what == "abort" then
        local why = require("jit.vmdef").traceerr[code] or tostring(code)
        aborts[#aborts + 1] = tostring(require("jit.util").funcinfo(func, pc).loc) .. ": "
          .. (type(info) == "string" and why:format(info) or why)
      end
    end
    jit.flush()
    jit.attach(on_trace, "trace")
    local verdicts = {}
    local ok, err = pcall(function()
      for i = 1, 4000 do
        local d = r:check(calls[i % #calls + 1])
        verdicts[d.verdict] = (verdicts[d.verdict] or 0) + 1
      end
    end)
    jit.attach(on_trace)
    assert(ok, err)
    assert.same({ accept = 2000, reject = 2000 }, verdicts)
    -- a few aborts while the loop's traces settle are LuaJIT's way; one
    -- retried at every exit is not
    assert.is_true(#aborts <= 20, #aborts .. " trace aborts, first: " .. tostring(aborts[1]))
  end)

  it("writes names that need escaping as their canonical JSON strings", function()
    -- the policy's version, its stage names and the registry's names are
    -- written as JSON once, at load, and copied into every decision
    local server, stage = 's"v\\1\226\128\168', 'st"age\n' -- \226\128\168: U+2028, written as it is
    local reg = '{"toolgate":1,"server":"s\\"v\\\\1\\u2028","tools":[{"name":"t.1","input_schema":{"type":"object"}}]}'
    local odd = assert(toolgate.new({ registry = { { label = "odd.json", text = reg } },
      policy = { name = 'p"q', version = "1\\2",
        stages = { "rung", { name = stage, run = function() return false, "no" end } } } }))
    local d = odd:check({ server = server, name = "t.1", arguments = {} })
    local t = d:table()
    assert.same({ "reject", stage, server, "t.1" }, { t.verdict, t.stage, t.server, t.tool })
    assert.same({ "rung", stage }, t.stages)
    assert.equal('p"q@1\\2', t.policy_version)
    assert.equal(d:json(), toolgate.canon(d:json()))
  end)

  it("built in Lua writes the same way", function()
    local d = e:classify('{"plan_id":"p","samples":[]}')
    assert.is_true(decision.is(d))
    assert.equal("INSUFFICIENT_SAMPLES", d.code)
    assert.equal(d:json(), toolgate.canon(d:json()))
  end)
end)

describe("every way of deciding gives the same bytes", function()
  local calls = corpus()

  -- what engine:check gives call line by call line: every other way must give it
  local function per_call(e)
    local out = {}
    for i, l in ipairs(calls) do
      if l:find("%S") then out[#out + 1] = e:check(l, nil, i):json() .. "\n" end
    end
    return table.concat(out)
  end

  for _, name in ipairs(POLICIES) do
    it("per call, by chunks and on threads: " .. name, function()
      local e = engine(name)
      local want = per_call(e)
      local text = table.concat(calls, "\n") .. "\n"
      for _, piece in ipairs({ 1, 7, 64, #text }) do
        for _, threads in ipairs({ 1, 3 }) do
          local at, out = 1, {}
          local acc, rej, def = e:check_stream(function()
            if at > #text then return nil end
            local s = text:sub(at, at + piece - 1)
            at = at + piece
            return s
          end, function(...) for i = 1, select("#", ...) do out[#out + 1] = select(i, ...) end end, nil, threads)
          assert.equal(want, table.concat(out), name .. ": pieces of " .. piece .. ", " .. threads .. " threads")
          local n = 0
          for _ in want:gmatch("\n") do n = n + 1 end
          assert.equal(n, acc + rej + def)
        end
      end
    end)
  end

  -- toolgate check reads the input and writes the decisions in the core
  -- (engine:check_file): the same bytes as per call, from a file or a pipe
  -- (which read(2) gives in pieces), the last line without its newline
  for _, name in ipairs(POLICIES) do
    it("read and written by the core, from a file and a pipe, on threads: " .. name, function()
      local e = engine(name)
      local want = per_call(e)
      local ctx, input = h.tmpname(".json"), h.tmpname(".jsonl")
      h.write_file(ctx, '{"scopes":["filesystem:read"],"max_risk":"medium","epoch":"e1"}')
      h.write_file(input, table.concat(calls, "\n"))
      local regs = name == "example" and { REG .. "mcp-everything.json" } or REGS
      local cmd = h.lua .. " " .. h.root .. "/bin/toolgate check --policy " .. h.root .. "/policies/" .. name
        .. ".lua --context " .. ctx .. " --registry " .. table.concat(regs, " --registry ")
      for _, threads in ipairs({ 1, 3 }) do
        local code, out, err = h.run(cmd .. " --threads " .. threads .. " " .. input)
        assert.equal(0, code, err)
        assert.equal(want, out, name .. ", a file, " .. threads .. " threads")
        code, out, err = h.run("sh -c " .. h.shell_quote("cat " .. input .. " | " .. cmd .. " --threads " .. threads))
        assert.equal(0, code, err)
        assert.equal(want, out, name .. ", a pipe, " .. threads .. " threads")
      end
      os.remove(ctx)
      os.remove(input)
    end)
  end

  it("on threads, over a corpus large enough to be shared out", function()
    local e = engine("default")
    local base = table.concat(corpus(), "\n") .. "\n"
    local text = base:rep(200) -- about 10,000 lines, past the chunk size a thread gets
    local function run(threads)
      local out, done = {}, false
      e:check_stream(function() if done then return nil end done = true return text end,
        function(s) out[#out + 1] = s end, nil, threads)
      return table.concat(out)
    end
    local one = run(1)
    assert.equal(one, run(2))
    assert.equal(one, run(4))
    -- read by the core in pieces of 1 MiB a thread (engine:check_file)
    local text4 = text:rep(3) -- about 5 MiB, several pieces
    local ctx, input = h.tmpname(".json"), h.tmpname(".jsonl")
    h.write_file(ctx, '{"scopes":["filesystem:read"],"max_risk":"medium","epoch":"e1"}')
    h.write_file(input, text4)
    local cmd = h.lua .. " " .. h.root .. "/bin/toolgate check --policy " .. h.root .. "/policies/default.lua"
      .. " --context " .. ctx .. " --registry " .. table.concat(REGS, " --registry ") .. " " .. input
    local outs = {}
    for _, threads in ipairs({ 1, 2, 4 }) do
      local code, out, err = h.run(cmd .. " --threads " .. threads)
      assert.equal(0, code, err)
      outs[#outs + 1] = out
    end
    os.remove(ctx)
    os.remove(input)
    assert.is_true(#outs[1] > #one * 2)
    assert.equal(outs[1], outs[2])
    assert.equal(outs[1], outs[3])
  end)

  it("whichever interpreter runs the command", function()
    local input = h.tmpname(".jsonl")
    h.write_file(input, table.concat(corpus(), "\n") .. "\n")
    local o1, o2 = h.run_both(h.root .. "/bin/toolgate check --policy mcp --registry "
      .. table.concat(REGS, " --registry ") .. " " .. input)
    os.remove(input)
    assert.equal(o1, o2)
  end)
end)

describe("compiled objects", function()
  it("may be collected in any order, and left to the interpreter's end", function()
    for order = 1, 3 do
      local e = engine("default")
      local snap = e:snapshot()
      local objs = { snap.compiled, snap.context, assert(snap.core:decider()), assert(snap.core:workers(2)) }
      local keep = { objs[order] } -- one of them outlives the others
      e, snap, objs = nil, nil, nil -- luacheck: ignore 311
      collectgarbage()
      collectgarbage()
      assert.equal(1, #keep)
      keep = nil -- luacheck: ignore 311
      collectgarbage()
    end
    local script = h.tmpname(".lua")
    h.write_file(script, [[
      package.path = ]] .. string.format("%q", package.path) .. [[
      package.cpath = ]] .. string.format("%q", package.cpath) .. [[
      local toolgate = require "toolgate"
      E = assert(toolgate.new{ policy = ]] .. string.format("%q", h.root .. "/policies/mcp.lua") .. [[,
        registry = { ]] .. string.format("%q", REGS[1]) .. [[ } })
      C = E:context({ scopes = {} })
      D = E:snapshot().core:decider()
      W = E:snapshot().core:workers(3)
      print(E:check('{"server":"filesystem","name":"write_file","arguments":{"path":"/a","content":""}}').verdict)
    ]])
    local code, out = h.run(h.lua .. " " .. script)
    os.remove(script)
    assert.equal(0, code)
    assert.equal("reject\n", out)
  end)
end)
