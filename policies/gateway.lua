-- gateway.lua: an MCP gateway's policy (toolgate gateway, toolgate.nginx):
-- contracts from MCP tool annotations; reads pass, writes wait for a
-- person, destructive tools are refused.
--
--   read-only (readOnlyHint)             risk "low",    scope SERVER:read   -> accept
--   a write that destroys nothing        risk "medium", scope SERVER:write  -> defer: an
--     (destructiveHint: false)                                                 operator approves it
--   anything else (MCP's defaults: a     risk "high",   scope SERVER:write  -> refused, H4
--     tool that says nothing destroys)
-- A registry in toolgate's own format keeps its contracts (a tool without a
-- risk is refused).
--
-- The context grants the scopes (toolgate gateway --context SERVER=FILE:
-- {"scopes": ["S:read", "S:write"]}); a scope not granted is refused (H4).
-- An approval lets the exact call (same server, tool and arguments, under
-- the same policy and registry) through once, within ten minutes.  Tools of
-- one name on several servers are no ambiguity here: a route names its server.
return {
  name = "gateway",
  version = "1",
  registry = { on_shadowing = "allow" },
  stages = { "rung", "gate", "verifier" },
  contract = function(tool)
    if tool.format ~= "mcp" then return nil end -- keep the contract the registry gives
    local a = tool.annotations or {}
    if a.readOnlyHint == true then return { risk = "low", scopes = { tool.server .. ":read" } } end
    if a.destructiveHint == false then return { risk = "medium", scopes = { tool.server .. ":write" } } end
    return { risk = "high", scopes = { tool.server .. ":write" } }
  end,
  gate = {
    admissible = function(contract, ctx)
      for _, scope in ipairs(contract.scopes or {}) do
        local granted = false
        for _, g in ipairs(ctx.scopes or {}) do granted = granted or g == scope end
        if not granted then return false, "scope " .. scope .. " not granted" end
      end
      if contract.risk == "low" then return true end
      if contract.risk == "medium" then return "defer", "writes need a person's approval" end
      return false, "destructive tools are not allowed" -- high, or no risk declared
    end,
  },
  defer = { requires_approval = true },
  mcp = { refusal = "error", approval_uses = 1, approval_ttl = 600 },
}
