--- toolgate.mcp_client: a minimal MCP client over a child process's stdio,
-- enough to read a server's tools (toolgate registry record): initialize,
-- notifications/initialized, tools/list following nextCursor.
--
--   local c = assert(mcp_client.start(argv, {timeout = 30}))
--   local init = assert(c:initialize())
--   local tools = assert(c:list_tools())   -- a JSON text: the tools array, every page
--   c:close()                               -- closes its input, then SIGTERM, SIGKILL
--
-- The server's standard error goes to ours.  A request of the server's own
-- (ping, roots/list, ...) is answered (ping with {}, the others with
-- -32601); notifications are skipped.  Every wait is bounded by the
-- timeout; failures return nil, message.
-- @module toolgate.mcp_client

local decision = require "toolgate.decision"
local mcp = require "toolgate.mcp"
local proc = require "toolgate.proc"

local M = {}

M.PROTOCOL_VERSION = "2025-06-18"
M.MAX_PAGES = 1000
M.DEFAULT_TIMEOUT = 30

local Client = {}
Client.__index = Client

--- start(argv[, opts]) -> client | nil, message.  opts.timeout: seconds
-- to wait for each answer and for the server to exit.
function M.start(argv, opts)
  local p, err = proc.spawn(argv)
  if not p then return nil, "cannot start " .. tostring(argv[1]) .. ": " .. tostring(err) end
  return setmetatable({ p = p, next_id = 1, buf = "", timeout = opts and opts.timeout or M.DEFAULT_TIMEOUT,
    out_open = true, err_open = true, name = argv[1] }, Client)
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
    if left <= 0 then return nil, "no answer from the server in " .. self.timeout .. " s" end
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

-- request(method, params_json) -> the result as a node of a document the
-- caller frees | nil, message
function Client:request(method, params)
  local id = self.next_id
  self.next_id = id + 1
  local ok, err = write_all(self, '{"jsonrpc":"2.0","id":' .. id .. ',"method":"' .. method .. '","params":'
    .. (params or "{}") .. "}\n")
  if not ok then return nil, err end
  local deadline = proc.now() + self.timeout
  while true do
    local line, lerr = next_line(self, deadline)
    if not line then return nil, method .. ": " .. lerr end
    local doc = line:find("%S") and decision.codec():parse(line)
    local msg = doc and doc:root()
    if msg and msg:type() == "object" then
      local mid, mmethod = msg:get("id"), msg:get("method")
      if mmethod and mid then
        -- the server's own request
        local idtext = assert(mid:canon(nil, "exact"))
        local answer = mmethod:type() == "string" and mmethod:value() == "ping"
          and ('{"jsonrpc":"2.0","id":' .. idtext .. ',"result":{}}')
          or mcp.error_reply(idtext, -32601, "toolgate registry record answers no requests")
        write_all(self, answer .. "\n")
      elseif mid and not mmethod and mid:type() == "number" and mid:value() == id then
        local e = msg:get("error")
        if e then
          local text = assert(e:canon(nil, "exact"))
          doc:free()
          return nil, method .. " failed: " .. text
        end
        local result = msg:get("result")
        if result and result:type() == "object" then return result, doc end
        doc:free()
        return nil, method .. ": the answer has no result object"
      end
    end
    if doc then doc:free() end
  end
end

--- initialize() -> {protocol =, server_name =, server_version =} | nil, message
function Client:initialize()
  local r, doc = self:request("initialize", '{"protocolVersion":"' .. M.PROTOCOL_VERSION
    .. '","capabilities":{},"clientInfo":{"name":"toolgate","version":"1"}}')
  if not r then return nil, doc end
  local info = r:get("serverInfo")
  local function str(node) return node and node:type() == "string" and node:value() or nil end
  local out = { protocol = str(r:get("protocolVersion")),
    server_name = info and info:type() == "object" and str(info:get("name")) or nil,
    server_version = info and info:type() == "object" and str(info:get("version")) or nil,
    has_tools = r:get("capabilities") ~= nil and r:get("capabilities"):type() == "object"
      and r:get("capabilities"):get("tools") ~= nil }
  doc:free()
  local ok, err = write_all(self, '{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
  if not ok then return nil, err end
  return out
end

--- list_tools() -> the tools of every page, as one JSON array text | nil, message
function Client:list_tools()
  local parts, cursor = {}, nil
  for _ = 1, M.MAX_PAGES do
    local r, doc = self:request("tools/list", cursor and ('{"cursor":' .. cursor .. "}") or "{}")
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

--- close(): closes the server's input and waits for it to exit (SIGTERM,
-- then SIGKILL, after the timeout each).
function Client:close()
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
