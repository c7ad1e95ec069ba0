-- toolgate gateway's command line and the conf it writes (the nginx run
-- itself is spec/nginx_spec.lua's).
local h = require "helpers"
local gateway = require "toolgate.cli.gateway"

local root = h.root
local REG = "everything=" .. root .. "/examples/registries/mcp-everything.json"
local UP = "everything=http://127.0.0.1:3001/mcp"

local function run(args) return h.toolgate("gateway " .. args) end

describe("toolgate gateway", function()
  it("writes nginx/mcp-gateway.conf exactly for the options it documents", function()
    local opts = dofile(root .. "/spec/data/nginx/example-conf.lua")
    assert.equals(h.read_file(root .. "/nginx/mcp-gateway.conf"), gateway.conf(opts))
  end)

  it("writes nginx/fleet/node-a.conf and node-b.conf exactly for the options they document", function()
    local fleet = dofile(root .. "/spec/data/nginx/fleet-conf.lua")
    for _, n in ipairs({ "a", "b" }) do
      assert.equals(h.read_file(root .. "/nginx/fleet/node-" .. n .. ".conf"), gateway.conf(fleet[n]))
    end
  end)

  it("writes the fleet's Redis options into the conf, and refuses them without --redis", function()
    local prefix = h.tmpname("-prefix")
    local pw = h.tmpname(".password")
    h.write_file(pw, "secret\n")
    local code, out, err = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry " .. h.shell_quote(REG)
      .. " --redis 10.0.0.5:6380 --redis-prefix team: --redis-password-file " .. pw .. " --redis-sync 0.5 --prefix " .. prefix)
    assert.equals(0, code, err)
    local conf = h.read_file(h.lines_of(out)[1])
    assert.matches('redis = { host = "10.0.0.5", port = 6380, prefix = "team:", password_file = "' .. pw:gsub("%p", "%%%0")
      .. '", sync_interval = 0.5 },', conf)
    local function refused(args, why)
      local c, _, e = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry " .. h.shell_quote(REG)
        .. " " .. args .. " --prefix " .. prefix)
      assert.equals(2, c)
      assert.matches(why, e, 1, true)
    end
    refused("--redis-prefix team:", "--redis-prefix needs --redis HOST:PORT")
    refused("--redis 127.0.0.1:6379 --redis-sync 0", "--redis-sync takes seconds from 0.01 to 60")
    refused("--redis 127.0.0.1:6379 --redis-tls-name localhost", "--redis-tls-name needs --redis-tls CA_FILE")
    refused("--redis 127.0.0.1:6379 --redis-tls /nonexistent/ca.pem", "cannot read the CA certificates")
    os.execute("rm -rf " .. h.shell_quote(prefix) .. " " .. h.shell_quote(pw))
  end)

  it("writes a conf with a route per server, the admin API and the decision log (--conf-only)", function()
    local prefix = h.tmpname("-prefix")
    local ctx = h.tmpname(".json")
    h.write_file(ctx, '{"scopes":["everything:read"],"max_risk":"low"}')
    local tok = h.tmpname(".token")
    h.write_file(tok, "0123456789abcdef0123\n")
    local code, out, err = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry " .. h.shell_quote(REG)
      .. " --context everything=" .. ctx .. " --admin 127.0.0.1:8081 --admin-token-file " .. tok .. " --workers 3"
      .. " --prefix " .. prefix)
    assert.equals(0, code, err)
    assert.equals(prefix .. "/nginx.conf\n", out)
    local conf = h.read_file(prefix .. "/nginx.conf")
    assert.matches("worker_processes 3;", conf, 1, true)
    assert.matches("location = /mcp/everything {", conf, 1, true)
    assert.matches("proxy_pass http://mcp_everything/mcp;", conf, 1, true)
    assert.matches('context = { ["max_risk"] = "low", ["scopes"] = { "everything:read" } }', conf, 1, true)
    assert.matches("listen 127.0.0.1:8081;", conf, 1, true)
    assert.matches('decision_log = "' .. prefix .. '/decisions.jsonl"', conf, 1, true)
    assert.matches('policy = "' .. root .. '/policies/mcp.lua"', conf, 1, true)
    -- no --api-context: the decision API has no context of its own
    assert.is_nil(conf:find("api_context", 1, true))
  end)

  it("writes the decision API's own context (--api-context), and refuses one that is not a JSON object", function()
    local prefix = h.tmpname("-prefix")
    local ctx = h.tmpname(".json")
    h.write_file(ctx, '{"scopes":["everything:read"]}')
    local code, _, err = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry "
      .. h.shell_quote(REG) .. " --api-context " .. ctx .. " --prefix " .. prefix)
    assert.equals(0, code, err)
    assert.matches('api_context = { ["scopes"] = { "everything:read" } },', h.read_file(prefix .. "/nginx.conf"), 1, true)
    h.write_file(ctx, '["everything:read"]')
    code, _, err = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry "
      .. h.shell_quote(REG) .. " --api-context " .. ctx .. " --prefix " .. prefix)
    assert.equals(2, code)
    assert.matches("the context of the decision API must be a JSON object", err, 1, true)
    os.execute("rm -rf " .. h.shell_quote(prefix) .. " " .. h.shell_quote(ctx))
  end)

  it("writes the header naming who asks (--principal-header), and refuses one that is no header name", function()
    local prefix = h.tmpname("-prefix")
    local code, _, err = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry "
      .. h.shell_quote(REG) .. " --principal-header X-Principal --prefix " .. prefix)
    assert.equals(0, code, err)
    assert.matches('principal_header = "X-Principal",', h.read_file(prefix .. "/nginx.conf"), 1, true)
    for _, bad in ipairs({ "'X Principal'", "X-Principal:", string.rep("x", 65) }) do
      code, _, err = run("--conf-only --listen 127.0.0.1:8080 --upstream " .. UP .. " --registry "
        .. h.shell_quote(REG) .. " --principal-header " .. bad .. " --prefix " .. prefix)
      assert.equals(2, code, bad)
      assert.matches("--principal-header takes a header name", err, 1, true)
    end
    os.execute("rm -rf " .. h.shell_quote(prefix))
  end)

  it("refuses bad usage with a message, exit 2", function()
    local cases = {
      { "--upstream " .. UP .. " --registry " .. REG, "--listen HOST:PORT is required" },
      { "--listen 8080 --upstream " .. UP .. " --registry " .. REG, "--listen takes HOST:PORT" },
      { "--listen 127.0.0.1:65536 --upstream " .. UP .. " --registry " .. REG, "a port from 1 to 65535" },
      { "--listen 127.0.0.1:80", "at least one --upstream" },
      { "--listen 127.0.0.1:80 --upstream " .. UP, "has no --registry everything=FILE" },
      { "--listen 127.0.0.1:80 --upstream everything=https://x/mcp --registry " .. REG, "an http://HOST:PORT/PATH URL" },
      { "--listen 127.0.0.1:80 --upstream " .. UP .. " --registry " .. REG .. " --registry other=x.json",
        "--registry other has no --upstream" },
      { "--listen 127.0.0.1:80 --upstream " .. UP .. " --upstream " .. UP .. " --registry " .. REG,
        "names server everything twice" },
      { "--listen 127.0.0.1:80 --upstream " .. UP .. " --registry " .. REG .. " --admin 127.0.0.1:81",
        "--admin needs --admin-token-file" },
      { "--listen 127.0.0.1:80 --upstream " .. UP .. " --registry " .. REG .. " --workers 0", "from 1 to 64" },
      { "--listen 127.0.0.1:80 --upstream " .. UP .. " --registry " .. REG .. " --workers 65", "from 1 to 64" },
      { "--listen 127.0.0.1:80 --upstream " .. UP .. " --registry everything=/nonexistent.json", "cannot read" },
    }
    for _, c in ipairs(cases) do
      local code, _, err = run(c[1] .. " --conf-only --prefix " .. h.tmpname("-prefix"))
      assert.equals(2, code, c[1])
      assert.truthy(err:find(c[2], 1, true), c[1] .. ": " .. err)
    end
    -- the limits themselves are accepted
    for _, n in ipairs({ 1, gateway.MAX_WORKERS }) do
      assert.equals(0, (run("--listen 127.0.0.1:80 --upstream " .. UP .. " --registry " .. REG .. " --workers " .. n ..
        " --conf-only --prefix " .. h.tmpname("-prefix"))))
    end
  end)

  it("says plainly when nginx is missing, exit 1", function()
    local code, _, err = h.run("TOOLGATE_NGINX=/nonexistent/nginx " .. h.lua .. " " .. root .. "/bin/toolgate gateway "
      .. "--listen 127.0.0.1:80 --upstream " .. UP .. " --registry " .. REG .. " --prefix " .. h.tmpname("-prefix"))
    assert.equals(1, code)
    assert.matches("nginx is not installed %(/nonexistent/nginx%): apt%-get install nginx libnginx%-mod%-http%-lua", err)
  end)
end)
