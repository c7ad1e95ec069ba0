-- strict.lua: for deployments that would rather refuse than guess.
--
-- Every registry finding (a name on two servers, a shadowed name, names
-- that differ only by case or '-'/'_', a malformed name) fails the load;
-- formats are asserted (date-time, email, hostname, uri, int32, ...), and a
-- format toolgate cannot assert fails the load too (annotation_formats may
-- list the ones to leave unchecked; the shipped example registries use
-- only "uri", so it lists none); the
-- verifier refuses tools whose results cannot be verified (no output
-- schema, no declared effects); every defer needs a person's approval; the
-- self-consistency gate's conditions of validity (too few samples, an
-- epoch that moved, unverified determinism) are rejects, not defers; and a
-- failing policy function rejects.
return {
  name = "strict",
  version = "1",
  description = "load errors for every registry finding, formats asserted, approval for every defer",

  registry = {
    closed = true,
    assert_formats = true,
    on_collision = "error",
    on_shadowing = "error",
    on_confusable = "error",
    on_bad_name = "error",
  },

  stages = { "rung", "gate", "verifier" },

  gate = {
    risk_levels = { "none", "low", "medium", "high", "critical" },
  },

  verifier = {
    require_contract = true,
    on_mismatch = "reject",
  },

  consistency = {
    on_invalid = "reject",
  },

  context = { scopes = {}, max_risk = "low" },

  defer = { requires_approval = true },
  on_error = "reject",
}
