-- toolgate approvals: a person sees what they approve.  A deferred call is
-- decided by the MCP gateway (toolgate.mcp) on the SQLite state a stdio
-- proxy keeps, and `toolgate approvals list` and `show` -- the command, run
-- as a process -- print the exact arguments it binds, and say when they
-- were cut; so does `toolgate log`.
local h = require "helpers"
local mcp = require "toolgate.mcp"
local sqlite = require "toolgate.state.sqlite"
local toolgate = require "toolgate"

local q = h.shell_quote
local decode = require("toolgate.json").decode
local function json(text) return assert(decode(toolgate.codec().engine, text)) end

describe("toolgate approvals", function()
  local dir, id, long_id

  setup(function()
    local p = assert(io.popen("mktemp -d " .. q((os.getenv("TMPDIR") or "/tmp") .. "/toolgate-approvals.XXXXXX")))
    dir = assert(p:read("*l"))
    p:close()
    local store = assert(sqlite.open(dir .. "/state.sqlite"))
    local e = assert(toolgate.new{ policy = dofile(h.root .. "/policies/gateway.lua"),
      registry = { "counter=" .. h.root .. "/spec/data/nginx/counter.json" } })
    -- the decision log as toolgate mcp-proxy keeps it
    local gw = assert(mcp.new{ engine = e, state = store, observe = function(ev)
      if ev.kind == "decision" then store:log(mcp.decision_line(ev, os.time())) end
    end })
    local route = gw:route("counter", { scopes = { "counter:read", "counter:write" } })
    local function defer(text)
      local call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":'
        .. '{ "text" : "' .. text .. '" }}}'
      return json(gw:request(route, call).reply).result._meta["toolgate/approval_id"]
    end
    id = defer("rm -rf / --no-preserve-root")
    long_id = defer(string.rep("y", mcp.MAX_APPROVAL_ARGUMENTS_BYTES))
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
end)
