--- toolgate.mcp.rounds: what an MCP gateway remembers of the exchanges
-- that outlast one request: multi round-trip requests (MCP 2026-07-28
-- "input_required") and tasks (the io.modelcontextprotocol/tasks
-- extension), so that every later message of one is held to the call that
-- began it.
--
-- A round: a tools/call answered with resultType "input_required" is kept
-- under its requestState (or, when the server gave none, under the call's
-- digest) as {tool, call_digest, arguments, asked, approval_id}:
-- arguments are the canonical arguments as an approval shows them (for
-- whoever reads the store), asked what the server asked for per
-- inputRequests key ({method, schema = the elicitation's requestedSchema
-- as JSON text}).  A retry (a tools/call
-- whose params carry requestState or inputResponses) must find its round,
-- name the same server, tool and canonical arguments (the same call
-- digest), and answer only what was asked, each elicitation answered by
-- an action, an accepted one with content that fits the requested schema.
--
-- A task: a tools/call answered with resultType "task" is kept under its
-- taskId as {tool, call, call_digest, asked}: call is the call's canonical
-- text, what its result is verified against when tasks/get delivers it.
--
-- Both live in the gateway's state store (exchange_put / exchange, every
-- worker sees them) for the policy's approval_ttl, at most MAX_LIVE of
-- each kind per route: past that new ones are refused, never a live one
-- forgotten.
-- @module toolgate.mcp.rounds

local decision = require "toolgate.decision"
local value = require "toolgate.value"

local M = {}

--- The most rounds, and the most tasks, a route keeps live at once.
M.MAX_LIVE = 1000

local function enc(v) return (assert(value.encode(v))) end
local function digest(text) return (assert(decision.codec():hash(text))) end

--- call_digest(call_text) -> the digest of a call's canonical text (server,
-- tool and canonical arguments).
M.call_digest = digest

-- Reading what the client sent -----------------------------------------------

-- A retry or a task method is read whole: a tools/call is parsed again
-- only when its text may hold a retry's keys (written plainly, or escaped:
-- any \u sends it to the parser).
local function may_retry(text)
  return text:find("requestState", 1, true) or text:find("inputResponses", 1, true) or text:find("\\u", 1, true)
end

local function string_of(node) return node and node:type() == "string" and node:value() or nil end
M.string_of = string_of

--- params(snap, frame, always) -> the params node of a message (nil when
-- it has none, or when not always and its text holds no retry keys; false
-- when its text cannot be read again), and the document to free (nil when
-- none was made).  frame.node is a batch member's node, frame.source a
-- single message's text.
function M.params(snap, frame, always)
  if frame.node then return frame.node:get("params") end
  if not always and not may_retry(frame.source) then return nil end
  local doc = snap.core:parse(frame.source)
  if not doc then return false end
  return doc:root():get("params"), doc
end

-- Input responses -------------------------------------------------------------

local ACTIONS = { accept = true, decline = true, cancel = true }

-- Whether content fits a requested schema (JSON text), through a scratch
-- registry of the core's: -> true | nil, why
local function fits(snap, settings, schema_text, content)
  local sdoc = snap.core:parse(schema_text)
  if not sdoc then return nil, "the requested schema cannot be read" end
  local reg = snap.core:registry()
  local idx, err = reg:add("toolgate", "input", nil, nil, sdoc:root(),
    { closed = settings.closed, assert_formats = settings.assert_formats,
      ignore_keywords = settings.ignore_keywords })
  sdoc:free()
  if not idx then return nil, "the requested schema cannot be compiled: " .. tostring(err) end
  local findings, verr = reg:validate_output(idx, content)
  if not findings then return nil, "cannot validate: " .. tostring(verr) end
  if #findings > 0 then
    local f = findings[1]
    return nil, (f.pointer ~= "" and (f.pointer .. ": ") or "") .. f.message
  end
  return true
end

--- check_responses(snap, registry_settings, asked, node) -> true | nil, why:
-- every inputResponses entry answers a request that was asked; an
-- elicitation's is {action, content?}, content only with "accept" and
-- fitting the requested schema.
function M.check_responses(snap, rsettings, asked, node)
  if node:type() ~= "object" then return nil, "inputResponses must be an object" end
  for i = 1, node:len() do
    local k, v = node:key(i), node:at(i)
    local a = asked[k]
    if not a then return nil, "inputResponses." .. k .. ": the server asked for no such input" end
    if a.method == "elicitation/create" then
      if v:type() ~= "object" then return nil, "inputResponses." .. k .. ": an elicitation's answer is an object" end
      local action = string_of(v:get("action"))
      if not ACTIONS[action or ""] then
        return nil, "inputResponses." .. k .. ': action must be "accept", "decline" or "cancel"'
      end
      local content = v:get("content")
      if action ~= "accept" and content then
        return nil, "inputResponses." .. k .. ": a " .. action .. " carries no content"
      end
      if action == "accept" and a.schema then
        if not content then return nil, "inputResponses." .. k .. ": an accept carries the content asked for" end
        local ok, why = fits(snap, rsettings, a.schema, content)
        if not ok then return nil, "inputResponses." .. k .. ": " .. why end
      end
    end
  end
  return true
end

--- asked(input_requests_node) -> { key = {method =, schema = JSON text | nil} }
-- | nil, why: what an input_required answer (or an input_required task)
-- asks for.
function M.asked(node)
  local out = {}
  if not node then return out end
  if node:type() ~= "object" then return nil, "inputRequests is not an object" end
  for i = 1, node:len() do
    local r = node:at(i)
    local method = r:type() == "object" and string_of(r:get("method"))
    if not method then return nil, "inputRequests." .. node:key(i) .. " names no method" end
    local params = r:get("params")
    local schema = params and params:type() == "object" and params:get("requestedSchema")
    out[node:key(i)] = { method = method, schema = schema and assert(schema:canon(nil, "exact")) or nil }
  end
  return out
end

-- The store ------------------------------------------------------------------

--- round_key(request_state | nil, call_digest) -> the key a round is kept
-- under: its requestState's digest, or the call's when the server gave none.
function M.round_key(request_state, call_digest)
  if request_state then return "s" .. digest(enc(request_state)) end
  return "c" .. call_digest
end

function M.task_key(task_id) return "t" .. digest(enc(task_id)) end

-- A store without these methods (an older custom one) cannot keep rounds:
-- the gateway then refuses what needs them.
local function supported(state) return state.exchange_put ~= nil end

--- remember(state, kind, server, key, record, ttl) -> true | nil, why
function M.remember(state, kind, server, key, record, ttl)
  if not supported(state) then return nil, "the state store keeps no " .. kind .. "s" end
  local ok, stored, why = pcall(state.exchange_put, state, kind, server, key, record, ttl, M.MAX_LIVE)
  if not ok then return nil, tostring(stored) end
  if not stored then
    if why == "full" then
      return nil, "this route already keeps " .. M.MAX_LIVE .. " live " .. kind .. "s (toolgate.mcp.rounds.MAX_LIVE)"
    end
    return nil, tostring(why)
  end
  return true
end

--- recall(state, kind, server, key) -> record | nil
function M.recall(state, kind, server, key)
  if not supported(state) then return nil end
  return state:exchange(kind, server, key)
end

return M
