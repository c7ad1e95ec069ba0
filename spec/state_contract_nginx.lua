-- spec/state_contract_nginx.lua: runs spec/state_contract.lua's cases inside
-- nginx, on the shared-dict store and on the Redis store (cosockets: in a
-- request), and answers each case's status and message as JSON.  The conf
-- spec/state_nginx_spec.lua writes gives it DICTS fresh dicts and SMALL
-- small ones: every store a case opens gets a dict no case used before, so
-- no timer left from one case (the Redis store's journal writer) touches
-- another's records.
--   location = /contract { content_by_lua_block { require("state_contract_nginx").run() } }
--   GET /contract?store=shared_dict
--   GET /contract?store=redis&port=P&down=Q&tag=T   (Q: a port nothing listens on)
local contract = require "state_contract"
local shared_dict = require "toolgate.state.shared_dict"
local value = require "toolgate.value"

local M = {}

M.DICTS, M.SMALL = 48, 6

local used = { contract = 0, contract_small = 0 }
local function fresh(kind)
  used[kind] = used[kind] + 1
  local d = ngx.shared[kind .. "_" .. used[kind]]
  return assert(d, "no lua_shared_dict " .. kind .. "_" .. used[kind] .. " left for this case")
end

-- The dict's TTLs and Redis's EX are their servers' clocks: a fake clock
-- cannot move them, so these stores run every case on nginx's own.
local function real_clock() return { now = ngx.now, advance = ngx.sleep } end
M.CLOCK_KIND = "real: expiry is the dict's TTL / Redis's EX, not a clock the store is given"
local CLOCK_KIND = M.CLOCK_KIND

local function dict_store()
  return {
    name = "shared_dict", clock = real_clock, clock_kind = CLOCK_KIND,
    open = function(clock, opts)
      if opts.unreachable then return nil, "nginx's own shared memory: nothing to reach" end
      return shared_dict.new(fresh(opts.bounded and "contract_small" or "contract"), clock.now)
    end,
    -- another worker's handle on the same dict
    peer = function(s, opts)
      if opts and opts.bounded then return nil, "one dict for every worker: the full-dict case is this one" end
      return shared_dict.new(s.dict, s.clock)
    end,
    settle = function() end,
  }
end

-- Bounded waits: fn() true within seconds, polled every 10 ms.
local function wait(what, seconds, fn)
  for _ = 1, seconds * 100 do
    if fn() then return end
    ngx.sleep(0.01)
  end
  error("timed out (" .. seconds .. " s) waiting for " .. what)
end

local function redis_store(port, down, tag)
  local redis = require "toolgate.state.redis"
  local n = 0
  local function synced(s)
    local err
    wait("the Redis store's first sync", 3, function()
      local ok, e = s:sync()
      err = e
      return ok
    end)
    return s, err
  end
  return {
    name = "redis", clock = real_clock, clock_kind = CLOCK_KIND,
    open = function(clock, opts)
      n = n + 1
      local s = redis.new(fresh(opts.bounded and "contract_small" or "contract"), { host = "127.0.0.1",
        port = opts.unreachable and down or port, prefix = tag .. ":" .. n .. ":", connect_timeout = 0.5,
        read_timeout = 1, send_timeout = 1 }, clock.now)
      if opts.unreachable then
        s:sync() -- it fails: the store knows Redis is away
        return s
      end
      return synced(s)
    end,
    -- another node: its own dict, the same keys on Redis
    peer = function(s, opts)
      return synced(redis.new(fresh(opts and opts.bounded and "contract_small" or "contract"), s.c, s.clock))
    end,
    -- the writer's journal on Redis, then the peer's copy of it
    settle = function(a, b)
      wait("the journal written to Redis", 3, function() return a:health().pending == 0 end)
      synced(b)
    end,
  }
end

-- What only the Redis store's two paths can get wrong, beyond the
-- contract: worker 0's poll running between a determinism write made here
-- and its journal entry.  The poll is run from inside the local write, so
-- the interleaving happens on every run, not once in a million; a peer's
-- write first moves Redis's version, so that the poll copies.
M.REDIS_CASES = { "a poll between a quarantine's local write and its journal entry keeps it",
  "a node restores its quarantines when Redis lost its data, however far the version moved since",
  "two nodes taking a quota's slots at once let exactly its limit through" }

local function poll_race(st)
  local s = assert(st.open(real_clock(), {}))
  local peer = st.peer(s)
  peer:verified("srv", "other", '"e1"')
  st.settle(peer, s) -- s has polled once since
  peer:verified("srv", "other2", '"e1"') -- the version moves again, unseen by s
  wait("the peer's write on Redis", 3, function() return peer:health().pending == 0 end)
  local write_here = s.here.quarantine
  s.here.quarantine = function(here, ...)
    write_here(here, ...)
    assert(s:sync()) -- worker 0's poll, at the worst moment
  end
  s:quarantine("srv", "t", "RESULT_DISAGREE", '"e1"')
  s.here.quarantine = nil
  local r = s:get("srv", "t")
  contract.check(r and r.quarantined and r.quarantined.reason == "RESULT_DISAGREE",
    "the quarantine holds here right after it was made (got " .. tostring(r and r.quarantined) .. ")")
  st.settle(s, peer)
  r = peer:get("srv", "t")
  contract.check(r and r.quarantined, "the quarantine reached the peer through Redis")
end

-- Redis loses its data (FLUSHALL: a restart without persistence), and the
-- other nodes write more records than this node had seen before it polls
-- again: its version went forward, not back.
local function data_loss(st, port)
  local s = assert(st.open(real_clock(), {}))
  local peer = st.peer(s)
  s:quarantine("srv", "t", "RESULT_DISAGREE", '"e1"')
  st.settle(s, peer)
  local found, redis = pcall(require, "nginx.redis") -- Debian's name for lua-resty-redis
  local red = (found and redis or require("resty.redis")):new()
  assert(red:connect("127.0.0.1", port))
  assert(red:flushall())
  red:close()
  local seen = tonumber(s.dict:get("r:ver")) or 0
  for i = 1, seen + 2 do peer:verified("srv", "other" .. i, '"e2"') end
  wait("the peer's writes on Redis", 3, function() return peer:health().pending == 0 end)
  assert(s:sync())
  contract.check((s:get("srv", "t") or {}).quarantined, "the quarantine holds on the node after its poll")
  assert(s:sync()) -- the next poll writes what the node restores
  st.settle(s, peer)
  local newcomer = st.peer(s) -- a node that starts now reads what Redis holds
  contract.check((newcomer:get("srv", "t") or {}).quarantined, "the quarantine is on Redis again")
end

-- Two nodes, 24 takes at once (light threads: each waits on its own
-- Redis connection, so the takes interleave) of a limit of 7.
local function quota_race(st)
  local a = assert(st.open(real_clock(), {}))
  local b = st.peer(a)
  local take, threads, passed = { { key = "q1:race", limit = 7, window = 3600 } }, {}, 0
  for i = 1, 24 do
    local node = i % 2 == 0 and a or b
    threads[i] = ngx.thread.spawn(function() return node:quota_take(take) end)
  end
  for i = 1, 24 do
    local ran, took = ngx.thread.wait(threads[i])
    assert(ran, took)
    if took == true then passed = passed + 1 end
  end
  contract.check(passed == 7, "exactly 7 of 24 takes at once pass, not " .. passed)
end

function M.run()
  local args = ngx.req.get_uri_args()
  local st
  if args.store == "shared_dict" then
    st = dict_store()
  elseif args.store == "redis" then
    st = redis_store(tonumber(args.port), tonumber(args.down), args.tag)
  else
    ngx.status = 400
    return ngx.say("store=shared_dict|redis")
  end
  local out = contract.run(st)
  if st.name == "redis" then
    for i, run in ipairs({ poll_race, data_loss, quota_race }) do
      local ok, err = pcall(run, st, tonumber(args.port))
      out[#out + 1] = { name = M.REDIS_CASES[i], status = ok and "pass" or "fail", message = not ok and err or nil }
    end
  end
  ngx.header.content_type = "application/json"
  ngx.say(assert(value.encode({ store = st.name, clock = st.clock_kind, cases = setmetatable(out, value.array_mt) })))
end

return M
