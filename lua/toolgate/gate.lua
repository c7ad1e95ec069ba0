-- toolgate.gate: the causal gate (H4).
--
-- Reads the tool's contract (risk, scopes, any extras) and the per-call
-- context (the caller's granted scopes, the highest risk allowed, whatever
-- the host passes) and refuses calls off that frontier.  The default rule:
--   * every scope the contract requires must be granted (ctx.scopes);
--   * the contract's risk must not exceed ctx.max_risk, in the order of the
--     policy's risk_levels; a missing risk counts as the highest (a risk
--     outside the order is a load error), a missing ctx.max_risk as the
--     lowest, and a ctx.max_risk outside the order refuses the call (fail
--     closed: it says nothing the gate can compare).
-- A policy may replace the rule with gate.admissible(contract, ctx, call),
-- which returns true, false[, reason] or "defer"[, reason]; it runs in the
-- sandbox, and an error in it refuses the call (POLICY_ERROR).

local M = {}

local function rank_of(levels)
  local rank = {}
  for i, l in ipairs(levels) do rank[l] = i end
  return rank
end

-- default(contract, ctx, levels) -> true | false, reason
function M.default(contract, ctx, levels)
  local granted = {}
  for _, s in ipairs(type(ctx.scopes) == "table" and ctx.scopes or {}) do granted[s] = true end
  local required = type(contract.scopes) == "table" and contract.scopes or {}
  for _, s in ipairs(required) do
    if not granted[s] then
      return false, string.format("scope %q is required and not granted", tostring(s))
    end
  end
  local rank = rank_of(levels)
  if ctx.max_risk ~= nil and not rank[ctx.max_risk] then
    return false, string.format("the context's max_risk %q is not one of the policy's risk levels (%s)",
      tostring(ctx.max_risk), table.concat(levels, ", "))
  end
  local risk = contract.risk
  local r = rank[risk] or #levels
  local max = rank[ctx.max_risk] or 1
  if r > max then
    local said = rank[risk] and string.format("risk %q", risk)
      or (risk == nil and "no declared risk (counted as the highest)"
      or string.format("unknown risk %q (counted as the highest)", tostring(risk)))
    local allowed = rank[ctx.max_risk] and string.format("%q", ctx.max_risk)
      or string.format("%q (no max_risk given, counted as the lowest)", levels[1])
    return false, said .. " is above the allowed " .. allowed
  end
  return true
end

return M
