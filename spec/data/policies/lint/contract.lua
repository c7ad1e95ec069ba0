-- lint: a custom stage reads tool.contract without reads_contract = true (it gets nil)
return {
  name = "c", version = "1",
  stages = {
    "rung",
    { name = "cheap_only",
      run = function(call, tool, ctx)
        if tool.contract.risk == "high" then return false end
        return true
      end },
  },
}
