--- toolgate.registry: trusted tool registries, loaded in Lua, looked up in C.
--
-- A snapshot is built from one or more sources (files or texts) in any of
-- the formats users have:
--   native     {"toolgate": 1, "server": "fs", "tools": [{"name", "description",
--              "input_schema", "output_schema", "deterministic", "risk",
--              "scopes", "effects", "contract": {...extras}, "annotations"}]}
--   openai     [{"type": "function", "function": {"name", "description", "parameters"}}]
--   anthropic  [{"name", "description", "input_schema"}]
--   mcp        a tools/list result {"tools": [{"name", "inputSchema", "outputSchema",
--              "annotations", ...}]}, bare, wrapped in its JSON-RPC response,
--              or as recorded by examples/registries/record-mcp.mjs (with "server")
-- Every tool gets a server ("" when none is known), a name, compiled input
-- and output schemas, a contract (deterministic, risk, scopes, effects,
-- extras) and a pin.  Loading either builds the whole snapshot or fails:
-- a bad registry never half-loads.
--
-- Load-time findings, each reported by `toolgate registry lint`:
--   collision   one name on several servers
--   shadowing   a name a more trusted (or earlier) source already owns,
--               registered by a less trusted (or later) one
--   confusable  names that differ only by case or by '-' versus '_'
--   bad_name    a name outside ^[A-Za-z0-9_.-]{1,128}$
--   schema      a schema toolgate cannot compile (unsupported keyword, ...)
-- The settings on_<kind> = "error" | "reject" | "allow" say whether a
-- finding fails the load, makes calls to the tools concerned a reject, or
-- is only reported.  Schema problems always fail a load.
-- @module toolgate.registry

local core = require "toolgate.core"
local documents = require "toolgate.documents"
local json = require "toolgate.json"
local mcp_headers = require "toolgate.mcp.headers"
local suggest = require "toolgate.suggest"
local value = require "toolgate.value"

local M = {}

M.DEFAULTS = {
  closed = true,            -- closed-world objects (docs/rung.md, "Closed world")
  assert_formats = false,   -- format is an annotation unless asked
  ignore_keywords = {},     -- extra schema keywords to treat as annotations
  annotation_formats = {},  -- with assert_formats: formats to leave unchecked instead of failing the load
  on_collision = "allow",
  on_shadowing = "reject",
  on_confusable = "allow",
  on_bad_name = "reject",
  resolvers = {},           -- x-toolgate-canonical "id": name -> {alias = id} or function(id, tool)
  tools = {},               -- ["server/tool"] = MCP annotations and / or contract fields the policy gives it
}

-- What a policy may give a tool in registry.tools: MCP's annotations (for
-- a server that declares none) and a contract's fields.
local ANNOTATION_KEYS = { readOnlyHint = "boolean", destructiveHint = "boolean", idempotentHint = "boolean",
  openWorldHint = "boolean", title = "string" }
local GIVEN_KEY_NAMES = { "deterministic", "destructiveHint", "effects", "idempotentHint", "openWorldHint",
  "readOnlyHint", "risk", "scopes", "title" }

local FINDING_KINDS = { "collision", "shadowing", "confusable", "bad_name" }

-- The call-time code and reason of each kind, in the order they are tried.
local REFUSALS = {
  { "shadowing", "SHADOWED", "shadows a tool of the same name on a more trusted or earlier server" },
  { "collision", "COLLISION", "shares its name with tools on other servers" },
  { "confusable", "CONFUSABLE", "has a name confusable with another tool's" },
  { "bad_name", "BAD_TOOL_NAME", "has a name outside ^[A-Za-z0-9_.-]{1,128}$" },
}
local ACTIONS = { error = true, reject = true, allow = true }

local NATIVE_TOP_KEYS = { toolgate = true, server = true, tools = true }
local NATIVE_TOOL_KEYS = {
  server = true, name = true, title = true, description = true,
  input_schema = true, inputSchema = true, output_schema = true, outputSchema = true,
  annotations = true, deterministic = true, risk = true, scopes = true, effects = true,
  contract = true,
}

local ACTION_NAMES = { "allow", "error", "reject" }

local function kind_of_value(v)
  return type(v) == "string" and string.format("%q", v) or "a " .. type(v)
end

--- check_settings(opts) -> settings | nil, setting, message: the defaults
-- overlaid with opts, each setting of its kind (a policy file's registry
-- section is checked here, and its mistakes come back as data).
function M.check_settings(opts)
  local s = {}
  for k, v in pairs(M.DEFAULTS) do s[k] = v end
  for k, v in pairs(opts or {}) do
    if M.DEFAULTS[k] == nil then
      return nil, tostring(k), "is not a registry setting" .. suggest.hint(k, suggest.sorted_keys(M.DEFAULTS))
    end
    s[k] = v
  end
  for _, k in ipairs({ "closed", "assert_formats" }) do
    if type(s[k]) ~= "boolean" then return nil, k, "must be true or false, not " .. kind_of_value(s[k]) end
  end
  for _, kind in ipairs(FINDING_KINDS) do
    local v = s["on_" .. kind]
    if not ACTIONS[v] then
      return nil, "on_" .. kind, 'must be "error", "reject" or "allow", not ' .. kind_of_value(v)
        .. suggest.hint(v, ACTION_NAMES)
    end
  end
  for _, list in ipairs({ "ignore_keywords", "annotation_formats" }) do
    if type(s[list]) ~= "table" then return nil, list, "must be a list" end
    local n = 0
    for i, name in pairs(s[list]) do
      n = n + 1
      if type(i) ~= "number" then return nil, list, "must be a list" end
      if type(name) ~= "string" then return nil, list, "must hold strings" end
    end
    if n ~= #s[list] then return nil, list, "must be a list" end
  end
  if type(s.resolvers) ~= "table" then return nil, "resolvers", "must be a table" end
  if type(s.tools) ~= "table" then return nil, "tools", "must be a table of \"server/tool\" = {...}" end
  for key, given in pairs(s.tools) do
    local at = string.format("tools[%q]", tostring(key))
    if type(key) ~= "string" or not key:find("./[^/]+$") then
      return nil, at, "must name a tool as \"server/tool\""
    end
    if type(given) ~= "table" or next(given) == nil then
      return nil, at, "must be a table of annotations (readOnlyHint = true, ...) or contract fields (risk = ...)"
    end
    local contract = {}
    for k, v in pairs(given) do
      if ANNOTATION_KEYS[k] then
        if type(v) ~= ANNOTATION_KEYS[k] then return nil, at .. "." .. k, "must be a " .. ANNOTATION_KEYS[k] end
      elseif k == "deterministic" or k == "risk" or k == "scopes" or k == "effects" then
        contract[k] = v
      else
        return nil, at, "has " .. kind_of_value(k) .. ", neither an MCP annotation nor a contract field"
          .. suggest.hint(k, GIVEN_KEY_NAMES)
      end
    end
    local ok, why = M.check_contract(contract)
    if not ok then return nil, at, why end
  end
  return s
end

--- Settings: defaults overlaid with what the caller gives; misuse raises.
function M.settings(opts)
  local s, key, msg = M.check_settings(opts)
  if not s then error("registry settings: " .. key .. " " .. msg, 3) end
  return s
end

-- Reading one source into a list of tool descriptions -------------------------

local function fail(source, msg, code, where)
  return nil, source.label .. ": " .. msg .. (where and (" (" .. where .. ")") or ""), code or "BAD_REGISTRY"
end

local function str_field(node, key)
  local v = node:get(key)
  if v and v:type() == "string" then return v:value() end
  return nil
end

local function detect(root)
  local t = root:type()
  if t == "array" then
    local first = root:at(1)
    if not first then return "openai" end -- an empty list: no tools in any format
    if first:type() ~= "object" then return nil end
    if first:get("function") then return "openai" end
    if first:get("input_schema") then return "anthropic" end
    if first:get("parameters") then return "openai" end
    return nil
  elseif t == "object" then
    if root:get("jsonrpc") or root:get("result") then return "mcp" end
    if root:get("toolgate") then return "native" end
    local tools = root:get("tools")
    if tools and tools:type() == "array" then
      local first = tools:at(1)
      if first and first:type() == "object" and first:get("inputSchema") and not root:get("toolgate") then
        return "mcp"
      end
      return "native"
    end
  end
  return nil
end

-- The contract fields the engine itself reads (the gate, the verifier,
-- self-consistency), and what each must be.  Any other field is the
-- policy's own (a custom stage may read it) and is passed on as it is.
local function is_list_of_strings(v)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  if mt ~= nil and mt ~= value.array_mt then return false end
  local n = 0
  for k, x in pairs(v) do
    if type(k) ~= "number" or type(x) ~= "string" then return false end
    n = n + 1
  end
  return n == #v
end

local CONTRACT_FIELDS = {
  { "deterministic", function(v) return type(v) == "boolean" end, "true or false" },
  { "risk", function(v) return type(v) == "string" end, "a string (a level of the policy's risk order)" },
  { "scopes", is_list_of_strings, "a list of strings" },
  { "effects", is_list_of_strings, "a list of strings" },
}

local function kind_of(v)
  if type(v) ~= "table" then return "a " .. type(v) end
  if getmetatable(v) == value.array_mt then return "a list holding something else" end
  return next(v) == nil and "an empty object" or "an object"
end

--- check_contract(c) -> true | nil, message: the fields the engine reads
-- have the kinds it reads them as.  A scopes given as a string, or effects
-- as an object, would otherwise vanish and grant the call.
function M.check_contract(c)
  if type(c) ~= "table" then return nil, "a contract must be a table, not a " .. type(c) end
  for _, f in ipairs(CONTRACT_FIELDS) do
    local v = c[f[1]]
    if v ~= nil and not f[2](v) then
      return nil, string.format("contract field %q must be %s, not %s", f[1], f[3], kind_of(v))
    end
  end
  return true
end

local function contract_of(tool_node)
  local c = {}
  for _, k in ipairs({ "deterministic", "risk", "scopes", "effects" }) do
    local v = tool_node:get(k)
    if v then c[k] = json.to_lua(v) end
  end
  local extra = tool_node:get("contract")
  if extra then
    for k, v in pairs(json.to_lua(extra)) do
      if c[k] == nil then c[k] = v end
    end
  end
  return c
end

local function read_native(source, root, out)
  for i = 1, root:len() do
    local k = root:key(i)
    if k == "messages" then
      return fail(source, "a request to a model (it has \"messages\"), not a registry: its tools are under "
        .. "\"tools\" (jq .tools FILE > tools.json; --registry tools.json)")
    end
    if not NATIVE_TOP_KEYS[k] then return fail(source, "unknown top-level key \"" .. k .. "\"") end
  end
  local default_server = source.server or str_field(root, "server") or ""
  local tools = root:get("tools")
  if not tools or tools:type() ~= "array" then return fail(source, "\"tools\" must be an array") end
  for i = 1, tools:len() do
    local t = tools:at(i)
    local where = "tool " .. i
    if t:type() ~= "object" then return fail(source, "each tool must be an object", nil, where) end
    for j = 1, t:len() do
      local k = t:key(j)
      if not NATIVE_TOOL_KEYS[k] then
        return fail(source, "unknown key \"" .. k .. "\" (contract extras go under \"contract\")", nil, where)
      end
    end
    local contract = t:get("contract")
    if contract and contract:type() ~= "object" then return fail(source, "\"contract\" must be an object", nil, where) end
    out[#out + 1] = {
      server = str_field(t, "server") or default_server,
      name = str_field(t, "name"),
      description = str_field(t, "description"),
      input = t:get("input_schema") or t:get("inputSchema"),
      output = t:get("output_schema") or t:get("outputSchema"),
      contract = contract_of(t),
      annotations = t:get("annotations") and json.to_lua(t:get("annotations")) or nil,
      where = where,
    }
  end
  return true
end

local function read_mcp(source, root, out)
  local result = root:get("result") or root
  local server = source.server or str_field(root, "server")
  if not server then
    return fail(source, "an MCP tools/list result needs its server's name (give it as SERVER=FILE)")
  end
  local tools = result:get("tools")
  if not tools or tools:type() ~= "array" then return fail(source, "\"tools\" must be an array") end
  for i = 1, tools:len() do
    local t = tools:at(i)
    local where = "tool " .. i
    if t:type() ~= "object" then return fail(source, "each tool must be an object", nil, where) end
    local input = t:get("inputSchema")
    if not input then return fail(source, "MCP tools must have an inputSchema", nil, where) end
    out[#out + 1] = {
      server = server,
      name = str_field(t, "name"),
      description = str_field(t, "description"),
      input = input,
      output = t:get("outputSchema"),
      contract = {},
      annotations = t:get("annotations") and json.to_lua(t:get("annotations")) or nil,
      where = where,
    }
  end
  return true
end

local function read_openai(source, root, out)
  for i = 1, root:len() do
    local t = root:at(i)
    local where = "tool " .. i
    if t:type() ~= "object" then return fail(source, "each tool must be an object", nil, where) end
    local fn = t:get("function") or t -- {"type":"function","function":{...}} or a bare function
    if fn:type() ~= "object" then return fail(source, "\"function\" must be an object", nil, where) end
    out[#out + 1] = {
      server = source.server or "",
      name = str_field(fn, "name"),
      description = str_field(fn, "description"),
      input = fn:get("parameters"),
      contract = {},
      where = where,
    }
  end
  return true
end

local function read_anthropic(source, root, out)
  for i = 1, root:len() do
    local t = root:at(i)
    local where = "tool " .. i
    if t:type() ~= "object" then return fail(source, "each tool must be an object", nil, where) end
    local input = t:get("input_schema")
    if not input then return fail(source, "Anthropic tools must have an input_schema", nil, where) end
    out[#out + 1] = {
      server = source.server or "",
      name = str_field(t, "name"),
      description = str_field(t, "description"),
      input = input,
      contract = {},
      where = where,
    }
  end
  return true
end

local READERS = { native = read_native, mcp = read_mcp, openai = read_openai, anthropic = read_anthropic }

-- The tools of one parsed source into out; doc, err, code, offset are what
-- the parse gave, text the bytes it read (for saying a file is YAML).
local function read_parsed(source, k, out, doc, err, code, offset, text)
  if not doc then
    -- the code is the caller's to print, once
    return nil, source.label .. ": " .. (text and documents.looks_like_yaml(text) and "not JSON (YAML?): " or "")
      .. (offset and ("at byte " .. offset .. ": ") or "") .. err, code
  end
  local root = doc:root()
  local format = source.format or "auto"
  if format == "auto" then format = detect(root) end
  local reader = READERS[format]
  if not reader then
    return fail(source, "not a registry in any known format (native, openai, anthropic, mcp)", "BAD_REGISTRY")
  end
  local first = #out + 1
  local ok, msg, c = reader(source, root, out)
  if not ok then return nil, msg, c end
  for i = first, #out do
    local t = out[i]
    if not t.name then return fail(source, "a tool needs a string \"name\"", nil, t.where) end
    local good, why = M.check_contract(t.contract)
    if not good then return fail(source, string.format("tool %q: %s", t.name, why), "BAD_CONTRACT", t.where) end
    t.source, t.source_label, t.format, t.doc = k, source.label, format, doc
    t.trusted = source.trusted ~= false
  end
  return true
end

-- The sources a compiled registry image holds (core/tg_image.c), each read
-- as the file it was compiled from: the same tools, labels and findings.
-- A server given with the image names the server of the sources compiled
-- without one; it cannot rename one compiled with another.
local function read_image(source, k, out, img)
  local ok, err, code = img:check_sources()
  if not ok then return nil, source.label .. ": " .. err, code end
  if source.format and source.format ~= "auto" then
    return fail(source, "a registry image carries its sources' formats; give it without format")
  end
  for i = 1, img:count() do
    local s = img:source(i)
    if source.server and s.server and s.server ~= source.server then
      return fail(source, string.format("its source %s was compiled for server %q, not %q", s.label, s.server,
        source.server))
    end
    local sub = { label = s.label, server = s.server or source.server, format = s.format,
                  trusted = s.trusted and source.trusted ~= false }
    local doc, perr, pcode, offset = img:parse(i)
    local good, msg, c = read_parsed(sub, k .. "." .. i, out, doc, perr, pcode, offset)
    if not good then return nil, msg, c end
  end
  return true
end

local function read_source(engine, source, k, out)
  local text = source.text
  if not text then
    local f, err = io.open(source.path, "rb")
    if not f then return nil, "cannot read registry " .. tostring(err), "UNREADABLE" end
    -- a file past the limit is refused before it is read into memory
    local size, max = f:seek("end"), engine:limits().max_registry_bytes
    if size and size > max then
      f:close()
      return nil, string.format("%s: registry of %d bytes is larger than max_registry_bytes (%d)", source.label,
        size, max), "REGISTRY_TOO_LARGE"
    end
    f:seek("set")
    -- an image is mapped, not read: its pages are shared by every process that maps it
    if core.is_image(f:read(8) or "") then
      f:close()
      local img, ierr, icode = engine:image_map(source.path)
      if not img then return nil, source.label .. ": " .. ierr, icode end
      return read_image(source, k, out, img)
    end
    f:seek("set")
    text = f:read("*a")
    f:close()
  elseif core.is_image(text) then
    local img, ierr, icode, offset = engine:image_open(text)
    if not img then
      return nil, source.label .. ": " .. (offset and ("at byte " .. offset .. ": ") or "") .. ierr, icode
    end
    return read_image(source, k, out, img)
  end
  local doc, err, code, offset = engine:parse_registry(text)
  return read_parsed(source, k, out, doc, err, code, offset, text)
end

-- split_source("SERVER=PATH" or "PATH") -> server | nil, path
function M.split_source(s)
  local server, path = s:match("^([^=/]+)=(.+)$")
  if server then return server, path end
  return nil, s
end

-- The fields of a source given as a table, and their kinds.
M.SOURCE_FIELDS = { path = "string", text = "string", server = "string", format = "string", trusted = "boolean",
                    label = "string" }
local SOURCE_FORMATS = { "anthropic", "auto", "mcp", "native", "openai" }

--- check_source(s) -> true | nil, field | nil, message: s is a source a
-- registry can be loaded from (a path, "SERVER=PATH", or a table with a
-- path or a text and the fields of SOURCE_FIELDS).
function M.check_source(s)
  if type(s) == "string" then
    if s == "" then return nil, nil, "must not be empty" end
    return true
  end
  if type(s) ~= "table" then
    return nil, nil, 'must be a path, "SERVER=PATH" or a table {path=, server=, trusted=}, not a ' .. type(s)
  end
  for _, k in ipairs(suggest.sorted_keys(s)) do
    local kind = M.SOURCE_FIELDS[k]
    if not kind then return nil, k, "is not a field of a source" .. suggest.hint(k, suggest.sorted_keys(M.SOURCE_FIELDS)) end
    if type(s[k]) ~= kind then return nil, k, "must be a " .. kind .. ", not a " .. type(s[k]) end
  end
  for k in pairs(s) do
    if type(k) ~= "string" then return nil, nil, "must be a table of named fields (path, server, ...)" end
  end
  if s.format then
    local known = false
    for _, f in ipairs(SOURCE_FORMATS) do known = known or f == s.format end
    if not known then
      return nil, "format", string.format("%q is not a registry format (%s)", s.format, table.concat(SOURCE_FORMATS, ", "))
        .. suggest.hint(s.format, SOURCE_FORMATS)
    end
  end
  if not (s.path or s.text) then return nil, nil, "needs a path or a text" end
  return true
end

-- Normalizes a source given as a path, "SERVER=PATH", or a table.
local function normalize_source(s)
  local ok, field, msg = M.check_source(s)
  if not ok then error("registry sources: " .. (field and field .. " " or "") .. msg, 3) end
  if type(s) == "string" then
    local server, path = M.split_source(s)
    return { path = path, server = server, label = path }
  end
  local copy = {}
  for k, v in pairs(s) do copy[k] = v end
  copy.label = copy.label or copy.path or "<registry text>"
  return copy
end

-- Normalization plans (x-toolgate-canonical) ----------------------------------

local NORM_OPS = { trim = true, lower = true, path = true, id = true }

local function escape_segment(key)
  return (key:gsub("~", "~0"):gsub("/", "~1"))
end

-- Resolves a local $ref ("#", "#/a/b") inside the schema's own document.
local function resolve_ref(root, ref)
  if ref == "#" then return root end
  local ptr = ref:match("^#(/.*)$")
  if not ptr then return nil end
  local node = root
  for seg in ptr:gmatch("/([^/]*)") do
    seg = seg:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
    seg = seg:gsub("~1", "/"):gsub("~0", "~")
    if not node then return nil end
    if node:type() == "array" then node = node:at((tonumber(seg) or -1) + 1) else node = node:get(seg) end
  end
  return node
end

-- Walks a schema the way instances are walked (properties, items, ...;
-- in-place through allOf/anyOf/oneOf/$ref) and collects every
-- x-toolgate-canonical as {pattern = instance pointer with "*", ops = {...}}.
local function collect_norm_rules(node, ptr, root, rules, seen, depth)
  if depth > 64 or node:type() ~= "object" then return true end
  local canon = node:get("x-toolgate-canonical")
  if canon then
    local ops = {}
    if canon:type() == "string" then
      ops[1] = canon:value()
    elseif canon:type() == "array" then
      for i = 1, canon:len() do ops[i] = canon:at(i):value() end
    end
    if #ops == 0 then return nil, "x-toolgate-canonical must be a name or a list of names" end
    for _, op in ipairs(ops) do
      if not NORM_OPS[op] then
        return nil, string.format("x-toolgate-canonical: unknown normalization %q (trim, lower, path, id)", tostring(op))
      end
    end
    local resolver = node:get("x-toolgate-resolver")
    if resolver and resolver:type() ~= "string" then return nil, "x-toolgate-resolver must be a string" end
    rules[#rules + 1] = { pattern = ptr, ops = ops, resolver = resolver and resolver:value() }
  end
  local function sub(child, p)
    if child then
      local ok, err = collect_norm_rules(child, p, root, rules, seen, depth + 1)
      if not ok then return nil, err end
    end
    return true
  end
  local props = node:get("properties")
  if props and props:type() == "object" then
    for i = 1, props:len() do
      local ok, err = sub(props:at(i), ptr .. "/" .. escape_segment(props:key(i)))
      if not ok then return nil, err end
    end
  end
  for _, k in ipairs({ "additionalProperties", "additionalItems" }) do
    local ok, err = sub(node:get(k), ptr .. "/*")
    if not ok then return nil, err end
  end
  local pp = node:get("patternProperties")
  if pp and pp:type() == "object" then
    for i = 1, pp:len() do
      local ok, err = sub(pp:at(i), ptr .. "/*")
      if not ok then return nil, err end
    end
  end
  local items = node:get("items")
  if items and items:type() == "array" then
    for i = 1, items:len() do
      local ok, err = sub(items:at(i), ptr .. "/" .. (i - 1))
      if not ok then return nil, err end
    end
  elseif items then
    local ok, err = sub(items, ptr .. "/*")
    if not ok then return nil, err end
  end
  local prefix = node:get("prefixItems")
  if prefix and prefix:type() == "array" then
    for i = 1, prefix:len() do
      local ok, err = sub(prefix:at(i), ptr .. "/" .. (i - 1))
      if not ok then return nil, err end
    end
  end
  for _, k in ipairs({ "allOf", "anyOf", "oneOf" }) do
    local list = node:get(k)
    if list and list:type() == "array" then
      for i = 1, list:len() do
        local ok, err = sub(list:at(i), ptr)
        if not ok then return nil, err end
      end
    end
  end
  local ref = node:get("$ref")
  if ref and ref:type() == "string" and not seen[ref:value() .. "@" .. ptr] then
    seen[ref:value() .. "@" .. ptr] = true
    local ok, err = sub(resolve_ref(root, ref:value()), ptr)
    if not ok then return nil, err end
  end
  return true
end

-- The tool's normalization plan, or nil when its schema names none, and the
-- "id" rules that a policy's Lua function resolves (classification asks the
-- function, plan by plan, and adds what it says as aliases).
-- resolvers: the policy's resolvers, name -> {alias = canonical id} (compiled
-- into the plan) or name -> function(id, tool) -> canonical id.
local function norm_plan(engine, schema, resolvers)
  -- (the core says whether the keyword is there at all: most schemas have none to walk for)
  if not schema or not schema:has_key("x-toolgate-canonical") then return nil end
  local rules = {}
  local ok, err = collect_norm_rules(schema, "", schema, rules, {}, 0)
  if not ok then return nil, err end
  if #rules == 0 then return nil end
  local functions, only = 0, nil
  for name, r in pairs(resolvers or {}) do
    if type(r) == "function" then functions, only = functions + 1, name end
  end
  local norm = assert(engine:norm())
  local fn_rules = {}
  for _, r in ipairs(rules) do
    local where = "x-toolgate-canonical at " .. (r.pattern == "" and "/" or r.pattern)
    local added, aerr = norm:add_rule(r.pattern, r.ops)
    if not added then return nil, where .. ": " .. aerr end
    local has_id, pre = false, {}
    for _, op in ipairs(r.ops) do
      if op == "id" then has_id = true else pre[#pre + 1] = op end
    end
    if has_id then
      local name = r.resolver
      if name and (resolvers or {})[name] == nil then
        return nil, where .. ": no resolver named " .. string.format("%q", name) .. " in the policy"
      end
      if not name and functions > 1 then
        return nil, where .. ": several resolver functions; name one with x-toolgate-resolver"
      end
      name = name or only
      if name and type(resolvers[name]) == "function" then
        -- the pattern's segments, unescaped, for finding the IDs in a call
        local segments = {}
        for seg in r.pattern:gmatch("/([^/]*)") do segments[#segments + 1] = (seg:gsub("~1", "/"):gsub("~0", "~")) end
        fn_rules[#fn_rules + 1] = { pattern = r.pattern, segments = segments, pre_ops = pre, resolver = name }
      end
    end
  end
  M.add_alias_tables(norm, resolvers)
  return norm, nil, rules, #fn_rules > 0 and fn_rules or nil
end

-- add_alias_tables(norm, resolvers): the resolvers that are alias tables
-- ({alias = canonical id}), compiled into the normalization plan norm.
function M.add_alias_tables(norm, resolvers)
  for _, aliases in pairs(resolvers or {}) do
    if type(aliases) == "table" then
      for from, to in pairs(aliases) do
        if type(from) == "string" and type(to) == "string" then assert(norm:add_alias(from, to)) end
      end
    end
  end
end

-- Findings over the whole tool list -------------------------------------------

local function tool_ref(t) return { server = t.server, name = t.name } end

local function is_bad_name(name)
  return #name > 128 or not name:match("^[A-Za-z0-9_%.%-]+$")
end

local function lint(tools)
  local findings = {}
  local by_name, by_folded = {}, {}
  for i, t in ipairs(tools) do
    t.flags = {}
    if is_bad_name(t.name) then
      t.flags.bad_name = true
      findings[#findings + 1] = {
        kind = "bad_name", tools = { tool_ref(t) },
        message = string.format("tool name %q on server %q is outside ^[A-Za-z0-9_.-]{1,128}$", t.name, t.server),
      }
    end
    by_name[t.name] = by_name[t.name] or {}
    table.insert(by_name[t.name], i)
    local folded = t.name:lower():gsub("%-", "_")
    by_folded[folded] = by_folded[folded] or {}
    table.insert(by_folded[folded], i)
  end

  -- names in order of first appearance, so findings come out stably
  local names, seen = {}, {}
  for _, t in ipairs(tools) do
    if not seen[t.name] then seen[t.name] = true; names[#names + 1] = t.name end
  end
  for _, name in ipairs(names) do
    local list = by_name[name]
    if #list > 1 then
      local refs = {}
      for _, i in ipairs(list) do refs[#refs + 1] = tool_ref(tools[i]) end
      for _, i in ipairs(list) do tools[i].flags.collision = true end
      findings[#findings + 1] = {
        kind = "collision", tools = refs,
        message = string.format("%d servers expose a tool named %q", #list, name),
      }
      -- the owner: the first tool from the most trusted source
      local owner = list[1]
      for _, i in ipairs(list) do
        if tools[i].trusted and not tools[owner].trusted then owner = i end
      end
      for _, i in ipairs(list) do
        if i ~= owner then
          tools[i].flags.shadowing = true
          findings[#findings + 1] = {
            kind = "shadowing", tools = { tool_ref(tools[i]), tool_ref(tools[owner]) },
            message = string.format("server %q registers %q, which server %q (%s) already owns",
              tools[i].server, name, tools[owner].server,
              tools[owner].trusted and not tools[i].trusted and "more trusted" or "loaded earlier"),
          }
        end
      end
    end
  end

  local folds, fseen = {}, {}
  for _, t in ipairs(tools) do
    local f = t.name:lower():gsub("%-", "_")
    if not fseen[f] then fseen[f] = true; folds[#folds + 1] = f end
  end
  for _, f in ipairs(folds) do
    local list, distinct = by_folded[f], {}
    for _, i in ipairs(list) do distinct[tools[i].name] = true end
    local n = 0
    for _ in pairs(distinct) do n = n + 1 end
    if n > 1 then
      local refs = {}
      for _, i in ipairs(list) do
        tools[i].flags.confusable = true
        refs[#refs + 1] = tool_ref(tools[i])
      end
      findings[#findings + 1] = {
        kind = "confusable", tools = refs,
        message = string.format("%d names differ only by case or '-'/'_' (%s)", n,
          (function()
            local ns = {}
            for name in pairs(distinct) do ns[#ns + 1] = string.format("%q", name) end
            table.sort(ns)
            return table.concat(ns, ", ")
          end)()),
      }
    end
  end
  return findings
end

-- The snapshot's content hash: XXH3-128 of the canonical form of what
-- decides calls -- each tool's identity, pin and contract, and the settings
-- its schemas were compiled with.
local function snapshot_hash(engine, tools, settings)
  local list = {}
  for _, t in ipairs(tools) do
    list[#list + 1] = { server = t.server, name = t.name, pin = t.pin, contract = t.contract }
  end
  table.sort(list, function(a, b)
    if a.server ~= b.server then return a.server < b.server end
    return a.name < b.name
  end)
  local function sorted(names)
    local copy = {}
    for i, k in ipairs(names) do copy[i] = k end
    table.sort(copy)
    return setmetatable(copy, value.array_mt)
  end
  -- (read as a registry is: a registry of 50,000 tools makes a text past max_input_bytes)
  local doc = assert(engine:parse_registry(assert(value.encode({
    tools = setmetatable(list, value.array_mt),
    settings = {
      closed = settings.closed, assert_formats = settings.assert_formats,
      ignore_keywords = sorted(settings.ignore_keywords),
      annotation_formats = sorted(settings.annotation_formats),
    },
  }))))
  local hash = assert(doc:root():hash())
  doc:free()
  return hash
end

-- What the policy's registry.tools gives each tool it names: annotations
-- over the tool's (what the server said stays in recorded_annotations: a
-- tools/list is compared with that), contract fields over its contract.
-- give(tools, by_key, loaded) -> true | nil, message (a name the registry
-- lacks: a typo would leave the tool as it was)
local function give(given_tools, by_key, loaded)
  local keys = {}
  for key in pairs(given_tools) do keys[#keys + 1] = key end
  table.sort(keys)
  for _, key in ipairs(keys) do
    local server, name = key:match("^(.*)/([^/]+)$")
    local t = by_key[server .. "\0" .. name]
    if not t then
      local known = {}
      for _, u in ipairs(loaded) do known[#known + 1] = u.server .. "/" .. u.name end
      table.sort(known)
      return nil, string.format("policy registry.tools[%q]: the registry holds no such tool%s", key,
        suggest.hint(key, known))
    end
    local annotations
    for k, v in pairs(given_tools[key]) do
      if ANNOTATION_KEYS[k] then
        annotations = annotations or value.copy(t.annotations or {})
        annotations[k] = v
      else
        t.contract = t.contract or {}
        t.contract[k] = v
      end
    end
    if annotations then
      t.recorded_annotations, t.annotations_given = t.annotations, true
      t.annotations = annotations
    end
  end
  return true
end

--- unannotated(tools) -> what a load says of the MCP tools that carry no
-- annotations: one line per server ("server S: N of M tools carry no
-- annotations ...: the policy gives them risk ..."), sorted; none when
-- every tool has some.  tools: a loaded snapshot's, their contracts final.
function M.unannotated(tools)
  local by_server, order = {}, {}
  for _, t in ipairs(tools) do
    if t.format == "mcp" then
      local s = by_server[t.server]
      if not s then
        s = { total = 0, bare = 0, risks = {} }
        by_server[t.server], order[#order + 1] = s, t.server
      end
      s.total = s.total + 1
      if t.annotations == nil then
        s.bare = s.bare + 1
        local c = t.contract or {}
        local what = c.risk and string.format("risk %q", c.risk) or "no risk"
        if c.scopes and #c.scopes > 0 then what = what .. " and scope " .. table.concat(c.scopes, ", ") end
        s.risks[what] = true
      end
    end
  end
  table.sort(order)
  local lines = {}
  for _, server in ipairs(order) do
    local s = by_server[server]
    if s.bare > 0 then
      local risks = {}
      for r in pairs(s.risks) do risks[#risks + 1] = r end
      table.sort(risks)
      lines[#lines + 1] = string.format("server %s: %d of %d tools carry no annotations (MCP's defaults read them "
        .. "as not read-only, destructive, open world); the policy gives them %s; a policy can give them "
        .. "annotations in registry.tools (docs/policies.md, \"Tools without annotations\")", server, s.bare,
        s.total, table.concat(risks, "; "))
    end
  end
  return lines
end

-- Whether a tool of t's server and name came from another source than t's.
local function loaded_from_other(loaded, t)
  for _, u in pairs(loaded) do
    if u.server == t.server and u.name == t.name and u.source ~= t.source then return true end
  end
  return false
end

--- Loads a registry snapshot from its sources, whole or not at all.
-- load(engine, sources, settings[, collect]) -> snapshot | nil, message, code
--   engine   a toolgate.core engine (limits apply to registry files too)
--   sources  list of paths, "SERVER=PATH" strings, or
--            {path=|text=, server=, format=, trusted=, label=}
--   collect  when true (lint), problems become findings and the snapshot
--            holds the tools that compiled; the load never fails on them.
function M.load(engine, sources, opts, collect)
  local settings = M.settings(opts)
  local schema_opts = {
    closed = settings.closed, assert_formats = settings.assert_formats,
    ignore_keywords = settings.ignore_keywords, annotation_formats = settings.annotation_formats,
  }
  local tools, errors = {}, {}
  for k, s in ipairs(sources) do
    local source = normalize_source(s)
    local ok, err, code = read_source(engine, source, k, tools)
    if not ok then
      if not collect then return nil, err, code end
      errors[#errors + 1] = { kind = "source", severity = "error", code = code, message = err }
    end
  end

  local reg = engine:registry()
  local loaded = {}
  for _, t in ipairs(tools) do
    -- the normalization plan first: a tool is added whole or not at all
    local norm, err, rules, fn_rules = norm_plan(engine, t.input, settings.resolvers)
    local index, code, pointer
    if err then
      code, pointer = "INVALID_SCHEMA", "/inputSchema"
    else
      t.norm, t.norm_rules, t.id_functions = norm, rules, fn_rules
      index, err, code, pointer = reg:add(t.server, t.name, t.description, t.input, t.output, schema_opts)
    end
    if index then
      local info = reg:tool(index)
      t.pin = info.pin
      t.index = index
      t.has_output = t.output ~= nil
      -- the Mcp-Param-* headers its calls carry over Streamable HTTP (x-mcp-header: toolgate.nginx checks them)
      if t.input and t.input:has_key("x-mcp-header") then
        t.param_headers, t.param_headers_error = mcp_headers.param_headers(json.to_lua(t.input))
      end
      t.input, t.output = nil, nil -- compiled into C
      loaded[index] = t
    else
      local where = (pointer and pointer ~= "") and (" at " .. pointer) or ""
      -- (the code is the caller's to print: it comes back beside the message)
      local msg = string.format("%s: tool %q on server %q: %s%s", t.source_label, t.name, t.server, err, where)
      if code == "DUPLICATE_TOOL" and t.server == "" and loaded_from_other(loaded, t) then
        -- two files whose tools name no server: most often two servers' lists
        msg = msg .. string.format("; if these files are two servers' tool lists, name each one's server: "
          .. "SERVER=FILE (e.g. --registry other=%s)", t.source_label)
      end
      if not collect then return nil, msg, code end
      errors[#errors + 1] = {
        kind = code == "DUPLICATE_TOOL" and "duplicate" or "schema", severity = "error", code = code,
        tools = { tool_ref(t) }, pointer = pointer, message = msg,
      }
    end
  end

  -- the parsed files are compiled into C; free them now rather than at some
  -- later collection
  local docs = {}
  for _, t in ipairs(tools) do
    if t.doc then docs[t.doc] = true end
    t.doc = nil
  end
  for doc in pairs(docs) do doc:free() end

  local findings = lint(loaded)
  -- a tool flagged with a kind the settings refuse carries the refusal
  for _, t in ipairs(loaded) do
    for _, f in ipairs(REFUSALS) do
      if not t.refuse and t.flags[f[1]] and settings["on_" .. f[1]] == "reject" then
        t.refuse = { code = f[2], message = string.format("tool %q on server %q %s", t.name, t.server, f[3]) }
      end
    end
  end
  local severity = { error = "error", reject = "reject", allow = "warning" }
  for _, f in ipairs(findings) do
    f.severity = severity[settings["on_" .. f.kind]]
    if f.severity == "error" and not collect then
      return nil, "registry " .. f.kind .. ": " .. f.message, "REGISTRY_" .. f.kind:upper()
    end
  end
  for _, e in ipairs(errors) do table.insert(findings, 1, e) end

  local by_key = {}
  for _, t in ipairs(loaded) do by_key[t.server .. "\0" .. t.name] = t end
  local ok, gerr = give(settings.tools, by_key, loaded)
  if not ok and not collect then return nil, gerr, "BAD_REGISTRY_SETTING" end
  return {
    engine = engine,
    c = reg,
    tools = loaded,
    findings = findings,
    settings = settings,
    hash = snapshot_hash(engine, loaded, settings),
    by_key = by_key,
  }
end

return M
