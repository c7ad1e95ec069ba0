--- toolgate.shadow: which refusals a policy records without enforcing them.
--
-- A policy, a server or a single tool is in "enforce" (the default) or in
-- "shadow": decide, record the decision in full with "enforced": false and
-- the verdict it would have had, and let the call (or the result) run.  The
-- policy file alone says which (docs/shadow.md):
--   mode = "shadow"                       -- every server and tool
--   modes = { ["pay"] = "enforce", ["pay/quote"] = "shadow" } -- most specific wins
--   always_enforce = { "H1", "PIN_CHANGED", "SERVER_QUARANTINED" } -- the default
-- A call or a context never switches it: they are what a model or a client
-- wrote, and shadow widens what passes.  Nor does shadow ever let through
-- what toolgate itself could not decide (a call it could not read, a policy
-- that failed: an error never turns into a pass), or a code of
-- always_enforce.  Its default keeps what could widen the operator's grant
-- enforced: H1, a tool the registry does not hold (a model's invention, or
-- a tool the server added unreviewed), and PIN_CHANGED and
-- SERVER_QUARANTINED, a server whose tools changed under their pins.
--
-- compile(given[, mode]) -> rules | nil: the rules of a policy's table as
-- the file wrote it (policy.lua checked it; mode overrides its mode, as
-- `toolgate check --shadow` does), nil when nothing is in shadow, so that
-- an enforcing policy's path asks nothing more than `policy.shadow`.
-- @module toolgate.shadow

local decision = require "toolgate.decision"
local suggest = require "toolgate.suggest"

local M = {}

M.MODES = { "enforce", "shadow" }
M.DEFAULT_ALWAYS_ENFORCE = { "H1", "PIN_CHANGED", "SERVER_QUARANTINED" }

--- The codes toolgate writes on refusals (a list of always_enforce is
-- checked against them for typos; a custom stage's own code may be listed).
M.KNOWN_CODES = {
  "H1", "H2", "H3", "H4", "PIN_CHANGED", "SERVER_QUARANTINED", "CONTRACT_OUTPUT", "QUOTA", "METHOD_NOT_ALLOWED",
  "APPROVAL_DENIED", "APPROVALS_FULL", "ARG_DISAGREE", "ARG_UNSTABLE", "RESULT_DISAGREE", "RESULT_UNSTABLE",
  "INSUFFICIENT_SAMPLES", "TOO_MANY_SAMPLES", "DETERMINISM_UNVERIFIED", "EPOCH_NOT_FIXED", "UNVERIFIABLE",
  "CONTEXT_IN_CALL", "UNSUPPORTED_CALL",
}

-- toolgate's own failures (a quota store that could not count among
-- them): nothing was decided, so nothing may pass
local FAILURES = { POLICY_ERROR = true, INTERNAL_ERROR = true, NOMEM = true, BAD_CONTEXT = true,
                   QUOTA_UNAVAILABLE = true }

function M.compile(given, mode)
  mode = mode or given.mode or "enforce"
  local modes, any = given.modes or {}, mode == "shadow"
  for _, m in pairs(modes) do any = any or m == "shadow" end
  if not any then return nil end
  local always = {}
  for _, code in ipairs(given.always_enforce or M.DEFAULT_ALWAYS_ENFORCE) do always[code] = true end
  return { mode = mode, modes = modes, always = always }
end

--- mode(rules, server[, tool]) -> "shadow" | "enforce": the tool's entry
-- of modes, else the server's, else the policy's mode.
function M.mode(rules, server, tool)
  if not rules then return "enforce" end
  local modes = rules.modes
  return tool and modes[server .. "/" .. tool] or modes[server] or rules.mode
end

--- shadows(rules, server, tool, d) -> whether the decision d, on that
-- server's tool, is recorded and let run: a reject or a defer of the
-- policy's (not decode's, not a failure), whose code is not always
-- enforced, under mode "shadow".
function M.shadows(rules, server, tool, d)
  if not rules or d.verdict == "accept" or d.stage == "decode" or FAILURES[d.code] or rules.always[d.code] then
    return false
  end
  return M.mode(rules, server, tool) == "shadow"
end

--- warnings(rules, tools) -> a list of messages: each entry of modes that
-- names a server or tool the registry does not hold (tools: the loaded
-- tools, {server =, name =}), which decides nothing: a typo there would
-- leave in shadow a tool meant to be enforced.
function M.warnings(rules, tools)
  if not rules then return {} end
  local servers, names, by_server = {}, {}, {}
  for _, t in ipairs(tools) do
    if not servers[t.server] then
      servers[t.server], by_server[t.server] = true, {}
      names[#names + 1] = t.server
    end
    by_server[t.server][#by_server[t.server] + 1] = t.name
    by_server[t.server][t.name] = true
  end
  local keys = {}
  for k in pairs(rules.modes) do keys[#keys + 1] = k end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    local server, tool = k:match("^([^/]+)/(.+)$")
    server = server or k
    local why
    if not servers[server] then
      why = string.format("no server %q in the registry", server) .. suggest.hint(server, names)
    elseif tool and not by_server[server][tool] then
      why = string.format("no tool %q on server %q in the registry", tool, server) .. suggest.hint(tool, by_server[server])
    end
    if why then
      out[#out + 1] = string.format("modes[%q]: %s; the entry decides nothing", k, why)
    end
  end
  return out
end

--- mark(d) -> a new decision: d's fields and "enforced": false (d is left
-- as it was: it is the core's record).
function M.mark(d)
  local t = {}
  for k, v in pairs(d:table()) do t[k] = v end
  t.enforced = false
  return decision.from_table(t)
end

return M
