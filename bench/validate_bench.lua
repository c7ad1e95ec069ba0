-- validate_bench.lua: the parse + validate benchmark through the Lua API, as
-- a user of the Resolution Rung calls it, under whichever interpreter runs it.
--
--   lua5.4 bench/validate_bench.lua --calls CALLS.jsonl [--ajv-valid N] [--min-seconds S]
--          [--registries DIR] [--check]
--
-- Loads the three recorded MCP registries (DIR/mcp-everything.json,
-- mcp-filesystem.json, mcp-memory.json; DIR defaults to examples/registries)
-- with toolgate.registry: closed world, the original MCP schemas (not the
-- explicitly closed copies gen_mcp_calls.py writes for ajv).  Each line of
-- CALLS.jsonl ({"tool": "server/name", "arguments": "<raw JSON text>", ...})
-- becomes a native call line {"server": ..., "name": ..., "arguments": <the
-- text>} before timing; the timed work per call is engine:decode_call (the
-- parse) followed by rung.check (resolution, validation, args digest).  One
-- untimed warm-up pass counts the accepted calls, then whole passes are
-- timed with os.clock until S seconds (default 1), and it prints
--   toolgate-<lua54-capi|luajit-ffi>-rung calls=<n> seconds=<s> ns_per_call=<y> accepted=<n>
-- With --ajv-valid N (the number of calls ajv finds valid) it warns on
-- stderr when the accepted count differs.  --check prints one line per
-- call instead: {"valid":true|false,"code":"<the decision's code>"}.
local core = require "toolgate.core"
local registry = require "toolgate.registry"
local rung = require "toolgate.rung"

local opts = { ["min-seconds"] = "1", registries = "examples/registries" }
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--check" then
      opts.check = true
    elseif a:match("^%-%-") and arg[i + 1] then
      opts[a:sub(3)] = arg[i + 1]
      i = i + 1
    else
      io.stderr:write("validate_bench.lua: unknown argument ", a, "\n")
      os.exit(2)
    end
    i = i + 1
  end
end
if not opts.calls then
  io.stderr:write("usage: validate_bench.lua --calls CALLS.jsonl [--ajv-valid N] [--min-seconds S] ",
    "[--registries DIR] [--check]\n")
  os.exit(2)
end
local min_seconds = tonumber(opts["min-seconds"])

local engine = assert(core.new_engine())
local snap = assert(registry.load(engine, {
  opts.registries .. "/mcp-everything.json",
  opts.registries .. "/mcp-filesystem.json",
  opts.registries .. "/mcp-memory.json",
}))

-- A call line carries its arguments as a JSON string: read the file with
-- roomy limits, then build the native call lines the rung's engine reads
-- with its defaults.
local reader = assert(core.new_engine({ max_input_bytes = 0x7fffffff, max_string_bytes = 0x7fffffff }))
local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

local lines = {}
for line in io.lines(opts.calls) do
  if line:find("%S") then
    local doc = assert(reader:parse(line))
    local root = doc:root()
    local key = root:get("tool"):value()
    local server, name = key:match("^([^/]*)/(.*)$")
    lines[#lines + 1] = '{"server":' .. json_string(server) .. ',"name":' .. json_string(name) ..
      ',"arguments":' .. root:get("arguments"):value() .. "}"
  end
end

local decode_call, check = engine.decode_call, rung.check

-- One decision, as toolgate check would make it.
local function decide(line)
  local call, msg, code = decode_call(engine, line, "native")
  if not call then return { verdict = "reject", stage = "decode", code = code, message = msg } end
  local d = check(snap, call:server(), call:name(), call:arguments())
  call:free() -- as engine:check does: the C memory goes now, not at the next collection
  return d
end

if opts.check then
  local out = {}
  for i = 1, #lines do
    local d = decide(lines[i])
    out[#out + 1] = string.format('{"valid":%s,"code":"%s"}', tostring(d.verdict == "accept"), d.code or "")
  end
  io.write(table.concat(out, "\n"), "\n")
  return
end

local accepted = 0
for i = 1, #lines do -- warm-up, untimed; also the accepted count
  if decide(lines[i]).verdict == "accept" then accepted = accepted + 1 end
end

-- os.clock is CPU time of this process: the right clock for a one-thread loop.
local passes, t0, sink, elapsed = 0, os.clock(), 0
repeat
  for i = 1, #lines do
    if decide(lines[i]).verdict == "accept" then sink = sink + 1 end
  end
  passes = passes + 1
  elapsed = os.clock() - t0
until elapsed >= min_seconds
assert(sink == accepted * passes, "validation is not deterministic")

local label = rawget(_G, "jit") and "toolgate-luajit-ffi-rung" or "toolgate-lua54-capi-rung"
print(string.format("%s calls=%d seconds=%.3f ns_per_call=%.1f accepted=%d", label, #lines, elapsed,
  elapsed * 1e9 / (passes * #lines), accepted))
local ajv_valid = tonumber(opts["ajv-valid"])
if ajv_valid and ajv_valid ~= accepted then
  io.stderr:write(string.format("validate_bench.lua: warning: %s accepted %d calls, ajv finds %d valid\n",
    label, accepted, ajv_valid))
end
