-- toolgate test: the shipped policies specified by their own case files
-- (policies/tests/), mutated copies of those files each caught with the
-- difference it makes, and the command's own behaviour (Lua case files,
-- --update, exit codes).
local h = require "helpers"
local cjson = require "cjson"

local MCP = "--registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-memory.json"
local OPS = "--registry policies/tests/ops.json"

-- Each shipped policy, the registry its cases run against, and its case file.
local SHIPPED = {
  { policy = "default", flags = OPS, cases = 27 },
  { policy = "strict", flags = OPS, cases = 27 },
  { policy = "rung", flags = OPS, cases = 27 },
  { policy = "mcp", flags = MCP, cases = 15 },
  { policy = "gateway", flags = MCP, cases = 15 },
  { policy = "example", flags = "", cases = 16 }, -- its registry is its own sources
}

local function run_test(args)
  return h.run("cd " .. h.shell_quote(h.root) .. " && " .. h.lua .. " bin/toolgate test " .. args)
end

local function case_file(name) return h.root .. "/policies/tests/" .. name .. ".jsonl" end

local function read_cases(path)
  local out = {}
  for line in assert(h.read_file(path)):gmatch("([^\n]*)\n") do out[#out + 1] = cjson.decode(line) end
  return out
end

local function write_cases(path, cases)
  local text = {}
  for i, c in ipairs(cases) do text[i] = cjson.encode(c) end
  h.write_file(path, table.concat(text, "\n") .. "\n")
end

-- the expectation objects of a case (one, or a list for several calls)
local function objects(expect)
  if expect[1] ~= nil then return expect end
  return { expect }
end

local OTHER_VERDICT = { accept = "reject", reject = "defer", defer = "accept" }

describe("toolgate test on the shipped policies", function()
  for _, s in ipairs(SHIPPED) do
    local args = "--policy " .. s.policy .. " " .. s.flags .. " policies/tests/" .. s.policy .. ".jsonl"

    it(s.policy .. ": every case passes", function()
      local code, out, err = run_test(args)
      assert.equal(0, code, out .. err)
      assert.equal(s.cases .. " passed, 0 failed\n", out)
    end)

    -- mutant(mutate): every expectation object of a copy of the case file
    -- changed by mutate(e) -> the difference line it must cause; the run
    -- on the copy must print exactly those, one line per case
    local function mutant(mutate)
      local cases = read_cases(case_file(s.policy))
      local want = {}
      for n, c in ipairs(cases) do
        local list = objects(c.expect)
        local diffs = {}
        for i, e in ipairs(list) do diffs[i] = (#list > 1 and ("[" .. (i - 1) .. "] ") or "") .. mutate(e) end
        want[n] = string.format("MUTANT:%d: %s: %s", n, c.name, table.concat(diffs, "; "))
      end
      local path = h.tmpname(".jsonl")
      write_cases(path, cases)
      local code, out = run_test(args:gsub("policies/tests/%S+$", path))
      os.remove(path)
      assert.equal(1, code, out)
      want[#want + 1] = "0 passed, " .. #cases .. " failed"
      -- each line goes on with the decisions it got ("; decision: CODE from STAGE: message"): not what is compared here
      assert.equal(table.concat(want, "\n"):gsub("MUTANT", path) .. "\n", (out:gsub("; decision[^\n]*", "")))
    end

    it(s.policy .. ": a copy with every verdict changed fails every case, naming the verdicts", function()
      mutant(function(e)
        local was = e.verdict
        e.verdict = OTHER_VERDICT[was]
        return string.format('verdict: expected "%s", got "%s"', e.verdict, was)
      end)
    end)

    it(s.policy .. ": a copy pinning a code no stage gives fails every case, with the code it got", function()
      mutant(function(e)
        local got = e.code and ('"' .. e.code .. '"') or "absent"
        e.code = "NO_SUCH_CODE"
        return 'code: expected "NO_SUCH_CODE", got ' .. got
      end)
    end)
  end

  it("a mutated policy (default with max_risk raised to high) is caught by the default cases", function()
    local text = assert(h.read_file(h.root .. "/policies/default.lua"))
    local mutated, n = text:gsub('max_risk = "medium"', 'max_risk = "high"')
    assert.equal(1, n)
    local dir = h.tmpname("-policy")
    assert(os.execute("mkdir " .. h.shell_quote(dir)))
    h.write_file(dir .. "/default.lua", mutated)
    local code, out = run_test("--policy " .. dir .. "/default.lua " .. OPS .. " policies/tests/default.jsonl")
    os.remove(dir .. "/default.lua")
    os.remove(dir)
    assert.equal(1, code, out)
    assert.equal('policies/tests/default.jsonl:10: a high-risk tool under the default max_risk: '
      .. 'code: expected "H4", got absent; stage: expected "gate", got "verifier"; '
      .. 'verdict: expected "reject", got "accept"\n'
      .. "26 passed, 1 failed\n", out)
  end)
end)

describe("toolgate test", function()
  local function with_file(suffix, text, fn)
    local path = h.tmpname(suffix)
    h.write_file(path, text)
    local ok, err = pcall(fn, path)
    os.remove(path)
    if not ok then error(err, 0) end
  end

  local READ = '{"server":"ops","name":"read_log","arguments":{"service":"web"}}'

  it("reads Lua case files, a call given as a table or as text, and names the case in a failure", function()
    with_file(".lua", [[
return {
  { call = { server = "ops", name = "read_log", arguments = { service = "web" } },
    context = { scopes = { "logs:read" } }, expect = { verdict = "accept" } },
  { name = "anthropic", call = '{"type":"tool_use","id":"t1","name":"read_log","input":{"service":"db"}}',
    expect = { verdict = "accept" } },
}]], function(path)
      local code, out = run_test(OPS .. " " .. path)
      assert.equal(1, code, out)
      assert.equal(path .. ': case 2: anthropic: verdict: expected "accept", got "reject"; decision: H4 from gate: '
        .. 'scope "logs:read" is required and not granted\n1 passed, 1 failed\n', out)
    end)
  end)

  it("pins an absent field with null, and a message of several calls with a list (the first compared "
    .. "when the counts differ)", function()
    local two = '{"role":"assistant","content":null,"tool_calls":['
      .. '{"id":"a","type":"function","function":{"name":"read_log","arguments":"{\\"service\\":\\"web\\"}"}},'
      .. '{"id":"b","type":"function","function":{"name":"nope","arguments":"{}"}}]}'
    with_file(".jsonl", '{"call":' .. READ .. ',"context":{"scopes":["logs:read"]},"expect":{"code":null}}\n'
      .. '{"call":' .. two .. ',"context":{"scopes":["logs:read"]},"expect":[{"verdict":"accept"},{"code":"H1"}]}\n'
      .. '{"call":' .. two .. ',"expect":{"verdict":"accept"}}\n', function(path)
      local code, out = run_test(OPS .. " " .. path)
      assert.equal(1, code, out)
      assert.equal(path .. ':3: decisions: expected 1, got 2; verdict: expected "accept", got "reject"; '
        .. 'decision [0]: H4 from gate: scope "logs:read" is required and not granted; '
        .. 'decision [1]: H1 from rung: no tool named "nope" on any server\n'
        .. "2 passed, 1 failed\n", out)
    end)
  end)

  it("--update writes the outcomes, keeps the fields a case pins, and leaves passing lines as they are", function()
    local passing = '{ "call": ' .. READ .. ', "context": {"scopes": ["logs:read"]}, "expect": {"verdict": "accept"} }'
    with_file(".jsonl", passing .. "\n\n"
      .. '{"call":' .. READ .. ',"expect":{"verdict":"accept","path":"/x"}}\n'
      .. '{"call":{"server":"ops","name":"read_log","arguments":{"n":0}}}\n', function(path)
      local code, out = run_test("--update " .. OPS .. " " .. path)
      assert.equal(0, code, out)
      assert.equal(path .. ":3: updated\n" .. path .. ":4: updated\n3 cases written\n", out)
      assert.equal(passing .. "\n\n"
        .. '{"call":{"arguments":{"service":"web"},"name":"read_log","server":"ops"},'
        .. '"expect":{"path":null,"verdict":"reject"}}\n'
        .. '{"call":{"arguments":{"n":0},"name":"read_log","server":"ops"},'
        .. '"expect":{"code":"H2","path":"/service","stage":"rung","verdict":"reject"}}\n', h.read_file(path))
      code, out = run_test(OPS .. " " .. path)
      assert.equal(0, code, out)
      assert.equal("3 passed, 0 failed\n", out)
    end)
  end)

  it("keeps integers beyond 2^53 exact through --update", function()
    with_file(".jsonl", '{"call":{"server":"ops","name":"read_log","arguments":{"service":"web","n":9007199254740993}}}\n',
      function(path)
        assert.equal(0, (run_test("--update " .. OPS .. " " .. path)))
        assert.matches('"n":9007199254740993,', h.read_file(path), 1, true)
        assert.matches('"code":"H3","path":"/n"', h.read_file(path), 1, true)
      end)
  end)

  it("exits 2 on a case file it cannot read, naming the line", function()
    for text, msg in pairs({
      ['{"call":{},"plan":{},"expect":{}}\n'] = ':1: a case needs exactly one of "call" and "plan"',
      ['\n{"call":{},"expect":{},"extra":1}\n'] = ':2: unknown member "extra"',
      ['{"call":' .. READ .. '}\n'] = ':1: a case needs "expect" (toolgate test --update writes it)',
      ['{"call":' .. READ .. ',"expect":{}\n'] = ":1: ",
      ['[1]\n'] = ":1: a case must be an object",
    }) do
      with_file(".jsonl", text, function(path)
        local code, out, err = run_test(OPS .. " " .. path)
        assert.equal(2, code, out .. err)
        assert.equal("", out)
        assert.matches(path .. msg, err, 1, true)
      end)
    end
    local code, _, err = run_test(OPS .. " /nonexistent/cases.jsonl")
    assert.equal(2, code)
    assert.matches("cannot read", err, 1, true)
    code, _, err = run_test(OPS)
    assert.equal(2, code)
    assert.matches("no CASES file", err, 1, true)
  end)

  it("refuses --update on a Lua case file (it cannot rewrite Lua)", function()
    with_file(".lua", "return {}", function(path)
      local code, _, err = run_test("--update " .. OPS .. " " .. path)
      assert.equal(2, code)
      assert.matches("--update rewrites JSON Lines case files only", err, 1, true)
    end)
  end)
end)
