-- toolgate.experiment and the core's sweep (tg_sweep): at every grid point
-- a sweep gives each plan exactly the verdict and code classify gives it
-- under a policy with those settings, quarantines carried over in input
-- order (the seed demo's batch, bench/gen_plans.py's, plans of several
-- calls with a gate that objects, malformed plans); its confusion counts
-- match a Python reference written here, from the plans and the settings
-- alone; grids and objectives parse or say why.
local h = require "helpers"
local toolgate = require "toolgate"
local experiment = require "toolgate.experiment"
local cjson = require "cjson"

local function reader(text)
  local done = false
  return function()
    if done then return nil end
    done = true
    return text
  end
end

-- An engine for classify or sweep: policy settings, stages, registry.
local function engine(consistency, stages, registry, context)
  return assert(toolgate.new({
    policy = { name = "sweep-spec", version = "1", stages = stages or { "rung", "consistency" },
               consistency = consistency },
    registry = { registry }, context = context }))
end

local GRID = "arg_reject=0.1|0.2|0.35,arg_accept=0.6|0.8,result_quarantine=0.3|0.5,min_samples=5|8,quarantine=on|off"

-- Every grid point: the sweep's verdicts and codes against classify's, plan
-- for plan, on a fresh engine (a fresh store) per point.
local function same_as_classify(text, registry, stages, context)
  local exp = assert(experiment.load(engine(nil, stages, registry, context), reader(text)))
  local axes = assert(experiment.parse_grid(GRID))
  local plans = h.lines_of(text)
  assert.equal(#plans, exp.n)
  local points, codes_seen = 0, {}
  for _, p in ipairs(experiment.points(axes)) do
    local vs, codes = assert(exp:verdicts(p))
    local s = exp:settings(p)
    local e = engine({ min_samples = s.min_samples, arg_accept = s.arg_accept, arg_reject = s.arg_reject,
                       result_accept = s.result_accept, result_quarantine = s.result_quarantine,
                       quarantine = s.quarantine }, stages, registry, context)
    local out = {}
    assert(e:classify_stream(reader(text), function(...) out[#out + 1] = table.concat({ ... }) end, nil, 1))
    local decisions = h.lines_of(table.concat(out))
    assert.equal(#plans, #decisions)
    for i, line in ipairs(decisions) do
      local d = cjson.decode(line)
      if d.verdict ~= vs[i] or (d.code or "") ~= codes[i] then
        error(string.format("plan %d at %s=%s %s=%s rq=%s ms=%s q=%s: classify %s %s, sweep %s %s", i,
          "arg_reject", p.arg_reject, "arg_accept", p.arg_accept, p.result_quarantine, p.min_samples,
          tostring(p.quarantine), d.verdict, tostring(d.code), vs[i], codes[i]))
      end
      codes_seen[codes[i]] = true
    end
    points = points + 1
  end
  assert.equal(48, points)
  return codes_seen, exp
end

local function gen_plans(seed, count, samples, registry)
  local code, out, err = h.run(string.format("python3 %s/bench/gen_plans.py --seed %d --count %d --samples %d "
    .. "--registry-out %s", h.root, seed, count, samples, h.shell_quote(registry)))
  assert.equal(0, code, err)
  return out
end

-- The reference: labels the generated plans (fabricated: the generator's
-- "fabricated" category; every 17th plan unlabeled, every 29th "unsure"),
-- and counts, per grid point, verdict against label with the decision
-- table of DESIGN 1.2 and quarantines carried in input order.  Python 3's
-- standard library only; nothing here is read from toolgate.
local REFERENCE = [==[
import itertools, json, sys

def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))

def share(keys):
    return max(keys.count(k) for k in set(keys)) / len(keys)

def label(src, dst):
    out = []
    for i, line in enumerate(l for l in open(src) if l.strip()):
        p = json.loads(line)
        if i % 17 == 16:
            pass
        elif i % 29 == 28:
            p["label"] = "unsure"
        else:
            p["label"] = "fabricated" if p.get("category") == "fabricated" else "correct"
        out.append(json.dumps(p))
    open(dst, "w").write("\n".join(out) + "\n")

def measure(p):
    tool = p["tool"]
    samples = p["samples"]
    epochs = [canon(x["epoch"]) if "epoch" in x else None for x in samples]
    fixed = p["epoch_fixed"] if isinstance(p.get("epoch_fixed"), bool) else \
        (None not in epochs and all(e == epochs[0] for e in epochs))
    return {"tool": tool, "key": (tool.get("server") or "", tool["name"]), "n": len(samples), "fixed": fixed,
            "a": share([canon(x["arguments"]) for x in samples]),
            "r": share([canon(x.get("result")) for x in samples]), "label": p.get("label")}

def run(plans, contract, s):
    counts = {v: {"correct": 0, "fabricated": 0, "none": 0, "other": 0} for v in ("accept", "reject", "defer")}
    held = set()
    for p in plans:
        tool, key, n, fixed, a, r = p["tool"], p["key"], p["n"], p["fixed"], p["a"], p["r"]
        det = tool.get("deterministic")
        ver = det is True and key not in held and tool.get("verified", False) is not False
        if n < s["min_samples"] or not fixed:
            v = "defer"
        elif a < s["arg_reject"]:
            v = "reject" if det is True and ver else "defer"
        elif a >= s["arg_accept"]:
            if det is False:
                v = "accept"
            elif r < s["result_quarantine"] and det is True:
                v = "defer"
                if s["quarantine"] and contract[key] is not False:
                    held.add(key)
            elif r < s["result_accept"]:
                v = "defer"
            else:
                v = "accept"
        else:
            v = "defer"
        lab = p.get("label")
        lab = "none" if lab is None else lab if lab in ("correct", "fabricated") else "other"
        counts[v][lab] += 1
    return counts

if sys.argv[1] == "label":
    label(sys.argv[2], sys.argv[3])
else:
    plans = [measure(json.loads(l)) for l in open(sys.argv[2]) if l.strip()]
    reg = json.load(open(sys.argv[3]))
    contract = {(t.get("server") or "", t["name"]): t.get("deterministic") for t in reg["tools"]}
    points = json.load(open(sys.argv[4]))
    print(json.dumps([run(plans, contract, s) for s in points]))
]==]

local MULTI = [[{"toolgate": 1, "tools": [
  {"server": "s", "name": "low", "risk": "low", "deterministic": true, "input_schema": {"type": "object"}},
  {"server": "s", "name": "high", "risk": "high", "deterministic": true, "input_schema": {"type": "object"}},
  {"server": "s", "name": "free", "risk": "low", "deterministic": false, "input_schema": {"type": "object"}},
  {"server": "s", "name": "strict", "risk": "low", "input_schema": {"type": "object",
    "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]}]]

-- Plans of several calls on the registry MULTI, malformed ones between them.
local function multi_plans()
  local rng = 12345
  local function rand(n)
    rng = rng * 16807 % 2147483647 -- exact in doubles too (LuaJIT): the product stays below 2^46
    return rng % n + 1
  end
  local tools = { "low", "high", "free", "strict" }
  local lines = {}
  for i = 1, 150 do
    local steps, n = rand(3), rand(10) + 2
    local names = {}
    for k = 1, steps do names[k] = tools[rand(4)] end
    local distinct, rdistinct = rand(n), rand(n)
    local samples = {}
    for j = 1, n do
      local calls, results = {}, {}
      for k = 1, steps do
        calls[k] = string.format('{"server":"s","name":"%s","arguments":{"n":%d}}', names[k],
          j <= n - distinct + 1 and 1 or j)
        results[k] = tostring(j <= n - rdistinct + 1 and 0 or j)
      end
      samples[j] = string.format('{"epoch":"%s","calls":[%s],"results":[%s]}', (i % 13 == 0 and j == 2) and "b" or "a",
        table.concat(calls, ","), table.concat(results, ","))
    end
    local label = i % 3 == 0 and ',"label":"fabricated"' or ',"label":"correct"'
    lines[#lines + 1] = string.format('{"plan_id":"m%d","samples":[%s]%s}', i, table.concat(samples, ","), label)
    if i % 25 == 0 then -- malformed plans between them
      lines[#lines + 1] = '{"plan_id":"bad","samples":{}}'
      lines[#lines + 1] = '{"plan_id":"trunc","samples":['
      lines[#lines + 1] = '{"plan_id":"none","samples":[]}'
      lines[#lines + 1] = '{"plan_id":"nameless","samples":[{"calls":[{"arguments":{}}]}]}'
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

describe("a sweep", function()
  local dir

  setup(function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    dir = h.tmpname(".sweep")
    assert.equal(0, (h.run("mkdir -p " .. h.shell_quote(dir))))
    h.write_file(dir .. "/reference.py", REFERENCE)
  end)

  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  it("gives classify's verdict and code at every grid point on the seed demo's batch", function()
    local code, _, err = h.run(string.format("python3 %s/examples/seed-demo/generate.py --plans 400 --out %s",
      h.root, h.shell_quote(dir .. "/seed")))
    assert.equal(0, code, err)
    local seen, exp = same_as_classify(h.read_file(dir .. "/seed/plans.jsonl"), dir .. "/seed/registry.json")
    for _, c in ipairs({ "", "ARG_DISAGREE", "H3", "RESULT_DISAGREE", "RESULT_UNSTABLE", "DETERMINISM_UNVERIFIED",
                         "ARG_UNSTABLE" }) do
      assert.is_true(seen[c], "the batch exercises " .. c)
    end
    -- the demo's labels: the three mis-declared tools, found by a quarantine
    local names = {}
    for _, t in ipairs(exp:misdeclared()) do names[#names + 1] = t.name end
    table.sort(names)
    assert.same({ "read_config", "resolve_user", "search_index" }, names)
    local r = assert(exp:run({}))
    assert.equal(3, #r.quarantined)
    for _, t in ipairs(r.quarantined) do assert.is_false(t.label) end
  end)

  it("gives classify's verdict and code at every grid point on generated plans", function()
    local reg = dir .. "/gen-registry.json"
    local seen = same_as_classify(gen_plans(11, 500, 7, reg), reg)
    for _, c in ipairs({ "", "ARG_DISAGREE", "RESULT_DISAGREE", "RESULT_UNSTABLE", "ARG_UNSTABLE",
                         "EPOCH_NOT_FIXED", "DETERMINISM_UNVERIFIED", "INSUFFICIENT_SAMPLES" }) do
      assert.is_true(seen[c], "the plans exercise " .. c)
    end
  end)

  it("gives classify's verdict and code on plans of several calls, a gate that objects, and malformed plans", function()
    local reg = dir .. "/multi.json"
    h.write_file(reg, MULTI)
    local text = multi_plans()
    local seen = same_as_classify(text, reg, { "rung", "consistency", "gate" },
      { max_risk = "low" })
    for _, c in ipairs({ "", "BAD_PLAN", "INSUFFICIENT_SAMPLES", "EPOCH_NOT_FIXED", "DETERMINISM_UNVERIFIED" }) do
      assert.is_true(seen[c], "the plans exercise " .. c)
    end
    assert.is_true(seen.H4, "the gate decides some plans")
  end)

  it("gives classify's verdict and code when a custom stage, answered in Lua, objects", function()
    local reg = dir .. "/multi.json"
    h.write_file(reg, MULTI)
    local stage = { name = "house_rules", code = "HOUSE_RULE", run = function(call)
      if call.name == "strict" then return false, "strict is retired" end
      if call.name == "free" then return "defer", "free asks a person" end
      return true
    end }
    local seen = same_as_classify(multi_plans(), reg, { "rung", "consistency", stage })
    local all = {}
    for c in pairs(seen) do all[#all + 1] = c end
    table.sort(all)
    assert.is_true(seen.HOUSE_RULE, "the custom stage decides some plans: " .. table.concat(all, " "))
  end)

  it("counts verdict against label as an independent Python reference does, at every grid point", function()
    local reg = dir .. "/ref-registry.json"
    local raw, labeled = dir .. "/raw.jsonl", dir .. "/labeled.jsonl"
    local text = gen_plans(5, 1200, 9, reg)
    h.write_file(raw, text)
    local code, _, err = h.run(string.format("python3 %s/reference.py label %s %s", h.shell_quote(dir),
      h.shell_quote(raw), h.shell_quote(labeled)))
    assert.equal(0, code, err)
    local exp = assert(experiment.load(engine(nil, nil, reg), labeled))
    local axes = assert(experiment.parse_grid("arg_reject=0.05:0.45:0.1,arg_accept=0.5|0.8|1,"
      .. "result_accept=0.6|0.9,result_quarantine=0.2|0.5,min_samples=3|9|10,quarantine=on|off"))
    local points = experiment.points(axes)
    local settings = {}
    for i, p in ipairs(points) do settings[i] = exp:settings(p) end
    local pfile = dir .. "/points.json"
    h.write_file(pfile, toolgate.encode(setmetatable(settings, require("toolgate.value").array_mt)))
    local rcode, out, rerr = h.run(string.format("python3 %s/reference.py count %s %s %s", h.shell_quote(dir),
      h.shell_quote(labeled), h.shell_quote(reg), h.shell_quote(pfile)))
    assert.equal(0, rcode, rerr)
    local ref = require("cjson").decode(out)
    assert.equal(#points, #ref)
    local rejects, quarantines = 0, 0
    for i, p in ipairs(points) do
      local r = assert(exp:run(p))
      for _, v in ipairs({ "accept", "reject", "defer" }) do
        for _, l in ipairs({ "correct", "fabricated", "none", "other" }) do
          if r.counts[v][l] ~= ref[i][v][l] then
            error(string.format("point %d (%s): %s/%s toolgate %d, reference %d", i, toolgate.encode(p), v, l,
              r.counts[v][l], ref[i][v][l]))
          end
        end
      end
      rejects = rejects + r.counts.reject.fabricated + r.counts.reject.correct
      quarantines = quarantines + #r.quarantined
    end
    assert.equal(360, #points)
    assert.is_true(rejects > 0 and quarantines > 0, "the grid rejects and quarantines")
    assert.is_true(exp.labels.none > 0 and exp.labels.other > 0 and exp.labels.fabricated > 0)
  end)

  it("decides with a function of the host's own: the table written in Lua gives run's verdicts without quarantine", function()
    local code, _, err = h.run(string.format("python3 %s/examples/seed-demo/generate.py --plans 400 --seed 3 --out %s",
      h.root, h.shell_quote(dir .. "/own")))
    assert.equal(0, code, err)
    local exp = assert(experiment.load(engine(nil, nil, dir .. "/own/registry.json"), dir .. "/own/plans.jsonl"))
    local fixed = 0
    for _, f in ipairs(exp:features()) do
      if f.fixed then fixed = fixed + 1 end
    end
    assert.is_true(fixed > 0, "some plans are decided before the table (the rung)")
    for _, over in ipairs({ {}, { arg_reject = 0.1 }, { arg_accept = 0.6, result_accept = 0.9 } }) do
      local s = exp:settings(over)
      local own = assert(exp:evaluate(function(f)
        local a, r = f.arg_agreement, f.result_agreement
        if f.n < s.min_samples or not f.epoch_fixed then return "defer" end
        if a < s.arg_reject then return f.deterministic and f.verified and "reject" or "defer" end
        if a >= s.arg_accept then
          if f.nondeterministic then return "accept" end
          if r < s.result_accept then return "defer" end
          return "accept"
        end
        return "defer"
      end))
      over.quarantine = false
      local vs, codes = assert(exp:verdicts(over))
      for i, v in ipairs(vs) do
        assert.equal(v, own.verdicts[i], "plan " .. i)
        if codes[i] ~= "" and own.codes[i] ~= "" then assert.equal(codes[i], own.codes[i]) end
      end
      assert.same(assert(exp:run(over)).counts, own.counts)
    end
    local r, err2 = exp:evaluate(function() return "maybe" end)
    assert.is_nil(r)
    assert.matches("must return accept, reject or defer", err2)
  end)

  it("reads odd labels as such: another label, conflicting or malformed tool labels", function()
    local reg = dir .. "/multi.json"
    h.write_file(reg, MULTI)
    local function plan(id, label, tool_labels)
      local samples = {}
      for i = 1, 6 do samples[i] = string.format('{"arguments":{"n":1},"result":%d,"epoch":"e"}', i) end
      return string.format('{"plan_id":"%s","tool":{"server":"s","name":"low"},"samples":[%s]%s%s}', id,
        table.concat(samples, ","), label and (',"label":' .. label) or "",
        tool_labels and (',"tool_labels":' .. tool_labels) or "")
    end
    local text = table.concat({
      plan("a", '"correct"', '[{"server":"s","name":"low","deterministic":false}]'),
      plan("b", "5", '[{"server":"s","name":"low","deterministic":true}]'),
      plan("c", '"Correct"', '"low"'),
      plan("d", nil, '[1, {"name":"low"}, {"name":"nosuch","deterministic":true}, {"name":"free","deterministic":false}]'),
      plan("e", '"fabricated"', nil),
    }, "\n") .. "\n"
    local exp = assert(experiment.load(engine(nil, nil, reg), reader(text)))
    assert.same({ correct = 1, fabricated = 1, none = 1, other = 2 }, exp.labels)
    local r = assert(exp:run({}))
    assert.equal(1, #r.quarantined)
    assert.same({ server = "s", name = "low", label = "conflicting" }, r.quarantined[1])
    local free
    for i, t in ipairs(exp.tools) do
      if t.name == "free" then free = i end
    end
    assert.equal(0, exp.sweep:tool_label(free)) -- a bare name that one server has
    assert.equal(5, r.counts.defer.correct + r.counts.defer.fabricated + r.counts.defer.none + r.counts.defer.other)
  end)

  it("refuses settings that cannot hold, and says which", function()
    local reg = dir .. "/gen-registry.json"
    local exp = assert(experiment.load(engine(nil, nil, reg), reader(gen_plans(3, 20, 6, reg))))
    local r, err = exp:run({ arg_reject = 0.9, arg_accept = 0.5 })
    assert.is_nil(r)
    assert.matches("arg_reject must not be above arg_accept", err)
    r, err = exp:run({ result_accept = 1.5 })
    assert.is_nil(r)
    assert.matches("result_accept must be a number from 0 to 1", err)
    local results, skipped = exp:grid(assert(experiment.parse_grid("arg_reject=0.3|0.7,arg_accept=0.5")))
    assert.equal(1, #results)
    assert.equal(1, #skipped)
    assert.matches("arg_reject must not be above arg_accept", skipped[1].why)
  end)
end)

describe("a grid", function()
  it("parses ranges, lists and switches, the first axis varying fastest", function()
    local axes = assert(experiment.parse_grid("arg_reject=0.05:0.2:0.05, quarantine=on|off"))
    assert.same({ 0.05, 0.1, 0.15, 0.2 }, axes[1].values)
    assert.same({ true, false }, axes[2].values)
    local pts = experiment.points(axes)
    assert.equal(8, #pts)
    assert.same({ arg_reject = 0.1, quarantine = true }, pts[2])
    assert.same({ arg_reject = 0.05, quarantine = false }, pts[5])
  end)

  it("says what is wrong with one that does not parse", function()
    for spec, want in pairs({
      [""] = "an empty grid",
      ["foo=1"] = "unknown setting \"foo\"",
      ["arg_reject"] = "each part is KEY=FROM:TO:STEP",
      ["arg_reject=0.5:0.1:0.1"] = "ends below its start",
      ["arg_reject=0.1:0.5:0"] = "the step must be above 0",
      ["arg_reject=0.1:0.5:x"] = "three numbers",
      ["arg_reject=1.5"] = "arg_reject takes numbers from 0 to 1",
      ["min_samples=2.5"] = "whole numbers",
      ["quarantine=maybe"] = "quarantine takes on, off",
      ["arg_reject=0.1,arg_reject=0.2"] = "given twice",
      ["arg_reject=0:1:0.00001"] = "more than 10000 values",
      ["arg_accept=a|b"] = "is not a number",
    }) do
      local axes, err = experiment.parse_grid(spec)
      assert.is_nil(axes, spec)
      assert.matches(want, err, 1, true)
    end
  end)

  it("ranks points by an objective, a missing metric meeting no limit", function()
    local obj = assert(experiment.parse_objective("max recall with fp_share <= 0.05 and defer_rate < 0.5"))
    local function r(recall, fp, defer) return { metrics = { recall = recall, fp_share = fp, defer_rate = defer } } end
    local list = { r(0.9, 0.1, 0.1), r(0.8, 0.0, 0.2), r(0.8, 0.01, 0.1), r(1, nil, 0), r(0.95, 0.05, 0.6) }
    local best = experiment.best(list, obj)
    assert.equal(2, #best)
    assert.equal(list[3], best[1]) -- equal recall: the lower defer rate first
    assert.equal(list[2], best[2])
    for text, want in pairs({ ["best recall"] = "starts with max or min", ["max speed"] = "unknown metric",
        ["max recall where fp_share < 1"] = "expected \"with\"", ["max recall with fp_share ~ 1"] = "a limit is",
        ["max recall with fp_share < x"] = "needs a number" }) do
      local o, err = experiment.parse_objective(text)
      assert.is_nil(o)
      assert.matches(want, err, 1, true)
    end
  end)

  it("ranks exact ties alike (competition ranking: 1, 2, 2, 4), a tie being the same metric and defer rate", function()
    local obj = assert(experiment.parse_objective("min fp_share"))
    local function r(fp, defer) return { metrics = { fp_share = fp, defer_rate = defer } } end
    local best = experiment.best({ r(0.2, 0.1), r(0, 0.3), r(0.1, 0.2), r(0.1, 0.2), r(0.1, 0.25), r(0.2, 0.1),
                                   r(0.2, 0.1) }, obj)
    assert.same({ 1, 2, 2, 4, 5, 5, 5 }, experiment.ranks(best, obj))
    assert.same({}, experiment.ranks({}, obj))
  end)
end)
