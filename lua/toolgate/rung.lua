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

local function refs(snap, indexes)
  local out = setmetatable({}, array_mt)
  for i, k in ipairs(indexes or {}) do
    local t = snap.tools[k]
    out[i] = { server = t.server, name = t.name }
  end
  return out
end

local function decision(verdict, code, message, server, tool, snap)
  return { verdict = verdict, stage = "rung", code = code, message = message,
           server = server, tool = tool, registry_hash = snap.hash }
end

-- check(snap, server|nil, name, args_node[, opts]) -> decision[, tool]
-- opts.report_also: list the other tools whose schemas accept the arguments (H5).
-- On accept, the tool's registry record comes second.
function M.check(snap, server, name, args, opts)
  local also = opts and opts.report_also
  local res, err, code = snap.c:check(server, name, args, also)
  if not res then
    return decision("reject", code, "the rung could not finish its check: " .. tostring(err), server, name, snap)
  end
  local resolution = res.resolution
  if resolution == "unknown" then
    return decision("reject", "H1", server and string.format("no tool %q on server %q", name, server)
      or string.format("no tool named %q on any server", name), server, name, snap)
  end
  if resolution == "ambiguous" then
    local d = decision("reject", "H1", string.format(
      "tool name %q is exposed by %d servers; the call must name one", name, res.n_candidates), server, name, snap)
    d.candidates = refs(snap, res.candidates)
    return d
  end

  local t = snap.tools[res.tool]
  if t.refuse then -- flagged at load, and the settings say to refuse its calls
    return decision("reject", t.refuse.code, t.refuse.message, t.server, t.name, snap)
  end
  -- the digest binds the decision to these arguments: without it, no accept
  -- (exact numbers: an approval of account ...890 must not cover ...891)
  local digest, herr, hcode = args:hash(nil, "exact")
  if not digest then
    return decision("reject", hcode, "the arguments could not be hashed: " .. tostring(herr), t.server, t.name, snap)
  end
  local findings = res.findings
  if findings then
    local first, n = findings[1], #findings
    local more = n > 1 and string.format(" (and %d more finding%s)", n - 1, n > 2 and "s" or "") or ""
    local d = decision("reject", first.code, first.message .. more, t.server, t.name, snap)
    d.findings = setmetatable(findings, array_mt)
    d.path, d.keyword = first.pointer, first.keyword
    d.args_digest = digest
    return d
  end
  local d = decision("accept", nil, nil, t.server, t.name, snap)
  d.args_digest = digest
  if also then d.also_accepted_by = refs(snap, res.also) end
  return d, t
end

return M
