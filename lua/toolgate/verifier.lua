-- toolgate.verifier: the contract verifier.
--
-- After a call has run (or been dry-run), its result is checked against the
-- tool's trusted contract: the output schema (for an MCP tool, against
-- structuredContent, which MCP requires whenever a tool declares an
-- outputSchema) and the declared effects (contract.effects: every effect
-- the sandbox observed, ctx.observed_effects, must be declared; a tool
-- that declares no effects declares that it has none).  A result
-- that breaks the contract is refused or deferred, as the policy says.
-- Codes: CONTRACT_OUTPUT, CONTRACT_EFFECTS, TOOL_ERROR (an MCP result with
-- isError: the tool failed, deferred; its structuredContent, when it has
-- one, is still checked against the outputSchema first).

local M = {}

local function list(v)
  return type(v) == "table" and v or nil
end

-- subject against the tool's outputSchema: nil (it conforms) | fields of a decision
local function output_problem(reg, tool, subject)
  local findings, err, code = reg.c:validate_output(tool.index, subject)
  if not findings then
    return { code = code, message = "the output check could not finish: " .. tostring(err) }
  end
  if #findings > 0 then
    return { code = "CONTRACT_OUTPUT", path = findings[1].pointer, keyword = findings[1].keyword,
             message = "result does not match the output schema: " .. findings[1].message,
             findings = findings }
  end
  return nil
end

local function tool_error()
  return { verdict = "defer", code = "TOOL_ERROR", message = "the tool reported an error (isError)" }
end

-- check(reg, tool, result_node, ctx) -> nil (conforms) | fields of a decision
-- reg is the registry snapshot the tool belongs to.
function M.check(reg, tool, result, ctx)
  local subject = result
  if tool.format == "mcp" then
    if result:type() ~= "object" then
      return { code = "CONTRACT_OUTPUT", message = "an MCP tool result must be an object" }
    end
    local is_error = result:get("isError")
    is_error = is_error ~= nil and is_error:value() == true
    subject = result:get("structuredContent")
    -- isError is no way around the output contract: structuredContent,
    -- when an error result has it, is checked all the same
    if tool.has_output and not subject and not is_error then
      return { code = "CONTRACT_OUTPUT",
               message = "the tool declares an outputSchema but returned no structuredContent" }
    end
    if is_error then
      return tool.has_output and subject and output_problem(reg, tool, subject) or tool_error()
    end
  end
  if tool.has_output and subject then
    local problem = output_problem(reg, tool, subject)
    if problem then return problem end
  end
  -- every observed effect must be declared; a tool that declares none
  -- declares that it has none
  local observed = ctx.observed_effects
  if observed == nil then return nil end
  if type(observed) ~= "table" then
    return { code = "CONTRACT_EFFECTS",
             message = "the observed effects must be a list of effect names, not a " .. type(observed) }
  end
  local n = 0
  for k, e in pairs(observed) do
    n = n + 1
    if type(k) ~= "number" or type(e) ~= "string" then n = -1 break end
  end
  if n ~= #observed then
    return { code = "CONTRACT_EFFECTS", message = "the observed effects must be a list of effect names" }
  end
  local ok = {}
  for _, e in ipairs(list(tool.contract.effects) or {}) do ok[e] = true end
  for _, e in ipairs(observed) do
    if not ok[e] then
      return { code = "CONTRACT_EFFECTS", message = string.format(
        "observed effect %q is not among the tool's declared effects (%s)", e,
        next(ok) and table.concat(tool.contract.effects, ", ") or "it declares none") }
    end
  end
  return nil
end

-- verifiable(tool) -> whether the contract gives the verifier something to check
function M.verifiable(tool)
  return tool.has_output or list(tool.contract.effects) ~= nil
end

return M
