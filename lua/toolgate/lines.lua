--- toolgate.lines: JSON Lines input in large pieces, for the core's
-- chunk entry points (tg_check_lines, tg_canon_lines, tg_validate_lines),
-- which read every complete line of a piece in one call.
-- @module toolgate.lines

local M = {}

--- pump(read, consume): read() gives the next piece of input (any size)
-- or nil at the end; consume(buf) reads the complete lines of buf (those
-- ending in "\n") and returns the position after the last one it read.
-- What is left (a line cut by the piece's end) is put before the next
-- piece; a last line without its "\n" gets one.
function M.pump(read, consume)
  local buf = ""
  repeat
    local data = read()
    if data then buf = #buf == 0 and data or buf .. data end
    if data == nil and #buf > 0 and buf:sub(-1) ~= "\n" then buf = buf .. "\n" end
    if #buf > 0 then buf = buf:sub(consume(buf)) end
  until data == nil
end

M.CHUNK = 65536 -- bytes read at a time (LuaJIT collects large strings late: keep them small)
-- Bytes a thread takes at a time when the core reads the input itself
-- (engine:check_file): a share of 64 KiB is decided in about as long as
-- waking a sleeping thread takes on a small virtual machine.
M.SHARED_CHUNK = 1048576

--- reader(f) -> read function over file handle f, and a function that
-- says the read error, if any.
function M.reader(f)
  local failed
  return function()
    local data, err = f:read(M.CHUNK)
    if err then failed = err end
    return data
  end, function() return failed end
end

return M
