-- mcp_crossings.lua: how many calls into libtoolgate the MCP gateway makes
-- for one client message, under LuaJIT's FFI binding (what an nginx worker
-- runs).  A script, run by spec/mcp_spec.lua in a process of its own: it
-- counts through a proxy of the library namespace, so it must be in place
-- before toolgate loads.
--
--   luajit spec/mcp_crossings.lua POLICY MESSAGE
--
-- POLICY: a shipped policy's name; MESSAGE: a JSON-RPC message to the
-- counter server of spec/data/nginx/counter.json (scopes counter:read and
-- counter:write granted).  The message is decided a few times first, then
-- 50 times counted; prints "calls=<per message> reply=<yes|no>
-- forward=<yes|no>" and the functions called, "name=<per message>".
local ffi = require "ffi"
local real_load, counts, counting = ffi.load, {}, false
ffi.load = function(...)
  local lib = real_load(...)
  return setmetatable({}, { __index = function(_, k)
    if counting then counts[k] = (counts[k] or 0) + 1 end
    return lib[k]
  end })
end

local root = assert(os.getenv("TOOLGATE_ROOT"), "TOOLGATE_ROOT")
local toolgate = require "toolgate"
local mcp = require "toolgate.mcp"
local state = require "toolgate.state"

local policy, message = arg[1], arg[2]
local e = assert(toolgate.new{ policy = policy, registry = { "counter=" .. root .. "/spec/data/nginx/counter.json" },
  state = state.memory() })
local gw = assert(mcp.new{ engine = e })
local route = gw:route("counter", { scopes = { "counter:read", "counter:write" } })
local N = 50
for _ = 1, 3 do gw:request(route, message) end
local plan
counting = true
for _ = 1, N do plan = gw:request(route, message) end
counting = false
local total, names = 0, {}
for k, v in pairs(counts) do
  total = total + v
  names[#names + 1] = k .. "=" .. v / N
end
table.sort(names)
print(string.format("calls=%g reply=%s forward=%s", total / N, plan.reply and "yes" or "no",
  plan.forward and "yes" or "no"))
print(table.concat(names, " "))
