-- The options nginx/fleet/node-a.conf and node-b.conf were written with
-- (spec/gateway_spec.lua checks each file is exactly what toolgate gateway
-- writes for them): two nodes of one fleet on one Debian 12 machine, an
-- install by `make install` (PREFIX=/usr/local), server-everything on port
-- 3001, the fleet's Redis (nginx/fleet/redis.conf) on 6380.
local function node(name, port)
  return {
    prefix = "/var/lib/toolgate-fleet-" .. name,
    workers = 2,
    listen = "127.0.0.1:" .. port,
    admin = "127.0.0.1:" .. (port + 1),
    admin_token_file = "/etc/toolgate/admin.token",
    policy = "/usr/local/share/toolgate/policies/gateway.lua",
    servers = { "everything" },
    registry = { everything = "/etc/toolgate/registries/everything.json" },
    contexts = { everything = '{ ["scopes"] = { "everything:read", "everything:write" } }' },
    upstreams = { everything = { hostport = "127.0.0.1:3001", path = "/mcp" } },
    lua_dir = "/usr/local/share/lua/5.1",
    lua_cdir = "/usr/local/lib/lua/5.1",
    redis = { host = "127.0.0.1", port = 6380, prefix = "toolgate-fleet:", password_file = "/etc/toolgate/redis.password",
      sync_interval = 0.25 },
  }
end

return { a = node("a", 8080), b = node("b", 8090) }
