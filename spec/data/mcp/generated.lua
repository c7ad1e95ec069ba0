-- spec/data/mcp/generated.lua: Gateway:request on generated client
-- messages (ids, methods, params, batches, text that is not JSON) and
-- Gateway:response on an answer to what was forwarded, one line per
-- message, so that two interpreters' outputs can be compared
-- (spec/mcp_spec.lua).  The generator is Park-Miller's, exact in a double
-- and in a Lua 5.4 integer alike.
--   lua spec/data/mcp/generated.lua POLICY SEED COUNT
local toolgate = require "toolgate"
local mcp = require "toolgate.mcp"
local state = require "toolgate.state"
local root = assert(os.getenv("TOOLGATE_ROOT"), "TOOLGATE_ROOT")
local e = assert(toolgate.new{ policy = arg[1], registry = { "counter=" .. root .. "/spec/data/nginx/counter.json" },
  state = state.memory({ clock = function() return 1000 end }) })
local gw = assert(mcp.new{ engine = e })
local route = gw:route("counter", { scopes = { "counter:read", "counter:write" } })
local seed = tonumber(arg[2])
local function rnd(n) seed = (seed * 16807) % 2147483647; return seed % n end
local function pick(t) return t[rnd(#t) + 1] end
local ids = { "1", "2", '"a"', '""', '"\\u0041"', "0", "-0", "1.0", "1e2", "1.5", "null", "true", "{}", "[1]",
  "9007199254740991", "9007199254740992", "-9007199254740991", "-9007199254740992", "12345678901234567890", "1e300" }
local methods = { '"tools/call"', '"tools/list"', '"ping"', '"initialize"', '"notifications/initialized"',
  '"resources/list"', '"sampling/createMessage"', '"nope/nope"', "7", "null", '"tools/call "' }
local names = { '"echo"', '"add"', '"nope"', '""', "7", "null", '"e\\u0063ho"' }
local argss = { '{"message":"hi"}', '{"message":7}', '{"a":1,"b":2}', '{"a":"x","b":2}', "{}", '"str"', "[1,2]",
  "null", '{"message":"' .. string.rep("x", 120) .. '"}', '{"a":9007199254740993,"b":1e400}',
  '{"message":"\\u00e9\\n"}' }
local function params()
  local k = rnd(6)
  if k == 0 then return nil end
  if k == 1 then return "[]" end
  local parts = {}
  if rnd(5) > 0 then parts[#parts + 1] = '"name":' .. pick(names) end
  if rnd(4) > 0 then parts[#parts + 1] = '"arguments":' .. pick(argss) end
  if rnd(6) == 0 then parts[#parts + 1] = '"cursor":"c"' end
  return "{" .. table.concat(parts, ",") .. "}"
end
local function message()
  local parts = {}
  if rnd(8) > 0 then parts[#parts + 1] = '"jsonrpc":"2.0"' end
  if rnd(6) > 0 then parts[#parts + 1] = '"id":' .. pick(ids) end
  if rnd(7) > 0 then parts[#parts + 1] = '"method":' .. pick(methods) end
  local p = params()
  if p then parts[#parts + 1] = '"params":' .. p end
  if rnd(10) == 0 then parts[#parts + 1] = '"result":{}' end
  if rnd(12) == 0 then parts[#parts + 1] = '"error":{"code":1,"message":"m"}' end
  return "{" .. table.concat(parts, ",") .. "}"
end
local function text()
  local k = rnd(20)
  if k == 0 then return "{" end
  if k == 1 then return "7" end
  if k == 2 then return "[]" end
  if k < 5 then
    local els = {}
    for i = 1, 1 + rnd(4) do els[i] = rnd(6) == 0 and "3" or message() end
    return "[" .. table.concat(els, ",") .. "]"
  end
  return message()
end
local answers = { '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}',
  '{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}', '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
  '{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}',
  '[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/x"}]', "not json",
  '{"jsonrpc":"2.0","id":1.0,"result":{"content":[{"type":"text","text":"x"}]}}' }
local function show(plan)
  local pend = {}
  for id, p in pairs(plan.pending) do
    pend[#pend + 1] = id .. "=" .. p.kind .. (p.kind == "list" and tostring(p.paged) or "") .. ":" .. (p.text or "")
  end
  table.sort(pend)
  return table.concat({ tostring(plan.forward), tostring(plan.reply), plan.inject and table.concat(plan.inject, "|")
    or "", table.concat(pend, ","), tostring(plan.batch) }, " || ")
end
for i = 1, tonumber(arg[3]) do
  local t = text()
  local plan = gw:request(route, t)
  io.write(i, " ", t, "\n  -> ", show(plan), "\n")
  if plan.forward and next(plan.pending) then
    local a = pick(answers)
    local out, why = gw:response(route, plan, a)
    io.write("  <- ", a, " => ", tostring(out), " / ", tostring(why), "\n")
  end
end
