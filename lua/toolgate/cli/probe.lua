-- toolgate probe: verify tools' determinism declarations with a dry run.
local cli = require "toolgate.cli"
local json = require "toolgate.json"

local M = {}

M.usage = [[
usage: toolgate probe --exec CMD --epoch E [--policy FILE|NAME] [--registry [SERVER=]FILE]... [FILE]

For each call in FILE (or standard input; one {"server","name","arguments"}
per line, one line per tool to probe) runs the shell command CMD twice,
with the call as JSON on its standard input, and compares the two results
(CMD's standard output, JSON) in canonical form, byte for byte.  Writes one
report per line:
  {"server":"...","tool":"...","epoch":"...","verdict":"verified|quarantined|invalid",
   "hashes":[...],"reason":"..."}
verified: two identical calls in one epoch gave identical results, so the
tool's determinism declaration holds in this epoch; quarantined: they did
not (or the command failed), so toolgate will not reject plans on this
tool's argument disagreement; invalid: the call fails the rung.

  --exec CMD     the dry-run command (run with sh -c)
  --epoch E      the sandbox epoch the probe runs in (required)

exit status: 0 every tool verified, 1 some tool quarantined or invalid,
2 bad usage or an unloadable policy or registry
]]

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs cmd with input on its stdin; returns its stdout, or raises when it
-- exits non-zero.  (The status is printed after the output: LuaJIT's
-- popen close does not report it.)
local function run_command(cmd, input)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb"))
  f:write(input)
  f:close()
  local p = io.popen("sh -c " .. shell_quote(cmd) .. " < " .. shell_quote(tmp) .. "; printf '\\n%s' $?")
  local out = p:read("*a")
  p:close()
  os.remove(tmp)
  local body, status = out:match("^(.*)\n(%d+)$")
  if status ~= "0" then error("command exited with status " .. tostring(status), 0) end
  return body
end

function M.run(args)
  local opts, pos = cli.parse(args, {
    options = { exec = true, epoch = true, policy = true },
    multi = { registry = true },
  })
  if #pos > 1 then cli.usage_error("at most one FILE") end
  if not opts.exec then cli.usage_error("--exec is required") end
  if not opts.epoch then cli.usage_error("--epoch is required") end
  local engine = cli.load_engine("probe", opts, nil, false)
  if not engine then return cli.EXIT_USAGE end
  local core_engine = engine:snapshot().core
  local all_verified = true
  local read = cli.each_line("probe", pos[1], function(line, n)
    local call = core_engine:decode_call(line, "native")
    local report
    if not call then
      report = { verdict = "invalid", code = "BAD_CALL", message = "line is not a native call" }
    else
      report = engine:probe({ server = call:server(), name = call:name() },
        json.to_lua(call:arguments()),
        function() return run_command(opts.exec, line) end, opts.epoch)
    end
    report.line = n
    if report.verdict ~= "verified" then all_verified = false end
    cli.out(cli.encode(report), "\n")
  end)
  if not read then return cli.EXIT_USAGE end
  return all_verified and cli.EXIT_OK or cli.EXIT_FAILED
end

return M
