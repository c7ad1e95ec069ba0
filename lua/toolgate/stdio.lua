--- toolgate.stdio: the stdio MCP proxy's relay (toolgate mcp-proxy).
--
-- Starts an MCP server as a child process and relays newline-delimited
-- JSON-RPC between the client (this process's standard input and output)
-- and the server (the child's), every message through a toolgate.mcp
-- gateway: a refused tools/call is answered here and never reaches the
-- server; tools/list answers are filtered and pin-checked; tools/call
-- results are verified.  The gateway is the one the nginx face uses; this
-- module is only the transport.
--
--   local status = stdio.run{ gateway = gw, route = route, argv = {...}, grace = 5, log = fn }
--
-- One loop over poll(2): both directions move at once and neither waits
-- on the other (every descriptor is non-blocking; what cannot be written
-- now waits in a queue, and a side whose queue is full is not read until
-- it drains, so memory stays bounded: the client is not read while either
-- queue it fills, to the server or its own answers back, is over
-- HIGH_WATER_BYTES, nor the server while the queue to the client is; the
-- proxy's own log lines beyond it are dropped and counted); the server's
-- standard error goes to ours; SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed to the server
-- (SIGHUP not when the host takes it: opts.hup).
-- Messages keep their order in each direction.  A line from the client
-- that is not JSON, or not JSON-RPC, or a request whose id is in flight, is
-- answered with the gateway's error; a line from the server that is not
-- JSON, or an answer to no request in flight, is dropped with a log line.
--
-- What either side reads is what was decided, never the bytes as they
-- came: each message goes on re-serialized from its parse (canonical JSON,
-- exact numbers), with U+0085, U+2028 and U+2029 escaped, so no reader
-- finds a line break inside it (a server built with the MCP Python SDK
-- reads universal newlines, where a raw CR ends a line; str.splitlines
-- also breaks at those three).  A client's line holding a raw CR anywhere
-- but its end is refused: JSON reads it as whitespace, such a server as
-- two lines.  (\v, \f and \x1c-\x1e, splitlines' other breaks, are no
-- JSON outside a string nor raw inside one: such a line is not JSON.)
--
-- The end: when the client closes its side, the server's standard input
-- is closed (the MCP stdio transport's shutdown), then after `grace`
-- seconds the server gets SIGTERM, and after as long again SIGKILL.  When
-- the server ends, each request it left unanswered gets an error, and run
-- returns the server's exit status (128 + N for a server ended by signal
-- N), or 1 when it could not be started.
-- @module toolgate.stdio

local decision = require "toolgate.decision"
local json = require "toolgate.json"
local mcp = require "toolgate.mcp"
local proc = require "toolgate.proc"
local value = require "toolgate.value"

local M = {}

--- The longest line either side may send, in bytes (a longer one is
-- refused, or dropped, whole): toolgate.mcp's MAX_MESSAGE_BYTES.
M.MAX_LINE_BYTES = mcp.MAX_MESSAGE_BYTES
--- A queue holding this many bytes stops the reading of the side that
-- fills it.
M.HIGH_WATER_BYTES = 4 * 1024 * 1024
--- Seconds between closing the server's input, SIGTERM and SIGKILL.
M.DEFAULT_GRACE = 5
--- Seconds a call held for the person's answer in their client waits for
-- it (opts.approval_wait): then it is refused, the approval left pending.
M.DEFAULT_APPROVAL_WAIT = 300

local RELAYED_SIGNALS = { "INT", "TERM", "HUP", "QUIT" }
-- the pages a re-list (below) reads at most
local RELIST_MAX_PAGES = 100
-- how often opts.every runs, in milliseconds
local EVERY_MS = 100

-- An output queue on a non-blocking descriptor.
local function queue(fd)
  return { fd = fd, parts = {}, bytes = 0, offset = 1, open = true }
end

local function push(q, s)
  if not q.open then return end
  q.parts[#q.parts + 1] = s
  q.bytes = q.bytes + #s
end

-- Writes what the descriptor takes now; false when it is closed (the
-- reader went away: what is left is dropped).
local function flush(q)
  while q.open and q.bytes > 0 do
    if #q.parts > 1 then q.parts = { table.concat(q.parts) } end
    local s = q.parts[1]
    local n = proc.write(q.fd, s, q.offset)
    if not n then
      q.open, q.parts, q.bytes = false, {}, 0
      return false
    end
    if n == 0 then return true end
    q.offset, q.bytes = q.offset + n, q.bytes - n
    if q.offset > #s then q.parts, q.offset = {}, 1 end
  end
  return q.open
end

-- Splits a byte stream into lines: on_line(line) for each whole one (a
-- trailing CR removed, blank lines skipped), on_overflow() once for a line
-- longer than MAX_LINE_BYTES, whose bytes are dropped up to its newline.
local function splitter(on_line, on_overflow)
  local parts, size, dropping = {}, 0, false
  return function(chunk)
    local start = 1
    while true do
      local nl = chunk:find("\n", start, true)
      if not nl then break end
      if dropping then
        dropping = false
      else
        local line = chunk:sub(start, nl - 1)
        if #parts > 0 then
          parts[#parts + 1] = line
          line = table.concat(parts)
        end
        if line:sub(-1) == "\r" then line = line:sub(1, -2) end
        if line:find("%S") then on_line(line) end
      end
      parts, size = {}, 0
      start = nl + 1
    end
    if start <= #chunk and not dropping then
      size = size + #chunk - start + 1
      if size > M.MAX_LINE_BYTES then
        parts, size, dropping = {}, 0, true
        on_overflow()
      else
        parts[#parts + 1] = chunk:sub(start)
      end
    end
  end
end

-- Characters some line reader breaks at that JSON allows raw inside a
-- string, as JSON escapes: in canonical JSON no other byte can spell them.
local LINE_BREAKS = { ["\194\133"] = "\\u0085", ["\226\128\168"] = "\\u2028", ["\226\128\169"] = "\\u2029" }

local function escape_breaks(text)
  return (text:gsub("\194\133", LINE_BREAKS["\194\133"]):gsub("\226\128[\168\169]", LINE_BREAKS))
end

-- The message as toolgate read it: canonical JSON with exact numbers, the
-- line breaks above escaped | nil, why (not JSON).
local function reserialize(text)
  local doc, err = decision.codec():parse(text)
  if not doc then return nil, err end
  local out = doc:root():canon(nil, "exact")
  doc:free()
  return escape_breaks(out)
end

-- The ids of a client's message (a batch's, each), as JSON text: the
-- answers a refusal of the whole line owes.  Reading them takes no state.
local function ids_of(gw, route, line)
  local ok, frame = pcall(gw.engine.check_mcp, gw.engine, line, route.server)
  if not ok or frame.kind == "not_json" then return { "null" } end
  if frame.kind ~= "batch" then
    if frame.id then return { frame.id } end
    -- a notification is owed no answer
    if frame.method and not frame.bad_id and not frame.bad_method then return {} end
    return { "null" }
  end
  local ids = {}
  local doc = decision.codec():parse(line)
  if not doc then return { "null" } end
  local root = doc:root()
  for i = 1, root:len() do
    local okm, f = pcall(root:at(i).mcp, root:at(i), route.server)
    if okm and f.id then ids[#ids + 1] = f.id end
  end
  doc:free()
  return ids
end

-- The refusal of a whole line, for each of its requests (a notification
-- gets none), one answer or a batch of them.
local function refuse_line(gw, route, line, code, message)
  local out = {}
  for _, id in ipairs(ids_of(gw, route, line)) do out[#out + 1] = mcp.error_reply(id, code, message) end
  if #out == 0 then return nil end
  if #out == 1 and line:match("^%s*[^%[%s]") then return out[1] end
  return "[" .. table.concat(out, ",") .. "]"
end

local function default_log(msg) io.stderr:write("toolgate mcp-proxy: ", msg, "\n") end

--- run(opts) -> exit status.
-- opts: gateway (toolgate.mcp's), route (gateway:route's), argv (the
-- server's command and arguments), grace (seconds, default DEFAULT_GRACE),
-- log (function(message), default: a line on standard error, queued
-- like the server's), ready (function(log), called with the logger before
-- the relay starts: a host's observer logs through it), every (function(),
-- called every 100 ms while the relay runs, off the messages' path: a
-- host's batched writes), hup (function(), called on SIGHUP, which is then
-- not passed to the server: a host with a log file reopens it),
-- approval_wait (seconds, default DEFAULT_APPROVAL_WAIT),
-- trace (toolgate.stdio_trace's, optional: told of each message and answer),
-- stdin/stdout/stderr (descriptors, default 0, 1, 2).
--
-- A 2025 client that declared elicitation in initialize is asked to approve
-- a deferral the policy lets it approve (toolgate.mcp's plan.ask): the
-- proxy sends it an elicitation/create of its own (an id
-- "toolgate-approval-<random>", so no server's request can share it) and
-- holds the call, its id in flight, until the answer (read here, never
-- forwarded: yes grants the approval and the call is decided again, now
-- passing once; no is refused) or approval_wait seconds (refused).
function M.run(opts)
  local gw, route, trace = opts.gateway, opts.route, opts.trace
  local log = opts.log or default_log
  local grace = opts.grace or M.DEFAULT_GRACE
  local cin, cout, cerr = opts.stdin or 0, opts.stdout or 1, opts.stderr or 2

  local sigs = {}
  for i, name in ipairs(RELAYED_SIGNALS) do sigs[i] = proc.signum(name) end
  local sigchld, sighup = proc.signum("CHLD"), proc.signum("HUP")
  sigs[#sigs + 1] = sigchld
  local sigfd, serr = proc.signals(sigs)
  if not sigfd then
    log("cannot watch signals: " .. tostring(serr))
    return 1
  end
  local child, err = proc.spawn(opts.argv)
  if not child then
    log("cannot start " .. tostring(opts.argv[1]) .. ": " .. tostring(err))
    proc.close(sigfd)
    return 1
  end

  local was_nonblock = {}
  for _, fd in ipairs({ cin, cout, cerr }) do was_nonblock[fd] = proc.nonblock(fd, true) end
  local to_server, to_client, to_err = queue(child.stdin), queue(cout), queue(cerr)
  -- one plan for the whole session: every request's pending answers
  local session = { pending = {}, stream = true, held = {} }
  -- the era of the client's last message the server got (its re-lists speak it)
  local era = "legacy"

  local notes_dropped = 0
  local function note(msg)
    if to_err.bytes >= M.HIGH_WATER_BYTES then
      notes_dropped = notes_dropped + 1
      return
    end
    if notes_dropped > 0 then
      push(to_err, "toolgate mcp-proxy: " .. notes_dropped .. " log lines dropped (standard error was not read)\n")
      notes_dropped = 0
    end
    push(to_err, "toolgate mcp-proxy: " .. msg .. "\n")
  end
  if opts.log then note = log end
  if opts.ready then opts.ready(note) end

  local function refuse(line, code, message)
    local answer = refuse_line(gw, route, line, code, message)
    if answer then push(to_client, answer .. "\n") end
  end

  -- Calls held for the person's answer in their client, by the id of the
  -- proxy's elicitation/create: {line =, ask = plan.ask, deadline =}.
  local asks = {}
  local wait = opts.approval_wait or M.DEFAULT_APPROVAL_WAIT
  local client_line
  local function ask_person(line, ask)
    asks[ask.request_id] = { line = line, ask = ask, deadline = proc.now() + wait }
    session.held[ask.id] = true
    push(to_client, escape_breaks(assert(value.encode({ jsonrpc = "2.0", id = ask.request_id,
      method = "elicitation/create", params = ask.params }))) .. "\n")
    note("asked the person in the client to approve a deferred call (approval " .. ask.approval_id .. ")")
  end
  local function settle(hold, answer)
    asks[hold.ask.request_id], session.held[hold.ask.id] = nil, nil
    local ok, refused = pcall(gw.answer_held, gw, route, hold.ask, answer)
    if not ok then
      note("settling a call held for the client's answer failed: " .. tostring(refused))
      refused = mcp.error_reply(hold.ask.id, mcp.CODES.POLICY_ERROR, "toolgate: the message could not be decided")
    end
    note("the client's answer to approval " .. hold.ask.approval_id .. ": " .. answer)
    if refused then push(to_client, escape_breaks(refused) .. "\n") else client_line(hold.line) end
  end
  -- whether line is the client's answer to a question of the proxy's (then taken here)
  local function person_answered(line)
    if not (next(asks) and line:find("toolgate-approval-", 1, true)) then return false end
    local v = json.decode(decision.codec(), line)
    if type(v) ~= "table" or v.method ~= nil or type(v.id) ~= "string" or not asks[v.id] then return false end
    local r, answer = v.result, "error"
    if type(r) == "table" and r.action == "accept" then
      answer = type(r.content) == "table" and r.content.approve == true and "approve" or "decline"
    elseif type(r) == "table" and (r.action == "decline" or r.action == "cancel") then
      answer = r.action
    end
    settle(asks[v.id], answer)
    return true
  end
  -- the client's first initialize says whether it can be asked (a form: elicitation {} or {form})
  local function remember_capabilities(line)
    if session.elicits ~= nil or not line:find('"initialize"', 1, true) then return end
    local v = json.decode(decision.codec(), line)
    if type(v) ~= "table" or v.method ~= "initialize" then return end
    local caps = type(v.params) == "table" and v.params.capabilities
    local el = type(caps) == "table" and caps.elicitation
    session.elicits = type(el) == "table" and (next(el) == nil or el.form ~= nil)
  end

  function client_line(line)
    if line:find("\r", 1, true) then
      note("refused a message from the client holding a raw CR inside its line")
      refuse(line, mcp.CODES.INVALID_REQUEST, "toolgate: a raw CR inside a line (a server may read it as a line "
        .. "break): escape it, or end the line with LF or CRLF")
      return
    end
    if person_answered(line) then return end
    remember_capabilities(line)
    if trace then trace:request(line) end
    local ok, plan = pcall(gw.request, gw, route, line, session)
    if trace then trace:requested(ok and plan or nil) end
    local forward
    if ok and plan.forward then
      -- a batch's forward is canonical already
      if plan.batch then forward = escape_breaks(plan.forward) else ok, forward = pcall(reserialize, plan.forward) end
      if ok and not forward then ok = false end
    end
    if not ok then
      note("deciding a message failed: " .. (type(plan) == "table" and "it cannot be re-serialized" or tostring(plan)))
      refuse(line, mcp.CODES.POLICY_ERROR, "toolgate: the message could not be decided")
      return
    end
    if plan.reply then push(to_client, escape_breaks(plan.reply) .. "\n") end
    if plan.ask then ask_person(line, plan.ask) end
    if forward then push(to_server, forward .. "\n") end
    if forward and plan.era then era = plan.era end
    for id, p in pairs(plan.pending) do session.pending[id] = p end
    if plan.inject then push(to_client, escape_breaks("[" .. table.concat(plan.inject, ",") .. "]") .. "\n") end
  end

  -- The server says its tools changed (notifications/tools/list_changed):
  -- the proxy lists them itself, with ids of its own ("toolgate-relist-N",
  -- held in flight in the session, so a client's request cannot take one),
  -- in the era the client last spoke, and checks them against the pins as
  -- a client's tools/list answer is (gateway:check_tools): a changed tool's
  -- calls are refused before the client lists again.  Its answers never
  -- reach the client.  One at a time; announcements while one runs make
  -- one more.
  local relist = { n = 0, tools = {}, pages = 0 }
  local function send_relist(cursor)
    local id
    repeat
      relist.n = relist.n + 1
      id = "toolgate-relist-" .. relist.n
    until not session.pending['"' .. id .. '"']
    relist.id, relist.key = id, '"' .. id .. '"'
    session.pending[relist.key] = { kind = "relist" }
    local params = { cursor = cursor }
    if era == "modern" then
      params._meta = { ["io.modelcontextprotocol/protocolVersion"] = mcp.MODERN_VERSIONS[1],
        ["io.modelcontextprotocol/clientCapabilities"] = {} }
    end
    push(to_server, assert(value.encode({ jsonrpc = "2.0", id = id, method = "tools/list", params = params })) .. "\n")
  end
  local function start_relist()
    if relist.id then
      relist.again = true
      return
    end
    relist.tools, relist.pages = {}, 1
    send_relist(nil)
  end
  -- whether line is the answer to the re-list in flight (then taken here)
  local function relist_answer(line)
    if not (relist.id and line:find(relist.key, 1, true)) then return false end
    local v = json.decode(decision.codec(), line)
    if type(v) ~= "table" or v.method ~= nil or v.id ~= relist.id then return false end
    session.pending[relist.key], relist.id = nil, nil
    local tools, cursor = mcp.list_page(line)
    if tools then
      for _, t in ipairs(tools) do relist.tools[#relist.tools + 1] = t end
      if cursor and relist.pages < RELIST_MAX_PAGES then
        relist.pages = relist.pages + 1
        send_relist(cursor)
        return true
      end
      local n, why = gw:check_tools(route, "[" .. table.concat(relist.tools, ",") .. "]")
      if not n then note("checking the tools the server listed again failed: " .. tostring(why))
      elseif n > 0 then note("the server said its tools changed: " .. n .. " change(s) against the pins") end
    else
      note("listing the tools again (the server said they changed) failed: " .. tostring(cursor))
    end
    relist.tools = {}
    if relist.again then
      relist.again = false
      start_relist()
    end
    return true
  end
  local function list_changed(line)
    if not line:find("notifications/tools/list_changed", 1, true) then return false end
    local v = json.decode(decision.codec(), line)
    return type(v) == "table" and v.method == "notifications/tools/list_changed" and v.id == nil
  end

  local function server_line(line)
    if relist_answer(line) then return end
    if list_changed(line) then start_relist() end
    if trace then trace:answer(line) end
    local ok, out, why = pcall(gw.response, gw, route, session, line)
    if trace then trace:answered() end
    if not ok then
      note("checking a message from the server failed: " .. tostring(out))
      return
    end
    if not out then
      note("dropped a line from the server: " .. tostring(why) .. ": " .. line:sub(1, 120))
      return
    end
    -- passed as it came: re-serialized; the gateway's own text: canonical but for the breaks
    if out == line then out, why = reserialize(line) else out = escape_breaks(out) end
    if not out then
      note("dropped a line from the server: " .. tostring(why) .. ": " .. line:sub(1, 120))
      return
    end
    push(to_client, out .. "\n")
  end

  local from_client = splitter(client_line, function()
    note("a message from the client is longer than " .. M.MAX_LINE_BYTES .. " bytes: refused")
    push(to_client, mcp.error_reply("null", mcp.CODES.INVALID_REQUEST, "toolgate: the message is longer than "
      .. M.MAX_LINE_BYTES .. " bytes") .. "\n")
  end)
  local from_server = splitter(server_line, function()
    note("dropped a message from the server longer than " .. M.MAX_LINE_BYTES .. " bytes")
  end)

  local client_open, server_out_open, server_err_open = true, true, true
  local server_in_open = true
  local exited, how, status_n
  local stop_at, stage -- after the client left: when to escalate, and to what
  local next_every = proc.now() + EVERY_MS / 1000

  local function close_server_input()
    if server_in_open then
      proc.close(child.stdin)
      server_in_open, to_server.open = false, false
    end
  end

  local function reap()
    if exited then return end
    local w, n = proc.wait(child.pid, true)
    if w then exited, how, status_n = true, w, n end
  end

  -- what the client's lines fill, and the server's
  local function client_full()
    return to_server.bytes >= M.HIGH_WATER_BYTES or to_client.bytes >= M.HIGH_WATER_BYTES
  end
  local function server_full() return to_client.bytes >= M.HIGH_WATER_BYTES end

  -- reads what a descriptor has now, until full() says a queue it fills
  -- is full: false at its end.  A short read took all there was (poll
  -- says so again if more comes): no second read to learn it.
  local function drain(fd, feed, full)
    for _ = 1, 64 do
      local chunk, why = proc.read(fd)
      if chunk == false then return false end
      if not chunk then return why == "again" end
      feed(chunk)
      if #chunk < proc.READ_CHUNK or (full and full()) then return true end
    end
    return true
  end

  while true do
    -- the server ended and said all it will: answer what it left open
    if exited and not server_out_open and not server_err_open then break end
    local fds, evs, who = {}, {}, {}
    local function watch(fd, ev, name)
      fds[#fds + 1], evs[#evs + 1], who[#who + 1] = fd, ev, name
    end
    watch(sigfd, proc.POLLIN, "signal")
    if client_open and not client_full() then watch(cin, proc.POLLIN, "client") end
    if server_out_open and not server_full() then watch(child.stdout, proc.POLLIN, "server") end
    if server_err_open and to_err.bytes < M.HIGH_WATER_BYTES then watch(child.stderr, proc.POLLIN, "server_err") end
    if to_server.bytes > 0 then watch(child.stdin, proc.POLLOUT, "to_server") end
    if to_client.bytes > 0 then watch(cout, proc.POLLOUT, "to_client") end
    if to_err.bytes > 0 then watch(cerr, proc.POLLOUT, "to_err") end
    local timeout = -1
    if stop_at then timeout = math.max(0, math.floor((stop_at - proc.now()) * 1000) + 1) end
    if opts.every and (timeout < 0 or timeout > EVERY_MS) then timeout = EVERY_MS end
    for _, hold in pairs(asks) do
      local left = math.max(0, math.floor((hold.deadline - proc.now()) * 1000) + 1)
      if timeout < 0 or left < timeout then timeout = left end
    end
    local rev, perr = proc.poll(fds, evs, timeout)
    if not rev then
      note("poll failed: " .. tostring(perr))
      break
    end
    for i, r in ipairs(rev) do
      if r ~= 0 then
        local w = who[i]
        if w == "signal" then
          while true do
            local s = proc.next_signal(sigfd)
            if not s then break end
            if s == sigchld then reap()
            elseif s == sighup and opts.hup then opts.hup()
            else proc.kill(child.pid, s) end
          end
        elseif w == "client" then
          client_open = drain(cin, from_client, client_full)
        elseif w == "server" then
          server_out_open = drain(child.stdout, from_server, server_full)
        elseif w == "server_err" then
          server_err_open = drain(child.stderr, function(chunk) push(to_err, chunk) end)
        end
      end
    end
    local expired = {}
    for _, hold in pairs(asks) do if proc.now() >= hold.deadline then expired[#expired + 1] = hold end end
    for _, hold in ipairs(expired) do settle(hold, "timeout") end
    flush(to_server)
    if not flush(to_client) then client_open = false end
    flush(to_err)
    if opts.every and proc.now() >= next_every then
      opts.every()
      next_every = proc.now() + EVERY_MS / 1000
    end
    if not server_out_open and not exited then reap() end
    -- the client left: close the server's input once it has everything
    if not client_open and not stop_at then
      if to_server.bytes == 0 then
        close_server_input()
        stop_at, stage = proc.now() + grace, "TERM"
      end
    end
    if stop_at and not exited and proc.now() >= stop_at then
      if stage then
        note("the server did not exit " .. grace .. " s after its input closed: SIG" .. stage)
        proc.kill(child.pid, proc.signum(stage))
        stage = stage == "TERM" and "KILL" or nil
        stop_at = proc.now() + grace
      else
        stop_at = nil
      end
    end
    if exited and server_in_open then close_server_input() end
    -- a server that exited but left its output open (a grandchild holds
    -- it): stop reading after the grace
    if exited and not stop_at and (server_out_open or server_err_open) then stop_at = proc.now() + grace end
    if exited and stop_at and proc.now() >= stop_at then break end
  end
  if not exited then
    proc.kill(child.pid, proc.signum("KILL"))
    local w, n = proc.wait(child.pid, false)
    how, status_n = w, n
  end

  if relist.key then session.pending[relist.key] = nil end -- (the proxy's own: no client waits for it)
  for _, answer in ipairs(mcp.unanswered(session, "the server exited before answering")) do
    push(to_client, answer .. "\n")
  end
  for _, hold in pairs(asks) do
    push(to_client, mcp.error_reply(hold.ask.id, mcp.CODES.INVALID_REQUEST, "toolgate: the server exited while the "
      .. "call waited for the person's answer") .. "\n")
  end
  for _, fd in ipairs({ child.stdout, child.stderr, sigfd }) do proc.close(fd) end
  close_server_input()
  -- what is left for the client and for standard error, written out now
  for _, fd in ipairs({ cin, cout, cerr }) do proc.nonblock(fd, was_nonblock[fd]) end
  flush(to_client)
  flush(to_err)
  if how == "signaled" then return 128 + status_n end
  return status_n or 1
end

return M
