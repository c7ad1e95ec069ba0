-- toolgate sweep, the command: its table, CSV and JSON against the
-- experiment API's own figures; the SVG parses as XML, renders with
-- librsvg (rsvg-convert) to a PNG of its size, and has its axis labels and
-- a path per series; the HTML report is well formed and holds the plot and
-- the tables; Debian's Chromium opens it headless, with no console
-- message, and screenshots it, and shows the plot at its own size in a
-- narrow window too (tick labels of 12 px or more, no two texts
-- overlapping); tied best points share a rank; grids and objectives that do
-- not parse exit 2.
local h = require "helpers"
local toolgate = require "toolgate"
local experiment = require "toolgate.experiment"
local cjson = require "cjson"

-- png_size(path) -> width, height, byte count of a PNG (its IHDR chunk), or
-- nil and why.
local function png_size(path)
  local bytes = h.read_file(path)
  if not bytes then return nil, "no file " .. path end
  if bytes:sub(1, 8) ~= "\137PNG\r\n\26\n" then return nil, "not a PNG: " .. path end
  local function u32(at)
    local a, b, c, d = bytes:byte(at, at + 3)
    return ((a * 256 + b) * 256 + c) * 256 + d
  end
  return u32(17), u32(21), #bytes
end

local CHROMIUM = "/usr/bin/chromium"

-- screenshot(html, png, width, height, profile) -> exit status, the lines
-- of Chromium's log that tell of a page problem, its whole log.  Console
-- messages carry no level in this log (console.log and console.error both
-- read INFO:CONSOLE), and the report has no script, so any counts; a page
-- that does not load still exits 0, hence "Page load failed".
local function screenshot(html, png, width, height, profile)
  local code, _, err = h.run(string.format("timeout -k 5 60 %s --headless --no-sandbox --disable-gpu "
    .. "--user-data-dir=%s --enable-logging=stderr --v=0 --window-size=%d,%d --screenshot=%s %s",
    CHROMIUM, h.shell_quote(profile), width, height, h.shell_quote(png), h.shell_quote("file://" .. html)))
  local problems = {}
  for _, line in ipairs(h.lines_of(err)) do
    if line:find("CONSOLE", 1, true) or line:find("Uncaught", 1, true) or line:find("Page load failed", 1, true) then
      problems[#problems + 1] = line
    end
  end
  return code, problems, err
end

describe("toolgate sweep", function()
  local dir, plans, policy

  setup(function()
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    dir = h.tmpname(".sweep-cli")
    local code, _, err = h.run(string.format("python3 %s/examples/seed-demo/generate.py --plans 500 --out %s",
      h.root, h.shell_quote(dir)))
    assert.equal(0, code, err)
    policy = dir .. "/policy.lua"
    h.write_file(policy, h.read_file(h.root .. "/examples/seed-demo/policy.lua"))
    plans = dir .. "/plans.jsonl"
  end)

  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  local function sweep(args)
    return h.toolgate("sweep --no-progress --policy " .. h.shell_quote(policy) .. " " .. args)
  end

  it("prints the best points, and writes CSV, JSON, SVG and HTML that agree with the experiment API", function()
    local grid = "arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5"
    local f = function(ext) return h.shell_quote(dir .. "/out." .. ext) end
    local code, out, err = sweep(string.format("--grid %s --baseline naive --csv %s --json %s --svg %s --html %s %s",
      h.shell_quote(grid), f("csv"), f("json"), f("svg"), f("html"), h.shell_quote(plans)))
    assert.equal(0, code, err)
    assert.matches("500 plans %(%d+ correct, %d+ fabricated, 0 unlabeled%); 32 grid points", out)
    assert.matches("quarantine carries over from plan to plan in input order", out, 1, true)
    assert.matches("labeled not deterministic but declared deterministic: ", out, 1, true)
    assert.matches("best points %(max recall with fp_share <= 0.05%)", out)
    assert.matches("naive<0.8", out, 1, true)

    -- the figures, from the API on the same plans
    local exp = assert(experiment.load(assert(toolgate.new({ policy = policy })), plans))
    local axes = assert(experiment.parse_grid(grid))
    local results = exp:grid(axes)
    local best = experiment.best(results, assert(experiment.parse_objective(experiment.DEFAULT_OBJECTIVE)))
    assert.is_true(#best > 0)

    local csv = h.lines_of(h.read_file(dir .. "/out.csv"))
    assert.equal(1 + 32 + 16, #csv) -- the header, the points, the baseline's thresholds (0.05 .. 0.80)
    assert.matches("^scorer,threshold,arg_reject,result_quarantine,accept_correct,", csv[1])
    local cells = {}
    for c in (csv[2] .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
    local r1 = results[1]
    assert.same({ "toolgate", "", "0.05", "0.3", tostring(r1.counts.accept.correct),
                  tostring(r1.counts.accept.fabricated) }, { cells[1], cells[2], cells[3], cells[4], cells[5], cells[6] })

    local report = cjson.decode(h.read_file(dir .. "/out.json"))
    assert.equal(500, report.plans)
    assert.equal(32, #report.points)
    assert.equal("input", report.quarantine_order)
    for i, r in ipairs(results) do
      assert.same(r.counts.reject.fabricated, report.points[i].counts.reject.fabricated)
      assert.same(r.counts.defer.correct, report.points[i].counts.defer.correct)
    end
    assert.equal(best[1].counts.reject.fabricated, report.best[1].counts.reject.fabricated)
    local naive80 = experiment.naive_run(assert(experiment.naive_load(plans)), 0.8)
    assert.equal(naive80.counts.reject.correct, report.baseline[#report.baseline].counts.reject.correct)
    assert.is_true(naive80.metrics.fp_share > 0.5, "the naive scorer's rejects are mostly correct plans at 0.80")
  end)

  it("draws an SVG that parses, renders to a PNG of its size, and has its labels and a path per series", function()
    local svg, png = dir .. "/plot.svg", dir .. "/plot.png"
    local code, _, err = sweep(string.format("--grid %s --baseline naive --svg %s %s",
      h.shell_quote("arg_reject=0.05:0.5:0.05,result_quarantine=0.3|0.4|0.5"), h.shell_quote(svg), h.shell_quote(plans)))
    assert.equal(0, code, err)
    local check = [[
import sys, xml.etree.ElementTree as E
ns = "{http://www.w3.org/2000/svg}"
root = E.parse(sys.argv[1]).getroot()
paths = root.iter(ns + "path")
series = [p.get("data-series") for p in root.iter(ns + "path") if p.get("class") == "series"]
dashed = [p for p in root.iter(ns + "path") if p.get("class") == "baseline"]
texts = [t.text for t in root.iter(ns + "text")]
print(root.get("width"), root.get("height"), len(series), len(set(series)), len(dashed))
for t in ("false-positive share of rejects", "fabrication recall", "arg_reject", "0%", "100%"):
    print(t, texts.count(t))
]]
    local py = dir .. "/check.py"
    h.write_file(py, check)
    local ccode, out, cerr = h.run("python3 " .. h.shell_quote(py) .. " " .. h.shell_quote(svg))
    assert.equal(0, ccode, cerr)
    local lines = h.lines_of(out)
    -- two panels, three series each (one per result_quarantine), the baseline dashed in each
    local svg_width, svg_height = lines[1]:match("^(%d+) (%d+) 6 3 2$")
    assert.equal("960", svg_width, lines[1])
    assert.equal("false-positive share of rejects 2", lines[2]) -- the title and the y label
    assert.equal("fabrication recall 2", lines[3])
    assert.equal("arg_reject 2", lines[4])
    assert.equal("0% 2", lines[5])
    assert.equal("100% 2", lines[6])

    assert.is_true(h.have("rsvg-convert"), "rsvg-convert is needed (make test installs librsvg2-bin)")
    local rcode, _, rerr = h.run("rsvg-convert -o " .. h.shell_quote(png) .. " " .. h.shell_quote(svg))
    assert.equal(0, rcode, rerr)
    local width, height, size = assert(png_size(png))
    assert.equal(960, width)
    assert.equal(tonumber(svg_height), height)
    assert.is_true(size > 10000, "the PNG has something drawn in it")
  end)

  it("writes an HTML report that is well formed and holds the plot and the tables", function()
    local html = dir .. "/report.html"
    local code, _, err = sweep(string.format("--grid %s --baseline naive --html %s %s",
      h.shell_quote("arg_reject=0.1:0.3:0.1"), h.shell_quote(html), h.shell_quote(plans)))
    assert.equal(0, code, err)
    local check = [[
import sys
from html.parser import HTMLParser
VOID = {"meta", "br", "img", "input", "link", "hr"}
SVG_EMPTY = {"line", "rect", "path"}
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.seen, self.bad = [], {}, []
    def handle_starttag(self, tag, attrs):
        self.seen[tag] = self.seen.get(tag, 0) + 1
        if tag not in VOID:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        self.seen[tag] = self.seen.get(tag, 0) + 1
    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.bad.append(tag)
        else:
            self.stack.pop()
p = P()
p.feed(open(sys.argv[1], encoding="utf-8").read())
print(len(p.bad), len(p.stack), p.seen.get("svg", 0), p.seen.get("table", 0), p.seen.get("script", 0))
]]
    local py = dir .. "/check_html.py" -- not html.py: that would shadow the html package
    h.write_file(py, check)
    local ccode, out, cerr = h.run("python3 " .. h.shell_quote(py) .. " " .. h.shell_quote(html))
    assert.equal(0, ccode, cerr)
    -- no tag left open or closed out of order, one plot, three tables (best,
    -- confusion, baseline), no script
    assert.equal("0 0 1 3 0", h.lines_of(out)[1])
    local text = h.read_file(html)
    assert.matches("Confusion at the best point", text, 1, true)
    assert.matches("Quarantine carries over from plan to plan", text, 1, true)
  end)

  it("opens the HTML report in headless Chromium with no console message, and screenshots it", function()
    -- mk/deps.sh test installs it, so make test runs this; a spec run alone may not have it
    if h.run("test -x " .. CHROMIUM) ~= 0 then return pending("needs Debian's chromium (mk/deps.sh test)") end
    -- the check first: a page whose script fails is caught
    local bad, bad_png = dir .. "/script-error.html", dir .. "/script-error.png"
    h.write_file(bad, "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction()</script></body></html>\n")
    local code, problems, log = screenshot(bad, bad_png, 800, 600, dir .. "/chromium-bad")
    assert.equal(0, code, log)
    assert.equal(1, #problems, log)
    assert.matches("Uncaught ReferenceError: undefinedFunction is not defined", problems[1], 1, true)

    local html, png = dir .. "/chromium-report.html", dir .. "/chromium-report.png"
    local _, err
    code, _, err = sweep(string.format("--grid %s --baseline naive --html %s %s",
      h.shell_quote("arg_reject=0.05:0.5:0.05,result_quarantine=0.3|0.5"), h.shell_quote(html), h.shell_quote(plans)))
    assert.equal(0, code, err)
    code, problems, log = screenshot(html, png, 1280, 900, dir .. "/chromium-report")
    assert.equal(0, code, log)
    assert.same({}, problems)
    local width, height, size = assert(png_size(png))
    assert.equal(1280, width)
    assert.equal(900, height)
    -- a blank page of this size screenshots to about 5 KB
    assert.is_true(size > 20000, "the screenshot has the report drawn in it: " .. size .. " bytes")
  end)

  it("exits 2 with a clear message on a grid, objective or option that does not parse", function()
    for args, want in pairs({
      ["--grid 'arg_reject=0.5:0.1:0.1'"] = "--grid: arg_reject=0.5:0.1:0.1: the range ends below its start",
      ["--grid 'speed=1'"] = "--grid: unknown setting \"speed\"",
      ["--grid 'arg_reject=0.1' --objective 'max speed'"] = "--objective: unknown metric \"speed\"",
      ["--grid 'arg_reject=0.1' --baseline smart"] = "--baseline takes naive",
      ["--grid 'arg_reject=0.1' --top 0"] = "--top takes a whole number from 1",
      [""] = "--grid is required",
    }) do
      local code, out, err = sweep(args .. " " .. h.shell_quote(plans))
      assert.equal(2, code, args)
      assert.equal("", out)
      assert.matches("toolgate sweep: " .. want, err, 1, true)
    end
    local code, _, err = sweep("--grid 'arg_reject=0.1' --baseline naive -")
    assert.equal(2, code)
    assert.matches("--baseline naive reads the plans a second time: give a file, not -", err, 1, true)
    code, _, err = sweep("--grid 'arg_reject=0.1' " .. h.shell_quote(dir .. "/missing.jsonl"))
    assert.equal(2, code)
    assert.matches("cannot read", err, 1, true)
  end)

  it("runs the two example scripts of examples/experiments", function()
    local code, out, err = h.run(h.lua .. " " .. h.root .. "/examples/experiments/grid.lua " .. h.shell_quote(policy)
      .. " " .. h.shell_quote(plans))
    assert.equal(0, code, err)
    local lines = h.lines_of(out)
    assert.equal(2 + 20 + 1, #lines) -- the counts, the header, 10 x 2 settings, the best
    assert.matches("^500 plans: %d+ correct, %d+ fabricated$", lines[1])
    assert.matches("^best: arg_reject 0%.%d+, quarantine o", lines[#lines])
    code, out, err = h.run(h.lua .. " " .. h.root .. "/examples/experiments/custom_scorer.lua "
      .. h.shell_quote(policy) .. " " .. h.shell_quote(plans) .. " 0.2")
    assert.equal(0, code, err)
    lines = h.lines_of(out)
    assert.matches("^toolgate rejects", lines[1])
    assert.matches("^custom   rejects +%d+ %( +0 correct%)", lines[2])
    assert.matches("^same verdict on %d+ of 500 plans$", lines[3])
  end)

  it("draws a progress bar on standard error when it is a terminal, and only then", function()
    local cmd = h.lua .. " " .. h.root .. "/bin/toolgate sweep --policy " .. h.shell_quote(policy)
      .. " --grid arg_reject=0.05:0.5:0.05 " .. h.shell_quote(plans) .. " >/dev/null"
    local code, _, err = h.run(cmd)
    assert.equal(0, code)
    assert.is_nil(err:find("points", 1, true), "no bar when standard error is a file")
    if not h.have("script") then return pending("needs script(1), util-linux, for a terminal") end
    local tty
    code, tty = h.run("script -qec " .. h.shell_quote(cmd) .. " /dev/null")
    assert.equal(0, code)
    assert.matches("\rtoolgate sweep: [##########", tty, 1, true)
    assert.matches("] 10/10 points", tty, 1, true)
  end)

  it("says when no point meets the objective", function()
    local code, out = sweep("--grid 'arg_reject=0.05' --objective 'max recall with recall > 0.99' "
      .. h.shell_quote(plans))
    assert.equal(0, code)
    assert.matches("no point meets the objective", out, 1, true)
  end)

  it("shows the report's plot at its own size in Chromium, in a wide window or a narrow one: tick labels of "
    .. "12 px or more, no two texts overlapping", function()
    if h.run("test -x " .. CHROMIUM) ~= 0 then return pending("needs Debian's chromium (mk/deps.sh test)") end
    local html = dir .. "/measured.html"
    local code, _, err = sweep(string.format("--grid %s --baseline naive --html %s %s",
      h.shell_quote("arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5"), h.shell_quote(html), h.shell_quote(plans)))
    assert.equal(0, code, err)
    -- the report has no script: a copy with one that measures what Chromium laid out, for --dump-dom to print
    local measure = [[
<script>
const svg = document.querySelector("svg");
const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
let tick = Infinity, ticks = 0, overlaps = [];
for (const t of svg.querySelectorAll("text.xtick, text.ytick")) {
  tick = Math.min(tick, parseFloat(getComputedStyle(t).fontSize) * scale, t.getBoundingClientRect().height);
  ticks++;
}
const texts = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim() !== "");
const boxes = texts.map(t => t.getBoundingClientRect());
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const a = boxes[i], b = boxes[j];
  if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
    overlaps.push(texts[i].textContent + " | " + texts[j].textContent);
}
const out = document.createElement("pre");
out.id = "measure";
out.textContent = JSON.stringify({ tick: tick, ticks: ticks, texts: texts.length, overlaps: overlaps,
  right: svg.getBoundingClientRect().right, width: svg.viewBox.baseVal.width });
document.body.appendChild(out);
</script>
]]
    local measured = dir .. "/measured-script.html"
    h.write_file(measured, (h.read_file(html):gsub("</body>", function() return measure .. "</body>" end)))
    for _, width in ipairs({ 1280, 700 }) do
      local dump
      code, dump, err = h.run(string.format("timeout -k 5 60 %s --headless --no-sandbox --disable-gpu "
        .. "--user-data-dir=%s --window-size=%d,900 --dump-dom %s", CHROMIUM,
        h.shell_quote(dir .. "/chromium-measure-" .. width), width, h.shell_quote("file://" .. measured)))
      assert.equal(0, code, err)
      local m = cjson.decode((assert(dump:match('<pre id="measure">(.-)</pre>'), dump)))
      assert.is_true(m.ticks >= 20, "the panels have their ticks: " .. m.ticks)
      assert.is_true(m.tick >= 12, width .. " px window: tick labels are " .. m.tick .. " px")
      assert.same({}, m.overlaps)
      assert.is_true(m.texts >= 30, "the plot has its texts: " .. m.texts)
    end
  end)

  it("ranks exact ties in the best points alike, in the table and the JSON", function()
    local json = dir .. "/ties.json"
    local code, out, err = sweep(string.format("--grid %s --top 40 --json %s %s",
      h.shell_quote("arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5"), h.shell_quote(json), h.shell_quote(plans)))
    assert.equal(0, code, err)
    local exp = assert(experiment.load(assert(toolgate.new({ policy = policy })), plans))
    local obj = assert(experiment.parse_objective(experiment.DEFAULT_OBJECTIVE))
    local grid = assert(experiment.parse_grid("arg_reject=0.05:0.8:0.05,result_quarantine=0.3|0.5"))
    local best = experiment.best(exp:grid(grid), obj)
    local ranks = experiment.ranks(best, obj)
    assert.is_true(ranks[2] == ranks[1], "the seed demo's batch has tied best points")
    local printed = {}
    for rank in out:match("best points.*"):gmatch("\n  (%d+) ") do printed[#printed + 1] = tonumber(rank) end
    assert.same(ranks, printed)
    local report = cjson.decode(h.read_file(json))
    for i, r in ipairs(report.best) do assert.equal(ranks[i], r.rank) end
  end)
end)

describe("toolgate sweep, given lines that are not labeled plans", function()
  local dir, plans, policy

  setup(function()
    dir = h.tmpname(".sweep-input")
    local code, _, err = h.run(string.format("python3 %s/examples/seed-demo/generate.py --plans 60 --out %s",
      h.root, h.shell_quote(dir)))
    assert.equal(0, code, err)
    policy = dir .. "/policy.lua"
    h.write_file(policy, h.read_file(h.root .. "/examples/seed-demo/policy.lua"))
    plans = h.read_file(dir .. "/plans.jsonl")
  end)

  teardown(function()
    if dir then h.run("rm -rf " .. h.shell_quote(dir)) end
  end)

  local GRID = "arg_reject=0.1:0.5:0.2"
  local function sweep(file, json)
    return h.toolgate("sweep --no-progress --policy " .. h.shell_quote(policy) .. " --grid " .. GRID
      .. (json and (" --json " .. h.shell_quote(json)) or "") .. " " .. h.shell_quote(file))
  end

  it("counts and names on stderr the lines that are not plans, and never scores them", function()
    local good, mixed = dir .. "/good.jsonl", dir .. "/mixed.jsonl"
    local lines = h.lines_of(plans)
    h.write_file(good, plans)
    local oops = '{"plan_id":"x","label":"fabricated","samples":"oops"}'
    -- lines 3, 5, 8 and 9 are not plans; line 6 is blank, no plan and no line to name
    local out = { lines[1], lines[2], oops, lines[3], oops, "", lines[4], '{"name":"read_config","arguments":{}}',
      "not json" }
    for i = 5, #lines do out[#out + 1] = lines[i] end
    h.write_file(mixed, table.concat(out, "\n") .. "\n")
    local code, expected, err0 = sweep(good, dir .. "/good.json")
    assert.equal(0, code, err0)
    local code2, got, err = sweep(mixed, dir .. "/mixed.json")
    assert.equal(0, code2, err)
    assert.equal(expected, got)
    assert.equal(h.read_file(dir .. "/good.json"), h.read_file(dir .. "/mixed.json"))
    assert.equal("toolgate sweep: " .. mixed .. ": 4 lines are not plans, and are not scored: line 3 (BAD_PLAN), "
      .. "line 5 (BAD_PLAN), line 8 (BAD_PLAN), line 9 (SYNTAX)\n", err)
    -- standard input, read once, gives the same
    local code3, piped, err3 = h.toolgate("sweep --no-progress --policy " .. h.shell_quote(policy) .. " --grid "
      .. GRID .. " -", h.read_file(mixed))
    assert.equal(0, code3, err3)
    assert.equal(expected, piped)
    assert.matches("<stdin>: 4 lines are not plans", err3, 1, true)
  end)

  it("names the first five lines that are not plans, counts the rest, and exits 2 with no labeled plan", function()
    local calls = dir .. "/calls.jsonl"
    h.write_file(calls, ('{"name":"read_config","arguments":{}}\n'):rep(7))
    local code, out, err = sweep(calls)
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate sweep: " .. calls .. ": 7 lines are not plans, and are not scored: line 1 (BAD_PLAN), "
      .. "line 2 (BAD_PLAN), line 3 (BAD_PLAN), line 4 (BAD_PLAN), line 5 (BAD_PLAN), and 2 more\n"
      .. "toolgate sweep: " .. calls .. ": no labeled plan to score (a plan needs \"label\": \"correct\" or "
      .. "\"fabricated\")\n", err)
  end)

  it("says on stderr how many plans carry no label, and exits 2 when none does", function()
    local unlabeled = dir .. "/unlabeled.jsonl"
    h.write_file(unlabeled, (plans:gsub(',? *"label": *"[a-z]+"', "")))
    local code, out, err = sweep(unlabeled)
    assert.equal(2, code)
    assert.equal("", out)
    assert.equal("toolgate sweep: " .. unlabeled .. ": 60 plans carry no \"label\" and are not scored\n"
      .. "toolgate sweep: " .. unlabeled .. ": no labeled plan to score (a plan needs \"label\": \"correct\" or "
      .. "\"fabricated\")\n", err)
  end)
end)

describe("toolgate sweep --baseline naive, given a line that is not a plan", function()
  it("does not score it in the baseline either", function()
    local dir = h.tmpname(".sweep-naive")
    local code, _, err = h.run(string.format("python3 %s/examples/seed-demo/generate.py --plans 40 --out %s",
      h.root, h.shell_quote(dir)))
    assert.equal(0, code, err)
    local policy = dir .. "/policy.lua"
    h.write_file(policy, h.read_file(h.root .. "/examples/seed-demo/policy.lua"))
    local plans = h.read_file(dir .. "/plans.jsonl")
    local first = plans:match("^[^\n]*\n")
    h.write_file(dir .. "/mixed.jsonl", first .. '{"plan_id":"x","label":"fabricated","samples":"oops"}\n'
      .. plans:sub(#first + 1))
    local function naive(file)
      local c, out, e = h.toolgate("sweep --no-progress --policy " .. h.shell_quote(policy)
        .. " --grid arg_reject=0.1:0.5:0.2 --baseline naive " .. h.shell_quote(dir .. "/" .. file))
      assert.equal(0, c, e)
      return out
    end
    local expected, got = naive("plans.jsonl"), naive("mixed.jsonl")
    h.run("rm -rf " .. h.shell_quote(dir))
    assert.equal(expected, got)
  end)
end)
