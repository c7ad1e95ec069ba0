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
-- Read with MCP's own defaults, so a tool that says nothing is destructive
-- and open-world: the highest risk, fail closed.  The mapping
-- (docs/policies.md has it as a table):
--   read-only                      -> risk "low",    effects read,               no scope
--   not read-only, not destructive -> risk "medium", effects read, write,        scope <server>:write
--   destructive                    -> risk "high",   effects read, write, delete, scope <server>:write
--   open world                     -> the effect "network" and the scope <server>:network, and a tool
--                                     that writes one level higher ("critical" at most)
-- So a read-only tool of a closed domain (a file read, a graph search)
-- passes under the default context (no scopes, risk up to "medium"); a
-- write needs the context to grant <server>:write and its risk; anything
-- open-world needs <server>:network.  A contract given in toolgate's own
-- registry format is kept as it is.
local LEVELS = { "none", "low", "medium", "high", "critical" }

local function level_above(risk)
  for i, l in ipairs(LEVELS) do
    if l == risk then return LEVELS[math.min(i + 1, #LEVELS)] end
  end
  return "critical"
end

return {
  name = "mcp",
  version = "2",
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
    c.scopes = {}
    if read_only then
      c.risk, c.effects = "low", { "read" }
    else
      if destructive then
        c.risk, c.effects = "high", { "read", "write", "delete" }
      else
        c.risk, c.effects = "medium", { "read", "write" }
      end
      c.scopes[1] = tool.server .. ":write"
      if open_world then c.risk = level_above(c.risk) end
    end
    if open_world then
      c.effects[#c.effects + 1] = "network"
      c.scopes[#c.scopes + 1] = tool.server .. ":network"
    end
    c.idempotent = a.idempotentHint == true
    return c
  end,

  context = { scopes = {}, max_risk = "medium" },
  on_error = "reject",
}
