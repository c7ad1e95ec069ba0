-- Webhooks end to end: a deferred call through the nginx gateway (a
-- gateway of its own, in front of nginx/test/upstream.mjs) and through the
-- stdio proxy (the filesystem server of spec/stdio) is POSTed to receivers
-- the test starts (nginx/test/hook-receiver.mjs, one answering 500 first)
-- and to a port where nothing listens: delivered in both shapes, retried
-- after the 500, dropped and counted after the tries.  Everything listens on
-- 127.0.0.1 on ports the kernel gave and is stopped by its PID.  Lua 5.4 only.
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local value = require "toolgate.value"
local webhooks = require "toolgate.webhooks"
local json, spawn, stop, alive, wait_for = fx.json, fx.spawn, fx.stop, fx.alive, fx.wait_for
local q = h.shell_quote
local root = h.root

-- a receiver: its PID and port
local function receiver(dir, name, fail_first)
  local log = dir .. "/" .. name .. ".log"
  local pid = spawn("PORT=0 FAIL_FIRST=" .. (fail_first or 0) .. " exec node hook-receiver.mjs", log)
  return pid, fx.upstream_port(log)
end

local function received(port) return json(fx.curl(q("http://127.0.0.1:" .. port .. "/received"))) end

local function received_n(port, n, log)
  return wait_for(n .. " notification(s) at port " .. port, function()
    local r = received(port)
    return #r >= n and r
  end, log)
end

-- the approval a generic notification carries, checked field by field against the store's record
local function check_json(got, record, inbox)
  assert.equals("/hook", got.path)
  assert.equals("application/json", got.type)
  local b = json(got.body)
  assert.equals("approval.requested", b.event)
  assert.equals(inbox, b.inbox)
  for _, k in ipairs({ "id", "status", "server", "tool", "code", "message", "arguments", "arguments_bytes",
    "arguments_truncated", "args_digest", "created", "expires", "uses", "principal" }) do
    assert.equals(record[k], b.approval[k], k)
  end
  return b
end

local function check_slack(body, record, inbox)
  local b = json(body)
  local where = record.server .. "/" .. record.tool
  assert.equals("toolgate: approval requested for " .. where .. " (" .. record.code .. ": " .. record.message .. ")"
    .. (inbox and (" " .. inbox) or ""), b.text)
  assert.same({ type = "header", text = { type = "plain_text", text = "Approval requested: " .. where } }, b.blocks[1])
  assert.equals("*Reason:* " .. record.code .. ": " .. record.message .. "\n*Approval:* `" .. record.id .. "`"
    .. (record.principal and ("\n*Asked by:* " .. record.principal) or ""), b.blocks[2].text.text)
  assert.equals("*Arguments:*\n```" .. record.arguments .. "```", b.blocks[3].text.text)
  if inbox then
    assert.equals("<" .. inbox .. "|Open the approvals inbox>", b.blocks[4].text.text)
  else
    assert.is_nil(b.blocks[4])
  end
end

describe("webhooks end to end", function()
  local ready, why, dir
  local pids = {}

  setup(function()
    if not h.have("node") or h.run("test -x /usr/sbin/nginx") ~= 0 then
      why = "needs node and Debian's nginx (make test installs them)"
      return
    end
    if h.run("test -f " .. q(fx.testdir .. "/node_modules/@modelcontextprotocol/sdk/package.json")) ~= 0
      or h.run("test -d " .. q(root .. "/spec/stdio/node_modules/@modelcontextprotocol/server-filesystem")) ~= 0 then
      why = os.getenv("TOOLGATE_NPM_UNAVAILABLE")
      if why then return end
      error("nginx/test/node_modules or spec/stdio/node_modules is missing (make test installs them)")
    end
    dir = fx.tempdir("toolgate-webhooks-spec")
    ready = true
  end)

  teardown(function()
    for _, pid in pairs(pids) do stop(pid) end
    if dir then os.execute("rm -rf " .. q(dir)) end
  end)

  local function need(pending)
    if ready then return true end
    pending(why or "the set-up failed")
    return false
  end

  it("refuses a --webhook it cannot send to, before anything starts (exit 2)", function()
    local toolgate = h.lua .. " " .. q(root .. "/bin/toolgate")
    local code, _, err = h.run(toolgate .. " gateway --conf-only --listen 127.0.0.1:1 --upstream a=http://127.0.0.1:2/mcp"
      .. " --registry a=x --webhook https://hooks.slack.com/services/T")
    assert.equals(2, code)
    assert.truthy(err:find("--webhook: webhook https://hooks.slack.com/services/T: https:// is not supported", 1, true), err)
    code, _, err = h.run(toolgate .. " mcp-proxy --webhook slack=http://hooks.example/x -- true")
    assert.equals(2, code)
    assert.truthy(err:find("give the host as an IP address or localhost", 1, true), err)
  end)

  it("nginx: a deferred call notifies once: JSON and Slack delivered, retried after a 500, a hook down dropped and counted",
    function()
      if not need(pending) then return end
      local gateway = require "toolgate.cli.gateway"
      local ports = fx.ports(3)
      local listen, admin_at, down = "127.0.0.1:" .. ports[1], "127.0.0.1:" .. ports[2], ports[3]
      local json_port, slack_port
      pids.json, json_port = receiver(dir, "json")
      pids.slack, slack_port = receiver(dir, "slack", 1)
      pids.counter = spawn("PORT=0 JSON_RESPONSE=1 exec node upstream.mjs", dir .. "/counter.log")
      local counter = fx.upstream_port(dir .. "/counter.log")
      fx.record("counter", counter, dir .. "/counter.json")
      h.write_file(dir .. "/counter.ctx", '{"scopes":["counter:read","counter:write"]}')
      h.write_file(dir .. "/token", "webhooks-spec-token-0123456789\n")
      local code, out, err = h.run(table.concat({ h.lua, q(root .. "/bin/toolgate"), "gateway", "--conf-only",
        "--listen", listen, "--admin", admin_at, "--admin-token-file", q(dir .. "/token"), "--workers 2",
        "--prefix", q(dir .. "/prefix"), "--policy gateway",
        "--upstream", "counter=http://127.0.0.1:" .. counter .. "/mcp", "--registry", q("counter=" .. dir .. "/counter.json"),
        "--context", q("counter=" .. dir .. "/counter.ctx"),
        "--webhook", "http://127.0.0.1:" .. json_port .. "/hook",
        "--webhook", "slack=http://127.0.0.1:" .. slack_port .. "/slack",
        "--webhook", "http://127.0.0.1:" .. down .. "/down" }, " "))
      assert(code == 0, err)
      local conf = out:match("[^\n]+")
      -- the tries of the hook that is down: 0.2 + 0.4 + 0.8 + 1.6 s apart, not 1 + 2 + 4 + 8
      local text, n = h.read_file(conf):gsub("webhooks = {", "webhook_backoff = 0.2,\n            webhooks = {")
      assert.equals(1, n)
      h.write_file(conf, text)
      local log = dir .. "/nginx.log"
      pids.nginx = spawn("exec " .. gateway.NGINX .. " -p " .. q(dir .. "/prefix") .. " -c " .. q(conf) .. " -e stderr", log)
      wait_for("the gateway's /healthz", function()
        local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. listen .. "/healthz"))
        return c == 0 and health:find('"ok"')
      end, log)
      local url = "http://" .. listen .. "/mcp/counter"
      local body = fx.call_body(5, "write_note", '{"text":"notify <me> & ```them```"}')
      local t0 = fx.now()
      local r = fx.send(url, body)[1].json
      local id = r.result._meta["toolgate/approval_id"]
      assert.equals("defer", r.result._meta["toolgate/decision"].verdict)
      -- the same call again: the same request, no second notification
      assert.equals(id, fx.send(url, body)[1].json.result._meta["toolgate/approval_id"])
      assert.is_true(fx.now() - t0 < 2, "the defers were answered at once")
      local record = json(fx.curl("-H " .. q("Authorization: Bearer webhooks-spec-token-0123456789") .. " "
        .. q("http://" .. admin_at .. "/v1/approvals/" .. id)))
      assert.equals('{"text":"notify <me> & ```them```"}', record.arguments)
      local inbox = "http://" .. admin_at .. "/approvals"

      check_json(received_n(json_port, 1, log)[1], record, inbox)
      local slack = received_n(slack_port, 2, log)
      assert.same({ 500, 200 }, { slack[1].status, slack[2].status })
      assert.equals(slack[1].body, slack[2].body)
      assert.equals("/slack", slack[2].path)
      -- Slack's mrkdwn: < > & escaped, the ``` inside the arguments broken up
      record.arguments = '{"text":"notify &lt;me&gt; &amp; ``\226\128\139`them``\226\128\139`"}'
      check_slack(slack[2].body, record, inbox)

      local m = wait_for("the dropped notification in /metrics", function()
        local t = fx.curl(q("http://" .. listen .. "/metrics"))
        return (fx.metric(t, 'toolgate_webhook_deliveries_total{result="dropped"}') or 0) >= 1 and t
      end, log)
      assert.equals(1, fx.metric(m, 'toolgate_webhook_deliveries_total{result="dropped"}'))
      assert.equals(2, fx.metric(m, 'toolgate_webhook_deliveries_total{result="delivered"}'))
      -- the slack hook's one retry, and the dead hook's ATTEMPTS - 1
      assert.equals(1 + webhooks.ATTEMPTS - 1, fx.metric(m, 'toolgate_webhook_deliveries_total{result="retried"}'))
      -- one notification per hook for the approval, whatever the calls
      assert.equals(1, #received(json_port))
      assert.equals(2, #received(slack_port))
      local logged = h.read_file(log)
      local dead = "webhook http://127.0.0.1:" .. down .. "/down"
      assert.truthy(logged:find(dead .. " is down (cannot connect: connection refused): approval " .. id, 1, true), logged)
      assert.truthy(logged:find(dead .. ": the notification of approval " .. id .. " is dropped", 1, true), logged)
      assert.truthy(logged:find("webhook http://127.0.0.1:" .. slack_port .. "/slack is down (answered 500)", 1, true))
      assert.truthy(logged:find("webhook http://127.0.0.1:" .. slack_port .. "/slack delivers again", 1, true))
      stop(pids.nginx)
      local pid = tonumber(h.read_file(dir .. "/prefix/nginx.pid") or "")
      if pid then wait_for("nginx to stop", function() return not alive(pid) end) end
    end)

  it("mcp-proxy: a deferred call notifies JSON and Slack hooks, the Slack one after a 500, said on stderr", function()
    if not need(pending) then return end
    local json_port, slack_port
    pids.json2, json_port = receiver(dir, "json2")
    pids.slack2, slack_port = receiver(dir, "slack2", 1)
    local files = dir .. "/files"
    assert(os.execute("mkdir -p " .. q(files)))
    h.write_file(dir .. "/rw.ctx", '{"scopes":["filesystem:read","filesystem:write"]}')
    local stdio_dir = root .. "/spec/stdio"
    local server = "node " .. q(stdio_dir .. "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
      .. " " .. q(files)
    local target = files .. "/made-by-approval"
    local steps = assert(value.encode({ { op = "call", name = "create_directory", arguments = { path = target } },
      { op = "sleep", ms = 2500 } }))
    local code, out, err = h.run("cd " .. q(stdio_dir) .. " && timeout 60 node client.mjs " .. q(steps) .. " env "
      .. q("XDG_STATE_HOME=" .. dir .. "/xdg") .. " " .. h.lua .. " " .. q(root .. "/bin/toolgate") .. " mcp-proxy"
      .. " --policy gateway --state " .. q(dir .. "/state") .. " --context " .. q(dir .. "/rw.ctx")
      .. " --registry " .. q("filesystem=" .. root .. "/examples/registries/mcp-filesystem.json")
      .. " --webhook " .. q("http://127.0.0.1:" .. json_port .. "/hook")
      .. " --webhook " .. q("slack=http://127.0.0.1:" .. slack_port .. "/slack") .. " -- " .. server)
    assert(code == 0, err .. out)
    local lines = fx.lines(out)
    local meta = lines[2].ok._meta
    assert.equals("defer", meta["toolgate/decision"].verdict)
    local id = meta["toolgate/approval_id"]
    local store = assert(require("toolgate.state.sqlite").open(dir .. "/state/state.sqlite"))
    local record = assert(store:approval(id))
    store:close()
    check_json(received_n(json_port, 1)[1], record, nil)
    local slack = received_n(slack_port, 2)
    assert.same({ 500, 200 }, { slack[1].status, slack[2].status })
    check_slack(slack[2].body, record, nil)
    local hook = "webhook http://127.0.0.1:" .. slack_port .. "/slack"
    assert.truthy(err:find("toolgate mcp-proxy: " .. hook .. " is down (answered 500): approval " .. id
      .. " is tried again later\n", 1, true), err)
    assert.truthy(err:find("toolgate mcp-proxy: " .. hook .. " delivers again\n", 1, true), err)
  end)
end)
