-- lint: settings that repeat the defaults (notes), and one that does not
return {
  name = "z", version = "1",
  registry = { closed = true, on_collision = "reject" },
  verifier = { on_mismatch = "reject" },
  budget = 1000000,
}
