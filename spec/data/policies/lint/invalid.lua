-- lint: a load error the loader names the field of (risk_levels is not a list)
return { name = "x", version = "1",
  gate = { risk_levels = "low" } }
