-- toolgate approvals: the person's side of a defer, on the local state the
-- stdio proxies share (toolgate.state.sqlite).
local cli = require "toolgate.cli"

local M = {}

M.usage = [[
usage: toolgate approvals list|grant ID|deny ID [--state DIR]

A call the policy defers is answered with an approval id (the error's
data.approval_id, and a line on the proxy's standard error) and waits here.
  list        one JSON line per approval request that has not expired:
              id, status (pending, granted, denied, used), server, tool,
              code, message, args_digest, uses, created, expires
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
  elseif verb == "grant" or verb == "deny" then
    if #pos ~= 2 or not id:match("^%x+$") then cli.usage_error(verb .. " takes one approval id") end
  else
    cli.usage_error("list, grant ID or deny ID expected")
  end
  local store = cli.open_state("approvals", opts.state)
  if not store then return cli.EXIT_USAGE end
  if verb == "list" then
    for _, r in ipairs(store:approvals()) do cli.out(cli.encode(r), "\n") end
    store:close()
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
