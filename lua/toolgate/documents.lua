--- toolgate.documents: JSON input that is not JSON Lines -- a document
-- saved with indentation (a chat.completion as an SDK or jq prints it), or
-- several such documents one after another (jq without -c) -- cut into
-- its documents, each with the line it starts on (toolgate check); and
-- text that is not JSON at all told for what it likely is (YAML).
-- @module toolgate.documents

local M = {}

--- looks_like_yaml(text) -> whether text (that is not JSON) reads as YAML
-- does: its first line that is neither blank nor a comment is "---", a
-- list item ("- ...") or a key ("name: ...", "name:").
function M.looks_like_yaml(text)
  for line in text:sub(1, 65536):gmatch("([^\n]*)\n?") do
    if not line:find("^%s*$") and not line:find("^%s*#") then
      return line:find("^%-%-%-") ~= nil or line:find("^%s*%-%s") ~= nil or line:find("^%s*%-$") ~= nil
        or line:find("^%s*[%w_\"'][^:{}%[%],]*:%s") ~= nil or line:find("^%s*[%w_\"'][^:{}%[%],]*:$") ~= nil
    end
  end
  return false
end

--- starts_document(core, head) -> whether an input that begins with head
-- (its first complete lines, from a reader) is read as documents: its first
-- line that is not blank is the start of a JSON value that goes on past
-- that line, or YAML (one reject for the whole, not one a line).  A line
-- that is JSON, or any other line that is not, keeps the input JSON Lines
-- (a bad line is one reject, and the next lines go on).
-- @param core a core engine (its limits decide what is too deep or long)
function M.starts_document(core, head)
  local line = head:match("^[ \t\r\n]*([^\n]*)\n")
  if not line or line == "" then return false end
  local doc, _, code = core:parse(line)
  if doc then
    doc:free()
    return false
  end
  return code == "UNEXPECTED_END" or M.looks_like_yaml(head)
end

-- The newlines of text[from, to].
local function newlines(text, from, to)
  local n, at = 0, text:find("\n", from, true)
  while at and at <= to do
    n = n + 1
    at = text:find("\n", at + 1, true)
  end
  return n
end

local WINDOW = 4096 -- bytes first parsed for a document, doubled while it goes on

--- each(core, read, fn) -> nil | the line of a document that was not
-- JSON or too large (the input after it was not read: where the next
-- document would start cannot be told).
-- @param read read(want) returns the next piece of input, whole lines, at
-- least want bytes of them when the input has that many (nil at the end)
-- @param fn fn(text, line) for each document, line being the line it
-- starts on (from 1); a document that is not JSON is given too, as far as
-- it goes, so that its decision names the error.  fn(nil, line, code,
-- message[, offset]) for a document larger than the core's
-- max_input_bytes (the input after it is not read, and none of it is
-- kept), and for one that looks like YAML.
function M.each(core, read, fn)
  local max = core:limits().max_input_bytes
  -- buf[pos ..] is read and not yet decided; line is the line of pos
  local buf, pos, line, ended = "", 1, 1, false
  while true do
    local start = buf:find("[^ \t\r\n]", pos)
    line = line + newlines(buf, pos, (start or #buf + 1) - 1)
    if not start then
      if ended then return nil end
      buf, pos = read(0) or "", 1
      ended = buf == ""
    else
      -- the value at start, parsed in a window that grows while it goes
      -- on (a document is never parsed with all that follows it)
      pos = start
      local window = WINDOW
      while true do
        local stop = math.min(#buf, pos + math.min(window, max) - 1)
        local text = buf:sub(pos, stop)
        local doc, message, code, offset = core:parse(text)
        if doc then doc:free() end
        local whole = code == "TRAILING_GARBAGE" or (doc and (stop == #buf or #text == max))
        if whole then
          -- a whole value (pieces end at the end of a line), the next one after it
          local len = doc and #text or offset
          fn(text:sub(1, len), line)
          line = line + newlines(buf, pos, pos + len - 1)
          pos = pos + len
          break
        elseif (doc or code == "UNEXPECTED_END") and stop < #buf and #text < max then
          window = window * 2
        elseif (doc or code == "UNEXPECTED_END") and #text >= max then
          fn(nil, line, "INPUT_TOO_LARGE", string.format("the JSON document that starts on line %d is larger than "
            .. "max_input_bytes (%d bytes); the input after it was not read", line, max))
          return line
        elseif code == "UNEXPECTED_END" and not ended then
          -- the document goes on past what is read: read as much again
          local piece = read(#buf - pos + 1)
          if piece then
            buf, pos = buf:sub(pos) .. piece, 1
          else
            ended = true
          end
        elseif code ~= "UNEXPECTED_END" and M.looks_like_yaml(text) then
          fn(nil, line, code, "not JSON (YAML?): " .. message, offset)
          return line
        else
          -- not JSON, or cut short by the end of the input
          fn(text, line)
          return code ~= "UNEXPECTED_END" and line or nil
        end
      end
    end
  end
end

return M
