-- The Resolution Rung on calls against registries recorded from real MCP
-- servers: valid calls accepted, mutated calls rejected with the exact code.
-- The rung is the core's (tg_check): engines whose policy runs it alone.
local toolgate = require "toolgate"
local h = require "helpers"

local REG = h.root .. "/examples/registries/"
local DATA = h.root .. "/spec/data/registries/"
local SOURCES = { REG .. "mcp-filesystem.json", REG .. "mcp-everything.json", REG .. "mcp-memory.json" }

-- rung_engine([sources[, settings[, opts]]]) -> an engine running the rung alone
local function rung_engine(sources, settings, opts)
  opts = opts or {}
  opts.policy = { name = "rung", version = "1", stages = { "rung" }, registry = settings }
  opts.registry = sources or SOURCES
  return assert(toolgate.new(opts))
end

local engines = {}
local function engine_for(format, also)
  local k = tostring(format) .. tostring(also)
  engines[k] = engines[k] or rung_engine(nil, nil, { format = format, report_also = also })
  return engines[k]
end
local snap = engine_for("auto"):snapshot()

-- decide(call_json[, format[, server[, opts]]]) -> decision
local function decide(text, format, server, opts)
  return engine_for(format or "auto", opts and opts.report_also):check(text, server and { server = server } or nil)
end

local function native(server, name, args)
  return string.format('{"server":%q,"name":%q,"arguments":%s}', server, name, args)
end

describe("the Resolution Rung on real MCP registries", function()
  local valid = {
    { "filesystem", "read_text_file", '{"path":"/srv/notes.txt","head":10}' },
    { "filesystem", "read_multiple_files", '{"paths":["/a","/b"]}' },
    { "filesystem", "list_directory_with_sizes", '{"path":"/srv","sortBy":"size"}' },
    { "filesystem", "edit_file", '{"path":"/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true}' },
    { "filesystem", "list_allowed_directories", "{}" },
    { "everything", "echo", '{"message":"hi"}' },
    { "everything", "get-sum", '{"a":1.5,"b":-2}' },
    { "everything", "get-resource-links", '{"count":10}' },
    { "everything", "get-annotated-message", '{"messageType":"debug"}' },
    { "memory", "create_entities", '{"entities":[{"name":"Ada","entityType":"person","observations":["wrote notes"]}]}' },
    { "memory", "search_nodes", '{"query":"Ada"}' },
    { "memory", "read_graph", "{}" },
  }
  for _, c in ipairs(valid) do
    it("accepts " .. c[1] .. "/" .. c[2], function()
      local d = decide(native(c[1], c[2], c[3]))
      assert.equal("accept", d.verdict, d.message)
      assert.equal("rung", d.stage)
      assert.equal(c[2], d.tool)
      assert.equal(snap.hash, d.registry_hash)
      assert.equal(32, #d.args_digest)
    end)
  end

  local mutated = {
    -- { server, tool, arguments, code, path, keyword }
    { "filesystem", "read_txt_file", '{"path":"/a"}', "H1" },
    { "nowhere", "read_text_file", '{"path":"/a"}', "H1" },
    { "filesystem", "read_text_file", '{"path":"/a","mode":"r"}', "H2", "/mode", "closed" },
    { "filesystem", "read_text_file", '{}', "H2", "/path", "required" },
    { "filesystem", "write_file", '{"path":"/a"}', "H2", "/content", "required" },
    { "filesystem", "edit_file", '{"path":"/a","edits":[{"oldText":"x","newText":"y","regex":true}]}',
      "H2", "/edits/0/regex", "closed" },
    { "filesystem", "read_text_file", '{"path":42}', "H3", "/path", "type" },
    { "filesystem", "read_text_file", '{"path":"/a","head":"10"}', "H3", "/head", "type" },
    { "filesystem", "read_multiple_files", '{"paths":[]}', "H3", "/paths", "minItems" },
    { "filesystem", "read_multiple_files", '{"paths":["/a",7]}', "H3", "/paths/1", "type" },
    { "filesystem", "list_directory_with_sizes", '{"path":"/","sortBy":"date"}', "H3", "/sortBy", "enum" },
    { "everything", "get-resource-links", '{"count":11}', "H3", "/count", "maximum" },
    { "everything", "get-resource-links", '{"count":0}', "H3", "/count", "minimum" },
    { "everything", "get-annotated-message", '{"messageType":"warning"}', "H3", "/messageType", "enum" },
    { "everything", "get-sum", '{"a":1}', "H2", "/b", "required" },
    { "everything", "get-env", '{"name":"HOME"}', "H2", "/name", "closed" },
    { "memory", "create_entities", '{"entities":[{"name":"Ada","entityType":"person"}]}',
      "H2", "/entities/0/observations", "required" },
    { "memory", "search_nodes", '{"query":null}', "H3", "/query", "type" },
  }
  for _, c in ipairs(mutated) do
    it("rejects " .. c[1] .. "/" .. c[2] .. " " .. c[3] .. " with " .. c[4], function()
      local d = decide(native(c[1], c[2], c[3]))
      assert.equal("reject", d.verdict)
      assert.equal("rung", d.stage)
      assert.equal(c[4], d.code, d.message)
      if c[5] then
        assert.equal(c[5], d.path)
        assert.equal(c[6], d.keyword)
        assert.is_string(d.message)
        assert.equal(c[4], d.findings[1].code)
      end
    end)
  end

  it("reports H2 before H3 and at most 16 findings", function()
    local d = decide(native("filesystem", "read_text_file", '{"path":1,"extra":true}'))
    assert.equal("H2", d.code)
    assert.equal("/extra", d.path)
    assert.equal("H3", d.findings[2].code)
    local many = {}
    for i = 1, 40 do many[#many + 1] = string.format('"k%02d":1', i) end
    d = decide(native("filesystem", "read_text_file", "{" .. table.concat(many, ",") .. "}"))
    assert.equal(16, #d.findings)
    assert.matches("and 15 more findings", d.message, 1, true)
  end)

  it("resolves bare names only when exactly one server has them", function()
    local d = decide('{"name":"read_graph","arguments":{}}')
    assert.equal("accept", d.verdict)
    assert.equal("memory", d.server)
    d = decide('{"name":"no_such_tool","arguments":{}}')
    assert.equal("H1", d.code)
    local amb = rung_engine({ "web=" .. DATA .. "openai.json", DATA .. "anthropic.json" },
      { on_shadowing = "allow" })
    d = amb:check('{"name":"search","arguments":{"q":"x"}}')
    assert.equal("H1", d.code)
    assert.equal(2, #d.candidates)
    assert.matches("2 servers", d.message)
    assert.equal("accept", amb:check('{"server":"web","name":"search","arguments":{"q":"x"}}').verdict)
  end)

  it("refuses calls to tools the registry settings flag", function()
    local flagged = rung_engine({ "web=" .. DATA .. "openai.json", DATA .. "anthropic.json",
      DATA .. "bad_names.json" })
    local function check(server, name, args)
      return flagged:check(native(server, name, args))
    end
    assert.equal("accept", check("web", "search", '{"q":"x"}').verdict) -- the owner
    assert.equal("SHADOWED", check("", "search", '{"q":"x"}').code)
    assert.equal("SHADOWED", check("odd", "search", '{"q":"x"}').code)
    assert.equal("BAD_TOOL_NAME", check("odd", "read file", "{}").code)
    assert.equal("accept", check("", "Get-Weather", '{"city":"Bern"}').verdict) -- confusable: allowed by default
  end)

  it("decides the same call the same way in every format", function()
    local args = '{"path":"/srv/a.txt","extra":1}'
    local forms = {
      { native("filesystem", "read_text_file", args), "auto" },
      { string.format('{"type":"function","function":{"name":"read_text_file","arguments":%q}}', args), "auto" },
      { string.format('{"type":"tool_use","id":"toolu_1","name":"read_text_file","input":%s}', args), "auto" },
      { string.format('{"jsonrpc":"2.0","id":3,"method":"tools/call",'
          .. '"params":{"name":"read_text_file","arguments":%s}}', args), "mcp" },
      -- the one call of each envelope
      { string.format('{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",'
          .. '"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"read_text_file",'
          .. '"arguments":%q}}]}}]}', args), "auto" },
      { string.format('{"object":"response","output":[{"type":"reasoning","id":"r","summary":[]},'
          .. '{"type":"function_call","call_id":"c","name":"read_text_file","arguments":%q}]}', args), "openai" },
      { string.format('{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"},'
          .. '{"type":"tool_use","id":"t","name":"read_text_file","input":%s}]}', args), "auto" },
      { string.format('[{"jsonrpc":"2.0","id":3,"method":"tools/call",'
          .. '"params":{"name":"read_text_file","arguments":%s}}]', args), "auto" },
    }
    for _, f in ipairs(forms) do
      local d = decide(f[1], f[2], "filesystem")
      assert.equal("H2", d.code, f[1])
      assert.equal("/extra", d.path)
    end
  end)

  it("rejects what cannot be decoded, with its own code", function()
    assert.equal("BAD_ARGUMENTS", decide('{"type":"function","function":{"name":"echo","arguments":"{\\"message\\":"}}').code)
    assert.equal("BAD_ARGUMENTS", decide('{"name":"echo","arguments":"hi"}').code)
    assert.equal("BAD_CALL", decide('{"tool":"echo"}').code)
    assert.equal("DUPLICATE_KEY", decide('{"name":"echo","arguments":{"message":"a","message":"b"}}').code)
    assert.equal("decode", decide("[").stage)
  end)

  it("reports the other tools that accept the same arguments (H5), on request", function()
    local d = decide(native("filesystem", "read_media_file", '{"path":"/a"}'), nil, nil, { report_also = true })
    assert.equal("accept", d.verdict)
    local also = {}
    for _, t in ipairs(d.also_accepted_by) do also[t.server .. "/" .. t.name] = true end
    assert.is_true(also["filesystem/get_file_info"])
    assert.is_true(also["filesystem/list_directory"])
    assert.is_nil(also["filesystem/read_media_file"])
    assert.is_nil(also["filesystem/write_file"]) -- needs content
    d = decide(native("filesystem", "read_media_file", '{"path":"/a"}'))
    assert.is_nil(d.also_accepted_by)
  end)

  it("in standard (open-world) mode accepts the undeclared key the closed world refuses", function()
    local open = rung_engine({ REG .. "mcp-filesystem.json" }, { closed = false })
    assert.equal("accept", open:check(native("filesystem", "read_text_file", '{"path":"/a","mode":"r"}')).verdict)
  end)
end)
