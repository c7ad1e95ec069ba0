-- lint: a gate rule that defers or admits, never refuses
return {
  name = "n", version = "1",
  gate = {
    admissible = function(contract, ctx)
      if contract.risk == "critical" then return "defer", "ask" end
      return true
    end,
  },
}
