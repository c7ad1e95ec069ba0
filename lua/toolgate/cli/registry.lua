-- toolgate registry lint: load-time findings about registries.
local cli = require "toolgate.cli"
local core = require "toolgate.core"
local registry = require "toolgate.registry"
local value = require "toolgate.value"

local M = {}

M.usage = [[
usage: toolgate registry lint [--strict] [SERVER=]FILE...

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
]]

function M.run(args)
  if args[1] ~= "lint" then cli.usage_error("the only registry subcommand is lint") end
  local rest = {}
  for i = 2, #args do rest[#rest + 1] = args[i] end
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
    io.stdout:write(cli.encode(line), "\n")
  end
  io.stdout:write(cli.encode({ summary = {
    tools = #snap.tools, errors = count.error, rejects = count.reject, warnings = count.warning,
    registry_hash = snap.hash,
  } }), "\n")
  return count.error > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
