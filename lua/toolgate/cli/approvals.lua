-- toolgate approvals: the person's side of a defer, on the local state the
-- stdio proxies share (toolgate.state.sqlite).
local audit = require "toolgate.audit"
local cli = require "toolgate.cli"
local proc = require "toolgate.proc"
local state = require "toolgate.state"

local M = {}

local CLI_AUDIT = assert(audit.settings({ arguments = "digest" }))

local function utc(t) return os.date("!%Y-%m-%d %H:%M:%S UTC", math.floor(t)) end

-- A note or a name as a terminal shows it: its control characters escaped
-- (whoever held the admin token wrote it).
local function printable(s) return (tostring(s):gsub("%c", function(c) return string.format("\\x%02x", c:byte()) end)) end

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
  if r.principal ~= nil then lines[#lines + 1] = "asked by   " .. printable(r.principal) end
  if r.decided_at ~= nil then
    lines[#lines + 1] = "decided    " .. (r.status == "denied" and "denied" or "granted") .. " by "
      .. printable(r.decided_by or "?") .. " at " .. utc(r.decided_at)
  end
  if r.note ~= nil then lines[#lines + 1] = "note       " .. printable(r.note) end
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
usage: toolgate approvals list [--all] [--human|--json] [--state DIR]
       toolgate approvals show ID [--state DIR]
       toolgate approvals grant ID [--uses N] [--expires 10m] [--note TEXT] [--state DIR]
       toolgate approvals deny ID [--note TEXT] [--state DIR]

A call the policy defers is answered with an approval id (the error's
data.approval_id, and a line on the proxy's standard error with the
command that grants it) and waits here.
  list        the pending requests (--all: the decided ones too, until
              they expire); on a terminal (or --human) each as show prints
              it, else (or --json) one JSON line each: id, status
              (pending, granted, denied, used), server, tool, code,
              message, args_digest, arguments (the exact canonical JSON
              text of the call's arguments, as a string; past 64 KiB its
              first 64 KiB), arguments_bytes, arguments_truncated, uses,
              created, expires, principal (who asked), decided_by,
              decided_at, note.  None: it says so on standard error,
              naming the state file it read
  show ID     one request for a person to read: what it asks, who asked
              and decided, and the arguments it binds on lines of their own
  grant ID    the identical call (same server, tool, arguments, policy,
              registry, epoch) then passes, as many times as the policy's
              mcp.approval_uses (--uses N), for the policy's
              mcp.approval_ttl from now (--expires: 90s, 10m, 2h, 1d); a
              call with other arguments asks again
  deny ID     the call is refused (APPROVAL_DENIED) until the request expires
  grant and deny record who decided (the local user: $USER, $LOGNAME or
  uid:N) and when, and --note TEXT (at most 1024 bytes) with the decision,
  and write its audit record (docs/audit.md; its arguments as a digest)
  to the state's log (toolgate log)

  --all        list: the decided requests too
  --human      list: for a person (the default on a terminal)
  --json       list: JSON lines (the default otherwise)
  --uses N     grant: how many identical calls pass (1 to 1000000)
  --expires D  grant: how long the grant lasts (whole s, m, h or d; at most 366d)
  --note TEXT  grant, deny: why, kept with the decision

  --state DIR  the state directory (default $XDG_STATE_HOME/toolgate, or
               ~/.local/state/toolgate): the one the proxies were given;
               one that group or others may write, or another user owns,
               is refused (exit 2): whoever can write it can replace the
               approvals

Exit status: 0 done; 1 no such request, or already decided; 2 bad usage.
]]

local UNIT_SECONDS = { s = 1, m = 60, h = 3600, d = 86400 }

-- --expires D -> whole seconds (a unit is needed: "10" could mean anything)
local function duration(text)
  local n, unit = text:match("^(%d+)([smhd])$")
  local seconds = n and tonumber(n) * UNIT_SECONDS[unit]
  if not seconds or seconds < 1 or seconds > 366 * 86400 then
    cli.usage_error("--expires takes a whole number of s, m, h or d (90s, 10m, 2h, 1d), at most 366d")
  end
  return seconds
end

-- Which options each verb takes (the rest are usage errors).
local VERB_OPTIONS = { list = { all = true, human = true, json = true }, show = {},
  grant = { uses = true, expires = true, note = true }, deny = { note = true } }

-- The decision's options (toolgate.state's approval_decide) from the command line.
local function decision(opts)
  local how = { by = cli.local_user(), note = opts.note }
  if opts.uses then
    how.uses = tonumber(opts.uses)
    if not opts.uses:match("^%d+$") or how.uses < 1 or how.uses > 1000000 then
      cli.usage_error("--uses takes a whole number from 1 to 1000000")
    end
  end
  if opts.expires then how.ttl = duration(opts.expires) end
  if how.note and #how.note > state.MAX_DECISION_NOTE_BYTES then
    cli.usage_error("--note takes at most " .. state.MAX_DECISION_NOTE_BYTES .. " bytes")
  end
  return how
end

local function list(store, opts, dir)
  local human = opts.human or (not opts.json and cli.is_terminal(1))
  local n = 0
  for _, r in ipairs(store:approvals()) do
    if opts.all or r.status == "pending" then
      n = n + 1
      if human then cli.out(n > 1 and "\n" or "", shown(r)) else cli.out(cli.encode(r), "\n") end
    end
  end
  -- said, not silent: a forgotten --state reads another directory
  if n == 0 then
    cli.diag("approvals", (opts.all and "no approval request in " or "no pending approval request in ") .. dir
      .. "/state.sqlite" .. (opts.all and "" or " (--all: the decided ones too)"))
  end
end

--- command(verb, id, dir) -> the command line a person runs to decide the
-- approval id on the state directory dir (made absolute: the person's
-- shell may be elsewhere), quoted for a POSIX shell where it needs it.
function M.command(verb, id, dir)
  if dir:sub(1, 1) ~= "/" then
    local p = io.popen("pwd")
    local cwd = p and p:read("*l")
    if p then p:close() end
    dir = (cwd or ".") .. "/" .. dir:gsub("^%./", "")
  end
  if dir:find("[^%w%./_%-]") then dir = "'" .. dir:gsub("'", "'\\''") .. "'" end
  return "toolgate approvals " .. verb .. " " .. id .. " --state " .. dir
end

function M.run(args)
  local opts, pos = cli.parse(args, { options = { state = true, uses = true, expires = true, note = true },
    flags = { all = true, human = true, json = true } })
  local verb, id = pos[1], pos[2]
  if verb == "list" then
    if #pos ~= 1 then cli.usage_error("list takes no argument") end
  elseif verb == "grant" or verb == "deny" or verb == "show" then
    if #pos ~= 2 or not id:match("^%x+$") then cli.usage_error(verb .. " takes one approval id") end
  else
    cli.usage_error("list, show ID, grant ID or deny ID expected")
  end
  for k in pairs(opts) do
    if k ~= "state" and not VERB_OPTIONS[verb][k] then cli.usage_error("--" .. k .. " does not go with " .. verb) end
  end
  if opts.human and opts.json then cli.usage_error("--human or --json, not both") end
  local how = (verb == "grant" or verb == "deny") and decision(opts)
  local store = cli.open_state("approvals", opts.state)
  if not store then return cli.EXIT_USAGE end
  if verb == "list" then
    list(store, opts, cli.state_dir(opts.state))
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
  local r, err = store:approval_decide(id, verb, how)
  if r then
    -- the decision's audit record, in the state's log (toolgate log); without its arguments (the
    -- policy that says how they are recorded is the proxies', not known here: their digest is)
    local ok, lerr = pcall(store.log, store, audit.approval(r, verb == "grant" and "granted" or "denied", proc.time(),
      { source = "cli", audit = CLI_AUDIT }))
    if not ok then cli.diag("approvals", "the decision stands, but its audit record could not be written: "
      .. tostring(lerr)) end
  end
  store:close()
  if not r then
    cli.diag("approvals", err)
    return cli.EXIT_FAILED
  end
  cli.out(cli.encode(r), "\n")
  return cli.EXIT_OK
end

return M
