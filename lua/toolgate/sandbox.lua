--- toolgate.sandbox: where policy code runs.
--
-- Like Redis scripting: an allow-list environment (unknown globals raise,
-- globals cannot be set), text chunks only, and an instruction budget on
-- every call into policy code, enforced by a count hook.  Under LuaJIT a
-- count hook never fires inside JIT-compiled code, so every policy chunk
-- (and each function it defines, now or later) has the JIT switched off.
--
-- What the budget does not bound: memory.  string.rep is capped here, but a
-- policy that builds huge tables can still use memory; policies are
-- operators' code, the sandbox guards against their mistakes (a loop that
-- never ends, a stray os.execute), not against a determined adversary.
-- @module toolgate.sandbox

local value = require "toolgate.value"

local M = {}

M.DEFAULT_BUDGET = 1000000   -- VM instructions per call into policy code
M.MAX_REP_BYTES = 1048576    -- string.rep result cap inside policies

local jit = rawget(_G, "jit")
local unpack = table.unpack or rawget(_G, "unpack")

-- The error a spent budget raises: a unique value, so a policy's own pcall
-- cannot swallow it (the sandboxed pcall rethrows it).
local BUDGET = setmetatable({}, { __tostring = function() return "instruction budget exceeded" end })

local function pack(...) return { n = select("#", ...), ... } end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local function rethrowing(protected)
  return function(...)
    local r = pack(protected(...))
    if not r[1] and r[2] == BUDGET then error(BUDGET, 0) end
    return unpack(r, 1, r.n)
  end
end

-- Helpers policies may require (the only modules they can).
local HELPERS = {}

--- Makes module available to policies as require(name).
function M.register_helper(name, module)
  HELPERS[name] = module
end

local function safe_string()
  local s = copy(string)
  s.dump = nil
  local rep = string.rep
  s.rep = function(str, n, sep)
    local len = #tostring(str) * (tonumber(n) or 0) + #(sep or "") * math.max((tonumber(n) or 0) - 1, 0)
    if len > M.MAX_REP_BYTES then
      error("string.rep: result of " .. len .. " bytes is over the policy limit of " .. M.MAX_REP_BYTES, 2)
    end
    return rep(str, n, sep)
  end
  return s
end

--- A fresh environment for one policy chunk.
function M.environment()
  local env = {
    assert = assert, error = error, ipairs = ipairs, pairs = pairs, next = next,
    select = select, tonumber = tonumber, tostring = tostring, type = type,
    rawequal = rawequal, rawget = rawget, rawset = rawset,
    -- a __gc finalizer would run later, outside any budget
    setmetatable = function(t, mt)
      if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
        error("a policy may not set __gc finalizers", 2)
      end
      return setmetatable(t, mt)
    end,
    unpack = unpack,
    -- getmetatable("") would hand out the real string library: not for policies
    getmetatable = function(v)
      if type(v) == "string" then return nil end
      return getmetatable(v)
    end,
    pcall = rethrowing(pcall),
    xpcall = rethrowing(xpcall),
    string = safe_string(),
    table = copy(table),
    math = copy(math),
    os = { time = os.time, clock = os.clock },
    null = value.null,
    array_mt = value.array_mt,
    require = function(name)
      local h = HELPERS[name]
      if h == nil then error("a policy may only require toolgate's helpers, not '" .. tostring(name) .. "'", 2) end
      return h
    end,
  }
  env.table.unpack = unpack
  env._G = env
  return setmetatable(env, {
    __index = function(_, k)
      error("unknown global '" .. tostring(k) .. "' (policies run in a sandbox: no io, os, debug, load, ...)", 2)
    end,
    __newindex = function(_, k)
      error("a policy may not set the global '" .. tostring(k) .. "'; use local", 2)
    end,
  })
end

--- Calls fn under an instruction budget.
-- call(budget, fn, ...) -> true, results... | false, message
-- Runs fn with the count hook armed; restores whatever hook was there.
function M.call(budget, fn, ...)
  local old_hook, old_mask, old_count = debug.gethook()
  debug.sethook(function() error(BUDGET, 0) end, "", budget)
  local r = pack(pcall(fn, ...))
  if old_hook then debug.sethook(old_hook, old_mask, old_count) else debug.sethook() end
  if not r[1] then
    if r[2] == BUDGET then
      return false, "instruction budget of " .. budget .. " exceeded"
    end
    return false, tostring(r[2])
  end
  return true, unpack(r, 2, r.n)
end

--- confine(t): switches the JIT off for every function in the table t (and
-- the tables in it), so the budget holds for policies given as Lua tables
-- too.  A file's chunk is switched off as a whole in load().  (Under LuaJIT
-- a function a table-policy calls that was defined elsewhere keeps its JIT:
-- give policies as files when the budget must bound everything.)
function M.confine(t, seen)
  if not jit then return end
  seen = seen or {}
  if seen[t] then return end
  seen[t] = true
  for _, v in pairs(t) do
    if type(v) == "function" then jit.off(v, true)
    elseif type(v) == "table" then M.confine(v, seen) end
  end
end

--- load(text, chunkname, budget) -> the chunk's result | nil, message
-- Compiles text (never bytecode) in a fresh environment, switches the JIT
-- off for it, and runs it under the budget.
function M.load(text, chunkname, budget)
  local chunk, err = load(text, chunkname, "t", M.environment())
  if not chunk then return nil, err end
  if jit then jit.off(chunk, true) end
  local ok, result = M.call(budget or M.DEFAULT_BUDGET, chunk)
  if not ok then return nil, result end
  return result
end

return M
