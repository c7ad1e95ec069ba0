-- Who asked, end to end: `toolgate gateway --principal-header X-Principal`
-- behind an auth layer, the nginx/README.md idiom (auth_request to an
-- identity service, auth_request_set $principal, proxy_set_header
-- X-Principal $principal), in front of a real MCP server built with the SDK
-- (nginx/test/upstream.mjs); the SDK's client (nginx/test/client.mjs, its
-- token in requestInit's headers) and raw HTTP (nginx/test/http.mjs) talk to
-- it.  Everything listens on 127.0.0.1 on ports the kernel gave and is
-- stopped by its PID.  Lua 5.4 only (nginx itself runs LuaJIT).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, alive, stop, wait_for = fx.json, fx.spawn, fx.alive, fx.stop, fx.wait_for
local q = h.shell_quote
local root = h.root

local env, pids = {}, {}

-- The auth layer: a front nginx whose /mcp/ asks an identity service
-- (a stand-in for an OAuth2 proxy: a bearer token -> a user) and passes the
-- user on as X-Principal, whatever the client sent under that name.
local function front_conf(dir, front, idp, gateway)
  return table.concat({
    "daemon off;", "worker_processes 1;", "pid " .. dir .. "/front.pid;", "error_log stderr notice;",
    "events { worker_connections 64; }",
    "http {",
    "  access_log off;",
    "  client_body_temp_path " .. dir .. "/tmp; proxy_temp_path " .. dir .. "/tmp;",
    "  fastcgi_temp_path " .. dir .. "/tmp; uwsgi_temp_path " .. dir .. "/tmp; scgi_temp_path " .. dir .. "/tmp;",
    "  map $http_authorization $token_user {",
    '    "Bearer alice-token" alice; "Bearer bob-token" bob@example.com; default "";',
    "  }",
    "  server {",
    "    listen 127.0.0.1:" .. front .. ";",
    "    location /mcp/ {",
    "      auth_request /_auth;",
    "      auth_request_set $principal $upstream_http_x_auth_user;",
    "      proxy_pass http://" .. gateway .. ";",
    "      proxy_http_version 1.1;",
    '      proxy_set_header Connection "";',
    "      proxy_set_header X-Principal $principal;",
    "      proxy_buffering off;",
    "    }",
    "    location = /_auth {",
    "      internal;",
    "      proxy_pass http://127.0.0.1:" .. idp .. "/check;",
    "      proxy_pass_request_body off;",
    '      proxy_set_header Content-Length "";',
    "    }",
    "  }",
    "  server {",
    "    listen 127.0.0.1:" .. idp .. ";",
    "    location = /check {",
    '      if ($token_user = "") { return 401; }',
    "      add_header X-Auth-User $token_user;",
    "      return 204;",
    "    }",
    "  }",
    "}", "" }, "\n")
end

-- The SDK client through the auth layer, with these headers on every request
local function client(headers, steps)
  local code, out, err = h.run("cd " .. q(fx.testdir) .. " && HEADERS=" .. q(headers) .. " timeout 60 node client.mjs "
    .. q("http://" .. env.front .. "/mcp/counter") .. " " .. q(steps))
  assert(code == 0, "client.mjs failed: " .. err .. out)
  return fx.lines(out)
end

local WRITE = '[{"op":"call","name":"write_note","arguments":{"text":"who asked"}}]'

-- a tool result with isError (the shipped policy's refusals) -> its decision and approval id
local function refused(msg)
  local r = assert(msg.ok, "a tool result expected")
  assert(r.isError == true, "isError expected: " .. (require("toolgate.value").encode(r)))
  return r._meta["toolgate/decision"], r._meta["toolgate/approval_id"]
end

local function admin(method, path)
  return json(fx.curl("-X " .. method .. " -H " .. q("Authorization: Bearer " .. env.token) .. " "
    .. q("http://" .. env.admin .. path)))
end

-- the decision log's lines about tools/call (workers write every 0.1 s)
local function call_lines(count)
  local out
  wait_for(count .. " call lines in the decision log", function()
    out = {}
    for l in (h.read_file(env.dir .. "/prefix/decisions.jsonl") or ""):gmatch("[^\n]+") do
      local t = json(l)
      if t.phase == "call" and t.decision and t.decision.tool == "write_note" then out[#out + 1] = t end
    end
    return #out >= count
  end)
  return out
end

describe("toolgate gateway --principal-header behind an auth layer (nginx auth_request)", function()
  local ready, why

  setup(function()
    why = fx.not_ready("@modelcontextprotocol/sdk")
    if why then return end
    local dir = fx.tempdir("toolgate-principals-spec")
    env.dir = dir
    local ports = fx.ports(5)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    env.front = "127.0.0.1:" .. ports[4]
    pids.counter = spawn("PORT=" .. ports[3] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
    env.counter = fx.upstream_port(dir .. "/counter.log")
    fx.record("counter", env.counter, dir .. "/counter.json")
    h.write_file(dir .. "/counter.ctx", '{"scopes":["counter:read","counter:write"]}')
    env.token = "spec-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(dir .. "/token", env.token .. "\n")
    pids.gateway = spawn(table.concat({ "exec", h.lua, q(root .. "/bin/toolgate"), "gateway", "--listen", env.listen,
      "--admin", env.admin, "--admin-token-file", q(dir .. "/token"), "--workers 2", "--prefix", q(dir .. "/prefix"),
      "--policy gateway", "--principal-header X-Principal",
      "--upstream", "counter=http://127.0.0.1:" .. env.counter .. "/mcp",
      "--registry", q("counter=" .. dir .. "/counter.json"), "--context", q("counter=" .. dir .. "/counter.ctx") },
      " "), dir .. "/gateway.log")
    wait_for("the gateway's /healthz", function()
      local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. env.listen .. "/healthz"))
      return c == 0 and health:find('"ok"')
    end, dir .. "/gateway.log")
    assert(os.execute("mkdir -p " .. q(dir .. "/front/tmp")))
    h.write_file(dir .. "/front/nginx.conf", front_conf(dir .. "/front", ports[4], ports[5], env.listen))
    pids.front = spawn("exec /usr/sbin/nginx -p " .. q(dir .. "/front") .. " -c " .. q(dir .. "/front/nginx.conf")
      .. " -e stderr", dir .. "/front.log")
    wait_for("the auth layer", function()
      local c, status = h.run("curl -s -o /dev/null -w '%{http_code}' --max-time 1 -X POST "
        .. q("http://" .. env.front .. "/mcp/counter"))
      return c == 0 and status == "401"
    end, dir .. "/front.log")
    ready = true
  end)

  teardown(function()
    stop(pids.front)
    stop(pids.gateway)
    if env.dir then
      local pid = tonumber(h.read_file(env.dir .. "/prefix/nginx.pid") or "")
      if pid then wait_for("nginx to stop", function() return not alive(pid) end) end
    end
    stop(pids.counter)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  local function need(pending)
    if ready then return true end
    pending(why or "the gateway did not start")
    return false
  end

  it("records who asked from the auth layer's header, never the client's own, and binds each approval to its asker",
    function()
    if not need(pending) then return end
    local alice = '{"Authorization":"Bearer alice-token"}'
    -- bob's token, and a forged X-Principal the auth layer overwrites
    local bob = '{"Authorization":"Bearer bob-token","X-Principal":"alice"}'
    local da, a = refused(client(alice, WRITE)[2])
    local db, b = refused(client(bob, WRITE)[2])
    assert.same({ "defer", "defer" }, { da.verdict, db.verdict })
    assert.not_equals(a, b)
    local ra, rb = admin("GET", "/v1/approvals/" .. a), admin("GET", "/v1/approvals/" .. b)
    assert.same({ "alice", "alice" }, { ra.principal, ra.binding.principal })
    assert.same({ "bob@example.com", "bob@example.com" }, { rb.principal, rb.binding.principal })
    -- the same call under the same policy: only who asked tells the two apart
    assert.same(da.binding, db.binding)
    -- alice's grant passes alice's call once, never bob's identical one
    assert.equals("granted", admin("POST", "/v1/approvals/" .. a .. "/grant").status)
    local r = client(bob, WRITE)[2]
    local again, id = refused(r)
    assert.same({ "defer", b }, { again.verdict, id })
    r = client(alice, WRITE)[2]
    assert.is_nil(r.ok.isError)
    assert.equals("used", admin("GET", "/v1/approvals/" .. a).status)
    -- every call's line in the decision log says who asked
    local seen = {}
    for _, l in ipairs(call_lines(4)) do seen[#seen + 1] = l.principal .. " " .. l.outcome end
    assert.same({ "alice held", "bob@example.com held", "bob@example.com held", "alice passed" }, seen)
    -- no token: the auth layer refuses, nothing reaches the gateway
    local code = select(2, h.run("curl -s -o /dev/null -w '%{http_code}' -X POST -H 'X-Principal: alice' "
      .. q("http://" .. env.front .. "/mcp/counter")))
    assert.equals("401", code)
  end)

  it("refuses a request that reaches it without a principal (401) or with a malformed one (400), deciding nothing",
    function()
    if not need(pending) then return end
    local url = "http://" .. env.listen .. "/mcp/counter"
    local body = fx.call_body(1, "write_note", '{"text":"nobody"}')
    local none = fx.send(url, body)[1]
    assert.equals(401, none.status)
    assert.equals("NO_PRINCIPAL", none.json.error.data.decision.code)
    for _, bad in ipairs({ "two words", 'a"b', string.rep("x", 257) }) do
      local r = fx.send(url, body, 1, '{"X-Principal":' .. require("toolgate.value").encode(bad) .. "}")[1]
      assert.equals(400, r.status)
      assert.equals("BAD_PRINCIPAL", r.json.error.data.decision.code)
    end
    -- nothing of them opened an approval
    for _, rec in ipairs(admin("GET", "/v1/approvals").approvals) do
      assert.truthy(rec.principal == "alice" or rec.principal == "bob@example.com", rec.principal)
    end
  end)
end)
