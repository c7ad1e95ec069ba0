-- compare.lua: the naive scorer and toolgate's split scorer, side by side.
--
--   lua5.4 examples/seed-demo/compare.lua --plans plans.jsonl --toolgate toolgate.jsonl \
--     --naive naive.jsonl [--naive-blind naive-blind.jsonl]
--
-- plans.jsonl gives the ground truth ("label", "cause"); the others are one
-- decision per plan (naive.lua's lines, `toolgate classify`'s lines), matched
-- by plan_id.  Prints a plain table, the tools toolgate quarantined, and the
-- same as Markdown for the README.

local toolgate = require "toolgate"
local json = require "toolgate.json"

local opts, i = {}, 1
while i <= #arg do
  local k = arg[i]:match("^%-%-(.+)$")
  if not k or not arg[i + 1] then
    io.stderr:write("usage: compare.lua --plans F --toolgate F --naive F [--naive-blind F]\n")
    os.exit(2)
  end
  opts[k] = arg[i + 1]
  i = i + 2
end
for _, k in ipairs({ "plans", "toolgate", "naive" }) do
  if not opts[k] then io.stderr:write("compare.lua: --" .. k .. " is required\n") os.exit(2) end
end

local codec = assert(toolgate.codec())

local function each(path, fn)
  local f = assert(io.open(path, "rb"))
  local n = 0
  for line in f:lines() do
    n = n + 1
    if line:find("%S") then
      local v, err = json.decode(codec.engine, line)
      if type(v) ~= "table" then error(string.format("%s:%d: %s", path, n, tostring(err))) end
      fn(v, n)
    end
  end
  f:close()
end

-- ground truth -------------------------------------------------------------
local truth, order = {}, {}
local n_plans, n_correct, n_fab = 0, 0, 0
local misdeclared = {}   -- tool -> cause, from the generator's causes
local DRIFT = { unstable_order = true, config_reload_race = true, ttl_cache_expiry = true }
each(opts.plans, function(p)
  local cause = p.cause or ""
  truth[p.plan_id] = { label = p.label, tool = p.tool.name, cause = cause }
  order[#order + 1] = p.plan_id
  n_plans = n_plans + 1
  if p.label == "fabricated" then n_fab = n_fab + 1 else n_correct = n_correct + 1 end
  local base = cause:match("^[^+]+")
  if DRIFT[base] then misdeclared[p.tool.name] = base end
end)

-- a scorer's decisions -> summary -------------------------------------------
local function summarize(path)
  local s = { rejected = 0, rejected_correct = 0, fab_rejected = 0, deferred = 0, deferred_correct = 0,
              fab_accepted = 0, correct_accepted = 0, codes = {}, decisions = {}, seen = 0 }
  each(path, function(d)
    local t = truth[d.plan_id]
    if not t then error(path .. ": unknown plan_id " .. tostring(d.plan_id)) end
    s.decisions[d.plan_id] = d
    s.seen = s.seen + 1
    local correct = t.label == "correct"
    if d.verdict == "reject" then
      s.rejected = s.rejected + 1
      if correct then s.rejected_correct = s.rejected_correct + 1 else s.fab_rejected = s.fab_rejected + 1 end
    elseif d.verdict == "defer" then
      s.deferred = s.deferred + 1
      if correct then s.deferred_correct = s.deferred_correct + 1 end
    elseif correct then
      s.correct_accepted = s.correct_accepted + 1
    else
      s.fab_accepted = s.fab_accepted + 1
    end
    if d.verdict ~= "accept" then
      local key = d.verdict .. " " .. (d.code or "-")
      s.codes[key] = (s.codes[key] or 0) + 1
    end
  end)
  if s.seen ~= n_plans then
    error(string.format("%s: %d decisions for %d plans", path, s.seen, n_plans))
  end
  return s
end

local scorers = {
  { title = "naive (args+results, < 0.80)", s = summarize(opts.naive) },
}
if opts["naive-blind"] then
  scorers[#scorers + 1] = { title = "naive, contract-blind", s = summarize(opts["naive-blind"]) }
end
local tg = summarize(opts.toolgate)
scorers[#scorers + 1] = { title = "toolgate (split scorer)", s = tg }

local function pct(a, b) return b > 0 and string.format("%.1f%%", 100 * a / b) or "-" end

local rows = {
  { "plans rejected", function(s) return tostring(s.rejected) end },
  { "rejected plans that were correct", function(s)
      return string.format("%d (%s)", s.rejected_correct, pct(s.rejected_correct, s.rejected)) end },
  { "fabricated plans caught (recall)", function(s)
      return string.format("%d/%d (%s)", s.fab_rejected, n_fab, pct(s.fab_rejected, n_fab)) end },
  { "plans deferred (of them correct)", function(s)
      return string.format("%d (%d)", s.deferred, s.deferred_correct) end },
  { "fabricated plans accepted", function(s) return tostring(s.fab_accepted) end },
  { "correct plans accepted", function(s)
      return string.format("%d/%d (%s)", s.correct_accepted, n_correct, pct(s.correct_accepted, n_correct)) end },
  { "false-positive share of rejects", function(s) return pct(s.rejected_correct, s.rejected) end },
}

-- quarantines: the RESULT_DISAGREE decisions, in plan order ------------------
local quarantine, qtools = {}, {}
local unstable = {}
for _, id in ipairs(order) do
  local d = tg.decisions[id]
  if d.code == "RESULT_DISAGREE" then
    for _, q in ipairs(d.quarantined or {}) do
      local r = quarantine[q.name]
      if not r then
        r = { plans = {}, first = id }
        quarantine[q.name] = r
        qtools[#qtools + 1] = q.name
      end
      r.plans[#r.plans + 1] = id
    end
  elseif d.code == "RESULT_UNSTABLE" then
    unstable[d.tool] = (unstable[d.tool] or 0) + 1
  end
end
table.sort(qtools)
-- fabricated plans rejected on a tool after toolgate had quarantined it
local after_q, seen_q = 0, {}
for _, id in ipairs(order) do
  local d, t = tg.decisions[id], truth[id]
  if t.label == "fabricated" and seen_q[t.tool] and d.verdict == "reject" and d.stage == "consistency" then
    after_q = after_q + 1
  end
  if d.code == "RESULT_DISAGREE" then seen_q[t.tool] = true end
end

-- output -------------------------------------------------------------------
local w0 = 34
local widths = {}
for k, sc in ipairs(scorers) do
  widths[k] = #sc.title
  for _, r in ipairs(rows) do widths[k] = math.max(widths[k], #r[2](sc.s)) end
end
local function line(cells)
  local out = { string.format("%-" .. w0 .. "s", cells[1]) }
  for k = 1, #scorers do out[#out + 1] = string.format("%-" .. widths[k] .. "s", cells[k + 1]) end
  print((table.concat(out, "  "):gsub("%s+$", "")))
end

print(string.format("%d plans (%d correct, %d fabricated), N = %d samples each", n_plans, n_correct, n_fab,
  math.floor(tg.decisions[order[1]].n or 0)))
print()
local head = { "" }
for _, sc in ipairs(scorers) do head[#head + 1] = sc.title end
line(head)
for _, r in ipairs(rows) do
  local cells = { r[1] }
  for _, sc in ipairs(scorers) do cells[#cells + 1] = r[2](sc.s) end
  line(cells)
end

print()
print("toolgate's non-accept verdicts by code:")
local codes = {}
for k in pairs(tg.codes) do codes[#codes + 1] = k end
table.sort(codes)
for _, k in ipairs(codes) do print(string.format("  %-24s %d", k, tg.codes[k])) end

print()
print("tools toolgate quarantined (RESULT_DISAGREE: arguments agree, results < 0.50 on a declared-deterministic tool):")
local md_q = {}
for _, name in ipairs(qtools) do
  local r = quarantine[name]
  local list = {}
  for k = 1, math.min(5, #r.plans) do list[k] = r.plans[k] end
  local more = #r.plans > 5 and string.format(", ... (%d plans)", #r.plans) or string.format(" (%d plans)", #r.plans)
  local actual = misdeclared[name] and ("mis-declared: " .. misdeclared[name]) or "NOT mis-declared"
  print(string.format("  %-14s first surfaced by %s; %s%s; +%d RESULT_UNSTABLE defers  [%s]", name, r.first,
    table.concat(list, ", "), more, unstable[name] or 0, actual))
  md_q[#md_q + 1] = string.format("| `%s` | %s | %d | %d | %s |", name, r.first, #r.plans, unstable[name] or 0,
    misdeclared[name] or "**not mis-declared**")
end
local missed = {}
for name in pairs(misdeclared) do if not quarantine[name] then missed[#missed + 1] = name end end
table.sort(missed)
local n_mis, n_hit = 0, 0
for name in pairs(misdeclared) do
  n_mis = n_mis + 1
  if quarantine[name] then n_hit = n_hit + 1 end
end
print(string.format("  mis-declared tools surfaced: %d of %d; quarantined tools that were deterministic: %d%s",
  n_hit, n_mis, #qtools - n_hit, #missed > 0 and ("; missed: " .. table.concat(missed, ", ")) or ""))
print(string.format("  fabricated plans rejected (ARG_DISAGREE) on a tool after its quarantine: %d", after_q))

print()
print("Markdown:")
print()
local mh, ms = { "|" }, { "|---|" }
for _, sc in ipairs(scorers) do mh[#mh + 1] = " " .. sc.title .. " |" ms[#ms + 1] = "---|" end
print("| " .. table.concat(mh, ""))
print(table.concat(ms, ""))
for _, r in ipairs(rows) do
  local cells = { "| " .. r[1] .. " |" }
  for _, sc in ipairs(scorers) do cells[#cells + 1] = " " .. r[2](sc.s) .. " |" end
  print(table.concat(cells, ""))
end
print()
print("| quarantined tool | first plan | RESULT_DISAGREE plans | RESULT_UNSTABLE plans | actually |")
print("|---|---|---|---|---|")
for _, l in ipairs(md_q) do print(l) end
