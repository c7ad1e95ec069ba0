-- toolgate check: the Resolution Rung on each call line.
local cli = require "toolgate.cli"
local core = require "toolgate.core"
local registry = require "toolgate.registry"
local rung = require "toolgate.rung"
local json = require "toolgate.json"

local M = {}

M.usage = [[
usage: toolgate check --registry [SERVER=]FILE... [options] [FILE]

Checks each tool call in FILE (or standard input), one JSON object per line,
against the registry and writes one decision per line:
  {"verdict":"accept|reject","stage":"decode|rung","code":"H1|H2|H3|...",
   "path":"/json/pointer","message":"...","server":"...","tool":"...", ...}

  --registry [SERVER=]FILE  a registry file (repeatable): toolgate's format, an
                            OpenAI or Anthropic tools array, or an MCP tools/list
                            result; SERVER= names the server its tools belong to
                            (needed for an MCP list that does not say)
  --format FMT              call format: auto (default), native, openai,
                            anthropic, mcp
  --server NAME             server for calls that name none (e.g. MCP requests
                            read from one server's traffic)
  --also                    for accepted calls, list the other tools whose input
                            schemas also accept the arguments (H5)
  --fail-on VERDICT         exit 1 if any decision has this verdict (reject)

Codes: H1 unknown or ambiguous tool; H2 undeclared or missing key; H3 a
value failing its type/enum/range/length/pattern/format check; BAD_CALL and
BAD_ARGUMENTS calls that cannot be decoded; JSON error codes for malformed
lines.  Nothing that cannot be checked is ever accepted.

exit status: 0 done, 1 --fail-on matched, 2 bad usage or unusable registry
]]

local FORMATS = { auto = true, native = true, openai = true, anthropic = true, mcp = true }

function M.run(args)
  local opts, pos = cli.parse(args, {
    flags = { also = true },
    options = { format = true, server = true, ["fail-on"] = true },
    multi = { registry = true },
  })
  if #pos > 1 then cli.usage_error("at most one FILE") end
  if not opts.registry then cli.usage_error("--registry is required") end
  local format = opts.format or "auto"
  if not FORMATS[format] then cli.usage_error("unknown --format " .. format) end
  local fail_on = opts["fail-on"]
  if fail_on and fail_on ~= "reject" and fail_on ~= "defer" and fail_on ~= "accept" then
    cli.usage_error("--fail-on takes reject, defer or accept")
  end

  local engine = assert(core.new_engine())
  local snap, err = registry.load(engine, opts.registry)
  if not snap then
    cli.diag("check", err)
    return cli.EXIT_USAGE
  end

  local f = cli.open_input("check", pos[1])
  if not f then return cli.EXIT_USAGE end
  local matched = false
  cli.each_line(f, function(line, n)
    local decision
    local call, msg, code, offset = engine:decode_call(line, format)
    if not call then
      decision = { verdict = "reject", stage = "decode", code = code, message = msg, offset = offset }
    else
      decision = rung.check(snap, call:server() or opts.server, call:name(), call:arguments(),
        { report_also = opts.also })
      local id = call:id()
      if id then decision.id = json.to_lua(id) end
    end
    decision.line = n
    if decision.verdict == fail_on then matched = true end
    io.stdout:write(cli.encode(engine, decision), "\n")
  end)
  if f ~= io.stdin then f:close() end
  return matched and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
