--- toolgate.audit_log: where audit records go (docs/audit.md), a file or
-- the local syslog, for the stdio proxy and the nginx gateway alike.
--
--   local log = audit_log.open("/var/log/toolgate/audit.jsonl")  -- or "syslog", "syslog:/run/x.sock"
--   local ok, err = log:write({ line, ... })
--
-- A file is opened by its name for each batch of lines, appended to and
-- closed: a logrotate move (or a delete) takes effect at the next batch,
-- with no signal (SIGHUP to the proxy, USR1 to nginx only make it sooner:
-- the batch is written at once).  A batch is one write, so lines from
-- several processes never interleave.  When the name cannot be opened
-- (a directory the writer may not create in: nginx's workers, when the
-- master opened the file), the batch goes to the file open() opened, and a
-- warning is returned: no record is dropped for it.
--
-- syslog: a datagram per record to the local syslog socket (default
-- /dev/log), framed as the C library's syslog(3) frames it for that socket
-- (RFC 3164: "<PRI>Mmm dd hh:mm:ss toolgate: {...}"), facility 13 ("log
-- audit", RFC 5424), severity informational.  Never waits: a record the
-- socket cannot take (its reader's queue full, longer than one datagram)
-- is dropped, and counted in the error returned.
-- @module toolgate.audit_log

local proc = require "toolgate.proc"

local M = {}

M.SYSLOG_SOCKET = "/dev/log"
M.SYSLOG_PRI = 13 * 8 + 6 -- facility log audit, severity informational
M.TAG = "toolgate"

local File = {}
File.__index = File

function File:write(lines)
  if #lines == 0 then return true end
  local text = table.concat(lines, "\n") .. "\n"
  local f, err = io.open(self.path, "a")
  if f then
    f:setvbuf("no") -- one write: lines from several processes never interleave
    local ok, werr = f:write(text)
    f:close()
    if not ok then return nil, "cannot write " .. self.path .. ": " .. tostring(werr) end
    return true
  end
  if self.fallback and self.fallback:write(text) then
    return true, "cannot open " .. tostring(err) .. "; the records go to the file it named when it started"
  end
  return nil, "cannot open " .. tostring(err)
end

function File:close()
  if self.fallback then self.fallback:close() end
  self.fallback = nil
end

local Syslog = {}
Syslog.__index = Syslog

--- frame(line[, time]) -> the datagram of one record for the local syslog
-- (time: seconds since the epoch, default now; local time, as syslog(3)).
function M.frame(line, time)
  local stamp = os.date("%b %d %H:%M:%S", time and math.floor(time) or os.time())
  stamp = stamp:gsub("^(%a+) 0", "%1  ") -- (RFC 3164 pads the day with a space)
  return "<" .. M.SYSLOG_PRI .. ">" .. stamp .. " " .. M.TAG .. ": " .. line
end

function Syslog:write(lines)
  local dropped, why = 0, nil
  for _, l in ipairs(lines) do
    local ok, err = proc.datagram(self.socket, M.frame(l))
    if not ok then dropped, why = dropped + 1, err end
  end
  if dropped > 0 then
    return nil, dropped .. " record(s) not taken by the syslog socket " .. self.socket .. ": " .. tostring(why)
  end
  return true
end

function Syslog.close() end

--- open(dest) -> log | nil, message: dest is a file's path, "syslog" (the
-- socket /dev/log) or "syslog:PATH" (another unix datagram socket).  A
-- file is opened once here, so a path that cannot be written fails now.
function M.open(dest)
  if type(dest) ~= "string" or dest == "" then return nil, "a file's path, syslog or syslog:PATH expected" end
  if dest == "syslog" or dest:sub(1, 7) == "syslog:" then
    local socket = dest == "syslog" and M.SYSLOG_SOCKET or dest:sub(8)
    if socket == "" then return nil, "syslog:PATH needs the socket's path" end
    return setmetatable({ socket = socket }, Syslog)
  end
  local f, err = io.open(dest, "a")
  if not f then return nil, "cannot open " .. tostring(err) end
  f:setvbuf("no")
  return setmetatable({ path = dest, fallback = f }, File)
end

return M
