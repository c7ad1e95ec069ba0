-- toolgate sweep: labeled plans replayed over a grid of thresholds.
local cli = require "toolgate.cli"
local experiment = require "toolgate.experiment"

local M = {}

M.usage = [[
usage: toolgate sweep --grid SPEC [--baseline naive] [--policy FILE|NAME] [--registry [SERVER=]FILE]...
                      [--context FILE] [--objective TEXT] [--top N] [--csv FILE] [--json FILE]
                      [--svg FILE] [--html FILE] [--no-progress] LABELED.jsonl

Reads labeled plans (classify's plan-sample sets, one per line, each with
"label": "correct" | "fabricated" and optionally "tool_labels": [{"server",
"name", "deterministic": true|false}]) once, then decides them at every
point of the grid with the engine's own decision table, and prints the
points that best meet the objective, each with its confusion of verdict
against label.  At each point a plan gets exactly the verdict toolgate
classify gives it under the policy with those settings: quarantines carry
over from plan to plan in input order, as in classify.

A line that is not a plan (not JSON, or what classify refuses as
BAD_PLAN: no "samples" array, a sample of the wrong shape) is never
scored, whatever its "label": stderr counts such lines and names the
first five by number and code, and the plans are read again without them
(standard input is kept in memory for it); --baseline naive leaves out
those it can read (one that is not JSON stops it, naming the line).  Plans without a "label" are
not scored either, and stderr counts them; with no labeled plan at all
the sweep exits 2.

  --grid SPEC         KEY=FROM:TO:STEP or KEY=V1|V2|..., comma separated;
                      keys: arg_reject, arg_accept, result_accept,
                      result_quarantine, min_samples, quarantine (on|off).
                      The first key is the plot's x axis, the second its
                      series.  Other settings are the policy's
  --baseline naive    the seed's naive scorer beside it: one agreement score
                      over (arguments, result), reject below the threshold
                      (at 0.80, the seed's, and at each value of the first
                      key when it is a threshold)
  --objective TEXT    how points rank (default "max recall with fp_share <= 0.05"):
                      max|min METRIC [with METRIC OP NUMBER [and ...] ], metrics
                      fp_share (correct plans among the rejects), recall
                      (fabricated plans rejected), defer_rate,
                      accept_precision, fabricated_accepted; points equal
                      on the metric and defer_rate share a rank
  --top N             points shown (default 10)
  --csv FILE          every point, one row each (and the baseline's rows)
  --json FILE         every point, the baseline, the objective, the best points
                      (each with its rank)
  --svg FILE          a plot: fp_share and recall against the first key
  --html FILE         a one-file report: the plot, what its figures mean,
                      the best points, the confusion at the best one
  --policy, --registry, --context   as for toolgate classify
  --no-progress       no progress bar (one is drawn on standard error when it
                      is a terminal)

exit status: 0 done, 2 bad usage (a grid or objective that does not parse),
an unloadable policy or registry, unreadable input, or no labeled plan
]]

local function pct(x)
  return x == nil and "-" or string.format("%.1f%%", 100 * x)
end

local function val(x)
  if type(x) == "boolean" then return x and "on" or "off" end
  return string.format("%g", x)
end

local function stderr_is_tty()
  local ok, how, code = os.execute("test -t 2")
  if type(ok) == "number" then return ok == 0 end -- LuaJIT, Lua 5.1
  return ok == true and how == "exit" and code == 0
end

local function progress_bar()
  local last = -1
  return function(done, total)
    local width = 30
    local filled = math.floor(width * done / total)
    if filled == last and done < total then return end
    last = filled
    io.stderr:write(string.format("\rtoolgate sweep: [%s%s] %d/%d points", string.rep("#", filled),
      string.rep(" ", width - filled), done, total))
    if done == total then io.stderr:write("\n") end
    io.stderr:flush()
  end
end

-- "3 (3 labeled nondeterministic)" or the names when no tool is labeled
local function quarantine_text(q)
  if #q == 0 then return "none" end
  local right, wrong, names = 0, 0, {}
  for _, t in ipairs(q) do
    names[#names + 1] = t.name
    if t.label == false then right = right + 1 elseif t.label == true then wrong = wrong + 1 end
  end
  if right + wrong == 0 then return table.concat(names, " ") end
  return string.format("%d (%d really not deterministic, %d deterministic)", #q, right, wrong)
end

local function counts_text(c, verdict)
  return string.format("%d/%d", c[verdict].correct, c[verdict].fabricated)
end

-- ranks: the points' ranks (experiment.ranks), or nil for the baseline's rows
local function table_rows(axes, list, ranks)
  local head = { ranks and "rank" or "scorer" }
  for _, a in ipairs(axes) do head[#head + 1] = a.key end
  for _, h in ipairs({ "reject c/f", "defer c/f", "accept c/f", "fp_share", "recall", "defer_rate",
                       "accept_prec", "quarantined" }) do
    head[#head + 1] = h
  end
  local rows = { head }
  for i, r in ipairs(list) do
    local row = { ranks and tostring(ranks[i]) or r.scorer }
    for _, a in ipairs(axes) do row[#row + 1] = r.point and val(r.point[a.key]) or "" end
    local m = r.metrics
    for _, x in ipairs({ counts_text(r.counts, "reject"), counts_text(r.counts, "defer"),
                         counts_text(r.counts, "accept"), pct(m.fp_share), pct(m.recall), pct(m.defer_rate),
                         pct(m.accept_precision), r.scorer and "" or quarantine_text(r.quarantined) }) do
      row[#row + 1] = x
    end
    rows[#rows + 1] = row
  end
  return rows
end

local function print_table(rows)
  local widths = {}
  for _, row in ipairs(rows) do
    for j, cell in ipairs(row) do widths[j] = math.max(widths[j] or 0, #cell) end
  end
  for _, row in ipairs(rows) do
    local cells = {}
    for j, cell in ipairs(row) do
      cells[j] = j == #row and cell or cell .. string.rep(" ", widths[j] - #cell)
    end
    cli.out("  ", table.concat(cells, "  "), "\n")
  end
end

local function write_file(cmd, path, text)
  local f, err = io.open(path, "wb")
  if not f then
    cli.diag(cmd, "cannot write " .. tostring(err))
    return nil
  end
  f:write(text)
  f:close()
  return true
end

local function csv(axes, results, baseline)
  local cols = { "scorer", "threshold" }
  for _, a in ipairs(axes) do cols[#cols + 1] = a.key end
  for _, v in ipairs({ "accept", "reject", "defer" }) do
    for _, l in ipairs({ "correct", "fabricated", "none" }) do cols[#cols + 1] = v .. "_" .. l end
  end
  for _, k in ipairs({ "fp_share", "recall", "defer_rate", "accept_precision", "fabricated_accepted",
                       "quarantined" }) do
    cols[#cols + 1] = k
  end
  local out = { table.concat(cols, ",") }
  local function row(scorer, threshold, point, r)
    local cells = { scorer, threshold and val(threshold) or "" }
    for _, a in ipairs(axes) do cells[#cells + 1] = point and val(point[a.key]) or "" end
    for _, v in ipairs({ "accept", "reject", "defer" }) do
      for _, l in ipairs({ "correct", "fabricated", "none" }) do cells[#cells + 1] = tostring(r.counts[v][l]) end
    end
    for _, k in ipairs({ "fp_share", "recall", "defer_rate", "accept_precision", "fabricated_accepted" }) do
      local x = r.metrics[k]
      cells[#cells + 1] = x == nil and "" or string.format("%.6g", x)
    end
    local names = {}
    for _, t in ipairs(r.quarantined) do names[#names + 1] = (t.server or "") .. "/" .. t.name end
    cells[#cells + 1] = table.concat(names, " ")
    out[#out + 1] = table.concat(cells, ",")
  end
  for _, r in ipairs(results) do row("toolgate", nil, r.point, r) end
  for _, r in ipairs(baseline or {}) do row("naive", r.settings.threshold, nil, r) end
  return table.concat(out, "\n") .. "\n"
end

local function json_report(exp, axes, results, baseline, obj, best)
  local value = require "toolgate.value"
  local arr = value.array_mt
  local function result(r)
    return { point = r.point, settings = r.settings, counts = r.counts,
             metrics = r.metrics, quarantined = setmetatable(r.quarantined, arr) }
  end
  local points = setmetatable({}, arr)
  for i, r in ipairs(results) do points[i] = result(r) end
  local base = setmetatable({}, arr)
  for i, r in ipairs(baseline or {}) do base[i] = { threshold = r.settings.threshold, counts = r.counts, metrics = r.metrics } end
  local grid = setmetatable({}, arr)
  for i, a in ipairs(axes) do grid[i] = { key = a.key, values = setmetatable(a.values, arr) } end
  local top, ranks = setmetatable({}, arr), experiment.ranks(best, obj)
  for i, r in ipairs(best) do
    top[i] = result(r)
    top[i].rank = ranks[i]
  end
  return cli.encode({ plans = exp.n, labels = exp.labels, grid = grid, points = points,
                      baseline = baseline and base or nil, objective = obj.text, best = top,
                      quarantine_order = "input" }) .. "\n"
end

-- The codes of a line classify refuses at "decode": not a plan at all
-- (not JSON, or not the shape of one).  Such a line is a reject at every
-- point, with whatever "label" it has: never scored.
local NOT_PLAN = {}
for code in ("BAD_PLAN EMPTY SYNTAX UNEXPECTED_END TRAILING_GARBAGE DUPLICATE_KEY INVALID_UTF8 LONE_SURROGATE "
    .. "CONTROL_CHARACTER INVALID_ESCAPE LEADING_ZERO INVALID_NUMBER NONFINITE_NUMBER NUMBER_OUT_OF_RANGE "
    .. "INPUT_TOO_LARGE TOO_DEEP STRING_TOO_LONG TOO_MANY_MEMBERS TOO_MANY_ITEMS"):gmatch("%S+") do
  NOT_PLAN[code] = true
end
local NAMED = 5 -- lines that are not plans named on stderr; the others counted

-- counting(read) -> read passing read's pieces on, keeping the numbers of
-- the blank lines (which give no plan); and line_of(i), the line of the
-- i-th plan.  Blank as the core's readers take it: nothing but space and
-- \t .. \r.
local function counting(read)
  local blanks, line, blank = {}, 1, true
  return function()
    local piece = read()
    if not piece then return nil end
    local pos = 1
    while true do
      local nl = piece:find("\n", pos, true)
      if blank then
        local other = piece:find("[^ \t\n\v\f\r]", pos)
        if other and (not nl or other < nl) then blank = false end
      end
      if not nl then break end
      if blank then blanks[#blanks + 1] = line end
      line, blank, pos = line + 1, true, nl + 1
    end
    return piece
  end, function(i)
    local l = i
    for _, b in ipairs(blanks) do
      if b <= l then l = l + 1 else break end
    end
    return l
  end
end

-- without(read, drop) -> read passing read's pieces on without the lines
-- whose numbers are keys of drop
local function without(read, drop)
  local line, carry = 0, ""
  return function()
    while true do
      local piece = read()
      if not piece and carry == "" then return nil end
      local text = carry .. (piece or "\n")
      local kept, pos = {}, 1
      while true do
        local nl = text:find("\n", pos, true)
        if not nl then break end
        line = line + 1
        if not drop[line] then kept[#kept + 1] = text:sub(pos, nl) end
        pos = nl + 1
      end
      carry = text:sub(pos)
      if #kept > 0 then return table.concat(kept) end
      if not piece then return nil end
    end
  end
end

-- The lines that are not plans among exp's, by their numbers, with their
-- codes and the plans' indices, in order.
local function not_plans(exp, line_of)
  local found = {}
  for i = 1, exp.n do
    local p = exp.sweep:plan(i)
    if p.fixed and NOT_PLAN[p.code] then found[#found + 1] = { line = line_of(i), code = p.code, index = i } end
  end
  return found
end

function M.run(args)
  local cmd = "sweep"
  local opts, pos = cli.parse(args, {
    flags = { ["no-progress"] = true },
    options = { policy = true, context = true, grid = true, baseline = true, objective = true, top = true,
                csv = true, json = true, svg = true, html = true },
    multi = { registry = true },
  })
  if #pos ~= 1 then cli.usage_error("one LABELED.jsonl file (or - for standard input)") end
  if not opts.grid then cli.usage_error("--grid is required, e.g. --grid 'arg_reject=0.05:0.5:0.05'") end
  local axes, gerr = experiment.parse_grid(opts.grid)
  if not axes then cli.usage_error("--grid: " .. gerr) end
  local obj, oerr = experiment.parse_objective(opts.objective or experiment.DEFAULT_OBJECTIVE)
  if not obj then cli.usage_error("--objective: " .. oerr) end
  if opts.baseline and opts.baseline ~= "naive" then cli.usage_error("--baseline takes naive") end
  if opts.baseline and pos[1] == "-" then
    cli.usage_error("--baseline naive reads the plans a second time: give a file, not -")
  end
  local top = tonumber(opts.top or "10")
  if not top or top < 1 or top ~= math.floor(top) then cli.usage_error("--top takes a whole number from 1") end

  local engine = cli.load_engine(cmd, opts, nil, true)
  if not engine then return cli.EXIT_USAGE end
  local ctx
  if opts.context then
    ctx = cli.read_context(cmd, engine:snapshot().core, opts.context)
    if not ctx then return cli.EXIT_USAGE end
  end
  -- read once; when some lines are not plans, read again without them
  -- (standard input kept from the first reading for it)
  local f, name = cli.open_input(cmd, pos[1])
  if not f then return cli.EXIT_USAGE end
  local raw, read_failed = require("toolgate.lines").reader(f)
  local kept = f == io.stdin and {} or nil
  local read, line_of = counting(function()
    local piece = raw()
    if kept and piece then kept[#kept + 1] = piece end
    return piece
  end)
  local exp, err, code = experiment.load(engine, read, ctx)
  if f ~= io.stdin then f:close() end
  if read_failed() then
    cli.diag(cmd, "cannot read " .. name .. ": " .. tostring(read_failed()))
    return cli.EXIT_USAGE
  end
  if not exp then
    cli.diag(cmd, (code and (code .. ": ") or "") .. tostring(err))
    return cli.EXIT_USAGE
  end
  local not_plan = not_plans(exp, line_of)
  if #not_plan > 0 then
    local named, drop = {}, {}
    for i, s in ipairs(not_plan) do
      drop[s.line] = true
      if i <= NAMED then named[i] = "line " .. s.line .. " (" .. s.code .. ")" end
    end
    cli.diag(cmd, string.format("%s: %d %s, and %s not scored: %s%s", name, #not_plan,
      #not_plan == 1 and "line is not a plan" or "lines are not plans", #not_plan == 1 and "is" or "are",
      table.concat(named, ", "),
      #not_plan > NAMED and (", and " .. (#not_plan - NAMED) .. " more") or ""))
    local again
    if kept then
      local i = 0
      again = function()
        i = i + 1
        return kept[i]
      end
    else
      f = cli.open_input(cmd, pos[1])
      if not f then return cli.EXIT_USAGE end
      again, read_failed = require("toolgate.lines").reader(f)
    end
    exp, err, code = experiment.load(engine, without(again, drop), ctx)
    if f ~= io.stdin then f:close() end
    if read_failed() then
      cli.diag(cmd, "cannot read " .. name .. ": " .. tostring(read_failed()))
      return cli.EXIT_USAGE
    end
    if not exp then
      cli.diag(cmd, (code and (code .. ": ") or "") .. tostring(err))
      return cli.EXIT_USAGE
    end
  end
  if exp.labels.none > 0 then
    cli.diag(cmd, string.format("%s: %d plan%s no \"label\" and %s not scored", name, exp.labels.none,
      exp.labels.none == 1 and " carries" or "s carry", exp.labels.none == 1 and "is" or "are"))
  end
  if exp.labels.correct + exp.labels.fabricated == 0 then
    cli.diag(cmd, name .. ": no labeled plan to score (a plan needs \"label\": \"correct\" or \"fabricated\")")
    return cli.EXIT_USAGE
  end

  local progress = not opts["no-progress"] and stderr_is_tty() and progress_bar() or nil
  local results, skipped = exp:grid(axes, progress)
  local baseline
  if opts.baseline == "naive" then
    local scores, nerr = experiment.naive_load(pos[1])
    if not scores then
      cli.diag(cmd, "--baseline naive: " .. nerr)
      return cli.EXIT_USAGE
    end
    -- one score a line that is not blank, as one plan: those not plans go
    for k = #not_plan, 1, -1 do table.remove(scores, not_plan[k].index) end
    baseline = {}
    local thresholds, seen = { 0.80 }, { [0.80] = true }
    local first = axes[1].key
    if first ~= "min_samples" and first ~= "quarantine" then
      for _, v in ipairs(axes[1].values) do
        if not seen[v] then thresholds[#thresholds + 1], seen[v] = v, true end
      end
    end
    table.sort(thresholds)
    for _, t in ipairs(thresholds) do
      local r = experiment.naive_run(scores, t)
      r.scorer = "naive<" .. val(t)
      baseline[#baseline + 1] = r
    end
  end

  local l = exp.labels
  cli.out(string.format("toolgate sweep: %d plans (%d correct, %d fabricated, %d unlabeled%s); %d grid points%s\n",
    exp.n, l.correct, l.fabricated, l.none, l.other > 0 and (", " .. l.other .. " with another label") or "",
    #results, #skipped > 0 and (", " .. #skipped .. " skipped (" .. tostring(skipped[1].why) .. ")") or ""))
  cli.out("quarantine carries over from plan to plan in input order, as in toolgate classify\n")
  local mis = exp:misdeclared()
  if #mis > 0 then
    local names = {}
    for _, t in ipairs(mis) do names[#names + 1] = t.name end
    cli.out("labeled not deterministic but declared deterministic: ", table.concat(names, ", "), "\n")
  end
  local best = experiment.best(results, obj)
  cli.out("\nbest points (", obj.text, "):\n")
  if #best == 0 then
    cli.out("  no point meets the objective\n")
  else
    local shown = {}
    for i = 1, math.min(top, #best) do shown[i] = best[i] end
    print_table(table_rows(axes, shown, experiment.ranks(best, obj)))
  end
  if baseline then
    cli.out("\nnaive baseline (one agreement score over arguments and result, reject below the threshold):\n")
    print_table(table_rows({}, baseline, nil))
  end

  local ok = true
  if opts.csv then ok = write_file(cmd, opts.csv, csv(axes, results, baseline)) and ok end
  if opts.json then ok = write_file(cmd, opts.json, json_report(exp, axes, results, baseline, obj, best)) and ok end
  if opts.svg or opts.html then
    local plot = require "toolgate.plot"
    local svg = plot.sweep_svg(axes, results, baseline, best[1])
    if opts.svg then ok = write_file(cmd, opts.svg, svg) and ok end
    if opts.html then
      ok = write_file(cmd, opts.html, plot.report_html(svg, exp, axes, best, baseline, obj)) and ok
    end
  end
  return ok and cli.EXIT_OK or cli.EXIT_USAGE
end

return M
