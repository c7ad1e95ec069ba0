-- toolgate registry lint, record and compile: load-time findings about
-- registries, recording a live server's tools, compiling registry images.
local cli = require "toolgate.cli"
local core = require "toolgate.core"
local registry = require "toolgate.registry"
local value = require "toolgate.value"

local M = {}

M.usage = [[
usage: toolgate registry lint [--strict] [SERVER=]FILE...
       toolgate registry record [--server NAME] [--output FILE] [--timeout S] -- COMMAND [ARGS...]
       toolgate registry record [--server NAME] [--output FILE] [--timeout S] --url URL [--header-file F]
       toolgate registry record --check FILE [--server NAME] [--timeout S] (-- COMMAND [ARGS...] | --url URL ...)
       toolgate registry compile --output IMAGE [--policy P] [SERVER=]FILE...

Loads the registries together as one snapshot would, and writes one JSON
line per finding:
  {"kind":"collision|shadowing|confusable|bad_name|schema|duplicate|source",
   "severity":"error|reject|warning","message":"...","tools":[{"server","name"}...]}
then a summary line {"summary":{"tools":N,"errors":N,"rejects":N,
"warnings":N,"registry_hash":"..."}}.  Severity error: the snapshot would not
load; reject: it loads, and calls to the tools concerned are refused;
warning: reported only.

  schema      a schema toolgate cannot compile (unsupported keyword, wrong
              kind of value, unresolvable $ref, bad pattern): an error
  duplicate   one (server, name) twice: an error
  collision   one name on several servers
  shadowing   a later (or less trusted) server registering a name an earlier
              one owns; calls to it are refused by default
  confusable  names differing only by case or '-' versus '_'
  bad_name    a name outside ^[A-Za-z0-9_.-]{1,128}$; refused at call time

  --strict    count collisions, shadowing, confusable and bad names as errors
              (what the strict policy does)

exit status: 0 no errors, 1 some error (the snapshot would not load),
2 bad usage or unreadable file

record starts the MCP server COMMAND (a stdio server, as a client's
configuration starts it), or speaks to the Streamable HTTP server at --url,
reads its tools (tools/list, following nextCursor), and writes them as a
registry (an MCP tools/list result with the server's name:
{"server","protocolVersion","tools"}) to FILE (or standard output); with
--output, it then writes one line per tool with its pin
({"server","tool","pin"}) and a summary ({"summary":{"tools":N,
"registry_hash":"..."}}).  Give the server the arguments it gets in the
client's configuration: a tool's description may depend on them.

It speaks MCP 2026-07-28 first (server/discover, then tools/list with the
request _meta that revision needs) and falls back to the 2025 handshake
(initialize, notifications/initialized) when the server answers
server/discover with anything but its DiscoverResult naming 2026-07-28 or
a -32022 that supports it; standard error says which era it used.  Over
HTTP an answer of 401, 403 or 5xx, or none, is an error, not a fallback.

  --server NAME   the server's name in the registry (default: the name the
                  server gives in server/discover or initialize), the SERVER
                  of --registry SERVER=FILE
  --output FILE   where the registry goes (default: standard output)
  --timeout S     seconds to wait for each answer (default 30)
  --url URL       the server's Streamable HTTP endpoint: http:// only
                  (https:// is not supported: toolgate has no TLS), the host an
                  IP address or localhost (no name lookup); one POST per
                  request, the answer JSON or an event stream
  --header-file F headers every request carries, one "Name: value" a line
                  (# comments), e.g. "Authorization: Bearer ...": credentials
                  stay off the command line, F must not be open to other
                  users (chmod 600), and no message shows a value

record --check FILE compares the live server (over either transport) with
the registry FILE (a rug-pull check, by hand or in CI): one line per tool
that changed under
its pin, that the registry lacks, or that the server no longer lists,
  {"server","tool","change":"changed|added|removed","pin","upstream_pin"}
(a tool whose pin matches but whose annotations changed: "changed" with
"field":"annotations"),
then {"summary":{"changed":N,"added":N,"removed":N,"registry_hash":"..."}};
exit status 1 when anything changed, 0 when the server matches its pins.

compile writes the registry files into one read-only image, IMAGE, that
every place taking a registry file takes instead (--registry
[SERVER=]IMAGE, the gateway's registry list, a policy's registry
sources), known by its magic bytes: an engine maps it (its pages shared
by every process that maps it) and gives the decisions, findings, pins
and registry_hash the files give.  The image holds each file's bytes, its
SERVER, its path and its hash; one whose files have changed since (a file
still at its path with other bytes) is refused STALE_REGISTRY_IMAGE, a
corrupt or truncated one BAD_REGISTRY_IMAGE.  The files must load under
the policy P's registry settings (default: the default policy); IMAGE is
written whole and renamed into place, so a process mapping the old one
keeps it.  Writes {"summary":{"tools":N,"sources":N,"bytes":N,
"registry_hash":"..."}}.  docs/registry-image.md has the format.
]]

-- Headers that record writes itself, never taken from a --header-file
local OWN_HEADERS = { host = true, ["content-type"] = true, ["content-length"] = true, accept = true,
  connection = true, ["transfer-encoding"] = true, ["mcp-protocol-version"] = true, ["mcp-method"] = true,
  ["mcp-name"] = true, ["mcp-session-id"] = true }

-- The headers of a --header-file: {{name, value}...} | nil after a
-- diagnostic.  No message ever holds a value: they are credentials.
local function header_file(path)
  local proc = require "toolgate.proc"
  local st, serr = proc.stat(path)
  if not st then
    cli.diag("registry", "cannot read the header file " .. path .. ": " .. tostring(serr))
    return nil
  end
  if st.perm % 64 ~= 0 then
    cli.diag("registry", "the header file " .. path .. " is open to other users (mode "
      .. string.format("%04o", st.perm) .. "): it holds credentials; chmod 600 it")
    return nil
  end
  local f = io.open(path, "rb")
  local text = f and f:read("a")
  if f then f:close() end
  if not text then
    cli.diag("registry", "cannot read the header file " .. path)
    return nil
  end
  local http = require "toolgate.mcp.http_client"
  local out, n = {}, 0
  for line in (text:gsub("\r\n", "\n") .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:find("%S") and not line:find("^%s*#") then
      local name, v = line:match("^([^:%s]+):[ \t]*(.-)[ \t]*$")
      if not name or not http.header_ok(name, v) then
        cli.diag("registry", path .. ":" .. n .. ": not a header line (Name: value)")
        return nil
      end
      if OWN_HEADERS[name:lower()] then
        cli.diag("registry", path .. ":" .. n .. ": " .. name .. " is a header record writes itself")
        return nil
      end
      out[#out + 1] = { name, v }
    end
  end
  return out
end

-- The live server's tools: (server name, tools JSON text, protocol) | nil
-- after a diagnostic.  how: {argv =} or {url =, headers =}.
local function live_tools(how, timeout)
  local mcp_client = require "toolgate.mcp_client"
  local c, err
  if how.url then
    c, err = mcp_client.open_http(how.url, { timeout = timeout, headers = how.headers })
  else
    c, err = mcp_client.start(how.argv, { timeout = timeout })
  end
  if not c then
    cli.diag("registry", err)
    return nil
  end
  local init, tools
  init, err = c:connect()
  if init then
    cli.diag("registry", "the server speaks MCP " .. tostring(init.protocol) .. (init.era == "modern"
      and " (server/discover, then tools/list with the 2026-07-28 _meta)"
      or (" (initialize: " .. tostring(init.fallback) .. ")")))
  end
  if init and not init.has_tools then err = "the server does not offer tools (no tools capability)" end
  if init and not err then tools, err = c:list_tools() end
  c:close()
  if not tools then
    cli.diag("registry", tostring(err))
    return nil
  end
  return init.server_name, tools, init.protocol
end

local function record(rest)
  local opts, argv = cli.parse(rest, { options = { server = true, output = true, check = true, timeout = true,
    url = true, ["header-file"] = true } })
  if opts.url and #argv > 0 then cli.usage_error("give --url URL or -- COMMAND, not both") end
  if not opts.url and #argv == 0 then cli.usage_error("the server's command (after --) or --url is missing") end
  if opts["header-file"] and not opts.url then cli.usage_error("--header-file goes with --url") end
  if opts.check and opts.output then cli.usage_error("--check writes no registry: no --output") end
  local timeout = tonumber(opts.timeout or "30")
  if not timeout or timeout <= 0 then cli.usage_error("--timeout takes seconds") end
  local how = { argv = argv, url = opts.url }
  if opts["header-file"] then
    how.headers = header_file(opts["header-file"])
    if not how.headers then return cli.EXIT_USAGE end
  end
  local name, tools, protocol = live_tools(how, timeout)
  if not name and not tools then return cli.EXIT_FAILED end
  local mcp = require "toolgate.mcp"
  local toolgate = require "toolgate"
  if opts.check then
    local e, err, code = toolgate.new{ policy = "rung", registry = { opts.check } }
    if not e then
      cli.diag("registry", tostring(code) .. ": " .. tostring(err))
      return cli.EXIT_USAGE
    end
    local snap = e:snapshot()
    local server = opts.server or (snap.registry.tools[1] and snap.registry.tools[1].server) or name
    local doc = assert(snap.core:parse(tools))
    local _, changes = mcp.tool_changes(snap, server, doc:root(), true)
    doc:free()
    local count = { changed = 0, added = 0, removed = 0 }
    for _, c in ipairs(changes) do
      count[c.change] = count[c.change] + 1
      cli.out(cli.encode({ server = server, tool = c.tool, change = c.change, pin = c.pin,
        upstream_pin = c.upstream_pin, field = c.field }), "\n")
    end
    count.registry_hash = snap.hash
    cli.out(cli.encode({ summary = count }), "\n")
    return #changes > 0 and cli.EXIT_FAILED or cli.EXIT_OK
  end
  local server = opts.server or name
  if not server or server == "" then
    cli.diag("registry", "the server gives no name (in server/discover or initialize): name it with --server")
    return cli.EXIT_FAILED
  end
  local text = '{"server":' .. assert(value.encode(server)) .. ',"protocolVersion":'
    .. assert(value.encode(protocol or value.null)) .. ',"tools":' .. tools .. "}"
  text = assert(require("toolgate.decision").codec():canon(text)) .. "\n"
  if not opts.output then
    cli.out(text)
    return cli.EXIT_OK
  end
  if not cli.write_file("registry", opts.output, text) then return cli.EXIT_USAGE end
  local e, err, code = toolgate.new{ policy = "rung", registry = { opts.output } }
  if not e then
    cli.diag("registry", "the recorded tools do not load: " .. tostring(code) .. ": " .. tostring(err))
    return cli.EXIT_FAILED
  end
  local snap = e:snapshot()
  for _, t in ipairs(snap.registry.tools) do
    cli.out(cli.encode({ server = t.server, tool = t.name, pin = t.pin }), "\n")
  end
  cli.out(cli.encode({ summary = { tools = #snap.registry.tools, registry_hash = snap.hash } }), "\n")
  return cli.EXIT_OK
end

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  local p = io.popen("pwd")
  local cwd = p and p:read("*l")
  if p then p:close() end
  return (cwd or ".") .. "/" .. path:gsub("^%./", "")
end

local function compile(rest)
  local opts, pos = cli.parse(rest, { options = { output = true, policy = true } })
  if not opts.output then cli.usage_error("--output IMAGE is missing") end
  if #pos == 0 then cli.usage_error("give at least one registry FILE") end
  local engine = assert(core.new_engine())
  local max = engine:limits().max_registry_bytes
  local sources, texts = {}, {}
  local output = absolute(opts.output)
  for _, p in ipairs(pos) do
    local server, path = registry.split_source(p)
    local f = io.open(path, "rb")
    local size = f and f:seek("end")
    if size and size > max then
      f:close()
      cli.diag("registry", string.format("REGISTRY_TOO_LARGE: %s: registry of %d bytes is larger than "
        .. "max_registry_bytes (%d)", path, size, max))
      return cli.EXIT_FAILED
    end
    local text = f and f:seek("set") and f:read("*a")
    if f then f:close() end
    if not text then
      cli.diag("registry", "cannot read " .. path)
      return cli.EXIT_USAGE
    end
    if absolute(path) == output then
      cli.diag("registry", "--output " .. opts.output .. " is one of the registry files: the image would replace it")
      return cli.EXIT_USAGE
    end
    if core.is_image(text) then
      cli.diag("registry", path .. " is a compiled image already: compile the registry files it was made from")
      return cli.EXIT_USAGE
    end
    sources[#sources + 1] = { text = text, server = server, label = path, path = absolute(path), format = "auto" }
    texts[#texts + 1] = { text = text, server = server, label = path }
  end
  -- the files load as they will be used: under the policy's registry settings
  local e, err, code = require("toolgate").new{ policy = opts.policy or "default", registry = texts }
  if not e then
    cli.diag("registry", tostring(code) .. ": " .. tostring(err))
    return cli.EXIT_FAILED
  end
  local snap = e:snapshot()
  local bytes = assert(engine:image_write(sources))
  -- whole, then renamed over the old one: a process mapping that one keeps its pages
  local tmp = opts.output .. ".tmp"
  if not cli.write_file("registry", tmp, bytes) then return cli.EXIT_USAGE end
  local moved, merr = os.rename(tmp, opts.output)
  if not moved then
    os.remove(tmp)
    cli.diag("registry", "cannot write " .. opts.output .. ": " .. tostring(merr))
    return cli.EXIT_USAGE
  end
  cli.out(cli.encode({ summary = { tools = #snap.registry.tools, sources = #sources, bytes = #bytes,
    registry_hash = snap.hash } }), "\n")
  return cli.EXIT_OK
end

function M.run(args)
  local rest = {}
  for i = 2, #args do rest[#rest + 1] = args[i] end
  if args[1] == "record" then return record(rest) end
  if args[1] == "compile" then return compile(rest) end
  if args[1] ~= "lint" then cli.usage_error("registry lint, registry record or registry compile expected") end
  local opts, pos = cli.parse(rest, { flags = { strict = true } })
  if #pos == 0 then cli.usage_error("give at least one registry FILE") end
  for _, p in ipairs(pos) do
    local _, path = registry.split_source(p)
    local f = io.open(path, "rb")
    if not f then
      cli.diag("registry", "cannot read " .. path)
      return cli.EXIT_USAGE
    end
    f:close()
  end
  local settings
  if opts.strict then
    settings = { on_collision = "error", on_shadowing = "error", on_confusable = "error", on_bad_name = "error" }
  end
  local engine = assert(core.new_engine())
  local snap = assert(registry.load(engine, pos, settings, true))
  local count = { error = 0, reject = 0, warning = 0 }
  for _, f in ipairs(snap.findings) do
    count[f.severity] = count[f.severity] + 1
    local line = { kind = f.kind, severity = f.severity, message = f.message, code = f.code, pointer = f.pointer }
    if f.tools then line.tools = setmetatable(f.tools, value.array_mt) end
    cli.out(cli.encode(line), "\n")
  end
  cli.out(cli.encode({ summary = {
    tools = #snap.tools, errors = count.error, rejects = count.reject, warnings = count.warning,
    registry_hash = snap.hash,
  } }), "\n")
  return count.error > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
