--- toolgate.mcp.client_approval: a deferred call approved by the person in
-- their own MCP client, through MCP 2026-07-28's multi round-trip requests.
-- The gateway answers the call with input_required holding an elicitation
-- of its own (KEY: approve, yes or no; the tool, the server, the arguments
-- in full, the reason) and a requestState of its own; the client's retry
-- carrying that state is the person's answer, read by the gateway and never
-- forwarded: an approved call goes on without toolgate's inputResponses and
-- requestState.
--
-- The requestState is 128 random bits naming a round the gateway keeps in
-- its state store (toolgate.mcp.rounds, marked toolgate = true) with the
-- approval id and the call's digest: every nginx worker reads it, a forged
-- one names no round, a replayed one finds its approval already decided.
-- (No HMAC: the core offers no SHA-256 to both front ends, and the store is
-- written anyway when the approval opens.)
-- @module toolgate.mcp.client_approval

local value = require "toolgate.value"
local sandbox = require "toolgate.sandbox"
local decision = require "toolgate.decision"
local json = require "toolgate.json"

local M = {}

--- The inputRequests key of toolgate's elicitation.
M.KEY = "toolgate/approval"

local function enc(v) return (assert(value.encode(v))) end
local function string_of(node) return node and node:type() == "string" and node:value() or nil end

--- elicits(params) -> whether a 2026 request's client can show a form:
-- its per-request capabilities (params._meta) declare elicitation, with
-- form mode or no mode named (MCP's default is form).
function M.elicits(params)
  local meta = params and params:type() == "object" and params:get("_meta")
  local caps = meta and meta:type() == "object" and meta:get("io.modelcontextprotocol/clientCapabilities")
  local el = caps and caps:type() == "object" and caps:get("elicitation")
  if not (el and el:type() == "object") then return false end
  return el:len() == 0 or el:get("form") ~= nil
end

--- allowed(setting, budget, d, ctx) -> whether the policy's
-- mcp.client_approval lets the person who asked approve this deferral
-- (a function runs in the sandbox; anything but true is a no).  ctx:
-- {server =, tool =, principal =, arguments = the call's arguments as Lua
-- values (nil when the approval holds them cut), arguments_text = their
-- canonical JSON text}.
function M.allowed(setting, budget, d, ctx)
  if type(setting) ~= "function" then return setting == true end
  local ok, yes = sandbox.call(budget, setting, d:table(), ctx)
  return ok and yes == true
end

--- context(server, tool, shown, principal) -> the ctx allowed gives a
-- policy's function (shown: toolgate.mcp's approval_arguments).
function M.context(server, tool, shown, principal)
  local args = not shown.arguments_truncated and json.decode(decision.codec(), shown.arguments) or nil
  return { server = server, tool = tool, principal = principal, arguments = args, arguments_text = shown.arguments }
end

--- new_state() -> a requestState nobody can guess | nil (no random source:
-- the call is deferred as without the capability)
function M.new_state()
  local f = io.open("/dev/urandom", "rb")
  if not f then return nil end
  local bytes = f:read(16)
  f:close()
  if not bytes or #bytes ~= 16 then return nil end
  return "toolgate-approval." .. bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end)
end

--- form(t, shown, approval_id) -> the elicitation's params (a table) and
-- its requestedSchema as JSON text; t is the deferral's decision table,
-- shown the arguments the approval binds (toolgate.mcp's approval_arguments).
function M.form(t, shown, approval_id)
  local args = shown.arguments
  if shown.arguments_truncated then
    args = args .. " ... (" .. shown.arguments_bytes .. " bytes in all: the approval binds them whole)"
  end
  local title = string.format("Run %s on %s?", tostring(t.tool), tostring(t.server))
  local schema = { type = "object", required = setmetatable({ "approve" }, value.array_mt),
    properties = { approve = { type = "boolean", title = title,
      description = "Yes runs this call once, exactly as shown; no refuses it." } } }
  local message = "toolgate holds this call until you answer.\nTool: " .. tostring(t.tool) .. "\nServer: "
    .. tostring(t.server) .. "\nArguments: " .. args .. "\nWhy: " .. tostring(t.message) .. " ("
    .. tostring(t.code) .. ")\nApproval: " .. approval_id
  return { mode = "form", message = message, requestedSchema = schema }, enc(schema)
end

--- reply(id, params, request_state, approval_id, decision_json) -> the
-- input_required answer (JSON text; id is the request's id as JSON text).
function M.reply(id, params, request_state, approval_id, decision_json)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"result":{"resultType":"input_required","inputRequests":{'
    .. enc(M.KEY) .. ':{"method":"elicitation/create","params":' .. enc(params) .. '}},"requestState":'
    .. enc(request_state) .. ',"_meta":{"toolgate/approval_id":' .. enc(approval_id) .. ',"toolgate/decision":'
    .. decision_json .. "}}}"
end

--- answer(responses) -> "approve" | "decline" | "cancel" | nil (not
-- answered): the person's answer in a retry's inputResponses (already held
-- to the asked schema by toolgate.mcp.rounds); accept without approve true
-- is a decline.
function M.answer(responses)
  local r = responses and responses:type() == "object" and responses:get(M.KEY)
  local action = r and r:type() == "object" and string_of(r:get("action"))
  if action == "cancel" or action == "decline" then return action end
  if action ~= "accept" then return nil end
  local content = r:get("content")
  local yes = content and content:type() == "object" and content:get("approve")
  if yes and yes:type() == "boolean" and yes:value() == true then return "approve" end
  return "decline"
end

--- strip(id, method, params) -> the message to forward: the same request
-- without toolgate's requestState and inputResponses (id as JSON text).
function M.strip(id, method, params)
  local out = {}
  for i = 1, params:len() do
    local k = params:key(i)
    if k ~= "requestState" and k ~= "inputResponses" then
      out[#out + 1] = enc(k) .. ":" .. assert(params:at(i):canon(nil, "exact"))
    end
  end
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":' .. enc(method) .. ',"params":{' .. table.concat(out, ",")
    .. "}}"
end

return M
