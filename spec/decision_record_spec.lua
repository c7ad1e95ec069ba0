-- The decision records the core writes (tg_decision_record, through
-- toolgate.audit.decision) against the Lua writer they replaced, byte for
-- byte: every member encoded by toolgate.value and sorted by key.  The
-- events cover each arguments mode, events with and without trace ids,
-- principals, approvals, shadow, strings with every byte that needs an
-- escape and some that do not (0x7F, UTF-8), and a line past the bindings'
-- 4 KiB buffer.
local audit = require "toolgate.audit"
local decision = require "toolgate.decision"
local value = require "toolgate.value"

local function enc(v) return (assert(value.encode(v))) end

-- The replaced writer, as it wrote a decision's record: members {key,
-- JSON text} sorted by key (the arguments members as the audit module
-- chooses them, read back from the core's line).
local function oracle(ev, time, opts, args)
  local enforced = ev.enforced ~= false
  local m = { { "kind", enc("decision") }, { "route", enc(ev.server or "") }, { "time", string.format("%.3f", time) },
    { "source", enc(opts.source) } }
  if opts.worker then m[#m + 1] = { "worker", string.format("%d", opts.worker) } end
  local trace_id, span_id = ev.trace_id or opts.trace_id, ev.span_id or opts.span_id
  if trace_id then m[#m + 1] = { "trace_id", enc(trace_id) } end
  if span_id then m[#m + 1] = { "span_id", enc(span_id) } end
  local rest = {
    { "phase", enc(ev.phase) }, { "decision", ev.decision:json() }, { "outcome", enc(audit.outcome(ev)) },
    { "enforced", tostring(enforced) }, { "mode", enc(ev.mode or (enforced and "enforce" or "shadow")) },
    { "approval_id", ev.approval_id and enc(ev.approval_id) or "null" }, { "approved", tostring(ev.approved == true) },
    { "principal", ev.principal and enc(ev.principal) or "null" },
  }
  for _, x in ipairs(rest) do m[#m + 1] = x end
  for _, x in ipairs(args or {}) do m[#m + 1] = x end
  table.sort(m, function(a, b) return a[1] < b[1] end)
  local parts = {}
  for i, x in ipairs(m) do parts[i] = enc(x[1]) .. ":" .. x[2] end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- every byte below 0x20, the quote and backslash, and bytes written as they are
local NASTY = {}
for b = 0, 31 do NASTY[#NASTY + 1] = string.char(b) end
local NASTY_TEXT = table.concat(NASTY) .. '"\\/\127' .. "caf\195\169 \226\130\172"

local D = decision.from_table({ verdict = "accept", stage = "accept", code = "OK", server = "counter", tool = "echo",
  args_digest = "sha256:" .. string.rep("ab", 32), policy_version = "p@1", registry_hash = string.rep("c", 32) })
local R = decision.from_table({ verdict = "reject", stage = "validate", code = "SCHEMA", message = NASTY_TEXT,
  server = "counter", tool = "echo", policy_version = "p@1", registry_hash = string.rep("c", 32) })

local CALL = '{"server":"counter","name":"echo","arguments":{"message":' .. enc(NASTY_TEXT) .. "}}"
local BIG_CALL = '{"server":"counter","name":"echo","arguments":{"message":' .. enc(string.rep("x\n", 40000)) .. "}}"

local function events()
  local shown = audit.call_arguments(CALL)
  return {
    { kind = "decision", phase = "call", server = "counter", tool = "echo", decision = D, call = CALL },
    { kind = "decision", phase = "call", server = "counter", decision = R, call = CALL, principal = "alice@example" },
    { kind = "decision", phase = "call", server = NASTY_TEXT, decision = D, approval_id = "ap-" .. NASTY_TEXT,
      approved = true, arguments = shown, call = CALL, principal = "bob" },
    { kind = "decision", phase = "call", server = "counter", decision = R, approval_id = "ap1", arguments = shown,
      call = CALL },
    { kind = "decision", phase = "call", server = "counter", decision = R, enforced = false, mode = "shadow",
      arguments = shown, call = CALL, trace_id = string.rep("ab", 16), span_id = string.rep("cd", 8) },
    { kind = "decision", phase = "result", server = "counter", tool = "echo", decision = D },
    { kind = "decision", phase = "method", decision = R },
    { kind = "decision", phase = "call", server = "counter", decision = D, arguments = audit.call_arguments(BIG_CALL),
      call = BIG_CALL, approved = true, approval_id = "ap2" },
  }
end

local SETTINGS = {
  audit.settings(),
  assert(audit.settings({ arguments = "full" })),
  assert(audit.settings({ arguments = "digest" })),
  assert(audit.settings({ arguments = "redact", redact = { "/message", "/absent" } })),
}

local OPTS = {
  { source = "gateway", worker = 4242 },
  { source = "mcp-proxy", trace_id = string.rep("12", 16), span_id = string.rep("34", 8) },
  { source = "cli" },
}

-- the arguments members (key, JSON text as toolgate.value writes it) the line carries, sorted
local function arguments_of(line)
  local out = {}
  local t = assert(require("toolgate.json").decode(decision.codec(), line))
  for k, v in pairs(t) do
    if k:sub(1, 9) == "arguments" then
      out[#out + 1] = { k, type(v) == "number" and string.format("%d", v) or enc(v) }
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end

describe("decision records written by the core", function()
  it("are byte for byte the Lua writer's lines, for every arguments mode, envelope and escape", function()
    local n = 0
    for _, s in ipairs(SETTINGS) do
      for _, opts in ipairs(OPTS) do
        for _, ev in ipairs(events()) do
          local o = { source = opts.source, worker = opts.worker, trace_id = opts.trace_id, span_id = opts.span_id,
            audit = s }
          for _, time in ipairs({ 1700000000.125, 1733616000.5, 0.001 }) do
            local line = audit.decision(ev, time, o)
            assert.equals(oracle(ev, time, o, arguments_of(line)), line)
            n = n + 1
          end
        end
      end
    end
    assert.equals(#SETTINGS * #OPTS * 8 * 3, n)
  end)

  it("carry the arguments each mode chooses, a line longer than the bindings' buffer whole", function()
    local full, digest, redact = SETTINGS[2], SETTINGS[3], SETTINGS[4]
    local ev = events()
    local line = audit.decision(ev[1], 1, { source = "gateway", audit = full })
    assert.same({ "arguments", "arguments_bytes", "arguments_truncated" },
      { arguments_of(line)[1][1], arguments_of(line)[2][1], arguments_of(line)[3][1] })
    assert.equals(enc(audit.call_arguments(CALL).arguments), arguments_of(line)[1][2])
    line = audit.decision(ev[1], 1, { source = "gateway", audit = digest })
    assert.same({ { "arguments_bytes", tostring(#audit.call_arguments(CALL).arguments) },
      { "arguments_digest", enc(D:get("args_digest")) } }, arguments_of(line))
    line = audit.decision(ev[1], 1, { source = "gateway", audit = redact })
    assert.equals('["/message"]', arguments_of(line)[3][2])
    assert.equals(enc('{"message":"[redacted]"}'), arguments_of(line)[1][2])
    line = audit.decision(ev[8], 1, { source = "gateway", audit = full })
    assert.is_true(#line > 4096 + audit.MAX_ARGUMENTS_BYTES)
    assert.equals("}", line:sub(-1))
    assert.equals("true", arguments_of(line)[3][2]) -- (cut at MAX_ARGUMENTS_BYTES)
  end)
end)
