-- toolgate.registry: every format, every load error, the findings, the hash.
local core = require "toolgate.core"
local registry = require "toolgate.registry"
local h = require "helpers"

local REG = h.root .. "/examples/registries/"
local DATA = h.root .. "/spec/data/registries/"

local function load(sources, settings, collect)
  return registry.load(assert(core.new_engine()), sources, settings, collect)
end

local function names(snap)
  local out = {}
  for _, t in ipairs(snap.tools) do out[#out + 1] = t.server .. "/" .. t.name end
  return out
end

local function kinds(snap)
  local out = {}
  for _, f in ipairs(snap.findings) do out[f.kind] = (out[f.kind] or 0) + 1 end
  return out
end

describe("toolgate.registry", function()
  it("loads the three recorded MCP servers into one snapshot", function()
    local snap = assert(load({ REG .. "mcp-filesystem.json", REG .. "mcp-everything.json", REG .. "mcp-memory.json" }))
    assert.equal(14 + 13 + 9, #snap.tools)
    assert.equal("filesystem", snap.tools[1].server)
    assert.equal("read_file", snap.tools[1].name)
    assert.equal("memory", snap.tools[#snap.tools].server)
    assert.matches("^%x+$", snap.hash)
    assert.equal(32, #snap.hash)
    assert.equal(32, #snap.tools[1].pin)
    assert.same({}, kinds(snap))
    -- MCP annotations are kept for the policy to map
    assert.is_table(snap.tools[1].annotations)
    assert.is_true(snap.tools[1].annotations.readOnlyHint)
  end)

  it("gives the same hash for the same content and another for other content", function()
    local a = assert(load({ REG .. "mcp-memory.json" }))
    local b = assert(load({ REG .. "mcp-memory.json" }))
    assert.equal(a.hash, b.hash)
    local c = assert(load({ REG .. "mcp-memory.json" }, { closed = false }))
    assert.not_equal(a.hash, c.hash)
    local text = h.read_file(REG .. "mcp-memory.json"):gsub('"The search query', '"A search query', 1)
    local d = assert(load({ { text = text, label = "edited" } }))
    assert.not_equal(a.hash, d.hash)
    local pins_a, pins_d = {}, {}
    for _, t in ipairs(a.tools) do pins_a[t.name] = t.pin end
    for _, t in ipairs(d.tools) do pins_d[t.name] = t.pin end
    assert.not_equal(pins_a.search_nodes, pins_d.search_nodes) -- the edited tool's pin moved
    assert.equal(pins_a.read_graph, pins_d.read_graph)          -- the others did not
  end)

  it("reads toolgate's own format with contracts", function()
    local snap = assert(load({ DATA .. "native.json" }))
    assert.same({ "files/read_config", "payments/transfer", "files/now" }, names(snap))
    local t = snap.tools[2]
    assert.is_false(t.contract.deterministic)
    assert.equal("high", t.contract.risk)
    assert.same({ "payments:write" }, { t.contract.scopes[1] })
    assert.equal("treasury", t.contract.owner)
    assert.same({ "money-moves" }, { t.contract.effects[1] })
    assert.is_true(snap.tools[1].contract.deterministic)
  end)

  it("reads OpenAI and Anthropic tools arrays, server from SERVER=FILE or empty", function()
    local snap = assert(load({ "web=" .. DATA .. "openai.json", DATA .. "anthropic.json" }))
    assert.same({ "web/get_weather", "web/search", "/search", "/Get-Weather" }, names(snap))
  end)

  it("reads an MCP tools/list wrapped in its JSON-RPC response, server given", function()
    local snap = assert(load({ "demo=" .. DATA .. "jsonrpc.json" }))
    assert.same({ "demo/echo" }, names(snap))
    local none, err, code = load({ DATA .. "jsonrpc.json" })
    assert.is_nil(none)
    assert.equal("BAD_REGISTRY", code)
    assert.matches("server's name", err)
  end)

  it("refuses an unsupported keyword, naming tool, pointer and keyword; nothing half-loads", function()
    local snap, err, code = load({ REG .. "mcp-memory.json", DATA .. "unsupported.json" })
    assert.is_nil(snap)
    assert.equal("UNSUPPORTED_KEYWORD", code)
    assert.matches('"uses_if"', err, 1, true)
    assert.matches("/inputSchema/properties/a", err, 1, true)
    assert.matches("if", err, 1, true)
    -- a policy may list keywords to ignore
    assert.is_table(load({ DATA .. "unsupported.json" }, { ignore_keywords = { "if", "then" } }))
  end)

  it("with assert_formats, refuses a format it does not assert, naming tool, pointer and format", function()
    local snap, err, code = load({ DATA .. "formats.json", DATA .. "formats_unknown.json" }, { assert_formats = true })
    assert.is_nil(snap)
    assert.equal("UNSUPPORTED_FORMAT", code)
    assert.matches('"resolve"', err, 1, true)
    assert.matches("/inputSchema/properties/name/format", err, 1, true)
    assert.matches('"idn-hostname"', err, 1, true)
    -- annotation_formats lists the formats to leave unchecked; without assert_formats all are
    assert.is_table(load({ DATA .. "formats_unknown.json" }, { assert_formats = true,
      annotation_formats = { "idn-hostname" } }))
    assert.is_table(load({ DATA .. "formats_unknown.json" }))
    -- lint reports it as a schema finding with its code
    local lint = assert(load({ DATA .. "formats.json", DATA .. "formats_unknown.json" }, { assert_formats = true }, true))
    assert.equal(1, #lint.tools)
    local found
    for _, f in ipairs(lint.findings) do if f.code == "UNSUPPORTED_FORMAT" then found = f end end
    assert.is_table(found)
  end)

  it("hashes annotation_formats, in any order, and checks the setting", function()
    local settings = { assert_formats = true, annotation_formats = { "iri", "idn-hostname" } }
    local a = assert(load({ DATA .. "formats_unknown.json" }, settings))
    local b = assert(load({ DATA .. "formats_unknown.json" }, { assert_formats = true,
      annotation_formats = { "idn-hostname", "iri" } }))
    local c = assert(load({ DATA .. "formats_unknown.json" }, { assert_formats = true,
      annotation_formats = { "idn-hostname" } }))
    assert.equal(a.hash, b.hash)
    assert.not_equal(a.hash, c.hash)
    assert.has_error(function() registry.settings({ annotation_formats = "iri" }) end,
      "registry settings: annotation_formats must be a list")
    assert.has_error(function() registry.settings({ annotation_formats = { 1 } }) end,
      "registry settings: annotation_formats must hold strings")
  end)

  it("refuses malformed files and unknown shapes with their codes", function()
    local cases = {
      { '{"toolgate":1,"tools":[{"name":"a","name":"b"}]}', "DUPLICATE_KEY" },
      { '{"toolgate":1,"tools":[{"name":"a","input_schema":{},"determinstic":true}]}', "BAD_REGISTRY" },
      { '{"toolgate":1,"tools":[{"input_schema":{}}]}', "BAD_REGISTRY" },
      { '{"toolgate":1,"tools":[{"name":"a","deterministic":"yes"}]}', "BAD_CONTRACT" },
      { '{"whatever":[]}', "BAD_REGISTRY" },
      { '[{"name":"a"}]', "BAD_REGISTRY" },
      { '{"toolgate":1,"tools":[{"name":"a"},{"name":"a"}]}', "DUPLICATE_TOOL" },
      { '{"toolgate":1,"tools":[{"name":"a","input_schema":{"minimum":"3"}}]}', "INVALID_SCHEMA" },
      { '{"toolgate":1,"tools":[{"name":"a","input_schema":{"$ref":"#/$defs/missing"}}]}', "UNRESOLVED_REF" },
      { '{"toolgate":1,"tools":[{"name":"a","input_schema":{"pattern":"(("}}]}', "INVALID_PATTERN" },
    }
    for _, c in ipairs(cases) do
      local snap, err, code = load({ { text = c[1], label = "case" } })
      assert.is_nil(snap, c[1])
      assert.equal(c[2], code, c[1] .. " -> " .. tostring(err))
    end
    local snap, _, code = load({ "/nonexistent/registry.json" })
    assert.is_nil(snap)
    assert.equal("UNREADABLE", code)
  end)

  it("finds collisions, shadowing, confusable and bad names", function()
    local snap = assert(load({ "web=" .. DATA .. "openai.json", DATA .. "anthropic.json", DATA .. "bad_names.json" }))
    local k = kinds(snap)
    assert.equal(1, k.collision)   -- search on web, "" and odd
    assert.equal(2, k.shadowing)   -- "" and odd shadow web
    assert.equal(1, k.confusable)  -- get_weather vs Get-Weather
    assert.equal(1, k.bad_name)    -- "read file"
    for _, t in ipairs(snap.tools) do
      if t.name == "search" and t.server == "web" then
        assert.is_nil(t.flags.shadowing)
        assert.is_true(t.flags.collision)
      elseif t.name == "search" then
        assert.is_true(t.flags.shadowing)
      end
    end
  end)

  it("lets a less trusted source never own a name", function()
    local snap = assert(load({
      { path = DATA .. "bad_names.json", trusted = false },
      { path = DATA .. "openai.json", server = "web" },
    }))
    for _, t in ipairs(snap.tools) do
      if t.name == "search" then assert.equal(t.server == "odd", t.flags.shadowing == true) end
    end
  end)

  it("turns findings into load errors when the settings say so", function()
    local sources = { "web=" .. DATA .. "openai.json", DATA .. "anthropic.json" }
    local snap, err, code, _ = load(sources, { on_collision = "error" })
    assert.is_nil(snap)
    assert.equal("REGISTRY_COLLISION", code)
    assert.matches("search", err)
    snap, _, code = load(sources, { on_confusable = "error" })
    assert.is_nil(snap)
    assert.equal("REGISTRY_CONFUSABLE", code)
    assert.is_table(load(sources))
  end)

  it("collects every problem in lint mode instead of stopping", function()
    local snap = assert(load({ DATA .. "unsupported.json", DATA .. "bad_names.json",
      { text = "{", label = "broken" } }, nil, true))
    local k = kinds(snap)
    assert.equal(1, k.schema)
    assert.equal(1, k.source)
    assert.equal(1, k.bad_name)
    assert.equal(3, #snap.tools) -- ok_tool, read file, search
  end)

  it("raises on misuse of the settings", function()
    assert.has_error(function() registry.settings({ on_collision = "maybe" }) end)
    assert.has_error(function() registry.settings({ closd = true }) end)
  end)

  it("checks settings and sources as data too, every setting of its kind, naming the one meant", function()
    local cases = {
      { { on_shadowing = "rejet" }, "on_shadowing", 'must be "error", "reject" or "allow", not "rejet" '
        .. '(did you mean "reject"?)' },
      { { on_bad_name = 1 }, "on_bad_name", 'must be "error", "reject" or "allow", not a number' },
      { { closed = "no" }, "closed", 'must be true or false, not "no"' },
      { { assert_formats = "yes" }, "assert_formats", 'must be true or false, not "yes"' },
      { { closd = true }, "closd", 'is not a registry setting (did you mean "closed"?)' },
      { { ignore_keywords = { a = "x" } }, "ignore_keywords", "must be a list" },
      { { ignore_keywords = { [2] = "x" } }, "ignore_keywords", "must be a list" },
      { { annotation_formats = { true } }, "annotation_formats", "must hold strings" },
      { { resolvers = "x" }, "resolvers", "must be a table" },
    }
    for _, c in ipairs(cases) do
      local s, key, msg = registry.check_settings(c[1])
      assert.is_nil(s)
      assert.equal(c[2], key)
      assert.equal(c[3], msg)
    end
    assert.is_true(registry.check_settings({ closed = false, on_collision = "error" }).on_collision == "error")
    for _, c in ipairs({
      { "", nil, "must not be empty" }, { 42, nil, 'must be a path, "SERVER=PATH" or a table {path=, server=, '
        .. "trusted=}, not a number" }, { { server = "fs" }, nil, "needs a path or a text" },
      { { path = "a.json", pth = "b" }, "pth", 'is not a field of a source (did you mean "path"?)' },
      { { path = "a.json", trusted = "no" }, "trusted", "must be a boolean, not a string" },
      { { path = "a.json", format = "opanai" }, "format", '"opanai" is not a registry format (anthropic, auto, mcp, '
        .. 'native, openai) (did you mean "openai"?)' },
      { { "a.json" }, nil, "must be a table of named fields (path, server, ...)" },
    }) do
      local ok, field, msg = registry.check_source(c[1])
      assert.is_nil(ok)
      assert.equal(c[2], field)
      assert.equal(c[3], msg)
    end
    assert.is_true(registry.check_source("fs=a.json"))
    assert.is_true(registry.check_source({ text = "[]", format = "openai", trusted = false }))
  end)

  it("says DUPLICATE_TOOL once, and suggests SERVER=FILE only for two files of unnamed tools", function()
    local snap, err, code = load({ DATA .. "openai.json", DATA .. "openai.json" })
    assert.is_nil(snap)
    assert.equal("DUPLICATE_TOOL", code)
    assert.is_nil(err:find("DUPLICATE_TOOL", 1, true))
    assert.matches("SERVER=FILE (e.g. --registry other=" .. DATA .. "openai.json)", err, 1, true)
    snap, err, code = load({ { text = '{"toolgate":1,"tools":[{"name":"a"},{"name":"a"}]}', label = "one" } })
    assert.is_nil(snap)
    assert.equal("DUPLICATE_TOOL", code)
    assert.is_nil(err:find("SERVER=FILE", 1, true))
    snap, err = load({ "fs=" .. DATA .. "openai.json", "fs=" .. DATA .. "openai.json" })
    assert.is_nil(snap)
    assert.is_nil(err:find("SERVER=FILE", 1, true))
  end)
end)
