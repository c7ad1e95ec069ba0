-- A fleet of gateways end to end: Debian's redis-server on a loopback port
-- (a temporary directory, a password), two `toolgate gateway` nodes (nginx,
-- separate prefixes and ports) sharing it with --redis, in front of the
-- same MCP servers built with the MCP TypeScript SDK (nginx/test/upstream.mjs:
-- one that counts the calls reaching it, one that changes its tools after
-- the first tools/list).  Node A talks to Redis in plain TCP, node B over
-- TLS (a CA and a certificate made here with openssl), so every shared
-- property below crosses both.  What one node learns holds on the other within
-- the stated bound (--redis-sync plus a round trip); approvals are granted
-- once for the fleet; a node that does not trust Redis's certificate never
-- reaches it; Redis stopped mid-run (by its PID) fails closed and
-- what was learned while it was away reaches it when it returns.
-- Everything listens on 127.0.0.1 and is stopped by its PID.  Runs once,
-- under Lua 5.4 (nginx itself runs LuaJIT).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, q = fx.json, h.shell_quote
local root = h.root

-- the bound this spec holds the fleet to: --redis-sync 0.25, and what the
-- spec's own polling adds (a node process per request)
local SYNC = 0.25
local BOUND = 1.5

local env = { nodes = {} }
local pids = {}

local function url(node, server) return "http://" .. env.nodes[node].listen .. "/mcp/" .. server end
local function send(node, server, body, count) return fx.send(url(node, server), body, count) end

local function admin(node, method, path)
  return fx.curl("-X " .. method .. " -H " .. q("Authorization: Bearer " .. env.token) .. " " ..
    q("http://" .. env.nodes[node].admin .. path))
end

local function api(node, path, body)
  return json(fx.curl("-X POST --data-binary " .. q(body) .. " " .. q("http://" .. env.nodes[node].listen .. path)))
end

local function metrics(node) return fx.curl(q("http://" .. env.nodes[node].listen .. "/metrics")) end

local function calls() return json(fx.curl(q("http://127.0.0.1:" .. env.counter .. "/calls"))) end

-- the Redis key of the fleet's record `name`, quoted for redis_cli
local function key(name) return q("{fleet-spec:}" .. name) end

local function redis_cli(args)
  local code, out, err = h.run("redis-cli -h 127.0.0.1 -p " .. env.redis_port .. " --no-auth-warning -a " ..
    q(env.redis_password) .. " " .. args)
  assert(code == 0, "redis-cli " .. args .. ": " .. err)
  return out
end

-- A CA and, signed by it, Redis's certificate for the name "localhost";
-- another CA that signed nothing here.
local function make_certificates(dir)
  assert(os.execute("mkdir -p " .. q(dir)))
  local function ssl(args)
    local code, _, err = h.run("cd " .. q(dir) .. " && openssl " .. args)
    assert(code == 0, "openssl " .. args .. ": " .. err)
  end
  for _, ca in ipairs({ "ca", "other-ca" }) do
    ssl("req -x509 -newkey rsa:2048 -nodes -keyout " .. ca .. ".key -out " .. ca .. ".pem -days 2 -subj '/CN=toolgate "
      .. ca .. "'")
  end
  ssl("req -newkey rsa:2048 -nodes -keyout redis.key -out redis.csr -subj /CN=localhost")
  h.write_file(dir .. "/ext", "subjectAltName=DNS:localhost\n")
  ssl("x509 -req -in redis.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out redis.pem -days 2 -extfile ext")
  assert(os.execute("chmod 644 " .. q(dir) .. "/*.pem"))
end

-- start_redis([options[, persistence]]): on the spec's port, its data in
-- the spec's directory, persisted as persistence says (default: an
-- append-only file, no snapshots)
local function start_redis(options, persistence)
  local tls = env.dir .. "/tls/"
  pids.redis = fx.spawn("exec redis-server --port " .. env.redis_port .. " --bind 127.0.0.1 --dir " ..
    q(env.dir .. "/redis") .. " " .. (persistence or "--appendonly yes --save ''") .. " --requirepass " ..
    q(env.redis_password) ..
    " --tls-port " .. env.redis_tls_port .. " --tls-cert-file " .. q(tls .. "redis.pem") .. " --tls-key-file " ..
    q(tls .. "redis.key") .. " --tls-ca-cert-file " .. q(tls .. "ca.pem") .. " --tls-auth-clients no" ..
    " --daemonize no " .. (options or ""), env.dir .. "/redis.log")
  fx.wait_for("redis-server", function()
    local c, out = h.run("redis-cli -h 127.0.0.1 -p " .. env.redis_port .. " --no-auth-warning -a " ..
      q(env.redis_password) .. " ping")
    return c == 0 and out:find("PONG")
  end, env.dir .. "/redis.log")
end

-- gateway(name, redis_options[, prefix]): a node of the fleet (another
-- deployment on the same Redis: another prefix)
local function gateway(name, redis_options, prefix)
  local n = env.nodes[name]
  local cmd = table.concat({
    "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", n.listen, "--admin", n.admin,
    "--admin-token-file", q(env.dir .. "/token"), "--workers 2", "--prefix", q(env.dir .. "/" .. name),
    "--policy", q(env.dir .. "/policy.lua"),
    "--upstream", "counter=http://127.0.0.1:" .. env.counter .. "/mcp",
    "--registry", q("counter=" .. env.dir .. "/counter.json"), "--context", q("counter=" .. env.dir .. "/counter.ctx"),
    "--upstream", "rug=http://127.0.0.1:" .. env.rug .. "/mcp",
    "--registry", q("rug=" .. env.dir .. "/rug.json"), "--context", q("rug=" .. env.dir .. "/rug.ctx"),
    redis_options, "--redis-password-file", q(env.dir .. "/redis.password"),
    "--redis-prefix", prefix or "fleet-spec:", "--redis-sync", tostring(SYNC),
  }, " ")
  pids[name] = fx.spawn(cmd, env.dir .. "/" .. name .. ".log")
  fx.wait_for("node " .. name .. "'s /healthz", function()
    local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. n.listen .. "/healthz"))
    return c == 0 and health:find('"ok"')
  end, env.dir .. "/" .. name .. ".log")
end

-- A single-tool plan of six samples in one epoch, its tool declared
-- deterministic and verified: identical arguments whose results all differ
-- (RESULT_DISAGREE: the declaration is quarantined), or six different
-- arguments (ARG_DISAGREE while the tool counts as verified,
-- DETERMINISM_UNVERIFIED once it does not).
local function plan(tool, kind)
  local samples = {}
  for i = 1, 6 do
    local same = kind == "results" and 1 or i
    local args = tool == "echo" and ('{"message":"m' .. same .. '"}') or ('{"a":' .. same .. ',"b":1}')
    local result = kind == "results" and ('{"n":' .. i .. "}") or '{"n":0}'
    samples[i] = '{"arguments":' .. args .. ',"result":' .. result .. ',"epoch":"e1"}'
  end
  return '{"plan_id":"' .. tool .. "-" .. kind .. '","tool":{"server":"counter","name":"' .. tool ..
    '","deterministic":true,"verified":true},"samples":[' .. table.concat(samples, ",") .. "]}"
end

local function classify(node, tool, kind)
  local d = api(node, "/v1/classify", plan(tool, kind))
  return d.outcomes and d.outcomes[1].code or d.code
end

-- Seconds until fn() holds, polled; fails after `within` seconds.
local function within(seconds, what, fn)
  local t0 = fx.now()
  local t
  fx.wait_for(what, function()
    if fn() then
      t = fx.now() - t0
      return true
    end
  end, nil, seconds + 5)
  io.stderr:write(string.format("# fleet: %s in %.2f s\n", what, t))
  assert(t <= seconds, what .. " took " .. string.format("%.2f", t) .. " s, more than " .. seconds)
  return t
end

local function outcome(r)
  if r.json.result then return "pass" end
  return r.json.error.data.decision.code == "APPROVAL_DENIED" and "denied" or
    (r.json.error.code == -31002 and "deferred" or "refused")
end

describe("a fleet of toolgate gateways on Redis", function()
  local ready, why

  setup(function()
    if not h.have("node") or h.run("test -x /usr/sbin/nginx") ~= 0 or not h.have("redis-server") or
      h.run("test -f /usr/share/lua/5.1/nginx/redis.lua") ~= 0 or not h.have("openssl") then
      why = "needs node, Debian's nginx, redis-server, lua-nginx-redis and openssl (make test installs them)"
      return
    end
    if h.run("test -f " .. q(fx.testdir .. "/node_modules/@modelcontextprotocol/sdk/package.json")) ~= 0 then
      why = os.getenv("TOOLGATE_NPM_UNAVAILABLE")
      if why then return end
      error("nginx/test/node_modules is missing (make test installs it: npm ci --prefix nginx/test)")
    end
    env.dir = fx.tempdir("toolgate-fleet-spec")
    assert(os.execute("mkdir -p " .. q(env.dir .. "/redis")))
    local ports = fx.ports(12)
    env.nodes.d = { listen = "127.0.0.1:" .. ports[11], admin = "127.0.0.1:" .. ports[12] }
    env.redis_port, env.redis_tls_port = ports[1], ports[8]
    env.nodes.c = { listen = "127.0.0.1:" .. ports[9], admin = "127.0.0.1:" .. ports[10] }
    make_certificates(env.dir .. "/tls")
    env.nodes.a = { listen = "127.0.0.1:" .. ports[2], admin = "127.0.0.1:" .. ports[3] }
    env.nodes.b = { listen = "127.0.0.1:" .. ports[4], admin = "127.0.0.1:" .. ports[5] }
    env.redis_password = "fleet-spec-" .. tostring(math.random(1e9))
    h.write_file(env.dir .. "/redis.password", env.redis_password .. "\n")
    start_redis()

    pids.counter = fx.spawn("PORT=" .. ports[6] .. " JSON_RESPONSE=1 exec node upstream.mjs", env.dir .. "/counter.log")
    pids.rug = fx.spawn("PORT=" .. ports[7] .. " RUG_PULL=1 JSON_RESPONSE=1 exec node upstream.mjs",
      env.dir .. "/rug.log")
    env.counter = fx.upstream_port(env.dir .. "/counter.log")
    env.rug = fx.upstream_port(env.dir .. "/rug.log")
    fx.record("counter", env.counter, env.dir .. "/counter.json")
    fx.record("rug", env.rug, env.dir .. "/rug.json")
    for _, s in ipairs({ "counter", "rug" }) do
      h.write_file(env.dir .. "/" .. s .. ".ctx", '{"scopes":["' .. s .. ':read","' .. s .. ':write"]}')
    end
    env.token = "fleet-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(env.dir .. "/token", env.token .. "\n")
    -- (the shipped gateway policy, its refusals as JSON-RPC errors: the fleet's specs read a defer's approval
    -- id from the error's data; nginx_spec covers the default, a tool result the model reads)
    local policy = h.read_file(root .. "/policies/gateway.lua"):gsub('refusal = "result"', 'refusal = "error"')
    h.write_file(env.dir .. "/policy.lua", policy)
    gateway("a", "--redis 127.0.0.1:" .. env.redis_port)
    gateway("b", "--redis 127.0.0.1:" .. env.redis_tls_port .. " --redis-tls " .. q(env.dir .. "/tls/ca.pem") ..
      " --redis-tls-name localhost")
    -- both nodes have copied the fleet's (empty) records once
    for _, n in ipairs({ "a", "b" }) do
      fx.wait_for("node " .. n .. " to reach Redis", function()
        return fx.metric(metrics(n), "toolgate_state_store_up") == 1
      end)
    end
    ready = true
  end)

  teardown(function()
    for _, n in ipairs({ "a", "b", "c", "d" }) do
      fx.stop(pids[n])
      local pid = env.dir and tonumber(h.read_file(env.dir .. "/" .. n .. "/nginx.pid") or "")
      if pid then fx.wait_for("nginx to stop", function() return not fx.alive(pid) end) end
    end
    fx.stop(pids.counter)
    fx.stop(pids.rug)
    if pids.redis then h.run("kill -CONT " .. pids.redis) end -- a test that failed while Redis hung
    fx.stop(pids.redis)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  local function need(pending)
    if ready then return true end
    pending(why or "the fleet did not start")
    return false
  end

  it("nginx refuses to start on a Redis option it cannot use, and says which", function()
    if not need(pending) then return end
    local prefix = env.dir .. "/bad"
    local code, out, err = h.toolgate("gateway --conf-only --listen " .. env.nodes.c.listen .. " --prefix " .. q(prefix) ..
      " --upstream counter=http://127.0.0.1:" .. env.counter .. "/mcp --registry " ..
      q("counter=" .. env.dir .. "/counter.json") .. " --redis 127.0.0.1:" .. env.redis_port)
    assert.equals(0, code, err)
    local conf = h.lines_of(out)[1]
    local text = h.read_file(conf)
    h.write_file(conf, (text:gsub("redis = { ", "redis = { read_timeout = 0, ")))
    -- (nginx -t skips init_by_lua: start it; were it to run, timeout stops it)
    local c, _, e = h.run("timeout 10 /usr/sbin/nginx -p " .. q(prefix) .. " -c " .. q(conf) .. " -e stderr")
    assert.equals(1, c)
    assert.matches("redis.read_timeout: must be from 0.001 to 60", e, 1, true)
    -- a prefix whose scans could match another deployment's keys
    h.write_file(conf, (text:gsub("redis = { ", 'redis = { prefix = "team*", ')))
    c, _, e = h.run("timeout 10 /usr/sbin/nginx -p " .. q(prefix) .. " -c " .. q(conf) .. " -e stderr")
    assert.equals(1, c)
    assert.matches("redis.prefix: must not hold { } * ? [ ] or \\", e, 1, true)
  end)

  it("a RESULT_DISAGREE seen through node A quarantines the declaration on node B within the bound", function()
    if not need(pending) then return end
    -- verified on B: six different arguments are a fabricated-argument reject
    assert.equals("ARG_DISAGREE", classify("b", "add", "args"))
    assert.equals("RESULT_DISAGREE", classify("a", "add", "results"))
    within(BOUND, "B to see the quarantine", function() return classify("b", "add", "args") == "DETERMINISM_UNVERIFIED" end)
    assert.matches("add%-results", redis_cli("--raw hvals " .. key("det:q")))
    fx.wait_for("B's gauge", function()
      return fx.metric(metrics("b"), 'toolgate_quarantined{kind="determinism"}') == 1
    end)
  end)

  it("an approval granted through A lets the identical retry pass once through B, then defers on both", function()
    if not need(pending) then return end
    local body = fx.call_body(11, "write_note", '{"text":"fleet approve me"}')
    local before = calls().total
    local d = send("a", "counter", body)[1].json.error
    assert.equals(-31002, d.code)
    local id = d.data.approval_id
    -- the same call through B asks for the same approval (one binding for the fleet)
    assert.equals(id, send("b", "counter", body)[1].json.error.data.approval_id)
    assert.equals("pending", json(admin("b", "GET", "/v1/approvals/" .. id)).status)
    assert.equals("granted", json(admin("a", "POST", "/v1/approvals/" .. id .. "/grant")).status)
    assert.equals("pass", outcome(send("b", "counter", body)[1]))
    assert.equals(before + 1, calls().total)
    assert.equals("deferred", outcome(send("b", "counter", body)[1]))
    assert.equals("deferred", outcome(send("a", "counter", body)[1]))
    assert.equals(before + 1, calls().total)
    assert.equals("used", json(admin("a", "GET", "/v1/approvals/" .. id)).status)
    -- denied through B: refused through A
    local other = fx.call_body(12, "write_note", '{"text":"fleet deny me"}')
    local oid = send("b", "counter", other)[1].json.error.data.approval_id
    assert.equals("denied", json(admin("b", "POST", "/v1/approvals/" .. oid .. "/deny")).status)
    assert.equals("denied", outcome(send("a", "counter", other)[1]))
    assert.equals(before + 1, calls().total)
  end)

  it("an approval granted in node A's web inbox lets the identical retry pass once through B, then defers on both",
    function()
    if not need(pending) then return end
    local body = fx.call_body(14, "write_note", '{"text":"fleet inbox approve me"}')
    local before = calls().total
    local id = send("b", "counter", body)[1].json.error.data.approval_id
    -- a person logs in to A's inbox as inbox_spec's raw client does: the session cookie, the page's CSRF token
    local inbox = "http://" .. env.nodes.a.admin
    local head = fx.curl("-o /dev/null -D - --data-urlencode " .. q("token=" .. env.token) .. " "
      .. q(inbox .. "/approvals/login"))
    local cookie = "-b " .. q("toolgate_inbox=" .. assert(head:match("\n[Ss]et%-[Cc]ookie: toolgate_inbox=(%x+);"), head))
    local csrf = assert(fx.curl(cookie .. " " .. q(inbox .. "/approvals")):match('<meta name="csrf%-token" content="(%x+)">'))
    local seen
    for _, r in ipairs(json(fx.curl(cookie .. " " .. q(inbox .. "/v1/approvals"))).approvals) do
      if r.id == id then seen = r.status end
    end
    assert.equals("pending", seen)
    local g = json(fx.curl("-X POST " .. cookie .. " -H " .. q("X-CSRF-Token: " .. csrf) .. " -H " .. q("Origin: " .. inbox)
      .. " -H 'Content-Type: application/json' --data '{\"uses\":1}' " .. q(inbox .. "/v1/approvals/" .. id .. "/grant")))
    assert.equals("granted", g.status)
    assert.equals("inbox (admin token)", g.decided_by)
    assert.equals("pass", outcome(send("b", "counter", body)[1]))
    assert.equals(before + 1, calls().total)
    assert.equals("deferred", outcome(send("b", "counter", body)[1]))
    assert.equals("deferred", outcome(send("a", "counter", body)[1]))
    assert.equals(before + 1, calls().total)
  end)

  it("concurrent grants from both nodes decide once, and concurrent retries on both let exactly one call through", function()
    if not need(pending) then return end
    local body = fx.call_body(13, "write_note", '{"text":"fleet race"}')
    local before = calls().total
    local id = send("a", "counter", body)[1].json.error.data.approval_id
    local function grant_in_background(node)
      return fx.spawn("exec curl -s -o /dev/null -w '%{http_code}' -X POST -H " ..
        q("Authorization: Bearer " .. env.token) .. " " ..
        q("http://" .. env.nodes[node].admin .. "/v1/approvals/" .. id .. "/grant"), env.dir .. "/grant-" .. node)
    end
    local ga, gb = grant_in_background("a"), grant_in_background("b")
    fx.wait_for("the grants", function() return not fx.alive(ga) and not fx.alive(gb) end)
    local codes = { h.read_file(env.dir .. "/grant-a"), h.read_file(env.dir .. "/grant-b") }
    table.sort(codes)
    assert.same({ "200", "409" }, codes)
    -- six identical calls at once on each node
    local function race(node)
      return fx.spawn("exec node http.mjs send " .. q(url(node, "counter")) .. " " .. q(body) .. " 6",
        env.dir .. "/race-" .. node)
    end
    local ra, rb = race("a"), race("b")
    fx.wait_for("the retries", function() return not fx.alive(ra) and not fx.alive(rb) end)
    local passed, deferred = 0, 0
    for _, n in ipairs({ "a", "b" }) do
      for _, r in ipairs(fx.lines(h.read_file(env.dir .. "/race-" .. n))) do
        r.json = json(r.body)
        local o = outcome(r)
        if o == "pass" then passed = passed + 1 elseif o == "deferred" then deferred = deferred + 1 end
      end
    end
    assert.equals(1, passed)
    assert.equals(11, deferred)
    assert.equals(before + 1, calls().total)
  end)

  it("a quota counted on Redis holds across both nodes: of twelve calls at once, exactly its limit pass",
    function()
    if not need(pending) then return end
    local stock = h.read_file(env.dir .. "/policy.lua")
    local function reload(policy)
      h.write_file(env.dir .. "/policy.lua", policy)
      for _, n in ipairs({ "a", "b" }) do assert.equals("success", json(admin(n, "POST", "/v1/reload")).result) end
    end
    local quota, n = stock:gsub('stages = { "rung", "gate", "verifier" }', 'stages = { "rung", "gate", "verifier", '
      .. '"quota" },\n  quota = { rules = { { server = "counter", tool = "add", where = "/a > 1000000", limit = 5, '
      .. 'window = 3600 } } }', 1)
    assert(n == 1, "the policy has no stages line")
    reload(quota)
    local body = fx.call_body(14, "add", '{"a":1000001,"b":' .. math.random(1e6) .. "}")
    local before = calls().add or 0
    local function race(node)
      return fx.spawn("exec node http.mjs send " .. q(url(node, "counter")) .. " " .. q(body) .. " 6",
        env.dir .. "/quota-" .. node)
    end
    local ra, rb = race("a"), race("b")
    fx.wait_for("the calls", function() return not fx.alive(ra) and not fx.alive(rb) end)
    reload(stock)
    local passed, over = 0, 0
    for _, node in ipairs({ "a", "b" }) do
      for _, r in ipairs(fx.lines(h.read_file(env.dir .. "/quota-" .. node))) do
        r.json = json(r.body)
        if r.json.result then passed = passed + 1
        elseif r.json.error.data.decision.code == "QUOTA" then over = over + 1 end
      end
    end
    assert.same({ 5, 7 }, { passed, over })
    assert.equals(before + 5, calls().add)
  end)

  it("a pin change reported through A refuses the tool's calls on both nodes", function()
    if not need(pending) then return end
    local echo = fx.call_body(21, "echo", '{"message":"hi"}')
    assert.equals("pass", outcome(send("b", "rug", echo)[1]))
    -- A reads the server's changed tools/list: echo no longer matches its pin
    local r = fx.client(url("a", "rug"), '[{"op":"list"},{"op":"call","name":"echo","arguments":{"message":"hi"}}]')
    assert.equals("PIN_CHANGED", r[3].error.data.decision.code)
    within(BOUND, "B to refuse echo", function()
      local x = send("b", "rug", echo)[1]
      return x.json.error and x.json.error.data.decision.code == "PIN_CHANGED"
    end)
    -- (each report is its own write: B may copy one before the other)
    local changes
    within(BOUND, "B to list both reports", function()
      changes = {}
      for _, p in ipairs(json(admin("b", "GET", "/v1/pins")).reports) do
        if p.server == "rug" then changes[p.tool] = p.change.change end
      end
      return changes.exfiltrate ~= nil
    end)
    assert.same({ echo = "changed", exfiltrate = "added" }, changes)
    -- the other tools still pass on B
    assert.equals("pass", outcome(send("b", "rug", fx.call_body(22, "add", '{"a":1,"b":1}'))[1]))
  end)

  it("a Redis that hangs (SIGSTOP): a granted call stays deferred, answered within the timeouts", function()
    if not need(pending) then return end
    local body = fx.call_body(41, "write_note", '{"text":"granted, then Redis hangs"}')
    local id = send("a", "counter", body)[1].json.error.data.approval_id
    assert.equals("granted", json(admin("a", "POST", "/v1/approvals/" .. id .. "/grant")).status)
    local before = calls().total
    assert.equals(0, (h.run("kill -STOP " .. pids.redis)))
    local t0 = fx.now()
    local ok, r = pcall(send, "b", "counter", body)
    local took = fx.now() - t0
    h.run("kill -CONT " .. pids.redis)
    assert(ok, r)
    assert.equals("deferred", outcome(r[1]))
    io.stderr:write(string.format("# fleet: deferred in %.2f s while Redis hung\n", took))
    -- two Redis operations of at most 0.6 s each (connect, send, read), and node starting up
    assert.is_true(took < 3, "answered in " .. took .. " s")
    assert.equals(before, calls().total)
    -- Redis answers again.  A take it received on a pooled connection before
    -- it hung runs when it wakes, after the gateway gave up on it: that use is
    -- spent with no call let through (at most once, never twice); otherwise
    -- the use is still there and lets the call through once.
    fx.wait_for("Redis to answer node B", function() return fx.metric(metrics("b"), "toolgate_state_store_up") == 1 end)
    local status = json(admin("b", "GET", "/v1/approvals/" .. id)).status
    io.stderr:write("# fleet: after the hang the approval is " .. status .. "\n")
    if status == "granted" then
      assert.equals("pass", outcome(send("b", "counter", body)[1]))
    else
      assert.equals("used", status)
    end
    assert.equals("deferred", outcome(send("a", "counter", body)[1]))
    assert.equals(before + (status == "granted" and 1 or 0), calls().total)
  end)

  it("a node that does not trust Redis's TLS certificate never reaches it", function()
    if not need(pending) then return end
    gateway("c", "--redis 127.0.0.1:" .. env.redis_tls_port .. " --redis-tls " .. q(env.dir .. "/tls/other-ca.pem") ..
      " --redis-tls-name localhost")
    fx.wait_for("node C's polls to fail", function()
      local m = fx.curl(q("http://" .. env.nodes.c.listen .. "/metrics"))
      return (fx.metric(m, 'toolgate_state_store_errors_total{op="sync"}') or 0) >= 2
        and fx.metric(m, "toolgate_state_store_up") == 0
    end)
    local log = h.read_file(env.dir .. "/c.log")
    -- (nginx's verify error; the store's own line says "TLS: ..." or, when the
    -- handshake returned before nginx closed the connection, "AUTH: closed")
    assert(log:find("toolgate redis: unreachable or unusable (", 1, true) and log:find("certificate verify error", 1, true),
      log:sub(-3000))
    -- what it cannot check it does not grant: a write is deferred, with no request on Redis
    local d = fx.send("http://" .. env.nodes.c.listen .. "/mcp/counter",
      fx.call_body(51, "write_note", '{"text":"untrusted Redis"}'))[1]
    assert.equals(-31002, d.json.error.code)
    assert.equals("0", (redis_cli("--raw exists " .. key("a:" .. d.json.error.data.approval_id)):gsub("%s", "")))
    fx.stop(pids.c)
    pids.c = nil
  end)

  it("fails closed while Redis is down and writes what it learned when Redis returns", function()
    if not need(pending) then return end
    -- granted before Redis goes, not yet used
    local kept = fx.call_body(31, "write_note", '{"text":"granted before the outage"}')
    local kid = send("a", "counter", kept)[1].json.error.data.approval_id
    assert.equals("granted", json(admin("a", "POST", "/v1/approvals/" .. kid .. "/grant")).status)
    -- verified while Redis answers
    assert.equals("ARG_DISAGREE", classify("a", "broken_add", "args"))
    local before = calls().total
    fx.stop(pids.redis)
    pids.redis = nil
    fx.wait_for("A to see Redis gone", function() return fx.metric(metrics("a"), "toolgate_state_store_up") == 0 end)
    -- no approval can be checked: the granted call stays deferred, a new one is deferred
    assert.equals("deferred", outcome(send("a", "counter", kept)[1]))
    assert.equals("deferred", outcome(send("b", "counter", kept)[1]))
    assert.equals("deferred", outcome(send("a", "counter", fx.call_body(32, "write_note", '{"text":"new"}'))[1]))
    local g = fx.curl("-o /dev/null -w '%{http_code}' -X POST -H " .. q("Authorization: Bearer " .. env.token) .. " " ..
      q("http://" .. env.nodes.b.admin .. "/v1/approvals/" .. kid .. "/deny"))
    assert.equals("503", g)
    assert.equals("UNAVAILABLE", json(admin("a", "GET", "/v1/approvals/" .. kid)).code)
    assert.equals("UNAVAILABLE", json(admin("a", "GET", "/v1/approvals")).code)
    assert.equals(before, calls().total)
    -- reads still pass (pins and quarantines as copied)
    assert.equals("pass", outcome(send("a", "counter", fx.call_body(33, "echo", '{"message":"still"}'))[1]))
    before = before + 1
    -- the verification cannot be read: argument disagreement defers instead of rejecting
    fx.wait_for("A's copy to go stale", function()
      return classify("a", "broken_add", "args") == "DETERMINISM_UNVERIFIED"
    end)
    -- a quarantine learned while away: kept on A, waiting for Redis
    assert.equals("RESULT_DISAGREE", classify("a", "echo", "results"))
    local m = metrics("a")
    assert.is_true(fx.metric(m, "toolgate_state_store_pending_writes") >= 1)
    assert.is_true(fx.metric(m, 'toolgate_state_store_errors_total{op="approval"}') >= 1)
    assert.matches("toolgate redis: unreachable", h.read_file(env.dir .. "/a.log"), 1, true)

    start_redis()
    fx.wait_for("A to write what it kept", function()
      local mm = metrics("a")
      return fx.metric(mm, "toolgate_state_store_up") == 1 and fx.metric(mm, "toolgate_state_store_pending_writes") == 0
    end)
    assert.matches("echo%-results", redis_cli("--raw hvals " .. key("det:q")))
    -- B learns it from Redis
    fx.wait_for("B's copy to be fresh", function() return classify("b", "broken_add", "args") == "ARG_DISAGREE" end)
    within(BOUND, "B to see the quarantine made while Redis was away", function()
      return classify("b", "echo", "args") == "DETERMINISM_UNVERIFIED"
    end)
    -- Redis restarted: the grant made before is refused (a restart may have
    -- brought back spent uses), the call asks again, a new grant lets it pass once
    local again = send("b", "counter", kept)[1].json.error
    assert.same({ -31002, kid }, { again.code, again.data.approval_id })
    assert.equals("pending", json(admin("a", "GET", "/v1/approvals/" .. kid)).status)
    assert.equals("granted", json(admin("a", "POST", "/v1/approvals/" .. kid .. "/grant")).status)
    assert.equals("pass", outcome(send("b", "counter", kept)[1]))
    assert.equals("deferred", outcome(send("a", "counter", kept)[1]))
    assert.equals(before + 1, calls().total)
    assert.matches("toolgate redis: reachable again", h.read_file(env.dir .. "/a.log"), 1, true)
  end)

  it("a Redis that lost its data gets the fleet's quarantines and pin reports back from the nodes", function()
    if not need(pending) then return end
    redis_cli("flushall")
    fx.wait_for("the nodes to write their records again", function()
      local pins, det = redis_cli("--raw hvals " .. key("pins")), redis_cli("--raw hvals " .. key("det:q"))
      return pins:find("exfiltrate", 1, true) and det:find("add-results", 1, true) and det:find("echo-results", 1, true)
    end)
    assert.matches("(it may have lost data): writing this node's", h.read_file(env.dir .. "/b.log"), 1, true)
    -- never forgotten on the nodes meanwhile
    local x = send("b", "rug", fx.call_body(61, "echo", '{"message":"hi"}'))[1]
    assert.equals("PIN_CHANGED", x.json.error.data.decision.code)
    assert.equals("DETERMINISM_UNVERIFIED", classify("a", "add", "args"))
  end)

  it("a poll that cannot use Redis's replies is an error: up 0, errors{sync} counted, logged once, the copy ages", function()
    if not need(pending) then return end
    local function errors(n) return fx.metric(metrics(n), 'toolgate_state_store_errors_total{op="sync"}') end
    local function failing(n, since)
      local m = metrics(n)
      return fx.metric(m, "toolgate_state_store_up") == 0 and errors(n) >= since + 3 and
        fx.metric(m, "toolgate_state_store_sync_age_seconds") > 2 * SYNC
    end
    local function healthy(n) return fx.metric(metrics(n), "toolgate_state_store_up") == 1 end
    local version = tonumber((redis_cli("--raw get " .. key("version")):gsub("%s", "")))
    local before = { a = errors("a"), b = errors("b") }
    -- a string the poll cannot count
    redis_cli("set " .. key("version") .. " not-a-count")
    fx.wait_for("both nodes to report failing polls", function() return failing("a", before.a) and failing("b", before.b) end)
    local function logged(n) return select(2, h.read_file(env.dir .. "/" .. n .. ".log"):gsub("not%-a%-count", "")) end
    assert.equals(1, logged("a"))
    -- the copy counts as unread once it is stale: argument disagreement defers
    fx.wait_for("A's copy to go stale", function() return classify("a", "broken_add", "args") == "DETERMINISM_UNVERIFIED" end)
    assert.equals(1, logged("b"))
    redis_cli("set " .. key("version") .. " " .. (version + 1))
    fx.wait_for("both nodes to poll again", function() return healthy("a") and healthy("b") end)
    -- a hash where the count is
    before = { a = errors("a"), b = errors("b") }
    redis_cli("del " .. key("version"))
    redis_cli("hset " .. key("version") .. " n 1")
    fx.wait_for("both nodes to report failing polls", function() return failing("a", before.a) and failing("b", before.b) end)
    redis_cli("del " .. key("version"))
    redis_cli("set " .. key("version") .. " " .. (version + 2))
    fx.wait_for("both nodes to poll again", function() return healthy("a") and healthy("b") end)
    assert.equals("ARG_DISAGREE", classify("a", "broken_add", "args"))
  end)

  it("a Redis that may evict keys (allkeys-lru) is refused: nothing granted, the copy ages, until it is noeviction", function()
    if not need(pending) then return end
    local function up(n) return fx.metric(metrics(n), "toolgate_state_store_up") end
    fx.stop(pids.redis)
    start_redis("--maxmemory-policy allkeys-lru")
    fx.wait_for("both nodes to refuse it", function()
      local a, b = h.read_file(env.dir .. "/a.log"), h.read_file(env.dir .. "/b.log")
      return up("a") == 0 and up("b") == 0 and a:find("maxmemory-policy is allkeys-lru", 1, true) and
        b:find("maxmemory-policy is allkeys-lru", 1, true)
    end)
    local before = calls().total
    local body = fx.call_body(81, "write_note", '{"text":"an evicting Redis"}')
    local d = send("a", "counter", body)[1].json.error
    assert.equals(-31002, d.code)
    assert.equals("0", (redis_cli("--raw exists " .. key("a:" .. d.data.approval_id)):gsub("%s", "")))
    assert.equals("UNAVAILABLE", json(admin("b", "GET", "/v1/approvals")).code)
    assert.equals("UNAVAILABLE", json(admin("b", "POST", "/v1/approvals/" .. d.data.approval_id .. "/grant")).code)
    fx.wait_for("A's copy to go stale", function() return classify("a", "broken_add", "args") == "DETERMINISM_UNVERIFIED" end)
    -- the operator makes it safe: the nodes use it again
    redis_cli("config set maxmemory-policy noeviction")
    fx.wait_for("both nodes to use Redis again", function() return up("a") == 1 and up("b") == 1 end)
    assert.equals("ARG_DISAGREE", classify("a", "broken_add", "args"))
    local id = send("a", "counter", body)[1].json.error.data.approval_id
    assert.equals("granted", json(admin("b", "POST", "/v1/approvals/" .. id .. "/grant")).status)
    assert.equals("pass", outcome(send("b", "counter", body)[1]))
    assert.equals(before + 1, calls().total)
  end)

  it("a Redis whose CONFIG the nodes may not read is used, with one warning saying what the operator must guarantee", function()
    if not need(pending) then return end
    local function warnings(n)
      return select(2, h.read_file(env.dir .. "/" .. n .. ".log"):gsub("cannot read Redis's settings", ""))
    end
    local was = warnings("a")
    fx.stop(pids.redis)
    start_redis("--rename-command CONFIG ''")
    fx.wait_for("A to warn", function() return warnings("a") > was end)
    local errors = fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="sync"}')
    fx.sleep(4 * SYNC)
    assert.equals(1, fx.metric(metrics("a"), "toolgate_state_store_up"))
    assert.equals(errors, fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="sync"}'))
    assert.equals(was + 1, warnings("a"))
    assert.matches("maxmemory%-policy noeviction", h.read_file(env.dir .. "/a.log"))
    fx.stop(pids.redis)
    start_redis()
    fx.wait_for("both nodes to use Redis again", function()
      return fx.metric(metrics("a"), "toolgate_state_store_up") == 1 and fx.metric(metrics("b"), "toolgate_state_store_up") == 1
    end)
  end)

  it("a Redis restored from an RDB snapshot never spends a use twice: at most the grant's uses reach the upstream", function()
    if not need(pending) then return end
    local function up(n) return fx.metric(metrics(n), "toolgate_state_store_up") == 1 end
    local function reload(policy)
      h.write_file(env.dir .. "/policy.lua", policy)
      for _, n in ipairs({ "a", "b" }) do assert.equals("success", json(admin(n, "POST", "/v1/reload")).result) end
    end
    local stock = h.read_file(env.dir .. "/policy.lua") -- (the spec's: refusals as errors)
    reload((stock:gsub("approval_uses = 1", "approval_uses = 3")))
    -- Debian's stock persistence: snapshots (RDB), no append-only file
    local rdb = "--appendonly no --save ''"
    fx.stop(pids.redis)
    start_redis(nil, rdb)
    fx.wait_for("both nodes to use Redis", function() return up("a") and up("b") end)
    local body = fx.call_body(91, "write_note", '{"text":"three uses, then a snapshot"}')
    local id = send("a", "counter", body)[1].json.error.data.approval_id
    local granted = json(admin("b", "POST", "/v1/approvals/" .. id .. "/grant"))
    assert.same({ "granted", 3 }, { granted.status, granted.uses })
    redis_cli("save")
    local before = calls().total
    for i = 1, 3 do assert.equals("pass", outcome(send(i == 2 and "b" or "a", "counter", body)[1])) end
    assert.equals(before + 3, calls().total)
    -- Redis dies and comes back from the snapshot, where the three uses are unspent
    assert.equals(0, (h.run("kill -KILL " .. pids.redis)))
    fx.wait_for("Redis to die", function() return not fx.alive(pids.redis) end)
    start_redis(nil, rdb)
    assert.equals("3", (redis_cli("--raw get " .. key("a+" .. id)):match("^%d+")))
    -- both nodes poll it, then the call is retried through both, six times
    fx.wait_for("both nodes to use Redis again", function() return up("a") and up("b") end)
    -- the restored grant is not listed, nor counted as a bad record
    local function bad() return fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="record"}') end
    local bad_before, listed = bad(), {}
    for _, r in ipairs(json(admin("a", "GET", "/v1/approvals")).approvals) do listed[r.id] = r.status end
    assert.is_nil(listed[id])
    assert.equals(bad_before, bad())
    for i = 1, 6 do send(i % 2 == 0 and "b" or "a", "counter", body) end
    io.stderr:write(string.format("# fleet: 3 uses granted, spent, restored from the snapshot: %d calls reached the " ..
      "upstream\n", calls().total - before))
    assert.equals(before + 3, calls().total)
    -- the restored grant is never used: the call asks again, and a new grant lets it through
    local again = send("a", "counter", body)[1].json.error
    assert.equals(-31002, again.code)
    assert.equals("pending", json(admin("b", "GET", "/v1/approvals/" .. again.data.approval_id)).status)
    assert.equals("granted", json(admin("b", "POST", "/v1/approvals/" .. again.data.approval_id .. "/grant")).status)
    assert.equals("pass", outcome(send("b", "counter", body)[1]))
    assert.equals(before + 4, calls().total)
    -- each node said what this persistence keeps
    for _, n in ipairs({ "a", "b" }) do assert.matches("appendonly no", h.read_file(env.dir .. "/" .. n .. ".log"), 1, true) end
    reload(stock)
    fx.stop(pids.redis)
    start_redis()
    fx.wait_for("both nodes to use Redis again", function() return up("a") and up("b") end)
  end)

  it("a Redis that refuses writes but answers reads degrades the fleet: every node counts verifications unverified", function()
    if not need(pending) then return end
    local function degraded(n) return fx.metric(metrics(n), "toolgate_state_store_degraded") end
    assert.equals("ARG_DISAGREE", classify("b", "failing_add", "args"))
    -- full under noeviction: every write is refused (OOM), reads answer
    redis_cli("config set maxmemory 1")
    finally(function() redis_cli("config set maxmemory 0") end)
    assert.equals("RESULT_DISAGREE", classify("a", "failing_add", "results"))
    assert.is_true(fx.metric(metrics("a"), "toolgate_state_store_pending_writes") >= 1)
    within(BOUND, "B to count the verification unverified", function()
      return classify("b", "failing_add", "args") == "DETERMINISM_UNVERIFIED"
    end)
    assert.equals("DETERMINISM_UNVERIFIED", classify("b", "broken_add", "args"))
    -- (each node's own poll finds it: within a poll or two)
    fx.wait_for("both nodes to report the fleet degraded", function() return degraded("a") == 1 and degraded("b") == 1 end,
      nil, 2)
    assert.equals(1, fx.metric(metrics("b"), "toolgate_state_store_up"))
    assert.matches("refuses writes", h.read_file(env.dir .. "/b.log"), 1, true)
    -- room again: A's quarantine lands, B holds it, and B's other verifications count again
    redis_cli("config set maxmemory 0")
    fx.wait_for("the fleet to be whole again", function()
      return degraded("a") == 0 and degraded("b") == 0 and classify("b", "broken_add", "args") == "ARG_DISAGREE"
    end)
    assert.equals(0, fx.metric(metrics("a"), "toolgate_state_store_pending_writes"))
    assert.equals("DETERMINISM_UNVERIFIED", classify("b", "failing_add", "args"))
  end)

  it("another deployment whose prefix extends this one's never shows in its listings, and a bad record is skipped", function()
    if not need(pending) then return end
    local function ids(node)
      local out = {}
      for _, r in ipairs(json(admin(node, "GET", "/v1/approvals")).approvals) do out[r.id] = r.status end
      return out
    end
    local function status(node, path)
      return fx.curl("-o /dev/null -w '%{http_code}' " .. (path == "/metrics" and "" or "-H " ..
        q("Authorization: Bearer " .. env.token) .. " ") .. q("http://" .. env.nodes[node][path == "/metrics" and
        "listen" or "admin"] .. path))
    end
    local ours = ids("a")
    -- deployment D: prefix fleet-spec:a: (this fleet's is fleet-spec:), a pending approval, a quarantine (its version)
    gateway("d", "--redis 127.0.0.1:" .. env.redis_port, "fleet-spec:a:")
    fx.wait_for("node D to reach Redis", function()
      return fx.metric(fx.curl(q("http://" .. env.nodes.d.listen .. "/metrics")), "toolgate_state_store_up") == 1
    end)
    local theirs = fx.send("http://" .. env.nodes.d.listen .. "/mcp/counter",
      fx.call_body(71, "write_note", '{"text":"deployment D"}'))[1].json.error.data.approval_id
    assert.equals("RESULT_DISAGREE", classify("d", "add", "results"))
    fx.wait_for("D's writes on Redis", function()
      return fx.metric(fx.curl(q("http://" .. env.nodes.d.listen .. "/metrics")), "toolgate_state_store_pending_writes") == 0
    end)
    assert.equals("200", status("a", "/metrics"))
    assert.equals("200", status("a", "/v1/approvals"))
    assert.same(ours, ids("a"))
    assert.same({ [theirs] = "pending" }, ids("d"))
    -- a record of this deployment's that is no approval: skipped, counted, logged; the others listed
    local before = fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="record"}') or 0
    redis_cli("set " .. key("a:0bad") .. " 5")
    assert.same(ours, ids("a"))
    assert.equals("200", status("a", "/metrics"))
    assert.is_true(fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="record"}') >= before + 2)
    assert.matches("0bad", h.read_file(env.dir .. "/a.log"), 1, true)
    redis_cli("del " .. key("a:0bad"))
    fx.stop(pids.d)
    pids.d = nil
  end)

  it("a quarantine learned while Redis is down survives the node's nginx restart and reaches the fleet", function()
    if not need(pending) then return end
    local function node_a() return "--redis 127.0.0.1:" .. env.redis_port end
    assert.equals("ARG_DISAGREE", classify("b", "broken_add", "args"))
    fx.stop(pids.redis)
    fx.wait_for("A to see Redis gone", function() return fx.metric(metrics("a"), "toolgate_state_store_up") == 0 end)
    assert.equals("RESULT_DISAGREE", classify("a", "broken_add", "results"))
    assert.is_true(fx.metric(metrics("a"), "toolgate_state_store_pending_writes") >= 1)
    -- A's nginx stops and starts again (its shared dict is gone), Redis still down
    local pid = tonumber(h.read_file(env.dir .. "/a/nginx.pid"))
    fx.stop(pids.a)
    fx.wait_for("A's nginx to stop", function() return not fx.alive(pid) end)
    gateway("a", node_a())
    assert.is_true(fx.metric(metrics("a"), "toolgate_state_store_pending_writes") >= 1)
    -- (the records Redis had are not written again: only the one it missed)
    assert.matches("holds record(s) not on Redis when nginx stopped: 1;", h.read_file(env.dir .. "/a.log"), 1, true)
    start_redis()
    fx.wait_for("A to write what it kept", function()
      local m = metrics("a")
      return fx.metric(m, "toolgate_state_store_up") == 1 and fx.metric(m, "toolgate_state_store_pending_writes") == 0
    end)
    assert.matches("broken_add%-results", redis_cli("--raw hvals " .. key("det:q")))
    within(BOUND, "B to see the quarantine A kept across its restart", function()
      return classify("b", "broken_add", "args") == "DETERMINISM_UNVERIFIED"
    end)
    assert.equals("DETERMINISM_UNVERIFIED", classify("a", "broken_add", "args"))
  end)

  it("a flood of distinct deferred calls through both nodes opens at most mcp.max_pending_approvals, refuses the rest "
    .. "APPROVALS_FULL, and leaves Redis room for a quarantine", function()
    if not need(pending) then return end
    local LIMIT, FLOOD, BATCHES = 100, 300, 6 -- (the policy's default limit)
    local function pending_notes()
      local n = 0
      for _, r in ipairs(json(admin("a", "GET", "/v1/approvals")).approvals) do
        if r.status == "pending" and r.tool == "write_note" then n = n + 1 end
      end
      return n
    end
    local waiting = pending_notes()
    -- room on Redis for the limit's requests (about 4 kB each, as Redis counts), not for the flood's
    local used = tonumber(redis_cli("info memory"):match("used_memory:(%d+)"))
    redis_cli("config set maxmemory " .. (used + 800 * 1024))
    finally(function() redis_cli("config set maxmemory 0") end)
    local before, refused_before = calls().total, {}
    for _, n in ipairs({ "a", "b" }) do
      refused_before[n] = fx.metric(metrics(n), 'toolgate_approval_events_total{event="refused_full"}') or 0
    end
    -- six batches of fifty distinct calls at once, three through each node
    local runs = {}
    for b = 1, BATCHES do
      local calls_of = {}
      for i = 1, FLOOD / BATCHES do
        local k = (b - 1) * FLOOD / BATCHES + i
        calls_of[i] = fx.call_body(1000 + k, "write_note", '{"text":"flood ' .. k .. '"}')
      end
      local file = env.dir .. "/flood-" .. b .. ".json"
      h.write_file(file, "[" .. table.concat(calls_of, ",") .. "]")
      local node = b % 2 == 0 and "b" or "a"
      runs[b] = fx.spawn("exec node http.mjs send " .. q(url(node, "counter")) .. " " .. q("@" .. file) .. " 1",
        env.dir .. "/flood-" .. b .. ".out")
    end
    fx.wait_for("the flood's answers", function()
      for _, pid in ipairs(runs) do if fx.alive(pid) then return false end end
      return true
    end, nil, 60)
    local opened, full, other = 0, 0, {}
    for b = 1, BATCHES do
      for _, r in ipairs(fx.lines(h.read_file(env.dir .. "/flood-" .. b .. ".out"))) do
        for _, answer in ipairs(json(r.body)) do
          local e = answer.error
          if e and e.code == -31002 and type(e.data.approval_id) == "string" then
            opened = opened + 1
          elseif e and e.data and e.data.decision and e.data.decision.code == "APPROVALS_FULL" then
            full = full + 1
            assert.equals('too many calls of "write_note" wait for a person; ask an operator', e.data.decision.message)
          else
            other[#other + 1] = answer
          end
        end
      end
    end
    io.stderr:write(string.format("# fleet: a flood of %d distinct deferred calls (%d already waiting): %d approvals "
      .. "opened, %d refused APPROVALS_FULL, %d calls reached the upstream\n", FLOOD, waiting, opened, full,
      calls().total - before))
    assert.same({}, other)
    assert.equals(LIMIT - waiting, opened)
    assert.equals(FLOOD - opened, full)
    assert.equals(LIMIT, pending_notes())
    assert.equals(before, calls().total)
    local counted = 0
    for _, n in ipairs({ "a", "b" }) do
      counted = counted + fx.metric(metrics(n), 'toolgate_approval_events_total{event="refused_full"}') - refused_before[n]
    end
    assert.equals(full, counted)
    -- Redis still takes the fleet's safety records: a quarantine learned through A reaches Redis and B
    local function rug(kind)
      return (plan("add", kind):gsub('"server":"counter"', '"server":"rug"'):gsub('"plan_id":"', '"plan_id":"rug-'))
    end
    local function rug_classify(node, kind)
      local d = api(node, "/v1/classify", rug(kind))
      return d.outcomes and d.outcomes[1].code or d.code
    end
    assert.equals("ARG_DISAGREE", rug_classify("b", "args"))
    assert.equals("RESULT_DISAGREE", rug_classify("a", "results"))
    within(BOUND, "B to see the quarantine learned after the flood", function()
      return rug_classify("b", "args") == "DETERMINISM_UNVERIFIED"
    end)
    assert.matches("rug%-add%-results", redis_cli("--raw hvals " .. key("det:q")))
    for _, n in ipairs({ "a", "b" }) do
      local m = metrics(n)
      assert.same({ 0, 0 }, { fx.metric(m, "toolgate_state_store_degraded"),
        fx.metric(m, "toolgate_state_store_pending_writes") })
    end
  end)

  it("replies from Redis cut mid-way or delayed past the timeouts never let more calls through than the grant's uses",
    function()
    if not need(pending) then return end
    -- node A's Redis connection through a proxy that cuts and delays Redis's replies (nginx/test/tcp-chaos.mjs)
    pids.chaos = fx.spawn("exec node tcp-chaos.mjs " .. env.redis_port, env.dir .. "/chaos.log")
    local chaos = fx.wait_for("the proxy's ports", function()
      local line = h.read_file(env.dir .. "/chaos.log")
      return line and line:find("\n") and json(line)
    end)
    local function control(path) return json(fx.curl(q(string.format("http://127.0.0.1:%d", chaos.control) .. path))) end
    local function restart_a(port)
      local pid = tonumber(h.read_file(env.dir .. "/a/nginx.pid") or "")
      fx.stop(pids.a)
      if pid then fx.wait_for("A's nginx to stop", function() return not fx.alive(pid) end) end
      gateway("a", string.format("--redis 127.0.0.1:%d", port))
      fx.wait_for("A to reach Redis", function() return fx.metric(metrics("a"), "toolgate_state_store_up") == 1 end)
    end
    local stock = h.read_file(env.dir .. "/policy.lua")
    finally(function()
      h.write_file(env.dir .. "/policy.lua", stock)
      fx.stop(pids.chaos)
      pids.chaos = nil
      restart_a(env.redis_port)
    end)
    restart_a(chaos.port)
    -- (room for its request whatever waits already: the flood above leaves its tool at the default limit)
    h.write_file(env.dir .. "/policy.lua", (stock:gsub("approval_uses = 1",
      "approval_uses = 2, max_pending_approvals = 1000")))
    for _, n in ipairs({ "a", "b" }) do assert.equals("success", json(admin(n, "POST", "/v1/reload")).result) end
    local body = fx.call_body(95, "write_note", '{"text":"two uses, replies cut and delayed"}')
    local id = send("b", "counter", body)[1].json.error.data.approval_id
    local g = json(admin("b", "POST", "/v1/approvals/" .. id .. "/grant"))
    assert.same({ "granted", 2 }, { g.status, g.uses })
    local before, errors_before = calls().total, fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="approval"}')
    -- half of Redis's replies to A cut, the others delayed up to twice the read timeout (0.2 s);
    -- four rounds of eight retries at once through A and four through B
    control("/chaos?cut=0.5&delay=400")
    local seen = { pass = 0, deferred = 0, error = 0 }
    for round = 1, 4 do
      local runs = {}
      for _, x in ipairs({ { "a", 8 }, { "b", 4 } }) do
        runs[#runs + 1] = fx.spawn("exec node http.mjs send " .. q(url(x[1], "counter")) .. " " .. q(body) .. " " .. x[2],
          env.dir .. "/chaos-" .. round .. "-" .. x[1])
      end
      fx.wait_for("round " .. round .. "'s answers", function()
        return not fx.alive(runs[1]) and not fx.alive(runs[2])
      end, nil, 30)
      for _, n in ipairs({ "a", "b" }) do
        for _, r in ipairs(fx.lines(h.read_file(env.dir .. "/chaos-" .. round .. "-" .. n))) do
          local ok, doc = pcall(json, r.body)
          local o = ok and (doc.result and "pass" or (doc.error and doc.error.code == -31002 and "deferred")) or "error"
          assert.is_truthy(o, r.body) -- (no other refusal: the call is the granted one)
          seen[o] = seen[o] + 1
        end
      end
    end
    local stats = control("/calm")
    local ran = calls().total - before
    io.stderr:write(string.format("# fleet: 2 uses granted, 48 retries through both nodes while the proxy cut %d and " ..
      "delayed %d replies to A (of %d it carried): %d passed, %d deferred, %d errors; %d calls reached the upstream\n",
      stats.cut, stats.delayed, stats.replies, seen.pass, seen.deferred, seen.error, ran))
    assert.is_true(stats.cut >= 1 and stats.delayed >= 1, "the proxy disturbed nothing")
    assert.is_true(fx.metric(metrics("a"), 'toolgate_state_store_errors_total{op="approval"}') > errors_before)
    assert.is_true(ran <= 2, ran .. " calls reached the upstream")
    -- every pass was a call the upstream ran, and took a use
    assert.equals(ran, seen.pass)
    local a = json(admin("b", "GET", "/v1/approvals/" .. id))
    local left = a.status == "granted" and a.uses or 0
    assert.is_true(seen.pass <= 2 - left, a.status .. " with " .. left .. " uses left after " .. seen.pass .. " passes")
  end)
end)
