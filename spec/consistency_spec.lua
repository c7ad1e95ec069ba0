-- Execution-grounded self-consistency (toolgate.consistency through the
-- engine): every row of the decision table at and around its thresholds,
-- which argument was made up, normalizations, probes and quarantine,
-- multi-step plans, n from 1 to 10,000, and a differential check against an
-- independent Python reference of the seed's algorithm.
local toolgate = require "toolgate"
local h = require "helpers"

local DATA = h.root .. "/spec/data/registries/"

local function engine(settings, extra)
  local p = { name = "t", version = "1", stages = { "rung", "consistency" }, consistency = settings,
              resolvers = { accounts = { ["acme corp"] = "acct_1", ["ACME"] = "acct_1", ["acme-corp"] = "acct_1" } } }
  for k, v in pairs(extra or {}) do p[k] = v end
  return assert(toolgate.new({ policy = p, registry = { DATA .. "consistency.json" } }))
end

-- plan(tool, args_list, results_list[, extra]) with one epoch for all
local function plan(tool, args, results, extra)
  local samples = {}
  for i = 1, #args do
    samples[i] = { arguments = args[i], result = results[i], epoch = "e1" }
  end
  local p = { plan_id = "p", tool = { server = "sb", name = tool }, samples = samples }
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

-- n samples, the first `agree` with the same arguments, the rest distinct
-- (key: the argument that varies; "user_id" for lookup, "tz" for now, "url" for fetch)
local function args_with(agree, n, key)
  local out = {}
  for i = 1, n do
    local v = i <= agree and "same" or ("made-up-" .. i)
    out[i] = key and { [key] = v } or { user_id = v, limit = 5 }
  end
  return out
end

local function results_with(agree, n)
  local out = {}
  for i = 1, n do out[i] = { rows = i <= agree and 1 or i * 100 } end
  return out
end

local function classify(e, ...)
  return e:classify(plan(...))
end

describe("the decision table", function()
  it("defers with too few samples (INSUFFICIENT_SAMPLES), rejects under strict settings", function()
    local d = classify(engine(), "lookup", args_with(4, 4), results_with(4, 4))
    assert.equal("defer", d.verdict)
    assert.equal("INSUFFICIENT_SAMPLES", d.code)
    assert.equal(4, d.n)
    local p = plan("lookup", args_with(4, 4), results_with(4, 4))
    p.tool.deterministic, p.tool.verified = true, true
    d = engine({ on_invalid = "reject" }):classify(p)
    assert.equal("reject", d.verdict)
    assert.equal("INSUFFICIENT_SAMPLES", d.code)
  end)

  it("defers when the epoch moved (EPOCH_NOT_FIXED), or is said not fixed", function()
    local p = plan("lookup", args_with(10, 10), results_with(10, 10))
    p.samples[7].epoch = "e2"
    local d = engine():classify(p)
    assert.equal("EPOCH_NOT_FIXED", d.code)
    assert.equal("defer", d.verdict)
    p = plan("lookup", args_with(10, 10), results_with(10, 10), { epoch_fixed = false })
    assert.equal("EPOCH_NOT_FIXED", engine():classify(p).code)
    p = plan("lookup", args_with(10, 10), results_with(10, 10), { epoch_fixed = true })
    for _, s in ipairs(p.samples) do s.epoch = nil end
    p.tool.deterministic, p.tool.verified = true, true
    assert.equal("accept", engine():classify(p).verdict)
    p = plan("lookup", args_with(10, 10), results_with(10, 10))
    for _, s in ipairs(p.samples) do s.epoch = nil end
    assert.equal("EPOCH_NOT_FIXED", engine():classify(p).code) -- no epochs at all: not known to be fixed
  end)

  it("rejects arg agreement below arg_reject on a verified-deterministic tool (ARG_DISAGREE)", function()
    local p = plan("lookup", args_with(1, 10), results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal("reject", d.verdict)
    assert.equal("ARG_DISAGREE", d.code)
    assert.equal(0.1, d.arg_agreement)
    assert.equal(10, d.distinct_args)
  end)

  it("keeps the strict '<': exactly arg_reject is ARG_UNSTABLE, not a reject", function()
    local p = plan("lookup", args_with(2, 10), results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal(0.2, d.arg_agreement)
    assert.equal("ARG_UNSTABLE", d.code)
    assert.equal("defer", d.verdict)
  end)

  it("defers arg disagreement when determinism is not verified (DETERMINISM_UNVERIFIED)", function()
    local d = classify(engine(), "lookup", args_with(1, 10), results_with(10, 10))
    assert.equal("DETERMINISM_UNVERIFIED", d.code) -- declared, never probed
    local p = plan("lookup", args_with(1, 10), results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, false
    assert.equal("DETERMINISM_UNVERIFIED", engine():classify(p).code)
    assert.equal("DETERMINISM_UNVERIFIED", classify(engine(), "now", args_with(1, 10, "tz"), results_with(1, 10)).code)
    p = plan("lookup", args_with(1, 10), results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, false
    assert.equal("reject", engine({ on_invalid = "reject" }):classify(p).verdict)
  end)

  it("defers and quarantines when arguments agree but a deterministic tool's results do not (RESULT_DISAGREE)", function()
    local e = engine()
    local p = plan("lookup", args_with(8, 10), results_with(4, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = e:classify(p)
    assert.equal("defer", d.verdict)
    assert.equal("RESULT_DISAGREE", d.code)
    assert.equal(0.8, d.arg_agreement)
    assert.equal(0.4, d.result_agreement)
    assert.same({ server = "sb", name = "lookup" }, d.quarantined[1])
    assert.is_table(e:determinism("sb", "lookup").quarantined)
    -- the quarantine outranks the plan's recorded "verified": a later
    -- fabricated-looking plan on this tool is no longer rejected
    p = plan("lookup", args_with(1, 10), results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, true
    assert.equal("DETERMINISM_UNVERIFIED", e:classify(p).code)
  end)

  it("keeps the strict '<' at result_quarantine: exactly 0.50 is RESULT_UNSTABLE", function()
    local p = plan("lookup", args_with(8, 10), results_with(5, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal(0.5, d.result_agreement)
    assert.equal("RESULT_UNSTABLE", d.code)
    assert.is_nil(d.quarantined)
  end)

  it("defers results between the two thresholds (RESULT_UNSTABLE) and accepts at result_accept", function()
    local p = plan("lookup", args_with(8, 10), results_with(7, 10))
    p.tool.deterministic, p.tool.verified = true, true
    assert.equal("RESULT_UNSTABLE", engine():classify(p).code)
    p = plan("lookup", args_with(8, 10), results_with(8, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal("accept", d.verdict)
    assert.is_nil(d.code)
    assert.equal(0.8, d.result_agreement)
  end)

  it("accepts a nondeterministic tool on agreeing arguments whatever its results", function()
    local d = classify(engine(), "now", args_with(9, 10, "tz"), results_with(1, 10))
    assert.equal("accept", d.verdict)
    assert.equal(0.1, d.result_agreement)
  end)

  it("never rejects on result disagreement alone", function()
    local keys = { lookup = "user_id", now = "tz", fetch = "url" }
    for _, tool in ipairs({ "lookup", "now", "fetch" }) do
      for r = 1, 10 do
        local p = plan(tool, args_with(10, 10, keys[tool]), results_with(r, 10))
        p.tool.verified = true
        assert.not_equal("reject", engine():classify(p).verdict, tool .. " r=" .. r)
      end
    end
  end)

  it("defers arguments between the thresholds (ARG_UNSTABLE)", function()
    local p = plan("lookup", args_with(7, 10), results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal(0.7, d.arg_agreement)
    assert.equal("ARG_UNSTABLE", d.code)
  end)

  it("uses undeclared determinism like declared-nondeterministic for rejects but checks results", function()
    local d = classify(engine(), "fetch", { { url = "a" }, { url = "a" }, { url = "a" }, { url = "a" }, { url = "a" } },
      results_with(1, 5))
    assert.equal("RESULT_UNSTABLE", d.code) -- not RESULT_DISAGREE: fetch is not declared deterministic
  end)

  it("takes every threshold from the policy", function()
    local p = plan("lookup", args_with(6, 10), results_with(6, 10))
    p.tool.deterministic, p.tool.verified = true, true
    assert.equal("ARG_UNSTABLE", engine():classify(p).code)
    assert.equal("accept", engine({ arg_accept = 0.6, result_accept = 0.6 }):classify(p).verdict)
    assert.equal("INSUFFICIENT_SAMPLES", engine({ min_samples = 11 }):classify(p).code)
  end)
end)

describe("which argument was made up", function()
  it("points at the fabricated key", function()
    local args = {}
    for i = 1, 10 do args[i] = { user_id = "u" .. i, path = "/srv/a", limit = 5 } end
    local p = plan("lookup", args, results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal("ARG_DISAGREE", d.code)
    assert.equal("/user_id", d.disagreeing[1].pointer)
    assert.equal(0.1, d.disagreeing[1].agreement)
    for _, dp in ipairs(d.disagreeing) do assert.not_equal("/path", dp.pointer) end
  end)
end)

describe("canonical arguments", function()
  local verified = function(p) p.tool.deterministic, p.tool.verified = true, true; return p end

  it("count identical arguments and results in another key order as agreeing", function()
    local args, results = {}, {}
    for i = 1, 5 do
      args[i] = i % 2 == 0 and '{"limit":5,"user_id":"u1"}' or '{"user_id":"u1","limit":5.0}'
      results[i] = i % 2 == 0 and '{"a":1,"b":[1,2]}' or '{"b":[1.0,2],"a":1}'
    end
    local samples = {}
    for i = 1, 5 do samples[i] = string.format('{"arguments":%s,"result":%s,"epoch":"e"}', args[i], results[i]) end
    local text = '{"plan_id":"k","tool":{"server":"sb","name":"lookup","deterministic":true,"verified":true},'
      .. '"samples":[' .. table.concat(samples, ",") .. "]}"
    local d = engine():classify(text)
    assert.equal("accept", d.verdict)
    assert.equal(1, d.arg_agreement)
    assert.equal(1, d.result_agreement)
  end)

  it("normalize paths lexically, without touching the filesystem", function()
    local paths = { "/srv/app/config.yaml", "/srv//app/./config.yaml", "/srv/app/../app/config.yaml",
                    "/srv/app/config.yaml/", "/srv/./app//config.yaml" }
    local args = {}
    for i, pth in ipairs(paths) do args[i] = { path = pth } end
    local d = engine():classify(verified(plan("lookup", args, results_with(5, 5))))
    assert.equal(1, d.arg_agreement)
    assert.equal("accept", d.verdict)
    args[5] = { path = "/srv/app/other.yaml" }
    d = engine():classify(verified(plan("lookup", args, results_with(5, 5))))
    assert.equal(0.8, d.arg_agreement)
  end)

  it("trim and lower where the schema says, and nowhere else", function()
    local args = { { team = "Payments" }, { team = " payments " }, { team = "PAYMENTS\n" }, { team = "payments" },
                   { team = "payments" } }
    assert.equal(1, engine():classify(verified(plan("lookup", args, results_with(5, 5)))).arg_agreement)
    args = { { user_id = "U1" }, { user_id = "u1" }, { user_id = "u1" }, { user_id = "u1" }, { user_id = "u1" } }
    assert.equal(0.8, engine():classify(verified(plan("lookup", args, results_with(5, 5)))).arg_agreement)
    args = { { tags = { "A", "b" } }, { tags = { "a", "B" } }, { tags = { "a", "b" } }, { tags = { "a", "b" } },
             { tags = { "a", "b" } } }
    assert.equal(1, engine():classify(verified(plan("lookup", args, results_with(5, 5)))).arg_agreement)
  end)

  it("digest the representative's arguments as written, normalized or not (args_digest)", function()
    -- lookup normalizes paths: the samples agree, the digest is of the first as it stands
    local args = { { path = "/srv//app/./config.yaml" }, { path = "/srv/app/config.yaml" },
                   { path = "/srv/app/config.yaml" }, { path = "/srv/app/config.yaml" },
                   { path = "/srv/app/config.yaml" } }
    local d = engine():classify(verified(plan("lookup", args, results_with(5, 5))))
    assert.equal(1, d.arg_agreement)
    assert.equal(toolgate.hash('{"path":"/srv//app/./config.yaml"}'), d.args_digest)
    -- fetch normalizes nothing: the digest is the one the samples were counted by
    args = { { url = "https://a.example/x" }, { url = "https://b.example/y" }, { url = "https://b.example/y" },
             { url = "https://b.example/y" }, { url = "https://a.example/x" } }
    d = engine():classify(verified(plan("fetch", args, results_with(5, 5))))
    assert.equal(0.6, d.arg_agreement)
    assert.equal(toolgate.hash('{"url":"https://b.example/y"}'), d.args_digest)
    assert.equal(toolgate.hash('{"url":"https://b.example/y"}'), d.binding.args_digest)
  end)

  it("resolve IDs through the policy's alias table", function()
    local args = { { account = "acme corp" }, { account = "ACME" }, { account = " acme-corp" }, { account = "acct_1" },
                   { account = "acct_1" } }
    local d = engine():classify(verified(plan("lookup", args, results_with(5, 5))))
    assert.equal(1, d.arg_agreement)
    args[5] = { account = "globex" }
    d = engine():classify(verified(plan("lookup", args, results_with(5, 5))))
    assert.equal(0.8, d.arg_agreement)
    assert.equal("/account", d.disagreeing[1].pointer)
  end)
end)

describe("ID resolver functions", function()
  local function fn_engine(resolver)
    return assert(toolgate.new({
      policy = { name = "t", version = "1", stages = { "rung", "consistency" }, resolvers = { accounts = resolver } },
      registry = { DATA .. "consistency.json" },
    }))
  end
  local function accounts(list)
    local args = {}
    for i, a in ipairs(list) do args[i] = { account = a } end
    local p = plan("lookup", args, results_with(#list, #list))
    p.tool.deterministic, p.tool.verified = true, true
    return p
  end

  it("resolve IDs through a policy's Lua function, after the earlier normalizations", function()
    local asked = {}
    local e = fn_engine(function(id)
      asked[#asked + 1] = id
      return (id:lower():gsub("[^a-z]", ""))
    end)
    local d = e:classify(accounts({ " ACME Corp", "acme-corp", "Acme corp ", "ACMECORP", "acme_corp" }))
    assert.equal(1, d.arg_agreement)
    assert.equal("accept", d.verdict)
    assert.equal(5, #asked) -- once per distinct trimmed ID
    for _, id in ipairs(asked) do assert.not_matches("^%s", id) end -- trim came first
    d = e:classify(accounts({ "acme", "acme", "acme", "acme", "globex" }))
    assert.equal(0.8, d.arg_agreement)
  end)

  it("fail closed when the function errors or answers something other than a string", function()
    local d = fn_engine(function() error("directory down") end):classify(accounts({ "a", "a", "a", "a", "a" }))
    assert.equal("reject", d.verdict)
    assert.equal("POLICY_ERROR", d.code)
    assert.matches("directory down", d.message)
    d = fn_engine(function() return 42 end):classify(accounts({ "a", "a", "a", "a", "a" }))
    assert.equal("POLICY_ERROR", d.code)
    d = fn_engine(function() while true do end end):classify(accounts({ "a", "a", "a", "a", "a" }))
    assert.equal("POLICY_ERROR", d.code)
  end)
end)

describe("the rung inside a plan", function()
  it("rejects a plan whose representative sample calls a fabricated tool, whatever the agreement", function()
    local p = plan("lookup_user", args_with(10, 10), results_with(10, 10))
    local d = engine():classify(p)
    assert.equal("reject", d.verdict)
    assert.equal("H1", d.code)
    assert.equal("rung", d.stage)
    assert.equal(1, d.arg_agreement)
  end)

  it("lists a non-modal sample that fails the rung as one more disagreeing sample", function()
    local args = args_with(9, 10)
    args[10] = { user_id = "u1", limit = "five" }
    local p = plan("lookup", args, results_with(10, 10))
    p.tool.deterministic, p.tool.verified = true, true
    local d = engine():classify(p)
    assert.equal("accept", d.verdict)
    assert.equal(0.9, d.arg_agreement)
    assert.equal(10, d.rung_failures[1].sample)
    assert.equal("H3", d.rung_failures[1].code)
    assert.equal("/limit", d.rung_failures[1].path)
  end)

  it("rejects with the rung's code when the representative sample fails it", function()
    local args = {}
    for i = 1, 6 do args[i] = { user_id = "u1", extra = true } end
    local d = engine():classify(plan("lookup", args, results_with(6, 6)))
    assert.equal("H2", d.code)
    assert.equal("/extra", d.path)
  end)
end)

describe("multi-step plans", function()
  local function sample(q, id, results, epoch)
    return {
      epoch = epoch or "e1",
      calls = { { server = "sb", name = "search", arguments = { q = q } },
                { server = "sb", name = "open", arguments = { id = id } } },
      results = results or { { hits = { "d1" } }, { title = "Doc 1" } },
    }
  end

  it("measure agreement on the whole sequence and on each step", function()
    local samples = {}
    for i = 1, 10 do samples[i] = sample("report", i <= 8 and "d1" or ("d" .. i)) end
    local d = engine():classify({ plan_id = "m1", samples = samples })
    assert.equal(0.8, d.arg_agreement)
    assert.equal(1, d.steps[1].arg_agreement)
    assert.equal(0.8, d.steps[2].arg_agreement)
    assert.equal("/1/arguments/id", d.disagreeing[1].pointer)
  end)

  it("reject a fabricated step only when every tool is verified deterministic", function()
    local e = engine()
    for _, tool in ipairs({ "search", "open" }) do
      assert.equal("verified", e:probe("sb/" .. tool, tool == "search" and { q = "x" } or { id = "x" },
        function() return { ok = true } end, "e1").verdict)
    end
    local samples = {}
    for i = 1, 10 do samples[i] = sample("report", "made-up-" .. i) end
    local d = e:classify({ plan_id = "m2", samples = samples })
    assert.equal("ARG_DISAGREE", d.code)
    assert.equal(0.1, d.arg_agreement)
    assert.is_nil(d.tool) -- a plan of several tools names none
  end)

  it("quarantine the step whose deterministic tool's results disagree", function()
    local e = engine()
    local samples = {}
    for i = 1, 10 do samples[i] = sample("report", "d1", { { hits = { "d1" } }, { title = "v" .. (i % 5) } }) end
    local d = e:classify({ plan_id = "m3", samples = samples })
    assert.equal("RESULT_DISAGREE", d.code)
    assert.same({ server = "sb", name = "open" }, d.quarantined[1])
    assert.equal(1, #d.quarantined)
    assert.is_nil(e:determinism("sb", "search"))
  end)
end)

describe("determinism probes", function()
  it("verify, quarantine on a failed probe, and lift the quarantine in a new epoch", function()
    local e = engine()
    local args = { user_id = "u1" }
    local r = e:probe("sb/lookup", args, function() return { rows = 1 } end, "e1")
    assert.equal("verified", r.verdict)
    assert.equal(r.hashes[1], r.hashes[2])
    assert.equal('"e1"', e:determinism("sb", "lookup").verified_epoch) -- epochs are kept canonical

    local p = plan("lookup", args_with(1, 10), results_with(10, 10))
    assert.equal("ARG_DISAGREE", e:classify(p).code) -- verified by the probe in e1
    p.samples[1].epoch = "e2"
    for _, s in ipairs(p.samples) do s.epoch = "e2" end
    assert.equal("DETERMINISM_UNVERIFIED", e:classify(p).code) -- verified in e1, not e2

    local n = 0
    r = e:probe("sb/lookup", args, function() n = n + 1; return { rows = n } end, "e2")
    assert.equal("quarantined", r.verdict)
    assert.is_table(e:determinism("sb", "lookup").quarantined)
    e:probe("sb/lookup", args, function() return { rows = 1 } end, "e2")
    assert.is_table(e:determinism("sb", "lookup").quarantined) -- same epoch: not lifted
    r = e:probe("sb/lookup", args, function() return '{"rows":1}' end, "e3")
    assert.equal("verified", r.verdict)
    assert.is_nil(e:determinism("sb", "lookup").quarantined) -- a pass in a new epoch lifts it
  end)

  it("quarantine on a probe that errors, and refuse to probe invalid arguments", function()
    local e = engine()
    local r = e:probe("sb/lookup", {}, function() error("sandbox down") end, "e1")
    assert.equal("quarantined", r.verdict)
    assert.matches("sandbox down", r.reason)
    r = e:probe("sb/lookup", { limit = "x" }, function() return 1 end, "e1")
    assert.equal("invalid", r.verdict)
    assert.equal("H3", r.code)
    assert.has_error(function() e:probe("sb/lookup", {}, function() end) end) -- no epoch
  end)
end)

describe("sample counts", function()
  for _, n in ipairs({ 1, 4, 5 }) do
    it("n = " .. n, function()
      local p = plan("lookup", args_with(n, n), results_with(n, n))
      p.tool.deterministic, p.tool.verified = true, true
      local d = engine():classify(p)
      assert.equal(n, d.n)
      if n < 5 then
        assert.equal("INSUFFICIENT_SAMPLES", d.code)
      else
        assert.equal("accept", d.verdict)
      end
    end)
  end

  it("n = 0 defers", function()
    local d = engine():classify({ plan_id = "z", tool = { server = "sb", name = "lookup" },
      samples = toolgate.empty_array })
    assert.equal("INSUFFICIENT_SAMPLES", d.code)
  end)

  it("n = 10,000", function()
    local parts = {}
    for i = 1, 10000 do
      parts[i] = string.format('{"arguments":{"user_id":"%s"},"result":{"v":%d},"epoch":"e"}',
        i <= 9000 and "u1" or ("u" .. i), i <= 9500 and 1 or i)
    end
    local text = '{"plan_id":"big","tool":{"server":"sb","name":"lookup","deterministic":true,"verified":true},'
      .. '"samples":[' .. table.concat(parts, ",") .. "]}"
    local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency" } },
      registry = { DATA .. "consistency.json" }, limits = { max_input_bytes = 8 * 1024 * 1024 } }))
    local d = e:classify(text)
    assert.equal(10000, d.n)
    assert.equal(0.9, d.arg_agreement)
    assert.equal(0.95, d.result_agreement)
    assert.equal(1001, d.distinct_args)
    assert.equal("accept", d.verdict)
  end)
end)

describe("malformed plans", function()
  it("are rejected, never accepted", function()
    local e = engine()
    for _, text in ipairs({ "[]", "{}", '{"samples":{}}', '{"tool":{},"samples":[]}',
        '{"tool":{"name":"lookup"},"samples":[1]}', '{"tool":{"name":"lookup"},"samples":[{"result":1}]}',
        '{"samples":[{"calls":[{"arguments":{}}]}]}', "{", '{"samples":[],"samples":[]}' }) do
      local d = e:classify(text)
      assert.equal("reject", d.verdict, text)
    end
  end)
end)

-- generated_plans(seed, count, samples) -> plans file, registry file, and an
-- engine of the rung and consistency over that registry that forgets
-- between plans (as the Python reference does)
local function generated_plans(seed, count, samples)
  assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
  local plans, reg = h.tmpname(".jsonl"), h.tmpname(".json")
  local code, out, err = h.run(string.format("python3 %s/bench/gen_plans.py --seed %d --count %d --samples %d "
    .. "--registry-out %s", h.root, seed, count, samples, reg))
  assert.equal(0, code, err)
  h.write_file(plans, out)
  local stateless = { get = function() return nil end, verified = function() end,
                      quarantine = function() end, records = function() return {} end }
  local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency" } },
    registry = { reg }, state = stateless }))
  return plans, reg, e
end

describe("a differential check against the seed's algorithm in Python", function()
  it("reaches the same verdict, code and agreements on 1,000 generated plans", function()
    local plans, reg, e = generated_plans(11, 1000, 6)
    local rcode, ref, rerr = h.run("python3 " .. h.root .. "/bench/peers/seed_reference.py " .. plans)
    assert.equal(0, rcode, rerr)
    local cjson = require "cjson"
    local n, differ, first = 0, 0, nil
    local ref_lines = {}
    for line in ref:gmatch("[^\n]+") do ref_lines[#ref_lines + 1] = cjson.decode(line) end
    local seen = {}
    for line in io.lines(plans) do
      n = n + 1
      local d = e:classify(line)
      local r = ref_lines[n]
      local rcode_ = r.code ~= cjson.null and r.code or nil
      local same = d.verdict == r.verdict and d.code == rcode_
      if r.arg_agreement ~= cjson.null then
        same = same and math.abs(d.arg_agreement - r.arg_agreement) < 1e-9
          and math.abs(d.result_agreement - r.result_agreement) < 1e-9
      end
      seen[d.code or "accept"] = true
      if not same then
        differ = differ + 1
        first = first or string.format("plan %s: toolgate %s %s (%.3f/%.3f), reference %s %s", tostring(r.plan_id),
          d.verdict, tostring(d.code), d.arg_agreement or -1, d.result_agreement or -1, r.verdict, tostring(rcode_))
      end
    end
    os.remove(plans)
    os.remove(reg)
    assert.equal(1000, n)
    assert.equal(0, differ, first)
    for _, c in ipairs({ "accept", "ARG_DISAGREE", "DETERMINISM_UNVERIFIED", "RESULT_DISAGREE", "RESULT_UNSTABLE",
        "ARG_UNSTABLE", "EPOCH_NOT_FIXED" }) do
      assert.is_true(seen[c], "the corpus exercises " .. c)
    end
  end)
end)

-- The core parses a plan's repeated bytes once (agreeing samples, their
-- arguments and results share one parse).  The same plans with whitespace
-- that differs from sample to sample repeat nothing: every decision must
-- come out byte for byte the same.
describe("samples that repeat their bytes", function()
  -- text with i spaces after every '{' and '[' outside strings
  local function spaced(text, i)
    local out, in_string, k, pad = {}, false, 1, string.rep(" ", i)
    while k <= #text do
      local c = text:sub(k, k)
      out[#out + 1] = c
      if in_string then
        if c == "\\" then
          out[#out + 1] = text:sub(k + 1, k + 1)
          k = k + 1
        elseif c == '"' then
          in_string = false
        end
      elseif c == '"' then
        in_string = true
      elseif c == "{" or c == "[" then
        out[#out + 1] = pad
      end
      k = k + 1
    end
    return table.concat(out)
  end

  -- the plan with sample i (from 1) spaced by i
  local function unrepeated(line)
    local head, samples, tail = line:match('^(.-"samples":%[)(.*)(%].-)$')
    assert(head, "a generated plan: " .. line:sub(1, 80))
    local parts, depth, in_string, start, k = {}, 0, false, 1, 1
    while k <= #samples do
      local c = samples:sub(k, k)
      if in_string then
        if c == "\\" then k = k + 1 elseif c == '"' then in_string = false end
      elseif c == '"' then
        in_string = true
      elseif c == "{" or c == "[" then
        depth = depth + 1
      elseif c == "}" or c == "]" then
        depth = depth - 1
      elseif c == "," and depth == 0 then
        parts[#parts + 1] = spaced(samples:sub(start, k - 1), #parts + 1)
        start = k + 1
      end
      k = k + 1
    end
    parts[#parts + 1] = spaced(samples:sub(start), #parts + 1)
    return head .. table.concat(parts, ",") .. tail
  end

  it("are decided as the same plans with nothing repeated, on 600 generated plans", function()
    local plans, reg, e = generated_plans(12, 600, 5)
    local n, differ, first = 0, 0, nil
    for line in io.lines(plans) do
      n = n + 1
      local other = unrepeated(line)
      assert.are_not.equal(line, other)
      local a, b = e:classify(line):json(), e:classify(other):json()
      if a ~= b then
        differ = differ + 1
        first = first or ("line " .. n .. ":\n" .. a .. "\n" .. b)
      end
    end
    os.remove(plans)
    os.remove(reg)
    assert.equal(600, n)
    assert.equal(0, differ, first)
  end)
end)

describe("classify in the core", function()
  local function plan_of(n, agree, ragree, extra)
    local samples = {}
    for i = 1, n do
      samples[i] = { arguments = { user_id = i <= agree and "u" or ("x" .. i) }, result = i <= ragree and 0 or i,
                     epoch = "e1" }
    end
    local p = { plan_id = "p", tool = { server = "sb", name = "lookup", deterministic = true, verified = true },
                samples = samples }
    for k, v in pairs(extra or {}) do p[k] = v end
    return p
  end

  it("refuses a single-tool plan whose check cannot finish with the limit's code, as a plan of several calls", function()
    -- before, the single-tool plan said BAD_PLAN at "decode"; a plan of
    -- several calls said the rung could not finish, with the limit's code
    local reg = { { label = "re.json", text = [[{"toolgate":1,"server":"t","tools":[{"name":"x","input_schema":
      {"type":"object","properties":{"s":{"type":"string","pattern":"^(a|aa)+$"}}}}]}]] } }
    local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency" } },
      registry = reg, limits = { regex_match_limit = 50 } }))
    local args = { s = string.rep("a", 24) .. "b" }
    local samples = {}
    for i = 1, 5 do samples[i] = { arguments = args, result = 1, epoch = "e" } end
    local single = e:classify({ plan_id = "s", tool = { server = "t", name = "x" }, samples = samples })
    for i = 1, 5 do samples[i] = { calls = { { server = "t", name = "x", arguments = args } }, epoch = "e" } end
    local multi = e:classify({ plan_id = "m", samples = samples })
    for _, d in ipairs({ single, multi }) do
      assert.equal("reject", d.verdict)
      assert.equal("rung", d.stage)
      assert.equal("REGEX_LIMIT", d.code)
      assert.matches("^sample 1: the rung could not finish its check: ", d.message)
    end
  end)

  it("writes two decimals by one rule in both bindings: the binary value, ties to even", function()
    local script = h.tmpname(".lua")
    h.write_file(script, string.format([==[
      local toolgate = require "toolgate"
      local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency" } },
        registry = { %q } }))
      local out = {}
      for _, case in ipairs({ { 8, 1 }, { 8, 3 }, { 8, 5 }, { 8, 7 }, { 40, 1 }, { 200, 1 }, { 16, 2 } }) do
        local samples = {}
        for i = 1, case[1] do
          samples[i] = string.format('{"arguments":{"user_id":"%%s"},"result":1,"epoch":"e"}',
            i <= case[2] and "u" or ("x" .. i))
        end
        local d = e:classify('{"plan_id":' .. case[1] .. ',"tool":{"server":"sb","name":"lookup"},"samples":['
          .. table.concat(samples, ",") .. "]}")
        out[#out + 1] = d:json()
      end
      io.write(table.concat(out, "\n"), "\n")
    ]==], DATA .. "consistency.json"))
    local mine, theirs = h.run_both(script)
    os.remove(script)
    assert.equal(mine, theirs)
    assert.matches("argument agreement 0.12 is below 0.20", mine, 1, true) -- 1/8, not LuaJIT's 0.13
    assert.matches("argument agreement 0.38 is between", mine, 1, true) -- 3/8
    assert.matches("argument agreement 0.62 is between", mine, 1, true) -- 5/8
    assert.matches("argument agreement 0.03 is below", mine, 1, true) -- 1/40 = 0.025
    assert.matches("argument agreement 0.01 is below", mine, 1, true) -- 1/200 = 0.005
  end)

  it("names a numeric plan id in a quarantine reason as the decision writes it", function()
    local e = engine()
    local d = e:classify(plan_of(10, 10, 1, { plan_id = 5 }))
    assert.equal("RESULT_DISAGREE", d.code)
    assert.equal("RESULT_DISAGREE in plan 5: result agreement 0.10", e:determinism("sb", "lookup").quarantined.reason)
  end)

  it("asks a store of the engine's own, in input order, and gives it the quarantines", function()
    local calls = {}
    local store = {
      get = function(_, server, name)
        calls[#calls + 1] = "get " .. server .. "/" .. name
        if name == "search" then return { verified_epoch = '"e1"' } end
        return nil
      end,
      verified = function() end,
      quarantine = function(_, server, name, reason, epoch)
        calls[#calls + 1] = "quarantine " .. server .. "/" .. name .. " " .. reason .. " " .. tostring(epoch)
      end,
      records = function() return {} end,
    }
    local e = assert(toolgate.new({ policy = { name = "t", version = "1", stages = { "rung", "consistency" } },
      registry = { DATA .. "consistency.json" }, state = store }))
    local function multi(q, n) -- its second call's results disagree
      local s = {}
      for i = 1, n do
        s[i] = { epoch = "e1", calls = { { server = "sb", name = "search", arguments = { q = q } },
                                         { server = "sb", name = "open", arguments = { id = "d" } } },
                 results = { 1, i } }
      end
      return { plan_id = q, samples = s }
    end
    local texts = {}
    for _, p in ipairs({ plan_of(10, 10, 1, { plan_id = "a" }), multi("b", 10), plan_of(3, 3, 3) }) do
      texts[#texts + 1] = assert(require("toolgate.value").encode(p))
    end
    local out = {}
    local sent
    e:classify_stream(function() if sent then return nil end sent = true return table.concat(texts, "\n") end,
      function(...) out[#out + 1] = table.concat({ ... }) end)
    assert.same({
      "get sb/lookup",
      "quarantine sb/lookup RESULT_DISAGREE in plan a: result agreement 0.10 \"e1\"",
      "get sb/search", "get sb/open",
      "quarantine sb/open RESULT_DISAGREE in plan b: result agreement 0.10 \"e1\"",
      "get sb/lookup",
    }, calls)
    local lines = {}
    for l in table.concat(out):gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines)
    for i, t in ipairs(texts) do
      calls = {}
      assert.equal(e:classify(t, nil, i):json(), lines[i]) -- the stream's bytes, plan by plan
    end
  end)

  it("gives engine:classify's bytes, plan by plan, when it reads a stream in chunks", function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    local reg = h.tmpname(".json")
    local code, text, err = h.run(string.format("python3 %s/bench/gen_plans.py --seed 5 --count 400 --samples 8 "
      .. "--registry-out %s", h.root, reg))
    assert.equal(0, code, err)
    local function new() return assert(toolgate.new({ policy = { name = "t", version = "1",
      stages = { "rung", "consistency" } }, registry = { reg } })) end
    local streamed, one = new(), new()
    local out, pos = {}, 1
    streamed:classify_stream(function()
      if pos > #text then return nil end
      local piece = text:sub(pos, pos + 9999) -- pieces that cut lines anywhere
      pos = pos + 10000
      return piece
    end, function(...) out[#out + 1] = table.concat({ ... }) end)
    local expected, n = {}, 0
    for line in text:gmatch("[^\n]+") do
      n = n + 1
      expected[n] = one:classify(line, nil, n):json() .. "\n"
    end
    os.remove(reg)
    assert.equal(400, n)
    assert.equal(table.concat(expected), table.concat(out))
  end)
end)
