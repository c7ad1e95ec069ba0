--- toolgate.state.shared_dict: the toolgate.state store in an nginx
-- lua_shared_dict, so every worker sees the same determinism records,
-- approvals, pin reports and quarantines.
--
--   local store = require("toolgate.state.shared_dict").new(ngx.shared.toolgate)
--
-- Safe under concurrent workers without read-modify-write races where one
-- would matter: a first record wins by add() (a quarantine keeps its first
-- reason; a pin change is reported once; an approval request is opened
-- once; an approval is decided once); a grant's uses are a counter taken by
-- incr(-1), so N uses let exactly N calls through whichever workers decide
-- them.  Approvals expire by the dict's own TTLs.  Records are JSON.
-- Keys: "d:v|q:<server>\0<tool>" determinism, "a:<id>" an approval,
-- "a#<id>" its decision, "a+<id>" its uses left, "p:<hash>\0<server>\0<tool>\0<change>"
-- a pin report ("p#<hash>\0<server>" how many of the server's are of added
-- tools, "p+<hash>\0<server>" the count of its "more" record,
-- "p!<hash>\0<server>\0<tool>" the mark of a changed pin: reserve_pins),
-- "s:<hash>\0<server>" a quarantined server.
-- "a=s:<server>", "a=t:<server>\0<tool>" how many requests are pending (at
-- most: expired ones are counted until the limit recounts them).
-- "x:<kind>\0<server>\0<key>" an exchange (toolgate.mcp.rounds), "x#<kind>\0<server>"
-- how many a server's kind keeps (at most: expired ones are counted until the limit recounts them).
-- "q:<key>\0<window>" a quota's count in a window (toolgate.quota).
-- @module toolgate.state.shared_dict

local decision = require "toolgate.decision"
local json = require "toolgate.json"
local value = require "toolgate.value"

local state = require "toolgate.state"
local MAX_ADDED_REPORTS = state.MAX_ADDED_REPORTS

local M = {}

--- Where each kind of record lives in the dict: the key is the kind's
-- prefix and the record's field ("<server>\0<tool>" for determinism,
-- "<hash>\0<server>\0<tool>\0<change>" a pin report, "<hash>\0<server>"
-- a quarantined server).  toolgate.state.redis keeps its local copy of the
-- fleet's records here, in the same layout.
M.KEYS = { verified = "d:v", quarantined = "d:q", pin = "p:", server = "s:" }
-- (and this node's counts, per "<hash>\0<server>": its added-tool reports,
-- and the count of its "more" record; per "<hash>\0<server>\0<tool>", the
-- mark of a changed pin whose report did not fit: reserve_pins)
local ADDED, MORE, MARK = "p#", "p+", "p!"
local K = M.KEYS

local Store = {}
Store.__index = Store

--- new(dict[, clock]) -> store: dict is an ngx.shared.DICT; clock() the
-- time in seconds (default ngx.now).
function M.new(dict, clock)
  if type(dict) ~= "table" and type(dict) ~= "userdata" then error("shared_dict.new: an ngx.shared dict expected", 2) end
  return setmetatable({ dict = dict, clock = clock or ngx.now }, Store)
end

local function encode(t) return (assert(value.encode(t))) end
local function decode(text) return text and json.decode(decision.codec(), text) or nil end

-- A full dict must not pass silently: an approval that cannot be stored
-- would be asked for forever, a pin change that cannot be kept would be
-- forgotten; the caller's error handling fails the request closed.  Every
-- write is safe_add / safe_set: add and set make room by evicting the least
-- recently used records, a quarantine or a pin report among them, which
-- would lift it without a word.
-- stored(what, ok, err) with what dict:add/set returned: ok, or false for
-- a key that exists (add)
local function stored(what, ok, err)
  if not ok and err ~= "exists" then error("toolgate shared dict: cannot store " .. what .. ": " .. tostring(err), 3) end
  return ok
end

local function key(server, name) return (server or "") .. "\0" .. name end

-- Determinism (the toolgate.state interface) -----------------------------------

function Store:get(server, name)
  local k = key(server, name)
  local v, q = self.dict:get(K.verified .. k), self.dict:get(K.quarantined .. k)
  if v == nil and q == nil then return nil end
  return { verified_epoch = v, quarantined = decode(q) }
end

function Store:verified(server, name, epoch)
  local k = key(server, name)
  stored("a determinism record", self.dict:safe_set(K.verified .. k, epoch))
  local q = decode(self.dict:get(K.quarantined .. k))
  if q and q.epoch ~= epoch then self.dict:delete(K.quarantined .. k) end
end

function Store:quarantine(server, name, reason, epoch)
  local k = key(server, name)
  local q = encode({ reason = reason, since = self.clock(), epoch = epoch })
  stored("a quarantine", self.dict:safe_add(K.quarantined .. k, q))
  self.dict:delete(K.verified .. k)
end

local function scan(dict, prefix)
  local out = {}
  for _, k in ipairs(dict:get_keys(0)) do
    if k:sub(1, #prefix) == prefix then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

function Store:records()
  local out = {}
  for _, k in ipairs(scan(self.dict, "d:")) do
    local sk = k:sub(4)
    if not out[sk] then
      local server, name = sk:match("^(.-)%z(.*)$")
      out[sk] = self:get(server, name)
    end
  end
  return out
end

-- incr(key, by) with the key made first without evicting; raises when
-- there is no room for it.
local function count(dict, k, by)
  local n = dict:incr(k, by)
  if n then return n end
  stored("a count", dict:safe_add(k, 0))
  return assert(dict:incr(k, by))
end

-- Approvals ----------------------------------------------------------------

-- Pending requests are counted per server ("a=s:<server>") and per tool
-- ("a=t:<server>\0<tool>"): one more at each open, one less at a decision.
-- The dict's TTLs drop expired requests without a word, so at the limit
-- the pending ones are counted again (a scan) before a new one is refused;
-- at most once a second per count (the mark "a=?<count key>"), so a flood
-- at the limit does not scan at every call.
local PENDING, RECOUNTED = "a=", "a=?"

local function pending_keys(server, tool)
  return PENDING .. "s:" .. tostring(server), PENDING .. "t:" .. tostring(server) .. "\0" .. tostring(tool)
end

-- -> how many undecided requests of the server (of its tool: tool given) live
local function live_pending(d, server, tool)
  local n = 0
  for _, k in ipairs(scan(d, "a:")) do
    local r = not d:get("a#" .. k:sub(3)) and decode(d:get(k))
    if r and r.server == server and (tool == nil or r.tool == tool) then n = n + 1 end
  end
  return n
end

-- claim(d, key, limit, server[, tool]) -> true when one more request fits
-- under the count's limit (then counted)
local function claim(d, k, limit, server, tool)
  if count(d, k, 1) <= limit then return true end
  d:incr(k, -1)
  local _, err = d:safe_add(RECOUNTED .. k, true, 1)
  if err == "exists" then return false end
  stored("a count of pending approvals", d:safe_set(k, live_pending(d, server, tool)))
  if count(d, k, 1) <= limit then return true end
  d:incr(k, -1)
  return false
end

--- approval_request(id, fields, ttl, uses, now) -> the JSON text of a new
-- pending approval request (shared with toolgate.state.redis).
function M.approval_request(id, fields, ttl, uses, now)
  local r = { id = id, status = "pending", created = now, expires = now + ttl, ttl = ttl, uses = uses }
  for k, v in pairs(fields) do r[k] = v end
  return encode(r)
end

--- approval_view(text, verdict, left) -> the approval record made of its
-- three stored parts: the request's JSON text, the decision ("grant" |
-- "deny" | nil) and the uses left (nil: none); nil without a request.
function M.approval_view(text, verdict, left)
  local r = decode(text)
  if not r then return nil end
  if verdict then r.status = verdict == "grant" and "granted" or "denied" end
  if r.status == "granted" then
    if left == nil or left <= 0 then r.status = "used" end
    r.uses = left and math.max(left, 0) or 0
  end
  return r
end

function Store:approval_open(id, fields, ttl, uses, limits)
  local d = self.dict
  if d:get("a:" .. id) then return false end
  local of_server, of_tool = pending_keys(fields.server, fields.tool)
  if limits then
    if not claim(d, of_tool, limits.tool, fields.server, fields.tool) then return false, "full", "tool" end
    if not claim(d, of_server, limits.server, fields.server) then
      d:incr(of_tool, -1)
      return false, "full", "server"
    end
  end
  local r = M.approval_request(id, fields, ttl, uses, self.clock())
  local opened = stored("an approval request", d:safe_add("a:" .. id, r, ttl))
  if not opened and limits then -- (another worker opened it meanwhile: counted by that one)
    d:incr(of_tool, -1)
    d:incr(of_server, -1)
  end
  return opened and true or false
end

function Store:approval(id)
  local d = self.dict
  return M.approval_view(d:get("a:" .. id), d:get("a#" .. id), d:get("a+" .. id))
end

function Store:approval_take(id)
  local left = self.dict:incr("a+" .. id, -1)
  if left and left >= 0 then return true, left == 0 and "used" or "granted" end
  local r = self:approval(id)
  return false, r and r.status or nil
end

function Store:approval_decide(id, verdict, opts)
  local valid, why, code = state.decision_opts(verdict, opts)
  if not valid then return nil, why, code end
  local r = self:approval(id)
  if not r then return nil, "no approval request " .. tostring(id) .. " (unknown or expired)", "NOT_FOUND" end
  -- one decision wins, whichever worker the operators reach
  state.decide(r, verdict, opts, self.clock())
  local ok = stored("an approval's decision", self.dict:safe_add("a#" .. id, verdict, r.ttl))
  if not ok then return nil, "approval " .. id .. " is already decided", "ALREADY_DECIDED" end
  -- no longer pending: its place is free at once
  for _, k in ipairs({ pending_keys(r.server, r.tool) }) do
    self.dict:incr(k, -1)
    self.dict:delete(RECOUNTED .. k)
  end
  if verdict == "grant" then stored("an approval's uses", self.dict:safe_set("a+" .. id, r.uses, r.ttl)) end
  -- the request lives as long as its decision
  stored("an approval", self.dict:safe_set("a:" .. id, encode(r), r.ttl))
  return r
end

function Store:approvals()
  local out = {}
  for _, k in ipairs(scan(self.dict, "a:")) do
    local r = self:approval(k:sub(3))
    if r then out[#out + 1] = r end
  end
  return out
end

-- Pins and quarantined servers -----------------------------------------------

-- A server's added tools past toolgate.state.MAX_ADDED_REPORTS, and a
-- "more" report (a listing's tail the gateway counted), are counted in its
-- one "more" record, whose count is a counter of its own (incr: no worker
-- loses another's).
function Store:pin_report(registry_hash, server, tool, change)
  local kind, sk = change.change, registry_hash .. "\0" .. (server or "")
  local k = K.pin .. registry_hash .. "\0" .. key(server, tool) .. "\0" .. kind
  local d = self.dict
  if kind == "added" then
    if d:get(k) then return false end
    -- (two workers adding one tool take two places: the bound holds all the same)
    if count(d, ADDED .. sk, 1) > MAX_ADDED_REPORTS then kind = "more" end
  end
  if kind == "more" then
    local by = change.change == "more" and change.count or 1
    if count(d, MORE .. sk, by) ~= by then return false end -- the record exists: counted
    k, tool, change = K.pin .. sk .. "\0\0more", "", { tool = "", change = "more", count = by }
  end
  local r = { registry_hash = registry_hash, server = server, tool = tool, change = change, since = self.clock() }
  local ok, err = d:safe_add(k, encode(r))
  -- a changed pin that does not fit still holds for every worker: its mark
  -- (reserved, a number: incr needs no memory)
  if not ok and err ~= "exists" and kind == "changed" then d:incr(MARK .. sk .. "\0" .. tool, 1) end
  return stored("a pin report", ok, err) and true or false
end

--- reserve_pins(registry_hash, tools): while the dict has room (at start,
-- at a reload), a mark for each registry tool ({server =, name =}) that
-- its pin changed, set without memory when the report itself cannot be
-- stored; pin_change reads it.  Marks that do not fit are left out: the
-- gateway keeps such a change in its worker.
function Store:reserve_pins(registry_hash, tools)
  for _, t in ipairs(tools) do self.dict:safe_add(MARK .. registry_hash .. "\0" .. key(t.server, t.name), 0) end
end

function Store:pin_change(registry_hash, server, tool)
  local k = registry_hash .. "\0" .. key(server, tool)
  local r = decode(self.dict:get(K.pin .. k .. "\0changed"))
  if r then return r.change end
  if (self.dict:get(MARK .. k) or 0) > 0 then return { tool = tool, change = "changed", stored = false } end
  return nil
end

function Store:pin_reports()
  local out = {}
  for _, k in ipairs(scan(self.dict, K.pin)) do
    local r = decode(self.dict:get(k))
    if r and r.change.change == "more" then
      r.change.count = self.dict:get(MORE .. r.registry_hash .. "\0" .. r.server) or r.change.count
    end
    if r then out[#out + 1] = r end
  end
  -- a changed pin kept only by its mark (its report did not fit)
  for _, k in ipairs(scan(self.dict, MARK)) do
    local hash, server, tool = k:sub(3):match("^(.-)%z(.-)%z(.*)$")
    if (self.dict:get(k) or 0) > 0 and not self.dict:get(K.pin .. k:sub(3) .. "\0changed") then
      out[#out + 1] = { registry_hash = hash, server = server, tool = tool,
        change = { tool = tool, change = "changed", stored = false } }
    end
  end
  return out
end

function Store:quarantine_server(registry_hash, server, reason)
  local r = encode({ reason = reason, since = self.clock() })
  stored("a quarantine", self.dict:safe_add(K.server .. registry_hash .. "\0" .. server, r))
end

function Store:server_quarantine(registry_hash, server)
  return decode(self.dict:get(K.server .. registry_hash .. "\0" .. server))
end

--- quarantined_servers() -> { {registry_hash =, server =, reason =, since =}, ... }
function Store:quarantined_servers()
  local out = {}
  for _, k in ipairs(scan(self.dict, K.server)) do
    local r = decode(self.dict:get(k))
    if r then
      r.registry_hash, r.server = k:sub(3):match("^(.-)%z(.*)$")
      out[#out + 1] = r
    end
  end
  return out
end

-- Exchanges (toolgate.mcp.rounds) -------------------------------------------

-- The count is a counter each new exchange adds to; the dict's TTLs drop
-- expired ones without it, so at the limit the live ones are counted
-- again (a scan, only then) before a new one is refused.
function Store:exchange_put(kind, server, k, record, ttl, limit)
  local d, sk = self.dict, kind .. "\0" .. server
  local rk = "x:" .. sk .. "\0" .. k
  if not d:get(rk) then
    local n = d:get("x#" .. sk) or 0
    if n >= limit then
      n = #scan(d, "x:" .. sk .. "\0")
      stored("an exchange count", d:safe_set("x#" .. sk, n))
      if n >= limit then return nil, "full" end
    end
    count(d, "x#" .. sk, 1)
  end
  stored("an exchange", d:safe_set(rk, encode(record), ttl))
  return true
end

function Store:exchange(kind, server, k)
  return decode(self.dict:get("x:" .. kind .. "\0" .. server .. "\0" .. k))
end

-- Quotas (toolgate.quota) ------------------------------------------------------

-- A count per key and window, "q:<key>\0<window>", which lives until its
-- window ends: incr is atomic across workers, so a key never lets more than
-- its limit through.  A take over the limit, or a later key's, gives back
-- what it took (a call racing it may then be refused where it would have
-- fitted: never let through where it would not).
function Store:quota_take(takes)
  local d, now, taken = self.dict, self.clock(), {}
  local function give_back()
    for _, k in ipairs(taken) do d:incr(k, -1) end
  end
  for i, t in ipairs(takes) do
    local w, left = state.quota_window(now, t.window)
    local k = "q:" .. t.key .. "\0" .. w
    local n, err = d:incr(k, 1)
    if not n and err == "not found" then
      -- (safe_add: a count must not evict a quarantine or an approval)
      local ok, aerr = d:safe_add(k, 0, left + 1)
      if not ok and aerr ~= "exists" then err = aerr else n, err = d:incr(k, 1) end
    end
    if not n then
      give_back()
      return nil, "the shared dict cannot keep the count: " .. tostring(err), "UNAVAILABLE"
    end
    taken[#taken + 1] = k
    if n > t.limit then
      give_back()
      return false, i, left
    end
  end
  return true
end

return M
