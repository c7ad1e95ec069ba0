-- spec/gateway_fixture.lua: what the end-to-end specs of the nginx gateway
-- (spec/nginx_spec.lua, spec/fleet_spec.lua) share: processes started in the
-- background and stopped by their PID, bounded waits, and the MCP clients
-- and servers of nginx/test/ (the SDK's client, raw HTTP, SDK-built servers).
local h = require "helpers"

local M = {}

M.testdir = h.root .. "/nginx/test"
local q = h.shell_quote

M.json = function(text)
  local decode = require("toolgate.json").decode
  return assert(decode(require("toolgate").codec().engine, text))
end
local json = M.json

function M.sleep(s) os.execute("sleep " .. s) end

-- Seconds since the epoch, to the millisecond (os.time counts whole seconds).
function M.now()
  local p = assert(io.popen("date +%s.%N"))
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

-- Why an end-to-end spec cannot run here (nil: it can): node and Debian's
-- nginx are needed, and the npm package pkg in nginx/test; a registry that
-- could not be reached is a reason to skip, anything else that left pkg
-- out is an error.
function M.not_ready(pkg)
  if not h.have("node") or h.run("test -x /usr/sbin/nginx") ~= 0 then
    return "needs node and Debian's nginx (make test installs them)"
  end
  if h.run("test -f " .. q(M.testdir .. "/node_modules/" .. pkg .. "/package.json")) ~= 0 then
    local why = os.getenv("TOOLGATE_NPM_UNAVAILABLE")
    if why then return why end
    error("nginx/test/node_modules lacks " .. pkg .. " (make test installs it: npm ci --prefix nginx/test)")
  end
  return nil
end

function M.node(args) return h.run("cd " .. q(M.testdir) .. " && node " .. args) end

-- Starts a command in the background (in nginx/test); returns its PID.
function M.spawn(cmd, log)
  local p = assert(io.popen("cd " .. q(M.testdir) .. " && { " .. cmd .. " ; } > " .. q(log) .. " 2>&1 < /dev/null & echo $!"))
  local pid = tonumber(p:read("*l"))
  p:close()
  return assert(pid, "could not start " .. cmd)
end

function M.alive(pid) return h.run("kill -0 " .. pid .. " 2>/dev/null") == 0 end

-- Stops a process by its PID and waits (at most 10 s) until it is gone.
function M.stop(pid)
  if not pid then return end
  h.run("kill -TERM " .. pid .. " 2>/dev/null")
  for _ = 1, 100 do
    if not M.alive(pid) then return end
    M.sleep(0.1)
  end
  h.run("kill -KILL " .. pid .. " 2>/dev/null")
end

-- wait_for(what, fn[, log[, seconds]]): fn's first true value, within
-- seconds (default 10); else an error with the end of log
function M.wait_for(what, fn, log, seconds)
  local tries = math.floor((seconds or 10) * 10)
  for _ = 1, tries do
    local v = fn()
    if v then return v end
    M.sleep(0.1)
  end
  local tail = log and (h.read_file(log) or ""):sub(-2000) or ""
  error("timed out (" .. (seconds or 10) .. " s) waiting for " .. what .. (tail ~= "" and (":\n" .. tail) or ""))
end

-- start_gateway(cmd, listen, log) -> pid: a `toolgate gateway` command
-- started in the background, once its /healthz on listen says ok
function M.start_gateway(cmd, listen, log)
  local pid = M.spawn(cmd, log)
  M.wait_for("the gateway's /healthz", function()
    local c, health = h.run("curl -s --max-time 1 " .. q("http://" .. listen .. "/healthz"))
    return c == 0 and health:find('"ok"')
  end, log)
  return pid
end

-- stop_gateway(pid, prefix): stops a gateway start_gateway started (its
-- --prefix given) and waits until its nginx master is gone too
function M.stop_gateway(pid, prefix)
  M.stop(pid)
  local master = tonumber(h.read_file(prefix .. "/nginx.pid") or "")
  if master then M.wait_for("nginx to stop", function() return not M.alive(master) end) end
end

-- A new directory (tmpname repeats across runs that share a random seed),
-- readable by nginx's workers (nobody).
function M.tempdir(name)
  local mk = assert(io.popen("mktemp -d " .. q((os.getenv("TMPDIR") or "/tmp") .. "/" .. name .. ".XXXXXX")))
  local dir = assert(mk:read("*l"))
  mk:close()
  assert(os.execute("chmod 755 " .. q(dir)))
  return dir
end

-- n free TCP ports on 127.0.0.1, from the kernel
function M.ports(n)
  local code, out = M.node("http.mjs port " .. n)
  assert(code == 0)
  local ports = {}
  for p in out:gmatch("%d+") do ports[#ports + 1] = p end
  return ports
end

function M.upstream_port(log)
  return M.wait_for("the upstream's port in " .. log, function()
    local text = h.read_file(log) or ""
    return tonumber(text:match("port (%d+)")) or tonumber(text:match("listening on port (%d+)"))
  end)
end

function M.lines(text)
  local out = {}
  for _, l in ipairs(h.lines_of(text)) do out[#out + 1] = json(l) end
  return out
end

-- the SDK client against url: returns the JSON lines it printed (initialize first)
function M.client(url, steps)
  local code, out, err = M.node("client.mjs " .. q(url) .. " " .. q(steps))
  assert(code == 0, "client.mjs failed: " .. err .. out)
  return M.lines(out)
end

function M.call_body(id, name, args)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"' .. name .. '","arguments":'
    .. args .. "}}"
end

-- raw POSTs to url: count identical ones at once
function M.send(url, body, count, headers)
  local code, out, err = M.node("http.mjs send " .. q(url) .. " " .. q(body) .. " " .. (count or 1)
    .. (headers and (" " .. q(headers)) or ""))
  assert(code == 0, "http.mjs failed: " .. err)
  local r = M.lines(out)
  for _, x in ipairs(r) do
    if x.type and x.type:find("json") then x.json = json(x.body) end
  end
  return r
end

function M.curl(args)
  local code, out, err = h.run("curl -s -S --max-time 10 " .. args)
  assert(code == 0, "curl " .. args .. ": " .. err)
  return out
end

-- the value of one series in a Prometheus text
function M.metric(text, series)
  local v = text:match("\n" .. series:gsub("%p", "%%%0") .. " ([%d.e+-]+)")
  return tonumber(v)
end

-- Records an MCP server's tools/list as a registry (without the tool drop).
function M.record(server, port, path, drop)
  local list = M.client("http://127.0.0.1:" .. port .. "/mcp", '[{"op":"list"}]')[2].ok
  local kept = {}
  for _, t in ipairs(list.tools) do
    if t.name ~= drop then kept[#kept + 1] = t end
  end
  local value = require "toolgate.value"
  h.write_file(path, assert(value.encode({ server = server, tools = setmetatable(kept, value.array_mt) })))
end

return M
