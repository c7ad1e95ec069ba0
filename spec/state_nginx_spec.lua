-- The toolgate.state contract (spec/state_contract.lua) inside a real
-- nginx, on the two stores that run only there: the shared-dict store and
-- the Redis store, against Debian's redis-server on a loopback port.  The
-- cases run in a content_by_lua location (spec/state_contract_nginx.lua:
-- the Redis store's cosockets need a request) and come back as JSON, one
-- status per case; each is asserted here by name, so a failure names the
-- case and the store.  nginx and Redis are started here, on ports the
-- kernel gave, and stopped by their PID.  Runs once, under Lua 5.4 (nginx
-- itself runs LuaJIT).
local h = require "helpers"

if h.is_luajit then return end

local fx = require "gateway_fixture"
local contract = require "state_contract"
local gateway = require "toolgate.cli.gateway"
local nginx_side = require "state_contract_nginx"
local q = h.shell_quote

local env = {}
local pids = {}

local function conf()
  local lua_dir, lib, lua_cdir = gateway.lua_paths()
  local L = {
    "daemon off;", "master_process on;", "worker_processes 1;", "pid " .. env.dir .. "/nginx.pid;",
    "error_log stderr notice;",
    "load_module " .. gateway.MODULE_DIR .. "/ndk_http_module.so;",
    "load_module " .. gateway.MODULE_DIR .. "/ngx_http_lua_module.so;",
    lib and ("env TOOLGATE_LIB=" .. lib .. ";") or "",
    "events { worker_connections 64; }",
    "http {", "access_log off;", "client_body_temp_path " .. env.dir .. "/body;",
    "lua_package_path \"" .. lua_dir .. "/?.lua;" .. h.root .. "/spec/?.lua;;\";",
    lua_cdir and ("lua_package_cpath \"" .. lua_cdir .. "/?.so;;\";") or "",
  }
  for i = 1, nginx_side.DICTS do L[#L + 1] = "lua_shared_dict contract_" .. i .. " 1m;" end
  -- (small enough to fill in a few dozen writes)
  for i = 1, nginx_side.SMALL do L[#L + 1] = "lua_shared_dict contract_small_" .. i .. " 48k;" end
  L[#L + 1] = "server { listen " .. env.listen .. "; location = /contract { content_by_lua_block { " ..
    "require(\"state_contract_nginx\").run() } } }"
  L[#L + 1] = "}"
  return table.concat(L, "\n") .. "\n"
end

-- The cases' results on one store, from nginx.
local function results(query)
  local out = fx.curl("--max-time 40 " .. q("http://" .. env.listen .. "/contract?" .. query))
  local r = fx.json(out)
  local by_name = {}
  for _, c in ipairs(r.cases) do by_name[c.name] = c end
  return by_name
end

describe("toolgate.state contract inside nginx (clock: " .. nginx_side.CLOCK_KIND .. ")", function()
  local why = {}
  local got = {}

  local function start()
    if h.run("test -x " .. q(gateway.NGINX)) ~= 0 or
      h.run("test -f " .. q(gateway.MODULE_DIR .. "/ngx_http_lua_module.so")) ~= 0 or not h.have("node") then
      why.shared_dict = "needs Debian's nginx and libnginx-mod-http-lua, and node for the fixture's ports " ..
        "(make test installs them)"
      why.redis = why.shared_dict
      return
    end
    if not h.have("redis-server") or h.run("test -f /usr/share/lua/5.1/nginx/redis.lua") ~= 0 then
      why.redis = "needs redis-server and lua-nginx-redis (make test installs them)"
    end
    env.dir = fx.tempdir("toolgate-state-nginx-spec")
    local ports = fx.ports(3)
    env.listen, env.redis_port, env.down_port = "127.0.0.1:" .. ports[1], ports[2], ports[3]
    h.write_file(env.dir .. "/nginx.conf", conf())
    pids.nginx = fx.spawn("exec " .. gateway.NGINX .. " -p " .. q(env.dir) .. " -c " .. q(env.dir .. "/nginx.conf") ..
      " -e stderr", env.dir .. "/nginx.log")
    fx.wait_for("nginx", function()
      return h.run("curl -s --max-time 1 -o /dev/null " .. q("http://" .. env.listen .. "/")) == 0
    end, env.dir .. "/nginx.log")
    local ok, err = pcall(function() got.shared_dict = results("store=shared_dict") end)
    if not ok then got.shared_dict_error = err .. "\n" .. (h.read_file(env.dir .. "/nginx.log") or ""):sub(-2000) end
    if why.redis then return end
    assert(os.execute("mkdir -p " .. q(env.dir .. "/redis")))
    pids.redis = fx.spawn("exec redis-server --port " .. env.redis_port .. " --bind 127.0.0.1 --dir " ..
      q(env.dir .. "/redis") .. " --save '' --appendonly no --daemonize no", env.dir .. "/redis.log")
    fx.wait_for("redis-server", function()
      local c, out = h.run("redis-cli -h 127.0.0.1 -p " .. env.redis_port .. " ping")
      return c == 0 and out:find("PONG")
    end, env.dir .. "/redis.log")
    ok, err = pcall(function()
      got.redis = results("store=redis&port=" .. env.redis_port .. "&down=" .. env.down_port .. "&tag=contract-" ..
        tostring(math.random(1e9)))
    end)
    if not ok then got.redis_error = err .. "\n" .. (h.read_file(env.dir .. "/nginx.log") or ""):sub(-2000) end
  end

  setup(function()
    start()
    for _, store in ipairs({ "shared_dict", "redis" }) do
      if why[store] then io.stderr:write("# contract: " .. store .. ": skipped: " .. why[store] .. "\n") end
    end
  end)

  teardown(function()
    fx.stop(pids.nginx)
    fx.stop(pids.redis)
    if env.dir then os.execute("rm -rf " .. q(env.dir)) end
  end)

  for _, name in ipairs(nginx_side.REDIS_CASES) do
    it("redis: " .. name, function()
      if why.redis then return pending("redis: " .. why.redis) end
      assert(got.redis, "no results from nginx for redis: " .. tostring(got.redis_error))
      local r = assert(got.redis[name], "nginx ran no case named " .. name .. " on redis")
      assert(r.status == "pass", "redis: " .. name .. ": " .. tostring(r.message))
    end)
  end

  for _, store in ipairs({ "shared_dict", "redis" }) do
    for _, c in ipairs(contract.cases) do
      it(store .. ": " .. c.name, function()
        if why[store] then return pending(store .. ": " .. why[store]) end
        assert(got[store], "no results from nginx for " .. store .. ": " .. tostring(got[store .. "_error"]))
        local r = assert(got[store][c.name], "nginx ran no case named " .. c.name .. " on " .. store)
        if r.status == "n/a" then
          io.stderr:write("# contract: " .. store .. ": n/a: " .. c.name .. ": " .. r.message .. "\n")
          return pending("contract case n/a for " .. store .. ": " .. c.name .. ": " .. r.message)
        end
        assert(r.status == "pass", store .. ": " .. c.name .. ": " .. tostring(r.message))
      end)
    end
  end
end)
