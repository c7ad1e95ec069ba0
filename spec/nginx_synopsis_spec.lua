-- nginx/README.md's synopsis for embedding toolgate in one's own nginx,
-- run as written in a real nginx: the conf block is taken from the page,
-- with only its registry path, its listen address and the lines a source
-- tree needs (the module paths, TOOLGATE_LIB, the prefix) changed.  The
-- page says the master's init checks the policy and registries, so a
-- broken one stops nginx at start: that is tried too.  nginx is started
-- here and stopped by its PID.  Runs once, under Lua 5.4 (nginx itself
-- runs LuaJIT).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local gateway = require "toolgate.cli.gateway"
local q = h.shell_quote

local REGISTRY_IN_PAGE = '"files=/etc/toolgate/registries/files.json"'

-- the page's conf, made to run from this tree on listen, with registry
local function conf(dir, listen, registry)
  local page = assert(h.read_file(h.root .. "/nginx/README.md"))
  local block = assert(page:match("### Embedding toolgate in your own nginx[^\n]*\n.-\n```nginx\n(.-)```"),
    "nginx/README.md has no synopsis conf")
  local function swap(text, from, to)
    local s, e = text:find(from, 1, true)
    assert(s, "the synopsis no longer holds " .. from)
    return text:sub(1, s - 1) .. to .. text:sub(e + 1)
  end
  block = swap(block, REGISTRY_IN_PAGE, '"files=' .. registry .. '"')
  block = swap(block, "listen 127.0.0.1:8080;", "listen " .. listen .. ";")
  local lua_dir, lib, lua_cdir = gateway.lua_paths()
  block = swap(block, "http {\n", "http {\n    access_log off;\n    client_body_temp_path " .. dir .. "/body;\n" ..
    "    proxy_temp_path " .. dir .. "/proxy;\n    lua_package_path \"" .. lua_dir .. "/?.lua;;\";\n" ..
    (lua_cdir and ("    lua_package_cpath \"" .. lua_cdir .. "/?.so;;\";\n") or ""))
  return table.concat({
    "daemon off;", "master_process on;", "worker_processes 2;", "pid " .. dir .. "/nginx.pid;",
    "error_log stderr notice;",
    "load_module " .. gateway.MODULE_DIR .. "/ndk_http_module.so;",
    "load_module " .. gateway.MODULE_DIR .. "/ngx_http_lua_module.so;",
    lib and ("env TOOLGATE_LIB=" .. lib .. ";") or "",
    "events { worker_connections 64; }", block }, "\n")
end

describe("nginx/README.md's synopsis conf", function()
  local why, dir, pid, listen
  local registry = h.root .. "/examples/registries/mcp-filesystem.json"

  setup(function()
    if h.run("test -x " .. q(gateway.NGINX)) ~= 0 or
      h.run("test -f " .. q(gateway.MODULE_DIR .. "/ngx_http_lua_module.so")) ~= 0 or not h.have("node") then
      why = "needs Debian's nginx and libnginx-mod-http-lua, and node for the fixture's ports (make test installs them)"
      return
    end
    dir = fx.tempdir("toolgate-synopsis-spec")
    listen = "127.0.0.1:" .. fx.ports(1)[1]
  end)

  teardown(function()
    fx.stop(pid)
    if dir then os.execute("rm -rf " .. q(dir)) end
  end)

  it("decides calls as the page says: /v1/check, and a refused tools/call on /mcp/files", function()
    if why then return pending(why) end
    h.write_file(dir .. "/nginx.conf", conf(dir, listen, registry))
    pid = fx.spawn("exec " .. gateway.NGINX .. " -p " .. q(dir) .. " -c " .. q(dir .. "/nginx.conf") .. " -e stderr",
      dir .. "/nginx.log")
    fx.wait_for("nginx", function()
      return h.run("curl -s --max-time 1 -o /dev/null " .. q("http://" .. listen .. "/v1/registry")) == 0
    end, dir .. "/nginx.log")
    local d = fx.json(fx.curl("-X POST -H 'Content-Type: application/json' --data " ..
      q('{"server":"files","name":"read_text_file","arguments":{"path":"/a"}}') .. " " .. q("http://" .. listen .. "/v1/check")))
    assert.equal("accept", d.verdict)
    local r = fx.json(fx.curl("-X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' " ..
      "--data " .. q(fx.call_body(1, "delete_file", "{}")) .. " " .. q("http://" .. listen .. "/mcp/files")))
    assert.equal(-32602, r.error.code)
    assert.equal("H1", r.error.data.decision.code)
    fx.stop(pid)
    pid = nil
  end)

  it("stops nginx at start when a registry cannot be read", function()
    if why then return pending(why) end
    h.write_file(dir .. "/nginx.conf", conf(dir, listen, dir .. "/missing.json"))
    local code, out, err = h.run("timeout 10 " .. gateway.NGINX .. " -p " .. q(dir) .. " -c " .. q(dir .. "/nginx.conf")
      .. " -e stderr")
    assert.equal(1, code, out .. err)
    assert.matches("init_by_lua error: [^\n]*toolgate.nginx: UNREADABLE: cannot read registry", err)
  end)
end)
