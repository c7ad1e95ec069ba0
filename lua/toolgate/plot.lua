--- toolgate.plot: a sweep's results drawn as a self-contained SVG, and a
-- one-file HTML report around it (toolgate sweep --svg, --html).  Plain
-- text written here: no plotting library, no script, no external file.
-- @module toolgate.plot

local M = {}

-- Sizes in px, drawn 1:1: the report shows the plot at its own size, so a
-- tick label is 14 px on the page (a docs page's column, about 880 px on
-- GitHub, scales 960 by 0.92: still 12.8 px).
local WIDTH = 960
local PANEL_W, PANEL_H = 360, 300
local LEFT, TOP, GAP = 80, 50, 110
local MARGIN = 24 -- the legend's and the caption's left edge
local FONT = { tick = 14, title = 16, label = 15, legend = 14, caption = 13 }
local MIN_TICK_GAP = 48 -- px between x tick labels: five characters at 14 px and a space
local MAX_MARKERS = 20 -- per line: more would merge into a thick band

-- Each line its own color, dash pattern and marker, so lines that coincide
-- (two series, or a series and the naive line) stay apart, also in grey;
-- the first, solid, drawn wider, shows on both sides of a line over it.
local COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2" }
local DASHES = { "none", "10 4", "2 3", "10 3 2 3", "16 4", "10 3 2 3 2 3", "16 3 2 3", "4 4" }
local SHAPES = { "circle", "square", "triangle", "diamond", "triangle-down", "plus" }
local NAIVE = { color = "#555555", dash = "6 4", shape = "cross", width = 2 }

-- Where a metric has no value, what the plot says (metrics in experiment.lua)
local UNDEFINED = {
  fp_share = { band = "no rejects: undefined",
               note = "The false-positive share is undefined where a scorer rejects no plan" },
  recall = { band = "no fabricated plans: undefined",
             note = "Recall is undefined without a plan labeled fabricated" },
}

local function esc(s)
  return (tostring(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub('"', "&quot;"))
end

local function val(x)
  if type(x) == "boolean" then return x and "on" or "off" end
  return string.format("%g", x)
end

local function num(x)
  return string.format("%.1f", x)
end

local function pct(x)
  return x == nil and "-" or string.format("%.1f%%", 100 * x)
end

-- A text's width in px, from DejaVu Sans's advances in em (a little
-- generous: lowercase letters average about 0.56 in English text).
local function text_width(text, size)
  local _, narrow = text:gsub("[%s%.,:;()|'-]", "")
  local _, upper = text:gsub("%u", "")
  local _, digits = text:gsub("%d", "")
  return (0.34 * narrow + 0.72 * upper + 0.64 * digits + 0.6 * (#text - narrow - upper - digits)) * size
end

-- x as a position: booleans (quarantine) at the two ends
local function xnum(x)
  if type(x) == "boolean" then return x and 1 or 0 end
  return x
end

-- The lines of a plot: one per value of the second axis (the other axes at
-- the values of the best point, else their first), each a list of
-- {x, result}.  -> series, held (the other axes' values, for the caption)
function M.series(axes, results, best)
  local x_key, s_key = axes[1].key, axes[2] and axes[2].key
  local held = {}
  for i = 3, #axes do
    local k = axes[i].key
    held[k] = best and best.point[k] or axes[i].values[1]
  end
  local function fits(p)
    for k, v in pairs(held) do if p[k] ~= v then return false end end
    return true
  end
  local out = {}
  for _, sv in ipairs(s_key and axes[2].values or { false }) do
    local line = { label = s_key and (s_key .. " = " .. val(sv)) or "toolgate", points = {} }
    for _, r in ipairs(results) do
      if fits(r.point) and (not s_key or r.point[s_key] == sv) then
        line.points[#line.points + 1] = { x = r.point[x_key], r = r }
      end
    end
    table.sort(line.points, function(a, b) return xnum(a.x) < xnum(b.x) end)
    if #line.points > 0 then out[#out + 1] = line end
  end
  return out, held
end

-- The x values that get a label: the grid's last always; its first too
-- when every k-th value from it ends on the last and leaves about as many
-- labels as counting back from the last does; never two closer than
-- MIN_TICK_GAP.
local function x_ticks(values, px)
  local xs, seen = {}, {}
  for _, v in ipairs(values) do
    if not seen[v] then xs[#xs + 1], seen[v] = v, true end
  end
  table.sort(xs, function(a, b) return xnum(a) < xnum(b) end)
  local back, last = {}, nil
  for i = #xs, 1, -1 do
    if not last or px(last) - px(xs[i]) >= MIN_TICK_GAP then
      table.insert(back, 1, xs[i])
      last = xs[i]
    end
  end
  for k = 1, #xs - 1 do
    if (#xs - 1) % k == 0 then
      local list, spaced = {}, true
      for i = 1, #xs, k do
        if #list > 0 and px(xs[i]) - px(list[#list]) < MIN_TICK_GAP then spaced = false end
        list[#list + 1] = xs[i]
      end
      if spaced and 3 * #list >= 2 * #back then return list end
    end
  end
  return back
end

-- An open marker of a shape at (x, y), as path data: open so that two
-- markers at one point both show.
local function marker(shape, x, y)
  local r = 5 -- a circle round the square, so the first two series' markers both show where they meet
  if shape == "circle" then
    return string.format("M%s %s a%d %d 0 1 0 %d 0 a%d %d 0 1 0 %d 0", num(x - r), num(y), r, r, 2 * r, r, r, -2 * r)
  elseif shape == "square" then
    return string.format("M%s %s h7 v7 h-7 Z", num(x - 3.5), num(y - 3.5))
  elseif shape == "triangle" then
    return string.format("M%s %s l5 9 h-10 Z", num(x), num(y - 5.5))
  elseif shape == "triangle-down" then
    return string.format("M%s %s l5 -9 h-10 Z", num(x), num(y + 5.5))
  elseif shape == "diamond" then
    return string.format("M%s %s l5 5 l-5 5 l-5 -5 Z", num(x), num(y - 5))
  elseif shape == "plus" then
    return string.format("M%s %s h10 M%s %s v10", num(x - 5), num(y), num(x), num(y - 5))
  end
  return string.format("M%s %s l8 8 M%s %s l8 -8", num(x - 4), num(y - 4), num(x - 4), num(y + 4)) -- cross
end

-- The first point at which a line has a value of the metric; nil: none.
local function first_defined(points, metric)
  for _, p in ipairs(points) do
    if p.r.metrics[metric] ~= nil then return p end
  end
end

-- One panel: axes, ticks, labels, where no line has a value a shaded band,
-- a path per line (a value missing -- no rejects, no fp_share -- breaks its
-- line), then the lines' markers over them.  xmin, xmax: the x range
-- drawn; grid_start: the grid's smallest value.  -> per line, the first x
-- with a value (nil: none), and whether a band is shaded, for the caption
local function panel(out, ox, title, metric, axes, lines, xmin, xmax, grid_start)
  local function px(x) return ox + (xnum(x) - xmin) / (xmax - xmin) * PANEL_W end
  local function py(y) return TOP + PANEL_H - y * PANEL_H end
  out[#out + 1] = string.format('<g class="panel" data-metric="%s">', metric)
  out[#out + 1] = string.format('<text x="%s" y="%d" class="title">%s</text>', num(ox + PANEL_W / 2), TOP - 18,
    esc(title))
  local starts, band_end = {}, math.huge
  for i, line in ipairs(lines) do
    local p = first_defined(line.points, metric)
    starts[i] = p and p.x
    if p then band_end = math.min(band_end, xnum(p.x)) end
  end
  local banded = #lines > 0 and band_end > grid_start
  if banded then
    local x0, x1 = px(grid_start), px(band_end)
    if band_end == math.huge then x0, x1 = ox, ox + PANEL_W end -- no line has a value anywhere
    out[#out + 1] = string.format('<rect x="%s" y="%d" width="%s" height="%d" class="undefined"/>', num(x0), TOP,
      num(x1 - x0), PANEL_H)
    if x1 - x0 >= FONT.caption + 4 then -- else the caption alone says it
      local cx, cy = (x0 + x1) / 2 + FONT.caption / 3, TOP + PANEL_H / 2
      out[#out + 1] = string.format('<text x="%s" y="%s" class="undefined-label" transform="rotate(-90 %s %s)">%s</text>',
        num(cx), num(cy), num(cx), num(cy), esc(UNDEFINED[metric].band))
    end
  end
  for k = 0, 4 do -- y grid and ticks: 0 .. 100 %
    local y = py(k / 4)
    out[#out + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" class="grid"/>', num(ox), num(y),
      num(ox + PANEL_W), num(y))
    out[#out + 1] = string.format('<text x="%s" y="%s" class="ytick">%d%%</text>', num(ox - 8), num(y + 5), k * 25)
  end
  for _, v in ipairs(x_ticks(axes[1].values, px)) do
    out[#out + 1] = string.format('<text x="%s" y="%d" class="xtick">%s</text>', num(px(v)), TOP + PANEL_H + 22,
      esc(val(v)))
  end
  out[#out + 1] = string.format('<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>', ox, TOP, PANEL_W,
    PANEL_H)
  out[#out + 1] = string.format('<text x="%s" y="%d" class="xlabel">%s</text>', num(ox + PANEL_W / 2),
    TOP + PANEL_H + 48, esc(axes[1].key))
  out[#out + 1] = string.format('<text x="%d" y="%s" class="ylabel" transform="rotate(-90 %d %s)">%s</text>',
    ox - 58, num(TOP + PANEL_H / 2), ox - 58, num(TOP + PANEL_H / 2), esc(title))
  for _, line in ipairs(lines) do
    local d, pen = {}, "M"
    for _, p in ipairs(line.points) do
      local y = p.r.metrics[metric]
      if y == nil then
        pen = "M"
      else
        d[#d + 1] = string.format("%s%s %s", pen, num(px(p.x)), num(py(y)))
        pen = "L"
      end
    end
    if #d == 0 then d[1] = string.format("M%s %s", num(ox), num(py(0))) end -- nothing to draw: an empty mark
    out[#out + 1] = string.format('<path class="%s" data-series="%s" d="%s" stroke="%s" stroke-dasharray="%s" '
      .. 'stroke-width="%g"/>', line.class, esc(line.label), table.concat(d, " "), line.style.color, line.style.dash,
      line.style.width)
  end
  for _, line in ipairs(lines) do
    local defined = {}
    for _, p in ipairs(line.points) do
      if p.r.metrics[metric] ~= nil then defined[#defined + 1] = p end
    end
    local every, d = math.ceil(#defined / MAX_MARKERS), {}
    for i, p in ipairs(defined) do
      if (i - 1) % every == 0 or i == #defined then
        d[#d + 1] = marker(line.style.shape, px(p.x), py(p.r.metrics[metric]))
      end
    end
    if #d > 0 then
      out[#out + 1] = string.format('<path class="marker" data-series="%s" data-shape="%s" d="%s" stroke="%s"/>',
        esc(line.label), line.style.shape, table.concat(d, " "), line.style.color)
    end
  end
  out[#out + 1] = "</g>"
  return starts, banded
end

-- "a and b from arg_reject = 0.15, c from 0.2, d nowhere": the lines that
-- start after the grid's first value, grouped by where they start.
local function late_starts(lines, starts, x_key, xmin)
  local groups, order = {}, {}
  for i, line in ipairs(lines) do
    local s = starts[i]
    if s == nil or xnum(s) > xmin then
      local key = s == nil and "nowhere" or val(s)
      if not groups[key] then groups[key], order[#order + 1] = {}, key end
      table.insert(groups[key], line.label)
    end
  end
  local parts = {}
  for i, key in ipairs(order) do
    local where = key == "nowhere" and "nowhere" or ("from " .. (i == 1 and (x_key .. " = ") or "") .. key)
    parts[i] = table.concat(groups[key], " and ") .. " " .. where
  end
  return table.concat(parts, ", ")
end

-- Words into lines of at most width px at a font size; "key = value"
-- stays on one line.
local function wrap(text, width, size)
  local out, line = {}, nil
  for word in text:gsub(" = ", "\1=\1"):gmatch("%S+") do
    word = word:gsub("\1", " ")
    if line and text_width(line .. " " .. word, size) > width then
      out[#out + 1], line = line, word
    else
      line = line and (line .. " " .. word) or word
    end
  end
  out[#out + 1] = line
  return out
end

--- The plot of a sweep.
-- sweep_svg(axes, results, baseline, best) -> SVG text.  x: the first
-- axis; one line per value of the second; the naive baseline (results of
-- experiment.naive_run, at thresholds on the same x axis) dashed grey.
-- Every line has its own dash pattern and marker, shown in the legend.
function M.sweep_svg(axes, results, baseline, best)
  local series, held = M.series(axes, results, best)
  local xmin, xmax = math.huge, -math.huge
  for _, v in ipairs(axes[1].values) do
    xmin, xmax = math.min(xmin, xnum(v)), math.max(xmax, xnum(v))
  end
  local lines = {}
  for i, line in ipairs(series) do
    line.class = "series"
    line.style = { color = COLORS[(i - 1) % #COLORS + 1], dash = DASHES[(i - 1) % #DASHES + 1],
                   shape = SHAPES[(i - 1) % #SHAPES + 1], width = i == 1 and 3.5 or 2 }
    lines[i] = line
  end
  if baseline and axes[1].key ~= "min_samples" and axes[1].key ~= "quarantine" then
    local base = { label = "naive", legend = "naive, reject < x", class = "baseline", style = NAIVE, points = {} }
    for _, r in ipairs(baseline) do
      local t = r.settings.threshold
      if t >= xmin and t <= xmax then base.points[#base.points + 1] = { x = t, r = r } end
    end
    if #base.points > 0 then lines[#lines + 1] = base end
  end
  local grid_start = xmin
  if xmax <= xmin then xmin, xmax = xmin - 0.5, xmax + 0.5 end
  local out = {}
  local undefined = {} -- per panel: where each line's values start, whether a band is shaded
  for i, p in ipairs({ { "false-positive share of rejects", "fp_share" }, { "fabrication recall", "recall" } }) do
    local starts, banded = panel(out, LEFT + (i - 1) * (PANEL_W + GAP), p[1], p[2], axes, lines, xmin, xmax,
      grid_start)
    undefined[i] = { metric = p[2], starts = starts, banded = banded }
  end

  -- the legend, under the panels: each line's color, dash pattern and marker
  local y = TOP + PANEL_H + 84
  local x = MARGIN
  out[#out + 1] = '<g class="legend">'
  for _, line in ipairs(lines) do
    local label = line.legend or line.label
    local w = 40 + 8 + text_width(label, FONT.legend)
    if x > MARGIN and x + w > WIDTH - MARGIN then x, y = MARGIN, y + 24 end
    out[#out + 1] = string.format('<path class="legend-entry" data-series="%s" d="M%d %d h40" stroke="%s" '
      .. 'stroke-dasharray="%s" stroke-width="%g"/>', esc(line.label), x, y - 5, line.style.color, line.style.dash,
      line.style.width)
    out[#out + 1] = string.format('<path class="legend-marker" data-series="%s" data-shape="%s" d="%s" stroke="%s"/>',
      esc(line.label), line.style.shape, marker(line.style.shape, x + 20, y - 5), line.style.color)
    out[#out + 1] = string.format('<text x="%d" y="%d">%s</text>', x + 48, y, esc(label))
    x = x + math.ceil(w) + 28
  end
  out[#out + 1] = "</g>"

  local sentences = {}
  local caption = {}
  for k, v in pairs(held) do caption[#caption + 1] = k .. " = " .. val(v) end
  table.sort(caption)
  if #caption > 0 then sentences[#sentences + 1] = "Other settings held at " .. table.concat(caption, ", ") .. "." end
  for _, u in ipairs(undefined) do
    local late = late_starts(lines, u.starts, axes[1].key, grid_start)
    if late ~= "" then
      sentences[#sentences + 1] = UNDEFINED[u.metric].note .. " (no point drawn"
        .. (u.banded and "; shaded where no line has one" or "") .. "): " .. late .. "."
    end
  end
  for _, r in ipairs(baseline or {}) do
    if r.settings.threshold == 0.8 then
      sentences[#sentences + 1] = "The naive scorer at 0.80: " .. pct(r.metrics.fp_share)
        .. " of its rejects correct, recall " .. pct(r.metrics.recall) .. "."
    end
  end
  sentences[#sentences + 1] = "Quarantine carries over from plan to plan in input order."
  local caption_lines = {}
  for _, s in ipairs(sentences) do
    for _, l in ipairs(wrap(s, WIDTH - 2 * MARGIN, FONT.caption)) do caption_lines[#caption_lines + 1] = l end
  end
  y = y + 32
  for i, l in ipairs(caption_lines) do
    out[#out + 1] = string.format('<text x="%d" y="%d" class="caption">%s</text>', MARGIN, y + (i - 1) * 18, esc(l))
  end
  local height = y + (#caption_lines - 1) * 18 + 14
  out[#out + 1] = "</svg>"

  local head = {
    '<?xml version="1.0" encoding="UTF-8"?>',
    string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
      .. 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="%d">', WIDTH, height, WIDTH, height,
      FONT.legend),
    string.format("<style>.title{font-size:%dpx;font-weight:bold;text-anchor:middle}"
      .. ".xtick,.ytick{font-size:%dpx;fill:#333}.xtick{text-anchor:middle}.ytick{text-anchor:end}"
      .. ".xlabel,.ylabel{text-anchor:middle;font-size:%dpx}.grid{stroke:#e5e5e5}.frame{fill:none;stroke:#333}"
      .. ".series,.baseline,.legend-entry{fill:none}.marker,.legend-marker{fill:none;stroke-width:1.5}"
      .. ".undefined{fill:#ececec}"
      .. ".undefined-label{font-size:%dpx;fill:#666;text-anchor:middle}.caption{font-size:%dpx;fill:#444}</style>",
      FONT.title, FONT.tick, FONT.label, FONT.caption, FONT.caption),
    string.format('<rect width="%d" height="%d" fill="#ffffff"/>', WIDTH, height),
  }
  return table.concat(head, "\n") .. "\n" .. table.concat(out, "\n") .. "\n"
end

local function confusion_table(out, r)
  out[#out + 1] = "<table><tr><th></th><th>correct</th><th>fabricated</th><th>unlabeled</th></tr>"
  for _, v in ipairs({ "accept", "reject", "defer" }) do
    out[#out + 1] = string.format("<tr><th>%s</th><td>%d</td><td>%d</td><td>%d</td></tr>", v, r.counts[v].correct,
      r.counts[v].fabricated, r.counts[v].none + r.counts[v].other)
  end
  out[#out + 1] = "</table>"
end

-- What each figure is, as experiment.metrics computes it: the report's
-- glossary.  correct, fabricated: a plan's label; accept, reject, defer:
-- the verdict at that point.
local GLOSSARY = {
  { "fp_share", "Of the labeled plans rejected, the share labeled correct: reject and correct / (reject and correct "
    .. "+ reject and fabricated). Unlabeled plans are not counted. Undefined (shown as -, no point on the plot) "
    .. "where no labeled plan is rejected." },
  { "recall", "Of the plans labeled fabricated, the share rejected: reject and fabricated / fabricated (accepted, "
    .. "rejected or deferred). Undefined without a plan labeled fabricated." },
  { "defer_rate", "Of the labeled plans, the share deferred: (defer and correct + defer and fabricated) / (correct "
    .. "+ fabricated). Undefined without a labeled plan." },
  { "accept_precision", "Of the labeled plans accepted, the share labeled correct: accept and correct / (accept and "
    .. "correct + accept and fabricated). Undefined where no labeled plan is accepted." },
  { "fabricated_accepted", "The number of plans labeled fabricated that were accepted (a count, not a share)." },
}

--- A one-file report: the plot, what its figures mean, the best points
-- (ties ranked alike), the confusion at the best.
-- report_html(svg, exp, axes, best, baseline, objective) -> HTML text
function M.report_html(svg, exp, axes, best, baseline, obj)
  local l = exp.labels
  local out = {
    "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>toolgate sweep</title>',
    "<style>body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:24px;color:#222}"
      .. "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;"
      .. "text-align:right}th{background:#f3f3f3}dl{max-width:60em}dt{font-weight:bold;margin-top:6px}"
      .. "dd{margin-left:2em}"
      -- the plot at its own size (never scaled down to the window: its labels would shrink), scrolled if wider
      .. ".plot{overflow-x:auto}.plot svg{display:block;max-width:none}</style></head><body>",
    "<h1>toolgate sweep</h1>",
    string.format("<p>%d plans: %d correct, %d fabricated, %d unlabeled. Quarantine carries over from plan to plan "
      .. "in input order, as in toolgate classify.</p>", exp.n, l.correct, l.fabricated, l.none + l.other),
  }
  out[#out + 1] = '<div class="plot">' .. (svg:gsub("^<%?xml[^\n]*\n", "")) .. "</div>"
  out[#out + 1] = "<h2>What the figures mean</h2>"
  out[#out + 1] = "<p>Correct and fabricated are the plans' labels; accept, reject and defer the verdicts at a point "
    .. "(the naive scorer never defers).</p>"
  out[#out + 1] = "<dl>"
  for _, g in ipairs(GLOSSARY) do out[#out + 1] = "<dt>" .. g[1] .. "</dt><dd>" .. esc(g[2]) .. "</dd>" end
  out[#out + 1] = "</dl>"
  out[#out + 1] = "<h2>Best points (" .. esc(obj.text) .. ")</h2>"
  if #best == 0 then
    out[#out + 1] = "<p>No point meets the objective.</p>"
  else
    out[#out + 1] = "<p>Points with the same " .. esc(obj.metric) .. " and defer_rate share a rank.</p>"
    local ranks = require("toolgate.experiment").ranks(best, obj)
    local head = { "<tr><th>rank</th>" }
    for _, a in ipairs(axes) do head[#head + 1] = "<th>" .. esc(a.key) .. "</th>" end
    head[#head + 1] = "<th>fp_share</th><th>recall</th><th>defer_rate</th><th>accept_precision</th>"
      .. "<th>quarantined</th></tr>"
    out[#out + 1] = "<table>" .. table.concat(head)
    for i = 1, math.min(10, #best) do
      local r, cells = best[i], { "<tr><td>" .. ranks[i] .. "</td>" }
      for _, a in ipairs(axes) do cells[#cells + 1] = "<td>" .. esc(val(r.point[a.key])) .. "</td>" end
      local names = {}
      for _, t in ipairs(r.quarantined) do names[#names + 1] = esc(t.name) end
      cells[#cells + 1] = string.format("<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
        pct(r.metrics.fp_share), pct(r.metrics.recall), pct(r.metrics.defer_rate), pct(r.metrics.accept_precision),
        #names > 0 and table.concat(names, " ") or "none")
      out[#out + 1] = table.concat(cells)
    end
    out[#out + 1] = "</table>"
    out[#out + 1] = "<h2>Confusion at the best point</h2>"
    confusion_table(out, best[1])
  end
  if baseline then
    out[#out + 1] = "<h2>Naive baseline (one agreement score, reject below the threshold)</h2>"
    out[#out + 1] = "<table><tr><th>threshold</th><th>fp_share</th><th>recall</th><th>rejects</th></tr>"
    for _, r in ipairs(baseline) do
      out[#out + 1] = string.format("<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>", val(r.settings.threshold),
        pct(r.metrics.fp_share), pct(r.metrics.recall), r.counts.reject.correct + r.counts.reject.fabricated)
    end
    out[#out + 1] = "</table>"
  end
  out[#out + 1] = "</body></html>"
  return table.concat(out, "\n") .. "\n"
end

return M
