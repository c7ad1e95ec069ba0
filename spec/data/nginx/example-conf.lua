-- The options nginx/mcp-gateway.conf was written with (spec/gateway_spec.lua
-- checks the file is exactly what toolgate gateway writes for them): an
-- install by `make install` (PREFIX=/usr/local), server-everything on port
-- 3001, the gateway on 8080, the admin API on 8081.
return {
  prefix = "/var/lib/toolgate-gateway",
  workers = 2,
  listen = "127.0.0.1:8080",
  admin = "127.0.0.1:8081",
  admin_token_file = "/etc/toolgate/admin.token",
  policy = "/usr/local/share/toolgate/policies/mcp.lua",
  servers = { "everything" },
  registry = { everything = "/etc/toolgate/registries/everything.json" },
  contexts = { everything = '{ ["scopes"] = { "everything:read" } }' },
  upstreams = { everything = { hostport = "127.0.0.1:3001", path = "/mcp" } },
  lua_dir = "/usr/local/share/lua/5.1",
  lua_cdir = "/usr/local/lib/lua/5.1",
}
