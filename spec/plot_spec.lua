-- toolgate.plot on results made here (no engine): the SVG labels the
-- grid's last value, tells every line apart by dash pattern and marker and
-- shows both in the legend, marks where a false-positive share is
-- undefined; the HTML report defines its metrics and ranks ties alike.
-- spec/sweep_cli_spec.lua renders both for real (librsvg, Chromium).
local plot = require "toolgate.plot"
local experiment = require "toolgate.experiment"

-- The elements of an SVG or HTML text, in order: {tag =, attr = {}, text =}
-- (text: what follows the start tag up to the next tag).  Enough for the
-- markup plot.lua writes; not a general parser.
local function elements(markup)
  local out = {}
  for tag, attrs, text in markup:gmatch("<(%a[%w:-]*)([^>]*)>([^<]*)") do
    local attr = {}
    for k, v in attrs:gmatch('([%w:-]+)="([^"]*)"') do attr[k] = v end
    out[#out + 1] = { tag = tag, attr = attr, text = text }
  end
  return out
end

local function select(list, fn)
  local out = {}
  for _, e in ipairs(list) do
    if fn(e) then out[#out + 1] = e end
  end
  return out
end

-- The elements inside the panel <g> of one metric.
local function panel_of(list, metric)
  local out, inside = {}, false
  for _, e in ipairs(list) do
    if e.tag == "g" and e.attr.class == "panel" then inside = e.attr["data-metric"] == metric
    elseif e.tag == "g" then inside = false
    elseif inside then out[#out + 1] = e end
  end
  return out
end

local function counts(reject_correct, reject_fab, total_fab)
  return { accept = { correct = 50 - reject_correct, fabricated = total_fab - reject_fab, none = 0, other = 0 },
           reject = { correct = reject_correct, fabricated = reject_fab, none = 0, other = 0 },
           defer = { correct = 0, fabricated = 0, none = 0, other = 0 } }
end

-- A sweep over arg_reject x result_quarantine whose toolgate lines reject
-- nothing below arg_reject = first (fp_share undefined there), and a naive
-- baseline that rejects from naive_first on.
local function sweep(grid, first, naive_first)
  local axes = assert(experiment.parse_grid(grid))
  local results = {}
  for _, p in ipairs(experiment.points(axes)) do
    local fab = p.arg_reject < first and 0 or math.floor(p.arg_reject * 40)
    local c = counts(0, fab, 40)
    results[#results + 1] = { point = p, counts = c, metrics = experiment.metrics(c), quarantined = {} }
  end
  local baseline = {}
  for _, t in ipairs(axes[1].values) do
    local r = t < naive_first and 0 or math.floor(t * 20)
    baseline[#baseline + 1] = { settings = { threshold = t }, counts = counts(r, r, 40),
                                metrics = experiment.metrics(counts(r, r, 40)) }
  end
  return axes, results, baseline
end

describe("the sweep's plot", function()
  it("labels the grid's first and last values on the x axis, and never two ticks on top of each other", function()
    for grid, want in pairs({
      ["arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5"] = { first = "0.05", last = "0.8" },
      ["arg_reject=0.05:0.75:0.05"] = { last = "0.75" },
      ["arg_reject=0.1|0.12|0.5|0.9"] = { last = "0.9" },
      ["arg_reject=0.3"] = { first = "0.3", last = "0.3" },
    }) do
      local axes, results, baseline = sweep(grid, 0, 0)
      local svg = plot.sweep_svg(axes, results, baseline, nil)
      for _, metric in ipairs({ "fp_share", "recall" }) do
        local ticks = select(panel_of(elements(svg), metric), function(e) return e.attr.class == "xtick" end)
        assert.is_true(#ticks >= 1, grid)
        assert.equal(want.last, ticks[#ticks].text, grid)
        if want.first then assert.equal(want.first, ticks[1].text, grid) end
        for i = 2, #ticks do
          local gap = tonumber(ticks[i].attr.x) - tonumber(ticks[i - 1].attr.x)
          -- a label is at most 5 characters of a 14 px font, about 8.5 px each
          assert.is_true(gap >= 45, grid .. ": ticks " .. ticks[i - 1].text .. " and " .. ticks[i].text
            .. " are " .. gap .. " px apart")
        end
      end
    end
  end)

  it("draws a quarantine axis, off and on, at its two ends, off a value like any other", function()
    local axes = assert(experiment.parse_grid("quarantine=on|off,arg_reject=0.1|0.3"))
    local results = {}
    for _, p in ipairs(experiment.points(axes)) do
      local c = counts(0, p.quarantine and 10 or 20, 40)
      results[#results + 1] = { point = p, counts = c, metrics = experiment.metrics(c), quarantined = {} }
    end
    local svg = plot.sweep_svg(axes, results, nil, nil)
    local ticks = select(panel_of(elements(svg), "recall"), function(e) return e.attr.class == "xtick" end)
    assert.same({ "off", "on" }, { ticks[1].text, ticks[2].text })
    assert.equal(360, tonumber(ticks[2].attr.x) - tonumber(ticks[1].attr.x))
    -- off is a value, not "no value": every line has one from the start
    assert.is_nil(svg:find('class="undefined', 1, true))
    assert.is_nil(svg:find("is undefined", 1, true))
  end)

  it("gives each line its own dash pattern and marker, and the legend shows both", function()
    local axes, results, baseline = sweep("arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.4|0.5", 0.05, 0.1)
    local svg = plot.sweep_svg(axes, results, baseline, nil)
    local all = elements(svg)
    for _, metric in ipairs({ "fp_share", "recall" }) do
      local lines = select(panel_of(all, metric), function(e)
        return e.tag == "path" and (e.attr.class == "series" or e.attr.class == "baseline")
      end)
      assert.equal(4, #lines) -- three series and the naive line
      local dashes, markers = {}, {}
      for _, l in ipairs(lines) do
        local d = assert(l.attr["stroke-dasharray"], l.attr["data-series"] .. " has a stroke-dasharray")
        assert.is_nil(dashes[d], "two lines dashed " .. d)
        dashes[d] = l.attr["data-series"]
      end
      for _, m in ipairs(select(panel_of(all, metric), function(e) return e.attr.class == "marker" end)) do
        assert.is_nil(markers[m.attr["data-shape"]], "two lines marked " .. tostring(m.attr["data-shape"]))
        markers[m.attr["data-shape"]] = m.attr["data-series"]
        assert.truthy(m.attr.d:find("M", 1, true))
      end
      assert.same({ "naive", "result_quarantine = 0.3", "result_quarantine = 0.4", "result_quarantine = 0.5" },
        (function()
          local names = {}
          for _, s in pairs(markers) do names[#names + 1] = s end
          table.sort(names)
          return names
        end)())
    end
    -- the legend: per line, the same dash pattern and marker shape as in the panels
    local panel = {}
    for _, e in ipairs(panel_of(all, "fp_share")) do
      if e.attr["data-series"] then
        panel[e.attr["data-series"]] = panel[e.attr["data-series"]] or {}
        if e.attr["stroke-dasharray"] then panel[e.attr["data-series"]].dash = e.attr["stroke-dasharray"] end
        if e.attr["data-shape"] then panel[e.attr["data-series"]].shape = e.attr["data-shape"] end
      end
    end
    local legend = select(all, function(e) return e.attr.class == "legend-entry" end)
    assert.equal(4, #legend)
    for _, e in ipairs(legend) do
      local want = assert(panel[e.attr["data-series"]], e.attr["data-series"])
      assert.equal(want.dash, e.attr["stroke-dasharray"])
    end
    local legend_markers = select(all, function(e) return e.attr.class == "legend-marker" end)
    assert.equal(4, #legend_markers)
    for _, e in ipairs(legend_markers) do
      assert.equal(panel[e.attr["data-series"]].shape, e.attr["data-shape"])
    end
  end)

  it("shades and labels the thresholds where no line has a false-positive share, and names a line that starts later", function()
    local axes, results, baseline = sweep("arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5", 0.15, 0.2)
    local svg = plot.sweep_svg(axes, results, baseline, nil)
    local fp = panel_of(elements(svg), "fp_share")
    local band = select(fp, function(e) return e.attr.class == "undefined" end)
    assert.equal(1, #band)
    -- from the grid's start (x = 80) to 0.15, the first value a line has: 2 of 15 steps of 360 px
    assert.equal(80, tonumber(band[1].attr.x))
    assert.equal(48, tonumber(band[1].attr.width))
    local label = select(fp, function(e) return e.attr.class == "undefined-label" end)
    assert.equal(1, #label)
    assert.equal("no rejects: undefined", label[1].text)
    local caption = {}
    for _, e in ipairs(select(elements(svg), function(e) return e.attr.class == "caption" end)) do
      assert.is_nil(e.text:find("=$") or e.text:find("^=") or e.text:find("^[%d.]+[,.]"), "a \"key = value\" "
        .. "split over two caption lines: " .. e.text)
      caption[#caption + 1] = e.text
    end
    caption = table.concat(caption, " ")
    assert.matches("false-positive share is undefined where a scorer rejects no plan", caption, 1, true)
    assert.matches("result_quarantine = 0.3 and result_quarantine = 0.5 from arg_reject = 0.15", caption, 1, true)
    assert.matches("naive from 0.2", caption, 1, true)
    -- recall is defined everywhere: no band there
    assert.same({}, select(panel_of(elements(svg), "recall"), function(e) return e.attr.class == "undefined" end))

    -- every line defined from the grid's start: no band, no note
    axes, results, baseline = sweep("arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5", 0, 0)
    svg = plot.sweep_svg(axes, results, baseline, nil)
    assert.is_nil(svg:find('class="undefined', 1, true))
    assert.is_nil(svg:find("is undefined", 1, true))
  end)
end)

describe("the sweep's HTML report", function()
  local function report(best, obj)
    local axes = assert(experiment.parse_grid("arg_reject=0.1:0.4:0.1"))
    local c = counts(0, 10, 40)
    local exp = { n = 90, labels = { correct = 50, fabricated = 40, none = 0, other = 0 } }
    for _, r in ipairs(best) do
      r.counts, r.quarantined = r.counts or c, {}
    end
    local svg = plot.sweep_svg(axes, best, nil, best[1])
    return plot.report_html(svg, exp, axes, best, nil, obj)
  end

  it("defines each metric it shows, as experiment.metrics computes it", function()
    local html = report({}, assert(experiment.parse_objective(experiment.DEFAULT_OBJECTIVE)))
    local defs, at = {}, nil
    for _, e in ipairs(elements(html)) do
      if e.tag == "dt" then at = e.text
      elseif e.tag == "dd" and at then defs[at], at = e.text, nil end
    end
    assert.matches("^Of the labeled plans rejected, the share labeled correct: reject and correct / "
      .. "%(reject and correct %+ reject and fabricated%)", defs.fp_share)
    assert.matches("Undefined (shown as -, no point on the plot) where no labeled plan is rejected", defs.fp_share, 1, true)
    assert.matches("^Of the plans labeled fabricated, the share rejected: reject and fabricated / fabricated",
      defs.recall)
    assert.matches("^Of the labeled plans, the share deferred", defs.defer_rate)
    assert.matches("^Of the labeled plans accepted, the share labeled correct", defs.accept_precision)
    assert.matches("^The number of plans labeled fabricated that were accepted", defs.fabricated_accepted)
  end)

  it("gives exact ties in the best points the same rank: 1, 2, 2, 4", function()
    local obj = assert(experiment.parse_objective("max recall"))
    local function r(x, recall, defer)
      local c = counts(0, 10, 40)
      return { point = { arg_reject = x }, counts = c,
               metrics = { recall = recall, fp_share = 0, defer_rate = defer, accept_precision = 1,
                           fabricated_accepted = 0 } }
    end
    local best = experiment.best({ r(0.1, 0.5, 0.1), r(0.2, 0.9, 0.1), r(0.3, 0.7, 0.2), r(0.4, 0.7, 0.2) }, obj)
    local html = report(best, obj)
    local ranks = {}
    for row in html:gmatch("<tr><td>(%d+)</td>") do ranks[#ranks + 1] = tonumber(row) end
    assert.same({ 1, 2, 2, 4 }, ranks)
  end)
end)
