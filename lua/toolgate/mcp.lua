--- toolgate.mcp: the MCP gateway's logic, without a transport.
--
-- What an MCP gateway decides about the messages that cross it, the same
-- for every transport (toolgate.nginx's Streamable HTTP, a stdio proxy):
--
--   local gw = mcp.new{ engine = e, state = store, observe = fn }
--   local route = gw:route("everything"[, context])   -- one per MCP server
--   local plan = gw:request(route, body)              -- a client's message
--   -- plan.forward: the text to send to the server (nil: send nothing)
--   -- plan.reply:   the answer to give the client now (nothing forwarded)
--   -- plan.inject:  answers to add to the server's (a batch partly refused)
--   -- plan.pending: the requests whose answers the gateway reads back
--   local out = gw:response(route, plan, message)     -- each server message
--   local all = mcp.merge(server_batch_text, plan.inject)
--
-- Client to server: initialize, ping, notifications/*, resources/*,
-- prompts/*, completion/complete, logging/setLevel, tools/list and
-- tools/call pass, and 2026-07-28's server/discover, subscriptions/listen
-- and tasks/get|update|cancel (the policy's mcp.methods may narrow or widen
-- the list; any other method is refused, -32601); a request whose
-- params._meta claims a protocol version (the 2026-07-28 era) other than
-- MODERN_VERSIONS is answered -32022, never forwarded; answers to the server's own
-- requests (sampling, elicitation, roots) pass.  A tools/call runs the
-- policy's pipeline on the call built from the route's server (never a
-- server the message names) and params.name / params.arguments; a call to
-- a tool whose pin changed, or to a quarantined server, is refused after
-- that; a defer asks for an approval bound to the exact call.  A refused
-- call is never forwarded, unless the policy file puts its server or tool
-- in shadow (toolgate.shadow: recorded, forwarded as if accepted).
--
-- Server to client: a tools/list result is cut to the tools the registry
-- holds for the route's server whose pins match (closed world at the menu:
-- a tool the registry does not know, or one that changed, never reaches the
-- model) and every difference is reported (state store, observe); a
-- tools/call result runs through the contract verifier (structuredContent
-- against outputSchema, isError) and one that breaks the contract is
-- replaced by a refusal.
--
-- Refusals follow the policy's mcp.refusal: "result" (default), a
-- CallToolResult with isError: true whose text the core writes for the
-- model (tg_model_text: what was wrong and what the tool accepts, or how a
-- person can allow it; the host's hints say how), the decision in
-- _meta["toolgate/decision"], as MCP wants input errors answered (the model
-- can correct itself; H1 and an unreadable call stay -32602 errors naming
-- the closest tools); or "error", a JSON-RPC error whose code says what
-- happened (CODES below) and whose data is {decision, approval_id}.
-- Either way the decision's code, path and message are in the answer, and
-- observe sees the decision.
--
-- observe(event) is called with {kind = "decision" | "pin_change" |
-- "approval" | "store_error", ...}: the host logs it and counts it.  A
-- decision event carries phase ("call", "result", "method"), server (the
-- route's), tool (the name the call gave, when it has one), decision and
-- principal (who asked, when the host named one: Gateway:request);
-- one shadow let through, enforced = false and mode = "shadow" (its
-- decision carries "enforced": false too) and the call's arguments;
-- one that asked for an approval or passed by one, the arguments it binds
-- (arguments = {arguments =, arguments_bytes =, arguments_truncated =}); a
-- decided tools/call, call (the call text the core checked: the arguments
-- toolgate.audit's records may show).  A store_error (op, server, tool,
-- message) is a pin report or quarantine the state store could not keep
-- (full): the gateway refuses the calls it concerns all the same.  A server's tools the registry lacks are reported
-- MAX_ADDED_REPORTS (toolgate.state) at a time, the rest of a listing as
-- one change {change = "more", count =}.
-- @module toolgate.mcp

local audit = require "toolgate.audit"
local decision = require "toolgate.decision"
local suggest = require "toolgate.suggest"
local json = require "toolgate.json"
local rounds = require "toolgate.mcp.rounds"
local shadow = require "toolgate.shadow"
local client_approval = require "toolgate.mcp.client_approval"
local value = require "toolgate.value"

local MAX_ADDED_REPORTS = require("toolgate.state").MAX_ADDED_REPORTS

local M = {}

--- JSON-RPC error codes.  JSON-RPC reserves -32768 .. -32000 and MCP and
-- its SDKs give codes there meanings (the SDK reads -32001 as a request
-- timeout): the spec's codes below keep the spec's meaning, and toolgate's
-- own are in OWN_CODES_FIRST .. OWN_CODES_LAST (docs/policies.md, "mcp").
M.OWN_CODES_FIRST, M.OWN_CODES_LAST = -31099, -31000
M.CODES = {
  PARSE_ERROR = -32700,      -- the message is not JSON
  INVALID_REQUEST = -32600,  -- not a JSON-RPC message
  METHOD_NOT_ALLOWED = -32601, -- a method the policy does not let through
  INVALID_PARAMS = -32602,   -- H1, H2, H3 and calls that cannot be read (mcp.refusal = "error")
  INTERNAL_ERROR = -32603,   -- the server's answer cannot be read as the client would read it (ENCODED_ANSWER)
  HEADER_MISMATCH = -32020,  -- (HTTP) a Mcp-* header disagrees with the body
  MISSING_REQUIRED_CLIENT_CAPABILITY = -32021, -- the request needs a capability the client did not declare
  UNSUPPORTED_PROTOCOL_VERSION = -32022, -- a modern claim of a version not served (data {supported, requested})
  REJECTED = -31001,         -- H4, custom stages, pins, quarantine, a result that breaks the contract
  DEFERRED = -31002,         -- a person must approve the call (data.approval_id)
  POLICY_ERROR = -31003,     -- the policy or the gateway failed: never an accept
}

--- The revision whose requests carry their version (params._meta's
-- "io.modelcontextprotocol/protocolVersion": the modern era), and the
-- legacy revisions whose initialize the server negotiates.
M.MODERN_VERSIONS = { "2026-07-28" }
M.LEGACY_VERSIONS = { "2025-03-26", "2025-06-18", "2025-11-25" }

local INPUT_CODES = { H1 = true, H2 = true, H3 = true, BAD_CALL = true, BAD_ARGUMENTS = true }
local POLICY_CODES = { POLICY_ERROR = true, INTERNAL_ERROR = true, NOMEM = true, BAD_CONTEXT = true }

--- The methods that pass by default ("x/*" is every method under x/).
M.DEFAULT_METHODS = {
  "initialize", "ping", "notifications/*", "resources/*", "prompts/*", "completion/complete",
  "logging/setLevel", "tools/list", "tools/call",
  -- 2026-07-28 (and its tasks extension)
  "server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel",
}

--- Defaults of the policy's mcp table.
M.DEFAULTS = {
  refusal = "result",         -- "result": a CallToolResult with isError the model reads | "error": JSON-RPC
  on_pin_change = "refuse",   -- "refuse": calls to changed tools | "quarantine": every call to the server
  approval_uses = 1,          -- calls one approval lets through (1 .. 1000)
  approval_ttl = 3600,        -- seconds an approval request, and a grant, lasts (1 .. 30 days)
  max_pending_approvals = 100, -- undecided approval requests per tool (1 .. MAX_PENDING_APPROVALS)
  list_ttl_ms = 60000,        -- the ttlMs a filtered tools/list goes out with (0 .. MAX_LIST_TTL_MS)
  client_approval = true,     -- a deferral the person may approve in their client: true | false | function(d, ctx)
  bind_approvals_to_principal = true, -- an approval passes only the calls of the principal who asked
}
--- The longest message either side may send a gateway, in bytes (a longer
-- one is refused or dropped whole, unread: it is never held whole).
M.MAX_MESSAGE_BYTES = 64 * 1024 * 1024
M.MAX_APPROVAL_USES = 1000
M.MAX_APPROVAL_TTL = 30 * 24 * 3600
-- Undecided approval requests a store keeps per tool (the setting's bound)
-- and per server: past them a deferred call is refused (APPROVALS_FULL),
-- so a flood of distinct calls cannot fill the store its safety records
-- live in.
M.MAX_PENDING_APPROVALS = 1000
M.MAX_PENDING_APPROVALS_PER_SERVER = 1000
-- (an hour: a client re-lists, and the gateway re-checks the pins, at least that often)
M.MAX_LIST_TTL_MS = 3600 * 1000

local SETTINGS = { methods = "table", refusal = "string", on_pin_change = "string", approval_uses = "number",
  approval_ttl = "number", list_ttl_ms = "number", max_pending_approvals = "number",
  bind_approvals_to_principal = "boolean", principals = "table" }

--- Who asked: the principal a host names (an HTTP header its auth layer
-- sets, the local user), at most MAX_PRINCIPAL_BYTES of letters, digits
-- and . _ - @ + : / = | (a user name, an e-mail address, an OIDC subject),
-- so every record and log line holds it as it came.
M.MAX_PRINCIPAL_BYTES = 256

--- principal_valid(s) -> whether s may name a principal
function M.principal_valid(s)
  return type(s) == "string" and #s >= 1 and #s <= M.MAX_PRINCIPAL_BYTES and s:find("^[%w%._%-@%+:/=|]+$") ~= nil
end

SETTINGS.client_approval = "boolean" -- (or a function: settings checks it)

local function bad(msg) return nil, "policy mcp." .. msg, "POLICY_INVALID" end

local function whole(n, lo, hi) return n == math.floor(n) and n >= lo and n <= hi end

--- settings(policy) -> the policy's mcp table checked, with defaults | nil, message, code
-- @tparam table policy a loaded policy (engine:snapshot().policy)
function M.settings(policy)
  local t = policy.mcp or {}
  local s = {}
  for k, v in pairs(t) do
    if not SETTINGS[k] then return bad(tostring(k) .. ": unknown setting") end
    if k == "client_approval" then
      if type(v) ~= "boolean" and type(v) ~= "function" then return bad(k .. ": must be a boolean or a function") end
    elseif type(v) ~= SETTINGS[k] then return bad(k .. ": must be a " .. SETTINGS[k]) end
  end
  for k, v in pairs(M.DEFAULTS) do s[k] = t[k] == nil and v or t[k] end
  if s.refusal ~= "error" and s.refusal ~= "result" then return bad('refusal: must be "error" or "result"') end
  if s.on_pin_change ~= "refuse" and s.on_pin_change ~= "quarantine" then
    return bad('on_pin_change: must be "refuse" or "quarantine"')
  end
  if not whole(s.approval_uses, 1, M.MAX_APPROVAL_USES) then
    return bad("approval_uses: a whole number from 1 to " .. M.MAX_APPROVAL_USES)
  end
  if not whole(s.approval_ttl, 1, M.MAX_APPROVAL_TTL) then
    return bad("approval_ttl: a whole number of seconds from 1 to " .. M.MAX_APPROVAL_TTL)
  end
  if not whole(s.max_pending_approvals, 1, M.MAX_PENDING_APPROVALS) then
    return bad("max_pending_approvals: a whole number from 1 to " .. M.MAX_PENDING_APPROVALS)
  end
  if not whole(s.list_ttl_ms, 0, M.MAX_LIST_TTL_MS) then
    return bad("list_ttl_ms: a whole number of milliseconds from 0 to " .. M.MAX_LIST_TTL_MS)
  end
  for p, c in pairs(t.principals or {}) do
    if not M.principal_valid(p) then return bad("principals: " .. tostring(p) .. " is no principal's name") end
    if type(c) ~= "table" then return bad("principals." .. p .. ": must be a context table") end
  end
  s.principals = t.principals or {}
  s.exact, s.prefixes = {}, {}
  for i, m in ipairs(t.methods or M.DEFAULT_METHODS) do
    if type(m) ~= "string" or m == "" then return bad("methods[" .. i .. "]: must be a method name") end
    if m:sub(-2) == "/*" then s.prefixes[#s.prefixes + 1] = m:sub(1, -2) else s.exact[m] = true end
  end
  return s
end

local function allowed(s, method)
  if s.exact[method] then return true end
  for _, p in ipairs(s.prefixes) do
    if method:sub(1, #p) == p then return true end
  end
  return false
end

local function enc(v) return (assert(value.encode(v))) end

local Gateway = {}
Gateway.__index = Gateway

--- Makes a gateway.
-- new{engine =, state =, observe =} -> gateway | nil, message, code
-- @tparam table opts engine (toolgate.new's), state (a store with the
-- approval and pin methods of toolgate.state; default: the engine's
-- store), observe (function(event), optional), hints (optional: approval,
-- how a person grants a defer, %s its id; grant, how one allows what H4
-- refused; default M.HINTS), principal (optional: who asks when a request
-- names no caller, the stdio proxy's local user)
function M.new(opts)
  if type(opts) ~= "table" or type(opts.engine) ~= "table" then
    error("toolgate.mcp.new: {engine = ...} expected", 2)
  end
  if opts.principal ~= nil and not M.principal_valid(opts.principal) then
    error("toolgate.mcp.new: principal: not a principal's name", 2)
  end
  local hints = opts.hints or {}
  local gw = setmetatable({ engine = opts.engine, state = opts.state or opts.engine.store,
    observe = opts.observe or function() end, unstored = {}, principal = opts.principal,
    hints = { approval = hints.approval or M.HINTS.approval, grant = hints.grant or M.HINTS.grant } }, Gateway)
  gw.behalf_mt = { __index = gw }
  local ok, err, code = gw:adopt(opts.engine)
  if not ok then return nil, err, code end
  return gw
end

--- Swaps in another engine (a reload) after checking its policy's mcp
-- settings; a bad one leaves the gateway as it was.
-- adopt(engine) -> true | nil, message, code
-- A store that can fill up keeps room for the snapshot's changed pins
-- (toolgate.state's reserve_pins), made while it has some.
local function reserve(self, snap)
  if self.state.reserve_pins then self.state:reserve_pins(snap.hash, snap.registry.tools) end
end

function Gateway:adopt(engine)
  local snap = engine:snapshot()
  local s, err, code = M.settings(snap.policy)
  if not s then return nil, err, code end
  self.engine, self.snap, self.settings = engine, snap, s
  reserve(self, snap)
  return true
end

-- The snapshot in force, its settings re-read when the engine reloaded
-- itself.
local function current(self)
  local snap = self.engine:snapshot()
  if snap ~= self.snap then
    local s = M.settings(snap.policy)
    -- engine:reload took a policy whose mcp table is wrong: fail closed
    self.snap, self.settings = snap, s or false
    reserve(self, snap)
  end
  return snap, self.settings
end

--- A route: the MCP server behind one endpoint, and the context its calls
-- are decided in (merged over the policy's).
-- route(server[, context]) -> route
function Gateway.route(_, server, context)
  if type(server) ~= "string" or server == "" then error("route: a server name expected", 2) end
  if context ~= nil and type(context) ~= "table" then error("route: a context table expected", 2) end
  return { server = server, context = context or {} }
end

-- The context a call is decided in: the route's, and for a principal the
-- policy's mcp.principals names, that principal's entry merged over it
-- (compiled once per snapshot: the map is the policy's, so bounded).
local function route_context(self, route, snap, settings, principal)
  if route.snap ~= snap then
    local ctx, err, code = self.engine:context(route.context)
    if not ctx then return nil, err, code end
    route.snap, route.ctx, route.principal_ctx = snap, ctx, {}
  end
  local own = principal and settings and settings.principals[principal]
  if not own then return route.ctx end
  local ctx = route.principal_ctx[principal]
  if not ctx then
    local merged = {}
    for k, v in pairs(route.context) do merged[k] = v end
    for k, v in pairs(own) do merged[k] = v end
    local err, code
    ctx, err, code = self.engine:context(merged)
    if not ctx then return nil, "mcp.principals." .. principal .. ": " .. tostring(err), code end
    route.principal_ctx[principal] = ctx
  end
  return ctx
end

-- Answers ------------------------------------------------------------------

--- error_reply(id, code, message[, data]) -> a JSON-RPC error answer: id
-- and data are JSON text ("null" for no id), message a string.
local function error_reply(id, code, message, data)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"error":{"code":' .. code .. ',"message":' .. enc(message)
    .. (data and (',"data":' .. data) or "") .. "}}"
end
M.error_reply = error_reply

local function code_of(d)
  if d.verdict == "defer" then return M.CODES.DEFERRED end
  if INPUT_CODES[d.code] then return M.CODES.INVALID_PARAMS end
  if POLICY_CODES[d.code] then return M.CODES.POLICY_ERROR end
  return M.CODES.REJECTED
end

-- The closest tools of the route's server to a name it does not have (H1):
-- the likely typo (toolgate.suggest), else the names it has, a few.
local MAX_NAMED_TOOLS = 10
local function closest_tools(snap, server, name)
  local names = {}
  for _, t in ipairs(snap.registry.tools) do
    if t.server == server then names[#names + 1] = t.name end
  end
  table.sort(names)
  local near = suggest.closest(name, names)
  if near then return string.format(' (did you mean "%s"?)', near) end
  if #names == 0 then return " (the registry holds no tool of this server)" end
  local shown = {}
  for i = 1, math.min(#names, MAX_NAMED_TOOLS) do shown[i] = names[i] end
  return " (its tools: " .. table.concat(shown, ", ") .. (#names > MAX_NAMED_TOOLS and ", ..." or "") .. ")"
end

-- A decision's message, saying so when the policy read a tool that
-- declares no annotations with MCP's defaults (H4 or a defer: the reading
-- is what the policy refused or deferred; a policy's own message may say
-- it already).
local DEFAULTS_NOTE = "no annotations: MCP's defaults read it as destructive"
local function message_of(snap, d)
  local message = d:get("message")
  message = message ~= nil and tostring(message) or nil
  local server, tool = d:get("server"), d:get("tool")
  local known = snap and server and tool and snap.registry.by_key[server .. "\0" .. tool]
  if known and known.format == "mcp" and known.annotations == nil and (d.code == "H4" or d.verdict == "defer")
      and not (message and message:find("no annotations", 1, true)) then
    message = (message and (message .. " ") or "") .. "(" .. DEFAULTS_NOTE .. ")"
  end
  return message
end

local function describe(d, approval_id, snap)
  local path, message = d:get("path"), message_of(snap, d)
  local what = d.verdict == "defer" and "deferred the call" or "refused the call"
  local msg = "toolgate " .. what .. ": " .. tostring(d.code or "?")
  if path and path ~= "" then msg = msg .. " at " .. path end
  if message then msg = msg .. ": " .. message end
  if d.code == "H1" and snap and d:get("server") and d:get("tool") then
    msg = msg .. closest_tools(snap, d:get("server"), d:get("tool"))
  end
  if approval_id then
    msg = msg .. " (approval " .. approval_id .. ": an operator can grant it; the same call then passes)"
  end
  return msg
end

--- What the model is told a person can do, unless the host says otherwise
-- (mcp.new's hints): grant a defer's approval (%s: its id; the stdio
-- proxy's command), allow what H4 refused.
M.HINTS = {
  approval = "A person grants it with: toolgate approvals grant %s",
  grant = "A person can allow it: a scope in the route's context (--context), or the policy.",
}

-- The text a model reads in a refusal as a result, written by the core
-- (tg_model_text: the same bytes under both bindings and every front end).
local function model_text(self, snap, d, approval_id)
  local server, tool = d:get("server"), d:get("tool")
  local known = server and tool and snap.registry.by_key[server .. "\0" .. tool]
  local deferred = d.verdict == "defer"
  local hint
  if deferred and approval_id then hint = string.format(self.hints.approval, approval_id)
  elseif d.code == "H4" then hint = self.hints.grant end -- (a denial is a person's already)
  return assert(snap.registry.c:model_text(known and known.index or nil, tool or "?", deferred,
    tostring(d.code or "?"), d:get("path"), message_of(snap, d), approval_id, hint))
end

-- Refusals that stay JSON-RPC errors whatever mcp.refusal says: a call the
-- gateway could not read, or to a tool the server does not have (the SDK
-- reports both as a protocol error, not as the tool's).
local ALWAYS_ERRORS = { H1 = true, BAD_CALL = true }

-- A result the gateway writes itself: a modern request's says it is the
-- final one (2026-07-28's resultType), a legacy one's has no such member.
local function result_type(era)
  return era == "modern" and ',"resultType":"complete"' or ""
end

-- The answer to a refused or deferred request, as the policy wants it; era
-- is the request's ("modern" | "legacy").
local function refusal(self, settings, id, d, approval_id, era)
  local snap = self.engine:snapshot()
  local aid = approval_id and enc(approval_id) or "null"
  if settings and settings.refusal == "result" and not ALWAYS_ERRORS[d.code] then
    return '{"jsonrpc":"2.0","id":' .. id .. ',"result":{"content":[{"type":"text","text":'
      .. enc(model_text(self, snap, d, approval_id)) .. '}],"isError":true,"_meta":{"toolgate/approval_id":' .. aid
      .. ',"toolgate/decision":' .. d:json() .. "}" .. result_type(era) .. "}}"
  end
  return error_reply(id, code_of(d), describe(d, approval_id, snap), '{"approval_id":' .. aid .. ',"decision":'
    .. d:json() .. "}")
end

local function gateway_decision(snap, stage, code, message, server, tool)
  return decision.from_table({ verdict = "reject", stage = stage, code = code, message = message,
    server = server, tool = tool, policy_version = snap.version, registry_hash = snap.hash })
end

-- Approvals ----------------------------------------------------------------

--- approval_id(binding) -> 32 hex digits: XXH3-128 of the binding's
-- canonical form, so the same call under the same policy, registry and
-- epoch always asks for the same approval.
function M.approval_id(binding)
  return (assert(decision.codec():hash(enc(binding))))
end

-- The binding an approval holds a call to: the decision's, and the
-- principal who asked (unless the policy's
-- mcp.bind_approvals_to_principal is false), so another principal's
-- identical call asks for an approval of its own.
local function approval_binding(settings, d, principal)
  local b = d:table().binding
  if not (principal and settings.bind_approvals_to_principal) then return b end
  local bound = {}
  for k, v in pairs(b) do bound[k] = v end
  bound.principal = principal
  return bound
end

--- The most of a call's arguments an approval holds, in bytes of their
-- canonical text: longer ones are kept as a prefix (cut before a
-- character, never inside one), with their whole size and digest.
M.MAX_APPROVAL_ARGUMENTS_BYTES = audit.MAX_ARGUMENTS_BYTES

-- The arguments a defer binds, as every approval view shows them
-- (toolgate.audit: the records show them the same way).
-- approval_arguments(call_text) -> { arguments =, arguments_bytes =, arguments_truncated = }
local approval_arguments = audit.call_arguments

-- A defer: let it through when an approval for exactly this call is
-- granted (one use taken atomically), refuse it when an operator denied it,
-- otherwise ask (once) and answer with the approval id; refuse it when too
-- many calls of its tool (or server) already wait for a person.  ->
-- outcome, the approval's id, the arguments it binds (approval_arguments),
-- and for outcome "full" the refusal's decision
local function settle_defer(self, settings, d, route, call_text, principal)
  local t = d:table()
  local binding = approval_binding(settings, d, principal)
  local id = M.approval_id(binding)
  local state = self.state
  local shown = approval_arguments(call_text)
  local taken, status = state:approval_take(id)
  if taken then
    self.observe({ kind = "approval", event = "used", id = id, server = route.server, tool = t.tool,
      principal = principal })
    return "pass", id, shown
  end
  if status == "denied" then return "denied", id, shown end
  local opened, full, which = state:approval_open(id, { binding = binding, server = t.server, tool = t.tool, code = t.code,
    message = t.message, args_digest = t.args_digest, arguments = shown.arguments,
    arguments_bytes = shown.arguments_bytes, arguments_truncated = shown.arguments_truncated, principal = principal,
    stage = t.stage },
    settings.approval_ttl, settings.approval_uses,
    { tool = settings.max_pending_approvals, server = M.MAX_PENDING_APPROVALS_PER_SERVER })
  if opened then
    self.observe({ kind = "approval", event = "requested", id = id, server = route.server, tool = t.tool,
      principal = principal })
  end
  if full == "full" then
    self.observe({ kind = "approval", event = "refused_full", id = id, server = route.server, tool = t.tool,
      principal = principal })
    local waiting = which == "server" and string.format("calls to server %q", t.server)
      or string.format("calls of %q", t.tool)
    return "full", id, shown, decision.from_table({ verdict = "reject", stage = "approval", code = "APPROVALS_FULL",
      message = "too many " .. waiting .. " wait for a person; ask an operator", server = t.server, tool = t.tool,
      args_digest = t.args_digest, binding = t.binding, policy_version = t.policy_version,
      registry_hash = t.registry_hash })
  end
  return "ask", id, shown
end

-- Requests -----------------------------------------------------------------

-- What a message is -- its id, method and call -- is read by the core
-- (tg_mcp_read, through engine:check_mcp and node:mcp), one rule for
-- requests and answers: an id is a string, or an integer of at most
-- MAX_ID either way, which every client reads exactly (a JavaScript client
-- reads 2^53 + 1 as 2^53: an answer would match another request).  The
-- frames below are that reading.
local MAX_ID = "9007199254740991" -- the core's bound, for the messages (text: LuaJIT would print 9.007199254741e+15)

-- A round refused (check_round): the message read again freed, the
-- refusal's decision.  (A function of the module, not a closure made per
-- call: LuaJIT does not compile FNEW.)
local function round_refusal(doc, snap, route, name, code, message)
  if doc then doc:free() end
  return gateway_decision(snap, "rounds", code, message, route.server, name)
end

-- A later round of a multi round-trip request (params carry requestState
-- or inputResponses) is held to the round that asked for it
-- (toolgate.mcp.rounds): nil (not a retry), or the refusal's decision, or
-- false and the approval that let its first round through (nil: none), or
-- for a round of toolgate's own (toolgate.mcp.client_approval) false, nil
-- and {approval_id =, answer =, stripped = the message to forward}.
local function check_round(self, snap, route, frame, text, name)
  local params, doc = rounds.params(snap, frame, false)
  if params == false then
    return round_refusal(doc, snap, route, name, "ROUND_INVALID", "the message cannot be read again")
  end
  local state_node = params and params:type() == "object" and params:get("requestState")
  local responses = params and params:type() == "object" and params:get("inputResponses")
  if not state_node and not responses then
    if doc then doc:free() end
    return nil
  end
  local request_state = rounds.string_of(state_node)
  if state_node and not request_state then
    return round_refusal(doc, snap, route, name, "ROUND_INVALID", "requestState must be a string")
  end
  local digest = rounds.call_digest(text)
  local ok, rec = pcall(rounds.recall, self.state, "round", route.server, rounds.round_key(request_state, digest))
  if not ok then
    return round_refusal(doc, snap, route, name, "ROUND_UNKNOWN", "the state store cannot be read: " .. tostring(rec))
  end
  if not rec then
    return round_refusal(doc, snap, route, name, "ROUND_UNKNOWN", request_state
      and "no round of this route issued that requestState (or it expired): start the call again without it"
      or "no round of this route asked this call for input (or it expired): start the call again without "
      .. "inputResponses")
  end
  if rec.call_digest ~= digest then
    return round_refusal(doc, snap, route, name, "ROUND_MISMATCH", string.format("a retry repeats its first "
      .. "round's call: tool %q with the same arguments", tostring(rec.tool)))
  end
  if responses then
    local fine, why = rounds.check_responses(snap, snap.registry.settings, rec.asked or {}, responses)
    if not fine then return round_refusal(doc, snap, route, name, "INPUT_RESPONSE_INVALID", why) end
  end
  local mine
  if rec.toolgate then
    mine = { approval_id = rec.approval_id, answer = client_approval.answer(responses),
      stripped = client_approval.strip(frame.id, frame.method, params) }
  end
  if doc then doc:free() end
  if mine then return false, nil, mine end
  return false, rec.approval_id
end

-- The person's answer in their client to toolgate's own round: nil (the
-- call goes on: granted, or to be asked again) or the refusal's decision.
-- A deferral refused at the approval stage (code, message), keeping what
-- the deferral bound.
local function approval_refusal(d, code, message)
  local t = d:table()
  return decision.from_table({ verdict = "reject", stage = "approval", code = code, message = message,
    server = t.server, tool = t.tool, args_digest = t.args_digest, binding = t.binding,
    policy_version = t.policy_version, registry_hash = t.registry_hash })
end

-- The person said yes in their client: the approval granted, decided by
-- "client" (and the principal who asked, when there is one).  -> true |
-- nil, message, code (approval_decide's)
local function client_grant(self, server, tool, approval_id, principal)
  local rec, err, code = self.state:approval_decide(approval_id, "grant",
    { by = principal and ("client:" .. principal) or "client" })
  if not rec then return nil, err, code end
  self.observe({ kind = "approval", event = "granted", id = approval_id, server = server, tool = tool, record = rec })
  return true
end

local function client_answered(self, route, d, mine, principal)
  if mine.answer == "decline" or mine.answer == "cancel" then
    return approval_refusal(d, "APPROVAL_DECLINED", "the person declined this call in their client (" .. mine.answer
      .. ")")
  end
  if mine.answer ~= "approve" then return nil end
  local ok, err, code = client_grant(self, route.server, d:table().tool, mine.approval_id, principal)
  if ok then return nil end
  local now = code == "ALREADY_DECIDED" and self.state:approval(mine.approval_id)
  if now and now.status == "granted" then return nil end -- (an operator was quicker)
  return approval_refusal(d, "ROUND_INVALID", "this approval was already answered or has expired (" .. tostring(err)
    .. "): start the call again without requestState")
end

-- A deferral a 2025 client on a stream may approve itself (the host said
-- the client declared elicitation: frame.elicits): the call is held, and
-- frame.ask tells the host what to ask (toolgate.mcp.client_approval) --
-- {id =, request_id =, approval_id =, params =, decision =, principal =};
-- "" (no answer now), or nil (the policy says no, or the approval is spent).
local function hold_for_client(self, snap, settings, route, frame, d, approval, shown, name)
  if not client_approval.allowed(settings.client_approval, snap.policy.budget, d,
    client_approval.context(route.server, name, shown, frame.principal)) then return nil end
  local rec = self.state:approval(approval)
  if not (rec and rec.status == "pending") then return nil end
  local nonce = client_approval.new_state()
  if not nonce then return nil end
  local form = client_approval.form(d:table(), shown, approval)
  form.mode = nil -- (2025-06-18 has no mode; 2025-11-25 reads none as form)
  frame.ask = { id = frame.id, request_id = nonce:gsub("^toolgate%-approval%.", "toolgate-approval-"),
    approval_id = approval, params = form, decision = d, principal = frame.principal }
  return ""
end

--- A call held for the person's answer in their client (a plan's ask, on a
-- stream: the stdio proxy asks with elicitation/create).  answer_held(route,
-- ask, answer) -> nil (approved: the host decides the call's message again,
-- which now takes the approval) or the refusal's answer text; answer is
-- "approve", "decline", "cancel", "timeout" (none within the host's wait)
-- or "error" (the client could not ask).
function Gateway:answer_held(route, ask, answer)
  local _, settings = current(self)
  local d = ask.decision
  local code, message = "APPROVAL_UNANSWERED"
  if answer == "approve" then
    local ok, err, why = client_grant(self, route.server, d:table().tool, ask.approval_id, ask.principal)
    if ok or why == "ALREADY_DECIDED" then return nil end -- (decided meanwhile: the store says how)
    message = "the approval could not be granted: " .. tostring(err)
  elseif answer == "decline" or answer == "cancel" then
    code, message = "APPROVAL_DECLINED", "the person declined this call in their client (" .. answer .. ")"
  elseif answer == "timeout" then
    message = "nobody answered in the client in time; approval " .. ask.approval_id .. " still waits for an operator"
  else
    message = "the client could not ask the person; approval " .. ask.approval_id .. " still waits for an operator"
  end
  local r = approval_refusal(d, code, message)
  self.observe({ kind = "decision", phase = "call", server = route.server, tool = d:table().tool, decision = r,
    principal = ask.principal })
  return refusal(self, settings, ask.id, r, nil, "legacy")
end

-- A deferral a 2026 client may approve itself: the input_required answer
-- asking the person (toolgate.mcp.client_approval), or nil (the client
-- cannot show a form, the policy says no, or no round can be kept).
local function ask_client(self, snap, settings, route, frame, d, approval, shown, name)
  if not client_approval.allowed(settings.client_approval, snap.policy.budget, d,
    client_approval.context(route.server, name, shown, frame.principal)) then return nil end
  local params, doc = rounds.params(snap, frame, true)
  local elicits = params and client_approval.elicits(params)
  if doc then doc:free() end
  if not elicits then return nil end
  -- (a spent approval cannot be granted again: the call waits for its expiry as before)
  local rec = self.state:approval(approval)
  if not (rec and rec.status == "pending") then return nil end
  local form, schema = client_approval.form(d:table(), shown, approval)
  -- one round per approval: a client repeating the call gets the same state, never fills the store
  local ok, known = pcall(rounds.recall, self.state, "round", route.server, "a" .. approval)
  local request_state = ok and known and known.request_state
  if not request_state then
    request_state = client_approval.new_state()
    if not request_state then return nil end
    local digest = rounds.call_digest(frame.call)
    if not rounds.remember(self.state, "round", route.server, rounds.round_key(request_state, digest),
      { tool = name, call_digest = digest, arguments = shown.arguments, approval_id = approval, toolgate = true,
        asked = { [client_approval.KEY] = { method = "elicitation/create", schema = schema } } }, settings.approval_ttl)
      or not rounds.remember(self.state, "round", route.server, "a" .. approval, { request_state = request_state },
        settings.approval_ttl) then return nil end
  end
  return client_approval.reply(frame.id, form, request_state, approval, d:json())
end

-- A call whose refusal shadow lets run (toolgate.shadow): forwarded as an
-- accept is, its decision recorded with "enforced": false, no approval
-- asked for; a round the retry may not repeat is still refused.
-- -> the pending record | nil, the refusing decision
local function shadowed_call(self, snap, route, frame, d, resolved, principal)
  local text, name = frame.call, frame.name
  local refused, _, mine = check_round(self, snap, route, frame, text, name)
  if refused then return nil, refused end
  self.observe({ kind = "decision", phase = "call", server = route.server, tool = name, decision = shadow.mark(d),
    enforced = false, mode = "shadow", arguments = approval_arguments(text), call = text, principal = principal })
  return { kind = "call", text = text, name = name, resolved = resolved, principal = principal,
    stripped = mine and mine.stripped, shadowed = d }
end

-- Decides one tools/call: returns the answer text (refused) or nil and the
-- pending record (forward it).  d and resolved: the call's decision, when
-- the core checked it with the message.
local function decide_call(self, snap, settings, route, frame, d, resolved, era)
  local id, name, text, principal = frame.id, frame.name, frame.call, frame.principal
  if not text then
    d = gateway_decision(snap, "decode", "BAD_CALL", frame.call_error, route.server, nil)
    self.observe({ kind = "decision", phase = "call", server = route.server, decision = d, principal = principal })
    return refusal(self, settings, id, d, nil, era)
  end
  if not d then
    local ctx, err, code = route_context(self, route, snap, settings, principal)
    if not ctx then
      d = gateway_decision(snap, "decode", code or "BAD_CONTEXT", "the route's context: " .. tostring(err),
        route.server, name)
    else
      d, resolved = self.engine:check_resolved(text, ctx, principal) -- (a quota counts per principal)
    end
  end
  -- a known tool whose upstream changed under its pin, or a quarantined server
  if d.verdict ~= "reject" then
    local state = self.state
    local unstored = self.unstored -- (what the store could not keep: report_changes)
    local q = state:server_quarantine(snap.hash, route.server) or unstored[snap.hash .. "\0" .. route.server]
    local change = not q and (state:pin_change(snap.hash, route.server, name)
      or unstored[snap.hash .. "\0" .. route.server .. "\0" .. tostring(name)])
    if q then
      d = gateway_decision(snap, "pins", "SERVER_QUARANTINED", "the server is quarantined: " .. tostring(q.reason),
        route.server, name)
    elseif change then
      d = gateway_decision(snap, "pins", "PIN_CHANGED", string.format("the server's tool %q no longer matches its "
        .. "pin in the registry (%s)", name, tostring(change.change)), route.server, name)
    end
  end
  -- a refusal the policy records and lets run (only its file says so)
  local rules = snap.policy.shadow
  if rules and d.verdict ~= "accept" and shadow.shadows(rules, route.server, name, d) then
    local pending, refused = shadowed_call(self, snap, route, frame, d, resolved, principal)
    if pending then return nil, pending end
    d = refused
  end
  -- a retry's first round decides what it may repeat
  local carried, mine
  if d.verdict ~= "reject" then
    local refused
    refused, carried, mine = check_round(self, snap, route, frame, text, name)
    if refused then d = refused end
  end
  -- toolgate's own round: the person answered in their client
  if mine and d.verdict == "defer" then d = client_answered(self, route, d, mine, principal) or d end
  local stripped = mine and mine.stripped
  local approval, shown
  -- one approval covers every round of the exchange it let through
  if d.verdict == "defer" and carried and carried == M.approval_id(approval_binding(settings, d, principal)) then
    shown = approval_arguments(text)
    self.observe({ kind = "decision", phase = "call", server = route.server, tool = name, decision = d,
      approval_id = carried, approved = true, arguments = shown, call = text, principal = principal })
    return nil, { kind = "call", text = text, name = name, resolved = resolved, approval_id = carried,
      principal = principal }
  end
  if d.verdict == "defer" then
    local outcome, full
    outcome, approval, shown, full = settle_defer(self, settings, d, route, text, principal)
    if outcome == "pass" then
      self.observe({ kind = "decision", phase = "call", server = route.server, tool = name, decision = d,
        approval_id = approval, approved = true, arguments = shown, call = text, principal = principal })
      return nil, { kind = "call", text = text, name = name, resolved = resolved, approval_id = approval,
        principal = principal, stripped = stripped }
    elseif outcome == "denied" then
      local t = d:table()
      d = decision.from_table({ verdict = "reject", stage = "approval", code = "APPROVAL_DENIED",
        message = "an operator denied this call", server = t.server, tool = t.tool, args_digest = t.args_digest,
        binding = t.binding, policy_version = t.policy_version, registry_hash = t.registry_hash })
    elseif outcome == "full" then
      d, approval = full, nil -- (none opened)
    end
  end
  self.observe({ kind = "decision", phase = "call", server = route.server, tool = name, decision = d,
    approval_id = approval, arguments = shown, call = text, principal = principal })
  if d.verdict == "accept" then
    return nil, { kind = "call", text = text, name = name, resolved = resolved, approval_id = carried,
      principal = principal, stripped = stripped }
  end
  if d.verdict == "defer" and approval then
    local asked
    if era == "modern" then asked = ask_client(self, snap, settings, route, frame, d, approval, shown, name)
    elseif frame.elicits then asked = hold_for_client(self, snap, settings, route, frame, d, approval, shown, name) end
    if asked then return asked end
  end
  return refusal(self, settings, id, d, d.verdict == "defer" and approval or nil, era)
end

-- The methods of the tasks extension the gateway routes; any other tasks/*
-- (2025-11-25's tasks/result and tasks/list) would deliver results, or
-- other clients' tasks, it cannot hold to a call.
local TASK_METHODS = { ["tasks/get"] = true, ["tasks/update"] = true, ["tasks/cancel"] = true }

local function refuse_task(self, snap, route, id, code, message, name)
  local d = gateway_decision(snap, "tasks", code, message, route.server, name)
  self.observe({ kind = "decision", phase = "method", server = route.server, tool = name, decision = d })
  return error_reply(id, M.CODES.INVALID_PARAMS, "toolgate: " .. message, '{"decision":' .. d:json() .. "}")
end

-- A tasks/get, tasks/update or tasks/cancel: routed to the call that made
-- the task on this route (toolgate.mcp.rounds), a tasks/update's input
-- checked against what the task asked.  -> the refusal | nil, pending
local function decide_task(self, snap, route, frame, m)
  local id = frame.id
  if not TASK_METHODS[m] then
    return refuse_task(self, snap, route, id, "TASK_METHOD", m .. " is not routed: a task's result is read "
      .. "through tasks/get only, where the gateway verifies it")
  end
  local params, doc = rounds.params(snap, frame, true)
  local function done(...)
    if doc then doc:free() end
    return ...
  end
  local task_id = params and params:type() == "object" and rounds.string_of(params:get("taskId"))
  if not task_id then return done(refuse_task(self, snap, route, id, "UNKNOWN_TASK", m .. " names no taskId")) end
  local key = rounds.task_key(task_id)
  local ok, rec = pcall(rounds.recall, self.state, "task", route.server, key)
  if not ok or not rec then
    return done(refuse_task(self, snap, route, id, "UNKNOWN_TASK", "no task " .. string.format("%q", task_id)
      .. " was created on this route" .. (ok and " (or it expired)" or ": the state store cannot be read")))
  end
  if m == "tasks/update" then
    local responses = params:get("inputResponses")
    if not responses then
      return done(refuse_task(self, snap, route, id, "INPUT_RESPONSE_INVALID", "tasks/update carries no inputResponses",
        rec.tool))
    end
    local fine, why = rounds.check_responses(snap, snap.registry.settings, rec.asked or {}, responses)
    if not fine then return done(refuse_task(self, snap, route, id, "INPUT_RESPONSE_INVALID", why, rec.tool)) end
  end
  return done(nil, { kind = "task", method = m, task_id = task_id, key = key, rec = rec, name = rec.tool })
end

-- A message refused before its method is looked at (its framing): answered
-- with id null, since the id is what is wrong or it has none.
local function refuse_framing(self, snap, route, id, code, message)
  local d = gateway_decision(snap, "decode", code, message, route.server)
  self.observe({ kind = "decision", phase = "method", server = route.server, decision = d })
  return error_reply(id or "null", M.CODES.INVALID_REQUEST, "toolgate: " .. message, '{"decision":' .. d:json() .. "}")
end

local MODERN = {}
for _, v in ipairs(M.MODERN_VERSIONS) do MODERN[v] = true end
local SUPPORTED = '["' .. table.concat(M.MODERN_VERSIONS, '","') .. '"]' -- (dates: nothing to escape)

-- A modern claim of a version the gateway does not serve: -32022 naming
-- the ones it does, as the spec's server answers (a stdio server may serve
-- it once its era is pinned: the gateway never forwards it); a
-- notification gets no answer.
local function unsupported_version(self, snap, route, id, version)
  local d = gateway_decision(snap, "method", "UNSUPPORTED_PROTOCOL_VERSION", "protocol version " .. version
    .. " is not supported", route.server)
  self.observe({ kind = "decision", phase = "method", server = route.server, decision = d })
  if not id then return "" end
  return error_reply(id, M.CODES.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version: " .. version,
    '{"requested":' .. enc(version) .. ',"supported":' .. SUPPORTED .. "}")
end

-- Whether a request with that id waits for its answer: one of the batch
-- read so far (seen), or of the stream's (session).  A function of the
-- module, not a closure made per message: LuaJIT does not compile FNEW.
local function in_flight(seen, session, id)
  return seen[id] or (session ~= nil and (session.pending[id] ~= nil or (session.held ~= nil and session.held[id] ~= nil)))
end

-- Decides one message of a request, given its frame: the answer to give
-- now (refused), or nil and what to expect back (pending record, or false
-- for nothing); seen and session as for in_flight, d and resolved as for
-- decide_call.
local function decide_message(self, snap, settings, route, frame, seen, session, d, resolved)
  if frame.kind ~= "message" then
    return error_reply("null", M.CODES.INVALID_REQUEST, "toolgate: a JSON-RPC message must be an object")
  end
  local id, m = frame.id, frame.method
  if not m and not frame.bad_method then
    -- the client's answer to a request of the server's (sampling, roots, ...)
    if id and (frame.result or frame.error) then return nil, false end
    return error_reply(id or "null", M.CODES.INVALID_REQUEST, "toolgate: neither a request nor a response")
  end
  if not m then
    return error_reply(id or "null", M.CODES.INVALID_REQUEST, "toolgate: method must be a string")
  end
  -- a request the gateway could not match its answer to, or one a server
  -- might run although it reads as a notification here, is never forwarded
  if frame.bad_id then
    return refuse_framing(self, snap, route, nil, "BAD_ID", "the id of " .. m .. " must be a string or an integer "
      .. "from -" .. MAX_ID .. " to " .. MAX_ID)
  end
  if not id and m:sub(1, 14) ~= "notifications/" then
    return refuse_framing(self, snap, route, nil, "MISSING_ID", m .. " without an id is no request: only "
      .. "notifications/* go without one")
  end
  if id and in_flight(seen, session, id) then
    return refuse_framing(self, snap, route, nil, "DUPLICATE_ID", "id " .. id .. " is in use by a request that "
      .. "waits for its answer")
  end
  -- a message with an id is a request whatever its method says: a server
  -- may run it, and nothing here decided it
  if id and m:sub(1, 14) == "notifications/" then
    return refuse_framing(self, snap, route, id, "NOTIFICATION_WITH_ID", m .. " with an id is a request, not a "
      .. "notification: notifications/* go without one")
  end
  if frame.protocol_version and not MODERN[frame.protocol_version] then
    return unsupported_version(self, snap, route, id, frame.protocol_version)
  end
  if not allowed(settings, m) then
    local dm = gateway_decision(snap, "method", "METHOD_NOT_ALLOWED", "the policy does not let " .. m .. " through",
      route.server)
    self.observe({ kind = "decision", phase = "method", server = route.server, decision = dm,
      principal = frame.principal })
    if not id then return "" end -- a notification gets no answer
    return error_reply(id, M.CODES.METHOD_NOT_ALLOWED, "toolgate: method " .. m .. " is not allowed",
      '{"decision":' .. dm:json() .. "}")
  end
  if not id then return nil, false end -- a notification: nothing comes back
  local era = frame.protocol_version and "modern" or "legacy"
  local answer, pending
  if m == "tools/call" then answer, pending = decide_call(self, snap, settings, route, frame, d, resolved, era)
  elseif m:sub(1, 6) == "tasks/" then answer, pending = decide_task(self, snap, route, frame, m)
  elseif m == "tools/list" then pending = { kind = "list", paged = frame.cursor }
  else pending = { kind = "other" } end -- read back only to know it was asked
  if pending then pending.era = era end
  return answer, pending
end

-- The messages of a JSON-RPC batch (MCP 2025-03-26; later revisions
-- dropped batches), each read and decided in turn.
local function request_batch(self, snap, settings, route, text, session, plan)
  local doc = assert(snap.core:parse(text))
  local root = doc:root()
  local seen, forward, answers = {}, {}, {}
  plan.batch = true
  for i = 1, root:len() do
    local msg = root:at(i)
    local frame = assert(msg:mcp(route.server))
    frame.node, frame.principal = msg, plan.principal -- (what toolgate.mcp.rounds reads of it; who asks)
    local answer, pending = decide_message(self, snap, settings, route, frame, seen, session)
    if frame.id and (frame.method or frame.bad_method) then seen[frame.id] = true end
    if answer then
      if answer ~= "" then answers[#answers + 1] = answer end
    else
      -- (toolgate's own round is never forwarded: toolgate.mcp.client_approval)
      forward[#forward + 1] = pending and pending.stripped or assert(msg:canon(nil, "exact"))
      if pending then plan.pending[frame.id] = pending end
    end
  end
  local empty = root:len() == 0
  doc:free()
  if empty then answers[1] = error_reply("null", M.CODES.INVALID_REQUEST, "toolgate: an empty batch") end
  if #forward == 0 then
    plan.reply = #answers > 0 and ("[" .. table.concat(answers, ",") .. "]") or nil
  else
    plan.forward = "[" .. table.concat(forward, ",") .. "]"
    plan.inject = #answers > 0 and answers or nil
  end
  return plan
end

-- The gateway as seen by one principal's request: its observe adds the
-- principal to the events that name none (a table per request, made only
-- when someone is named).
local function on_behalf(self, principal)
  local observe = self.observe
  return setmetatable({ observe = function(ev)
    if ev.principal == nil then ev.principal = principal end
    return observe(ev)
  end }, self.behalf_mt)
end

--- Decides a client's message (one JSON-RPC message or a batch).
-- request(route, text[, session]) -> plan {forward =, reply =, inject =,
-- pending =, batch =}; session is a stream's plan (stdio), whose requests
-- in flight an id must not repeat; precheck(arg, frame, text), when given,
-- is the host's check of the message's frame (the core's reading) against
-- what came with it, and returns the answer to give instead (nothing of the
-- message is decided then), or nil.  caller = {principal =} names who asks
-- (default: mcp.new's principal): their calls are decided in their context
-- (the policy's mcp.principals), and their principal is in the decisions'
-- events, the approvals they ask for and those approvals' bindings.  A
-- single message costs one call into the core: read, and its tools/call
-- decided (engine:check_mcp).
function Gateway:request(route, text, session, precheck, arg, caller)
  local snap, settings = current(self)
  local principal = caller and caller.principal or self.principal
  if principal ~= nil and not M.principal_valid(principal) then
    error("request: caller.principal: not a principal's name", 2)
  end
  local plan = { pending = {}, batch = false, principal = principal }
  -- every event of the request names who asked, its framing refusals too
  if principal then self = on_behalf(self, principal) end
  if not settings then
    local d = gateway_decision(snap, "policy", "POLICY_ERROR", "the policy's mcp settings are invalid", route.server)
    self.observe({ kind = "decision", phase = "call", server = route.server, decision = d })
    plan.reply = error_reply("null", M.CODES.POLICY_ERROR, "toolgate: the policy's mcp settings are invalid")
    return plan
  end
  -- no context, no check here: decide_call says why
  local ctx = route_context(self, route, snap, settings, principal)
  local frame, d, resolved = self.engine:check_mcp(text, route.server, ctx,
    ctx ~= nil and allowed(settings, "tools/call"), principal)
  if frame.kind == "not_json" then
    plan.reply = error_reply("null", M.CODES.PARSE_ERROR, "toolgate: the message is not JSON: " .. frame.why)
    return plan
  end
  -- the host's own check of what came with the message (HTTP headers), before anything of it is decided
  if precheck then
    local refused = precheck(arg, frame, text)
    if refused then
      plan.reply = refused
      return plan
    end
  end
  if frame.kind == "batch" then
    plan.era = "legacy" -- (batches are 2025-03-26's)
    return request_batch(self, snap, settings, route, text, session, plan)
  end
  plan.era = frame.protocol_version and "modern" or "legacy"
  frame.source, frame.principal = text, principal -- (what toolgate.mcp.rounds reads of it; who asks)
  frame.elicits = session ~= nil and session.elicits -- (a stream's client that can be asked: hold_for_client)
  local answer, pending = decide_message(self, snap, settings, route, frame, {}, session, d, resolved)
  plan.ask = frame.ask
  if answer then
    plan.reply = answer ~= "" and answer or nil
  else
    plan.forward = pending and pending.stripped or text
    if pending then plan.pending[frame.id] = pending end
  end
  return plan
end

--- Whether the plan waits for any of the server's answers.
function M.watches(plan)
  return next(plan.pending) ~= nil
end

-- The ids of a plan's requests in flight, sorted: the errors written for
-- them come in one order whatever the interpreter (a table's pairs() order
-- is Lua 5.4's hash seed's, different each run).
local function in_flight_ids(plan)
  local ids = {}
  for id in pairs(plan.pending) do ids[#ids + 1] = id end
  table.sort(ids)
  return ids
end

--- unanswered(plan, why[, code, data]) -> the errors that answer the
-- requests still in flight (a list of JSON-RPC texts), which are then no
-- longer in flight: for a host whose server's answer ended (exit, end of
-- body) without them, or one it refused unread; code defaults to
-- POLICY_ERROR, data (JSON text) to none.
function M.unanswered(plan, why, code, data)
  local out = {}
  for _, id in ipairs(in_flight_ids(plan)) do
    out[#out + 1] = error_reply(id, code or M.CODES.POLICY_ERROR, "toolgate: " .. why, data)
  end
  plan.pending = {}
  return out
end

--- merge(batch_text, inject) -> the server's batch answer with the
-- gateway's own answers added (batch_text nil: the server sent none).
function M.merge(batch_text, inject)
  if not inject or #inject == 0 then return batch_text end
  local extra = table.concat(inject, ",")
  if batch_text == nil or not batch_text:find("%S") then return "[" .. extra .. "]" end
  local body = batch_text:match("^%s*%[(.*)%]%s*$")
  if not body then return batch_text end -- not a batch: leave it to the client
  if not body:find("%S") then return "[" .. extra .. "]" end
  return "[" .. body .. "," .. extra .. "]"
end

-- Responses ----------------------------------------------------------------

--- Compares a server's tools with the registry's pins: the tools to show
-- (each as canonical JSON text), and the changes ({tool =, change =
-- "changed" | "added" | "removed", pin =, upstream_pin =}: a pin that
-- differs, a tool the registry lacks, a tool the server no longer lists,
-- the last only when full, tools being the server's whole list).
-- tool_changes(snap, server, tools_node, full) -> keep, changes
-- A tool's annotations (readOnlyHint, destructiveHint, ...) are outside the
-- pin, but a policy reads its contract from them: where the registry has
-- them (and in an MCP registry, where none is a statement too) the
-- server's must be the same, or the tool changed (field = "annotations").
local function annotations_text(lua_value)
  if lua_value == nil then return "null" end
  return assert(decision.codec():canon(enc(lua_value)))
end

local function filter_tools(snap, server, tools, full, max_added)
  local scratch = snap.core:registry()
  local added = 0
  local settings = snap.registry.settings
  local opts = { closed = settings.closed, assert_formats = settings.assert_formats,
    ignore_keywords = settings.ignore_keywords, annotation_formats = settings.annotation_formats }
  local keep, changes, seen = {}, {}, {}
  for i = 1, tools:len() do
    local t = tools:at(i)
    local name = t:type() == "object" and t:get("name")
    name = name and name:type() == "string" and name:value() or nil
    if name then
      seen[name] = true
      local known = snap.registry.by_key[server .. "\0" .. name]
      if not known then
        added = added + 1
        if added <= max_added then changes[#changes + 1] = { tool = name, change = "added" } end
      else
        local desc = t:get("description")
        local index = scratch:add(server, name, desc and desc:type() == "string" and desc:value() or nil,
          t:get("inputSchema"), t:get("outputSchema"), opts)
        local pin = index and scratch:tool(index).pin
        local ann = t:get("annotations")
        -- (what the server said when it was recorded, not what the policy gave it: registry.tools)
        local recorded = known.annotations
        if known.annotations_given then recorded = known.recorded_annotations end
        if pin == known.pin and (recorded == nil and known.format ~= "mcp"
            or annotations_text(ann and json.to_lua(ann)) == annotations_text(recorded)) then
          keep[#keep + 1] = assert(t:canon(nil, "exact"))
        elseif pin == known.pin then
          changes[#changes + 1] = { tool = name, change = "changed", field = "annotations", pin = known.pin,
            upstream_pin = pin }
        else
          changes[#changes + 1] = { tool = name, change = "changed", pin = known.pin, upstream_pin = pin or value.null }
        end
      end
    end
  end
  if full then
    for _, t in ipairs(snap.registry.tools) do
      if t.server == server and not seen[t.name] then changes[#changes + 1] = { tool = t.name, change = "removed" } end
    end
  end
  if added > max_added then changes[#changes + 1] = { tool = "", change = "more", count = added - max_added } end
  return keep, changes
end

--- tool_changes(snap, server, tools_node, full[, max_added]) -> keep,
-- changes: filter_tools, every added tool listed unless max_added says how
-- many (the rest are then one change {tool = "", change = "more", count =}).
function M.tool_changes(snap, server, tools, full, max_added)
  return filter_tools(snap, server, tools, full, max_added or math.huge)
end

-- Every difference goes to the store.  A write the store cannot make (a
-- full shared dict) is said (observe: store_error, which the host counts
-- and logs) and lets nothing through: the gateway keeps the changed tool,
-- or the quarantine, itself (unstored), and its calls are refused as if
-- the store held it.
local function report_changes(self, snap, settings, server, changes)
  local state = self.state
  local function failed(op, tool, err)
    self.observe({ kind = "store_error", op = op, server = server, tool = tool, message = tostring(err) })
  end
  for _, c in ipairs(changes) do
    local ok, first = pcall(state.pin_report, state, snap.hash, server, c.tool, c)
    if not ok then
      failed("pin_report", c.tool, first)
      if c.change == "changed" then self.unstored[snap.hash .. "\0" .. server .. "\0" .. c.tool] = c end
    end
    if first or (not ok and c.change == "changed") then
      self.observe({ kind = "pin_change", server = server, tool = c.tool, change = c })
    end
    if c.change == "changed" and settings.on_pin_change == "quarantine" then
      local reason = "tool " .. c.tool .. " changed under its pin"
      local qok, err = pcall(state.quarantine_server, state, snap.hash, server, reason)
      if not qok then
        failed("quarantine_server", nil, err)
        self.unstored[snap.hash .. "\0" .. server] = { reason = reason }
      end
    end
  end
end

--- list_page(text) -> tools, cursor | nil, why: one tools/list answer a
-- host asked for itself (text: the JSON-RPC message): its tools as JSON
-- texts (canonical, numbers exact: for check_tools) and its nextCursor, if any.
function M.list_page(text)
  local doc, err = decision.codec():parse(text)
  if not doc then return nil, "the answer is not JSON: " .. tostring(err) end
  local root = doc:root()
  local result = root:type() == "object" and root:get("result")
  local list = result and result:type() == "object" and result:get("tools")
  if not list or list:type() ~= "array" then
    local e = root:type() == "object" and root:get("error")
    local why = e and ("the server answered " .. assert(e:canon(nil, "exact"))) or "the answer has no tools array"
    doc:free()
    return nil, why
  end
  local tools = {}
  for i = 1, list:len() do tools[i] = assert(list:at(i):canon(nil, "exact")) end
  local cursor = result:get("nextCursor")
  cursor = cursor and cursor:type() == "string" and cursor:value() or nil
  doc:free()
  return tools, cursor
end

--- check_tools(route, text) -> the number of changes | nil, why: a
-- server's whole tool list (text: a JSON array of its tools, every page),
-- fetched by the host itself after the server announced a change
-- (notifications/tools/list_changed), checked against the pins as a
-- client's tools/list answer is, and what changed reported the same way: a
-- changed tool's calls are refused before any client lists again.
function Gateway:check_tools(route, text)
  local snap, settings = current(self)
  if not settings then return nil, "the policy's mcp settings are invalid" end
  local doc, err = decision.codec():parse(text)
  if not doc then return nil, "the tool list is not JSON: " .. tostring(err) end
  local root = doc:root()
  if root:type() ~= "array" then
    doc:free()
    return nil, "the tool list is not an array"
  end
  local _, changes = filter_tools(snap, route.server, root, true, MAX_ADDED_REPORTS)
  doc:free()
  if #changes > 0 then report_changes(self, snap, settings, route.server, changes) end
  return #changes
end

-- A tools/list answer cut to the pinned tools.  The cut list is the
-- gateway's, not the server's: it goes out with the MCP caching hints
-- (2026-07-28, "Caching") the policy sets, never the server's: cacheScope
-- "private" (what one route's context lets through is not for a shared
-- cache) and ttlMs mcp.list_ttl_ms (clients re-list, and the pins are
-- checked again, that often).
local function list_answer(self, snap, settings, route, root, id, pending)
  local result = root:get("result")
  if not result then return nil end -- a JSON-RPC error from the server passes
  local tools = result:type() == "object" and result:get("tools")
  if not tools or tools:type() ~= "array" then
    return error_reply(id, M.CODES.POLICY_ERROR,
      "toolgate: the server's tools/list answer has no tools array: it cannot be checked")
  end
  local full = not pending.paged and not result:get("nextCursor")
  local keep, changes = filter_tools(snap, route.server, tools, full, MAX_ADDED_REPORTS)
  if #changes > 0 then report_changes(self, snap, settings, route.server, changes) end
  local parts = {}
  for i = 1, result:len() do
    local k = result:key(i)
    if k ~= "tools" and k ~= "ttlMs" and k ~= "cacheScope" then
      parts[#parts + 1] = enc(k) .. ":" .. assert(result:at(i):canon(nil, "exact"))
    end
  end
  parts[#parts + 1] = '"cacheScope":"private","ttlMs":' .. string.format("%d", settings.list_ttl_ms)
  parts[#parts + 1] = '"tools":[' .. table.concat(keep, ",") .. "]"
  return '{"jsonrpc":"2.0","id":' .. id .. ',"result":{'
    .. table.concat(parts, ",") .. "}}"
end

-- What the gateway could not remember of an exchange the server began:
-- the client could not go on with it, so it ends here.
local function unremembered(self, snap, route, id, pending, code, message)
  local d = gateway_decision(snap, "rounds", code, message, route.server, pending.name)
  self.observe({ kind = "decision", phase = "result", server = route.server, tool = pending.name, decision = d,
    principal = pending.principal })
  return error_reply(id, M.CODES.REJECTED, "toolgate: " .. message, '{"decision":' .. d:json() .. "}")
end

-- An input_required answer is no result: it passes unverified, and its
-- round is remembered (what it asked, the call and the approval that let
-- it through) for the retry (check_round); the final round is verified.
local function input_required(self, settings, route, result, id, pending)
  local snap = self.engine:snapshot()
  local asked, why = rounds.asked(result:get("inputRequests"))
  local state_node = result:get("requestState")
  local request_state = rounds.string_of(state_node)
  if not asked or state_node and not request_state then
    return unremembered(self, snap, route, id, pending, "ROUND_INVALID", "the server's input_required answer "
      .. "cannot be read: " .. (why or "requestState is not a string"))
  end
  local digest = rounds.call_digest(pending.text)
  local ok, err = rounds.remember(self.state, "round", route.server, rounds.round_key(request_state, digest),
    { tool = pending.name, call_digest = digest, arguments = approval_arguments(pending.text).arguments,
      asked = asked, approval_id = pending.approval_id }, settings.approval_ttl)
  if not ok then
    return unremembered(self, snap, route, id, pending, "ROUNDS_FULL", "the round cannot be remembered: " .. err)
  end
  return nil
end

-- A task the call made (resultType "task"): remembered under its taskId,
-- with the call its result is verified against (task_answer).
local function task_created(self, settings, route, result, id, pending)
  local snap = self.engine:snapshot()
  local task_id = rounds.string_of(result:get("taskId"))
  if not task_id then
    return unremembered(self, snap, route, id, pending, "TASK_INVALID", "the server's task has no taskId string")
  end
  local ok, err = rounds.remember(self.state, "task", route.server, rounds.task_key(task_id),
    { tool = pending.name, call = pending.text, call_digest = rounds.call_digest(pending.text), asked = {},
      approval_id = pending.approval_id }, settings.approval_ttl)
  if not ok then
    return unremembered(self, snap, route, id, pending, "TASKS_FULL", "the task cannot be remembered: " .. err)
  end
  return nil
end

-- Whether a result's refusal d is one shadow lets pass (toolgate.shadow):
-- then it is recorded here, "enforced": false.
local function shadowed_result(self, route, tool, d, principal)
  local rules = self.engine:snapshot().policy.shadow
  if not (rules and shadow.shadows(rules, route.server, tool, d)) then return false end
  self.observe({ kind = "decision", phase = "result", server = route.server, tool = tool, decision = shadow.mark(d),
    enforced = false, mode = "shadow", principal = principal })
  return true
end

-- A tools/call answer through the contract verifier; one that breaks the
-- contract becomes a refusal (the tool ran: its result does not reach the
-- model).  A tool that reported an error (isError, a defer) passes: that
-- error is the model's to read.  An input_required answer or a task is
-- not a result: remembered, it passes (input_required, task_created).
local function call_answer(self, settings, route, root, id, pending)
  local result = root:get("result")
  if not result then return nil end -- a JSON-RPC error from the server passes
  local kind = result:type() == "object" and rounds.string_of(result:get("resultType"))
  if kind == "input_required" then return input_required(self, settings, route, result, id, pending) end
  if kind == "task" then return task_created(self, settings, route, result, id, pending) end
  local rtext = assert(result:canon(nil, "exact"))
  local ctx = route_context(self, route, self.engine:snapshot())
  -- the rung resolved the call when it was decided; after a reload it runs again
  local d = pending.resolved and self.engine:verify_resolved(pending.resolved, rtext, ctx or route.context)
    or self.engine:verify(pending.text, rtext, ctx or route.context)
  -- a result passes accepted, or as the tool's own error (TOOL_ERROR: the
  -- model's to read); any other defer (a broken contract the policy defers)
  -- is held back like a reject: a result cannot wait for a person
  local passes = d.verdict == "accept" or (d.verdict == "defer" and d.code == "TOOL_ERROR")
  -- a shadowed call's own refusal again (the rung re-decides the call for
  -- the verifier): recorded with the call, it passes unrecorded
  local call_d = pending.shadowed
  if not passes and call_d and d.code == call_d.code and d.stage == call_d.stage then return nil end
  if not passes and shadowed_result(self, route, pending.name, d, pending.principal) then return nil end
  self.observe({ kind = "decision", phase = "result", server = route.server, tool = pending.name, decision = d,
    principal = pending.principal })
  if passes then return nil end
  return refusal(self, settings, id, d, nil, pending.era)
end

-- A completed task's result, where the client reads it (a tasks/get answer,
-- a notifications/tasks), through the contract verifier against the call
-- that made the task: nil (it passes) or the refusing decision.
local function verify_task_result(self, route, rec, task)
  local r = task:get("result")
  local snap = self.engine:snapshot()
  local d
  if not r then
    d = gateway_decision(snap, "verify", "CONTRACT_OUTPUT", "a completed task without its result", route.server,
      rec.tool)
  else
    local ctx = route_context(self, route, snap)
    d = self.engine:verify(rec.call, assert(r:canon(nil, "exact")), ctx or route.context)
  end
  if d.verdict == "reject" and shadowed_result(self, route, rec.tool, d) then return nil end
  self.observe({ kind = "decision", phase = "result", server = route.server, tool = rec.tool, decision = d })
  return d.verdict == "reject" and d or nil
end

-- The answer to a tasks/* request: tasks/get's input_required asks are
-- kept (what a tasks/update may answer), its completed result verified (a
-- broken one replaced by a refusal); failed and cancelled ones, and the
-- acks of tasks/update and tasks/cancel, pass.
local function task_answer(self, settings, route, root, id, pending)
  local result = root:get("result")
  if not result or pending.method ~= "tasks/get" or result:type() ~= "object" then return nil end
  local status = rounds.string_of(result:get("status"))
  local rec = pending.rec
  if status == "input_required" then
    local asked, why = rounds.asked(result:get("inputRequests"))
    local kept = {}
    for k, v in pairs(rec) do kept[k] = v end
    kept.asked = asked or {}
    local ok, err = rounds.remember(self.state, "task", route.server, pending.key, kept, settings.approval_ttl)
    if not asked or not ok then
      return unremembered(self, self.engine:snapshot(), route, id, pending, "TASK_INVALID", "the task's input "
        .. "requests cannot be kept: " .. tostring(why or err))
    end
    return nil
  end
  if status ~= "completed" then return nil end
  local d = verify_task_result(self, route, rec, result)
  if not d then return nil end
  local refused = refusal(self, settings, id, d, nil, pending.era)
  if settings.refusal ~= "result" then return refused end
  -- the task completed with the refusal as its result: the model reads it where it reads the tool's
  local doc = assert(decision.codec():parse(refused))
  local tool_result = doc:root():get("result")
  if not tool_result then
    doc:free()
    return refused
  end
  local parts = {}
  for i = 1, result:len() do
    local k = result:key(i)
    if k ~= "result" then parts[#parts + 1] = enc(k) .. ":" .. assert(result:at(i):canon(nil, "exact")) end
  end
  parts[#parts + 1] = '"result":' .. assert(tool_result:canon(nil, "exact"))
  doc:free()
  return '{"jsonrpc":"2.0","id":' .. id .. ',"result":{' .. table.concat(parts, ",") .. "}}"
end

-- A notifications/tasks (on a subscriptions/listen stream) delivers a
-- task's state as tasks/get does: a completed one's result is verified the
-- same way, and one the gateway cannot hold to a call of this route is
-- dropped.  -> nil (it passes) | false, why
local function task_notification(self, route, msg)
  local params = msg:get("params")
  local status = params and params:type() == "object" and rounds.string_of(params:get("status"))
  if status ~= "completed" and not (params and params:type() == "object" and params:get("result")) then return nil end
  local task_id = rounds.string_of(params:get("taskId"))
  local ok, rec = pcall(rounds.recall, self.state, "task", route.server, rounds.task_key(task_id or ""))
  if not task_id or not ok or not rec then
    return false, "a notifications/tasks result of a task not created on this route"
  end
  local d = verify_task_result(self, route, rec, params)
  if d then return false, "a notifications/tasks result that breaks the contract: " .. describe(d) end
  return nil
end

-- One message of the server's: nil (it passes as it is), the text to give
-- instead, or false and why (dropped).  An answer must answer a request in
-- flight with its id as the client wrote it: a client may read "3" or 3.0
-- as 3 (the TypeScript SDK's Number(id)), and an answer the gateway does not
-- match would reach the model unread, a second answer, or one to a request
-- never sent, as well.
local function answer_one(self, snap, settings, route, plan, msg)
  local frame = assert(msg:mcp())
  if frame.method == "notifications/tasks" then return task_notification(self, route, msg) end
  -- the server's requests and notifications
  if frame.kind ~= "message" or frame.method or frame.bad_method then return nil end
  local id = frame.id
  local pending = id and plan.pending[id]
  if not pending then
    -- an error that answers no id (the server could not read a message) carries no result
    if frame.id_null and not frame.result then return nil end
    return false, "an answer that answers no request in flight (id " .. (frame.id_text or "none") .. ")"
  end
  plan.pending[id] = nil
  if pending.kind == "other" then return nil end
  if pending.kind == "list" then return list_answer(self, snap, settings, route, msg, id, pending) end
  if pending.kind == "task" then return task_answer(self, settings, route, msg, id, pending) end
  return call_answer(self, settings, route, msg, id, pending)
end

--- Reads one message from the server (a JSON-RPC message or batch) and
-- returns what the client gets: the same text, or the filtered, verified
-- one, or nil and why when nothing of it may reach the client (the host
-- drops it, saying so).  An answer to no request in flight is dropped (in
-- a batch, cut out).  A message that is not JSON is dropped when nothing
-- is in flight, or in a stream's plan (plan.stream: a stdio session, where
-- one plan gathers every request in flight and a server's line answers no
-- request in particular: the requests stay in flight); otherwise each
-- request in flight gets an error instead (fail closed).
-- response(route, plan, text) -> text | nil, message
function Gateway:response(route, plan, text)
  local snap, settings = current(self)
  local doc, perr = decision.codec():parse(text)
  if not doc and (plan.stream or not M.watches(plan)) then return nil, "not JSON: " .. tostring(perr) end
  if not doc then
    -- which watched request it answers is unknown: each gets an error
    local out = M.unanswered(plan, "the server's answer is not JSON")
    return #out == 1 and out[1] or ("[" .. table.concat(out, ",") .. "]")
  end
  local root = doc:root()
  local out, why
  if root:type() == "array" then
    local parts, changed = {}, false
    for i = 1, root:len() do
      local msg = root:at(i)
      local a, w = answer_one(self, snap, settings, route, plan, msg)
      changed = changed or a ~= nil
      if a == false then why = w else parts[#parts + 1] = a or assert(msg:canon(nil, "exact")) end
    end
    if #parts == 0 and root:len() > 0 then out = nil
    else out = changed and ("[" .. table.concat(parts, ",") .. "]") or text end
  else
    local a
    a, why = answer_one(self, snap, settings, route, plan, root)
    out = a ~= false and (a or text) or nil
  end
  doc:free()
  return out, out == nil and why or nil
end

return M
