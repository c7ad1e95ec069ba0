-- A policy with a typo in it (docs/policies.md shows what the loader says).
return {
  name = "typo",
  version = "1",
  registry = { clossed = true },
}
