-- toolgate: the public Lua module.
--
--   local toolgate = require "toolgate"
--   toolgate.canon('{"b":1,"a":2}')       --> '{"a":2,"b":1}'
--   toolgate.hash('{"b":1,"a":2}')        --> 32 hex digits (XXH3-128)
--   toolgate.canon_value({b = 1, a = 2})  --> '{"a":2,"b":1}'
--
-- Error convention (the same in every toolgate module): misuse, such as an
-- argument of the wrong type, raises; bad data returns nil, message, CODE
-- and, for JSON text, the byte offset (from 0) where the problem is.

local core = require "toolgate.core"
local engine = require "toolgate.engine"
local value = require "toolgate.value"

local M = {
  VERSION = core.VERSION,
  BINDING = core.BINDING, -- "capi" under Lua 5.4, "ffi" under LuaJIT
  null = value.null,
  array_mt = value.array_mt,
  empty_array = value.empty_array,
  encode = value.encode,
  format_number = core.format_number,
  hash_bytes = core.hash_bytes,
  default_limits = core.default_limits,
}

-- new{policy=, registry=, context=, limits=, format=} -> engine | nil, message, code
-- (toolgate.engine: engine:check, engine:verify, engine:reload)
M.new = engine.new

local Codec = {}
Codec.__index = Codec

-- A codec is a core engine with its own limits (see README, "Limits").
-- codec([limits]) -> codec | nil, message, code
function M.codec(limits)
  local engine, err, code = core.new_engine(limits)
  if not engine then return nil, err, code end
  return setmetatable({ engine = engine }, Codec)
end

function Codec:limits() return self.engine:limits() end
function Codec:set_limits(t) return self.engine:set_limits(t) end

-- canon(json_text) -> canonical text | nil, message, code, offset
function Codec:canon(text)
  if type(text) ~= "string" then error("canon: string expected, got " .. type(text), 2) end
  return self.engine:canon(text)
end

-- hash(json_text) -> XXH3-128 of the canonical form, 32 hex digits | nil, ...
function Codec:hash(text)
  if type(text) ~= "string" then error("hash: string expected, got " .. type(text), 2) end
  return self.engine:hash(text)
end

-- canon_value(v) / hash_value(v): the same for a Lua value (toolgate.value
-- says how tables, nil/null and numbers map to JSON).
function Codec:canon_value(v)
  local text, err, code = value.encode(v)
  if not text then return nil, err, code end
  return self.engine:canon(text)
end

function Codec:hash_value(v)
  local text, err, code = value.encode(v)
  if not text then return nil, err, code end
  return self.engine:hash(text)
end

local default_codec

local function default()
  if not default_codec then default_codec = assert(M.codec()) end
  return default_codec
end

function M.canon(text) return default():canon(text) end
function M.hash(text) return default():hash(text) end
function M.canon_value(v) return default():canon_value(v) end
function M.hash_value(v) return default():hash_value(v) end

return M
