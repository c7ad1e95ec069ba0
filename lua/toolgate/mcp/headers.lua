--- toolgate.mcp.headers: whether an HTTP request's MCP headers agree with
-- its body (MCP 2026-07-28, Streamable HTTP, "Standard Headers" and
-- "Schema Extension": MCP-Protocol-Version, Mcp-Method, Mcp-Name,
-- Mcp-Param-{Name}).  A router behind the gateway may route, or decide, by
-- these headers without reading the body, so a request whose headers say
-- something the body does not is refused (-32020, HTTP 400) and never
-- forwarded.
--
-- The rule, whatever era the request is of: every standard header present
-- must agree with the body (decoded from =?base64?...?= first), so whatever a
-- router trusts is what was decided.  Which headers must be present depends
-- on the era: a request of the modern era (its body claims a version in
-- params._meta) needs MCP-Protocol-Version equal to that claim, Mcp-Method,
-- and Mcp-Name for the methods that mirror a name; a legacy request (no
-- claim) needs none, but a header claiming a modern version for it is a
-- mismatch.  Mcp-Param-{Name} headers are those the tool's inputSchema
-- declares (x-mcp-header): one for each value the arguments carry, none for
-- a value they lack, none undeclared.  Notifications need no header (as the
-- SDK 2.4.0 server), but one present must agree.  Pure Lua: no nginx here.
-- @module toolgate.mcp.headers

local M = {}

--- The params member whose value Mcp-Name mirrors, per method (the SDK's
-- MCP_NAME_HEADER_SOURCE; tasks/* from the tasks extension).
M.NAME_SOURCE = {
  ["tools/call"] = "name", ["prompts/get"] = "name", ["resources/read"] = "uri",
  ["tasks/get"] = "taskId", ["tasks/update"] = "taskId", ["tasks/cancel"] = "taskId",
}

--- The newest legacy revision: a version header naming a later date claims
-- the modern era.
M.LAST_LEGACY = "2025-11-25"

local PREFIX, SUFFIX = "=?base64?", "?="
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local SEXTET = {}
for i = 1, 64 do SEXTET[B64:byte(i)] = i - 1 end

-- Canonical padded Base64 (the unused bits of the last sextet zero), or nil.
local function base64_decode(s)
  if #s % 4 ~= 0 then return nil end
  local pad = #s:match("=*$")
  if pad > 2 then return nil end
  local out = {}
  for i = 1, #s, 4 do
    local last = i + 3 == #s
    local a, b = SEXTET[s:byte(i)], SEXTET[s:byte(i + 1)]
    local c = (last and pad == 2) and 0 or SEXTET[s:byte(i + 2)]
    local d = (last and pad >= 1) and 0 or SEXTET[s:byte(i + 3)]
    if not (a and b and c and d) then return nil end
    if last and pad == 2 and b % 16 ~= 0 then return nil end
    if last and pad == 1 and c % 4 ~= 0 then return nil end
    local n = ((a * 64 + b) * 64 + c) * 64 + d
    local bytes = string.char(math.floor(n / 65536), math.floor(n / 256) % 256, n % 256)
    out[#out + 1] = last and bytes:sub(1, 3 - pad) or bytes
  end
  return table.concat(out)
end

-- Whether s is well-formed UTF-8 (no overlongs, surrogates, or past U+10FFFF).
local function utf8_valid(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local len
    local lo, hi = 0x80, 0xBF
    if c < 0x80 then len = 0
    elseif c >= 0xC2 and c <= 0xDF then len = 1
    elseif c == 0xE0 then len, lo = 2, 0xA0
    elseif c == 0xED then len, hi = 2, 0x9F
    elseif c >= 0xE1 and c <= 0xEF then len = 2
    elseif c == 0xF0 then len, lo = 3, 0x90
    elseif c >= 0xF1 and c <= 0xF3 then len = 3
    elseif c == 0xF4 then len, hi = 3, 0x8F
    else return false end
    for k = 1, len do
      local b = s:byte(i + k)
      if not b or b < (k == 1 and lo or 0x80) or b > (k == 1 and hi or 0xBF) then return false end
    end
    i = i + len + 1
  end
  return true
end

--- decode(value) -> the value a header carries | nil, why.  A value in the
-- sentinel =?base64?...?= (markers case-sensitive) is canonical Base64 of
-- UTF-8; any other value is itself, and must be visible ASCII, space or tab.
function M.decode(v)
  if #v >= #PREFIX + #SUFFIX and v:sub(1, #PREFIX) == PREFIX and v:sub(-#SUFFIX) == SUFFIX then
    local text = base64_decode(v:sub(#PREFIX + 1, -#SUFFIX - 1))
    if not text then return nil, "its =?base64?...?= value is not canonical Base64" end
    if not utf8_valid(text) then return nil, "its =?base64?...?= value is not UTF-8" end
    return text
  end
  if v:find("[^\t\32-\126]") then
    return nil, "it holds characters a header cannot carry plainly (send them as =?base64?...?=)"
  end
  return v
end

-- An RFC 9110 token.
local function is_token(s) return type(s) == "string" and s ~= "" and not s:find("[^%w!#$%%&'*+%-.^_`|~]") end

local HEADER_TYPES = { integer = true, string = true, boolean = true }
-- (values, not schemas: an "x-mcp-header" key in them is data)
local DATA_KEYS = { enum = true, const = true, default = true, examples = true }

local function path_text(path) return #path == 0 and "<root>" or table.concat(path, ".") end

--- param_headers(schema) -> list of {header =, lower =, path = {keys}, type =}
-- | nil, why: the Mcp-Param-{Name} headers a tool's inputSchema (a Lua
-- table) declares with "x-mcp-header".  A declaration is valid on an
-- integer, string or boolean property reached from the root through
-- "properties" alone, and its name is a token unique in the schema, case
-- aside; the spec has clients drop a tool with an invalid one, and the
-- gateway refuses its calls.
function M.param_headers(schema)
  local out, seen = {}, {}
  local function walk(node, path, reachable)
    local name = node["x-mcp-header"]
    if name ~= nil then
      local where = "x-mcp-header at " .. path_text(path)
      if not reachable or #path == 0 then return nil, where .. " is not on a property reached through properties alone" end
      if not is_token(name) then return nil, where .. " is not a header name (an RFC 9110 token)" end
      if not HEADER_TYPES[node.type] then return nil, where .. " is on a property that is not integer, string or boolean" end
      if seen[name:lower()] then return nil, where .. " repeats the name " .. name end
      seen[name:lower()] = true
      local copy = {}
      for i, k in ipairs(path) do copy[i] = k end
      out[#out + 1] = { header = name, lower = "mcp-param-" .. name:lower(), path = copy, type = node.type }
    end
    for k, v in pairs(node) do
      if type(v) == "table" and not DATA_KEYS[k] then
        if k == "properties" then
          for prop, sub in pairs(v) do
            if type(sub) == "table" then
              path[#path + 1] = tostring(prop)
              local ok, why = walk(sub, path, reachable)
              path[#path] = nil
              if not ok then return nil, why end
            end
          end
        else
          local ok, why = walk(v, path, false)
          if not ok then return nil, why end
        end
      end
    end
    return true
  end
  if type(schema) ~= "table" then return out end
  local ok, why = walk(schema, {}, true)
  if not ok then return nil, why end
  table.sort(out, function(a, b) return a.lower < b.lower end)
  return out
end

-- One header's value: nil (absent), the value, or false and why.
local function header(headers, name)
  local v = headers[name]
  if v == nil then return nil end
  if type(v) == "table" then return false, "more than one " .. name .. " header" end
  local text, why = M.decode(v)
  if not text then return false, "the " .. name .. " header is not valid: " .. why end
  return text
end

-- Whether a header's text says the body's value (per the property's type).
local function same_value(text, v, kind)
  if kind == "boolean" then return (v == true and text == "true") or (v == false and text == "false") end
  if kind == "integer" then
    return type(v) == "number" and text:match("^%-?%d+%.?%d*$") ~= nil and tonumber(text) == v
  end
  return type(v) == "string" and text == v
end

local function value_at(args, path)
  local node = args
  for _, k in ipairs(path) do
    if type(node) ~= "table" then return nil end
    node = node[k]
  end
  return node
end

local function show(v) return string.format("%q", tostring(v)) end

--- check(headers, msg) -> nil (they agree) | why (a mismatch: -32020).
-- headers: the request's headers, names in lower case, a repeated one a
-- list.  msg: what the body says:
--   batch            true for a JSON-RPC batch (legacy only: no standard header fits it)
--   request          true for a request (an id and a method)
--   method           the method, or nil (a response)
--   protocol_version the body's claim (params._meta), or nil
--   name             the value Mcp-Name mirrors (NAME_SOURCE), nil when absent
--   params           the Mcp-Param headers the tool declares (param_headers),
--                    or false and params_error for an invalid declaration
--   arguments()      a function giving the call's arguments (a Lua table);
--                    called only when a param header is declared or present
function M.check(headers, msg)
  local version, why = header(headers, "mcp-protocol-version")
  if version == false then return why end
  local method
  method, why = header(headers, "mcp-method")
  if method == false then return why end
  local name
  name, why = header(headers, "mcp-name")
  if name == false then return why end
  local claim = msg.protocol_version
  local modern_header = version ~= nil and version > M.LAST_LEGACY
  if msg.batch then
    if modern_header then return "MCP-Protocol-Version " .. show(version) .. " names a revision without batches" end
    if method or name then return "Mcp-Method and Mcp-Name cannot name the messages of a batch" end
  elseif claim ~= nil then
    if version == nil then
      if msg.request then return "the body claims protocol version " .. show(claim)
        .. " but the required MCP-Protocol-Version header is absent" end
    elseif version ~= claim then
      return "the MCP-Protocol-Version header names " .. show(version) .. " but the body claims " .. show(claim)
    end
  elseif modern_header and msg.request then
    return "the MCP-Protocol-Version header names " .. show(version)
      .. " but the body carries no params._meta protocol version"
  end
  local required = claim ~= nil and msg.request
  if method ~= nil and method ~= msg.method then
    return "the Mcp-Method header names " .. show(method) .. " but the body's method is " .. show(msg.method)
  elseif method == nil and required then
    return "the body's method is " .. show(msg.method) .. " but the required Mcp-Method header is absent"
  end
  local source = msg.method and M.NAME_SOURCE[msg.method]
  if name ~= nil then
    if not source then
      return "an Mcp-Name header on " .. show(msg.method) .. ", which has no name"
    elseif name ~= msg.name then
      return "the Mcp-Name header names " .. show(name) .. " but the body carries params." .. source .. "="
        .. show(msg.name)
    end
  elseif source and required and msg.name ~= nil then
    return "the body carries params." .. source .. "=" .. show(msg.name) .. " but the required Mcp-Name header is absent"
  end
  -- Mcp-Param-*: only those the tool declares, each as its argument says
  local given = {}
  for k in pairs(headers) do
    if type(k) == "string" and k:sub(1, 10) == "mcp-param-" then given[k] = true end
  end
  local declared = msg.params
  if declared == false then
    if next(given) or required then return "the tool's inputSchema " .. tostring(msg.params_error) end
    return nil
  end
  if not declared or #declared == 0 then
    local k = next(given)
    if k then return "an " .. k .. " header that the " .. (source and "tool's inputSchema" or "method")
      .. " does not declare" end
    return nil
  end
  local args = msg.arguments()
  for _, d in ipairs(declared) do
    local v = value_at(args, d.path)
    local text
    text, why = header(headers, d.lower)
    if text == false then return why end
    given[d.lower] = nil
    local present = v ~= nil and type(v) ~= "userdata" -- (a JSON null: as absent)
    if text == nil and present then
      return "the body carries arguments." .. path_text(d.path) .. "=" .. show(v) .. " but the Mcp-Param-" .. d.header
        .. " header is absent"
    elseif text ~= nil and not present then
      return "the Mcp-Param-" .. d.header .. " header names " .. show(text) .. " but the body carries no arguments."
        .. path_text(d.path)
    elseif text ~= nil and not same_value(text, v, d.type) then
      return "the Mcp-Param-" .. d.header .. " header names " .. show(text) .. " but the body carries arguments."
        .. path_text(d.path) .. "=" .. show(v)
    end
  end
  local k = next(given)
  if k then return "an " .. k .. " header that the tool's inputSchema does not declare" end
  return nil
end

--- check_bodyless(headers) -> nil | why: a request without a message (a
-- 2025 GET stream, DELETE) carries no header that names one: Mcp-Method,
-- Mcp-Name, Mcp-Param-* (nothing was decided for a router to trust).
function M.check_bodyless(headers)
  for k in pairs(headers) do
    if type(k) == "string" and (k == "mcp-method" or k == "mcp-name" or k:sub(1, 10) == "mcp-param-") then
      return "an " .. k .. " header on a request without a message"
    end
  end
  return nil
end

return M
