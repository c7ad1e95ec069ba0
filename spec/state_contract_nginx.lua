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

M.DICTS, M.SMALL = 40, 4

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
  ngx.header.content_type = "application/json"
  ngx.say(assert(value.encode({ store = st.name, clock = st.clock_kind, cases = setmetatable(out, value.array_mt) })))
end

return M
