-- gateway.lua: an MCP gateway's policy (toolgate gateway, toolgate.nginx):
-- contracts from MCP tool annotations; reads pass, writes wait for a
-- person, destructive tools are refused.
--
--   read-only (readOnlyHint)             risk "low",    scope SERVER:read   -> accept
--   a write that destroys nothing        risk "medium", scope SERVER:write  -> defer: an
--     (destructiveHint: false)                                                 operator approves it
--   no annotations at all (MCP's         risk "high",   scope SERVER:write, -> defer: a person
--     defaults read it as destructive)   effects {"unknown"}                   approves each call
--   anything else (a tool that says      risk "high",   scope SERVER:write  -> refused, H4
--     it may destroy)
-- A server that declares no annotations is made usable by giving them in
-- the policy's registry.tools (docs/policies.md, "Tools without
-- annotations"): registry = { tools = { ["S/tool"] = { readOnlyHint = true } } }.
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
    -- keep the contract the registry gives, or the one the policy's registry.tools gives
    if tool.format ~= "mcp" or (tool.contract and tool.contract.risk) then return nil end
    local a = tool.annotations
    if a == nil then return { risk = "high", scopes = { tool.server .. ":write" }, effects = { "unknown" } } end
    if a.readOnlyHint == true then return { risk = "low", scopes = { tool.server .. ":read" } } end
    if a.destructiveHint == false then return { risk = "medium", scopes = { tool.server .. ":write" } } end
    return { risk = "high", scopes = { tool.server .. ":write" } }
  end,
  gate = {
    admissible = function(contract, ctx)
      local unannotated = false
      for _, e in ipairs(contract.effects or {}) do unannotated = unannotated or e == "unknown" end
      local why = unannotated and " (no annotations: MCP's defaults read it as destructive)" or ""
      for _, scope in ipairs(contract.scopes or {}) do
        local granted = false
        for _, g in ipairs(ctx.scopes or {}) do granted = granted or g == scope end
        if not granted then return false, "scope " .. scope .. " not granted" .. why end
      end
      if contract.risk == "low" then return true end
      if contract.risk == "medium" then return "defer", "writes need a person's approval" end
      if unannotated then
        return "defer", "no annotations: MCP's defaults read it as destructive, so a person approves each call"
      end
      return false, "destructive tools are not allowed" -- high, or no risk declared
    end,
  },
  defer = { requires_approval = true },
  mcp = { refusal = "result", approval_uses = 1, approval_ttl = 600 },
}
