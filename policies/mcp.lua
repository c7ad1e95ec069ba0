-- mcp.lua: the default policy, with tool contracts read from MCP annotations.
--
-- MCP servers describe their tools with hints (tools/list "annotations"):
--   readOnlyHint     the tool does not modify its environment (default false)
--   destructiveHint  it may destroy data; meaningful when not read-only
--                    (default true)
--   idempotentHint   calling it twice with the same arguments has no
--                    further effect (default false)
--   openWorldHint    it reaches outside the server's closed domain, e.g.
--                    the web (default true)
-- Read with MCP's own defaults, a tool that says nothing is destructive and
-- open-world, so it lands on the highest risk: fail closed.  The mapping:
--   read-only                -> risk "low",  effects {"read"}
--   not read-only, not destructive -> risk "medium", effects {"read", "write"}
--   destructive              -> risk "high", effects {"read", "write", "delete"}
--   open world               -> one level higher, and the effect "network"
-- Each tool also requires the scope "<server>:read" (read-only tools) or
-- "<server>:write" (the others), which the call's context must grant.
-- A contract given in toolgate's own registry format is kept as it is.
local LEVELS = { "none", "low", "medium", "high", "critical" }

local function level_above(risk)
  for i, l in ipairs(LEVELS) do
    if l == risk then return LEVELS[math.min(i + 1, #LEVELS)] end
  end
  return "critical"
end

return {
  name = "mcp",
  version = "1",
  description = "default rules; risk, effects and scopes mapped from MCP tool annotations",

  registry = {
    closed = true,
    on_collision = "allow",
    on_shadowing = "reject",
    on_confusable = "allow",
    on_bad_name = "reject",
  },

  stages = { "rung", "gate", "verifier" },

  gate = { risk_levels = LEVELS },

  contract = function(tool)
    if tool.format ~= "mcp" then return nil end -- keep the contract the registry gives
    local a = tool.annotations or {}
    local read_only = a.readOnlyHint == true
    local destructive = not read_only and a.destructiveHint ~= false
    local open_world = a.openWorldHint ~= false
    local c = tool.contract or {}
    if read_only then
      c.risk, c.effects = "low", { "read" }
    elseif destructive then
      c.risk, c.effects = "high", { "read", "write", "delete" }
    else
      c.risk, c.effects = "medium", { "read", "write" }
    end
    if open_world then
      c.risk = level_above(c.risk)
      c.effects[#c.effects + 1] = "network"
    end
    c.idempotent = a.idempotentHint == true
    c.scopes = { tool.server .. (read_only and ":read" or ":write") }
    return c
  end,

  context = { scopes = {}, max_risk = "medium" },
  on_error = "reject",
}
