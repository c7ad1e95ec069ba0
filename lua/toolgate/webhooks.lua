--- toolgate.webhooks: the notification of a new pending approval, POSTed
-- to the hooks an operator configures, the part both front ends share (the
-- nginx gateway sends from an ngx.timer over a cosocket, the stdio proxy
-- from its relay's tick over toolgate.mcp.http_client).
--
--   local hook = assert(webhooks.parse("slack=http://127.0.0.1:8080/hook"))
--   local q = webhooks.queue({ hook }, { attempts = 5 })
--   q:push(record, "http://127.0.0.1:9090/approvals", now)  -- one item per hook
--   local item = q:next(now)            -- due: POST item.body to item.hook
--   local result, changed = q:done(item, ok, why, now)
--       -- "delivered" | "retried" | "dropped"; changed: the hook went down or up
--
-- A hook is a JSON receiver (kind "json": the approval record itself and
-- the inbox's URL) or a Slack incoming webhook (kind "slack": text and
-- blocks).  http:// only, to an IP address or localhost (no names are
-- looked up, no TLS: toolgate.mcp.http_client has none).  What waits is
-- bounded (QUEUE_LIMIT items; past it a new one is dropped), and so are
-- the tries of one (ATTEMPTS, BACKOFF seconds apart, doubled each time up
-- to BACKOFF_MAX).
-- @module toolgate.webhooks

local value = require "toolgate.value"

local M = {}

M.QUEUE_LIMIT = 100 -- notifications waiting in one process (nginx: one worker)
M.ATTEMPTS = 5 -- tries of one notification before it is dropped
M.BACKOFF = 1 -- seconds before the second try, doubled before each next one
M.BACKOFF_MAX = 60
M.TIMEOUT = 2 -- seconds one delivery may take: connect, send, the answer's head
M.SLACK_TEXT_MAX = 3000 -- Slack's bound on a section block's text
M.SLACK_HEADER_MAX = 150 -- and on a header block's
M.SLACK_FALLBACK_MAX = 1000 -- what the notification's own text holds of the reason

--- parse(spec) -> hook {url =, kind = "json" | "slack", host =, port =,
-- path =, authority =} | nil, message.  spec is "URL" (the JSON shape) or
-- "slack=URL".
function M.parse(spec, kind)
  if type(spec) ~= "string" then return nil, "a webhook URL expected" end
  local named, rest = spec:match("^(%a+)=(.*)$")
  if named then
    if named ~= "slack" and named ~= "json" then
      return nil, "a webhook is URL or slack=URL, not " .. named .. "=..."
    end
    kind, spec = named, rest
  end
  kind = kind or "json"
  if kind ~= "json" and kind ~= "slack" then return nil, "a webhook's kind is json or slack, not " .. tostring(kind) end
  if spec:match("^[Hh][Tt][Tt][Pp][Ss]://") then
    return nil, "webhook " .. spec .. ": https:// is not supported (toolgate has no TLS): "
      .. "give an http:// URL, e.g. a local TLS-terminating relay"
  end
  local authority, path = spec:match("^http://([^/?#]+)([^#]*)$")
  if not authority then return nil, "webhook " .. spec .. ": an http://HOST[:PORT]/PATH URL expected" end
  if authority:find("@", 1, true) then return nil, "webhook " .. spec .. ": no credentials in the URL" end
  local host, port = authority:match("^%[([%x:.]+)%]:?(%d*)$")
  if not host then host, port = authority:match("^([%w.-]+):?(%d*)$") end
  if not host or not (host == "localhost" or host:find(":", 1, true) or host:match("^%d+%.%d+%.%d+%.%d+$")) then
    return nil, "webhook " .. spec .. ": give the host as an IP address or localhost (toolgate looks up no names)"
  end
  port = port == "" and 80 or tonumber(port)
  if not port or port < 1 or port > 65535 then return nil, "webhook " .. spec .. ": bad port" end
  if path == "" then path = "/" elseif path:sub(1, 1) == "?" then path = "/" .. path end
  if path:find("[%c ]") then return nil, "webhook " .. spec .. ": a path cannot hold spaces or control characters" end
  return { url = spec, kind = kind, host = host, port = port, path = path, authority = authority }
end

-- At most max bytes of s, cut before a UTF-8 character that would not fit
-- -> the text, whether it was cut.
local function cut(s, max)
  if #s <= max then return s, false end
  local n = max
  while n > 0 and s:byte(n + 1) >= 0x80 and s:byte(n + 1) < 0xC0 do n = n - 1 end
  return s:sub(1, n), true
end

-- Text in Slack's mrkdwn: its three control characters escaped
local function mrkdwn(s) return (tostring(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")) end

local function slack(r, inbox)
  local where = tostring(r.server) .. "/" .. tostring(r.tool)
  local reason = tostring(r.code or "") .. ((r.message and r.message ~= "") and (": " .. r.message) or "")
  local about = "*Reason:* " .. mrkdwn(reason) .. "\n*Approval:* `" .. mrkdwn(r.id) .. "`"
    .. (r.principal and ("\n*Asked by:* " .. mrkdwn(r.principal)) or "")
  local blocks = {
    { type = "header", text = { type = "plain_text", text = (cut("Approval requested: " .. where, M.SLACK_HEADER_MAX)) } },
    { type = "section", text = { type = "mrkdwn", text = (cut(about, M.SLACK_TEXT_MAX)) } },
  }
  -- the arguments in a code block (a ``` inside would end it: a zero-width space breaks it up)
  local args = mrkdwn(tostring(r.arguments or "")):gsub("```", "``\226\128\139`")
  local note = r.arguments_truncated and ("\n(the record holds the first " .. #tostring(r.arguments or "") .. " of "
    .. tostring(r.arguments_bytes) .. " bytes of the arguments)") or ""
  local room = M.SLACK_TEXT_MAX - #"*Arguments:*\n``````" - 120 - #note
  local shown, was_cut = cut(args, room)
  if was_cut then
    note = note .. "\n(cut here at " .. #shown .. " of " .. #args .. " bytes: Slack's limit; the inbox shows all)"
  end
  blocks[3] = { type = "section", text = { type = "mrkdwn", text = "*Arguments:*\n```" .. shown .. "```" .. note } }
  if inbox then
    blocks[4] = { type = "section", text = { type = "mrkdwn", text = "<" .. inbox .. "|Open the approvals inbox>" } }
  end
  local text = "toolgate: approval requested for " .. where .. " (" .. (cut(reason, M.SLACK_FALLBACK_MAX)) .. ")"
    .. (inbox and (" " .. inbox) or "")
  return { text = text, blocks = setmetatable(blocks, value.array_mt) }
end

--- payload(kind, record[, inbox]) -> the JSON text POSTed to a hook of
-- kind about the approval record (inbox: the inbox's URL, when there is one).
-- The JSON shape: {event = "approval.requested", approval = record, inbox =}.
function M.payload(kind, record, inbox)
  local body
  if kind == "slack" then
    body = slack(record, inbox)
  else
    body = { event = "approval.requested", approval = record, inbox = inbox }
  end
  return assert(value.encode(body))
end

local Queue = {}
Queue.__index = Queue

--- queue(hooks[, opts]) -> a queue of the notifications to hooks (parsed
-- ones); opts.limit, opts.attempts, opts.backoff override QUEUE_LIMIT,
-- ATTEMPTS, BACKOFF.
function M.queue(hooks, opts)
  opts = opts or {}
  return setmetatable({ hooks = hooks, items = {}, limit = opts.limit or M.QUEUE_LIMIT,
    attempts = opts.attempts or M.ATTEMPTS, backoff = opts.backoff or M.BACKOFF, down = {} }, Queue)
end

--- push(record, inbox, now) -> how many items were queued, how many dropped
-- (the queue full): one item per hook, due now.
function Queue:push(record, inbox, now)
  local queued, dropped = 0, 0
  for _, hook in ipairs(self.hooks) do
    if #self.items >= self.limit then
      dropped = dropped + 1
    else
      self.items[#self.items + 1] = { hook = hook, body = M.payload(hook.kind, record, inbox), id = record.id,
        tries = 0, at = now }
      queued = queued + 1
    end
  end
  return queued, dropped
end

--- next(now) -> the first item due by now (taken out of the queue) | nil,
-- the time the next one is due (nil: none waits).
function Queue:next(now)
  local soonest
  for i, item in ipairs(self.items) do
    if item.at <= now then return table.remove(self.items, i) end
    if not soonest or item.at < soonest then soonest = item.at end
  end
  return nil, soonest
end

--- done(item, ok, now) -> "delivered" | "retried" | "dropped", and true
-- when the hook's state changed (a delivery after failures, a failure after
-- deliveries).  A retried item waits backoff * 2^(tries - 1) seconds.
function Queue:done(item, ok, now)
  local was_down = self.down[item.hook] or false
  self.down[item.hook] = not ok
  local changed = was_down ~= (not ok)
  if ok then return "delivered", changed end
  item.tries = item.tries + 1
  if item.tries >= self.attempts then return "dropped", changed end
  item.at = now + math.min(self.backoff * 2 ^ (item.tries - 1), M.BACKOFF_MAX)
  self.items[#self.items + 1] = item
  return "retried", changed
end

--- delivered(status) -> whether an answer's status says the hook took it (2xx).
function M.delivered(status) return type(status) == "number" and status >= 200 and status < 300 end

return M
