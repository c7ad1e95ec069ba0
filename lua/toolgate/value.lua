--- toolgate.value: Lua values to JSON text.
--
-- How a Lua value maps to JSON (the same under Lua 5.4 and LuaJIT):
--   nil, toolgate.null (= cjson.null, a NULL light userdata) -> null
--   booleans -> true / false
--   numbers  -> ECMAScript form of the double; NaN and infinities are errors.
--               Lua 5.4 integers are written exactly (every digit reaches
--               args_digest; RFC 8785 outputs read them as doubles).
--   exact numbers (toolgate.value.exact_mt, made by value.exact or met in
--               arguments) -> their exact text: what a double cannot hold
--               (2^53 + 1, 12345678901234567890) keeps every digit.
--   strings  -> JSON strings; they must be valid UTF-8
--   tables   -> an array when the table's metatable is toolgate.array_mt (or
--               lua-cjson's array_mt / empty_array_mt where that cjson has
--               them), or when its keys are exactly 1..n for some n >= 1;
--               an object when all its keys are strings.  An empty table is
--               an object {} (as in cjson) unless marked as an array;
--               toolgate.empty_array (or cjson.empty_array) is [].
--               Mixed or sparse keys are errors.
-- Errors are returned as nil, message, "BAD_VALUE".
-- @module toolgate.value

local core = require "toolgate.core"
local has_cjson, cjson = pcall(require, "cjson")

local M = {}

M.null = has_cjson and cjson.null or nil
M.array_mt = { __name = "toolgate.array" }
M.empty_array = setmetatable({}, M.array_mt)

local cjson_array_mts = {}
local cjson_empty_array
if has_cjson then
  if cjson.array_mt then cjson_array_mts[cjson.array_mt] = true end
  if cjson.empty_array_mt then cjson_array_mts[cjson.empty_array_mt] = true end
  cjson_empty_array = cjson.empty_array
end

--- is_array_mt(mt) -> true when the metatable mt marks a table as a JSON
-- array (toolgate.array_mt, or lua-cjson's array_mt / empty_array_mt)
function M.is_array_mt(mt)
  return mt ~= nil and (mt == M.array_mt or cjson_array_mts[mt] == true)
end

local MAX_DEPTH = 1000

-- Exact numbers ----------------------------------------------------------------
-- A JSON number whose double does not spell it (9007199254740993,
-- 12345678901234567890, 0.1000000000000000000001) cannot be a Lua number
-- without losing digits, so it travels as a box: a table {text = exact form}
-- with this metatable.  tostring gives the text (the form args_digest hashes:
-- one spelling per value); == between boxes compares values; ordering or
-- arithmetic raises, under both interpreters, instead of rounding (inside a
-- policy: POLICY_ERROR).  Lua never asks a metamethod whether a table equals
-- a number, so box == 12345678901234567890 is false: compare texts.
local function not_a_number(a, b)
  local box = getmetatable(a) == M.exact_mt and a or b
  error("the exact number " .. box.text .. " is not a Lua number (a double would round it): " ..
        "compare tostring() texts instead", 2)
end

M.exact_mt = {
  __name = "toolgate.exact",
  __tostring = function(b) return b.text end,
  __eq = function(a, b) return a.text == b.text end,
  __lt = not_a_number, __le = not_a_number, __unm = not_a_number,
  __add = not_a_number, __sub = not_a_number, __mul = not_a_number, __div = not_a_number,
  __mod = not_a_number, __pow = not_a_number, __idiv = not_a_number,
}

local function box(text) return setmetatable({ text = text }, M.exact_mt) end
M.box = box

-- A JSON number's text: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
local function is_number_text(s)
  local int, rest = s:match("^%-?(%d+)(.*)$")
  if not int or (#int > 1 and int:sub(1, 1) == "0") then return false end
  rest = rest:gsub("^%.%d+", "", 1)
  return rest == "" or rest:find("^[eE][+-]?%d+$") ~= nil
end

--- is_number_text(s) -> true when the string s is a JSON number's text
M.is_number_text = is_number_text

local number_engine -- parses the texts value.exact is given, made on first use

--- exact(text) -> what a policy sees of the JSON number text: a Lua number
-- when its double spells it, else a box | nil, message, "BAD_VALUE"
function M.exact(text)
  if type(text) ~= "string" then error("exact: a JSON number text expected, got " .. type(text), 2) end
  if not is_number_text(text) then return nil, "not a JSON number: " .. text:sub(1, 40), "BAD_VALUE" end
  number_engine = number_engine or assert(core.new_engine())
  local doc, err = number_engine:parse(text)
  if not doc then return nil, err, "BAD_VALUE" end
  local node = doc:root()
  local exact, xerr = node:exact()
  local v = exact and box(exact) or node:value()
  doc:free()
  if exact == nil then return nil, xerr, "BAD_VALUE" end
  return v
end
local math_type = math.type -- nil under LuaJIT: every number is a double there

local escapes = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}
for b = 0, 31 do
  local c = string.char(b)
  if not escapes[c] then escapes[c] = string.format("\\u%04x", b) end
end

-- Whether s has a byte quote must escape: below 0x20, '"' or '\\' (the
-- pattern's %c also finds 0x7F, which stays as it is).  Most strings have
-- none.
-- LuaJIT compiles a loop over string.byte but not a pattern find (a find
-- with a class costs it about 400 ns a string, the loop 70); Lua 5.4 is the
-- other way round.
local has_special
if rawget(_G, "jit") then
  local byte = string.byte
  has_special = function(s)
    for i = 1, #s do
      local b = byte(s, i)
      if b < 32 or b == 34 or b == 92 then return true end
    end
    return false
  end
else
  has_special = function(s) return s:find('[%c"\\]') ~= nil end
end

-- Appends s as a JSON string to out: the quotes and s as pieces of their
-- own (joining them here would make a string per string, which LuaJIT
-- interns); most strings need no escape: one scan, no gsub.
local function quote(out, s)
  local n = #out
  if has_special(s) then s = s:gsub('[%c"\\]', function(c) return escapes[c] or c end) end
  out[n + 1], out[n + 2], out[n + 3] = '"', s, '"'
end

local function is_array(t)
  if M.is_array_mt(getmetatable(t)) then return true, #t end
  local n, max = 0, 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then return false end
    n = n + 1
    if k > max then max = k end
  end
  if n == 0 then return false end
  if max ~= n then return nil, "sparse array (keys 1.." .. max .. " with " .. n .. " values)" end
  return true, n
end

local encode_value

local function encode_table(t, out, depth)
  local arr, n = is_array(t)
  if arr == nil then return nil, n end
  if arr then
    out[#out + 1] = "["
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      local ok, err = encode_value(t[i], out, depth + 1)
      if not ok then return nil, err end
    end
    out[#out + 1] = "]"
    return true
  end
  out[#out + 1] = "{"
  local first = true
  for k, v in pairs(t) do
    if type(k) ~= "string" then
      return nil, "object key of type " .. type(k) .. " (keys must all be strings, or exactly 1..n)"
    end
    if not first then out[#out + 1] = "," end
    first = false
    quote(out, k)
    out[#out + 1] = ":"
    local ok, err = encode_value(v, out, depth + 1)
    if not ok then return nil, err end
  end
  out[#out + 1] = "}"
  return true
end

encode_value = function(v, out, depth)
  if depth > MAX_DEPTH then return nil, "nested deeper than " .. MAX_DEPTH .. " (a cycle?)" end
  local tv = type(v)
  if v == nil or (M.null ~= nil and v == M.null) then
    out[#out + 1] = "null"
  elseif v == cjson_empty_array and v ~= nil then
    out[#out + 1] = "[]"
  elseif tv == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif tv == "number" then
    if math_type and math_type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    else
      local s, err = core.format_number(v)
      if not s then return nil, err end
      out[#out + 1] = s
    end
  elseif tv == "string" then
    quote(out, v)
  elseif tv == "table" and getmetatable(v) == M.exact_mt then
    if type(v.text) ~= "string" or not is_number_text(v.text) then
      return nil, "an exact number box must hold a JSON number text"
    end
    out[#out + 1] = v.text
  elseif tv == "table" then
    return encode_table(v, out, depth)
  else
    return nil, "cannot encode a " .. tv .. " as JSON"
  end
  return true
end

--- copy(v) -> a deep copy of a Lua value (tables copied, array marks kept,
-- shared and cyclic tables stay shared and cyclic in the copy)
function M.copy(v, seen)
  if type(v) ~= "table" or getmetatable(v) == M.exact_mt then return v end -- a box is a value
  seen = seen or {}
  if seen[v] then return seen[v] end
  local mt = getmetatable(v)
  local c = setmetatable({}, M.is_array_mt(mt) and mt or nil)
  seen[v] = c
  for k, x in pairs(v) do c[M.copy(k, seen)] = M.copy(x, seen) end
  return c
end

-- The walk above in Lua; under Lua 5.4 the C-API binding has the same rules
-- in C, in one walk (core_c.c; spec/value_spec.lua holds both to the same
-- bytes), which is what encode uses there.
local function encode_lua(v)
  local out = {}
  local ok, err = encode_value(v, out, 0)
  if not ok then return nil, err, "BAD_VALUE" end
  return table.concat(out)
end
M.encode_lua = encode_lua

local encode_c = core.encoder and core.encoder(M.null, M.array_mt, M.exact_mt, cjson_array_mts, cjson_empty_array)

--- encode(v) -> JSON text | nil, message, "BAD_VALUE"
M.encode = encode_c or encode_lua

return M
