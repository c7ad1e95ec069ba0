-- canon_bench.lua: the canonicalize+hash benchmark through the Lua API
-- (toolgate.hash: parse + RFC 8785 + XXH3-128, from JSON text), under
-- whichever interpreter runs it.  Same output format as canon_bench.c.
--   lua5.4 bench/canon_bench.lua CORPUS.jsonl [MIN_SECONDS]
local toolgate = require "toolgate"

local path, min_seconds = arg[1], tonumber(arg[2] or "1")
local docs, bytes = {}, 0
for line in io.lines(path) do
  if line:find("%S") then
    docs[#docs + 1] = line
    bytes = bytes + #line
  end
end

local hash = toolgate.hash
for i = 1, #docs do assert(hash(docs[i])) end -- warm-up; every line must pass

-- os.clock is CPU time of this process: the right clock for a one-thread loop.
local passes, t0 = 0, os.clock()
local elapsed
repeat
  for i = 1, #docs do hash(docs[i]) end
  passes = passes + 1
  elapsed = os.clock() - t0
until elapsed >= min_seconds

local label = rawget(_G, "jit") and "toolgate-luajit-ffi" or "toolgate-lua54-capi"
print(string.format("%s docs=%d bytes=%d seconds=%.3f MB_per_s=%.1f ns_per_doc=%.0f", label, #docs, bytes,
  elapsed, bytes * passes / 1e6 / elapsed, elapsed * 1e9 / (passes * #docs)))
