-- spec/audit_records.lua: what the specs that read audit records share:
-- every record checked against docs/schemas/decision-record.schema.json by
-- two validators, ajv (spec/audit/ajv_records.js, bench/node_modules) and
-- toolgate validate.
local h = require "helpers"

local M = {}

local q = h.shell_quote
M.SCHEMA = h.root .. "/docs/schemas/decision-record.schema.json"

local function decode(text)
  local decision = require "toolgate.decision"
  return assert(require("toolgate.json").decode(decision.codec(), text))
end

--- verdicts(lines) -> ajv's and toolgate validate's verdicts on each line
-- (lists of {valid =, errors =})
function M.verdicts(lines)
  local text = table.concat(lines, "\n") .. "\n"
  local code, out, err = h.run("node " .. q(h.root .. "/spec/audit/ajv_records.js") .. " " .. q(h.root), text)
  assert(code == 0, "ajv_records.js failed: " .. err)
  local ajv = {}
  for _, l in ipairs(h.lines_of(out)) do ajv[#ajv + 1] = decode(l) end
  local tcode, tout, terr = h.toolgate("validate --schema " .. q(M.SCHEMA) .. " --lines", text)
  assert(tcode == 0, "toolgate validate failed: " .. terr)
  local tg = {}
  for _, l in ipairs(h.lines_of(tout)) do tg[#tg + 1] = decode(l) end
  assert(#ajv == #lines and #tg == #lines, "a verdict per record expected")
  return ajv, tg
end

--- assert_valid(lines, what): every line is a record both validators take
-- (what: whose records, for the message).
function M.assert_valid(lines, what)
  assert(#lines > 0, "no records from " .. what)
  local ajv, tg = M.verdicts(lines)
  local value = require "toolgate.value"
  for i, l in ipairs(lines) do
    assert(ajv[i].valid, what .. ": ajv refuses " .. l .. "\n" .. tostring(value.encode(ajv[i].errors)))
    assert(tg[i].valid, what .. ": toolgate validate refuses " .. l .. "\n" .. tostring(value.encode(tg[i].errors)))
  end
end

return M
