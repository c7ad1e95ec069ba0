--- toolgate.state: what toolgate remembers about tools' determinism.
--
-- Per (server, tool): whether a probe verified its determinism declaration
-- in an epoch, and whether the declaration is quarantined (why, since
-- when, in which epoch).  A failed probe or a RESULT_DISAGREE decision
-- quarantines the declaration: the tool is then treated as unverified, so
-- its plans can no longer be rejected on argument disagreement; a probe
-- that passes in a later epoch lifts the quarantine.
--
-- A store is any table with these methods; memory() is the in-process one,
-- kept by the core (an nginx shared-dict store can implement the same four;
-- toolgate.engine asks them, in input order, for what classify reads and
-- writes):
--   store:get(server, name)                   -> record | nil
--   store:verified(server, name, epoch)       -- a probe passed in epoch
--   store:quarantine(server, name, reason, epoch)
--   store:records()                           -> { ["server\0name"] = record }
-- record = { verified_epoch = E|nil, quarantined = { reason =, since =, epoch = } | nil }
--
-- A gateway's store (toolgate.mcp) also keeps approvals and pin reports,
-- shared by everything that decides for it (every nginx worker: see
-- toolgate.state.shared_dict):
--   store:approval_open(id, fields, ttl, uses[, limits]) -> true when it
--       opened a request (pending for ttl seconds), false when one exists
--       (one per id: the binding's hash), false, "full", "tool" | "server"
--       when fields.tool's, or fields.server's, pending (undecided, live)
--       requests already number limits.tool, or limits.server (no limits:
--       none); nothing is opened then.  (A principal's limit, once calls
--       carry one, is one more entry counted the same way.)
--   store:approval_take(id) -> taken, status: true when a granted use was
--       consumed (atomically: two deciders never share one use); else
--       false and "pending" | "denied" | "used" | nil (none, or expired)
--   store:approval_decide(id, "grant" | "deny"[, opts]) -> record | nil,
--       message, code: a grant lets the request's uses (opts.uses) through
--       for its ttl (opts.ttl seconds) from now; the record gains
--       decided_by (opts.by), decided_at (the store's clock) and note
--       (opts.note).  Options M.decision_opts refuses decide nothing
--       (nil, message, "INVALID")
--   store:approval(id) -> record | nil;  store:approvals() -> { record, ... }
--   store:pin_report(registry_hash, server, tool, change) -> true the first
--       time this change of this tool is reported under this registry.
--       Of tools the registry lacks (change "added") a server keeps
--       MAX_ADDED_REPORTS per registry; past them each report, and a
--       report {change = "more", count = n} (a listing's tail, counted by
--       the gateway), adds to the server's one record {tool = "", change =
--       {change = "more", count =}} (true when it made that record).  A
--       store that cannot keep a report raises (a full shared dict): the
--       gateway then keeps a changed tool itself (toolgate.mcp)
--   store:pin_change(registry_hash, server, tool) -> change | nil (a tool
--       whose upstream no longer matches its pin)
--   store:reserve_pins(registry_hash, tools) (optional: a store that can
--       fill up) makes room, while there is some, for a mark per registry
--       tool ({server =, name =}) that keeps a changed pin whose report no
--       longer fits: pin_change then answers {tool =, change = "changed",
--       stored = false}, and pin_reports lists it so
--   store:pin_reports() -> { {registry_hash =, server =, tool =, change =, since =}, ... }
--   store:quarantine_server(registry_hash, server, reason)
--   store:server_quarantine(registry_hash, server) -> { reason =, since = } | nil
--   store:quarantined_servers() -> { {registry_hash =, server =, reason =, since =}, ... }
--   store:exchange_put(kind, server, key, record, ttl, limit) -> true |
--       nil, "full": keeps what toolgate.mcp.rounds remembers of a multi
--       round-trip request (kind "round") or a task ("task") for ttl
--       seconds (a JSON-able table); a new key is refused when the server
--       already keeps limit live ones of the kind, an existing one is
--       replaced (and its ttl starts again)
--   store:exchange(kind, server, key) -> record | nil (none, or expired)
--   store:quota_take(takes) -> true | false, i, retry_after | nil, message,
--       "UNAVAILABLE": the quota stage's count (toolgate.quota).  takes =
--       { {key =, limit =, window =}, ... }: a slot of each key's fixed
--       window (M.quota_window: windows start at whole multiples of window
--       seconds, on the store's clock) is taken, atomically for all or
--       none; false when takes[i]'s window already holds limit calls, and
--       retry_after the whole seconds until it ends.  A store that cannot
--       count (Redis away, a full dict) answers nil: the call is refused.
-- A store kept elsewhere (toolgate.state.redis) may be unreachable: then
-- approval_take is false, "unavailable" (no use taken: the call stays
-- deferred), approval_open false, approval_decide and approval nil, message,
-- "UNAVAILABLE", approvals nil, message; and it may add health() -> {up =,
-- age =, pending =, errors =} for the host's metrics.
-- approval record = { id =, status = "pending" | "granted" | "denied" | "used",
--   binding =, server =, tool =, code =, message =, args_digest =,
--   arguments =, arguments_bytes =, arguments_truncated =, uses =, created =,
--   expires =, decided_by =, decided_at =, note =, principal = }: principal is who asked (nil: nobody
--   named; toolgate.mcp), arguments is the exact canonical JSON text args_digest
--   hashed, or its first toolgate.mcp.MAX_APPROVAL_ARGUMENTS_BYTES
--   (arguments_truncated true; arguments_bytes the whole size).  Pins and
-- quarantines are kept per registry hash: a new registry (the operator
-- accepted the change) starts clean.
-- Epochs are stored and compared as the canonical JSON text of the epoch
-- value (the string "e7" as "\"e7\"", the number 1 as "1"), one rule for
-- probes and for every kind of plan.
-- @module toolgate.state

local core = require "toolgate.core"

local M = {}

--- How many tools a server lists that its registry lacks are kept as a
-- record each, per server and registry hash; the rest are counted in one
-- record (a server listing made-up tools must not fill the store).
M.MAX_ADDED_REPORTS = 100

-- A decision's note and decider are kept with the record on every store:
-- bounded, so that one decision cannot fill a shared dict.
M.MAX_DECISION_NOTE_BYTES = 1024
M.MAX_DECIDED_BY_BYTES = 256

local function whole(n, max) return type(n) == "number" and n >= 1 and n <= max and math.floor(n) == n end

--- decision_opts(verdict, opts) -> true | nil, message, "INVALID": whether
-- a store may decide with these (every store asks before it decides).
-- uses: a whole number of calls, a grant's only; ttl: whole seconds (Redis
-- expires keys by whole seconds); at most a year of either.
function M.decision_opts(verdict, opts)
  local function invalid(why) return nil, why, "INVALID" end
  if verdict ~= "grant" and verdict ~= "deny" then return invalid("a verdict is grant or deny") end
  opts = opts or {}
  if opts.uses ~= nil then
    if verdict ~= "grant" then return invalid("uses go with a grant") end
    if not whole(opts.uses, 1000000) then return invalid("uses is a whole number from 1 to 1000000") end
  end
  if opts.ttl ~= nil and not whole(opts.ttl, 366 * 86400) then
    return invalid("ttl is whole seconds from 1 to a year")
  end
  if opts.note ~= nil and (type(opts.note) ~= "string" or #opts.note > M.MAX_DECISION_NOTE_BYTES) then
    return invalid("a note is text of at most " .. M.MAX_DECISION_NOTE_BYTES .. " bytes")
  end
  if opts.by ~= nil and (type(opts.by) ~= "string" or #opts.by > M.MAX_DECIDED_BY_BYTES) then
    return invalid("who decided is text of at most " .. M.MAX_DECIDED_BY_BYTES .. " bytes")
  end
  return true
end

--- decide(r, verdict, opts, now) -> r, its status, ttl, uses, expires and
-- decided_* fields set (opts already checked by decision_opts).
function M.decide(r, verdict, opts, now)
  opts = opts or {}
  r.status = verdict == "grant" and "granted" or "denied"
  r.ttl = opts.ttl or r.ttl
  if verdict == "grant" then r.uses = opts.uses or r.uses end
  r.expires = now + r.ttl
  r.decided_at, r.decided_by, r.note = now, opts.by, opts.note
  return r
end

local Memory = {}
Memory.__index = Memory

--- The in-process store (what toolgate.new uses unless given opts.state).
-- memory([{clock = fn}]) -> store; clock() gives the time in seconds
-- (default os.time), which approvals expire by.  Its determinism records
-- are the core's (tg_store_t), so that classify reads and writes them where
-- it decides, and every reader here sees the same records; approvals, pins
-- and server quarantines are kept here, in Lua.
function M.memory(opts)
  local clock = opts and opts.clock or os.time
  local e = assert(core.new_engine())
  return setmetatable({ c = assert(e:store()), approvals_by_id = {}, pins = {}, added = {}, servers = {},
    quotas = {}, clock = clock }, Memory)
end

local function key(server, name) return (server or "") .. "\0" .. name end

function Memory:get(server, name)
  return self.c:get(server, name)
end

-- Writes that cannot get memory raise: a quarantine must not go missing.
function Memory:verified(server, name, epoch)
  assert(self.c:verified(server, name, epoch))
end

-- A declaration already quarantined keeps its first reason and time: that is
-- where a person starts looking.  Its time is the store's clock (the core
-- keeps whole seconds), as every other store's.
function Memory:quarantine(server, name, reason, epoch)
  assert(self.c:quarantine(server, name, reason, epoch, math.floor(self.clock())))
end

function Memory:records()
  local out = {}
  for _, r in ipairs(self.c:records()) do out[key(r.server, r.name)] = r.record end
  return out
end

local function live(self, id)
  local r = self.approvals_by_id[id]
  if r and r.expires <= self.clock() then
    self.approvals_by_id[id] = nil
    return nil
  end
  return r
end

-- -> how many requests of the server, and of its tool, are pending
local function pending(self, server, tool)
  local of_server, of_tool = 0, 0
  for id in pairs(self.approvals_by_id) do
    local r = live(self, id)
    if r and r.status == "pending" and r.server == server then
      of_server = of_server + 1
      if r.tool == tool then of_tool = of_tool + 1 end
    end
  end
  return of_server, of_tool
end

function Memory:approval_open(id, fields, ttl, uses, limits)
  if live(self, id) then return false end
  if limits then
    local of_server, of_tool = pending(self, fields.server, fields.tool)
    if of_tool >= limits.tool then return false, "full", "tool" end
    if of_server >= limits.server then return false, "full", "server" end
  end
  local now = self.clock()
  local r = { id = id, status = "pending", created = now, expires = now + ttl, ttl = ttl, uses = uses }
  for k, v in pairs(fields) do r[k] = v end
  self.approvals_by_id[id] = r
  return true
end

function Memory:approval_take(id)
  local r = live(self, id)
  if not r then return false, nil end
  if r.status ~= "granted" then return false, r.status end
  r.uses = r.uses - 1
  if r.uses <= 0 then r.status = "used" end
  return true, r.status
end

function Memory:approval_decide(id, verdict, opts)
  local ok, why, code = M.decision_opts(verdict, opts)
  if not ok then return nil, why, code end
  local r = live(self, id)
  if not r then return nil, "no approval request " .. tostring(id) .. " (unknown or expired)", "NOT_FOUND" end
  if r.status ~= "pending" then return nil, "approval " .. id .. " is already " .. r.status, "ALREADY_DECIDED" end
  return M.decide(r, verdict, opts, self.clock())
end

function Memory:approval(id) return live(self, id) end

function Memory:approvals()
  local out = {}
  for id in pairs(self.approvals_by_id) do out[#out + 1] = live(self, id) end
  table.sort(out, function(a, b) return a.id < b.id end)
  return out
end

-- A server's added tools past the bound, and a "more" report (a listing's
-- tail the gateway counted), are counted in its one "more" record.
function Memory:pin_report(registry_hash, server, tool, change)
  local kind = change.change
  local k = registry_hash .. "\0" .. key(server, tool) .. "\0" .. kind
  if kind ~= "more" and self.pins[k] then return false end
  if kind == "added" or kind == "more" then
    local sk = registry_hash .. "\0" .. server
    local n = self.added[sk] or 0
    if kind == "added" and n < M.MAX_ADDED_REPORTS then
      self.added[sk] = n + 1
    else
      local by = kind == "more" and change.count or 1
      k = sk .. "\0\0more"
      local more = self.pins[k]
      if more then
        more.change.count = more.change.count + by
        return false
      end
      tool, change = "", { tool = "", change = "more", count = by }
    end
  end
  self.pins[k] = { registry_hash = registry_hash, server = server, tool = tool, change = change, since = self.clock() }
  return true
end

function Memory:pin_change(registry_hash, server, tool)
  local r = self.pins[registry_hash .. "\0" .. key(server, tool) .. "\0changed"]
  return r and r.change
end

function Memory:pin_reports()
  local out = {}
  for _, r in pairs(self.pins) do out[#out + 1] = r end
  table.sort(out, function(a, b) return a.server .. "\0" .. a.tool < b.server .. "\0" .. b.tool end)
  return out
end

function Memory:quarantine_server(registry_hash, server, reason)
  local k = registry_hash .. "\0" .. server
  if not self.servers[k] then self.servers[k] = { reason = reason, since = self.clock() } end
end

function Memory:server_quarantine(registry_hash, server)
  return self.servers[registry_hash .. "\0" .. server]
end

function Memory:quarantined_servers()
  local out = {}
  for k, r in pairs(self.servers) do
    local hash, server = k:match("^(.-)%z(.*)$")
    out[#out + 1] = { registry_hash = hash, server = server, reason = r.reason, since = r.since }
  end
  table.sort(out, function(a, b) return a.server < b.server end)
  return out
end

-- Exchanges (toolgate.mcp.rounds): counted per kind and server, the
-- expired ones dropped when the count reaches the limit.
function Memory:exchange_put(kind, server, k, record, ttl, limit)
  local all = self.exchanges or {}
  self.exchanges = all
  local sk = kind .. "\0" .. server
  local t = all[sk] or { n = 0, records = {} }
  all[sk] = t
  local now = self.clock()
  local old = t.records[k]
  if not old or old.expires <= now then
    if t.n >= limit then
      local n = 0
      for rk, r in pairs(t.records) do
        if r.expires <= now then t.records[rk] = nil else n = n + 1 end
      end
      t.n = n
      if n >= limit then return nil, "full" end
    end
    if not t.records[k] then t.n = t.n + 1 end
  end
  t.records[k] = { record = record, expires = now + ttl }
  return true
end

function Memory:exchange(kind, server, k)
  local t = self.exchanges and self.exchanges[kind .. "\0" .. server]
  local r = t and t.records[k]
  if not r or r.expires <= self.clock() then return nil end
  return r.record
end

--- quota_window(now, window) -> the number of the fixed window of window
-- seconds that holds the time now, and the whole seconds until it ends (at
-- least 1): every store counts the same windows.
function M.quota_window(now, window)
  local w = math.floor(now / window)
  return w, math.max(1, math.ceil((w + 1) * window - now))
end

-- Quotas: a count per key and window; a key of an earlier window counts
-- nothing, and is replaced by the next take.  Every QUOTA_SWEEP takes the
-- keys whose window ended are dropped (a key per principal must not pile
-- up in a long-lived process).
local QUOTA_SWEEP = 1000
function Memory:quota_take(takes)
  local counts, now = self.quotas, self.clock()
  for i, t in ipairs(takes) do
    local w, left = M.quota_window(now, t.window)
    local c = counts[t.key]
    if c and c.w == w and c.n >= t.limit then return false, i, left end
  end
  self.quota_takes = (self.quota_takes or 0) + 1
  if self.quota_takes % QUOTA_SWEEP == 0 then
    for k, c in pairs(counts) do
      if c.ends <= now then counts[k] = nil end
    end
  end
  for _, t in ipairs(takes) do
    local w = M.quota_window(now, t.window)
    local c = counts[t.key]
    if c and c.w == w then c.n = c.n + 1 else counts[t.key] = { w = w, n = 1, ends = (w + 1) * t.window } end
  end
  return true
end

--- core_store(store) -> the core's store behind an in-process store, nil
-- for any other (the engine then asks the store's methods).
function M.core_store(store)
  return getmetatable(store) == Memory and store.c or nil
end

return M
