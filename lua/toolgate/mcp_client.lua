--- toolgate.mcp_client: a minimal MCP client, enough to read a server's
-- tools (toolgate registry record), over a child process's stdio or a
-- Streamable HTTP endpoint, in either era of the protocol: 2026-07-28
-- (server/discover, then requests carrying the _meta envelope) or, when the
-- server does not speak it, 2025 (initialize, notifications/initialized).
--
--   local c = assert(mcp_client.start(argv, {timeout = 30}))        -- stdio
--   local c = assert(mcp_client.open_http(url, {timeout = 30, headers = {{"Authorization", "..."}}}))
--   local info = assert(c:connect())        -- {era =, protocol =, server_name =, has_tools =, fallback =}
--   local tools = assert(c:list_tools())   -- a JSON text: the tools array, every page
--   c:close()
--
-- connect() classifies the answer to server/discover as the 2026-07-28
-- clients do: a DiscoverResult whose supportedVersions names 2026-07-28, or
-- a -32022 whose data.supported does, is the 2026 era; any other answer
-- (whatever its code), a result that is no DiscoverResult, a stdio server's
-- silence, or an HTTP 400/404/405 without such an error is the 2025 era,
-- and initialize follows.  Over HTTP an answer of 401, 403 or 5xx, or no
-- answer, is an error, never a fallback.
--
-- Over stdio the server's standard error goes to ours, and a request of the
-- server's own (ping, roots/list, ...) is answered (ping with {}, the
-- others with -32601); over HTTP the server's requests on a stream are not
-- answered (a 2026 server sends none); notifications are skipped.  Every
-- wait is bounded by the timeout; failures return nil, message.
-- @module toolgate.mcp_client

local decision = require "toolgate.decision"
local mcp = require "toolgate.mcp"
local proc = require "toolgate.proc"

local M = {}

M.PROTOCOL_VERSION = "2025-06-18" -- what initialize asks for
M.MODERN_VERSION = "2026-07-28"
M.MAX_PAGES = 1000
M.DEFAULT_TIMEOUT = 30

-- the _meta every 2026-07-28 request carries
local ENVELOPE = '{"io.modelcontextprotocol/protocolVersion":"' .. M.MODERN_VERSION .. '",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"toolgate","version":"1"}}'

local Client = {}
Client.__index = Client

--- start(argv[, opts]) -> client | nil, message: a stdio server.  opts.timeout:
-- seconds to wait for each answer and for the server to exit.
function M.start(argv, opts)
  local p, err = proc.spawn(argv)
  if not p then return nil, "cannot start " .. tostring(argv[1]) .. ": " .. tostring(err) end
  return setmetatable({ p = p, next_id = 1, buf = "", timeout = opts and opts.timeout or M.DEFAULT_TIMEOUT,
    out_open = true, err_open = true, name = argv[1] }, Client)
end

--- open_http(url[, opts]) -> client | nil, message: a Streamable HTTP
-- server at url (http:// only).  opts.headers: {{name, value}...} every
-- request carries (Authorization, ...); opts.timeout as for start.
function M.open_http(url, opts)
  local http = require "toolgate.mcp.http_client"
  local u, err = http.parse_url(url)
  if not u then return nil, err end
  for _, h in ipairs(opts and opts.headers or {}) do
    local ok, herr = http.header_ok(h[1], h[2])
    if not ok then return nil, herr end
  end
  return setmetatable({ url = u, http = http, headers = opts and opts.headers or {}, next_id = 1,
    timeout = opts and opts.timeout or M.DEFAULT_TIMEOUT, name = url }, Client)
end

local function write_all(self, text)
  local from = 1
  local deadline = proc.now() + self.timeout
  while from <= #text do
    local n, err = proc.write(self.p.stdin, text, from)
    if not n then return nil, "the server's input closed: " .. tostring(err) end
    from = from + n
    if from <= #text then
      if proc.now() > deadline then return nil, "the server did not read its input for " .. self.timeout .. " s" end
      proc.poll({ self.p.stdin }, { proc.POLLOUT }, 100)
    end
  end
  return true
end

-- The next line from the server, passing its standard error on.
local function next_line(self, deadline)
  while true do
    local nl = self.buf:find("\n", 1, true)
    if nl then
      local line = self.buf:sub(1, nl - 1)
      self.buf = self.buf:sub(nl + 1)
      return line
    end
    if not self.out_open then return nil, "the server closed its output" end
    local left = deadline - proc.now()
    if left <= 0 then return nil, "no answer from the server in " .. self.timeout .. " s", "timeout" end
    local fds, evs = { self.p.stdout }, { proc.POLLIN }
    if self.err_open then fds[2], evs[2] = self.p.stderr, proc.POLLIN end
    local rev = proc.poll(fds, evs, math.floor(left * 1000) + 1)
    if rev and rev[2] and rev[2] ~= 0 then
      local chunk = proc.read(self.p.stderr)
      if chunk then io.stderr:write(chunk) elseif chunk == false then self.err_open = false end
    end
    if rev and rev[1] ~= 0 then
      local chunk = proc.read(self.p.stdout)
      if chunk then self.buf = self.buf .. chunk elseif chunk == false then self.out_open = false end
    end
  end
end

local function str(node) return node and node:type() == "string" and node:value() or nil end

-- Reads one message text: "mine", result node, doc (the caller frees it)
-- when it answers request id with a result; "mine", nil, message, failure
-- when it answers with an error or no result object (failure: {code =,
-- supported = {...}}); "request", id text, method for a request of the
-- server's; nil for anything else.
local function answer_of(text, id, method)
  local doc = text:find("%S") and decision.codec():parse(text)
  local msg = doc and doc:root()
  if not msg or msg:type() ~= "object" then
    if doc then doc:free() end
    return nil
  end
  local mid, mmethod = msg:get("id"), msg:get("method")
  if mmethod and mid then
    local idtext, name = assert(mid:canon(nil, "exact")), str(mmethod)
    doc:free()
    return "request", idtext, name
  end
  if not (mid and not mmethod and mid:type() == "number" and mid:value() == id) then
    doc:free()
    return nil
  end
  local e = msg:get("error")
  if e then
    local failure = { supported = {} }
    if e:type() == "object" then
      local code, data = e:get("code"), e:get("data")
      failure.code = code and code:type() == "number" and code:value() or nil
      local list = data and data:type() == "object" and data:get("supported")
      if list and list:type() == "array" then
        for i = 1, list:len() do failure.supported[i] = str(list:at(i)) end
      end
    end
    local etext = assert(e:canon(nil, "exact"))
    doc:free()
    return "mine", nil, method .. " failed: " .. etext, failure
  end
  local result = msg:get("result")
  if result and result:type() == "object" then return "mine", result, doc end
  doc:free()
  return "mine", nil, method .. ": the answer has no result object", {}
end

-- request over stdio
local function stdio_request(self, id, method, text)
  local ok, err = write_all(self, text .. "\n")
  if not ok then return nil, err, { transport = true } end
  local deadline = proc.now() + self.timeout
  while true do
    local line, lerr, why = next_line(self, deadline)
    if not line then return nil, method .. ": " .. lerr, { transport = true, timeout = why == "timeout" } end
    local kind, a, b, c = answer_of(line, id, method)
    if kind == "mine" then return a, b, c end
    if kind == "request" then
      write_all(self, (b == "ping" and ('{"jsonrpc":"2.0","id":' .. a .. ',"result":{}}')
        or mcp.error_reply(a, -32601, "toolgate registry record answers no requests")) .. "\n")
    end
  end
end

-- The headers of a request of the era self.era is in (nil: deciding it).
local function http_headers(self, method)
  local out = { { "Content-Type", "application/json" }, { "Accept", "application/json, text/event-stream" } }
  if self.era == "legacy" then
    if self.protocol then out[#out + 1] = { "MCP-Protocol-Version", self.protocol } end
    if self.session then out[#out + 1] = { "Mcp-Session-Id", self.session } end
  elseif method ~= "initialize" then
    out[#out + 1] = { "MCP-Protocol-Version", M.MODERN_VERSION }
    out[#out + 1] = { "Mcp-Method", method }
  end
  for _, h in ipairs(self.headers) do out[#out + 1] = h end
  return out
end

-- request over HTTP (id nil: a notification, answered 202)
local function http_request(self, id, method, text)
  local r, err = self.http.post(self.url, http_headers(self, method), text, { timeout = self.timeout })
  if not r then return nil, method .. ": " .. err, { transport = true } end
  local status, ctype = r.status, (r.headers["content-type"] or ""):lower()
  local where = method .. ": HTTP " .. status
  if method == "initialize" and status == 200 then self.session = r.headers["mcp-session-id"] end
  local coding = r.headers["content-encoding"]
  if coding and coding:lower() ~= "identity" then
    r:close()
    return nil, where .. ": an answer in Content-Encoding " .. coding .. ", which was not asked for", { status = status }
  end
  if status == 401 or status == 403 then
    r:close()
    return nil, where .. ": the server refuses the credentials (give them with --header-file)", { status = status }
  end
  if not id then
    r:close()
    if status >= 200 and status < 300 then return true end
    return nil, where .. " for a notification", { status = status }
  end
  local a, b, c
  if ctype:find("^text/event%-stream") and status == 200 then
    local ok, serr = self.http.events(r, function(data)
      local kind
      kind, a, b, c = answer_of(data, id, method)
      return kind == "mine"
    end)
    r:close()
    if not ok then return nil, where .. ": " .. serr, { status = status } end
  else
    local body, berr = r:read_all()
    r:close()
    if not body then return nil, where .. ": " .. berr, { status = status } end
    local kind
    if ctype:find("^application/json") then kind, a, b, c = answer_of(body, id, method) end
    if kind ~= "mine" then return nil, where .. " without a JSON-RPC answer to the request", { status = status } end
  end
  if c then c.status = status end
  if status >= 500 or (a and status ~= 200) then
    if a then b:free() end
    return nil, where .. (c and (": " .. b) or ""), { status = status }
  end
  return a, b, c or (not a and { status = status }) or nil
end

-- request(method, params_json) -> the result as a node of a document the
-- caller frees | nil, message, failure ({code =, supported =, status =,
-- transport =, timeout =})
function Client:request(method, params)
  local id = self.next_id
  self.next_id = id + 1
  local text = '{"jsonrpc":"2.0","id":' .. id .. ',"method":"' .. method .. '","params":' .. (params or "{}") .. "}"
  if self.url then return http_request(self, id, method, text) end
  return stdio_request(self, id, method, text)
end

local function notify(self, method)
  local text = '{"jsonrpc":"2.0","method":"' .. method .. '"}'
  if self.url then return http_request(self, nil, method, text) end
  return write_all(self, text .. "\n")
end

local function names(list, version)
  for _, v in ipairs(list) do
    if v == version then return true end
  end
  return false
end

local function has_tools(caps)
  return caps ~= nil and caps:type() == "object" and caps:get("tools") ~= nil
end

-- The era server/discover's answer shows: "modern", info | "legacy", why | nil, message (no fallback).
local function discover(self)
  local r, doc, failure = self:request("server/discover", '{"_meta":' .. ENVELOPE .. "}")
  if r then
    local list, out = r:get("supportedVersions"), {}
    if list and list:type() == "array" then
      for i = 1, list:len() do out[i] = str(list:at(i)) end
    end
    if not names(out, M.MODERN_VERSION) then
      doc:free()
      return "legacy", "server/discover was answered without " .. M.MODERN_VERSION .. " in supportedVersions"
    end
    local meta = r:get("_meta")
    local info = meta and meta:type() == "object" and meta:get("io.modelcontextprotocol/serverInfo")
    local found = { era = "modern", protocol = M.MODERN_VERSION, has_tools = has_tools(r:get("capabilities")),
      server_name = info and info:type() == "object" and str(info:get("name")) or nil }
    doc:free()
    return "modern", found
  end
  failure = failure or {}
  if failure.code == -32022 and names(failure.supported, M.MODERN_VERSION) then
    return "modern", { era = "modern", protocol = M.MODERN_VERSION, has_tools = true }
  end
  if self.url then
    -- over HTTP only an answer the server gave (400/404/405, or an error in a 200) means another era
    local s = failure.status
    if not s or s == 401 or s == 403 or s >= 500 or (s ~= 200 and s ~= 400 and s ~= 404 and s ~= 405) then
      return nil, doc
    end
  elseif failure.transport and not failure.timeout then
    return nil, doc
  end
  return "legacy", doc
end

-- The 2025 handshake: info | nil, message
local function initialize(self)
  local r, doc = self:request("initialize", '{"protocolVersion":"' .. M.PROTOCOL_VERSION
    .. '","capabilities":{},"clientInfo":{"name":"toolgate","version":"1"}}')
  if not r then return nil, doc end
  local info = r:get("serverInfo")
  local out = { era = "legacy", protocol = str(r:get("protocolVersion")),
    server_name = info and info:type() == "object" and str(info:get("name")) or nil,
    server_version = info and info:type() == "object" and str(info:get("version")) or nil,
    has_tools = has_tools(r:get("capabilities")) }
  doc:free()
  self.era, self.protocol = "legacy", out.protocol
  local ok, err = notify(self, "notifications/initialized")
  if not ok then return nil, err end
  return out
end

--- connect() -> {era = "modern"|"legacy", protocol =, server_name =,
-- has_tools =, fallback = why server/discover led to initialize} | nil, message
function Client:connect()
  local era, found = discover(self)
  if not era then return nil, found end
  if era == "modern" then
    self.era = "modern"
    return found
  end
  local info, err = initialize(self)
  if not info then return nil, err .. " (after " .. found .. ")" end
  info.fallback = found
  return info
end

--- initialize() -> the 2025 handshake alone, as connect() falls back to it.
function Client:initialize()
  return initialize(self)
end

--- list_tools() -> the tools of every page, as one JSON array text | nil, message
function Client:list_tools()
  local parts, cursor = {}, nil
  for _ = 1, M.MAX_PAGES do
    local params = cursor and ('"cursor":' .. cursor) or nil
    if self.era == "modern" then params = '"_meta":' .. ENVELOPE .. (params and ("," .. params) or "") end
    local r, doc = self:request("tools/list", "{" .. (params or "") .. "}")
    if not r then return nil, doc end
    local tools = r:get("tools")
    if not tools or tools:type() ~= "array" then
      doc:free()
      return nil, "tools/list: the result has no tools array"
    end
    for i = 1, tools:len() do parts[#parts + 1] = assert(tools:at(i):canon(nil, "exact")) end
    local nc = r:get("nextCursor")
    cursor = nc and nc:type() == "string" and nc:value() ~= "" and assert(nc:canon(nil, "exact")) or nil
    doc:free()
    if not cursor then return "[" .. table.concat(parts, ",") .. "]" end
  end
  return nil, "tools/list: more than " .. M.MAX_PAGES .. " pages"
end

--- close(): over stdio, closes the server's input and waits for it to exit
-- (SIGTERM, then SIGKILL, after the timeout each); over HTTP, ends the 2025
-- session the server gave, if any (DELETE, whose answer may be 405: a
-- server may keep its sessions).
function Client:close()
  if self.url then
    if self.session then
      local r = self.http.post(self.url, http_headers(self, "DELETE"), "", { timeout = self.timeout, method = "DELETE" })
      if r then r:close() end
      self.session = nil
    end
    return
  end
  proc.close(self.p.stdin)
  for _, sig in ipairs({ false, "TERM", "KILL" }) do
    if sig then proc.kill(self.p.pid, proc.signum(sig)) end
    local deadline = proc.now() + (sig == "KILL" and 5 or self.timeout)
    while proc.now() < deadline do
      if proc.wait(self.p.pid, true) then
        proc.close(self.p.stdout)
        proc.close(self.p.stderr)
        return
      end
      proc.poll({}, {}, 20)
    end
  end
end

return M
