--- toolgate.state.sqlite: the toolgate.state store in an SQLite file, so
-- that determinism records, approvals, pin reports, quarantined servers
-- and the decision log survive a restart, and several processes (stdio
-- proxies, `toolgate approvals`) share them.
--
--   local store = assert(require("toolgate.state.sqlite").open(path[, {clock =, busy_ms =}]))
--
-- Through Debian's lua-sql-sqlite3 (LuaSQL), which has builds for Lua 5.4
-- and for LuaJIT (5.1).  Every read-modify-write is one transaction begun
-- with BEGIN IMMEDIATE (the write lock taken first, so two processes never
-- both read a grant's last use); a process that finds the file locked
-- waits up to busy_ms (default 5000) before the operation fails, and a
-- failure raises: the gateway that called answers with an error, never an
-- accept.  The file is in WAL mode (readers do not wait for a writer).
-- Records are JSON, epochs their canonical JSON text, as in the other
-- stores.  Beyond the toolgate.state interface:
--   store:log(line | lines)          appends decision log lines (JSON), in one transaction
--   store:log_lines(after, limit)    -> { {seq =, time =, line =}, ... } after seq
--   store:close()
-- @module toolgate.state.sqlite

local decision = require "toolgate.decision"
local json = require "toolgate.json"
local proc = require "toolgate.proc"
local value = require "toolgate.value"

local state = require "toolgate.state"
local MAX_ADDED_REPORTS = state.MAX_ADDED_REPORTS

local M = {}

M.DEFAULT_BUSY_MS = 5000
local ENOENT = 2 -- Linux

local SCHEMA = {
  [[CREATE TABLE IF NOT EXISTS determinism (server TEXT NOT NULL, name TEXT NOT NULL, verified_epoch TEXT,
    quarantined TEXT, PRIMARY KEY (server, name))]],
  [[CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, record TEXT NOT NULL, status TEXT NOT NULL,
    uses INTEGER NOT NULL, ttl INTEGER NOT NULL, created REAL NOT NULL, expires REAL NOT NULL)]],
  [[CREATE TABLE IF NOT EXISTS pins (registry_hash TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
    change TEXT NOT NULL, record TEXT NOT NULL, since REAL NOT NULL,
    PRIMARY KEY (registry_hash, server, tool, change))]],
  [[CREATE TABLE IF NOT EXISTS servers (registry_hash TEXT NOT NULL, server TEXT NOT NULL, reason TEXT,
    since REAL NOT NULL, PRIMARY KEY (registry_hash, server))]],
  [[CREATE TABLE IF NOT EXISTS decisions (seq INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,
    line TEXT NOT NULL)]],
  [[CREATE TABLE IF NOT EXISTS exchanges (kind TEXT NOT NULL, server TEXT NOT NULL, key TEXT NOT NULL,
    record TEXT NOT NULL, expires REAL NOT NULL, PRIMARY KEY (kind, server, key))]],
  [[CREATE TABLE IF NOT EXISTS quotas (key TEXT PRIMARY KEY, win INTEGER NOT NULL, n INTEGER NOT NULL,
    expires REAL NOT NULL)]],
}

local Store = {}
Store.__index = Store

local function encode(t) return (assert(value.encode(t))) end
local function decode(text) return text and json.decode(decision.codec(), text) or nil end

-- A failing statement raises with the statement's first words: a write
-- that did not happen must not pass as one that did.
local function run(self, sql)
  local r, err = self.conn:execute(sql)
  if r == nil then error("toolgate sqlite state (" .. self.path .. "): " .. tostring(err) .. " in "
    .. sql:sub(1, 60), 0) end
  return r
end

-- A statement: the rows it changed (a PRAGMA's cursor is closed).  It
-- may have changed what the memo holds.
local function exec(self, sql)
  self.memo = {}
  local r = run(self, sql)
  if type(r) ~= "number" then
    r:close()
    return 0
  end
  return r
end

local function rows(self, sql)
  local cur = run(self, sql)
  local out = {}
  while true do
    local row = cur:fetch({}, "a")
    if not row then break end
    out[#out + 1] = row
  end
  cur:close()
  return out
end

local function str(self, s)
  if s == nil then return "NULL" end
  return "'" .. self.conn:escape(tostring(s)) .. "'"
end

local function num(n) return string.format("%.17g", n) end

-- The per-call reads (is the server quarantined, did the tool's pin
-- change) are remembered until the file changes: PRAGMA data_version
-- moves when another connection commits, and every write here clears the
-- memo; one cheap query instead of two lookups on every call.
local function memo(self)
  local cur = run(self, "PRAGMA data_version")
  local v = cur:fetch()
  cur:close()
  if v ~= self.data_version then self.data_version, self.memo = v, {} end
  return self.memo
end

-- One transaction around fn(), the write lock taken at its start.
local function tx(self, fn, ...)
  exec(self, "BEGIN IMMEDIATE")
  local ok, a, b, c = pcall(fn, ...)
  if not ok then
    self.conn:execute("ROLLBACK")
    error(a, 0)
  end
  exec(self, "COMMIT")
  return a, b, c
end

--- open(path[, opts]) -> store | nil, message.  opts.clock() gives the time
-- in seconds (default os.time); opts.busy_ms how long to wait for a lock.
function M.open(path, opts)
  if type(path) ~= "string" or path == "" then error("sqlite.open: a file path expected", 2) end
  opts = opts or {}
  local ok, driver = pcall(require, "luasql.sqlite3")
  if not ok then return nil, "SQLite state needs lua-sql-sqlite3 (Debian: apt-get install lua-sql-sqlite3)" end
  local env = driver.sqlite3()
  -- the file and its -wal and -shm (SQLite gives them the file's mode) are
  -- the user's alone: made 0600, and one an older toolgate made 0644 mended
  local umask = proc.umask(63) -- 077
  local conn, err = env:connect(path)
  if not conn then
    proc.umask(umask)
    env:close()
    return nil, "cannot open " .. path .. ": " .. tostring(err)
  end
  local self = setmetatable({ env = env, conn = conn, path = path, clock = opts.clock or os.time, memo = {} }, Store)
  local okset, serr = pcall(function()
    for _, suffix in ipairs({ "", "-wal", "-shm" }) do
      local okm, merr, errno = proc.chmod(path .. suffix, 384) -- 0600
      if not okm and errno ~= ENOENT then error("cannot make " .. path .. suffix .. " private: " .. merr, 0) end
    end
    exec(self, "PRAGMA busy_timeout = " .. string.format("%d", opts.busy_ms or M.DEFAULT_BUSY_MS))
    rows(self, "PRAGMA journal_mode = WAL")
    -- WAL's own durability: a commit survives a crash of the process, and
    -- one of the machine loses at most the last commits, never the file
    exec(self, "PRAGMA synchronous = NORMAL")
    tx(self, function()
      for _, s in ipairs(SCHEMA) do exec(self, s) end
    end)
  end)
  proc.umask(umask)
  if not okset then
    self:close()
    return nil, tostring(serr)
  end
  return self
end

function Store:close()
  if self.conn then self.conn:close() end
  if self.env then self.env:close() end
  self.conn, self.env = nil, nil
end

-- Determinism (the toolgate.state interface) -----------------------------------

local function det_where(self, server, name)
  return " WHERE server = " .. str(self, server or "") .. " AND name = " .. str(self, name)
end

function Store:get(server, name)
  local r = rows(self, "SELECT verified_epoch, quarantined FROM determinism" .. det_where(self, server, name))[1]
  if not r then return nil end
  return { verified_epoch = r.verified_epoch, quarantined = decode(r.quarantined) }
end

-- A probe that passed in epoch: verified there; a quarantine from another
-- epoch is lifted.
function Store:verified(server, name, epoch)
  tx(self, function()
    local r = self:get(server, name)
    local q = r and r.quarantined
    local keep = q and q.epoch == epoch and encode(q) or nil
    exec(self, "INSERT OR REPLACE INTO determinism VALUES (" .. str(self, server or "") .. ", " .. str(self, name)
      .. ", " .. str(self, epoch) .. ", " .. str(self, keep) .. ")")
  end)
end

-- A declaration already quarantined keeps its first reason and time.
function Store:quarantine(server, name, reason, epoch)
  tx(self, function()
    local r = self:get(server, name)
    local q = r and r.quarantined or { reason = reason, since = self.clock(), epoch = epoch }
    exec(self, "INSERT OR REPLACE INTO determinism VALUES (" .. str(self, server or "") .. ", " .. str(self, name)
      .. ", NULL, " .. str(self, encode(q)) .. ")")
  end)
end

function Store:records()
  local out = {}
  for _, r in ipairs(rows(self, "SELECT server, name, verified_epoch, quarantined FROM determinism")) do
    out[r.server .. "\0" .. r.name] = { verified_epoch = r.verified_epoch, quarantined = decode(r.quarantined) }
  end
  return out
end

-- Approvals ----------------------------------------------------------------

local function record_of(row)
  local r = decode(row.record)
  r.id, r.status, r.uses, r.ttl = row.id, row.status, math.floor(tonumber(row.uses)), math.floor(tonumber(row.ttl))
  r.created, r.expires = tonumber(row.created), tonumber(row.expires)
  return r
end

-- The request id names, unless it expired (then it is gone).
local function live(self, id)
  local row = rows(self, "SELECT * FROM approvals WHERE id = " .. str(self, id))[1]
  if not row then return nil end
  if tonumber(row.expires) <= self.clock() then
    exec(self, "DELETE FROM approvals WHERE id = " .. str(self, id))
    return nil
  end
  return record_of(row)
end

local function save(self, r)
  local fields = {}
  for k, v in pairs(r) do
    if k ~= "id" and k ~= "status" and k ~= "uses" and k ~= "ttl" and k ~= "created" and k ~= "expires" then
      fields[k] = v
    end
  end
  exec(self, "INSERT OR REPLACE INTO approvals VALUES (" .. str(self, r.id) .. ", " .. str(self, encode(fields)) .. ", "
    .. str(self, r.status) .. ", " .. num(r.uses) .. ", " .. num(r.ttl) .. ", " .. num(r.created) .. ", "
    .. num(r.expires) .. ")")
end

-- -> how many requests of the server, and of its tool, are pending (the
-- server and tool are in the record's JSON: decoded here, at most the
-- server's limit of them)
local function pending(self, server, tool, now)
  local of_server, of_tool = 0, 0
  for _, row in ipairs(rows(self, "SELECT record FROM approvals WHERE status = 'pending' AND expires > " .. num(now))) do
    local r = decode(row.record)
    if r.server == server then
      of_server = of_server + 1
      if r.tool == tool then of_tool = of_tool + 1 end
    end
  end
  return of_server, of_tool
end

function Store:approval_open(id, fields, ttl, uses, limits)
  return tx(self, function()
    if live(self, id) then return false end
    local now = self.clock()
    if limits then
      local of_server, of_tool = pending(self, fields.server, fields.tool, now)
      if of_tool >= limits.tool then return false, "full", "tool" end
      if of_server >= limits.server then return false, "full", "server" end
    end
    local r = { id = id, status = "pending", created = now, expires = now + ttl, ttl = ttl, uses = uses }
    for k, v in pairs(fields) do r[k] = v end
    save(self, r)
    return true
  end)
end

function Store:approval_take(id)
  return tx(self, function()
    local r = live(self, id)
    if not r then return false, nil end
    if r.status ~= "granted" then return false, r.status end
    r.uses = r.uses - 1
    if r.uses <= 0 then r.status = "used" end
    save(self, r)
    return true, r.status
  end)
end

function Store:approval_decide(id, verdict, opts)
  local ok, why, code = state.decision_opts(verdict, opts)
  if not ok then return nil, why, code end
  return tx(self, function()
    local r = live(self, id)
    if not r then return nil, "no approval request " .. tostring(id) .. " (unknown or expired)", "NOT_FOUND" end
    if r.status ~= "pending" then return nil, "approval " .. id .. " is already " .. r.status, "ALREADY_DECIDED" end
    save(self, state.decide(r, verdict, opts, self.clock()))
    return r
  end)
end

function Store:approval(id)
  return tx(self, live, self, id)
end

function Store:approvals()
  return tx(self, function()
    exec(self, "DELETE FROM approvals WHERE expires <= " .. num(self.clock()))
    local out = {}
    for _, row in ipairs(rows(self, "SELECT * FROM approvals ORDER BY id")) do out[#out + 1] = record_of(row) end
    return out
  end)
end

-- Pins and quarantined servers -----------------------------------------------

local function insert_pin(self, registry_hash, server, tool, change)
  return exec(self, "INSERT OR IGNORE INTO pins VALUES (" .. str(self, registry_hash) .. ", " .. str(self, server)
    .. ", " .. str(self, tool) .. ", " .. str(self, change.change) .. ", " .. str(self, encode(change)) .. ", "
    .. num(self.clock()) .. ")") == 1
end

-- A server's added tools past toolgate.state.MAX_ADDED_REPORTS, and a
-- "more" report (a listing's tail the gateway counted), are counted in its
-- one "more" record.
function Store:pin_report(registry_hash, server, tool, change)
  local kind = change.change
  if kind ~= "added" and kind ~= "more" then return insert_pin(self, registry_hash, server, tool, change) end
  return tx(self, function()
    local where = " WHERE registry_hash = " .. str(self, registry_hash) .. " AND server = " .. str(self, server)
    if kind == "added" then
      if rows(self, "SELECT 1 FROM pins" .. where .. " AND tool = " .. str(self, tool) .. " AND change = 'added'")[1] then
        return false
      end
      local n = tonumber(rows(self, "SELECT COUNT(*) AS n FROM pins" .. where .. " AND change = 'added'")[1].n)
      if n < MAX_ADDED_REPORTS then return insert_pin(self, registry_hash, server, tool, change) end
    end
    local by = kind == "more" and change.count or 1
    local more = rows(self, "SELECT record FROM pins" .. where .. " AND tool = '' AND change = 'more'")[1]
    if not more then
      return insert_pin(self, registry_hash, server, "", { tool = "", change = "more", count = by })
    end
    local r = decode(more.record)
    r.count = r.count + by
    exec(self, "UPDATE pins SET record = " .. str(self, encode(r)) .. where .. " AND tool = '' AND change = 'more'")
    return false
  end)
end

function Store:pin_change(registry_hash, server, tool)
  local m, k = memo(self), "p" .. registry_hash .. "\0" .. server .. "\0" .. tool
  if m[k] == nil then
    local r = rows(self, "SELECT record FROM pins WHERE registry_hash = " .. str(self, registry_hash)
      .. " AND server = " .. str(self, server) .. " AND tool = " .. str(self, tool) .. " AND change = 'changed'")[1]
    m[k] = r and decode(r.record) or false
  end
  return m[k] or nil
end

function Store:pin_reports()
  local out = {}
  for _, r in ipairs(rows(self, "SELECT * FROM pins ORDER BY server, tool, change")) do
    out[#out + 1] = { registry_hash = r.registry_hash, server = r.server, tool = r.tool, change = decode(r.record),
      since = tonumber(r.since) }
  end
  return out
end

function Store:quarantine_server(registry_hash, server, reason)
  exec(self, "INSERT OR IGNORE INTO servers VALUES (" .. str(self, registry_hash) .. ", " .. str(self, server) .. ", "
    .. str(self, reason) .. ", " .. num(self.clock()) .. ")")
end

function Store:server_quarantine(registry_hash, server)
  local m, k = memo(self), "s" .. registry_hash .. "\0" .. server
  if m[k] == nil then
    local r = rows(self, "SELECT reason, since FROM servers WHERE registry_hash = " .. str(self, registry_hash)
      .. " AND server = " .. str(self, server))[1]
    m[k] = r and { reason = r.reason, since = tonumber(r.since) } or false
  end
  return m[k] or nil
end

function Store:quarantined_servers()
  local out = {}
  for _, r in ipairs(rows(self, "SELECT * FROM servers ORDER BY server")) do
    out[#out + 1] = { registry_hash = r.registry_hash, server = r.server, reason = r.reason, since = tonumber(r.since) }
  end
  return out
end

-- The decision log ---------------------------------------------------------------

-- Exchanges (toolgate.mcp.rounds) --------------------------------------------

-- The expired ones of a server's kind go when a new one is counted.
function Store:exchange_put(kind, server, key, record, ttl, limit)
  return tx(self, function()
    local now = self.clock()
    local where = "kind = " .. str(self, kind) .. " AND server = " .. str(self, server)
    local k = str(self, key)
    local old = rows(self, "SELECT expires FROM exchanges WHERE " .. where .. " AND key = " .. k)[1]
    if not old or tonumber(old.expires) <= now then
      exec(self, "DELETE FROM exchanges WHERE " .. where .. " AND expires <= " .. num(now))
      local n = tonumber(rows(self, "SELECT count(*) AS n FROM exchanges WHERE " .. where)[1].n)
      if n >= limit then return nil, "full" end
    end
    exec(self, "INSERT OR REPLACE INTO exchanges VALUES (" .. str(self, kind) .. ", " .. str(self, server) .. ", " .. k
      .. ", " .. str(self, encode(record)) .. ", " .. num(now + ttl) .. ")")
    return true
  end)
end

function Store:exchange(kind, server, key)
  local row = rows(self, "SELECT record, expires FROM exchanges WHERE kind = " .. str(self, kind) .. " AND server = "
    .. str(self, server) .. " AND key = " .. str(self, key))[1]
  if not row or tonumber(row.expires) <= self.clock() then return nil end
  return decode(row.record)
end

-- log(line) appends a line; log(lines) a list of them, in one transaction.
-- Quotas (toolgate.quota): a row per key, its window and count, taken in
-- one transaction for every key (the write lock first: two proxies never
-- both take a key's last slot); rows of ended windows are dropped there.
function Store:quota_take(takes)
  local now = self.clock()
  return tx(self, function()
    exec(self, "DELETE FROM quotas WHERE expires <= " .. num(now))
    local wins = {}
    for i, t in ipairs(takes) do
      local w, left = state.quota_window(now, t.window)
      local row = rows(self, "SELECT win, n FROM quotas WHERE key = " .. str(self, t.key))[1]
      if row and tonumber(row.win) == w and tonumber(row.n) >= t.limit then return false, i, left end
      wins[i] = w
    end
    for i, t in ipairs(takes) do
      local w, k = wins[i], str(self, t.key)
      local row = rows(self, "SELECT win FROM quotas WHERE key = " .. k)[1]
      if row and tonumber(row.win) == w then
        exec(self, "UPDATE quotas SET n = n + 1 WHERE key = " .. k)
      else
        exec(self, "INSERT OR REPLACE INTO quotas VALUES (" .. k .. ", " .. string.format("%d", w) .. ", 1, "
          .. num((w + 1) * t.window) .. ")")
      end
    end
    return true
  end)
end

function Store:log(line)
  if type(line) == "string" then line = { line } end
  local now = num(self.clock())
  tx(self, function()
    for _, l in ipairs(line) do
      exec(self, "INSERT INTO decisions (time, line) VALUES (" .. now .. ", " .. str(self, l) .. ")")
    end
  end)
end

function Store:log_lines(after, limit)
  local out = {}
  for _, r in ipairs(rows(self, "SELECT seq, time, line FROM decisions WHERE seq > " .. string.format("%d", after or 0)
    .. " ORDER BY seq LIMIT " .. string.format("%d", limit or -1))) do
    out[#out + 1] = { seq = math.floor(tonumber(r.seq)), time = tonumber(r.time), line = r.line }
  end
  return out
end

return M
