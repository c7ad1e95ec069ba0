-- The call shapes the SDKs emit (spec/data/calls/sdk.jsonl, made by
-- spec/sdk/make-fixtures.mjs with the SDKs' own code), each decoded as
-- sdk.expect.jsonl says: every call of a valid shape found and accepted,
-- every hostile variant refused with its code.  Under both interpreters,
-- through both bindings, the engine and the command line; and the fixtures
-- are regenerated from the pinned SDKs and compared, when node and
-- spec/sdk/node_modules are there.
local cjson = require "cjson"
local toolgate = require "toolgate"
local h = require "helpers"

local DIR = h.root .. "/spec/data/calls/"

local function read_lines(path)
  local out = {}
  for l in io.lines(path) do out[#out + 1] = l end
  return out
end

local LINES, EXPECT = read_lines(DIR .. "sdk.jsonl"), {}
for i, l in ipairs(read_lines(DIR .. "sdk.expect.jsonl")) do EXPECT[i] = cjson.decode(l) end

local function engine()
  return assert(toolgate.new({ policy = { name = "calls", version = "1", stages = { "rung" } },
    registry = { DIR .. "registry.json" } }))
end

describe("the SDKs' call shapes", function()
  it("has one expectation per fixture, and fixtures of every shape", function()
    assert.equal(#LINES, #EXPECT)
    local shapes = {}
    for _, x in ipairs(EXPECT) do if x.format then shapes[x.format] = true end end
    for _, s in ipairs({ "openai", "openai-tool-calls", "openai-message", "openai-chat", "openai-function-call",
        "openai-responses", "anthropic", "anthropic-message", "mcp", "mcp-batch" }) do
      assert.is_true(shapes[s], s)
    end
  end)

  it("decodes each as its expectation says", function()
    local core = engine():snapshot().core
    for i, line in ipairs(LINES) do
      local x = EXPECT[i]
      local calls, msg, code = core:decode_calls(line)
      if x.code then
        assert.is_nil(calls, x.case)
        assert.equal(x.code, code, x.case)
        assert.matches(x.message, msg, 1, true)
      else
        assert.is_not_nil(calls, x.case .. ": " .. tostring(msg))
        assert.equal(x.format, calls:shape(), x.case)
        assert.equal(#x.calls, calls:count(), x.case)
        for k, want in ipairs(x.calls) do
          local c = calls:at(k)
          assert.equal(want.tool, c:name(), x.case)
          assert.equal(want.server ~= cjson.null and want.server or nil, c:server(), x.case)
          assert.equal(core:canon(cjson.encode(want.arguments)), c:arguments():canon(), x.case)
          assert.equal(x.format, c:shape())
        end
        calls:free()
      end
    end
  end)

  it("checks each: every call of a valid line accepted, in order, each hostile line refused", function()
    local e = engine()
    for i, line in ipairs(LINES) do
      local x = EXPECT[i]
      local ds = e:check_all(line)
      if x.code then
        assert.equal(1, #ds, x.case)
        assert.equal("reject", ds[1].verdict, x.case)
        assert.equal(x.code, ds[1].code, x.case)
        assert.is_nil(ds[1].index)
      else
        assert.equal(#x.calls, #ds, x.case)
        for k, d in ipairs(ds) do
          assert.equal("accept", d.verdict, x.case .. ": " .. tostring(d.message))
          assert.equal(k - 1, d.index)
          assert.equal(x.format, d.format)
          assert.equal(x.calls[k].tool, d.tool)
        end
      end
    end
  end)

  it("toolgate check writes a decision per call with line, index and format; --fail-on counts calls", function()
    local code, out, err = h.toolgate("check --registry " .. DIR .. "registry.json --fail-on reject "
      .. DIR .. "sdk.jsonl")
    assert.equal(1, code, err)
    local want = {}
    for i, x in ipairs(EXPECT) do
      if x.code then
        want[#want + 1] = { line = i, code = x.code }
      else
        for k, c in ipairs(x.calls) do
          want[#want + 1] = { line = i, index = k - 1, format = x.format, tool = c.tool }
        end
      end
    end
    local got = {}
    for l in out:gmatch("[^\n]+") do
      local d = cjson.decode(l)
      got[#got + 1] = { line = d.line, index = d.index, format = d.format, code = d.code, tool = d.tool }
    end
    assert.same(want, got)
  end)

  it("keeps a line's calls alive while a call or node of them is, and not after calls:free()", function()
    local core = engine():snapshot().core
    local calls = assert(core:decode_calls(LINES[1]))
    local c = calls:at(2)
    local args = calls:at(1):arguments()
    assert.is_nil(calls:at(0))
    assert.is_nil(calls:at(3))
    assert.has_error(function() calls:at("1") end)
    calls = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.equal('{"city":"Oslo"}', args:canon()) -- the node keeps the set
    assert.equal("get_time", c:name()) -- and so does the view
    c:free() -- a view frees nothing ...
    assert.has_error(function() c:name() end) -- ... but is done with
    assert.equal('{"city":"Oslo"}', args:canon())
    local again = assert(core:decode_calls(LINES[1]))
    local view, node = again:at(1), again:at(1):arguments()
    again:free()
    assert.has_error(function() view:name() end)
    assert.has_error(function() node:canon() end)
    assert.has_error(function() again:count() end)
    assert.has_error(function() core:decode_calls(LINES[1], "gemini") end)
  end)

  it("are what the pinned SDKs make (regenerated and compared), member lists included", function()
    if not h.npm_peer("openai", pending, "spec/sdk") then return end
    local dir = h.tmpname(".d")
    local code, out, err = h.run("node " .. h.root .. "/spec/sdk/make-fixtures.mjs " .. dir)
    assert.equal(0, code, err .. out)
    for _, f in ipairs({ "sdk.jsonl", "sdk.expect.jsonl" }) do
      local fresh = h.read_file(dir .. "/" .. f)
      os.remove(dir .. "/" .. f)
      assert.equal(h.read_file(DIR .. f), fresh, f .. " differs from what make-fixtures.mjs makes now")
    end
    os.remove(dir)
  end)
end)
