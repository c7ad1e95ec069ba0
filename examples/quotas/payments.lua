-- payments.lua: at most 3 transfers over 1000 an hour per principal, and
-- 1000 transfers a day per tenant (the context's "tenant") (docs/quotas.md)
return {
  name = "payments",
  version = "1",
  registry = { sources = { "payments.json" } },
  context = { max_risk = "low" },
  stages = { "rung", "gate", "verifier", "quota" },
  quota = {
    rules = {
      { server = "pay", tool = "transfer", where = "/amount > 1000", limit = 3, window = 3600,
        per = "principal" },
      { server = "pay", tool = "transfer", limit = 1000, window = 86400, per = "context.tenant" },
    },
  },
}
