-- toolgate approvals: the person's side of a defer, on the local state the
-- stdio proxies share (toolgate.state.sqlite).
local cli = require "toolgate.cli"

local M = {}

local function utc(t) return os.date("!%Y-%m-%d %H:%M:%S UTC", math.floor(t)) end

-- What a person reads before deciding: the call, and the arguments it
-- binds as the gateway recorded them (the exact text, never re-encoded),
-- said to be cut when they were.
local function shown(r)
  local lines = {
    "approval   " .. r.id,
    "status     " .. r.status .. " (until " .. utc(r.expires) .. ", " .. tostring(r.uses) .. " use(s))",
    "server     " .. tostring(r.server),
    "tool       " .. tostring(r.tool),
    "code       " .. tostring(r.code),
    "message    " .. tostring(r.message),
    "digest     " .. tostring(r.args_digest),
  }
  if r.arguments == nil then
    lines[#lines + 1] = "arguments  (not recorded)"
  elseif r.arguments_truncated then
    lines[#lines + 1] = "arguments  the first " .. #r.arguments .. " of " .. string.format("%d", r.arguments_bytes)
      .. " bytes (cut: the digest is of all of them):"
  else
    lines[#lines + 1] = "arguments  " .. string.format("%d", r.arguments_bytes) .. " bytes:"
  end
  if r.arguments ~= nil then lines[#lines + 1] = r.arguments end
  return table.concat(lines, "\n") .. "\n"
end

M.usage = [[
usage: toolgate approvals list|show ID|grant ID|deny ID [--state DIR]

A call the policy defers is answered with an approval id (the error's
data.approval_id, and a line on the proxy's standard error) and waits here.
  list        one JSON line per approval request that has not expired:
              id, status (pending, granted, denied, used), server, tool,
              code, message, args_digest, arguments (the exact canonical
              JSON text of the call's arguments, as a string; past 64 KiB
              its first 64 KiB), arguments_bytes, arguments_truncated,
              uses, created, expires
  show ID     one request for a person to read: what it asks, and the
              arguments it binds on lines of their own
  grant ID    the identical call (same server, tool, arguments, policy,
              registry, epoch) then passes, as many times as the policy's
              mcp.approval_uses; a call with other arguments asks again
  deny ID     the call is refused (APPROVAL_DENIED) until the request expires

  --state DIR  the state directory (default $XDG_STATE_HOME/toolgate, or
               ~/.local/state/toolgate): the one the proxies were given;
               one that group or others may write, or another user owns,
               is refused (exit 2): whoever can write it can replace the
               approvals

Exit status: 0 done; 1 no such request, or already decided; 2 bad usage.
]]

function M.run(args)
  local opts, pos = cli.parse(args, { options = { state = true } })
  local verb, id = pos[1], pos[2]
  if verb == "list" then
    if #pos ~= 1 then cli.usage_error("list takes no argument") end
  elseif verb == "grant" or verb == "deny" or verb == "show" then
    if #pos ~= 2 or not id:match("^%x+$") then cli.usage_error(verb .. " takes one approval id") end
  else
    cli.usage_error("list, show ID, grant ID or deny ID expected")
  end
  local store = cli.open_state("approvals", opts.state)
  if not store then return cli.EXIT_USAGE end
  if verb == "list" then
    for _, r in ipairs(store:approvals()) do cli.out(cli.encode(r), "\n") end
    store:close()
    return cli.EXIT_OK
  end
  if verb == "show" then
    local r = store:approval(id)
    store:close()
    if not r then
      cli.diag("approvals", "no approval request " .. id .. " (unknown or expired)")
      return cli.EXIT_FAILED
    end
    cli.out(shown(r))
    return cli.EXIT_OK
  end
  local r, err = store:approval_decide(id, verb)
  store:close()
  if not r then
    cli.diag("approvals", err)
    return cli.EXIT_FAILED
  end
  cli.out(cli.encode(r), "\n")
  return cli.EXIT_OK
end

return M
