-- lint: a risk order the registry's risks (none, low, medium, high) are not in: a load error
return {
  name = "r", version = "1",
  gate = {
    risk_levels = { "safe", "unsafe" },
  },
  context = { max_risk = "safe" },
}
