--- toolgate.mcp.http_client: the HTTP/1.1 client `toolgate registry record
-- --url` speaks to a Streamable HTTP MCP server: one POST per connection
-- (Connection: close) over a TCP socket of toolgate.proc, its answer read as
-- JSON or as an event stream.  http:// only: there is no TLS in toolgate.
--
--   local u = assert(http_client.parse_url("http://127.0.0.1:8080/mcp"))
--   local r = assert(http_client.post(u, {{"Accept", "application/json"}}, body, {timeout = 30}))
--   r.status, r.headers["content-type"]          -- names in lower case
--   local text = assert(r:read_all())             -- or http_client.events(r, on_event)
--   r:close()
--
-- Everything an answer can make it hold is bounded: the head
-- (MAX_HEAD_BYTES), the body (opts.max_body, default MAX_BODY_BYTES, for a
-- Content-Length, every chunk and a body read to its close alike), a chunk
-- size's digits, and the time (opts.timeout for the whole exchange).  An
-- answer that ends before its length, its last chunk or a blank line after
-- the head is an error, never a short body.  http_client.reader(source)
-- reads an answer from any function that returns the next bytes (the unit
-- tests give it hostile ones).
-- @module toolgate.mcp.http_client

local proc = require "toolgate.proc"

local M = {}

M.MAX_HEAD_BYTES = 65536
M.MAX_HEADERS = 200
M.MAX_BODY_BYTES = 64 * 1024 * 1024 -- toolgate.mcp's MAX_MESSAGE_BYTES, the stdio line limit
M.MAX_CHUNK_LINE = 1024
M.MAX_INTERIM = 10 -- 1xx answers skipped before the final one

local TOKEN = "^[!#$%%&'*+.^_`|~%w-]+$"

--- parse_url(url) -> {host =, port =, path =, authority =} | nil, message.
-- host is an IPv4 or IPv6 literal or a name (the socket takes literals and
-- localhost only); path keeps the query.
function M.parse_url(url)
  if type(url) ~= "string" then return nil, "a URL expected" end
  local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
  if not scheme then return nil, "not a URL: " .. url end
  scheme = scheme:lower()
  if scheme == "https" then
    return nil, "https:// is not supported (toolgate has no TLS): record over http://, "
      .. "e.g. on the server's host or through a local TLS tunnel"
  end
  if scheme ~= "http" then return nil, "only http:// URLs are supported, not " .. scheme .. "://" end
  local authority, path = rest:match("^([^/?#]*)([^#]*)")
  if authority:find("@", 1, true) then
    return nil, "no credentials in the URL: give them in a --header-file"
  end
  local host, port = authority:match("^%[([%x:.]+)%]:?(%d*)$")
  if not host then host, port = authority:match("^([%w.-]+):?(%d*)$") end
  if not host or host == "" then return nil, "no host in " .. url end
  port = port == "" and 80 or tonumber(port)
  if not port or port < 1 or port > 65535 then return nil, "bad port in " .. url end
  if path == "" then path = "/" elseif path:sub(1, 1) == "?" then path = "/" .. path end
  if path:find("[%c ]") then return nil, "a URL's path cannot hold spaces or control characters" end
  local shown = host:find(":", 1, true) and ("[" .. host .. "]") or host
  return { host = host, port = port, path = path, authority = port == 80 and shown or (shown .. ":" .. port) }
end

--- header_ok(name, value) -> true | nil, message: a field a request may carry
-- (a token name; a value without CR, LF or NUL).  The message never holds the value.
function M.header_ok(name, value)
  if type(name) ~= "string" or not name:find(TOKEN) then return nil, "not a header name: " .. tostring(name) end
  if type(value) ~= "string" or value:find("[%z\r\n]") then
    return nil, "the value of header " .. name .. " holds a line break or NUL"
  end
  return true
end

--- request_text(u, headers, body[, method]) -> the bytes of a POST (or
-- method) to u with the headers ({{name, value}...}, checked with
-- header_ok) and body.
function M.request_text(u, headers, body, method)
  local lines = { (method or "POST") .. " " .. u.path .. " HTTP/1.1", "Host: " .. u.authority,
    "Content-Length: " .. #body, "Connection: close" }
  for _, h in ipairs(headers) do
    local ok, err = M.header_ok(h[1], h[2])
    if not ok then return nil, err end
    lines[#lines + 1] = h[1] .. ": " .. h[2]
  end
  return table.concat(lines, "\r\n") .. "\r\n\r\n" .. body
end

-- An answer read from source() (the next bytes | nil at the end | nil, message).
local Reader = {}
Reader.__index = Reader

--- reader(source[, opts]) -> an answer whose head() and read() take bytes
-- from source.  opts.max_body bounds the body.
function M.reader(source, opts)
  return setmetatable({ source = source, buf = "", eof = false,
    max_body = opts and opts.max_body or M.MAX_BODY_BYTES, body_bytes = 0 }, Reader)
end

-- More bytes into buf: true | nil, message (at the end: nil, "end").
local function fill(self)
  if self.eof then return nil, "end" end
  local chunk, err = self.source()
  if chunk then
    self.buf = self.buf .. chunk
    return true
  end
  if err then return nil, err end
  self.eof = true
  return nil, "end"
end

-- The next line (CRLF or LF), at most limit bytes | nil, message (naming
-- the bound, default limit)
local function line(self, limit, what, bound)
  local too_long = what .. " longer than " .. (bound or limit) .. " bytes"
  while true do
    local nl = self.buf:find("\n", 1, true)
    if nl then
      if nl > limit + 1 then return nil, too_long end
      local l = self.buf:sub(1, nl - 1):gsub("\r$", "")
      self.buf = self.buf:sub(nl + 1)
      return l
    end
    if #self.buf > limit then return nil, too_long end
    local ok, err = fill(self)
    if not ok then
      return nil, err == "end" and ("the answer ended inside its " .. what) or err
    end
  end
end

-- One head: status, headers | nil, message
local function read_head(self)
  local budget = M.MAX_HEAD_BYTES
  local l, err = line(self, budget, "head")
  if not l then return nil, err end
  budget = budget - #l
  local status = l:match("^HTTP/1%.[01] (%d%d%d)")
  if not status then return nil, "not an HTTP/1.1 answer" end
  local headers, count = {}, 0
  while true do
    l, err = line(self, budget, "head", M.MAX_HEAD_BYTES)
    if not l then return nil, err end
    budget = budget - #l - 2
    if l == "" then break end
    count = count + 1
    if count > M.MAX_HEADERS then return nil, "more than " .. M.MAX_HEADERS .. " header fields" end
    local name, v = l:match("^([^:%s]+):[ \t]*(.-)[ \t]*$")
    if not name or not name:find(TOKEN) then return nil, "a malformed header field" end
    name = name:lower()
    if headers[name] and name == "content-length" and headers[name] ~= v then
      return nil, "two different Content-Length fields"
    end
    headers[name] = headers[name] and name ~= "content-length" and (headers[name] .. ", " .. v) or v
  end
  return tonumber(status), headers
end

--- head() -> true | nil, message: reads the status and the header fields
-- (self.status, self.headers) of the final answer, skipping 1xx ones, and
-- decides how its body ends.
function Reader:head()
  local status, headers
  for _ = 1, M.MAX_INTERIM + 1 do
    status, headers = read_head(self)
    if not status then return nil, headers end
    if status >= 200 then break end
  end
  if status < 200 then return nil, "more than " .. M.MAX_INTERIM .. " interim answers" end
  self.status, self.headers = status, headers
  local te, cl = headers["transfer-encoding"], headers["content-length"]
  if te then
    if cl then return nil, "both Transfer-Encoding and Content-Length" end
    if te:lower() ~= "chunked" then return nil, "an unsupported Transfer-Encoding: " .. te end
    self.mode, self.chunk_left = "chunked", 0
  elseif cl then
    if not cl:find("^%d+$") or #cl > 15 then return nil, "a malformed Content-Length" end
    self.mode, self.left = "length", tonumber(cl)
    if self.left > self.max_body then return nil, "a body longer than " .. self.max_body .. " bytes" end
  elseif status == 204 or status == 304 then
    self.mode, self.left = "length", 0
  else
    self.mode = "close"
  end
  return true
end

local function count(self, n)
  self.body_bytes = self.body_bytes + n
  if self.body_bytes > self.max_body then return nil, "a body longer than " .. self.max_body .. " bytes" end
  return true
end

-- Up to n bytes of the buffer, filling it when empty | nil, message
local function take(self, n)
  if self.buf == "" then
    local ok, err = fill(self)
    if not ok then return nil, err end
  end
  local piece = self.buf:sub(1, n)
  self.buf = self.buf:sub(#piece + 1)
  return piece
end

--- read() -> the next bytes of the body | false at its end | nil, message
function Reader:read()
  if self.done then return false end
  if self.mode == "length" then
    if self.left == 0 then
      self.done = true
      return false
    end
    local piece, err = take(self, self.left)
    if not piece then return nil, err == "end" and "the answer ended before its Content-Length" or err end
    self.left = self.left - #piece
    return piece
  elseif self.mode == "close" then
    local piece, err = take(self, M.MAX_BODY_BYTES)
    if not piece then
      if err ~= "end" then return nil, err end
      self.done = true
      return false
    end
    local ok, cerr = count(self, #piece)
    if not ok then return nil, cerr end
    return piece
  end
  if self.chunk_left == 0 then
    if self.chunk_seen then
      local l, err = line(self, 2, "chunk")
      if l ~= "" then return nil, l and "a chunk longer than its size" or err end
    end
    local l, err = line(self, M.MAX_CHUNK_LINE, "chunk size line")
    if not l then return nil, err end
    local hex = l:match("^(%x+)[ \t]*$") or l:match("^(%x+)[ \t]*;")
    if not hex then return nil, "a malformed chunk size" end
    hex = hex:gsub("^0+(.)", "%1")
    if #hex > 12 then return nil, "a chunk size too large (" .. #hex .. " hex digits)" end
    local size = tonumber(hex, 16)
    if size == 0 then
      for _ = 1, M.MAX_HEADERS do -- the trailer, up to its blank line
        local t, terr = line(self, M.MAX_HEAD_BYTES, "trailer")
        if not t then return nil, terr end
        if t == "" then
          self.done = true
          return false
        end
      end
      return nil, "more than " .. M.MAX_HEADERS .. " trailer fields"
    end
    local ok, cerr = count(self, size)
    if not ok then return nil, cerr end
    self.chunk_left, self.chunk_seen = size, true
  end
  local piece, err = take(self, self.chunk_left)
  if not piece then return nil, err == "end" and "the answer ended inside a chunk" or err end
  self.chunk_left = self.chunk_left - #piece
  return piece
end

--- read_all() -> the whole body | nil, message
function Reader:read_all()
  local parts = {}
  while true do
    local piece, err = self:read()
    if piece == nil then return nil, err end
    if not piece then return table.concat(parts) end
    parts[#parts + 1] = piece
  end
end

--- events(r, on_event) -> true | nil, message: reads r's body as an event
-- stream (lines end in CRLF, LF or CR; a leading BOM; comments skipped) and
-- calls on_event(data, name) for each event that carries data, until it
-- returns true.  A stream that ends first: nil, message (an event without
-- its closing blank line is dropped, as the SSE standard says).  Each piece
-- is searched once, whatever the size of the event it belongs to.
function M.events(r, on_event)
  local parts, data, name, first, cr_before = {}, nil, nil, true, false
  local function field(l)
    if first then
      l, first = l:gsub("^\239\187\191", ""), false
    end
    if l == "" then
      local stop = data and on_event(table.concat(data, "\n"), name or "message")
      data, name = nil, nil
      return stop
    end
    if l:sub(1, 1) == ":" then return false end
    local key, v = l:match("^([^:]*):? ?(.*)$")
    if key == "data" then
      data = data or {}
      data[#data + 1] = v
    elseif key == "event" then
      name = v
    end
    return false
  end
  while true do
    local piece, err = r:read()
    if piece == nil then return nil, err end
    if not piece then return nil, "the event stream ended before the answer" end
    -- a CR that ended the piece before ended its line; a LF first in this one belongs to it
    local pos = (cr_before and piece:sub(1, 1) == "\n") and 2 or 1
    cr_before = false
    while pos <= #piece do
      local cut = piece:find("[\r\n]", pos)
      if not cut then
        parts[#parts + 1] = piece:sub(pos)
        break
      end
      parts[#parts + 1] = piece:sub(pos, cut - 1)
      local l = table.concat(parts)
      parts = {}
      pos = cut + 1
      if piece:sub(cut, cut + 1) == "\r\n" then
        pos = cut + 2
      elseif cut == #piece and piece:sub(cut, cut) == "\r" then
        cr_before = true
      end
      if field(l) then return true end
    end
  end
end

-- The bytes of socket fd, until deadline.
local function socket_source(fd, deadline, timeout)
  return function()
    while true do
      local left = deadline - proc.now()
      if left <= 0 then return nil, "no answer in " .. timeout .. " s" end
      local rev = proc.poll({ fd }, { proc.POLLIN }, math.floor(left * 1000) + 1)
      if rev and rev[1] ~= 0 then
        local chunk, err = proc.read(fd)
        if chunk then return chunk end
        if chunk == false then return nil end
        if err ~= "again" then return nil, tostring(err) end
      end
    end
  end
end

--- post(u, headers, body[, opts]) -> an answer whose head is read
-- (r.status, r.headers; r:read(), r:read_all(), r:close()) | nil, message.
-- opts.timeout: seconds for the whole exchange (default 30); opts.max_body;
-- opts.method: another method than POST (DELETE).
function M.post(u, headers, body, opts)
  local timeout = opts and opts.timeout or 30
  local deadline = proc.now() + timeout
  local text, err = M.request_text(u, headers, body, opts and opts.method)
  if not text then return nil, err end
  local fd
  fd, err = proc.connect(u.host, u.port, math.floor(timeout * 1000))
  if not fd then
    if err == "Invalid argument" then
      return nil, "cannot connect to " .. u.host .. ": give an IP address or localhost (toolgate looks up no names)"
    end
    return nil, "cannot connect to " .. u.authority .. ": " .. tostring(err)
  end
  local from = 1
  while from <= #text do
    local n, werr = proc.write(fd, text, from)
    if not n then
      proc.close(fd)
      return nil, "the server closed the connection: " .. tostring(werr)
    end
    from = from + n
    if from <= #text then
      if proc.now() > deadline then
        proc.close(fd)
        return nil, "the server did not read the request in " .. timeout .. " s"
      end
      proc.poll({ fd }, { proc.POLLOUT }, 100)
    end
  end
  local r = M.reader(socket_source(fd, deadline, timeout), opts)
  r.fd = fd
  local ok, herr = r:head()
  if not ok then
    proc.close(fd)
    return nil, herr
  end
  return r
end

--- close(): closes the connection (once).
function Reader:close()
  if self.fd then proc.close(self.fd) end
  self.fd = nil
end

return M
