--- toolgate.plot: a sweep's results drawn as a self-contained SVG, and a
-- one-file HTML report around it (toolgate sweep --svg, --html).  Plain
-- text written here: no plotting library, no script, no external file.
-- @module toolgate.plot

local M = {}

local WIDTH, HEIGHT = 1120, 440
local PANEL_W, PANEL_H = 360, 300
local LEFT, TOP, GAP = 80, 60, 110
local COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2" }

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
    table.sort(line.points, function(a, b) return a.x < b.x end)
    if #line.points > 0 then out[#out + 1] = line end
  end
  return out, held
end

-- x as a position: booleans (quarantine) at the two ends
local function xnum(x)
  if type(x) == "boolean" then return x and 1 or 0 end
  return x
end

-- One panel: axes, ticks, labels, a path per series (a value missing --
-- no rejects, no fp_share -- breaks its line), the baseline dashed.
local function panel(out, ox, title, metric, axes, lines, baseline, xmin, xmax)
  local function px(x) return ox + (xnum(x) - xmin) / (xmax - xmin) * PANEL_W end
  local function py(y) return TOP + PANEL_H - y * PANEL_H end
  out[#out + 1] = string.format('<g class="panel" data-metric="%s">', metric)
  out[#out + 1] = string.format('<text x="%s" y="%d" class="title">%s</text>', num(ox + PANEL_W / 2), TOP - 20,
    esc(title))
  for k = 0, 4 do -- y grid and ticks: 0 .. 100 %
    local y = py(k / 4)
    out[#out + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" class="grid"/>', num(ox), num(y),
      num(ox + PANEL_W), num(y))
    out[#out + 1] = string.format('<text x="%s" y="%s" class="ytick">%d%%</text>', num(ox - 8), num(y + 4), k * 25)
  end
  local xs, seen = {}, {}
  for _, v in ipairs(axes[1].values) do
    if not seen[v] then xs[#xs + 1], seen[v] = v, true end
  end
  local every = math.max(1, math.ceil(#xs / 10))
  for i, v in ipairs(xs) do
    if (i - 1) % every == 0 then
      out[#out + 1] = string.format('<text x="%s" y="%d" class="xtick">%s</text>', num(px(v)), TOP + PANEL_H + 18,
        esc(val(v)))
    end
  end
  out[#out + 1] = string.format('<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>', ox, TOP, PANEL_W,
    PANEL_H)
  out[#out + 1] = string.format('<text x="%s" y="%d" class="xlabel">%s</text>', num(ox + PANEL_W / 2),
    TOP + PANEL_H + 42, esc(axes[1].key))
  out[#out + 1] = string.format('<text x="%d" y="%s" class="ylabel" transform="rotate(-90 %d %s)">%s</text>',
    ox - 50, num(TOP + PANEL_H / 2), ox - 50, num(TOP + PANEL_H / 2), esc(title))
  local function path(points, cls, color, label)
    local d, pen = {}, "M"
    for _, p in ipairs(points) do
      local y = p.r.metrics[metric]
      if y == nil then
        pen = "M"
      else
        d[#d + 1] = string.format("%s%s %s", pen, num(px(p.x)), num(py(y)))
        pen = "L"
      end
    end
    if #d == 0 then d[1] = string.format("M%s %s", num(ox), num(py(0))) end -- nothing to draw: an empty mark
    out[#out + 1] = string.format('<path class="%s" data-series="%s" d="%s" stroke="%s"/>', cls, esc(label),
      table.concat(d, " "), color)
  end
  for i, line in ipairs(lines) do path(line.points, "series", COLORS[(i - 1) % #COLORS + 1], line.label) end
  if baseline and #baseline > 0 then path(baseline, "baseline", "#555555", "naive") end
  out[#out + 1] = "</g>"
end

--- The plot of a sweep.
-- sweep_svg(axes, results, baseline, best) -> SVG text.  x: the first
-- axis; one line per value of the second; the naive baseline (results of
-- experiment.naive_run, at thresholds on the same x axis) dashed.
function M.sweep_svg(axes, results, baseline, best)
  local lines, held = M.series(axes, results, best)
  local xmin, xmax = math.huge, -math.huge
  for _, v in ipairs(axes[1].values) do
    xmin, xmax = math.min(xmin, xnum(v)), math.max(xmax, xnum(v))
  end
  local base
  if baseline and axes[1].key ~= "min_samples" and axes[1].key ~= "quarantine" then
    base = {}
    for _, r in ipairs(baseline) do
      local t = r.settings.threshold
      if t >= xmin and t <= xmax then base[#base + 1] = { x = t, r = r } end
    end
  end
  if xmax <= xmin then xmin, xmax = xmin - 0.5, xmax + 0.5 end
  local out = {
    '<?xml version="1.0" encoding="UTF-8"?>',
    string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
      .. 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">', WIDTH, HEIGHT, WIDTH, HEIGHT),
    "<style>.title{font-size:14px;font-weight:bold;text-anchor:middle}.xtick{text-anchor:middle;fill:#333}"
      .. ".ytick{text-anchor:end;fill:#333}.xlabel,.ylabel{text-anchor:middle;font-size:13px}"
      .. ".grid{stroke:#e5e5e5}.frame{fill:none;stroke:#333}.series,.baseline{fill:none;stroke-width:2}"
      .. ".baseline{stroke-dasharray:6 4}.legend{font-size:12px}.caption{font-size:11px;fill:#555}</style>",
    string.format('<rect width="%d" height="%d" fill="#ffffff"/>', WIDTH, HEIGHT),
  }
  panel(out, LEFT, "false-positive share of rejects", "fp_share", axes, lines, base, xmin, xmax)
  panel(out, LEFT + PANEL_W + GAP, "fabrication recall", "recall", axes, lines, base, xmin, xmax)
  -- the legend, right of the panels
  local lx, ly = LEFT + 2 * PANEL_W + GAP + 20, TOP + 10
  out[#out + 1] = '<g class="legend">'
  local entries = {}
  for i, line in ipairs(lines) do entries[#entries + 1] = { line.label, COLORS[(i - 1) % #COLORS + 1], false } end
  if base then entries[#entries + 1] = { "naive, reject < x", "#555555", true } end
  for i, e in ipairs(entries) do
    local y = ly + (i - 1) * 20
    out[#out + 1] = string.format('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>', lx, y,
      lx + 24, y, e[2], e[3] and ' stroke-dasharray="6 4"' or "")
    out[#out + 1] = string.format('<text x="%d" y="%d">%s</text>', lx + 30, y + 4, esc(e[1]))
  end
  out[#out + 1] = "</g>"
  local caption = {}
  for k, v in pairs(held) do caption[#caption + 1] = k .. " = " .. val(v) end
  table.sort(caption)
  local naive80
  for _, r in ipairs(baseline or {}) do
    if r.settings.threshold == 0.8 then naive80 = r end
  end
  local text = #caption > 0 and ("other settings held at " .. table.concat(caption, ", ") .. ". ") or ""
  if naive80 then
    text = text .. "naive scorer at 0.80: " .. pct(naive80.metrics.fp_share) .. " of its rejects correct, recall "
      .. pct(naive80.metrics.recall) .. ". "
  end
  text = text .. "Quarantine carries over from plan to plan in input order."
  out[#out + 1] = string.format('<text x="%d" y="%d" class="caption">%s</text>', LEFT, HEIGHT - 12, esc(text))
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n"
end

local function confusion_table(out, r)
  out[#out + 1] = "<table><tr><th></th><th>correct</th><th>fabricated</th><th>unlabeled</th></tr>"
  for _, v in ipairs({ "accept", "reject", "defer" }) do
    out[#out + 1] = string.format("<tr><th>%s</th><td>%d</td><td>%d</td><td>%d</td></tr>", v, r.counts[v].correct,
      r.counts[v].fabricated, r.counts[v].none + r.counts[v].other)
  end
  out[#out + 1] = "</table>"
end

--- A one-file report: the plot, the best points, the confusion at the best.
-- report_html(svg, exp, axes, best, baseline, objective) -> HTML text
function M.report_html(svg, exp, axes, best, baseline, obj)
  local l = exp.labels
  local out = {
    "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>toolgate sweep</title>',
    "<style>body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:24px;color:#222}"
      .. "table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;"
      .. "text-align:right}th{background:#f3f3f3}svg{max-width:100%;height:auto}</style></head><body>",
    "<h1>toolgate sweep</h1>",
    string.format("<p>%d plans: %d correct, %d fabricated, %d unlabeled. Quarantine carries over from plan to plan "
      .. "in input order, as in toolgate classify.</p>", exp.n, l.correct, l.fabricated, l.none + l.other),
  }
  out[#out + 1] = (svg:gsub("^<%?xml[^\n]*\n", ""))
  out[#out + 1] = "<h2>Best points (" .. esc(obj.text) .. ")</h2>"
  if #best == 0 then
    out[#out + 1] = "<p>No point meets the objective.</p>"
  else
    local head = { "<tr><th>rank</th>" }
    for _, a in ipairs(axes) do head[#head + 1] = "<th>" .. esc(a.key) .. "</th>" end
    head[#head + 1] = "<th>fp_share</th><th>recall</th><th>defer_rate</th><th>accept_precision</th>"
      .. "<th>quarantined</th></tr>"
    out[#out + 1] = "<table>" .. table.concat(head)
    for i = 1, math.min(10, #best) do
      local r, cells = best[i], { "<tr><td>" .. i .. "</td>" }
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
