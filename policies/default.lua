-- default.lua: toolgate's default policy.
--
-- The three stages in the only order that can work: the Resolution Rung
-- (does the tool exist, do the arguments fit its schema), then the causal
-- gate (is this caller allowed this tool, at this risk), then the contract
-- verifier.  Closed-world schemas; calls to a tool that shadows a name an
-- earlier server owns, or whose name is malformed, are refused.  The gate's
-- rule: every scope the tool's contract requires must be granted in the
-- call's context, and the tool's risk must not exceed the context's
-- max_risk (a tool without a declared risk counts as "critical").
return {
  name = "default",
  version = "1",
  description = "rung -> gate -> verifier, closed world, risk up to medium unless the context says otherwise",

  registry = {
    closed = true,
    assert_formats = false,
    on_collision = "allow",   -- (server, name) resolution keeps colliding names apart
    on_shadowing = "reject",  -- but a later server reusing an owned name is refused
    on_confusable = "allow",  -- reported by `toolgate registry lint`
    on_bad_name = "reject",
  },

  stages = { "rung", "gate", "verifier" },

  gate = {
    risk_levels = { "none", "low", "medium", "high", "critical" },
  },

  -- What a call's context holds when the caller says nothing: no scopes
  -- granted, risks up to "medium" allowed.
  context = { scopes = {}, max_risk = "medium" },

  on_error = "reject",
}
