-- toolgate approvals: a person sees what they approve.  A deferred call is
-- decided by the MCP gateway (toolgate.mcp) on the SQLite state a stdio
-- proxy keeps, and `toolgate approvals list` and `show` -- the command, run
-- as a process -- print the exact arguments it binds, and say when they
-- were cut; so does `toolgate log`.
local audit = require "toolgate.audit"
local h = require "helpers"
local mcp = require "toolgate.mcp"
local sqlite = require "toolgate.state.sqlite"
local toolgate = require "toolgate"

local q = h.shell_quote
local decode = require("toolgate.json").decode
local function json(text) return assert(decode(toolgate.codec().engine, text)) end

-- the command run on a terminal (script(1) gives it one) -> its output
local function on_terminal(args)
  return select(2, h.run("script -qec " .. q(h.lua .. " " .. h.root .. "/bin/toolgate " .. args) .. " /dev/null"))
end

describe("toolgate approvals", function()
  local dir, id, long_id, decided_id, grant_id, deny_id

  setup(function()
    local p = assert(io.popen("mktemp -d " .. q((os.getenv("TMPDIR") or "/tmp") .. "/toolgate-approvals.XXXXXX")))
    dir = assert(p:read("*l"))
    p:close()
    local store = assert(sqlite.open(dir .. "/state.sqlite"))
    local e = assert(toolgate.new{ policy = dofile(h.root .. "/policies/gateway.lua"),
      registry = { "counter=" .. h.root .. "/spec/data/nginx/counter.json" } })
    -- the decision log as toolgate mcp-proxy keeps it
    local gw = assert(mcp.new{ engine = e, state = store, observe = function(ev)
      if ev.kind == "decision" then store:log(audit.decision(ev, os.time(), { source = "mcp-proxy" })) end
    end })
    local route = gw:route("counter", { scopes = { "counter:read", "counter:write" } })
    local function defer(text)
      local call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":'
        .. '{ "text" : "' .. text .. '" }}}'
      return json(gw:request(route, call).reply).result._meta["toolgate/approval_id"]
    end
    id = defer("rm -rf / --no-preserve-root")
    long_id = defer(string.rep("y", mcp.MAX_APPROVAL_ARGUMENTS_BYTES))
    decided_id, grant_id, deny_id = defer("decided"), defer("grant me"), defer("deny me")
    assert(store:approval_decide(decided_id, "deny"))
    store:close()
  end)

  teardown(function()
    if dir then os.execute("rm -rf " .. q(dir)) end
  end)

  it("list prints each request's exact arguments, their size, and whether they were cut", function()
    local code, out, err = h.toolgate("approvals list --state " .. q(dir))
    assert.equal(0, code, err)
    local seen = {}
    for _, line in ipairs(h.lines_of(out)) do
      local r = json(line)
      seen[r.id] = r
    end
    assert.same({ '{"text":"rm -rf / --no-preserve-root"}', 38, false },
      { seen[id].arguments, seen[id].arguments_bytes, seen[id].arguments_truncated })
    local long = seen[long_id]
    assert.same({ mcp.MAX_APPROVAL_ARGUMENTS_BYTES, mcp.MAX_APPROVAL_ARGUMENTS_BYTES + 11, true },
      { #long.arguments, long.arguments_bytes, long.arguments_truncated })
  end)

  it("list shows the pending requests only; --all the decided ones too", function()
    local function listed(args)
      local code, out, err = h.toolgate("approvals list" .. args .. " --state " .. q(dir))
      assert.equal(0, code, err)
      local seen = {}
      for _, line in ipairs(h.lines_of(out)) do seen[json(line).id] = json(line).status end
      return seen
    end
    local pending = listed("")
    assert.same({ "pending", "pending", nil }, { pending[id], pending[long_id], pending[decided_id] })
    for _, status in pairs(pending) do assert.equal("pending", status) end
    local all = listed(" --all")
    assert.same({ "pending", "denied" }, { all[id], all[decided_id] })
  end)

  it("list says which state directory it read when nothing is pending", function()
    local empty = dir .. "/empty"
    assert(os.execute("mkdir -m 700 " .. q(empty)))
    local code, out, err = h.toolgate("approvals list --state " .. q(empty))
    assert.same({ 0, "" }, { code, out })
    assert.matches("no pending approval request in " .. empty .. "/state.sqlite", err, 1, true)
    code, out, err = h.toolgate("approvals list --all --state " .. q(empty))
    assert.same({ 0, "" }, { code, out })
    assert.matches("no approval request in " .. empty .. "/state.sqlite", err, 1, true)
  end)

  it("list is for a person on a terminal (or with --human): each request with its arguments; JSON lines else", function()
    local tail = 'arguments  38 bytes:\n{"text":"rm -rf / --no-preserve-root"}\n'
    local code, out, err = h.toolgate("approvals list --human --state " .. q(dir))
    assert.equal(0, code, err)
    assert.matches("approval   " .. id .. "\n", out, 1, true)
    assert.matches(tail, out, 1, true)
    assert.is_nil(out:find(decided_id, 1, true))
    assert.matches(tail:gsub("\n", "\r\n"), on_terminal("approvals list --state " .. q(dir)), 1, true)
    assert.equal("{", on_terminal("approvals list --json --state " .. q(dir)):sub(1, 1))
    assert.equal(2, (h.toolgate("approvals list --json --human --state " .. q(dir))))
  end)

  it("grant --uses --expires --note and deny --note keep them, with who decided and when", function()
    local function fails(args)
      local code, out = h.toolgate("approvals " .. args .. " --state " .. q(dir))
      assert.same({ 2, "" }, { code, out }, args)
    end
    for _, bad in ipairs({ "--uses 0", "--uses 1.5", "--uses x", "--expires 10", "--expires 0m", "--expires 5y",
      "--note " .. q(string.rep("n", 1025)) }) do
      fails("grant " .. grant_id .. " " .. bad)
    end
    fails("deny " .. deny_id .. " --uses 2")
    fails("deny " .. deny_id .. " --expires 10m")
    fails("list --note x")
    fails("show " .. id .. " --uses 2")
    local before = os.time()
    local code, out, err = h.run("USER=alice " .. h.lua .. " " .. h.root .. "/bin/toolgate approvals grant " .. grant_id
      .. " --uses 3 --expires 10m --note " .. q("for the demo, three runs") .. " --state " .. q(dir))
    assert.equal(0, code, err)
    local r = json(out)
    assert.same({ "granted", 3, 600, "for the demo, three runs", "alice" }, { r.status, r.uses, r.ttl, r.note, r.decided_by })
    assert.is_true(r.decided_at >= before and r.decided_at <= os.time() + 1)
    assert.is_true(math.abs(r.expires - r.decided_at - 600) < 0.01)
    code, out, err = h.run("USER=bob " .. h.lua .. " " .. h.root .. "/bin/toolgate approvals deny " .. deny_id
      .. " --note " .. q("not on a Friday") .. " --state " .. q(dir))
    assert.equal(0, code, err)
    r = json(out)
    assert.same({ "denied", "not on a Friday", "bob" }, { r.status, r.note, r.decided_by })
    code, out = h.toolgate("approvals show " .. deny_id .. " --state " .. q(dir))
    assert.equal(0, code)
    assert.matches("\ndecided    denied by bob at ", out, 1, true)
    assert.matches("\nnote       not on a Friday\n", out, 1, true)
  end)

  it("the stdio proxy's line for a defer gives the exact command that grants it, runnable from anywhere", function()
    local st = dir .. "/proxy state"
    assert(os.execute("mkdir -m 700 " .. q(st)))
    local py = h.root .. "/spec/stdio/pyserver.py"
    local reg, ctx = dir .. "/notes.json", dir .. "/notes.ctx"
    local code, out, err = h.toolgate("registry record --server notes --output " .. q(reg) .. " -- python3 " .. q(py))
    assert.equal(0, code, out .. err)
    h.write_file(ctx, '{"scopes":["notes:read","notes:write"]}')
    local input = table.concat({
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        .. '"clientInfo":{"name":"spec","version":"1"}}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_note","arguments":{"text":"x"}}}',
    }, "\n") .. "\n"
    code, out, err = h.run("cd " .. q(dir) .. " && timeout 60 " .. h.lua .. " " .. h.root .. "/bin/toolgate mcp-proxy"
      .. " --policy gateway --state 'proxy state' --context " .. q(ctx) .. " --registry " .. q("notes=" .. reg)
      .. " -- python3 " .. q(py), input)
    assert.equal(0, code, err)
    local deferred
    for _, line in ipairs(h.lines_of(out)) do
      if json(line).id == 2 then deferred = json(line) end
    end
    local approval = deferred.result._meta["toolgate/approval_id"]
    local command = "toolgate approvals grant " .. approval .. " --state " .. q(st)
    assert.matches("defer call write_note: %S+ %(approval " .. approval .. "%)", err)
    assert.truthy(err:find("grants it with: " .. command, 1, true), err)
    assert.truthy(err:find("reads it with: toolgate approvals show " .. approval .. " --state " .. q(st), 1, true), err)
    local text = deferred.result.content[1].text
    assert.truthy(text:find("A person grants it with: " .. command, 1, true), text) -- the model's text: the same
    code, out, err = h.run("cd / && " .. h.lua .. " " .. h.root .. "/bin/" .. command)
    assert.equal(0, code, err)
    assert.equal("granted", json(out).status)
  end)

  it("show prints one request for a person: the call, then the arguments on a line of their own", function()
    local code, out, err = h.toolgate("approvals show " .. id .. " --state " .. q(dir))
    assert.equal(0, code, err)
    assert.matches("\ntool       write_note\n", out, 1, true)
    local tail = '\narguments  38 bytes:\n{"text":"rm -rf / --no-preserve-root"}\n'
    assert.equal(tail, out:sub(-#tail))
    code, out = h.toolgate("approvals show " .. long_id .. " --state " .. q(dir))
    assert.equal(0, code)
    assert.matches("arguments  the first " .. mcp.MAX_APPROVAL_ARGUMENTS_BYTES .. " of "
      .. (mcp.MAX_APPROVAL_ARGUMENTS_BYTES + 11) .. " bytes (cut: the digest is of all of them):", out, 1, true)
    local _
    code, _, err = h.toolgate("approvals show 0123abcd --state " .. q(dir))
    assert.equal(1, code)
    assert.matches("no approval request 0123abcd", err, 1, true)
  end)

  it("log is a table for a person on a terminal (or with --human): time, verdict, server/tool, code, principal",
    function()
      local code, out, err = h.toolgate("log --human --state " .. q(dir))
      assert.equal(0, code, err)
      local rows = h.lines_of(out)
      assert.matches("^TIME +VERDICT +SERVER/TOOL +CODE +PRINCIPAL$", rows[1])
      assert.matches("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d +defer +counter/write_note +%S+ +%S+$", rows[2])
      -- five defers under the header, then the grant and the deny decided with toolgate approvals
      assert.equal(8, #rows)
      assert.matches("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d +granted +counter/write_note +" .. grant_id .. " +alice$",
        rows[7])
      assert.matches(" denied +counter/write_note +" .. deny_id .. " +bob$", rows[8])
      local term = on_terminal("log --state " .. q(dir))
      assert.matches("TIME +VERDICT +SERVER/TOOL", term)
      assert.equal("{", on_terminal("log --json --state " .. q(dir)):sub(1, 1))
      code, out = h.toolgate("log --state " .. q(dir)) -- not a terminal: JSON lines
      assert.equal(0, code)
      assert.equal("{", out:sub(1, 1))
      assert.equal(2, (h.toolgate("log --json --human --state " .. q(dir))))
    end)

  it("and the decision log (toolgate log) show the arguments a deferred call asked approval for", function()
    local code, out, err = h.toolgate("log --state " .. q(dir))
    assert.equal(0, code, err)
    local found
    for _, line in ipairs(h.lines_of(out)) do
      local r = json(line)
      if r.approval_id == id then found = r end
    end
    assert.same({ '{"text":"rm -rf / --no-preserve-root"}', 38, false },
      { found.arguments, found.arguments_bytes, found.arguments_truncated })
  end)

  it("records a grant and a deny decided with toolgate approvals in the state's log, as audit records of the CLI "
    .. "(the arguments as their digest: the CLI does not know the policy's audit section)", function()
    local _, out = h.toolgate("log --json --state " .. q(dir))
    local decided = {}
    for _, line in ipairs(h.lines_of(out)) do
      local r = json(line)
      if r.kind == "approval" then decided[#decided + 1] = r end
    end
    assert.equal(2, #decided)
    local g, d = decided[1], decided[2]
    assert.same({ "cli", "granted", grant_id, "alice", "counter" }, { g.source, g.event, g.approval.id,
      g.approval.decided_by, g.route })
    assert.same({ "cli", "denied", deny_id, "bob" }, { d.source, d.event, d.approval.id, d.approval.decided_by })
    assert.is_nil(g.approval.arguments)
    assert.is_string(g.approval.args_digest)
    assert.is_true(g.seq < d.seq)
  end)
end)
