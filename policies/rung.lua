-- rung.lua: the Resolution Rung and the contract verifier, nothing that
-- needs a contract.
--
-- For the tool lists people already have -- an OpenAI tools array, an
-- Anthropic tools list, an MCP server's tools/list -- which say what a tool
-- takes but carry no risk and no scopes: every call is checked against its
-- tool's schema (does the tool exist on this server, does it declare these
-- arguments, do the values fit: H1, H2, H3), closed world, and nothing else.
-- No causal gate: with no contract to read, the default gate would count
-- every tool as the highest risk and refuse it (H4).  The verifier checks
-- what engine:verify is given against a tool's output schema, when it has
-- one.  When the tools do carry risks and scopes (toolgate's own registry
-- format, or a policy's contract(tool) mapping), use the default policy,
-- which adds the gate; for MCP lists, the mcp policy reads their
-- annotations.
return {
  name = "rung",
  version = "1",
  description = "rung -> verifier: schema checks only, closed world, no contract needed",

  -- the registry settings are the defaults, as in default.lua: closed
  -- world; calls to a tool shadowing an earlier server's name, or with a
  -- malformed name, are refused

  stages = { "rung", "verifier" },

  on_error = "reject",
}
