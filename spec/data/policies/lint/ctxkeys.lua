-- lint: the gate rule reads ctx.tenant, which no context holds
return {
  name = "k", version = "1",
  context = { scopes = {} },
  gate = {
    admissible = function(contract, ctx, call)
      if ctx.tenant ~= "acme" then return false, "wrong tenant" end
      for _, s in ipairs(ctx.scopes) do if s == "x" then return true end end
      return true
    end,
  },
}
