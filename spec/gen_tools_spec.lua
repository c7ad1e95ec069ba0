-- bench/gen_tools.py, the registry generator `make bench` measures load,
-- memory and reload with: the same seed gives the same bytes, and what it
-- writes loads whole (formats asserted) and decides calls on the rung.
local toolgate = require "toolgate"
local cjson = require "cjson"
local h = require "helpers"

local GEN = "python3 " .. h.root .. "/bench/gen_tools.py"

local function gen(args)
  local code, out, err = h.run(GEN .. " " .. args)
  assert.equal(0, code, err)
  return out
end

describe("bench/gen_tools.py", function()
  it("writes the same bytes for the same seed, other bytes for another seed", function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    local a = gen("--seed 3 --count 120")
    assert.equal(a, gen("--seed 3 --count 120"))
    assert.are_not.equal(a, gen("--seed 4 --count 120"))
  end)

  it("writes a registry that loads whole with formats asserted, every tool known and its closed world kept", function()
    local text = gen("--seed 5 --count 150 --server bench")
    local tools = cjson.decode(text).tools
    assert.equal(150, #tools)
    local per_tool = #text / #tools
    assert.is_true(per_tool > 1500 and per_tool < 8000, "bytes a tool: " .. per_tool)
    local path = h.tmpname(".json")
    h.write_file(path, text)
    local e = assert(toolgate.new({ policy = "rung", assert_formats = true, registry = { path } }))
    os.remove(path)
    local open_tool
    for _, t in ipairs(tools) do
      local d = e:check({ server = "bench", name = t.name, arguments = {} })
      assert.are_not.equal("H1", d.code, t.name)
      if not t.inputSchema.required and not open_tool then open_tool = t.name end
    end
    assert.truthy(open_tool, "a tool with no required argument")
    assert.equal("accept", e:check({ server = "bench", name = open_tool, arguments = {} }).verdict)
    local d = e:check({ server = "bench", name = open_tool, arguments = { zz_undeclared = 1 } })
    assert.equal("reject", d.verdict)
  end)

  it("deals the same tools into several servers' files that load together", function()
    local dir = h.tmpname("-split")
    local listed = gen("--seed 5 --count 90 --servers 3 --server s --out-dir " .. h.shell_quote(dir))
    local files = h.lines_of(listed)
    assert.equal(3, #files)
    local e = assert(toolgate.new({ registry = files }))
    for _, f in ipairs(files) do os.remove(f) end
    os.remove(dir)
    local one = cjson.decode(gen("--seed 5 --count 90")).tools
    for i = 1, 3 do
      local server = string.format("s-%02d", i)
      assert.are_not.equal("H1", e:check({ server = server, name = one[i].name, arguments = {} }).code)
    end
  end)
end)
