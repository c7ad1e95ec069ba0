-- The policy spec/nginx_spec.lua runs the gateway with: contracts from MCP
-- annotations (read-only: low risk, scope SERVER:read; a write that
-- destroys nothing: medium, SERVER:write, deferred to a person; anything
-- else: high, refused H4), approvals good for one call.
return {
  name = "gateway-spec",
  version = "1",
  -- the route names the server: tools of one name on several servers are no ambiguity
  registry = { on_shadowing = "allow" },
  stages = { "rung", "gate", "verifier" },
  contract = function(tool)
    local a = tool.annotations or {}
    if a.readOnlyHint == true then return { risk = "low", scopes = { tool.server .. ":read" } } end
    if a.destructiveHint == false then return { risk = "medium", scopes = { tool.server .. ":write" } } end
    return { risk = "high", scopes = { tool.server .. ":write" } }
  end,
  gate = {
    admissible = function(contract, ctx)
      for _, scope in ipairs(contract.scopes) do
        local granted = false
        for _, g in ipairs(ctx.scopes or {}) do granted = granted or g == scope end
        if not granted then return false, "scope " .. scope .. " not granted" end
      end
      if contract.risk == "high" then return false, "destructive tools are not allowed" end
      if contract.risk == "medium" then return "defer", "writes need a person's approval" end
      return true
    end,
  },
  defer = { requires_approval = true },
  mcp = { refusal = "error", approval_uses = 1, approval_ttl = 600 },
}
