-- The seed demo's policy: the Resolution Rung, then the self-consistency
-- stage with its default settings (min_samples 5, arg_reject 0.20,
-- arg_accept 0.80, result_quarantine 0.50, result_accept 0.80).
-- registry.json is relative to this file: run.sh copies it next to the
-- generated registry (examples/seed-demo/out/).
return {name = "seed-demo", version = "1", stages = {"rung", "consistency"}, registry = {sources = {"registry.json"}}}
