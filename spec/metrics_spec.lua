-- toolgate.metrics: the Prometheus text a gateway's /metrics serves.  The
-- shared dict is nginx's (spec/nginx_spec.lua reads the real one); here a
-- table with the three methods the module uses stands in for it.
local metrics = require "toolgate.metrics"

local function dict()
  local t = {}
  return {
    incr = function(_, k, n, init)
      t[k] = (t[k] or init) + n
      return t[k]
    end,
    get = function(_, k) return t[k] end,
    get_keys = function()
      local keys = {}
      for k in pairs(t) do keys[#keys + 1] = k end
      return keys
    end,
  }
end

local function series(text, name)
  return tonumber(text:match("\n" .. name:gsub("%p", "%%%0") .. " ([%d.e+-]+)\n"))
end

describe("toolgate.metrics", function()
  it("writes counters with sorted, escaped labels once flushed", function()
    local m = metrics.new(dict())
    m:inc("toolgate_reloads_total", { result = "success" })
    m:inc("toolgate_reloads_total", { result = "success" }, 2)
    m:inc("toolgate_tool_decisions_total", { tool = 'say "hi"\\', server = "s", verdict = "accept" })
    local text = m:render()
    assert.equals(3, series(text, 'toolgate_reloads_total{result="success"}'))
    assert.equals(1, series(text, 'toolgate_tool_decisions_total{server="s",tool="say \\"hi\\"\\\\",verdict="accept"}'))
    assert.matches("# TYPE toolgate_reloads_total counter\n", text, 1, true)
    assert.matches("# HELP toolgate_info ", text, 1, true)
  end)

  it("keeps additions in the process until flush", function()
    local d = dict()
    local m = metrics.new(d)
    m:inc("toolgate_reloads_total", { result = "failure" })
    assert.is_nil(d:get('toolgate_reloads_total{result="failure"}'))
    m:flush()
    assert.equals(1, d:get('toolgate_reloads_total{result="failure"}'))
  end)

  it("writes histograms with cumulative buckets, sum and count", function()
    local m = metrics.new(dict())
    local h = m:histogram("toolgate_decision_seconds", { phase = "request" })
    for _, s in ipairs({ 0.000005, 0.00001, 0.00002, 0.003, 7 }) do h:observe(s) end
    local text = m:render()
    local function bucket(le) return series(text, 'toolgate_decision_seconds_bucket{phase="request",le="' .. le .. '"}') end
    assert.equals(2, bucket("0.00001")) -- le is inclusive
    assert.equals(3, bucket("0.000025"))
    assert.equals(3, bucket("0.0025"))
    assert.equals(4, bucket("0.01"))
    assert.equals(4, bucket("0.1"))
    assert.equals(5, bucket("+Inf"))
    assert.equals(5, series(text, 'toolgate_decision_seconds_count{phase="request"}'))
    assert.near(7.003035, series(text, 'toolgate_decision_seconds_sum{phase="request"}'), 1e-6)
    assert.matches("# TYPE toolgate_decision_seconds histogram\n", text, 1, true)
  end)

  it("adds the caller's gauges", function()
    local text = metrics.new(dict()):render({ { "toolgate_approvals", { state = "pending" }, 4 } })
    assert.equals(4, series(text, 'toolgate_approvals{state="pending"}'))
  end)
end)
