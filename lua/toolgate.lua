--- toolgate: the public Lua module.
--
--   local toolgate = require "toolgate"
--   toolgate.canon('{"b":1,"a":2}')       --> '{"a":2,"b":1}'
--   toolgate.hash('{"b":1,"a":2}')        --> 32 hex digits (XXH3-128)
--   toolgate.canon_value({b = 1, a = 2})  --> '{"a":2,"b":1}'
--
-- Error convention (the same in every toolgate module): misuse, such as an
-- argument of the wrong type, raises; bad data returns nil, message, CODE
-- and, for JSON text, the byte offset (from 0) where the problem is.
--
-- Fields: VERSION (the core's version), BINDING ("capi" under Lua 5.4,
-- "ffi" under LuaJIT), null (JSON null, cjson.null), array_mt and
-- empty_array (mark a table as a JSON array), exact (a JSON number text as
-- policies see it: a Lua number, or a box keeping every digit) and exact_mt
-- (the boxes' metatable), encode (toolgate.value.encode),
-- format_number (a double in ECMAScript form), hash_bytes (XXH3-128 hex of
-- any bytes), default_limits (the core's default limits).
-- @module toolgate

local core = require "toolgate.core"
local engine = require "toolgate.engine"
local value = require "toolgate.value"

local M = {
  VERSION = core.VERSION,
  BINDING = core.BINDING, -- "capi" under Lua 5.4, "ffi" under LuaJIT
  null = value.null,
  array_mt = value.array_mt,
  empty_array = value.empty_array,
  exact = value.exact,
  exact_mt = value.exact_mt,
  encode = value.encode,
  format_number = core.format_number,
  hash_bytes = core.hash_bytes,
  default_limits = core.default_limits,
}

--- An engine: a policy and a registry, used together (see toolgate.engine).
-- new{policy=, registry=, context=, limits=, format=} -> engine | nil, message, code
-- (engine:check, engine:verify, engine:classify, engine:probe, engine:reload)
-- @function new
-- @tparam table opts policy (a path, a shipped policy's name such as "mcp", or a table),
-- registry (a list of sources), context, limits, format
-- @return an engine, or nil, message, code
M.new = engine.new

local Codec = {}
Codec.__index = Codec

--- A codec: a core engine with its own limits (see docs/limits.md).
-- codec([limits]) -> codec | nil, message, code
-- @tparam[opt] table limits max_input_bytes, max_depth, max_string_bytes,
-- max_members, max_items, regex_match_limit, max_validation_steps,
-- max_pattern_bytes, max_regex_steps, max_registry_bytes
-- @treturn Codec
function M.codec(limits)
  local e, err, code = core.new_engine(limits)
  if not e then return nil, err, code end
  return setmetatable({ engine = e }, Codec)
end

--- A core engine with its own limits, made by toolgate.codec.
-- @type Codec

--- The codec's limits, as a table.
function Codec:limits() return self.engine:limits() end
--- Changes some limits (out of range: nil, message, "BAD_ARGUMENT").
function Codec:set_limits(t) return self.engine:set_limits(t) end

--- RFC 8785 canonical form of JSON text.
-- canon(json_text) -> canonical text | nil, message, code, offset
-- @string text JSON text
-- @return the canonical text, or nil, message, CODE, byte offset
function Codec:canon(text)
  if type(text) ~= "string" then error("canon: string expected, got " .. type(text), 2) end
  return self.engine:canon(text)
end

--- XXH3-128 of the canonical form of JSON text, 32 hex digits.
-- hash(json_text) -> hex | nil, message, code, offset
-- @string text JSON text
function Codec:hash(text)
  if type(text) ~= "string" then error("hash: string expected, got " .. type(text), 2) end
  return self.engine:hash(text)
end

--- Canonical form of a Lua value (toolgate.value says how tables, nil/null
-- and numbers map to JSON).
-- @param v a Lua value
-- @return the canonical text, or nil, message, "BAD_VALUE"
function Codec:canon_value(v)
  local text, err, code = value.encode(v)
  if not text then return nil, err, code end
  return self.engine:canon(text)
end

--- XXH3-128 of the canonical form of a Lua value.
-- @param v a Lua value
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

--- Functions on a codec with the default limits.
-- @section default

--- Codec:canon with the default limits.
function M.canon(text) return default():canon(text) end
--- Codec:hash with the default limits.
function M.hash(text) return default():hash(text) end
--- Codec:canon_value with the default limits.
function M.canon_value(v) return default():canon_value(v) end
--- Codec:hash_value with the default limits.
function M.hash_value(v) return default():hash_value(v) end

return M
