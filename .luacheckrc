-- luacheck configuration for toolgate (`make lint`, run by `make test`).
--
-- Every Lua file runs under both Lua 5.4 and LuaJIT, so the base standard is
-- the globals the two have in common ("min": what every Lua version has).
-- What only one of them has is named below, and the code reaches it through
-- a guard (`rawget(_G, "jit")`, `table.unpack or unpack`, `math.type`, nil
-- under LuaJIT): reading those is allowed, nothing else.

std = "min+portable"
exclude_files = { "**/node_modules/**", "examples/seed-demo/out/**", "bench/out/**", "build/**" }
max_line_length = 130
-- ffi.cdef text in core_ffi.lua copies core/toolgate.h's prototypes verbatim
max_string_line_length = false

stds.portable = {
  read_globals = {
    jit = { other_fields = true },           -- LuaJIT only: always behind rawget(_G, "jit")
    unpack = {},                             -- Lua 5.1/LuaJIT
    table = { fields = { "unpack" } },       -- Lua 5.2+
    math = { fields = { "type", "maxinteger", "mininteger" } },  -- Lua 5.3+, nil under LuaJIT
    package = { fields = { "searchpath" } }, -- Lua 5.2+ and LuaJIT
  },
}

-- Policies run in toolgate.sandbox's allow-list environment (docs/policies.md,
-- "The sandbox"): only these globals exist there, so luacheck flags anything
-- else a policy reads.  Stage and rule functions take the documented
-- arguments whether they use them or not.
stds.policy = {
  read_globals = {
    "assert", "error", "ipairs", "pairs", "next", "select", "tonumber", "tostring",
    "type", "rawequal", "rawget", "rawset", "setmetatable", "getmetatable", "unpack",
    "pcall", "xpcall", "string", "table", "math", "null", "array_mt", "require",
    os = { fields = { "time", "clock" } },
  },
}

files["policies/"] = { std = "policy", unused_args = false }
files["examples/seed-demo/policy.lua"] = { std = "policy", unused_args = false }
files["spec/data/policies/"] = { std = "policy", unused_args = false }

-- nginx's lua module: the ngx API (toolgate.nginx and its web inbox, the shared-dict and Redis stores)
files["lua/toolgate/nginx.lua"] = { globals = { "ngx" } }
files["lua/toolgate/inbox.lua"] = { globals = { "ngx" } }
files["lua/toolgate/state/shared_dict.lua"] = { read_globals = { "ngx" } }
files["lua/toolgate/state/redis.lua"] = { read_globals = { "ngx" } }
-- the contract's cases as nginx runs them (spec/state_nginx_spec.lua)
files["spec/state_contract_nginx.lua"] = { std = "min+portable", globals = { "ngx" } }

-- busted specs: describe/it/assert.* and friends
files["spec/"] = { std = "+busted" }
