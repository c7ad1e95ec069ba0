-- oncall-draft.lua: the first draft of oncall.lua, with two mistakes in it
-- (docs/policies.md, "Testing your policy", finds them with toolgate test
-- and toolgate policy lint).
return {
  name = "oncall",
  version = "1",
  registry = { sources = { "../../policies/tests/ops.json" } },
  stages = {
    "rung",
    {
      name = "no_db_restart",
      code = "DB_RESTART",
      run = function(call)
        if call.name == "restart" and call.arguments.service == "DB" then
          return { verdict = "defer", message = "restarting the database needs a person" }
        end
        return true
      end,
    },
    "gate",
  },
  gate = {
    admissible = function(contract, ctx)
      for _, scope in ipairs(contract.scopes or {}) do
        local granted = false
        for _, g in ipairs(ctx.scopes or {}) do granted = granted or g == scope end
        if not granted then return false, "scope " .. scope .. " not granted" end
      end
      if contract.risk == "high" and not ctx.incident_id then
        return "defer", "high-risk tools need an open incident"
      end
      return true
    end,
  },
  context = { scopes = { "logs:read", "ops:write" } },
}
