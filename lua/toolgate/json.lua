--- toolgate.json: reading parsed JSON (core nodes) from Lua.
--
-- Documents are parsed strictly by the C core; this module turns a node (or
-- a whole document) into plain Lua values when Lua code needs them: null
-- becomes toolgate.null (cjson.null), arrays carry toolgate.array_mt so
-- they encode back as arrays even when empty, and numbers are doubles --
-- except a number whose double does not spell it (9007199254740993,
-- 12345678901234567890, 0.1000000000000000000001): that one becomes a box
-- (toolgate.value.exact_mt) holding its exact text, so policy functions
-- never see a rounded value as if it were the argument, and
-- toolgate.value.encode writes it back with every digit.
-- @module toolgate.json

local value = require "toolgate.value"

local M = {}

local null, array_mt, box = value.null, value.array_mt, value.box

-- to_lua(node) -> Lua value | nil, message, code (the core could not write
-- an exact number: out of memory)
local function to_lua(node)
  local t = node:type()
  if t == "object" or t == "array" then
    local object = t == "object"
    local out = object and {} or setmetatable({}, array_mt)
    for i = 1, node:len() do
      local v, err, code = to_lua(node:at(i))
      if err then return nil, err, code end
      out[object and node:key(i) or i] = v
    end
    return out
  elseif t == "null" then
    return null
  elseif t == "number" then
    local exact, err, code = node:exact()
    if exact then return box(exact) end
    if exact == nil then return nil, "an exact number could not be read: " .. tostring(err), code end
  end
  return node:value()
end

M.to_lua = to_lua

--- decode(engine, text) -> Lua value | nil, message, code[, offset]
function M.decode(engine, text)
  local doc, err, code, offset = engine:parse(text)
  if not doc then return nil, err, code, offset end
  return to_lua(doc:root())
end

return M
