--- toolgate.json: reading parsed JSON (core nodes) from Lua.
--
-- Documents are parsed strictly by the C core; this module turns a node (or
-- a whole document) into plain Lua values when Lua code needs them: null
-- becomes toolgate.null (cjson.null), arrays carry toolgate.array_mt so
-- they encode back as arrays even when empty, and numbers are doubles
-- (integers beyond 2^53 are rounded: keep exact values in the C path).
-- @module toolgate.json

local value = require "toolgate.value"

local M = {}

local null, array_mt = value.null, value.array_mt

local function to_lua(node)
  local t = node:type()
  if t == "object" then
    local out = {}
    for i = 1, node:len() do out[node:key(i)] = to_lua(node:at(i)) end
    return out
  elseif t == "array" then
    local out = setmetatable({}, array_mt)
    for i = 1, node:len() do out[i] = to_lua(node:at(i)) end
    return out
  elseif t == "null" then
    return null
  end
  return node:value()
end

M.to_lua = to_lua

--- decode(engine, text) -> Lua value | nil, message, code, offset
function M.decode(engine, text)
  local doc, err, code, offset = engine:parse(text)
  if not doc then return nil, err, code, offset end
  return to_lua(doc:root())
end

return M
