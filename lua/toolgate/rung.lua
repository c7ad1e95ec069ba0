-- toolgate.rung: the Resolution Rung as a decision.
--
-- The C core resolves (server, name) and validates the arguments; this
-- module turns its result into a decision table:
--   {verdict = "accept" | "reject", stage = "rung", code = "H1" | "H2" | "H3" | ...,
--    path = "/json/pointer", keyword = "...", message = "...",
--    server = "...", tool = "...", findings = {...}, candidates = {...},
--    also_accepted_by = {...}, args_digest = "...", registry_hash = "..."}
-- Codes: H1 unknown or ambiguous tool; H2 undeclared or missing key; H3 a
-- value failing its check; SHADOWED / COLLISION / CONFUSABLE / BAD_TOOL_NAME
-- a tool the registry settings say to refuse at call time; REGEX_LIMIT /
-- VALIDATION_LIMIT a check that could not finish (refused: fail closed).

local array_mt = require("toolgate.value").array_mt

local M = {}

local FLAG_CODES = {
  { "shadowing", "SHADOWED", "shadows a tool of the same name on a more trusted or earlier server" },
  { "collision", "COLLISION", "shares its name with tools on other servers" },
  { "confusable", "CONFUSABLE", "has a name confusable with another tool's" },
  { "bad_name", "BAD_TOOL_NAME", "has a name outside ^[A-Za-z0-9_.-]{1,128}$" },
}

local function refs(snap, indexes)
  local out = setmetatable({}, array_mt)
  for i, k in ipairs(indexes) do
    local t = snap.tools[k]
    out[i] = { server = t.server, name = t.name }
  end
  return out
end

local function reject(code, message, extra)
  local d = { verdict = "reject", stage = "rung", code = code, message = message }
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

-- check(snap, server|nil, name, args_node[, opts]) -> decision
-- opts.report_also: list the other tools whose schemas accept the arguments (H5).
function M.check(snap, server, name, args, opts)
  opts = opts or {}
  local res, err, code = snap.c:check(server, name, args, opts.report_also)
  local base = { server = server, tool = name, registry_hash = snap.hash }
  if not res then
    return reject(code, "the rung could not finish its check: " .. tostring(err), base)
  end
  if res.resolution == "unknown" then
    return reject("H1", server and string.format("no tool %q on server %q", name, server)
      or string.format("no tool named %q on any server", name), base)
  end
  if res.resolution == "ambiguous" then
    base.candidates = refs(snap, res.candidates)
    return reject("H1", string.format("tool name %q is exposed by %d servers; the call must name one",
      name, res.n_candidates), base)
  end

  local t = snap.tools[res.tool]
  base.server, base.tool = t.server, t.name
  for _, f in ipairs(FLAG_CODES) do
    if t.flags[f[1]] and snap.settings["on_" .. f[1]] == "reject" then
      return reject(f[2], string.format("tool %q on server %q %s", t.name, t.server, f[3]), base)
    end
  end

  base.args_digest = args:hash()
  if #res.findings > 0 then
    local first = res.findings[1]
    base.findings = setmetatable(res.findings, array_mt)
    base.path, base.keyword = first.pointer, first.keyword
    local more = #res.findings > 1 and string.format(" (and %d more finding%s)", #res.findings - 1,
      #res.findings > 2 and "s" or "") or ""
    return reject(first.code, first.message .. more, base)
  end
  local d = { verdict = "accept", stage = "rung" }
  for k, v in pairs(base) do d[k] = v end
  if opts.report_also then d.also_accepted_by = refs(snap, res.also) end
  return d
end

return M
