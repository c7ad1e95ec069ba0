--- toolgate.state.redis: the toolgate.state store of a fleet of nginx
-- gateways, kept on Redis, so a quarantine, a pin change or an approval
-- seen through one node holds on every node.
--
--   local store = require("toolgate.state.redis").new(ngx.shared.toolgate, {
--     host = "127.0.0.1", port = 6379, prefix = "toolgate:", sync_interval = 0.25 })
--   store:start()   -- in init_worker: the timer that keeps the local copy
--
-- Two kinds of state, two paths:
--
-- * Approvals live only on Redis, read and written in the request that
--   needs them (access and content phases: cosockets).  Opening a request is
--   a script (SET EX unless it exists or its tool's pending requests are at
--   their limit); deciding one, and taking a granted use, are scripts run by
--   Redis (EVALSHA), so two nodes never share one use and one decision wins.
--   When Redis cannot be reached no use is taken: the call stays deferred.
-- * Determinism records, pin reports and quarantined servers are read on
--   every call, so each node reads them from a copy in its lua_shared_dict
--   (toolgate.state.shared_dict's layout, what the single-node store reads),
--   never from Redis on the hot path.  A write goes into the copy at once
--   (this node refuses from then on), into a journal in the dict, and to
--   Redis from a timer started at once (ngx.timer.at 0: header and body
--   filters, where tools/list answers are read, have no cosockets).  Redis
--   keeps the first write of each record (HSETNX in a script that also
--   bumps a version key); a write that fails stays in the journal and is
--   written when Redis answers again.  Worker 0 of each node polls the
--   version key every sync_interval and, when it moved, copies the fleet's
--   records into the dict: a change made through another node holds here
--   within sync_interval plus one round trip to Redis.  When Redis lost its
--   data (a version that went back, or a generation key that changed: the
--   first node to find none, or to find a Redis process other than the one
--   that made it, makes a new one), each node writes its copy's quarantines
--   and pin reports again.  A grant carries the generation it was made in
--   and is never used in another: a Redis restarted from an older snapshot
--   does not spend a spent use again (its call asks again).  The poll also
--   reads Redis's settings: one that may evict keys is not used (as if
--   unreachable) until it is noeviction.
--
-- While the copy is older than stale_after (no successful poll), a tool's
-- determinism verification is unread: get() answers it as unverified
-- (quarantined, reason "state store unavailable"), so argument disagreement
-- defers instead of rejecting.  Pins and quarantines already copied, and
-- those learned while away, keep being enforced.  health() says what the
-- host shows in /metrics.
--
-- Options of new (seconds for times):
--   host, port, database     the Redis server (default 127.0.0.1, 6379, 0)
--   password, username       AUTH (username: a Redis 6 ACL user)
--   ssl, ssl_verify, server_name   TLS to Redis (the nginx conf's
--                            lua_ssl_trusted_certificate verifies it)
--   prefix                   of every key (default "toolgate:"): one per deployment
--   connect_timeout, send_timeout, read_timeout   (default 0.2, 0.2, 0.2)
--   pool_size, keepalive_timeout   the connection pool (default 64, 60)
--   sync_interval            how often worker 0 polls the version (default 0.25)
--   stale_after              when the copy counts as unread (default 5 x sync_interval, at least 1)
--   journal                  the file that keeps the journal's quarantines and pin reports
--                            across a restart of nginx (M.open_journal, in the master;
--                            default toolgate-redis-journal in nginx's prefix)
-- Keys on Redis: {<prefix>}det:v, det:q (hashes, field "<server>\0<tool>"),
-- pins (field "<hash>\0<server>\0<tool>\0<change>"), servers (field
-- "<hash>\0<server>"), version (a counter), generation, run (the Redis
-- process it was made on), a:<id>, a#<id>, a+<id> (an approval, its
-- decision, its uses left "<n>@<generation>"; each with the approval's TTL),
-- ap:t:<server>\0<tool>, ap:s:<server> (the ids of the pending requests).
-- @module toolgate.state.redis

local decision = require "toolgate.decision"
local json = require "toolgate.json"
local shared_dict = require "toolgate.state.shared_dict"
local state = require "toolgate.state"
local value = require "toolgate.value"

-- Debian's lua-nginx-redis installs lua-resty-redis as nginx.redis;
-- OpenResty ships it as resty.redis.
local found, redis = pcall(require, "nginx.redis")
if not found then redis = require "resty.redis" end

local M = {}

local K = shared_dict.KEYS
local unpack = table.unpack or unpack -- luacheck: ignore 143

-- Options ------------------------------------------------------------------

local DEFAULTS = { host = "127.0.0.1", port = 6379, database = 0, prefix = "toolgate:", connect_timeout = 0.2,
  send_timeout = 0.2, read_timeout = 0.2, pool_size = 64, keepalive_timeout = 60, sync_interval = 0.25,
  ssl = false, ssl_verify = false }
local TYPES = { host = "string", port = "number", database = "number", password = "string", username = "string",
  prefix = "string", connect_timeout = "number", send_timeout = "number", read_timeout = "number",
  pool_size = "number", keepalive_timeout = "number", sync_interval = "number", stale_after = "number",
  ssl = "boolean", ssl_verify = "boolean", server_name = "string", journal = "string" }
local RANGES = { port = { 1, 65535 }, database = { 0, 1000 }, connect_timeout = { 0.001, 60 },
  send_timeout = { 0.001, 60 }, read_timeout = { 0.001, 60 }, pool_size = { 1, 10000 },
  keepalive_timeout = { 0.001, 3600 }, sync_interval = { 0.01, 60 }, stale_after = { 0.01, 3600 } }

--- options(o) -> the options checked, with defaults | nil, message
function M.options(o)
  if type(o) ~= "table" then return nil, "redis: a table of options expected" end
  local c = {}
  for k, v in pairs(o) do
    if not TYPES[k] then return nil, "redis." .. tostring(k) .. ": unknown option" end
    if type(v) ~= TYPES[k] then return nil, "redis." .. k .. ": must be a " .. TYPES[k] end
    local r = RANGES[k]
    if r and (v < r[1] or v > r[2]) then return nil, "redis." .. k .. ": must be from " .. r[1] .. " to " .. r[2] end
    c[k] = v
  end
  for k, v in pairs(DEFAULTS) do if c[k] == nil then c[k] = v end end
  if c.prefix == "" then return nil, "redis.prefix: must not be empty (one prefix per deployment)" end
  -- keys are "{" .. prefix .. "}" .. name: with no brace in a prefix, no
  -- deployment's keys start with another's "{prefix}", so no scan of one
  -- matches the other's keys (nor can a glob character widen the scan)
  if c.prefix:find("[{}*?%[%]\\]") then
    return nil, "redis.prefix: must not hold { } * ? [ ] or \\ (a deployment's scans would match another's keys)"
  end
  c.stale_after = c.stale_after or math.max(1, 5 * c.sync_interval)
  if c.stale_after < c.sync_interval then return nil, "redis.stale_after: must be at least sync_interval" end
  return c
end

-- Scripts Redis runs: each is one atomic step of the fleet's state -----------

-- The Redis process's run id: a new one at every start, never in a snapshot.
local RUN = "local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')\n"

-- KEYS generation run; ARGV a new generation: the generation of the
-- fleet's records and of the grants made in it (in fetch's pipeline, so
-- sent as EVAL).  A new one when there is none (a new fleet, a Redis that
-- lost its data) and when the process is not the one the run key names: a
-- restarted Redis may hold an older snapshot, its spent uses unspent.
local GENERATION_SCRIPT = RUN .. [[
local g = redis.call('GET', KEYS[1])
if not g or redis.call('GET', KEYS[2]) ~= run then
  g = ARGV[1]
  redis.call('SET', KEYS[1], g)
  redis.call('SET', KEYS[2], run)
end
return g]]

-- (in take and decide) a Redis restarted since the last poll has grants no
-- node has checked yet: nothing is taken or decided until one has
local CHECKED = RUN .. [[
if redis.call('GET', KEYS[5]) ~= run then
  return redis.error_reply('RESTARTED: Redis restarted and no node has checked its data since')
end
]]

local SCRIPTS = {
  -- KEYS det:v det:q version; ARGV field record: the first quarantine wins,
  -- the verified epoch goes
  quarantine = [[
local added = redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2])
local dropped = redis.call('HDEL', KEYS[1], ARGV[1])
if added + dropped > 0 then redis.call('INCR', KEYS[3]) end
return added]],
  -- KEYS det:v det:q version; ARGV field epoch: a quarantine from another
  -- epoch is lifted
  verified = [[
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local q = redis.call('HGET', KEYS[2], ARGV[1])
if q and cjson.decode(q).epoch ~= ARGV[2] then redis.call('HDEL', KEYS[2], ARGV[1]) end
redis.call('INCR', KEYS[3])
return 1]],
  -- KEYS hash version; ARGV field record: a pin report, a quarantined
  -- server: the first one is kept
  first = [[
local added = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
if added == 1 then redis.call('INCR', KEYS[2]) end
return added]],
  -- KEYS a+<id> a:<id> a#<id> generation run: takes one granted use
  -- ("<uses left>@<generation>"); the uses left, -1 for none.  A grant of
  -- another generation may be one a restore brought back: it is dropped,
  -- never used (the call asks again), -1.
  take = CHECKED .. [[
local left, g = string.match(redis.call('GET', KEYS[1]) or '', '^(%d+)@(.+)$')
if not left then return -1 end
if g ~= redis.call('GET', KEYS[4]) then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return -1
end
left = tonumber(left)
if left <= 0 then return -1 end
redis.call('SET', KEYS[1], (left - 1) .. '@' .. g, 'KEEPTTL')
return left - 1]],
  -- KEYS the quota keys; ARGV each key's limit and window (seconds): a
  -- slot of every key's fixed window on Redis's clock (the fleet's one
  -- clock), or none: 0, or {i, seconds until KEYS[i]'s window ends} when
  -- its window holds limit calls.  A key is a hash {w = window, n = count}
  -- that expires when its window ends.
  quota = [[
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local wins = {}
for i = 1, #KEYS do
  local limit, window = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local w = math.floor(now / window)
  local got = redis.call('HMGET', KEYS[i], 'w', 'n')
  local n = tonumber(got[1]) == w and tonumber(got[2]) or 0
  if n >= limit then return { i, math.max(1, math.ceil((w + 1) * window - now)) } end
  wins[i] = w
end
for i = 1, #KEYS do
  local window = tonumber(ARGV[2 * i])
  if tonumber(redis.call('HGET', KEYS[i], 'w')) == wins[i] then
    redis.call('HINCRBY', KEYS[i], 'n', 1)
  else
    redis.call('HSET', KEYS[i], 'w', string.format('%d', wins[i]), 'n', 1)
  end
  redis.call('PEXPIREAT', KEYS[i], string.format('%d', (wins[i] + 1) * window * 1000 + 1000))
end
return 0]],
  -- KEYS a:<id> pending-of-tool pending-of-server; ARGV request ttl id
  -- tool-limit server-limit (-1: none): opens the request unless one
  -- exists (0) or its tool's, or its server's, pending requests already
  -- number the limit ('tool', 'server').  Pending requests are sorted sets
  -- of ids scored by when they expire (Redis's clock), so an expired one
  -- leaves its place at the next open and a decided one at its decision.
  open = [[
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
for i, why in ipairs({ 'tool', 'server' }) do
  redis.call('ZREMRANGEBYSCORE', KEYS[i + 1], '-inf', now)
  local limit = tonumber(ARGV[i + 3])
  if limit >= 0 and redis.call('ZCARD', KEYS[i + 1]) >= limit then return why end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
for i = 2, 3 do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[2]), ARGV[3])
  if redis.call('TTL', KEYS[i]) < tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[i], ARGV[2]) end
end
return 1]],
  -- KEYS a:<id> a#<id> a+<id> generation run pending-of-tool
  -- pending-of-server; ARGV verdict ttl uses record id: one decision wins;
  -- the request, its decision and its uses (stamped with the generation)
  -- live ttl from now; it is pending no longer
  decide = CHECKED .. [[
if redis.call('EXISTS', KEYS[1]) == 0 then return 'NOT_FOUND' end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'EX', ARGV[2]) then return 'ALREADY_DECIDED' end
redis.call('ZREM', KEYS[6], ARGV[5])
redis.call('ZREM', KEYS[7], ARGV[5])
if ARGV[1] == 'grant' then redis.call('SET', KEYS[3], ARGV[3] .. '@' .. redis.call('GET', KEYS[4]), 'EX', ARGV[2]) end
redis.call('SET', KEYS[1], ARGV[4], 'EX', ARGV[2])
return 'OK']],
}

local function hex(bin) return (bin:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end

-- Local keys (in the node's dict, beside shared_dict's records) ---------------
-- "r:j#" the journal's last entry number, "r:j<" the next one to write,
-- "r:j:<n>" an entry, "r:gap:<n>" since when an entry numbered is missing; "r:ok" when a poll last succeeded, "r:ver" the version
-- it saw, "r:up" 1 or 0, "r:err:<op>" failures; "r:lock" the journal's
-- writer (one at a time per node, so a copy never drops a record being written).
local J_TAIL, J_HEAD, J_ENTRY, J_GAP = "r:j#", "r:j<", "r:j:", "r:gap:"
local GAP_SECONDS = 5
local OK_AT, VERSION, UP, ERRORS, LOCK = "r:ok", "r:ver", "r:up", "r:err:", "r:lock"
local GENERATION = "r:gen" -- the generation of Redis's records this node last saw
local UNFIT = "r:unfit" -- why Redis may not hold the fleet's state now (it may evict keys)
local WARNED = "r:warned:" -- a warning about Redis's settings given once
local REFUSING, REFUSED_AT = "r:refusing", "r:refused" -- Redis refused the poll's write; when it last did

-- Every write to the dict is a safe one: set, add and incr with an initial
-- value make room by evicting the least recently used records, and those may
-- be a quarantine, a pin report or a journal entry not yet on Redis.  A
-- write that does not fit raises (in sync: the poll fails, the copy goes
-- stale and counts as unverified); the records already kept stay.
local function put(d, key, v, ttl)
  local ok, err = d:safe_set(key, v, ttl)
  if not ok then error("toolgate redis: cannot store " .. key:sub(1, 40) .. " in the shared dict: " .. tostring(err), 2) end
end

-- incr(key, by) -> the new value, the key made first without evicting (nil, message: no room)
local function bump(d, key, by)
  local v = d:incr(key, by)
  if v then return v end
  d:safe_add(key, 0) -- "exists": another worker made it meanwhile
  return d:incr(key, by)
end

local Store = {}
Store.__index = Store

--- new(dict, options[, clock]) -> store: dict the node's ngx.shared dict
-- (the local copy, the journal, health), options as above (raises on bad
-- ones: a misconfigured gateway must not start).
function M.new(dict, o, clock)
  if type(dict) ~= "table" and type(dict) ~= "userdata" then error("redis.new: an ngx.shared dict expected", 2) end
  local c, err = M.options(o or {})
  if not c then error("toolgate.state.redis: " .. err, 2) end
  local p = "{" .. c.prefix .. "}"
  local self = setmetatable({ tag = p, dict = dict, c = c, clock = clock or ngx.now, here = shared_dict.new(dict, clock),
    keys = { detv = p .. "det:v", detq = p .. "det:q", pins = p .. "pins", servers = p .. "servers",
      version = p .. "version", generation = p .. "generation", run = p .. "run", probe = p .. "probe" },
    pool = table.concat({ "toolgate", c.host, c.port, c.database, c.username or "", p }, ":"),
    scripts = {} }, Store)
  for name, src in pairs(SCRIPTS) do self.scripts[name] = { src = src, sha = hex(ngx.sha1_bin(src)) } end
  -- how long the fleet stays degraded after Redis took writes again: every
  -- node's poll writes its journal, then this node's copies it
  self.grace = math.max(c.stale_after, 2 * c.sync_interval + c.connect_timeout + c.send_timeout + c.read_timeout)
  return self
end

-- quiet: counted only (a failed poll is logged once when the state changes, by mark)
local function count_error(self, op, err, quiet)
  bump(self.dict, ERRORS .. op, 1) -- (a count that does not fit is not worth an error of its own)
  if not quiet then ngx.log(ngx.WARN, "toolgate redis: ", op, " failed: ", tostring(err)) end
end

-- Connections ----------------------------------------------------------------

local function connect(self)
  local c = self.c
  local red = redis:new()
  local sock = rawget(red, "_sock")
  sock:settimeouts(c.connect_timeout * 1000, c.send_timeout * 1000, c.read_timeout * 1000)
  local ok, err = red:connect(c.host, c.port, { pool = self.pool, pool_size = c.pool_size })
  if not ok then return nil, "connect: " .. tostring(err) end
  if red:get_reused_times() == 0 then
    -- a new connection: TLS, AUTH and SELECT once, then it is pooled
    if c.ssl then
      -- (false: no TLS session kept for resumption; the connection itself is pooled)
      ok, err = sock:sslhandshake(false, c.server_name or c.host, c.ssl_verify)
      if not ok then
        red:close()
        return nil, "TLS: " .. tostring(err)
      end
    end
    if c.password then
      if c.username then ok, err = red:auth(c.username, c.password) else ok, err = red:auth(c.password) end
      if not ok then
        red:close()
        return nil, "AUTH: " .. tostring(err)
      end
    end
    if c.database ~= 0 then
      ok, err = red:select(c.database)
      if not ok then
        red:close()
        return nil, "SELECT: " .. tostring(err)
      end
    end
  end
  return red
end

-- connected(self, fn) -> fn(red)'s results | nil, message.  fn returns nil,
-- message on a socket error (the connection is closed) and false, message
-- on Redis's error answer (the connection goes back to the pool).
-- fn raising (a reply of a type it cannot use) is a failure too: the
-- connection is closed, the message returned.
local function connected(self, fn)
  local red, err = connect(self)
  if not red then return nil, err end
  local ran, res, ferr = pcall(fn, red)
  if not ran or res == nil then
    red:close()
    return nil, ran and ferr or ("unusable reply: " .. tostring(res))
  end
  red:set_keepalive(self.c.keepalive_timeout * 1000, self.c.pool_size)
  if res == false then return nil, "redis: " .. tostring(ferr) end
  return res
end

-- with(self, fn): connected, for what only a Redis fit for the fleet may
-- hold (approvals): none while worker 0's poll finds it may evict keys.
local function with(self, fn)
  local unfit = self.dict:get(UNFIT)
  if unfit then return nil, unfit end
  return connected(self, fn)
end

-- EVALSHA, and EVAL when Redis does not have the script yet.
local function script(self, red, name, keys, args)
  local s = self.scripts[name]
  local list = { #keys }
  for _, k in ipairs(keys) do list[#list + 1] = k end
  for _, a in ipairs(args) do list[#list + 1] = a end
  local res, err = red:evalsha(s.sha, unpack(list))
  if res == false and tostring(err):find("^NOSCRIPT") then res, err = red:eval(s.src, unpack(list)) end
  return res, err
end

local function null(v)
  if v == ngx.null then return nil end
  return v
end

-- The journal: writes this node made, waiting for Redis ------------------------

local function encode(t) return (assert(value.encode(t))) end
local function decode(text) return json.decode(decision.codec(), text) end

-- Its safety records (quarantines, pin reports, quarantined servers) also
-- go to a file, before the dict, so they outlive the node's nginx (a
-- restart empties the dict): "+\t<key>\t<entry>" a record to write,
-- "-\t<key>" once Redis has it.  The master opens it (workers that run as
-- another user inherit it) and, at a start, keeps only the records Redis
-- was not known to have; worker 0 journals those again.
local SAFETY = { quarantine = true, pin = true, server = true }
local COPY = { quarantine = K.quarantined, pin = K.pin, server = K.server }
local STARTED = "r:started" -- set by the master: a HUP reload finds it, a start does not
local file, stamp, replay -- the file, this master's key prefix, the records to journal again

--- open_journal(options, dict): in init_by_lua (the master), before the
-- workers fork.  options.journal: the file (default: toolgate-redis-journal
-- in nginx's prefix).  Raises when it cannot be kept (nginx does not start).
function M.open_journal(o, dict)
  if not dict then return end -- (init_worker says the dict is missing)
  local path = o.journal or (ngx.config.prefix() .. "toolgate-redis-journal")
  if file then file:close() end
  stamp, replay = string.format("%.3f", ngx.now()), {}
  if not dict:get(STARTED) then
    local pending, order = {}, {}
    local f = io.open(path, "r")
    if f then
      for line in f:lines() do
        local mark, key, text = line:match("^([+-])\t([^\t]+)\t?(.*)$")
        if mark == "+" then
          order[#order + 1] = key
          pending[key] = text
        elseif mark == "-" then
          pending[key] = nil
        end
      end
      f:close()
    end
    local kept = {}
    for _, key in ipairs(order) do
      local ok, e = pcall(decode, pending[key] or "")
      if ok and type(e) == "table" and SAFETY[e[1]] then
        replay[#replay + 1] = e
        kept[#kept + 1] = "+\t" .. key .. "\t" .. pending[key] .. "\n"
      end
      pending[key] = nil
    end
    local w, err = io.open(path .. ".new", "w")
    local ok = w and w:write(table.concat(kept)) and w:close()
    if ok then ok, err = os.rename(path .. ".new", path) end
    if not ok then error("toolgate.state.redis: cannot write the journal file " .. path .. ": " .. tostring(err), 2) end
    if #replay > 0 then ngx.log(ngx.WARN, "toolgate redis: the journal file ", path, " holds record(s) not on Redis ",
      "when nginx stopped: ", #replay, "; enforced here, written when Redis answers") end
    dict:set(STARTED, true)
  end
  local err
  file, err = io.open(path, "a")
  if not file then error("toolgate.state.redis: cannot open the journal file " .. path .. ": " .. tostring(err), 2) end
  file:setvbuf("no") -- one write per line: lines from several workers never interleave
end

-- Redis has the file's record key.
local function done(key)
  if file and key then file:write("-\t" .. key .. "\n") end -- (not noted: written again after a restart, kept once)
end

-- The entry's script and arguments on Redis.
local function entry_call(self, e)
  local k = self.keys
  if e[1] == "quarantine" then return "quarantine", { k.detv, k.detq, k.version }, { e[2], e[3] } end
  if e[1] == "verified" then return "verified", { k.detv, k.detq, k.version }, { e[2], e[3] } end
  return "first", { e[1] == "pin" and k.pins or k.servers, k.version }, { e[2], e[3] }
end

-- Writes the journal's entries in order; stops at the first that fails
-- (kept for the next try).  -> true when the journal is empty.  Called
-- with the node's lock held.
local function write_journal(self)
  local d = self.dict
  local head, tail = d:get(J_HEAD) or 1, d:get(J_TAIL) or 0
  if head > tail then return true end
  local ok, err = connected(self, function(red)
    for n = head, tail do
      local text = d:get(J_ENTRY .. n)
      if not text then
        -- numbered by a writer in another worker that has not stored it yet:
        -- wait for it, unless it never comes (that worker died in between)
        d:safe_add(J_GAP .. n, ngx.now(), 60)
        local since = d:get(J_GAP .. n) -- (none: no room to note it; keep waiting)
        if not since or ngx.now() - since < GAP_SECONDS then return true end
      else
        local e = decode(text)
        if e[1] ~= "none" then
          local name, keys, args = entry_call(self, e)
          local res, serr = script(self, red, name, keys, args)
          if res == nil or res == false then return res, serr end
          done(e[4])
        end
      end
      put(d, J_HEAD, n + 1)
      d:delete(J_ENTRY .. n)
    end
    return true
  end)
  if not ok then
    count_error(self, "write", err)
    return false
  end
  return (d:get(J_HEAD) or 1) > (d:get(J_TAIL) or 0)
end

-- locked(self, fn) -> fn's two results | BUSY (another writer of this node
-- holds the lock) | nil, message (fn raised: an error, never taken for BUSY)
local BUSY = {}
local function locked(self, fn)
  -- a writer that dies holding the lock loses it after the timeouts it could have waited
  local ttl = math.max(1, 4 * (self.c.connect_timeout + self.c.send_timeout + self.c.read_timeout))
  if not self.dict:safe_add(LOCK, true, ttl) then return BUSY end
  local out = { pcall(fn) }
  self.dict:delete(LOCK)
  if not out[1] then return nil, tostring(out[2]) end
  return unpack(out, 2, 3)
end

local function flush(premature, self)
  if premature then return end
  local ok, err = locked(self, function() return write_journal(self) end)
  if ok == nil then count_error(self, "write", err) end
end

-- Numbers a write for the journal.
local function reserve(self)
  local n, err = bump(self.dict, J_TAIL, 1)
  if not n then error("toolgate redis: cannot number a write for Redis: " .. tostring(err), 3) end
  return n
end

-- Keeps write n for Redis (never evicted: safe_set fails on a full dict
-- instead, and that raises, as the shared-dict store does), then writes
-- the journal from a timer now (later: at the next poll).  entry nil: the
-- number is used up with nothing to write.
local function fill(self, n, entry, later)
  entry = entry or { "none" }
  if file and SAFETY[entry[1]] and not entry[4] then
    -- in the file first: once the call that learned it is answered, a restart keeps it
    entry[4] = stamp .. ":" .. n
    local wrote, werr = file:write("+\t" .. entry[4] .. "\t" .. encode(entry) .. "\n")
    if not wrote then error("toolgate redis: cannot keep a write for Redis in the journal file: " .. tostring(werr), 3) end
  end
  local ok, err = self.dict:safe_set(J_ENTRY .. n, encode(entry))
  if not ok then error("toolgate redis: cannot keep a write for Redis: " .. tostring(err), 3) end
  if not later then ngx.timer.at(0, flush, self) end
end

local function journal(self, entry, later) fill(self, reserve(self), entry, later) end

-- A determinism record written here, numbered for Redis before it is
-- made: worker 0's poll drops a record Redis does not have only while no
-- write is waiting, so a poll that runs between the local write and its
-- entry must already see it waiting (else it lifted a fresh quarantine
-- here until a later poll brought it back).  entry() says what Redis gets.
local function determinism_write(self, write, entry)
  local n = reserve(self)
  local ok, err = pcall(write)
  fill(self, n, ok and entry() or nil)
  if not ok then error(err, 0) end
end

-- The copy: the fleet's records, polled ----------------------------------------

local function fetch(self)
  local k = self.keys
  return connected(self, function(red)
    red:init_pipeline(10)
    red:get(k.version)
    red:hgetall(k.detv)
    red:hgetall(k.detq)
    red:hgetall(k.pins)
    red:hgetall(k.servers)
    -- the records' generation: made by the first node to find none (a new
    -- fleet, a Redis that lost its data) or a new Redis process, one per data set
    red:eval(GENERATION_SCRIPT, 2, k.generation, k.run, string.format("%.3f-%d", ngx.now(), ngx.worker.pid()))
    -- whether it may evict keys, checked at every poll (a restarted Redis
    -- may come back with other settings); CONFIG may be renamed or denied
    red:config("get", "maxmemory-policy")
    red:config("get", "appendonly")
    red:config("get", "appendfsync")
    -- whether it takes writes (full under noeviction, a read-only replica)
    red:set(k.probe, "1", "PX", math.ceil(1000 * self.grace))
    local res, err = red:commit_pipeline()
    if not res then return nil, err end
    for i = 1, 6 do
      local r = res[i]
      if type(r) == "table" and r[1] == false then return false, r[2] end
    end
    return res
  end)
end

local function set_all(d, prefix, list, keep)
  for i = 1, #list, 2 do
    put(d, prefix .. list[i], list[i + 1])
    if keep then keep[prefix .. list[i]] = true end
  end
end

-- Copies the fleet's records into the dict (with the lock held, after the
-- journal was written).  Pins and quarantined servers are only added (they
-- are kept per registry hash and never lifted); determinism records are
-- replaced, and one Redis no longer has is dropped only when no write of
-- this node's is waiting (it may be one not yet on Redis).
local function copy(self, res, journal_empty)
  local d = self.dict
  local det = {}
  set_all(d, K.verified, res[2], det)
  set_all(d, K.quarantined, res[3], det)
  set_all(d, K.pin, res[4])
  set_all(d, K.server, res[5])
  if journal_empty and (d:get(J_HEAD) or 1) > (d:get(J_TAIL) or 0) then
    for _, key in ipairs(d:get_keys(0)) do
      if (key:sub(1, #K.verified) == K.verified or key:sub(1, #K.quarantined) == K.quarantined) and not det[key] then
        d:delete(key)
      end
    end
  end
end

-- Redis lost what it held (restarted without its data, flushed): its
-- version went back.  This node writes the quarantines, pin reports and
-- quarantined servers of its copy again, so the fleet's refusals outlive it.
local function restore(self, why)
  local d = self.dict
  local kinds = { { K.quarantined, "quarantine" }, { K.pin, "pin" }, { K.server, "server" } }
  local n = 0
  for _, key in ipairs(d:get_keys(0)) do
    for _, kind in ipairs(kinds) do
      local text = key:sub(1, #kind[1]) == kind[1] and d:get(key)
      if text then
        journal(self, { kind[2], key:sub(#kind[1] + 1), text }, true)
        n = n + 1
      end
    end
  end
  ngx.log(ngx.WARN, "toolgate redis: ", why, " (it may have lost data): writing this node's ", n, " records again")
end

local function warn_once(self, what, ...)
  if self.dict:safe_add(WARNED .. what, true) then ngx.log(ngx.WARN, "toolgate redis: ", ...) end
end

-- unfit(self, answer) -> why Redis may not hold the fleet's state | nil.
-- answer: the poll's CONFIG GET maxmemory-policy.  A Redis that may evict
-- keys would drop quarantines, pin reports and approvals' uses unseen; one
-- whose settings cannot be read (CONFIG renamed, denied by an ACL) is
-- taken on the operator's word, said once.
local function unfit(self, answer)
  if type(answer) ~= "table" or answer[1] == false then
    warn_once(self, "config", "cannot read Redis's settings (CONFIG GET: ", tostring(type(answer) == "table" and
      answer[2] or answer), "): the fleet relies on the operator to keep maxmemory-policy noeviction (an evicted ",
      "quarantine is lifted on every node, an evicted use is spent again)")
    return nil
  end
  if answer[2] ~= "noeviction" then
    return "its maxmemory-policy is " .. tostring(answer[2]) .. ": it may evict the fleet's quarantines, pin reports " ..
      "and approvals; the fleet needs noeviction (set it, and the nodes use it again)"
  end
end

local function mark(self, up, err)
  local d = self.dict
  local was = d:get(UP)
  put(d, UP, up and 1 or 0)
  if up and was == 0 then
    ngx.log(ngx.NOTICE, "toolgate redis: reachable again; the writes kept while it was away are written")
  elseif not up and was ~= 0 then
    ngx.log(ngx.ERR, "toolgate redis: unreachable or unusable (", tostring(err), "): the fleet's records are not ",
      "copied, determinism counts as unverified after ", self.c.stale_after, " s, quarantines and pin reports are ",
      "kept here and written when it answers, approvals it cannot check are not granted")
  end
end

-- What a restart of Redis keeps, from the poll's CONFIG GET appendonly and
-- appendfsync: said once when it is less than the fleet asks for.  (Grants
-- are safe either way: a restarted Redis starts a new generation.)
local function persistence(self, appendonly, appendfsync)
  local function setting(answer) return type(answer) == "table" and answer[1] ~= false and answer[2] or nil end
  local aof, fsync = setting(appendonly), setting(appendfsync)
  if aof == nil then return end -- (its settings cannot be read: unfit said so)
  if aof ~= "yes" or fsync == "no" then
    warn_once(self, "persistence", "Redis runs with appendonly ", aof, ", appendfsync ", tostring(fsync), ": a ",
      "restart brings back its last snapshot at best; the approvals granted before a restart are then refused ",
      "(their calls ask again) and the nodes write their quarantines and pin reports again, but one no node holds ",
      "is lost (the fleet's README asks for appendonly yes, appendfsync everysec or always)")
  end
end

-- A Redis that refuses writes still answers the poll, but a quarantine
-- another node learned meanwhile waits in that node's journal: no node can
-- tell, so every node counts the fleet degraded while its own write is
-- refused and for grace after (get() answers unverified).
local function refusing(self, answer)
  local d = self.dict
  local refused = type(answer) == "table" and answer[1] == false and tostring(answer[2])
  if refused then
    put(d, REFUSED_AT, ngx.now())
    if not d:get(REFUSING) then
      put(d, REFUSING, true)
      ngx.log(ngx.ERR, "toolgate redis: it refuses writes (", refused, "): the fleet is degraded, every node counts ",
        "determinism as unverified until writes land; quarantines and pin reports are kept here and written then")
    end
  elseif d:get(REFUSING) then
    d:delete(REFUSING)
    ngx.log(ngx.NOTICE, "toolgate redis: it takes writes again; determinism counts as verified again after ",
      self.grace, " s")
  end
end

local function degraded(self)
  local at = self.dict:get(REFUSED_AT)
  return at ~= nil and ngx.now() - at < self.grace
end

--- sync() -> true | nil, message: writes the journal, then copies the
-- fleet's records when the version moved (worker 0's timer calls it).
function Store:sync()
  local d = self.dict
  local ok, err = locked(self, function()
    local empty = write_journal(self)
    local res, ferr = fetch(self)
    if not res then return nil, ferr end
    local v, generation = tostring(null(res[1]) or 0), res[6]
    if not tonumber(v) then return nil, "the version key holds " .. string.format("%q", v:sub(1, 40)) .. ", not a count" end
    local why = unfit(self, res[7])
    persistence(self, res[8], res[9])
    refusing(self, res[10])
    if why then
      put(d, UNFIT, why)
      return nil, why
    end
    local last, last_generation = tonumber(d:get(VERSION) or ""), d:get(GENERATION)
    -- a version that went back says Redis lost its data, but only until the
    -- other nodes write past what this one saw: a new generation says so
    -- however far the version moved
    local lost
    if last_generation and generation ~= last_generation then
      lost = "its records are a new generation (" .. generation .. ", was " .. last_generation .. ")"
    elseif last and tonumber(v) < last then
      lost = "its version went back from " .. last .. " to " .. v
    elseif d:get(UNFIT) then
      lost = "it could evict keys until now"
    end
    if lost then
      restore(self, lost)
      empty = false
    end
    d:delete(UNFIT)
    put(d, GENERATION, generation)
    if v ~= d:get(VERSION) or not empty then copy(self, res, empty) end
    put(d, VERSION, v)
    put(d, OK_AT, ngx.now())
    return true
  end)
  if ok == BUSY then return nil, "another writer holds the lock" end
  mark(self, ok == true, err)
  if not ok then count_error(self, "sync", err, true) end
  return ok, err
end

--- start(): in init_worker.  Worker 0 polls Redis every sync_interval,
-- and once now.
function Store:start()
  local id = ngx.worker.id()
  if id ~= nil and id ~= 0 then return end -- (nil: nginx without a master, one process)
  -- the journal file's records: enforced here at once, written when Redis
  -- answers (once per master start, not again when worker 0 is respawned)
  if replay and #replay > 0 and self.dict:safe_add("r:replayed:" .. stamp, true) then
    for _, e in ipairs(replay) do
      put(self.dict, COPY[e[1]] .. e[2], e[3])
      journal(self, e, true)
    end
  end
  local function tick(premature)
    if not premature then self:sync() end
  end
  ngx.timer.at(0, tick)
  ngx.timer.every(self.c.sync_interval, tick)
end

--- health() -> { up = bool, degraded = bool (Redis refuses writes, or did
-- within grace), age = seconds since the last good poll | nil,
-- pending = writes waiting for Redis, errors = { [op] = n } }
function Store:health()
  local d = self.dict
  local at = d:get(OK_AT)
  local errors = {}
  for _, op in ipairs({ "sync", "write", "approval", "record" }) do errors[op] = d:get(ERRORS .. op) or 0 end
  return { up = d:get(UP) == 1, degraded = degraded(self), age = at and (ngx.now() - at) or nil,
    pending = math.max(0, (d:get(J_TAIL) or 0) - (d:get(J_HEAD) or 1) + 1), errors = errors }
end

-- Determinism (the toolgate.state interface) ----------------------------------

local function field(server, name) return (server or "") .. "\0" .. name end

function Store:get(server, name)
  local at = self.dict:get(OK_AT)
  if not at or ngx.now() - at > self.c.stale_after then
    -- the fleet's verification cannot be read: unverified, never verified
    return { quarantined = { reason = "state store unavailable: no copy of the fleet's records newer than "
      .. self.c.stale_after .. " s", since = self.clock() } }
  end
  if degraded(self) then
    return { quarantined = { reason = "state store degraded: Redis refuses writes, another node's quarantine may "
      .. "not have reached it", since = self.clock() } }
  end
  return self.here:get(server, name)
end

function Store:verified(server, name, epoch)
  determinism_write(self, function() self.here:verified(server, name, epoch) end,
    function() return { "verified", field(server, name), epoch } end)
end

function Store:quarantine(server, name, reason, epoch)
  determinism_write(self, function() self.here:quarantine(server, name, reason, epoch) end, function()
    local q = self.dict:get(K.quarantined .. field(server, name))
    return q and { "quarantine", field(server, name), q }
  end)
end

function Store:records() return self.here:records() end

-- Pins and quarantined servers -----------------------------------------------

-- -> true the first time this node saw the change (each node reports what
-- it saw).  The record it made goes to Redis: the report's own, or the
-- server's "more" record (past toolgate.state.MAX_ADDED_REPORTS added
-- tools; Redis keeps its first count, this node counts on in its dict).
function Store:pin_report(registry_hash, server, tool, change)
  local first = self.here:pin_report(registry_hash, server, tool, change)
  if not first then return false end
  local own, more = registry_hash .. "\0" .. field(server, tool) .. "\0" .. change.change,
    registry_hash .. "\0" .. field(server, "") .. "\0more"
  for _, f in ipairs({ own, more }) do
    local r = self.dict:get(K.pin .. f)
    if r then
      journal(self, { "pin", f, r })
      return true
    end
  end
  return true
end

function Store:pin_change(registry_hash, server, tool) return self.here:pin_change(registry_hash, server, tool) end
-- (marks of this node's: a change another node could not store reaches it as its report, through Redis)
function Store:reserve_pins(registry_hash, tools) return self.here:reserve_pins(registry_hash, tools) end
function Store:pin_reports() return self.here:pin_reports() end

function Store:quarantine_server(registry_hash, server, reason)
  local f = registry_hash .. "\0" .. server
  local had = self.dict:get(K.server .. f)
  self.here:quarantine_server(registry_hash, server, reason)
  local r = not had and self.dict:get(K.server .. f)
  if r then journal(self, { "server", f, r }) end
end

function Store:server_quarantine(registry_hash, server) return self.here:server_quarantine(registry_hash, server) end
function Store:quarantined_servers() return self.here:quarantined_servers() end

-- What toolgate.mcp.rounds remembers of an exchange stays on this node (its
-- dict, shared by its workers): a client's later rounds and task requests
-- reach the node that saw the first (a fleet routes a client to one node).
function Store:exchange_put(kind, server, key, record, ttl, limit)
  return self.here:exchange_put(kind, server, key, record, ttl, limit)
end
function Store:exchange(kind, server, key) return self.here:exchange(kind, server, key) end

-- Quotas: on Redis only, one script per take ----------------------------------

-- A take that cannot reach Redis (or a Redis that may evict keys, which
-- would forget counts) refuses the call: nil, message, "UNAVAILABLE".
function Store:quota_take(takes)
  local keys, args = {}, {}
  for i, t in ipairs(takes) do
    keys[i] = self.tag .. "q:" .. t.key
    args[2 * i - 1], args[2 * i] = t.limit, t.window
  end
  local res, err = with(self, function(red) return script(self, red, "quota", keys, args) end)
  if res == nil then
    count_error(self, "quota", err)
    return nil, "Redis: " .. tostring(err), "UNAVAILABLE"
  end
  if res == 0 then return true end
  return false, tonumber(res[1]), tonumber(res[2])
end

-- Approvals: on Redis only ---------------------------------------------------

-- an approval's request, decision and uses left, and the fleet's generation
local function akeys(self, id)
  local p = self.tag
  return p .. "a:" .. id, p .. "a#" .. id, p .. "a+" .. id, self.keys.generation
end

-- -> { record | nil }: a grant of another generation counts as expired
-- (take drops it; its call asks again)
local function read_approval(red, a, v, u, g)
  local res, err = red:mget(a, v, u, g)
  if not res then return res, err end
  local left, generation = string.match(null(res[3]) or "", "^(%d+)@(.+)$")
  if generation and generation ~= null(res[4]) then return {} end
  return { shared_dict.approval_view(null(res[1]), null(res[2]), tonumber(left)) }
end

-- the sorted sets of the pending requests of a server's tool, and of the server
local function pending_keys(self, server, tool)
  local p = self.tag
  return p .. "ap:t:" .. tostring(server) .. "\0" .. tostring(tool), p .. "ap:s:" .. tostring(server)
end

-- -> true when it opened the request; false when one exists, or when Redis
-- cannot be reached (the call is deferred either way); false, "full",
-- "tool" | "server" past a limit (in the script that opens it: two nodes
-- never both take the last place)
function Store:approval_open(id, fields, ttl, uses, limits)
  local a = akeys(self, id)
  local of_tool, of_server = pending_keys(self, fields.server, fields.tool)
  local text = shared_dict.approval_request(id, fields, ttl, uses, self.clock())
  local res, err = with(self, function(red)
    return script(self, red, "open", { a, of_tool, of_server },
      { text, ttl, id, limits and limits.tool or -1, limits and limits.server or -1 })
  end)
  if res == nil then
    count_error(self, "approval", err)
    return false
  end
  if res == "tool" or res == "server" then return false, "full", res end
  return res == 1
end

function Store:approval_take(id)
  local a, v, u, g = akeys(self, id)
  local res, err = with(self, function(red)
    local left, serr = script(self, red, "take", { u, a, v, g, self.keys.run }, {})
    if left == nil or left == false then return left, serr end
    if left >= 0 then return { true, left == 0 and "used" or "granted" } end
    local r, rerr = read_approval(red, a, v, u, g)
    if not r then return r, rerr end
    return { false, r[1] and r[1].status or nil }
  end)
  if not res then
    -- unchecked: no use taken, the call stays deferred
    count_error(self, "approval", err)
    return false, "unavailable"
  end
  return res[1], res[2]
end

-- -> record | nil, message, code ("NOT_FOUND", "ALREADY_DECIDED", or
-- "UNAVAILABLE" when Redis cannot be reached: nothing was decided)
function Store:approval_decide(id, verdict, opts)
  local valid, why, code = state.decision_opts(verdict, opts)
  if not valid then return nil, why, code end
  local a, v, u, g = akeys(self, id)
  local res, err = with(self, function(red)
    local got, rerr = read_approval(red, a, v, u, g)
    if not got then return got, rerr end
    local r = got[1]
    if not r then return { "NOT_FOUND" } end
    state.decide(r, verdict, opts, self.clock())
    local of_tool, of_server = pending_keys(self, r.server, r.tool)
    local out, serr = script(self, red, "decide", { a, v, u, g, self.keys.run, of_tool, of_server },
      { verdict, r.ttl, r.uses, encode(r), id })
    if out == nil or out == false then return out, serr end
    return { out, r }
  end)
  if not res then
    count_error(self, "approval", err)
    return nil, "the state store is unavailable: " .. tostring(err), "UNAVAILABLE"
  end
  if res[1] == "NOT_FOUND" then return nil, "no approval request " .. tostring(id) .. " (unknown or expired)", "NOT_FOUND" end
  if res[1] == "ALREADY_DECIDED" then return nil, "approval " .. id .. " is already decided", "ALREADY_DECIDED" end
  return res[2]
end

-- -> record | nil (none) | nil, message, "UNAVAILABLE" (Redis cannot be reached)
function Store:approval(id)
  local res, err = with(self, function(red) return read_approval(red, akeys(self, id)) end)
  if not res then
    count_error(self, "approval", err)
    return nil, "the state store is unavailable: " .. tostring(err), "UNAVAILABLE"
  end
  return res[1]
end

--- approvals() -> { record, ... } | nil, message (Redis unavailable)
function Store:approvals()
  local p = self.tag
  local res, err = with(self, function(red)
    local ids, cursor = {}, "0"
    -- SCAN visits each key at least once; bounded for a store that keeps growing
    for _ = 1, 10000 do
      local page, serr = red:scan(cursor, "MATCH", p .. "a:*", "COUNT", 1000)
      if not page then return page, serr end
      cursor = page[1]
      for _, k in ipairs(page[2]) do ids[k:sub(#p + 3)] = true end
      if cursor == "0" then break end
    end
    local out = {}
    for id in pairs(ids) do
      local ok, r, rerr = pcall(read_approval, red, akeys(self, id))
      if ok and not r then return r, rerr end
      -- none (expired since the scan, a grant of another generation) is
      -- left out; one record that is no approval is skipped, never the
      -- whole listing
      if ok and type(r[1]) == "table" then
        out[#out + 1] = r[1]
      elseif not ok or r[1] ~= nil then
        count_error(self, "record", "approval " .. id .. " is no approval record, skipped: " .. tostring(ok and r[1] or r))
      end
    end
    table.sort(out, function(x, y) return x.id < y.id end)
    return { out }
  end)
  if not res then
    count_error(self, "approval", err)
    return nil, "the state store is unavailable: " .. tostring(err)
  end
  return res[1]
end

return M
