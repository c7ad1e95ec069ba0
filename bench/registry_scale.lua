-- bench/registry_scale.lua: one engine built from one registry source (a
-- JSON registry or a compiled image), for bench/registry_scale.sh.
--
--   luajit bench/registry_scale.lua SERVER=SOURCE TOOL [MAX_INPUT_BYTES]
--
-- Prints one line:
--   SCALE parse_s=<CPU seconds to parse the JSON alone, -1 for an image>
--     load_s=<CPU seconds of toolgate.new> rss_base_kb=<VmRSS before>
--     rss_kb=<VmRSS after, garbage collected> lua_heap_kb=<the Lua heap then: the
--     rest is C> decide_first_us=<the first call>
--     decide_us=<a call, mean of 1,000> verdict=<...> code=<...> decision=<its JSON>
-- CPU time (os.clock), not wall time: the machine is shared, and building
-- an engine is one thread's work.  The call is TOOL with no arguments, in
-- a context that allows any risk.  MAX_INPUT_BYTES raises max_input_bytes
-- for code that has no max_registry_bytes of its own (issue 37's "before").
local toolgate = require "toolgate"

local source, tool, max_input = arg[1], arg[2], tonumber(arg[3])
local server = source:match("^([^=]+)=")

local function rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("*a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)"))
end

collectgarbage()
local base = rss_kb()
local t0 = os.clock()
local e, err = toolgate.new({ registry = { source }, context = { max_risk = "critical" },
  limits = max_input and { max_input_bytes = max_input } or nil })
local load_s = os.clock() - t0
if not e then
  io.stderr:write("registry_scale: ", tostring(err), "\n")
  os.exit(1)
end
collectgarbage()
collectgarbage()
local rss = rss_kb()
local lua_kb = collectgarbage("count")

local call = { server = server, name = tool, arguments = {} }
t0 = os.clock()
local d = e:check(call)
local first_us = (os.clock() - t0) * 1e6
local N = 1000
t0 = os.clock()
for _ = 1, N do e:check(call) end
local each_us = (os.clock() - t0) * 1e6 / N

-- The floor under a load from JSON: parsing the file's text once, nothing built.
local parse_s = -1
local f = io.open(source:match("=(.*)$"), "rb")
local text = f:read("*a")
f:close()
if text:sub(1, 1) == "{" then
  local codec = assert(toolgate.codec({ max_input_bytes = #text + 1 }))
  t0 = os.clock()
  assert(codec.engine:parse(text))
  parse_s = os.clock() - t0
end

print(string.format("SCALE parse_s=%.3f  load_s=%.3f rss_base_kb=%d rss_kb=%d lua_heap_kb=%d decide_first_us=%.0f decide_us=%.1f"
  .. " verdict=%s code=%s decision=%s", parse_s, load_s, base, rss, lua_kb, first_us, each_us, d.verdict, tostring(d.code),
  d._json or "-"))
