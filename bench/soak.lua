-- bench/soak.lua: `make soak` -- 1,000,000 decisions in one process, and the
-- resident memory it takes along the way, which must stay flat.
--
--   lua5.4 bench/soak.lua [DECISIONS]     (or luajit; make soak runs both;
--                                         SOAK_STEP=N reports every N)
--
-- The decisions are a fixed mix on the shipped example registries: checks
-- of the example calls (accepts and rejects: unknown tools, undeclared keys,
-- bad values, malformed JSON, a scope the context lacks), MCP gateway
-- messages and answers (toolgate.mcp), verifies of results against output
-- schemas, and classifications of sampled plans (agreeing, fabricated,
-- single- and multi-step).  VmRSS is read from
-- /proc/self/status at the start, after every 100,000 decisions and at the
-- end; the run fails when the end is more than MARGIN above the value after
-- the first 100,000 (the warm-up: caches, the arena's kept block, the Lua
-- heap reaching its working size).
local toolgate = require "toolgate"

local TOTAL = tonumber(arg and arg[1]) or 1000000
local STEP = tonumber(os.getenv("SOAK_STEP")) or 100000
local MARGIN_KB = 4096 -- and 5 %: what the allocator may legitimately keep

local root = os.getenv("TOOLGATE_ROOT") or "."
local REG = root .. "/examples/registries/"

local function rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("*a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)"))
end

local function lines(path)
  local out = {}
  for l in io.lines(path) do if l:match("%S") then out[#out + 1] = l end end
  return out
end

-- checks: the example calls, and a few that must be refused
local pipeline = assert(toolgate.new({
  policy = { name = "soak", version = "1", stages = { "rung", "gate", "verifier" } },
  registry = { REG .. "mcp-filesystem.json", REG .. "mcp-everything.json", REG .. "mcp-memory.json" },
  context = { max_risk = "critical" },
}))
local calls = {}
for _, f in ipairs({ "mcp-calls.jsonl", "pipeline-calls.jsonl" }) do
  for _, l in ipairs(lines(root .. "/examples/calls/" .. f)) do calls[#calls + 1] = l end
end
for _, l in ipairs({
  '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a","path":"/b"}}',
  '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"',
  '{"server":"filesystem","name":"read_text_file","arguments":{"path":"' .. string.rep("x", 3000) .. '"}}',
  '{"server":"filesystem","name":"read_text_file","arguments":' .. string.rep("[", 100) .. string.rep("]", 100) .. "}",
  "not json at all",
}) do calls[#calls + 1] = l end

-- verifies: a call and a result, on or off the tool's output schema
local verifies = {
  { '{"server":"everything","name":"get-sum","arguments":{"a":1,"b":2}}',
    '{"content":[{"type":"text","text":"The sum of 1 and 2 is 3."}]}' },
  { '{"server":"everything","name":"get-sum","arguments":{"a":1,"b":2}}', '{"content":"not a list"}' },
  { '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}',
    '{"content":[{"type":"text","text":"hello"}],"structuredContent":{"content":"hello"},"isError":false}' },
  { '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}',
    '{"content":[{"type":"text","text":"hello"}],"structuredContent":{"content":7}}' },
  { '{"server":"filesystem","name":"read_text_file","arguments":{"path":"/a"}}', '{"content":[' },
}

-- classifications: plans on the spec's consistency registry
local consistency = assert(toolgate.new({
  policy = { name = "soak", version = "1", stages = { "rung", "consistency" } },
  registry = { root .. "/spec/data/registries/consistency.json" },
}))
local function plan(args_list, name)
  local s = {}
  for i, a in ipairs(args_list) do
    s[i] = string.format('{"arguments":%s,"result":{"rows":[%d]},"epoch":"e1"}', a, #a % 3)
  end
  return string.format('{"plan_id":"p","tool":{"server":"sb","name":"%s","deterministic":true,"verified":true},'
    .. '"samples":[%s]}', name or "lookup", table.concat(s, ","))
end
local same = '{"user_id":"u1","path":"/a//b/","team":" Ops ","tags":["A","b"],"limit":5}'
local made_up = {}
for i = 1, 10 do made_up[i] = string.format('{"user_id":"u%d","limit":5}', i) end
local multi = {}
for i = 1, 6 do
  multi[i] = string.format('{"epoch":"e1","calls":[{"server":"sb","name":"search","arguments":{"q":"alpha"}},'
    .. '{"server":"sb","name":"open","arguments":{"id":"d%d"}}],"results":[[1,2],{"title":"x"}]}', i <= 5 and 1 or i)
end
local plans = {
  plan({ same, same, same, same, same, same }),
  plan(made_up),
  plan({ '{"q":"x"}', '{"q":"x"}', '{"q":"y"}', '{"q":"x"}', '{"q":"x"}' }, "search"),
  plan({ '{"user_id":1}', '{"user_id":1}', '{"user_id":1}', '{"user_id":1}', '{"user_id":1}' }),
  '{"plan_id":"m","samples":[' .. table.concat(multi, ",") .. "]}",
}

-- gateway messages: a client's JSON-RPC message and the server's answer,
-- through toolgate.mcp (what the nginx and stdio gateways run): a call let
-- through and its answer verified, a call refused, a ping, a batch
local gateway = assert(require("toolgate.mcp").new({ engine = pipeline }))
local route = gateway:route("filesystem")
local messages = {
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/a"}}}',
  '{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"read_text_file","arguments":{"path":7}}}',
  '{"jsonrpc":"2.0","id":2,"method":"ping"}',
  '[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_allowed_directories"}},'
    .. '{"jsonrpc":"2.0","method":"notifications/initialized"}]',
}
local answer = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],'
  .. '"structuredContent":{"content":"hello"}}}'

local verdicts = {}
local function tally(d) if d then verdicts[d.verdict] = (verdicts[d.verdict] or 0) + 1 end end

-- one decision of the mix: 7 checks, 1 gateway message, 1 verify, 1
-- classify in every 10
local nc, nv, np, nm = #calls, #verifies, #plans, #messages
local function decide(i)
  local r, round = i % 10, math.floor(i / 10)
  if r == 7 then
    local sent = gateway:request(route, messages[round % nm + 1])
    if sent.forward then gateway:response(route, sent, answer) end
    return nil -- counted by the gateway's own decisions, not here
  elseif r == 8 then
    local v = verifies[round % nv + 1]
    return pipeline:verify(v[1], v[2])
  elseif r == 9 then
    return consistency:classify(plans[round % np + 1])
  end
  return pipeline:check(calls[i % nc + 1])
end

local binding = rawget(_G, "jit") and "LuaJIT (FFI)" or _VERSION .. " (C API)"
local t0 = os.clock()
local start = rss_kb()
print(string.format("soak: %d decisions under %s; VmRSS at start %d kB", TOTAL, binding, start))
local warm
for i = 1, TOTAL do
  tally(decide(i))
  if i % STEP == 0 then
    local kb = rss_kb()
    if i == STEP then warm = kb end
    print(string.format("  %8d decisions  VmRSS %6d kB  Lua heap %6d kB  %5.1f s", i, kb,
      math.floor(collectgarbage("count")), os.clock() - t0))
  end
end
local finish = rss_kb()
warm = warm or start
local limit = warm + math.max(MARGIN_KB, math.floor(warm * 0.05))
print(string.format("soak: VmRSS start %d kB, after warm-up %d kB, end %d kB (limit %d kB); %.1f s, %.1f us/decision",
  start, warm, finish, limit, os.clock() - t0, (os.clock() - t0) / TOTAL * 1e6))
local vs = {}
for v, n in pairs(verdicts) do vs[#vs + 1] = v .. " " .. n end
table.sort(vs)
print("soak: verdicts: " .. table.concat(vs, ", "))
if not (verdicts.accept and verdicts.reject) then
  print("soak: FAILED: the mix must hold accepts and rejects")
  os.exit(1)
end
if finish > limit then
  print("soak: FAILED: memory grew by " .. (finish - warm) .. " kB after warm-up")
  os.exit(1)
end
print("soak: memory is flat")
