-- toolgate policy lint: each listed mistake found, on its line, in a small
-- bad policy (spec/data/policies/lint/), and nothing but notes in the
-- shipped policies, run with their own registries and case files.
local h = require "helpers"

local DATA = "spec/data/policies/lint/"
local OPS = "--registry policies/tests/ops.json"
local MCP = "--registry examples/registries/mcp-filesystem.json --registry examples/registries/mcp-memory.json"

local function lint(args)
  return h.run("cd " .. h.shell_quote(h.root) .. " && " .. h.lua .. " bin/toolgate policy lint " .. args)
end

describe("toolgate policy lint", function()
  local BAD = {
    { "unreachable.lua", "", 1, {
      "unreachable.lua:6: warning: consistency: with min_samples = 4 and arg_reject = 0.25, an ARG_DISAGREE reject "
        .. "needs more than 4 samples (the modal share of n samples is at least 1/n); at exactly 4 samples it cannot "
        .. "happen",
      "unreachable.lua:8: warning: consistency: result_quarantine = result_accept = 0.70 makes RESULT_UNSTABLE "
        .. "unreachable",
      "2 warnings, 0 notes" } },
    { "overlap.lua", "", 1, {
      "overlap.lua:5: warning: consistency: arg_accept = arg_reject = 0.50 leaves no band for ARG_UNSTABLE: every "
        .. "plan is either accepted on its arguments or refused",
      "1 warning, 0 notes" } },
    { "contract.lua", "", 1, {
      'contract.lua:8: warning: stage "cheap_only" reads its tool argument (tool.contract) but does not declare '
        .. "reads_contract = true: it gets nil there, so every call it sees fails with POLICY_ERROR",
      "1 warning, 0 notes" } },
    { "ctxkeys.lua", "", 1, {
      "ctxkeys.lua:7: warning: gate.admissible reads ctx.tenant, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "1 warning, 0 notes" } },
    { "fallback.lua", "", 1, {
      "fallback.lua:16: warning: stage window reads ctx.opens, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "fallback.lua:16: warning: stage window reads ctx.closes, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "fallback.lua:17: warning: stage window reads ctx.approved, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "fallback.lua:17: warning: stage window reads ctx.region, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "fallback.lua:18: warning: stage window reads ctx.tenant, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "fallback.lua:19: warning: stage window reads ctx.quota, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "fallback.lua:19: warning: stage window reads ctx.epoch, which no context given here holds (the policy's "
        .. "context, --context, the cases'): a typo, or a key the operator must be told to set",
      "7 warnings, 0 notes" } },
    { "never.lua", OPS .. " --cases policies/tests/default.jsonl", 1, {
      "never.lua:5: warning: gate.admissible refused none of the 27 cases (11 of their decisions ran it): it may "
        .. "never return false; add a case it must refuse",
      "1 warning, 0 notes" } },
    { "noise.lua", "--notes", 0, {
      "noise.lua:4: note: registry.closed = true is the default: the line can go",
      'noise.lua:5: note: verifier.on_mismatch = "reject" is the default: the line can go',
      "noise.lua:6: note: budget = 1000000 is the default: the line can go",
      "0 warnings, 3 notes" } },
    { "risk.lua", OPS, 2, {
      'risk.lua:5: error: BAD_CONTRACT: tool "read_log" on server "ops" declares risk "low", which is not one of '
        .. "the policy's risk levels (safe, unsafe)" } },
    { "invalid.lua", "", 2, {
      'invalid.lua:3: error: POLICY_INVALID: policy gate.risk_levels: must be a list of level names, lowest first, '
        .. 'not "low"' } },
  }
  for _, b in ipairs(BAD) do
    local file, args, status, want = b[1], b[2], b[3], b[4]
    it("finds what is wrong in " .. file .. ", on its line", function()
      local code, out, err = lint(args .. " " .. DATA .. file)
      assert.equal(status, code, out .. err)
      local expected = {}
      for i, l in ipairs(want) do expected[i] = l:match("^%a+%.lua:") and (DATA .. l) or l end
      assert.equal(table.concat(expected, "\n") .. "\n", out)
    end)
  end

  it("counts the notes without --notes, and says how to list them", function()
    local code, out = lint(DATA .. "noise.lua")
    assert.equal(0, code)
    assert.equal("0 warnings, 3 notes (--notes lists them)\n", out)
  end)

  it("a context the cases give counts as given: the same gate rule reading ctx.tenant is then clean", function()
    local cases = h.tmpname(".jsonl")
    h.write_file(cases, '{"call":{"server":"ops","name":"restart","arguments":{"service":"web"}},'
      .. '"context":{"tenant":"acme"},"expect":{"verdict":"accept"}}\n'
      .. '{"call":{"server":"ops","name":"restart","arguments":{"service":"web"}},'
      .. '"context":{"tenant":"other"},"expect":{"verdict":"reject","stage":"gate"}}\n')
    local code, out = lint(OPS .. " --cases " .. cases .. " " .. DATA .. "ctxkeys.lua")
    os.remove(cases)
    assert.equal(0, code, out)
    assert.equal("0 warnings, 0 notes\n", out)
  end)

  local SHIPPED = {
    { "default", OPS, 9 }, { "strict", OPS, 5 }, { "rung", OPS, 1 },
    { "mcp", MCP, 8 }, { "gateway", MCP, 1 }, { "example", "", 23 },
  }
  for _, s in ipairs(SHIPPED) do
    it("finds no warning in the shipped policy " .. s[1] .. " (its defaults spelled out are notes)", function()
      local code, out, err = lint(s[2] .. " --cases policies/tests/" .. s[1] .. ".jsonl " .. s[1])
      assert.equal(0, code, out .. err)
      assert.equal(string.format("0 warnings, %d note%s (--notes lists them)\n", s[3], s[3] == 1 and "" or "s"), out)
    end)
  end

  it("is a usage error without the subcommand or the policy", function()
    local code, _, err = h.toolgate("policy")
    assert.equal(2, code)
    assert.matches("toolgate policy takes one subcommand: lint", err, 1, true)
    code, _, err = h.toolgate("policy lint")
    assert.equal(2, code)
    assert.matches("one POLICY", err, 1, true)
    -- two policies, one of them by --policy: still one too many
    code, _, err = h.toolgate("policy lint --policy rung policies/example.lua")
    assert.equal(2, code)
    assert.matches("one POLICY (as an argument, or --policy POLICY)", err, 1, true)
  end)

  it("takes the policy as check does, --policy, as well as the one argument", function()
    local a = { h.toolgate("policy lint --cases policies/tests/example.jsonl policies/example.lua") }
    local b = { h.toolgate("policy lint --cases policies/tests/example.jsonl --policy policies/example.lua") }
    assert.equal(0, b[1], b[3])
    assert.same(a, b)
  end)
end)
