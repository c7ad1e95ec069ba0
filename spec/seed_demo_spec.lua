-- The seed demo (examples/seed-demo) on a smaller batch: what docs/self-consistency.md's
-- table claims, checked against the generator's ground truth rather than
-- against compare.lua's summary.
local h = require "helpers"
local toolgate = require "toolgate"
local json = require "toolgate.json"

local demo = h.root .. "/examples/seed-demo"
local MISDECLARED = { read_config = true, resolve_user = true, search_index = true }

local function read_lines(codec, path)
  local out = {}
  for line in assert(io.open(path, "rb")):lines() do
    if line:find("%S") then out[#out + 1] = assert(json.decode(codec.engine, line)) end
  end
  return out
end

describe("the seed demo", function()
  local dir, plans, naive, decisions

  setup(function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    dir = h.tmpname(".seed-demo")
    local code, _, err = h.run(string.format("python3 %s/generate.py --plans 1000 --samples 20 --out %s",
      demo, h.shell_quote(dir)))
    assert.equal(0, code, err)
    -- the policy names registry.json relative to itself
    h.write_file(dir .. "/policy.lua", h.read_file(demo .. "/policy.lua"))
    local codec = assert(toolgate.codec())
    plans = read_lines(codec, dir .. "/plans.jsonl")

    local ncode, nout, nerr = h.run(h.lua .. " " .. demo .. "/naive.lua " .. h.shell_quote(dir .. "/plans.jsonl"))
    assert.equal(0, ncode, nerr)
    local f = dir .. "/naive.jsonl"
    h.write_file(f, nout)
    naive = read_lines(codec, f)

    local tcode, tout, terr = h.toolgate("classify --policy " .. h.shell_quote(dir .. "/policy.lua") .. " "
      .. h.shell_quote(dir .. "/plans.jsonl"))
    assert.equal(0, tcode, terr)
    f = dir .. "/toolgate.jsonl"
    h.write_file(f, tout)
    decisions = read_lines(codec, f)
  end)

  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  it("gives one decision per plan from each scorer, in plan order", function()
    assert.equal(1000, #plans)
    assert.equal(#plans, #naive)
    assert.equal(#plans, #decisions)
    for i, p in ipairs(plans) do
      assert.equal(p.plan_id, naive[i].plan_id)
      assert.equal(p.plan_id, decisions[i].plan_id)
    end
  end)

  it("has both kinds of plan in the batch, and drifting results on the mis-declared tools", function()
    local fabricated, drifting = 0, 0
    for _, p in ipairs(plans) do
      if p.label == "fabricated" then fabricated = fabricated + 1 end
      if MISDECLARED[p.tool.name] and p.label ~= "fabricated" and not (p.cause or ""):find("^stable")
          and not (p.cause or ""):find("^quiet_window") then
        drifting = drifting + 1
      end
    end
    assert.is_true(fabricated >= 30, fabricated .. " fabricated plans")
    assert.is_true(drifting >= 30, drifting .. " correct plans with drifting results")
  end)

  it("toolgate accepts no fabricated plan and rejects no correct one", function()
    for i, p in ipairs(plans) do
      local d = decisions[i]
      if p.label == "fabricated" then
        assert.are_not.equal("accept", d.verdict, p.plan_id .. " is fabricated")
      else
        assert.are_not.equal("reject", d.verdict, p.plan_id .. " is correct: " .. tostring(d.code))
      end
    end
  end)

  it("the naive scorer rejects correct plans, which toolgate does not (the seed's observation)", function()
    local wrongly = 0
    for i, p in ipairs(plans) do
      if p.label ~= "fabricated" and naive[i].verdict == "reject" then wrongly = wrongly + 1 end
    end
    assert.is_true(wrongly >= 30, wrongly .. " correct plans rejected by the naive scorer")
  end)

  it("quarantines exactly the three mis-declared tools", function()
    local quarantined = {}
    for _, d in ipairs(decisions) do
      for _, q in ipairs(d.quarantined or {}) do quarantined[q.name] = true end
    end
    assert.same(MISDECLARED, quarantined)
  end)

  it("refuses fewer samples than its drifts need, saying why", function()
    local code, _, err = h.run(string.format("python3 %s/generate.py --samples 5 --out %s", demo,
      h.shell_quote(h.tmpname(".unused"))))
    assert.equal(2, code)
    assert.matches("--samples must be at least 12", err, 1, true)
  end)
end)
