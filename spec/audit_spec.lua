-- toolgate.audit: one record shape for decisions, approvals and pin changes
-- (docs/audit.md), written by the gateway, the stdio proxy and the CLI, and
-- checked against docs/schemas/decision-record.schema.json by two
-- validators: ajv (npm, bench/node_modules) and toolgate validate.  Where
-- the records go: a file that survives a logrotate move (toolgate.audit_log),
-- syslog; the nginx gateway's own run is in the last describe (Lua 5.4).
local audit = require "toolgate.audit"
local audit_log = require "toolgate.audit_log"
local decision = require "toolgate.decision"
local mcp = require "toolgate.mcp"
local state = require "toolgate.state"
local toolgate = require "toolgate"
local value = require "toolgate.value"
local h = require "helpers"
local records_check = require "audit_records"
local unpack = table.unpack or unpack

local q = h.shell_quote
local root = h.root
local codec = decision.codec()
local function json(text) return assert(require("toolgate.json").decode(codec, text)) end

local REGISTRY = root .. "/spec/data/nginx/counter.json"
local T = 1700000000.125 -- (a time whose 3 decimals a double holds exactly: canonical JSON writes it so)
local GATEWAY = { source = "gateway", worker = 4242 }

local function call(id, name, args)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name .. '","arguments":'
    .. args .. "}}"
end

-- an in-process gateway over the counter registry (the audit section given), and what observe saw
local function gateway(audit_section)
  local p = dofile(root .. "/policies/gateway.lua")
  p.audit = audit_section
  local store = state.memory()
  local e = assert(toolgate.new{ policy = p, registry = { REGISTRY }, state = store })
  local events = {}
  local gw = assert(mcp.new{ engine = e, observe = function(ev) events[#events + 1] = ev end })
  return gw, gw:route("counter", { scopes = { "counter:read", "counter:write" } }), events, store, e
end

local function last_decision(events)
  for i = #events, 1, -1 do if events[i].kind == "decision" then return events[i] end end
end

local validators, assert_valid = records_check.verdicts, records_check.assert_valid

-- a syslog socket bound by the test (a unix datagram socket anyone may write to: nginx's workers are nobody
-- under root), which writes each of the count datagrams it reads on a line of its own to file; -> its pid
local function syslog_receiver(sock, file, count)
  local p = assert(io.popen("python3 -c " .. q([[
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
s.settimeout(20)
with open(sys.argv[2], "wb") as out:
    for _ in range(int(sys.argv[3])):
        out.write(s.recv(1 << 20) + b"\n")
        out.flush()
]]) .. " " .. q(sock) .. " " .. q(file) .. " " .. count .. " > /dev/null 2>&1 & echo $!"))
  local pid = tonumber(p:read("*l"))
  p:close()
  for _ = 1, 100 do
    if h.run("test -S " .. q(sock)) == 0 then break end
    os.execute("sleep 0.05")
  end
  return pid
end

-- the records of one gateway session: every outcome, an approval granted, pin changes
local function session(audit_section, host)
  local gw, route, events, store, e = gateway(audit_section)
  -- (as the hosts do: the policy's audit settings)
  local opts = { audit = e:snapshot().policy.audit }
  for k, v in pairs(host) do opts[k] = v end
  local lines, outcomes = {}, {}
  local function decided(c)
    gw:request(route, c)
    local ev = last_decision(events)
    lines[#lines + 1] = audit.decision(ev, T, opts)
    outcomes[#outcomes + 1] = ev.decision.verdict .. "/" .. audit.outcome(ev)
    return ev
  end
  decided(call(1, "add", '{"a":1,"b":2}'))
  decided(call(2, "nope", "{}"))
  local held = decided(call(3, "write_note", '{"text":"rm -rf /"}'))
  local rec = assert(store:approval_decide(held.approval_id, "grant", { by = "ops", note = "fine" }))
  lines[#lines + 1] = audit.approval(rec, "granted", T, opts)
  decided(call(3, "write_note", '{"text":"rm -rf /"}'))
  -- a tools/list that differs from the pins
  local reg = json(h.read_file(REGISTRY))
  local tools = { reg.tools[1], { name = "new_tool", inputSchema = { type = "object" } } }
  local plan = gw:request(route, '{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
  gw:response(route, plan, assert(value.encode({ jsonrpc = "2.0", id = 9,
    result = { tools = setmetatable(tools, value.array_mt) } })))
  for _, ev in ipairs(events) do
    if ev.kind == "pin_change" then lines[#lines + 1] = audit.pin_change(ev, T, opts) end
  end
  return lines, outcomes, held
end

describe("toolgate.audit", function()
  it("writes one shape for decisions of every outcome, approvals and pin changes: members sorted, the decision as "
    .. "the core wrote it, an approved call that passed recorded as passed", function()
    local lines, outcomes = session(nil, GATEWAY)
    assert.same({ "accept/passed", "reject/refused", "defer/held", "defer/passed" }, outcomes)
    local kinds = {}
    for _, l in ipairs(lines) do
      assert.equals(l, assert(codec:canon(l)), "not canonical: " .. l)
      local r = json(l)
      kinds[#kinds + 1] = r.kind
      assert.same({ "gateway", 4242, T, "counter" }, { r.source, r.worker, r.time, r.route })
    end
    -- (the listing changed one tool, added one and dropped the rest)
    assert.same({ "decision", "decision", "decision", "approval", "decision", "pin_change" }, { unpack(kinds, 1, 6) })
    for i = 7, #kinds do assert.equals("pin_change", kinds[i]) end
    local approved = json(lines[5])
    assert.same({ true, "passed", true, "enforce" }, { approved.approved, approved.outcome, approved.enforced,
      approved.mode })
    assert.equals(json(lines[3]).approval_id, approved.approval_id)
    local granted = json(lines[4])
    assert.same({ "granted", "granted", "ops", "fine" }, { granted.event, granted.approval.status,
      granted.approval.decided_by, granted.approval.note })
    -- the decision, byte for byte
    local gw, route, events = gateway()
    gw:request(route, call(1, "nope", "{}"))
    local ev = last_decision(events)
    assert.truthy(audit.decision(ev, T, GATEWAY):find('"decision":' .. ev.decision:json() .. ',', 1, true))
    -- a trace's ids when the host has them (the event's win)
    ev.trace_id, ev.span_id = string.rep("ab", 16), string.rep("cd", 8)
    local traced = json(audit.decision(ev, T, { source = "gateway", trace_id = string.rep("0", 32) }))
    assert.same({ string.rep("ab", 16), string.rep("cd", 8) }, { traced.trace_id, traced.span_id })
  end)

  it("records a shadowed refusal as passed, not enforced, in mode shadow, with the verdict it would have had",
    function()
    local d = decision.from_table({ verdict = "reject", stage = "gate", code = "H4", message = "m", server = "s",
      tool = "t", enforced = false })
    local r = json(audit.decision({ phase = "call", server = "s", decision = d, enforced = false, mode = "shadow" }, T,
      { source = "mcp-proxy" }))
    assert.same({ "passed", false, "shadow", "reject", false }, { r.outcome, r.enforced, r.mode, r.decision.verdict,
      r.decision.enforced })
    local e = json(audit.decision({ phase = "call", server = "s", decision = d }, T, { source = "cli" }))
    assert.same({ "refused", true, "enforce" }, { e.outcome, e.enforced, e.mode })
  end)

  it("records the arguments as the policy's audit section says: on approvals (default), full, redacted by JSON "
    .. "pointer, or their digest only", function()
    local args = '{"text":"rm -rf /"}'
    local function records(section)
      local lines, _, held = session(section, GATEWAY)
      local out = {}
      for i, l in ipairs(lines) do out[i] = json(l) end
      return out, held
    end
    -- approval (default): the calls that ask for an approval or pass by one, and the approval
    local r = records(nil)
    assert.same({ "nil", "nil", args, args, args }, { tostring(r[1].arguments), tostring(r[2].arguments),
      r[3].arguments, r[4].approval.arguments, r[5].arguments })
    assert.same({ #args, false }, { r[3].arguments_bytes, r[3].arguments_truncated })
    -- full: every call's
    r = records({ arguments = "full" })
    assert.same({ '{"a":1,"b":2}', "{}", args }, { r[1].arguments, r[2].arguments, r[3].arguments })
    -- redact: the values at the pointers replaced, the approval's too; a pointer that is not there is not listed
    r = records({ arguments = "redact", redact = { "/text", "/nowhere" } })
    local red = '{"text":"[redacted]"}'
    assert.same({ red, red, red }, { r[3].arguments, r[4].approval.arguments, r[5].arguments })
    assert.same({ "/text" }, r[3].arguments_redacted)
    assert.same({ '{"a":1,"b":2}', #args }, { r[1].arguments, r[3].arguments_bytes })
    -- digest: no arguments anywhere, their digest and size
    local held
    r, held = records({ arguments = "digest" })
    for _, x in ipairs(r) do
      assert.is_nil(x.arguments)
      assert.is_nil(x.approval and x.approval.arguments)
    end
    assert.same({ held.decision:get("args_digest"), #args }, { r[3].arguments_digest, r[3].arguments_bytes })
    assert.equals(held.decision:get("args_digest"), r[4].approval.args_digest)
    -- past MAX_ARGUMENTS_BYTES: full keeps the first of them, redact redacts the whole text first
    local max = audit.MAX_ARGUMENTS_BYTES
    local long = '{"password":"p","text":"' .. string.rep("x", max) .. '"}'
    local c = '{"server":"s","name":"t","arguments":' .. long .. "}"
    local d = decision.from_table({ verdict = "accept", server = "s", tool = "t", args_digest = "ab" })
    local ev = { phase = "call", server = "s", decision = d, call = c }
    local full = json(audit.decision(ev, T, { source = "cli", audit = assert(audit.settings({ arguments = "full" })) }))
    assert.same({ long:sub(1, max), #long, true }, { full.arguments, full.arguments_bytes, full.arguments_truncated })
    local cut = json(audit.decision(ev, T, { source = "cli",
      audit = assert(audit.settings({ arguments = "redact", redact = { "/password" } })) }))
    local start = '{"password":"[redacted]","text":"xxx'
    assert.same({ start, true, { "/password" } },
      { cut.arguments:sub(1, #start), cut.arguments_truncated, cut.arguments_redacted })
    assert.equals(max, #cut.arguments)
    -- an array index and an escaped name (RFC 6901)
    c = '{"server":"s","name":"t","arguments":{"a/b":[{"k":1},{"k":2}],"m~n":3}}'
    ev.call = c
    local both = json(audit.decision(ev, T, { source = "cli",
      audit = assert(audit.settings({ arguments = "redact", redact = { "/a~1b/1/k", "/m~0n", "/a~1b/7/k" } })) }))
    assert.equals('{"a/b":[{"k":1},{"k":"[redacted]"}],"m~n":"[redacted]"}', both.arguments)
    assert.same({ "/a~1b/1/k", "/m~0n" }, both.arguments_redacted)
  end)

  it("refuses an audit section it cannot follow when the policy loads, naming it", function()
    local policy = require "toolgate.policy"
    local function load(section)
      local p = dofile(root .. "/policies/gateway.lua")
      p.audit = section
      local ok, err, code = policy.load(p)
      return ok and "ok" or (code .. " " .. err)
    end
    assert.equals("ok", load({ arguments = "redact", redact = { "/password" } }))
    assert.matches("POLICY_INVALID policy audit: arguments must be one of approval, full, redact, digest",
      load({ arguments = "everything" }), 1, true)
    assert.matches("needs redact", load({ arguments = "redact" }), 1, true)
    assert.matches("redact is read only with", load({ arguments = "full", redact = { "/a" } }), 1, true)
    assert.matches('must be a JSON pointer ("/password"), not password', load({ arguments = "redact",
      redact = { "password" } }), 1, true)
    assert.matches("unknown setting argument", load({ argument = "full" }), 1, true)
  end)

  it("writes only records the schema takes, by ajv and toolgate validate alike, and both refuse a drifted one",
    function()
    if not h.npm_peer("ajv", pending) then return end
    local all = {}
    for _, section in ipairs({ false, { arguments = "full" }, { arguments = "redact", redact = { "/text" } },
      { arguments = "digest" } }) do
      for _, l in ipairs(session(section or nil, GATEWAY)) do all[#all + 1] = l end
    end
    for _, l in ipairs(session(nil, { source = "mcp-proxy" })) do all[#all + 1] = audit.with_seq(l, #all + 1) end
    -- a refusal shadow mode let run (a policy in shadow, a route without the scope)
    local p = dofile(root .. "/policies/gateway.lua")
    p.mode = "shadow"
    local e = assert(toolgate.new{ policy = p, registry = { REGISTRY }, state = state.memory() })
    local events = {}
    local gw = assert(mcp.new{ engine = e, observe = function(ev) events[#events + 1] = ev end })
    gw:request(gw:route("counter", { scopes = { "counter:read" } }), call(1, "write_note", '{"text":"x"}'))
    local shadowed = audit.decision(last_decision(events), T, { source = "gateway", audit = e:snapshot().policy.audit })
    assert.same({ false, "passed", "reject" }, { json(shadowed).enforced, json(shadowed).outcome,
      json(shadowed).decision.verdict })
    all[#all + 1] = shadowed
    assert_valid(all, "toolgate.audit")
    local good = json(all[3])
    assert.equals("held", good.outcome)
    local function drifted(change)
      local r = json(all[3])
      change(r)
      return assert(value.encode(r))
    end
    local bad = {
      drifted(function(r) r.verdict = "defer" end),                   -- a member the shape has not
      drifted(function(r) r.outcome = "passed"; r.approved = true; r.approval_id = value.null end),
      drifted(function(r) r.approval_id = value.null end),             -- held, and nothing to approve
      drifted(function(r) r.enforced = false end),                     -- not enforced, yet held, in enforce mode
      drifted(function(r) r.kind = "approval" end),
      drifted(function(r) r.source = "sidecar" end),
      drifted(function(r) r.arguments_digest = "ab" end),               -- both the text and the digest
      drifted(function(r) r.time = nil end),
    }
    local ajv, tg = validators(bad)
    for i, l in ipairs(bad) do
      assert.is_false(ajv[i].valid, "ajv takes " .. l)
      assert.is_false(tg[i].valid, "toolgate validate takes " .. l)
    end
  end)

  it("sends a record per datagram to the syslog socket, framed as syslog(3) frames it", function()
    assert.matches("^<110>%a%a%a [ %d]%d %d%d:%d%d:%d%d toolgate: {}$", audit_log.frame("{}", 1700000000))
    local dir = h.tmpname(".syslog")
    assert(os.execute("mkdir -p " .. q(dir)))
    local sock, got = dir .. "/log", dir .. "/got"
    local pid = syslog_receiver(sock, got, 2)
    local log = assert(audit_log.open("syslog:" .. sock))
    local lines = session(nil, { source = "mcp-proxy" })
    assert.is_true(log:write({ lines[1], lines[4] }))
    for _ = 1, 100 do
      if h.run("kill -0 " .. pid .. " 2>/dev/null") ~= 0 then break end
      os.execute("sleep 0.05")
    end
    local datagrams = h.lines_of(h.read_file(got) or "")
    assert.equals(2, #datagrams)
    assert.equals(audit_log.frame(lines[1]):sub(-#lines[1] - 11), datagrams[1]:sub(-#lines[1] - 11))
    assert.equals(lines[4], datagrams[2]:match("^<110>%a%a%a [ %d]%d %d%d:%d%d:%d%d toolgate: (.*)$"))
    -- nobody listening: said, never raised
    os.remove(sock)
    local ok, err = log:write({ lines[1] })
    assert.is_nil(ok)
    assert.matches("1 record%(s%) not taken by the syslog socket", err)
    assert.same({ nil, "syslog:PATH needs the socket's path" }, { audit_log.open("syslog:") })
    os.execute("rm -rf " .. q(dir))
  end)

  it("appends to a file by its name each batch: after a logrotate move the next batch is in a new file", function()
    local path = h.tmpname(".audit.jsonl")
    local log = assert(audit_log.open(path))
    assert.is_true(log:write({ "{\"n\":1}", "{\"n\":2}" }))
    assert(os.rename(path, path .. ".1"))
    assert.is_true(log:write({ "{\"n\":3}" }))
    assert.equals('{"n":1}\n{"n":2}\n', h.read_file(path .. ".1"))
    assert.equals('{"n":3}\n', h.read_file(path))
    log:close()
    os.remove(path)
    os.remove(path .. ".1")
    assert.is_nil((audit_log.open("/nonexistent-dir/audit.jsonl")))
  end)
end)

describe("toolgate mcp-proxy --audit-log and toolgate log", function()
  it("toolgate log still prints the lines an older toolgate wrote to the state (with their seq)", function()
    local dir = h.tmpname(".oldstate")
    assert(os.execute("mkdir -m 700 " .. q(dir)))
    local store = assert(require("toolgate.state.sqlite").open(dir .. "/state.sqlite"))
    local old = '{"approval_id":null,"approved":false,"decision":{"code":"H1","verdict":"reject"},"phase":"call",'
      .. '"principal":null,"route":"counter","time":1765152000}'
    store:log({ old, '{"pin_change":{"change":"added","tool":"x"},"route":"counter","time":1765152001}' })
    store:close()
    local code, out, err = h.toolgate("log --json --state " .. q(dir))
    assert.equals(0, code, err)
    assert.same({ old:gsub(',"time"', ',"seq":1,"time"'), ('{"pin_change":{"change":"added","tool":"x"},'
      .. '"route":"counter","seq":2,"time":1765152001}') }, h.lines_of(out))
    code, out = h.toolgate("log --human --state " .. q(dir))
    assert.equals(0, code)
    assert.matches("reject +counter/%- +H1", out)
    os.execute("rm -rf " .. q(dir))
  end)

  it("write a file the proxy moves on from after a logrotate move and SIGHUP (which its server never gets), and "
    .. "toolgate log shows the proxy's records and the CLI's approval, all of them valid records", function()
    if not h.npm_peer("ajv", pending) then return end
    local dir = h.tmpname(".proxy")
    assert(os.execute("mkdir -p " .. q(dir) .. " && mkdir -m 700 " .. q(dir .. "/st") .. " && mkfifo "
      .. q(dir .. "/in")))
    h.write_file(dir .. "/ctx", '{"scopes":["counter:read","counter:write"]}')
    local file, hup = dir .. "/audit.jsonl", dir .. "/server-got-hup"
    -- the server swallows its input, and says so if a SIGHUP reaches it
    local server = "sh -c " .. q("trap 'echo HUP > " .. hup .. "' HUP; cat > /dev/null")
    local p = assert(io.popen("( exec " .. h.lua .. " " .. q(root .. "/bin/toolgate") .. " mcp-proxy --policy gateway"
      .. " --state " .. q(dir .. "/st") .. " --context " .. q(dir .. "/ctx") .. " --registry " .. q("counter=" .. REGISTRY)
      .. " --audit-log " .. q(file) .. " -- " .. server .. " ) < " .. q(dir .. "/in") .. " > " .. q(dir .. "/out")
      .. " 2> " .. q(dir .. "/err") .. " & echo $!"))
    local pid = tonumber(p:read("*l"))
    p:close()
    local input = assert(io.open(dir .. "/in", "w"))
    local function send(c)
      input:write(c, "\n")
      input:flush()
    end
    local function records(path, n)
      for _ = 1, 100 do
        local got = h.lines_of(h.read_file(path) or "")
        if #got >= n then return got end
        os.execute("sleep 0.05")
      end
      error("no " .. n .. " records in " .. path .. ":\n" .. (h.read_file(dir .. "/err") or ""))
    end
    send(call(1, "nope", "{}"))
    assert.equals("refused", json(records(file, 1)[1]).outcome)
    -- logrotate: the file moved, then SIGHUP
    assert(os.rename(file, file .. ".1"))
    assert.equals(0, (h.run("kill -HUP " .. pid)))
    send(call(2, "write_note", '{"text":"a note"}'))
    local held = json(records(file, 1)[1])
    assert.same({ "held", "mcp-proxy" }, { held.outcome, held.source })
    local code, _, err = h.toolgate("approvals grant " .. held.approval_id .. " --state " .. q(dir .. "/st"))
    assert.equals(0, code, err)
    send(call(3, "write_note", '{"text":"a note"}'))
    local passed = json(records(file, 2)[2])
    assert.same({ "passed", true, held.approval_id }, { passed.outcome, passed.approved, passed.approval_id })
    input:close()
    for _ = 1, 100 do
      if h.run("kill -0 " .. pid .. " 2>/dev/null") ~= 0 then break end
      os.execute("sleep 0.05")
    end
    assert.is_nil(h.read_file(hup), "the server got the SIGHUP")
    assert.equals(1, #h.lines_of(h.read_file(file .. ".1")))
    -- the state's log: the same decisions, and the CLI's grant
    local lcode, out = h.toolgate("log --json --state " .. q(dir .. "/st"))
    assert.equals(0, lcode)
    local logged, kinds = h.lines_of(out), {}
    for _, l in ipairs(logged) do kinds[#kinds + 1] = json(l).kind .. "/" .. json(l).source end
    assert.same({ "decision/mcp-proxy", "decision/mcp-proxy", "approval/cli", "decision/mcp-proxy" }, kinds)
    local all = {}
    for _, l in ipairs(h.lines_of(h.read_file(file .. ".1") .. h.read_file(file))) do all[#all + 1] = l end
    for _, l in ipairs(logged) do all[#all + 1] = l end
    assert_valid(all, "the stdio proxy and the CLI")
    -- to the millisecond, as the gateway's (three records all on a whole second: one chance in a billion)
    local whole = 0
    for _, l in ipairs(all) do
      local r = json(l)
      assert.is_true(math.abs(r.time - os.time()) < 60)
      if r.source == "mcp-proxy" and r.time == math.floor(r.time) then whole = whole + 1 end
    end
    assert.is_true(whole < 3, "the proxy's records are on whole seconds")
    os.execute("rm -rf " .. q(dir))
  end)
end)

describe("toolgate gateway --audit-log in the conf", function()
  it("names the file (absolute) or the syslog socket as the decision log, and refuses a file it cannot open", function()
    local prefix = h.tmpname("-prefix")
    local base = "gateway --conf-only --listen 127.0.0.1:8080 --upstream everything=http://127.0.0.1:3001/mcp"
      .. " --registry " .. q("everything=" .. root .. "/examples/registries/mcp-everything.json") .. " --prefix "
      .. q(prefix)
    local code, _, err = h.run("cd " .. q(os.getenv("TMPDIR") or "/tmp") .. " && " .. h.lua .. " "
      .. q(root .. "/bin/toolgate") .. " " .. base .. " --audit-log audit-spec.jsonl")
    assert.equals(0, code, err)
    assert.matches('decision_log = "/[^"]*/audit%-spec%.jsonl",', h.read_file(prefix .. "/nginx.conf"))
    os.remove((os.getenv("TMPDIR") or "/tmp") .. "/audit-spec.jsonl")
    code, _, err = h.toolgate(base .. " --audit-log syslog")
    assert.equals(0, code, err)
    assert.matches('decision_log = "syslog",', h.read_file(prefix .. "/nginx.conf"), 1, true)
    code, _, err = h.toolgate(base .. " --audit-log /nonexistent-dir/audit.jsonl")
    assert.equals(2, code)
    assert.matches("--audit-log: cannot open /nonexistent-dir/audit.jsonl", err, 1, true)
    os.execute("rm -rf " .. q(prefix))
  end)
end)

-- The nginx gateway's records (once: nginx runs its own LuaJIT whichever interpreter runs the specs).
if h.is_luajit then return end

describe("toolgate gateway --audit-log", function()
  local fx = require "gateway_fixture"
  local env, pids, why = {}, {}, nil

  -- a gateway in front of the counter upstream (prefix under env.dir), its records to dest; -> its pid
  local function start_gateway(prefix, listen, admin, dest)
    local dir = env.dir
    return fx.start_gateway(table.concat({ "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", listen,
      "--admin", admin, "--admin-token-file", q(dir .. "/token"), "--workers 2", "--prefix", q(dir .. "/" .. prefix),
      "--policy gateway", "--audit-log", q(dest), "--upstream", "counter=http://127.0.0.1:" .. env.port .. "/mcp",
      "--registry", q("counter=" .. dir .. "/counter.json"), "--context", q("counter=" .. dir .. "/counter.ctx") },
      " "), listen, dir .. "/" .. prefix .. ".log")
  end

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    local dir = fx.tempdir("toolgate-audit-spec")
    env.dir = dir
    -- (nginx's workers, nobody when the spec runs as root, make the new file after a move)
    assert(os.execute("mkdir -m 777 " .. q(dir .. "/audit")))
    env.file = dir .. "/audit/audit.jsonl"
    local ports = fx.ports(3)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    pids.counter = fx.spawn("PORT=" .. ports[3] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
    local port = fx.upstream_port(dir .. "/counter.log")
    -- a registry without echo: the gateway's tools/list reports it added
    fx.record("counter", port, dir .. "/counter.json", "echo")
    h.write_file(dir .. "/counter.ctx", '{"scopes":["counter:read","counter:write"]}')
    env.token = "spec-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(dir .. "/token", env.token .. "\n")
    env.port = port
    pids.gateway = start_gateway("prefix", env.listen, env.admin, env.file)
    env.ready = true
  end)

  teardown(function()
    if env.dir then
      fx.stop_gateway(pids.gateway, env.dir .. "/prefix")
      fx.stop_gateway(pids.syslog, env.dir .. "/prefix-syslog")
    end
    fx.stop(pids.counter)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  -- the records in path once there are n (the workers write every 0.1 s)
  local function records(path, n)
    local got
    fx.wait_for(n .. " records in " .. path, function()
      got = {}
      for _, l in ipairs(h.lines_of(h.read_file(path) or "")) do got[#got + 1] = l end
      return #got >= n
    end, env.dir .. "/gateway.log")
    return got
  end

  it("records every outcome, an approval granted and a pin change, all valid records; after a logrotate move and "
    .. "USR1 to nginx's master the next record is in the new file", function()
    if not env.ready then return pending(why or "the gateway did not start") end
    if not h.npm_peer("ajv", pending) then return end
    local url = "http://" .. env.listen .. "/mcp/counter"
    local note = '{"op":"call","name":"write_note","arguments":{"text":"a note"}}'
    fx.client(url, '[{"op":"list"},{"op":"call","name":"add","arguments":{"a":1,"b":2}},'
      .. '{"op":"call","name":"nope","arguments":{}},' .. note .. "]")
    local function find(lines, pred)
      for _, l in ipairs(lines) do
        local r = json(l)
        if pred(r) then return r end
      end
    end
    local held
    fx.wait_for("the held call's record", function()
      held = find(h.lines_of(h.read_file(env.file) or ""), function(r) return r.outcome == "held" end)
      return held
    end)
    local granted = json(fx.curl("-X POST -H " .. q("Authorization: Bearer " .. env.token) .. " "
      .. q("http://" .. env.admin .. "/v1/approvals/" .. held.approval_id .. "/grant")))
    assert.equals("granted", granted.status)
    fx.client(url, "[" .. note .. "]")
    local lines
    fx.wait_for("the approved call's record", function()
      lines = h.lines_of(h.read_file(env.file) or "")
      return find(lines, function(r) return r.approved == true end)
    end)
    local seen = {}
    for _, l in ipairs(lines) do
      local r = json(l)
      assert.same({ "gateway", "counter" }, { r.source, r.route })
      assert.is_number(r.worker)
      seen[#seen + 1] = r.kind .. "/" .. (r.outcome or r.event or r.pin_change.change)
        .. (r.decision and ("/" .. r.phase .. "/" .. r.decision.verdict .. "/" .. tostring(r.decision.tool)) or "")
    end
    table.sort(seen)
    assert.same({ "approval/granted", "decision/held/call/defer/write_note", "decision/passed/call/accept/add",
      "decision/passed/call/defer/write_note", "decision/passed/result/accept/add",
      "decision/passed/result/accept/write_note", "decision/refused/call/reject/nope", "pin_change/added" }, seen)
    -- logrotate: move the file, then tell nginx's master to reopen its logs
    local master = assert(tonumber(h.read_file(env.dir .. "/prefix/nginx.pid") or ""))
    assert(os.rename(env.file, env.file .. ".1"))
    assert.equals(0, (h.run("kill -USR1 " .. master)))
    fx.client(url, '[{"op":"call","name":"add","arguments":{"a":2,"b":3}}]')
    local after = records(env.file, 1)
    assert.equals("passed", json(after[1]).outcome)
    assert.equals(#lines, #h.lines_of(h.read_file(env.file .. ".1")))
    local all = {}
    for _, l in ipairs(lines) do all[#all + 1] = l end
    for _, l in ipairs(after) do all[#all + 1] = l end
    assert_valid(all, "the gateway")
  end)

  it("sends the records to syslog with --audit-log syslog:PATH, a datagram each, framed as syslog(3) does",
    function()
    if not env.ready then return pending(why or "the gateway did not start") end
    if not h.npm_peer("ajv", pending) then return end
    local sock, got = env.dir .. "/syslog.sock", env.dir .. "/syslog.got"
    -- a call and its result: two records
    local receiver = syslog_receiver(sock, got, 2)
    local ports = fx.ports(2)
    local listen = "127.0.0.1:" .. ports[1]
    pids.syslog = start_gateway("prefix-syslog", listen, "127.0.0.1:" .. ports[2], "syslog:" .. sock)
    fx.client("http://" .. listen .. "/mcp/counter", '[{"op":"call","name":"add","arguments":{"a":1,"b":2}}]')
    fx.wait_for("two datagrams", function() return not fx.alive(receiver) end, env.dir .. "/prefix-syslog.log")
    local sent = {}
    for _, d in ipairs(h.lines_of(h.read_file(got) or "")) do
      sent[#sent + 1] = d:match("^<110>%a%a%a [ %d]%d %d%d:%d%d:%d%d toolgate: ({.*})$")
      assert.is_string(sent[#sent], "not a syslog(3) frame: " .. d)
    end
    assert.equals(2, #sent)
    assert.same({ "call", "result" }, { json(sent[1]).phase, json(sent[2]).phase })
    assert_valid(sent, "the gateway's syslog")
  end)
end)
