-- Registry images (docs/registry-image.md, core/tg_image.c): compiled by
-- `toolgate registry compile`, taken wherever a registry file is (known by
-- its magic), giving the files' decisions, findings, pins and registry_hash
-- byte for byte; a stale, corrupt or truncated image is refused, never used.
local h = require "helpers"
local core = require "toolgate.core"
local toolgate = require "toolgate"

local q = h.shell_quote
local root = h.root
local MCP = { "examples/registries/mcp-filesystem.json", "examples/registries/mcp-everything.json",
              "examples/registries/mcp-memory.json" }

local function run(args)
  return h.run("cd " .. q(root) .. " && " .. h.lua .. " bin/toolgate " .. args)
end

-- compile(output, sources...) -> the summary line; the compile must succeed
local function compile(output, ...)
  local code, out, err = run("registry compile --output " .. q(output) .. " " .. table.concat({ ... }, " "))
  assert(code == 0, err)
  return out
end

-- a policy file's hash in policy_version changes with any edit to it
local function mask(s) return (s:gsub("(@[%w.-]+%+)%x%x%x%x%x%x%x%x%x%x%x%x", "%1<hash>")) end

describe("registry images", function()
  local tmp = h.tmpname("-images")
  setup(function() assert(os.execute("mkdir -p " .. q(tmp))) end)
  teardown(function() os.execute("rm -rf " .. q(tmp)) end)

  it("check gives the files' decisions byte for byte from an image: the policies' corpora, the MCP bench calls, "
    .. "the SDK shapes", function()
    local ops = tmp .. "/ops.tgimg"
    compile(ops, "policies/tests/ops.json")
    local mcp = tmp .. "/mcp.tgimg"
    compile(mcp, table.unpack(MCP))
    local sdk = tmp .. "/sdk.tgimg"
    compile(sdk, "spec/data/calls/registry.json")
    local bench = tmp .. "/bench.jsonl"
    local code, calls, err = h.run("cd " .. q(root) .. " && python3 bench/gen_mcp_calls.py --seed 1 --count 400 "
      .. "--native --schemas-out " .. q(tmp .. "/schemas.json"))
    assert(code == 0, err)
    h.write_file(bench, calls)
    local D = "spec/data/explain/"
    local runs = {
      { "--policy default --context " .. D .. "ops-context.json " .. D .. "ops-calls.jsonl", "policies/tests/ops.json", ops },
      { "--policy strict --context " .. D .. "ops-context.json " .. D .. "ops-calls.jsonl", "policies/tests/ops.json", ops },
      { "--policy gateway --context " .. D .. "mcp-context.json " .. D .. "mcp-calls.jsonl",
        table.concat(MCP, " --registry "), mcp },
      { "--policy rung " .. q(bench), table.concat(MCP, " --registry "), mcp },
      { "--policy mcp --context " .. D .. "mcp-context.json " .. D .. "mcp-calls.jsonl",
        table.concat(MCP, " --registry "), mcp },
      { "--policy rung spec/data/calls/sdk.jsonl", "spec/data/calls/registry.json", sdk },
    }
    for _, r in ipairs(runs) do
      local c1, from_files, e1 = run("check --registry " .. r[2] .. " " .. r[1])
      local c2, from_image, e2 = run("check --registry " .. q(r[3]) .. " " .. r[1])
      assert.equal(c1, c2, e2)
      assert.is_true(#from_files > 0, e1)
      assert.equal(mask(from_files), mask(from_image), r[1])
      assert.equal(e1, e2)
    end
  end)

  it("the generated registry of 1,000 MCP tools: check's decisions, lint's findings and registry_hash from the image "
    .. "are the file's", function()
    local gen = tmp .. "/gen"
    local code, _, err = h.run("cd " .. q(root) .. " && python3 bench/gen_tools.py --seed 1 --count 1000 --out-dir "
      .. q(gen))
    assert(code == 0, err)
    local reg = "gen=" .. q(gen .. "/gen-01.json")
    -- per tool, a call with no arguments and one with a value of each property's type: every schema is walked
    h.write_file(tmp .. "/calls.py", [[
import json, sys
def value(s, depth=0):
    if not isinstance(s, dict) or depth > 4: return "x"
    if "const" in s: return s["const"]
    if s.get("enum"): return s["enum"][0]
    t = s.get("type")
    if isinstance(t, list): t = t[0] if t else None
    if t == "integer": return s.get("minimum", 1)
    if t == "number": return s.get("minimum", 1.5)
    if t == "boolean": return True
    if t == "null": return None
    if t == "array": return [value(s["items"], depth + 1)] if isinstance(s.get("items"), dict) else []
    if t == "object": return {k: value(v, depth + 1) for k, v in sorted(s.get("properties", {}).items())}
    return "x" * max(1, s.get("minLength", 1))
for t in json.load(open(sys.argv[1]))["tools"]:
    for args in ({}, value(t.get("inputSchema"))):
        print(json.dumps({"server": "gen", "name": t["name"], "arguments": args}, sort_keys=True))
]])
    local calls = tmp .. "/gen-calls.jsonl"
    local text
    code, text, err = h.run("python3 " .. q(tmp .. "/calls.py") .. " " .. q(gen .. "/gen-01.json"))
    assert(code == 0, err)
    h.write_file(calls, text)
    local image = tmp .. "/gen.tgimg"
    local summary = compile(image, reg)
    local verdicts = {}
    for _, policy in ipairs({ "rung", "mcp" }) do
      local c1, from_file, e1 = run("check --policy " .. policy .. " --registry " .. reg .. " " .. q(calls))
      local c2, from_image, e2 = run("check --policy " .. policy .. " --registry gen=" .. q(image) .. " " .. q(calls))
      assert.equal(c1, c2, e2)
      assert.equal(e1, e2)
      assert.equal(from_file, from_image, policy)
      for v in from_image:gmatch('"verdict":"(%a+)"') do verdicts[v] = (verdicts[v] or 0) + 1 end
    end
    -- both verdicts are there: the calls reach the schemas' keywords, not only the tool lookup
    assert.is_true((verdicts.accept or 0) > 500 and (verdicts.reject or 0) > 500)
    local c1, from_file = run("registry lint " .. reg)
    local c2, from_image = run("registry lint gen=" .. q(image))
    assert.equal(c1, c2)
    assert.equal(from_file, from_image)
    assert.truthy(summary:match('"registry_hash":"(%x+)"'))
    assert.equal(from_file:match('"registry_hash":"(%x+)"'), summary:match('"registry_hash":"(%x+)"'))
  end)

  it("registry lint gives the same findings and registry_hash; compile fails on a registry that does not load",
    function()
      for _, reg in ipairs({ "spec/data/registries/bad_names.json", "spec/data/registries/contracts.json",
          "spec/data/registries/openai.json", "spec/data/registries/anthropic.json",
          "spec/data/registries/formats.json", "ops=policies/tests/ops.json" }) do
        local image = tmp .. "/lint.tgimg"
        local summary = compile(image, reg)
        local c1, from_file = run("registry lint " .. reg)
        local c2, from_image = run("registry lint " .. q(image))
        assert.equal(c1, c2)
        assert.equal(from_file, from_image)
        assert.equal(from_file:match('"registry_hash":"(%x+)"'), summary:match('"registry_hash":"(%x+)"'))
      end
      local code, _, err = run("registry compile --output " .. q(tmp .. "/no.tgimg")
        .. " spec/data/registries/unsupported.json")
      assert.equal(1, code)
      assert.matches("UNSUPPORTED_KEYWORD", err, 1, true)
      assert.is_nil(io.open(tmp .. "/no.tgimg"))
      -- an image never replaces the file it is compiled from
      local src = tmp .. "/self.json"
      h.write_file(src, assert(h.read_file(root .. "/policies/tests/ops.json")))
      code, _, err = run("registry compile --output " .. q(src) .. " " .. q(src))
      assert.equal(2, code)
      assert.matches("is one of the registry files", err, 1, true)
      assert.equal(h.read_file(root .. "/policies/tests/ops.json"), h.read_file(src))
    end)

  it("an image is known by its magic, whatever its name, and takes SERVER= only for its own server", function()
    local image = tmp .. "/registry.json" -- named like a registry file on purpose
    compile(image, "ops=policies/tests/ops.json")
    assert.is_true(core.is_image(h.read_file(image)))
    local call = '{"server":"ops","name":"read_log","arguments":{"service":"api","n":5}}\n'
    local c1, a = run("check --policy rung --registry ops=" .. q(image), call)
    local c2, b = run("check --policy rung --registry policies/tests/ops.json", call)
    assert.equal(0, c1)
    assert.equal(0, c2)
    assert.equal(a, b)
    local code, _, err = run("check --policy rung --registry other=" .. q(image), call)
    assert.equal(2, code)
    assert.matches('compiled for server "ops", not "other"', err, 1, true)
  end)

  it("a stale image is refused STALE_REGISTRY_IMAGE; an image whose files are gone stands alone", function()
    local src = tmp .. "/stale-src.json"
    h.write_file(src, assert(h.read_file(root .. "/policies/tests/ops.json")))
    local image = tmp .. "/stale.tgimg"
    compile(image, src)
    local e = assert(toolgate.new({ policy = "rung", registry = { image } }))
    local hash = e:snapshot().hash
    h.write_file(src, (assert(h.read_file(src)):gsub("Read the last n lines", "Read the first n lines")))
    local none, msg, code = toolgate.new({ policy = "rung", registry = { image } })
    assert.is_nil(none)
    assert.equal("STALE_REGISTRY_IMAGE", code)
    assert.matches(src .. " changed since it was compiled", msg, 1, true)
    -- a running engine keeps its registry when a reload meets a stale image
    assert.is_nil((e:reload()))
    assert.equal(hash, e:snapshot().hash)
    os.remove(src)
    local alone = assert(toolgate.new({ policy = "rung", registry = { image } }))
    assert.equal(hash, alone:snapshot().hash)
  end)

  it("a corrupt image is refused BAD_REGISTRY_IMAGE: every byte flipped, every truncation, never a crash",
    function()
      local e = assert(core.new_engine())
      local good = assert(e:image_write({
        { text = assert(h.read_file(root .. "/policies/tests/ops.json")), server = "ops", label = "ops.json",
          path = "", format = "auto" },
        { text = '{"tools":[]}', label = "empty.json", format = "native", trusted = false },
      }))
      assert.truthy(e:image_open(good))
      local refused = 0
      for i = 1, #good do
        local bad = good:sub(1, i - 1) .. string.char((good:byte(i) + 1 + (i % 254)) % 256) .. good:sub(i + 1)
        local img, _, code = e:image_open(bad)
        assert.is_nil(img, "byte " .. i)
        assert(code == "BAD_REGISTRY_IMAGE", "byte " .. i .. ": " .. tostring(code))
        refused = refused + 1
      end
      for n = 0, #good - 1, 7 do
        local img, _, code = e:image_open(good:sub(1, n))
        assert.is_nil(img, "length " .. n)
        assert.equal("BAD_REGISTRY_IMAGE", code)
      end
      assert.equal(#good, refused)
      -- through the loader too: the registry does not load, whatever the name
      local path = tmp .. "/corrupt.tgimg"
      h.write_file(path, good:sub(1, 100) .. "x" .. good:sub(102))
      local none, msg, code = toolgate.new({ policy = "rung", registry = { path } })
      assert.is_nil(none)
      assert.equal("BAD_REGISTRY_IMAGE", code, msg)
      local text = toolgate.new({ policy = "rung", registry = { { text = good:sub(1, 63), label = "cut" } } })
      assert.is_nil(text)
    end)

  it("an image counts against max_registry_bytes, not max_input_bytes", function()
    local image = tmp .. "/limit.tgimg"
    compile(image, "ops=policies/tests/ops.json")
    local size = #h.read_file(image)
    assert.is_true(size > 1000)
    assert.truthy(toolgate.new({ policy = "rung", registry = { image },
      limits = { max_input_bytes = 1000, max_registry_bytes = size } }))
    local none, msg, code = toolgate.new({ policy = "rung", registry = { image },
      limits = { max_registry_bytes = size - 1 } })
    assert.is_nil(none)
    assert.equal("REGISTRY_TOO_LARGE", code)
    assert.matches("max_registry_bytes", msg, 1, true)
  end)

  it("mcp-proxy takes --registry SERVER=IMAGE: the same tools listed, calls passed and refused", function()
    if not h.have("node") or h.run("test -d " .. q(root .. "/spec/stdio/node_modules/@modelcontextprotocol")) ~= 0 then
      pending("needs node and spec/stdio/node_modules (make test installs them)")
      return
    end
    local reg = tmp .. "/echo.json"
    h.write_file(reg, '{"server":"echo","tools":[{"name":"echo","description":"Echoes the message back.",'
      .. '"inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]},'
      .. '"annotations":{"readOnlyHint":true,"openWorldHint":false}}]}')
    local image = tmp .. "/echo.tgimg"
    compile(image, "echo=" .. q(reg))
    local steps = '[{"op":"list"},{"op":"call","name":"echo","arguments":{"message":"hi"}},'
      .. '{"op":"call","name":"echo","arguments":{"message":7}}]'
    local outs = {}
    for _, r in ipairs({ reg, image }) do
      local code, out, err = h.run("cd " .. q(root .. "/spec/stdio") .. " && env XDG_STATE_HOME=" .. q(tmp .. "/xdg")
        .. " timeout 60 node client.mjs " .. q(steps) .. " " .. h.lua .. " " .. q(root .. "/bin/toolgate")
        .. " mcp-proxy --policy mcp --registry " .. q("echo=" .. r) .. " -- node echo.mjs")
      assert(code == 0, out .. err)
      outs[#outs + 1] = out
    end
    assert.equal(outs[1], outs[2])
    assert.matches('"isError":true', outs[2], 1, true)
    assert.matches('"name":"echo"', outs[2], 1, true)
  end)
end)
