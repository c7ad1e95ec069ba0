-- The web inbox on the gateway's admin listener (toolgate.inbox), end to
-- end: `toolgate gateway` (Debian's nginx) in front of an SDK-built MCP
-- server (nginx/test/upstream.mjs) whose writes the gateway policy defers,
-- the SDK client naming who asks in X-Principal (--principal-header);
-- curl for the exact headers, cookies and refusals; Debian's chromium,
-- driven by puppeteer-core (nginx/test/inbox.mjs), for the page itself.
-- Runs once, under Lua 5.4 (the interpreter of the toolgate command).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local json, spawn, alive, stop, wait_for = fx.json, fx.spawn, fx.alive, fx.stop, fx.wait_for
local q = h.shell_quote

local env = {}
local pids = {}

-- curl against the admin listener -> status, headers (lower-case names; Set-Cookie kept whole), body
local function request(method, path, args)
  local code, out = h.run("curl -s -S -i --max-time 10 -X " .. method .. " " .. (args or "") .. " "
    .. q("http://" .. env.admin .. path))
  assert(code == 0, "curl failed: " .. out)
  local head, body = out:match("^(.-)\r\n\r\n(.*)$")
  local status = tonumber(head:match("^HTTP/%S+ (%d+)"))
  local headers = {}
  for k, v in head:gmatch("\n([^:\r\n]+): ([^\r\n]*)") do headers[k:lower()] = v end
  return status, headers, body
end

local function bearer(method, path)
  return json(fx.curl("-X " .. method .. " -H " .. q("Authorization: Bearer " .. env.token) .. " "
    .. q("http://" .. env.admin .. path)))
end

-- a write the gateway defers, asked by bob -> its approval id
local function deferred(text)
  local code, out, err = h.run("cd " .. q(fx.testdir) .. " && HEADERS='{\"X-Principal\":\"bob\"}' node client.mjs "
    .. q("http://" .. env.listen .. "/mcp/counter") .. " "
    .. q('[{"op":"call","name":"write_note","arguments":{"text":"' .. text .. '"}}]'))
  assert(code == 0, err .. out)
  local r = fx.lines(out)[2].ok
  assert(r.isError == true)
  return r._meta["toolgate/approval_id"]
end

-- logs in with curl -> the session id, its CSRF token (from the page)
local function login()
  local status, headers = request("POST", "/approvals/login", "--data-urlencode " .. q("token=" .. env.token))
  assert.equals(303, status)
  local sid = assert(headers["set-cookie"]:match("^toolgate_inbox=(%x+);"))
  local _, _, page = request("GET", "/approvals", "-b " .. q("toolgate_inbox=" .. sid))
  return sid, assert(page:match('<meta name="csrf%-token" content="(%x+)">'))
end

describe("the web inbox (GET /approvals on the admin listener)", function()
  local ready, why

  setup(function()
    why = fx.not_ready("puppeteer-core")
    if why then return end
    local dir = fx.tempdir("toolgate-inbox-spec")
    env.dir = dir
    local ports = fx.ports(3)
    env.listen, env.admin = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2]
    pids.counter = spawn("PORT=" .. ports[3] .. " JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
    env.counter = fx.upstream_port(dir .. "/counter.log")
    fx.record("counter", env.counter, dir .. "/counter.json")
    env.token = "inbox-token-" .. tostring(math.random(1e9)) .. "-0123456789"
    h.write_file(dir .. "/token", env.token .. "\n")
    h.write_file(dir .. "/counter.ctx", '{"scopes":["counter:read","counter:write"]}')
    pids.gateway = spawn(table.concat({ "exec", h.lua, q(h.root .. "/bin/toolgate"), "gateway",
      "--listen", env.listen, "--admin", env.admin, "--admin-token-file", q(dir .. "/token"), "--workers 2",
      "--prefix", q(dir .. "/prefix"), "--policy", q(h.root .. "/policies/gateway.lua"), "--principal-header X-Principal",
      "--upstream", "counter=http://127.0.0.1:" .. env.counter .. "/mcp",
      "--registry", q("counter=" .. dir .. "/counter.json"), "--context", q("counter=" .. dir .. "/counter.ctx") }, " "),
      dir .. "/gateway.log")
    wait_for("the gateway's /healthz", function()
      local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. env.listen .. "/healthz"))
      return c == 0 and health:find('"ok"')
    end, dir .. "/gateway.log")
    ready = true
  end)

  teardown(function()
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

  it("serves one self-contained page under a strict Content-Security-Policy", function()
    if not need(pending) then return end
    local status, headers, body = request("GET", "/approvals")
    assert.equals(200, status)
    assert.equals("text/html; charset=utf-8", headers["content-type"])
    local nonce = assert(headers["content-security-policy"]:match("script%-src 'nonce%-(%x+)'"))
    assert.equals("default-src 'none'; script-src 'nonce-" .. nonce .. "'; style-src 'nonce-" .. nonce .. "'; "
      .. "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      headers["content-security-policy"])
    assert.equals("no-store", headers["cache-control"])
    assert.falsy(body:find("https?://"), "no external asset")
    assert.truthy(body:find('<style nonce="' .. nonce .. '">', 1, true))
    -- a fresh nonce per response
    local _, again = request("GET", "/approvals")
    assert.are_not.equal(headers["content-security-policy"], again["content-security-policy"])
  end)

  it("refuses a wrong token and a cross-site login; the right one gives a random session id, never the token", function()
    if not need(pending) then return end
    local status, headers, body = request("POST", "/approvals/login", "--data-urlencode " .. q("token=" .. env.token .. "x"))
    assert.equals(401, status)
    assert.is_nil(headers["set-cookie"])
    assert.truthy(body:find("That is not the admin token.", 1, true))
    status = request("POST", "/approvals/login", "-H 'Origin: http://evil.example' --data-urlencode "
      .. q("token=" .. env.token))
    assert.equals(403, status)
    status = request("POST", "/approvals/login", "-H 'Sec-Fetch-Site: cross-site' --data-urlencode "
      .. q("token=" .. env.token))
    assert.equals(403, status)
    status, headers = request("POST", "/approvals/login", "-H " .. q("Origin: http://" .. env.admin)
      .. " --data-urlencode " .. q("token=" .. env.token))
    assert.equals(303, status)
    assert.equals("/approvals", headers.location)
    assert.matches("^toolgate_inbox=%x+; Path=/; Max%-Age=28800; HttpOnly; SameSite=Strict$", headers["set-cookie"])
    assert.falsy(headers["set-cookie"]:find(env.token, 1, true))
  end)

  it("lets the session read the API, decide only with its CSRF token from its own origin; the bearer API stays",
    function()
    if not need(pending) then return end
    local sid, csrf = login()
    local cookie = "-b " .. q("toolgate_inbox=" .. sid)
    local status, _, body = request("GET", "/v1/approvals", cookie)
    assert.equals(200, status)
    assert.is_table(json(body).approvals)
    assert.equals(401, (request("GET", "/v1/approvals", "-b 'toolgate_inbox=" .. string.rep("0", 32) .. "'")))
    local id = deferred("inbox csrf")
    local grant = "/v1/approvals/" .. id .. "/grant"
    -- no CSRF token, a wrong one, the right one from another origin or site: 403, nothing decided
    assert.equals(403, (request("POST", grant, cookie)))
    assert.equals(403, (request("POST", grant, cookie .. " -H 'X-CSRF-Token: " .. string.rep("0", 32) .. "'")))
    local with = cookie .. " -H " .. q("X-CSRF-Token: " .. csrf)
    assert.equals(403, (request("POST", grant, with .. " -H 'Origin: http://evil.example'")))
    assert.equals(403, (request("POST", grant, with .. " -H 'Sec-Fetch-Site: same-site'")))
    assert.equals("pending", bearer("GET", "/v1/approvals/" .. id).status)
    -- from the page's own origin: granted, and recorded as the inbox's decision
    status, _, body = request("POST", grant, with .. " -H " .. q("Origin: http://" .. env.admin)
      .. " -H 'Sec-Fetch-Site: same-origin' -H 'Content-Type: application/json' --data '{\"uses\":1}'")
    assert.equals(200, status, body)
    assert.equals("granted", json(body).status)
    assert.equals("inbox (admin token)", json(body).decided_by)
    assert.equals("bob", json(body).principal)
    -- the bearer API, unchanged beside it
    local other = deferred("inbox bearer")
    assert.equals("denied", bearer("POST", "/v1/approvals/" .. other .. "/deny").status)
    -- logout needs the CSRF token too, then the session is gone
    assert.equals(403, (request("POST", "/approvals/logout", cookie .. " --data csrf=00")))
    assert.equals(303, (request("POST", "/approvals/logout", cookie .. " --data csrf=" .. csrf)))
    assert.equals(401, (request("GET", "/v1/approvals", cookie)))
  end)

  it("in chromium: logs in, shows a deferred call's exact arguments, grants it, denies another, refuses a forgery",
    function()
    if not need(pending) then return end
    if h.run("test -x /usr/bin/chromium") ~= 0 then return pending("needs Debian's chromium (make test installs it)") end
    -- TOOLGATE_INBOX_SHOTS=DIR keeps the four screenshots there, to look at;
    -- TOOLGATE_INBOX_DOC=1 writes the crop the docs show (docs/inbox.png):
    -- a test run never changes a tracked file unless asked to
    local shots = os.getenv("TOOLGATE_INBOX_SHOTS") or env.dir
    local crop = os.getenv("TOOLGATE_INBOX_DOC") == "1" and (h.root .. "/docs/inbox.png") or (env.dir .. "/inbox.png")
    h.run("mkdir -p " .. q(shots))
    local code, out, err = fx.node("inbox.mjs " .. q("http://" .. env.admin) .. " "
      .. q("http://" .. env.listen .. "/mcp/counter") .. " " .. q(env.dir .. "/token") .. " " .. q(shots) .. " "
      .. q(crop) .. " alice")
    local steps = {}
    for _, line in ipairs(fx.lines(out)) do
      assert.is_nil(line.fail, line.fail)
      steps[line.step] = line
    end
    assert.equals(0, code, err .. out)

    assert.equals(401, steps["wrong token"].status)
    assert.truthy(steps["wrong token"].alert:find("That is not the admin token.", 1, true))
    assert.same({ name = "toolgate_inbox", httpOnly = true, sameSite = "Strict", secure = false, path = "/" },
      steps.login.cookie)

    local p = steps.pending
    assert.equals("counter / write_note", p.shown.title)
    -- the canonical arguments, re-indented and nothing else: every byte of the value as the approval binds it
    assert.equals('ship it <b>now</b> "quoted" ✓\nline 2', json(p.arguments).text)
    local value_text = assert(p.arguments:match('^{"text":(".*")}$'))
    assert.equals('{\n  "text": ' .. value_text .. '\n}', p.shown.args)
    assert.equals(p.args_digest, p.shown.facts.Digest)
    assert.equals(p.id, p.shown.facts.Approval)
    assert.matches("^%d+ s ago$", p.shown.facts.Asked)
    assert.truthy(p.shown.facts.Reason)
    assert.equals("alice", p.shown.facts["Who asked"])
    assert.is_string(p.stage)
    assert.equals(p.stage, p.shown.facts.Stage)

    for name, shot in pairs(steps.screenshots.shots) do
      assert.same({}, shot.problems, name .. ": " .. table.concat(shot.problems, "; "))
      assert.equals(0, h.run("test -s " .. q(shot.file)))
    end
    assert.equals(0, h.run("test -s " .. q(crop)))

    local g = steps.granted
    assert.equals("granted", g.status)
    assert.equals("inbox (admin token)", g.decided_by)
    assert.equals("looks right", g.note)
    assert.equals(2, g.uses)
    assert.is_false(g.retry_is_error, g.retry_text)

    local d = steps.denied
    assert.equals("denied", d.status)
    assert.equals("inbox (admin token)", d.decided_by)
    assert.equals("not this one", d.note)
    assert.is_true(d.retry_is_error)
    assert.truthy(d.retry_text:find("APPROVAL_DENIED", 1, true), d.retry_text)

    assert.equals(403, steps.forged.status)
    assert.truthy(steps.forged.body:find("cross-site", 1, true), steps.forged.body)
    assert.equals("pending", steps.forged.status_after)

    -- 70011 bytes of arguments, 64 KiB of them kept: the card says so, and its layout holds
    assert.equals("Cut: the first 65536 characters of 70011 bytes are shown; the digest covers them all.",
      steps.cut.cut)
    assert.same({}, steps.cut.problems)

    assert.is_true(steps.logout.login_form)
    assert.equals(401, steps.logout.old_session_status)
    assert.same({}, steps.browser.csp_violations)
    assert.same({}, steps.browser.foreign_requests)
  end)
end)
