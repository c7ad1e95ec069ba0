--- toolgate.audit: the one writer of audit records (docs/audit.md).
--
-- Every front end (the nginx gateway, the stdio proxy, the CLI) writes its
-- decisions, approval events and pin changes as records of one shape, one
-- JSON object per line, members in canonical (sorted) order, checked by
-- docs/schemas/decision-record.schema.json:
--   envelope   kind ("decision" | "approval" | "pin_change"), time (seconds
--              since the epoch, 3 decimals), source ("gateway" |
--              "mcp-proxy" | "cli"), route (the MCP server), and when known
--              worker (the nginx worker's pid), trace_id, span_id
--   decision   phase, decision (the core's decision JSON, byte for byte),
--              outcome ("passed": the message went on; "held": a defer
--              waiting for a person; "refused"), enforced, mode, approval_id,
--              approved, principal, and the arguments as the policy's
--              audit section chose (settings below)
--   approval   approval (the approval record), event ("granted" | "denied")
--   pin_change pin_change (the tools/list difference)
--
--   local line = audit.decision(ev, time, opts)      -- an observe event's
--   local line = audit.approval(rec, event, time, opts)
--   local line = audit.pin_change(ev, time, opts)
-- opts = { source =, worker =, trace_id =, span_id =, audit = settings }
-- (an event's own trace_id/span_id win over opts').
-- @module toolgate.audit

local core = require "toolgate.core"
local decision = require "toolgate.decision"
local json = require "toolgate.json"
local value = require "toolgate.value"

local M = {}

--- The most bytes of arguments a record (and an approval) holds: past it,
-- the first of them (cut at a character, never inside one), with their
-- whole size and arguments_truncated.
M.MAX_ARGUMENTS_BYTES = 64 * 1024

--- What the redact mode writes in place of a value.
M.REDACTED = "[redacted]"

M.ARGUMENTS_MODES = { "approval", "full", "redact", "digest" }

local function enc(v) return (assert(value.encode(v))) end

-- Canonical JSON of a Lua value (a table's keys come in no order).
local function canon(v) return (assert(decision.codec():canon(enc(v)))) end

--- settings(t) -> the audit settings | nil, message: a policy's audit
-- section checked (nil: the defaults).  arguments: "approval" (the default:
-- arguments only on the records of calls that ask for an approval or pass
-- by one), "full" (on every call's record), "redact" (as full, the values
-- at the JSON pointers of redact replaced by M.REDACTED), "digest" (no
-- arguments anywhere: their digest and size).
function M.settings(t)
  if t == nil then return { arguments = "approval", redact = {} } end
  if type(t) ~= "table" then return nil, "must be a table, not a " .. type(t) end
  for k in pairs(t) do
    if k ~= "arguments" and k ~= "redact" then
      return nil, "unknown setting " .. tostring(k) .. " (known: arguments, redact)"
    end
  end
  local mode = t.arguments == nil and "approval" or t.arguments
  local known = false
  for _, m in ipairs(M.ARGUMENTS_MODES) do known = known or m == mode end
  if not known then
    return nil, "arguments must be one of " .. table.concat(M.ARGUMENTS_MODES, ", ") .. ", not " .. tostring(mode)
  end
  local redact = t.redact == nil and {} or t.redact
  if type(redact) ~= "table" then return nil, "redact must be a list of JSON pointers" end
  local pointers = {}
  for i, p in ipairs(redact) do
    if type(p) ~= "string" or p:sub(1, 1) ~= "/" then
      return nil, "redact[" .. i .. "] must be a JSON pointer (\"/password\"), not " .. tostring(p)
    end
    pointers[i] = p
  end
  for k in pairs(redact) do
    if type(k) ~= "number" or k > #pointers then return nil, "redact must be a list of JSON pointers" end
  end
  if mode == "redact" and #pointers == 0 then return nil, "arguments = \"redact\" needs redact = { pointers... }" end
  if mode ~= "redact" and #pointers > 0 then return nil, "redact is read only with arguments = \"redact\"" end
  return { arguments = mode, redact = pointers }
end

local DEFAULTS = M.settings()

--- call_arguments(call_text) -> { arguments =, arguments_bytes =,
-- arguments_truncated = }: the arguments of a call text as records and
-- approvals show them: the very text args_digest hashed, the exact
-- canonical form the core wrote into the call text
-- ({"server":..,"name":..,"arguments":<it>}: the server and name before it
-- are JSON strings, in which a quote is escaped, so the first
-- ',"arguments":' is the member), bounded by M.MAX_ARGUMENTS_BYTES.
function M.call_arguments(call_text)
  local at = assert(call_text:find(',"arguments":', 1, true), "a call text without arguments")
  local args = call_text:sub(at + 13, -2)
  local n, cut = #args, M.MAX_ARGUMENTS_BYTES
  if n <= cut then return { arguments = args, arguments_bytes = n, arguments_truncated = false } end
  -- a UTF-8 continuation byte (0x80 .. 0xBF) after the cut: back to its character's first byte
  while cut > 0 and args:byte(cut + 1) >= 0x80 and args:byte(cut + 1) < 0xC0 do cut = cut - 1 end
  return { arguments = args:sub(1, cut), arguments_bytes = n, arguments_truncated = true }
end

-- A JSON pointer's reference tokens (RFC 6901: ~1 is "/", ~0 is "~").
local function tokens(pointer)
  local out, from = {}, 2
  while true do
    local slash = pointer:find("/", from, true)
    local t = pointer:sub(from, (slash or 0) - 1)
    out[#out + 1] = (t:gsub("~1", "/"):gsub("~0", "~"))
    if not slash then return out end
    from = slash + 1
  end
end

-- redacted(text, pointers) -> the arguments' canonical text with the value
-- at each pointer that exists replaced by M.REDACTED, and the pointers
-- replaced (sorted) | nil (the text is not whole JSON: cut, or not read)
local function redacted(text, pointers)
  local args = json.decode(decision.codec(), text)
  if args == nil then return nil end
  -- a token's key in node: an array's index (0-based in the pointer), an object's name
  local function key(node, token)
    local mt = getmetatable(node)
    if mt and value.is_array_mt(mt) then return token:match("^%d+$") and tonumber(token) + 1 end
    return token
  end
  local done = {}
  for _, p in ipairs(pointers) do
    local node, path = args, tokens(p)
    for i = 1, #path - 1 do
      if type(node) ~= "table" then break end
      local k = key(node, path[i])
      node = k and node[k]
    end
    local k = type(node) == "table" and key(node, path[#path])
    if k and node[k] ~= nil then
      node[k] = M.REDACTED
      done[#done + 1] = p
    end
  end
  table.sort(done)
  return canon(args), done
end

-- The arguments members of a record as the settings choose, as values:
-- { arguments = text, arguments_bytes =, arguments_truncated =,
-- arguments_digest =, arguments_redacted = the pointers replaced } (only
-- those the mode writes; none: nil).  shown (call_arguments') the
-- arguments the event carries, call the call text (every call's, for full
-- and redact), digest the decision's args_digest.
local function arguments_members(s, shown, call, digest)
  local mode = s.arguments
  if mode == "approval" then call = nil end
  if not shown and call then shown = M.call_arguments(call) end
  if not shown then return nil end
  if mode == "digest" then return { arguments_bytes = shown.arguments_bytes, arguments_digest = digest } end
  local text, truncated = shown.arguments, shown.arguments_truncated
  local out = { arguments_bytes = shown.arguments_bytes }
  if mode == "redact" then
    -- the whole text is redacted, then bounded; a cut text (no call text) is left out
    local whole = call and call:sub(assert(call:find(',"arguments":', 1, true)) + 13, -2)
      or (not truncated and text) or nil
    local red, done = nil, nil
    if whole then red, done = redacted(whole, s.redact) end
    if not red then
      text = nil
    else
      out.arguments_redacted = #done > 0 and done or value.empty_array
      text = red
      truncated = #red > M.MAX_ARGUMENTS_BYTES
      if truncated then text = M.call_arguments(',"arguments":' .. red .. "}").arguments end
    end
  end
  out.arguments, out.arguments_truncated = text, truncated
  return out
end

-- (a function of the module, not a closure made per record: LuaJIT does not compile FNEW)
local function by_key(a, b) return a[1] < b[1] end

-- The record's line: members (a list of {key, JSON text}) sorted by key.
local function line(members)
  table.sort(members, by_key)
  local parts = {}
  for i, m in ipairs(members) do parts[i] = enc(m[1]) .. ":" .. m[2] end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- The envelope's members, then more.
local function envelope(kind, route, time, opts, ev)
  local m = { { "kind", enc(kind) }, { "route", enc(route or "") }, { "time", string.format("%.3f", time) },
    { "source", enc(assert(opts.source, "audit: opts.source is required")) } }
  if opts.worker then m[#m + 1] = { "worker", string.format("%d", opts.worker) } end
  local trace_id = ev and ev.trace_id or opts.trace_id
  local span_id = ev and ev.span_id or opts.span_id
  if trace_id then m[#m + 1] = { "trace_id", enc(trace_id) } end
  if span_id then m[#m + 1] = { "span_id", enc(span_id) } end
  return m
end

--- outcome(ev) -> "passed" | "held" | "refused" for a decision event:
-- passed, the message went on (an accept, a defer an approval let
-- through, anything not enforced: shadow); held, a defer that waits for a
-- person (it has an approval id); refused otherwise.
function M.outcome(ev)
  local v = ev.decision.verdict
  if v == "accept" or ev.approved or ev.enforced == false then return "passed" end
  if v == "defer" and ev.approval_id then return "held" end
  return "refused"
end

--- decision(ev, time, opts) -> the record of an observe event of kind
-- "decision" (toolgate.mcp): the decision as the core wrote it, and the
-- arguments as opts.audit (settings()) chooses from the event's
-- arguments (call_arguments') and call (the call text).
function M.decision(ev, time, opts)
  local s = opts.audit or DEFAULTS
  local enforced = ev.enforced ~= false
  local d = ev.decision
  local digest = s.arguments == "digest" and ev.phase == "call" and (ev.arguments or ev.call) and d:get("args_digest")
  local args = arguments_members(s, ev.arguments, ev.call, digest)
  -- the core writes the line (tg_decision_record): members sorted, strings escaped as enc's
  local record = core.decision_record({ route = ev.server or "", source = assert(opts.source, "audit: opts.source is required"),
    time = time, worker = opts.worker, trace_id = ev.trace_id or opts.trace_id, span_id = ev.span_id or opts.span_id,
    phase = ev.phase, decision = d:json(), outcome = M.outcome(ev), enforced = enforced,
    mode = ev.mode or (enforced and "enforce" or "shadow"), approval_id = ev.approval_id, approved = ev.approved == true,
    principal = ev.principal, arguments = args and args.arguments, arguments_bytes = args and args.arguments_bytes,
    arguments_truncated = args and args.arguments_truncated, arguments_digest = args and args.arguments_digest,
    arguments_redacted = args and args.arguments_redacted and enc(args.arguments_redacted) })
  return record -- (not a tail call: LuaJIT records a return into a Lua frame, not from a tail call's)
end

--- approval(rec, event, time, opts) -> the record of an approval decided
-- (event "granted" | "denied"): rec is the approval record (toolgate.state),
-- its arguments as opts.audit chooses (digest: none; redact: redacted, or
-- none when cut).
function M.approval(rec, event, time, opts)
  local s = opts.audit or DEFAULTS
  local r = {}
  for k, v in pairs(rec) do r[k] = v end
  if r.arguments ~= nil and s.arguments ~= "approval" and s.arguments ~= "full" then
    local shown = { arguments = r.arguments, arguments_bytes = r.arguments_bytes or #r.arguments,
      arguments_truncated = r.arguments_truncated == true }
    local args = arguments_members(s, shown, nil, nil)
    r.arguments, r.arguments_redacted = args.arguments, args.arguments_redacted
  end
  local m = envelope("approval", rec.server, time, opts)
  m[#m + 1] = { "approval", canon(r) }
  m[#m + 1] = { "event", enc(event) }
  return line(m)
end

--- pin_change(ev, time, opts) -> the record of an observe event of kind
-- "pin_change" (its change, canonical).
function M.pin_change(ev, time, opts)
  local m = envelope("pin_change", ev.server, time, opts, ev)
  m[#m + 1] = { "pin_change", canon(ev.change) }
  return line(m)
end

--- with_seq(line, seq) -> the record with the state log's sequence number
-- seq among its members (toolgate log: "seq" sorts just before "source",
-- whose last occurrence is the envelope's: only the span_id, time,
-- trace_id and worker members, plain values, come after it).  A line an
-- older toolgate wrote (no source; "time" last) gets it before "time".
function M.with_seq(text, seq)
  local at
  local from = 1
  while true do
    local i = text:find(',"source":', from, true)
    if not i then break end
    at, from = i, i + 1
  end
  local member = '"seq":' .. string.format("%d", seq) .. ","
  if not at then return (text:gsub(',("time":[%d.]+})$', "," .. member .. "%1")) end
  return text:sub(1, at) .. member .. text:sub(at + 1)
end

return M
