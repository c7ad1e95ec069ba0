-- toolgate gateway: writes the nginx conf of an MCP gateway (the one
-- nginx/mcp-gateway.conf documents) into a prefix directory and runs
-- Debian's nginx on it in the foreground.
local cli = require "toolgate.cli"

local M = {}

M.usage = [[
usage: toolgate gateway --listen HOST:PORT --upstream SERVER=URL... --registry SERVER=FILE...
                        [--policy FILE|NAME] [--context SERVER=FILE...] [--api-context FILE]
                        [--admin HOST:PORT --admin-token-file FILE] [--workers N]
                        [--redis HOST:PORT] [--redis-prefix P] [--redis-password-file FILE]
                        [--redis-sync SECONDS] [--redis-tls CA_FILE] [--redis-tls-name NAME]
                        [--webhook [slack=]URL...] [--principal-header NAME]
                        [--otlp-endpoint URL] [--audit-log FILE|syslog]
                        [--prefix DIR] [--conf-only]

An MCP gateway in front of MCP servers (Streamable HTTP), on nginx and its lua
module.  The MCP endpoint of server S is http://HOST:PORT/mcp/S; the decision
API (/v1/check, /v1/classify, /v1/verify, /v1/registry), /healthz and /metrics
are on the same address; the admin API (approvals, reload, pins) on --admin.

options:
  --listen HOST:PORT        the gateway's address (a port of 0 is refused: give one)
  --upstream SERVER=URL     an MCP server's Streamable HTTP endpoint, e.g.
                            everything=http://127.0.0.1:3001/mcp (repeatable)
  --registry SERVER=FILE    the server's trusted tools (its pins), e.g. a
                            recorded tools/list (repeatable; every upstream needs one)
  --policy FILE|NAME        a policy file or shipped policy (default: mcp)
  --context SERVER=FILE     a JSON file: the context the server's calls are
                            decided in (scopes granted, max_risk), merged over
                            the policy's (repeatable); the decision API
                            decides a call naming SERVER in the same context
  --api-context FILE        a JSON file: the context of what the decision API
                            decides that names no --context server (plans of
                            /v1/classify, calls to a server without one);
                            default: the policy's alone
  --admin HOST:PORT         the admin API's address (default: none; keep it on 127.0.0.1)
  --admin-token-file FILE   the file holding the admin API's bearer token (needed with --admin)
  --workers N               nginx worker processes, 1 to 64 (default: 2)
  --redis HOST:PORT         keep quarantines, pin reports and approvals on this
                            Redis, shared by every gateway of a fleet that names
                            it (nginx/fleet/README.md); default: this node's only
  --redis-prefix P          the prefix of the fleet's Redis keys (default: toolgate:)
  --redis-password-file FILE  the file holding Redis's AUTH password
  --redis-sync SECONDS      how often the node copies the fleet's records from
                            Redis: a change made through another node holds
                            here within that (default: 0.25)
  --redis-tls CA_FILE       talk to Redis over TLS, its certificate verified
                            against the CA certificates in CA_FILE (PEM)
  --redis-tls-name NAME     the name Redis's certificate must carry (default:
                            the --redis host)
  --webhook URL             POST each new pending approval to URL as JSON: the
                            approval record and, with --admin, the inbox's URL
                            http://ADMIN/approvals (repeatable); slack=URL: in
                            Slack's shape (text and blocks).  http:// to an IP
                            address or localhost only (no TLS); retried with
                            backoff, never delaying a call (nginx/README.md)
  --principal-header NAME   the request header naming who asks (e.g. X-Principal),
                            which an auth layer in front sets and strips from
                            clients' requests (nginx/README.md, "Who asked"); an
                            MCP request without it, or with a malformed one, is
                            refused; decisions and approvals record it
  --otlp-endpoint URL       export a trace span per MCP request (and one per
                            upstream call) to this OpenTelemetry collector, as
                            OTLP/HTTP JSON: a base URL such as
                            http://127.0.0.1:4318, to which /v1/traces is
                            appended; http:// to an IP address or localhost.
                            Sent from a timer, never delaying a call; spans a
                            collector that is away cannot take are dropped and
                            counted (docs/tracing.md)
  --audit-log FILE|syslog   where the audit records go (decisions, approvals
                            decided, pin changes: docs/audit.md), instead of
                            PREFIX/decisions.jsonl: a file, opened by name for
                            each batch (every 0.1 s), so a logrotate move takes
                            effect at once (kill -USR1 the master as usual);
                            syslog: the local syslog (/dev/log), syslog:PATH
                            another unix datagram socket
  --prefix DIR              where the conf, the pid file, temporary files and
                            decisions.jsonl (the decision log) go (default: a new
                            directory under $TMPDIR or /tmp)
  --conf-only               write the conf and exit without running nginx

nginx runs with daemon off and logs to standard error; SIGINT or SIGTERM stops
it.  Exit status: 0 when nginx stopped cleanly, 2 on bad usage or a policy or
registry that cannot be loaded, 1 when nginx or its lua module is missing or
nginx could not start or stopped with an error (a port in use, ...).
]]

M.NGINX = os.getenv("TOOLGATE_NGINX") or "/usr/sbin/nginx"
M.MODULE_DIR = "/usr/lib/nginx/modules"
M.RESTY_CORE = "/usr/share/lua/5.1/resty/core.lua"
M.DEFAULT_WORKERS = 2
M.MAX_WORKERS = 64

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function absolute(path)
  path = path:gsub("^%./", "")
  if path:sub(1, 1) == "/" then return (path:gsub("/%./", "/")) end
  local p = io.popen("pwd")
  local cwd = p:read("*l")
  p:close()
  return ((cwd .. "/" .. path):gsub("/%./", "/"))
end

local function address(opt, s)
  local host, port = (s or ""):match("^([%w%.%-:%[%]]+):(%d+)$")
  port = tonumber(port)
  if not host or not port or port < 1 or port > 65535 then
    cli.usage_error("--" .. opt .. " takes HOST:PORT (a port from 1 to 65535), not " .. tostring(s))
  end
  return host, port
end

local function pairs_of(opt, list, check)
  local out, order = {}, {}
  for _, s in ipairs(list or {}) do
    local k, v = s:match("^([%w_.%-]+)=(.+)$")
    if not k then cli.usage_error("--" .. opt .. " takes SERVER=" .. check .. ", not " .. s) end
    if out[k] then cli.usage_error("--" .. opt .. " names server " .. k .. " twice") end
    out[k] = v
    order[#order + 1] = k
  end
  return out, order
end

local function lua_string(s) return string.format("%q", s) end

--- lua_paths() -> lua_dir, lib, lua_cdir: where nginx's LuaJIT finds
-- toolgate: beside this module (a source tree's lua/, or make install's
-- share/lua/5.4, whose LuaJIT twin is share/lua/5.1), and the core library
-- (a source tree's build/, else the FFI binding's own search: package.cpath,
-- the system loader).  (spec/state_nginx_spec.lua's nginx finds it so too.)
function M.lua_paths()
  local here = assert(package.searchpath("toolgate", package.path))
  local dir = here:match("^(.*)/toolgate%.lua$")
  local jit_dir = dir:gsub("/lua/5%.4$", "/lua/5.1")
  local lib = os.getenv("TOOLGATE_LIB")
  if not lib and exists(dir .. "/../build/libtoolgate.so") then lib = absolute(dir .. "/../build/libtoolgate.so") end
  -- make install's lib/lua/5.1 holds libtoolgate.so for the FFI binding
  local c = package.searchpath("toolgate.core_c", package.cpath)
  local cdir = c and c:match("^(.*/lib/lua)/5%.4/toolgate/core_c%.so$")
  return absolute(jit_dir), lib, cdir and absolute(cdir .. "/5.1")
end

--- conf(o) -> the nginx conf text for the options o (what --conf-only writes).
function M.conf(o)
  local lua_dir, lib = o.lua_dir, o.lib
  local L = {}
  local function w(...) L[#L + 1] = table.concat({ ... }) end
  w("# nginx.conf of a toolgate MCP gateway (toolgate gateway writes it; nginx/README.md explains it).")
  w("# Run: nginx -p ", o.prefix, " -c ", o.prefix, "/nginx.conf -e stderr")
  w("daemon off;")
  w("master_process on;")
  w("worker_processes ", o.workers, ";")
  w("pid ", o.prefix, "/nginx.pid;")
  w("error_log stderr notice;")
  w("load_module ", M.MODULE_DIR, "/ndk_http_module.so;")
  w("load_module ", M.MODULE_DIR, "/ngx_http_lua_module.so;")
  if lib then w("env TOOLGATE_LIB=", lib, ";") end
  w("")
  w("events { worker_connections 4096; }")
  w("")
  w("http {")
  w("    access_log off;")
  w("    client_body_temp_path ", o.prefix, "/tmp/body;")
  w("    proxy_temp_path ", o.prefix, "/tmp/proxy;")
  w("    fastcgi_temp_path ", o.prefix, "/tmp/fastcgi;")
  w("    uwsgi_temp_path ", o.prefix, "/tmp/uwsgi;")
  w("    scgi_temp_path ", o.prefix, "/tmp/scgi;")
  w("    # a call's body is read whole before it is decided (one larger than this goes to a")
  w("    # file and is read back; the core's max_input_bytes, 1 MiB by default, bounds it)")
  w("    client_body_buffer_size 64k;")
  w("    client_max_body_size 8m;")
  w("")
  w("    lua_package_path \"", lua_dir, "/?.lua;;\";")
  if o.lua_cdir then w("    lua_package_cpath \"", o.lua_cdir, "/?.so;;\";") end
  if o.redis and o.redis.ca_file then
    w("    # Redis's TLS certificate is verified against these")
    w("    lua_ssl_trusted_certificate ", o.redis.ca_file, ";")
    w("    lua_ssl_verify_depth 4;")
  end
  w("    # approvals, pin reports, quarantines, reload version: shared by every worker")
  w("    lua_shared_dict toolgate 16m;")
  w("    lua_shared_dict toolgate_metrics 4m;")
  w("")
  w("    init_by_lua_block {")
  w("        require(\"toolgate.nginx\").init{")
  w("            policy = ", lua_string(o.policy), ",")
  w("            registry = {")
  for _, s in ipairs(o.servers) do w("                ", lua_string(s .. "=" .. o.registry[s]), ",") end
  w("            },")
  w("            routes = {")
  for _, s in ipairs(o.servers) do
    -- (upstream: where the gateway lists the tools again itself when the server says they changed)
    w("                [", lua_string(s), "] = { context = ", o.contexts[s] or "{}", ", upstream = ",
      lua_string("http://" .. o.upstreams[s].hostport .. o.upstreams[s].path), " },")
  end
  w("            },")
  if o.api_context then w("            api_context = ", o.api_context, ",") end
  if o.principal_header then w("            principal_header = ", lua_string(o.principal_header), ",") end
  if o.otlp_endpoint then
    w("            -- trace spans, exported as OTLP/HTTP JSON (docs/tracing.md)")
    w("            otlp = { endpoint = ", lua_string(o.otlp_endpoint), " },")
  end
  w("            decision_log = ", lua_string(o.audit_log or (o.prefix .. "/decisions.jsonl")), ",")
  if o.admin_token_file then w("            admin_token_file = ", lua_string(o.admin_token_file), ",") end
  if o.webhooks and #o.webhooks > 0 then
    w("            -- each new pending approval is POSTed to these (toolgate.webhooks)")
    w("            webhooks = {")
    for _, hk in ipairs(o.webhooks) do
      w("                { url = ", lua_string(hk.url), ", kind = ", lua_string(hk.kind), " },")
    end
    w("            },")
    if o.admin then w("            inbox_url = ", lua_string("http://" .. o.admin .. "/approvals"), ",") end
  end
  if o.redis then
    local r = o.redis
    local parts = { "host = " .. lua_string(r.host), "port = " .. r.port }
    if r.prefix then parts[#parts + 1] = "prefix = " .. lua_string(r.prefix) end
    if r.password_file then parts[#parts + 1] = "password_file = " .. lua_string(r.password_file) end
    if r.sync_interval then parts[#parts + 1] = "sync_interval = " .. r.sync_interval end
    if r.ca_file then
      parts[#parts + 1] = "ssl = true, ssl_verify = true, server_name = " .. lua_string(r.server_name or r.host)
    end
    w("            -- the fleet's shared state (this node keeps a copy in lua_shared_dict toolgate)")
    w("            redis = { ", table.concat(parts, ", "), " },")
  end
  w("        }")
  w("    }")
  w("    init_worker_by_lua_block { require(\"toolgate.nginx\").init_worker() }")
  w("")
  for _, s in ipairs(o.servers) do
    local u = o.upstreams[s]
    w("    upstream mcp_", s:gsub("[^%w_]", "_"), " {")
    w("        server ", u.hostport, ";")
    w("        keepalive 64;")
    w("    }")
  end
  w("")
  w("    server {")
  w("        listen ", o.listen, ";")
  for _, s in ipairs(o.servers) do
    local u = o.upstreams[s]
    w("")
    w("        # MCP server ", s, ": Streamable HTTP (POST, GET streams, DELETE), Mcp-Session-Id passed both ways")
    w("        location = /mcp/", s, " {")
    w("            access_by_lua_block { require(\"toolgate.nginx\").access(", lua_string(s), ") }")
    w("            proxy_pass http://mcp_", s:gsub("[^%w_]", "_"), u.path, ";")
    w("            proxy_http_version 1.1;")
    w("            proxy_set_header Connection \"\";")
    w("            proxy_set_header Host ", u.hostport, ";")
    w("            # the answers are read as the client reads them: uncompressed (one still encoded is refused)")
    w("            proxy_set_header Accept-Encoding identity;")
    w("            # answers buffered: the header goes out with the body, not a segment ahead of it; nginx")
    w("            # passes each event of an SSE answer or GET stream on as it reads it all the same, and")
    w("            # never to a file: a slow client holds the server back, as unbuffered")
    w("            proxy_buffering on;")
    w("            proxy_max_temp_file_size 0;")
    w("            proxy_read_timeout 1h;")
    w("            header_filter_by_lua_block { require(\"toolgate.nginx\").header_filter() }")
    w("            body_filter_by_lua_block { require(\"toolgate.nginx\").body_filter() }")
    w("        }")
  end
  w("")
  w("        # the decision API, health and metrics")
  w("        location /v1/ { content_by_lua_block { require(\"toolgate.nginx\").api() } }")
  w("        location = /healthz { content_by_lua_block { require(\"toolgate.nginx\").api() } }")
  w("        location = /metrics { content_by_lua_block { require(\"toolgate.nginx\").api() } }")
  w("    }")
  if o.admin then
    w("")
    w("    # the admin API: approvals, reload, pin reports (a bearer token; keep it on loopback)")
    w("    server {")
    w("        listen ", o.admin, ";")
    w("        location / { content_by_lua_block { require(\"toolgate.nginx\").admin() } }")
    w("    }")
  end
  w("}")
  return table.concat(L, "\n") .. "\n"
end

local function read_context(server, path)
  local text = cli.read_all("gateway", path)
  if not text then return nil end
  local v, err = require("toolgate.json").decode(require("toolgate.decision").codec(), text)
  if type(v) ~= "table" or getmetatable(v) == require("toolgate.value").array_mt then
    cli.diag("gateway", path .. ": the context of " .. server .. " must be a JSON object" ..
      (err and (" (" .. err .. ")") or ""))
    return nil
  end
  -- written into the conf as a Lua table literal
  local function lua(x)
    if type(x) == "table" then
      local parts = {}
      for k, val in pairs(x) do
        parts[#parts + 1] = (type(k) == "number" and "" or ("[" .. lua_string(k) .. "] = ")) .. lua(val)
      end
      table.sort(parts)
      return "{ " .. table.concat(parts, ", ") .. " }"
    elseif type(x) == "string" then
      return lua_string(x)
    end
    return tostring(x)
  end
  return lua(v)
end

local function shell(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

function M.run(args)
  local o = cli.parse(args, {
    flags = { ["conf-only"] = true },
    options = { listen = true, policy = true, admin = true, ["admin-token-file"] = true, workers = true, prefix = true,
      redis = true, ["api-context"] = true, ["redis-prefix"] = true, ["redis-password-file"] = true, ["redis-sync"] = true,
      ["redis-tls"] = true, ["redis-tls-name"] = true, ["principal-header"] = true,
      ["otlp-endpoint"] = true, ["audit-log"] = true },
    multi = { upstream = true, registry = true, context = true, webhook = true },
  })
  if not o.listen then cli.usage_error("--listen HOST:PORT is required") end
  address("listen", o.listen)
  if o.admin then address("admin", o.admin) end
  if o.admin and not o["admin-token-file"] then cli.usage_error("--admin needs --admin-token-file") end
  local hooks = {}
  for _, spec in ipairs(o.webhook or {}) do
    local hook, herr = require("toolgate.webhooks").parse(spec)
    if not hook then cli.usage_error("--webhook: " .. herr) end
    hooks[#hooks + 1] = hook
  end
  local ups, servers = pairs_of("upstream", o.upstream, "URL")
  if #servers == 0 then cli.usage_error("give at least one --upstream SERVER=URL") end
  local regs = pairs_of("registry", o.registry, "FILE")
  local ctxs = pairs_of("context", o.context, "FILE")
  local upstreams, contexts, registry = {}, {}, {}
  for _, s in ipairs(servers) do
    local hostport, path = ups[s]:match("^http://([%w%.%-:%[%]]+:%d+)(/.*)$")
    if not hostport then
      hostport = ups[s]:match("^http://([%w%.%-:%[%]]+:%d+)$")
      path = "/"
    end
    if not hostport then cli.usage_error("--upstream " .. s .. ": an http://HOST:PORT/PATH URL, not " .. ups[s]) end
    upstreams[s] = { hostport = hostport, path = path }
    if not regs[s] then cli.usage_error("--upstream " .. s .. " has no --registry " .. s .. "=FILE") end
    registry[s] = absolute(regs[s])
    if ctxs[s] then
      contexts[s] = read_context(s, ctxs[s])
      if not contexts[s] then return cli.EXIT_USAGE end
    end
  end
  for s in pairs(regs) do
    if not ups[s] then cli.usage_error("--registry " .. s .. " has no --upstream " .. s .. "=URL") end
  end
  local api_context
  if o["api-context"] then
    api_context = read_context("the decision API", o["api-context"])
    if not api_context then return cli.EXIT_USAGE end
  end
  for s in pairs(ctxs) do
    if not ups[s] then cli.usage_error("--context " .. s .. " has no --upstream " .. s .. "=URL") end
  end
  local ph = o["principal-header"]
  if ph and (#ph > 64 or not ph:find("^[%w%-]+$")) then
    cli.usage_error("--principal-header takes a header name (letters, digits, -), not " .. ph)
  end
  if o["otlp-endpoint"] then
    local _, oerr = require("toolgate.otel").endpoint(o["otlp-endpoint"])
    if oerr then cli.usage_error("--otlp-endpoint: " .. oerr) end
  end
  local audit_log = o["audit-log"]
  if audit_log then
    -- (a file's path as nginx's master will open it: absolute, and writable now)
    if audit_log ~= "syslog" and audit_log:sub(1, 7) ~= "syslog:" then audit_log = absolute(audit_log) end
    local sink, aerr = require("toolgate.audit_log").open(audit_log)
    if not sink then cli.usage_error("--audit-log: " .. aerr) end
    sink:close()
  end
  local workers = M.DEFAULT_WORKERS
  if o.workers then
    workers = tonumber(o.workers)
    if not workers or workers ~= math.floor(workers) or workers < 1 or workers > M.MAX_WORKERS then
      cli.usage_error("--workers takes a whole number from 1 to " .. M.MAX_WORKERS)
    end
  end
  local policy, perr = require("toolgate.policy").resolve(o.policy or "mcp")
  if not policy then
    cli.diag("gateway", cli.not_a_policy(o.policy or "mcp") or perr)
    return cli.EXIT_USAGE
  end
  -- the engine is built here first: a broken policy or registry is said now, plainly
  local regs_list = {}
  for _, s in ipairs(servers) do regs_list[#regs_list + 1] = s .. "=" .. registry[s] end
  if not cli.load_engine("gateway", { policy = policy, registry = regs_list }, nil, true) then
    return cli.EXIT_USAGE
  end
  local redis
  if o.redis then
    local host, port = address("redis", o.redis)
    redis = { host = host, port = port, prefix = o["redis-prefix"],
      password_file = o["redis-password-file"] and absolute(o["redis-password-file"]) }
    if o["redis-sync"] then
      redis.sync_interval = tonumber(o["redis-sync"])
      if not redis.sync_interval or redis.sync_interval < 0.01 or redis.sync_interval > 60 then
        cli.usage_error("--redis-sync takes seconds from 0.01 to 60")
      end
    end
    if redis.prefix == "" then cli.usage_error("--redis-prefix must not be empty") end
    if o["redis-tls-name"] and not o["redis-tls"] then cli.usage_error("--redis-tls-name needs --redis-tls CA_FILE") end
    if o["redis-tls"] then
      redis.ca_file, redis.server_name = absolute(o["redis-tls"]), o["redis-tls-name"]
      if not exists(redis.ca_file) then
        cli.diag("gateway", "cannot read the CA certificates " .. redis.ca_file)
        return cli.EXIT_USAGE
      end
    end
    if redis.password_file and not exists(redis.password_file) then
      cli.diag("gateway", "cannot read the Redis password file " .. redis.password_file)
      return cli.EXIT_USAGE
    end
  else
    for _, k in ipairs({ "redis-prefix", "redis-password-file", "redis-sync", "redis-tls", "redis-tls-name" }) do
      if o[k] then cli.usage_error("--" .. k .. " needs --redis HOST:PORT") end
    end
  end
  local token_file = o["admin-token-file"] and absolute(o["admin-token-file"])
  if token_file and not exists(token_file) then
    cli.diag("gateway", "cannot read the admin token file " .. token_file)
    return cli.EXIT_USAGE
  end

  local prefix = o.prefix
  if not prefix then
    local p = io.popen("mktemp -d " .. shell((os.getenv("TMPDIR") or "/tmp") .. "/toolgate-gateway.XXXXXX"))
    prefix = p:read("*l")
    p:close()
    if not prefix then
      cli.diag("gateway", "cannot make a prefix directory")
      return cli.EXIT_FAILED
    end
  end
  prefix = absolute(prefix)
  if not os.execute("mkdir -p " .. shell(prefix .. "/tmp")) then
    cli.diag("gateway", "cannot make " .. prefix .. "/tmp")
    return cli.EXIT_FAILED
  end
  local lua_dir, lib, lua_cdir = M.lua_paths()
  local text = M.conf({ prefix = prefix, workers = workers, listen = o.listen, admin = o.admin,
    admin_token_file = token_file, policy = absolute(policy), servers = servers, registry = registry,
    contexts = contexts, api_context = api_context, upstreams = upstreams, lua_dir = lua_dir, lib = lib,
    lua_cdir = lua_cdir, redis = redis, webhooks = hooks, principal_header = ph,
    otlp_endpoint = o["otlp-endpoint"], audit_log = audit_log })
  local conf = prefix .. "/nginx.conf"
  if not cli.write_file("gateway", conf, text) then return cli.EXIT_FAILED end
  if o["conf-only"] then
    cli.out(conf, "\n")
    return cli.EXIT_OK
  end

  if not exists(M.NGINX) then
    cli.diag("gateway", "nginx is not installed (" .. M.NGINX .. "): apt-get install nginx libnginx-mod-http-lua")
    return cli.EXIT_FAILED
  end
  if not exists(M.MODULE_DIR .. "/ngx_http_lua_module.so") or not exists(M.RESTY_CORE) then
    cli.diag("gateway", "nginx's lua module is not installed: apt-get install libnginx-mod-http-lua lua-resty-core")
    return cli.EXIT_FAILED
  end
  io.stderr:write("toolgate gateway: nginx -p ", prefix, " -c ", conf, " (MCP endpoints:")
  for _, s in ipairs(servers) do io.stderr:write(" http://", o.listen, "/mcp/", s) end
  io.stderr:write(")\n")
  io.stderr:flush()
  -- nginx runs under a shell that passes SIGINT/SIGTERM on and stops nginx
  -- when this process goes away (killed by its PID), so nothing is left behind
  local cmd = shell(M.NGINX) .. " -p " .. shell(prefix) .. " -c " .. shell(conf) .. " -e stderr"
  local script = "lua=$PPID; " .. cmd .. " & n=$!; trap 'kill -TERM $n 2>/dev/null' INT TERM HUP; " ..
    "while kill -0 $n 2>/dev/null; do kill -0 $lua 2>/dev/null || kill -TERM $n 2>/dev/null; sleep 0.2; done; " ..
    "wait $n; exit $?"
  local ok, how, status = os.execute(script) -- system(): sh -c, its parent this process
  if how == "signal" or (ok and status == 0) then return cli.EXIT_OK end
  cli.diag("gateway", "nginx stopped with status " .. tostring(status) ..
    " (its messages are above: a listen address in use, a file it cannot read, ...)")
  return cli.EXIT_FAILED
end

return M
