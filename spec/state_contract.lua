-- spec/state_contract.lua: the toolgate.state contract, one implementation
-- of each case, run on every store: under busted for the in-process and
-- SQLite stores (spec/state_spec.lua), inside nginx for the shared-dict and
-- Redis stores (spec/state_nginx_spec.lua through
-- spec/state_contract_nginx.lua: cosockets need a request).  Plain Lua, no
-- busted: inside nginx there is none.
--
-- A store under test is a table:
--   name                  "memory", "sqlite", ...
--   open(clock, opts)     -> a new, empty store | nil, why not.  opts.bounded:
--                            one that can fill up; opts.unreachable: one kept
--                            somewhere it cannot reach
--   peer(store, opts)     -> a second handle on the same records (another
--                            connection, worker or node) | nil, why there is
--                            none; opts.bounded: one that can fill up
--   settle(store, peer)   makes what store wrote visible through peer (the
--                            Redis store: its journal written, peer synced)
--   clock                 -> { now = fn, advance = fn(seconds) }: a fake clock
--                            for a store whose expiry follows the one it is
--                            given, the real one (advance sleeps) for a store
--                            whose expiry is its server's own
--   clock_kind            what clock() is, for the case list
local MAX_ADDED_REPORTS = require("toolgate.state").MAX_ADDED_REPORTS

local M = {}

-- Checks: each raises with the case's line (level 2: the caller's).
local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. " = " .. show(v[k]) end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function eq(want, got, what)
  if not same(want, got) then error((what or "value") .. ": expected " .. show(want) .. ", got " .. show(got), 2) end
end

local function check(cond, what)
  if not cond then error(what, 2) end
  return cond
end
M.check = check -- for the cases a store's own spec adds (spec/state_contract_nginx.lua)

-- results(...) -> the call's results as a list, nils in place
local function results(...) return { n = select("#", ...), ... } end
local function eq_results(want, got, what)
  local n = math.max(#want, got.n)
  for i = 1, n do
    if not same(want[i], got[i]) then
      error((what or "results") .. ": result " .. i .. " expected " .. show(want[i]) .. ", got " .. show(got[i]), 2)
    end
  end
end

local function raises(fn)
  local ok, err = pcall(fn)
  return not ok, err
end

M.cases = {}
local function case(name, run) M.cases[#M.cases + 1] = { name = name, run = run } end

case("determinism records: verified, quarantined (first reason and time kept), lifted only in a later epoch",
  function(t)
    local s, clock = t.store, t.clock
    eq(nil, s:get("s", "t"), "get before any record")
    s:verified("s", "t", '"e1"')
    eq({ verified_epoch = '"e1"' }, s:get("s", "t"), "after verified e1")
    local at = clock.now()
    s:quarantine("s", "t", "RESULT_DISAGREE", '"e1"')
    clock.advance(1)
    s:quarantine("s", "t", "a later reason", '"e1"')
    eq({ quarantined = { reason = "RESULT_DISAGREE", since = at, epoch = '"e1"' } }, s:get("s", "t"),
      "after two quarantines")
    -- a probe passing again in the quarantine's own epoch does not lift it
    s:verified("s", "t", '"e1"')
    eq({ reason = "RESULT_DISAGREE", since = at, epoch = '"e1"' }, s:get("s", "t").quarantined,
      "quarantine after verified in its epoch")
    s:verified("s", "t", '"e2"')
    eq({ verified_epoch = '"e2"' }, s:get("s", "t"), "after verified e2")
    s:verified("s", "u", "7")
    local all = s:records()
    eq('"e2"', all["s\0t"] and all["s\0t"].verified_epoch, "records()[s t]")
    eq("7", all["s\0u"] and all["s\0u"].verified_epoch, "records()[s u]")
  end)

case("approvals: opened once, each granted use taken once, a second decision refused", function(t)
  local s, clock = t.store, t.clock
  local at = clock.now()
  eq(true, s:approval_open("a1", { server = "s", tool = "t", args_digest = "d1" }, 60, 2), "first open")
  eq(false, s:approval_open("a1", { server = "s", tool = "t" }, 60, 2), "second open")
  eq_results({ false, "pending" }, results(s:approval_take("a1")), "take while pending")
  local r = check(s:approval("a1"), "approval a1 is there")
  eq({ "pending", "d1", at + 60, 2 }, { r.status, r.args_digest, r.expires, r.uses }, "a1 {status, digest, expires, uses}")
  eq("granted", (s:approval_decide("a1", "grant") or {}).status, "grant")
  eq_results({ true, "granted" }, results(s:approval_take("a1")), "first use")
  eq_results({ true, "used" }, results(s:approval_take("a1")), "second use")
  eq_results({ false, "used" }, results(s:approval_take("a1")), "a third take")
  local d = results(s:approval_decide("a1", "deny"))
  eq_results({ nil, d[2], "ALREADY_DECIDED" }, d, "deny after the grant")
  check(type(d[2]) == "string" and d[2]:find("a1", 1, true), "the refusal names a1: " .. show(d[2]))
  eq("used", s:approval("a1").status, "a1 after the refused deny")
  eq(true, s:approval_open("a2", { server = "s", tool = "t" }, 60, 1), "open a2")
  eq("denied", (s:approval_decide("a2", "deny") or {}).status, "deny a2")
  eq_results({ false, "denied" }, results(s:approval_take("a2")), "take a denied one")
  eq_results({ false, nil }, results(s:approval_take("none")), "take an unknown one")
  eq("NOT_FOUND", select(3, s:approval_decide("none", "grant")), "decide an unknown one")
  local ids = {}
  for _, a in ipairs(s:approvals() or {}) do ids[#ids + 1] = a.id .. "=" .. a.status end
  eq({ "a1=used", "a2=denied" }, ids, "approvals()")
end)

case("approvals expire with their ttl, a grant's counted from when it was given", function(t)
  local s, clock = t.store, t.clock
  -- ttl 2 s: run on the real clock where the store's expiry is its server's
  eq(true, s:approval_open("a", { server = "s", tool = "t" }, 2, 1), "open")
  clock.advance(1)
  eq("granted", (s:approval_decide("a", "grant") or {}).status, "grant after 1 s")
  clock.advance(1.1) -- past the request's own ttl, within the grant's
  eq("granted", (s:approval("a") or {}).status, "2.1 s after opening, 1.1 s after the grant")
  clock.advance(1.1)
  eq(nil, s:approval("a"), "2.2 s after the grant")
  eq_results({ false, nil }, results(s:approval_take("a")), "take an expired one")
  eq("NOT_FOUND", select(3, s:approval_decide("a", "grant")), "decide an expired one")
  eq({}, s:approvals(), "approvals() after expiry")
  eq(true, s:approval_open("a", { server = "s", tool = "t" }, 2, 1), "open again")
  eq("pending", s:approval("a").status, "opened again: pending, not the old grant")
end)

case("a decision records who decided, when and why; a grant may set its uses and ttl; bad options decide nothing",
  function(t)
    local s, clock = t.store, t.clock
    eq(true, s:approval_open("g", { server = "s", tool = "t" }, 60, 1), "open g")
    eq(true, s:approval_open("n", { server = "s", tool = "t" }, 60, 1), "open n")
    local function refused(verdict, opts, what)
      local d = results(s:approval_decide("g", verdict, opts))
      eq({ nil, "INVALID" }, { d[1], d[3] }, what)
      check(type(d[2]) == "string", what .. ": a message")
    end
    refused("grant", { uses = 0 }, "uses 0")
    refused("grant", { uses = 1.5 }, "uses 1.5")
    refused("grant", { ttl = -1 }, "ttl -1")
    refused("grant", { ttl = 2.5 }, "ttl 2.5")
    refused("grant", { note = 7 }, "a note that is no string")
    refused("grant", { note = string.rep("x", 1025) }, "a note over 1024 bytes")
    refused("grant", { by = string.rep("x", 257) }, "a decider over 256 bytes")
    refused("deny", { uses = 2 }, "uses on a deny")
    refused("allow", nil, "a verdict that is neither grant nor deny")
    eq("pending", (s:approval("g") or {}).status, "g still pending after the refused decisions")
    local at = clock.now()
    local r = check(s:approval_decide("g", "grant", { by = "alice", note = "ok for today", uses = 3, ttl = 30 }),
      "grant g with options")
    local function fields(x)
      return x and { x.status, x.uses, x.decided_by, x.note, x.decided_at ~= nil and math.abs(x.decided_at - at) < 2,
        x.expires ~= nil and math.abs(x.expires - (x.decided_at or 0) - 30) < 0.01 }
    end
    local want = { "granted", 3, "alice", "ok for today", true, true }
    eq(want, fields(r), "the granted record {status, uses, by, note, decided_at now, expires decided_at + 30}")
    eq(want, fields(s:approval("g")), "approval(g)")
    for i = 1, 3 do eq_results({ true, i == 3 and "used" or "granted" }, results(s:approval_take("g")), "use " .. i) end
    eq_results({ false, "used" }, results(s:approval_take("g")), "a fourth take")
    local d = check(s:approval_decide("n", "deny", { by = "bob", note = "not this file" }), "deny n with a note")
    eq({ "denied", "bob", "not this file" }, { d.status, d.decided_by, d.note }, "the denied record")
    local seen = {}
    for _, a in ipairs(s:approvals() or {}) do seen[a.id] = { a.status, a.decided_by, a.note } end
    eq({ g = { "used", "alice", "ok for today" }, n = { "denied", "bob", "not this file" } }, seen, "approvals()")
    eq(true, s:approval_open("p", { server = "s", tool = "t" }, 60, 1), "open p")
    local p = check(s:approval_decide("p", "grant"), "grant p without options")
    eq({ "granted", 1, nil, nil }, { p.status, p.uses, p.decided_by, p.note }, "no options: the request's uses")
    check(p.decided_at ~= nil, "decided_at set without options")
  end)

case("pin reports: each change once per registry; a server's first quarantine kept", function(t)
  local s = t.store
  local change = { tool = "t", change = "changed", pin = "p1", upstream_pin = "p2" }
  eq(true, s:pin_report("h1", "s", "t", change), "first report")
  eq(false, s:pin_report("h1", "s", "t", change), "the same again")
  eq(true, s:pin_report("h2", "s", "t", change), "under another registry")
  eq(true, s:pin_report("h1", "s", "n", { tool = "n", change = "added" }), "an added tool")
  eq(change, s:pin_change("h1", "s", "t"), "pin_change")
  eq(nil, s:pin_change("h1", "s", "n"), "an added tool is no changed pin")
  eq(nil, s:pin_change("h3", "s", "t"), "another registry")
  eq(3, #s:pin_reports(), "pin_reports()")
  eq(nil, s:server_quarantine("h1", "s"), "server before any quarantine")
  s:quarantine_server("h1", "s", "first")
  s:quarantine_server("h1", "s", "second")
  eq("first", (s:server_quarantine("h1", "s") or {}).reason, "a server's first quarantine")
  eq(nil, s:server_quarantine("h2", "s"), "the server under another registry")
  local qs = s:quarantined_servers()
  eq(1, #qs, "quarantined_servers()")
  eq({ "h1", "s", "first" }, { qs[1].registry_hash, qs[1].server, qs[1].reason }, "the quarantined server")
end)

case("added-tool reports are bounded per server and registry: MAX_ADDED_REPORTS records, then one that counts the rest",
  function(t)
    local s, max = t.store, MAX_ADDED_REPORTS
    for i = 1, max do
      eq(true, s:pin_report("h1", "s", "a" .. i, { tool = "a" .. i, change = "added" }), "added report " .. i)
    end
    eq(false, s:pin_report("h1", "s", "a1", { tool = "a1", change = "added" }), "a kept one again")
    eq(true, s:pin_report("h1", "s", "over1", { tool = "over1", change = "added" }), "the first one over: its record")
    for i = 2, 50 do s:pin_report("h1", "s", "over" .. i, { tool = "over" .. i, change = "added" }) end
    -- a listing's tail, counted by the gateway, in one report
    eq(false, s:pin_report("h1", "s", "", { tool = "", change = "more", count = 1000 }), "a tail of 1000")
    -- the bound is per server and registry, and no other kind of report is bounded
    eq(true, s:pin_report("h1", "other", "a1", { tool = "a1", change = "added" }), "another server")
    eq(true, s:pin_report("h2", "s", "a1", { tool = "a1", change = "added" }), "another registry")
    local change = { tool = "echo", change = "changed", pin = "p1", upstream_pin = "p2" }
    eq(true, s:pin_report("h1", "s", "echo", change), "a changed pin, past the bound")
    eq(change, s:pin_change("h1", "s", "echo"), "pin_change past the bound")
    local added, more, changed = 0, {}, 0
    for _, r in ipairs(s:pin_reports()) do
      if r.registry_hash == "h1" and r.server == "s" then
        if r.change.change == "added" then added = added + 1 end
        if r.change.change == "more" then more[#more + 1] = r end
        if r.change.change == "changed" then changed = changed + 1 end
      end
    end
    eq({ max, 1, 1 }, { added, #more, changed }, "h1 s: {added, more, changed} records")
    eq({ "", 1050 }, { more[1].tool, more[1].change.count }, "the one record of the rest: {tool, count}")
  end)

case("approvals keep the canonical arguments they bind, exact, with their size and whether they were cut", function(t)
  local s = t.store
  local args = '{"n":123456789012345678901234567890,"text":"rm -rf / --no-preserve-root"}'
  eq(true, s:approval_open("x", { server = "s", tool = "write_note", args_digest = "d", arguments = args,
    arguments_bytes = #args, arguments_truncated = false }, 60, 1), "open")
  local function fields(r)
    r = r or {}
    return { r.arguments, r.arguments_bytes, r.arguments_truncated }
  end
  eq({ args, #args, false }, fields(s:approval("x")), "approval(x)")
  eq({ args, #args, false }, fields((s:approvals() or {})[1]), "approvals()[1]")
  eq({ args, #args, false }, fields(s:approval_decide("x", "grant")), "the granted record")
  eq({ args, #args, false }, fields(s:approval("x")), "approval(x) once granted")
end)

case("a second handle on the same records sees every write of the first", function(t)
  local a = t.store
  local b, why = t.peer(a)
  if not b then return "n/a", why end
  a:verified("s", "t", '"e1"')
  a:quarantine("s", "q", "RESULT_DISAGREE", '"e1"')
  a:pin_report("h", "s", "t", { tool = "t", change = "changed" })
  a:quarantine_server("h", "s", "by a")
  eq(true, a:approval_open("x", { server = "s", tool = "t" }, 60, 1), "open through a")
  t.settle(a, b)
  eq('"e1"', (b:get("s", "t") or {}).verified_epoch, "b: verified")
  eq("RESULT_DISAGREE", ((b:get("s", "q") or {}).quarantined or {}).reason, "b: quarantined")
  eq("changed", (b:pin_change("h", "s", "t") or {}).change, "b: pin change")
  eq("by a", (b:server_quarantine("h", "s") or {}).reason, "b: server quarantine")
  eq("granted", (b:approval_decide("x", "grant") or {}).status, "grant through b")
  eq("ALREADY_DECIDED", select(3, a:approval_decide("x", "deny")), "deny through a after b's grant")
  eq_results({ true, "used" }, results(a:approval_take("x")), "the use taken through a")
  eq_results({ false, "used" }, results(b:approval_take("x")), "and not again through b")
end)

case("a store that fills up raises on the write it cannot keep and never drops a quarantine", function(t)
  local s, why = t.open(t.clock, { bounded = true })
  if not s then return "n/a", why end
  s:quarantine("s", "t", "RESULT_DISAGREE", '"e1"')
  s:quarantine_server("h", "s", "first")
  s:pin_report("h", "s", "t", { tool = "t", change = "changed" })
  local pad = string.rep("x", 500)
  local full, err
  for i = 1, 20000 do
    full, err = raises(function()
      s:approval_open("fill" .. i, { server = "s", tool = "t", message = pad }, 60, 1)
      s:pin_report("h", "s", "fill" .. i, { tool = "fill" .. i, change = "added", pad = pad })
    end)
    if full then break end
  end
  check(full, "20000 approvals and pin reports written and no write raised: the store dropped records instead")
  check(tostring(err):find("cannot", 1, true), "the error says what it could not store: " .. tostring(err))
  eq("RESULT_DISAGREE", ((s:get("s", "t") or {}).quarantined or {}).reason, "the quarantine, once full")
  eq("first", (s:server_quarantine("h", "s") or {}).reason, "the server quarantine, once full")
  eq("changed", (s:pin_change("h", "s", "t") or {}).change, "the pin change, once full")
  eq_results({ false, "pending" }, results(s:approval_take("fill1")), "a pending approval, once full")
end)

case("a changed pin whose report no longer fits holds all the same, by the mark the store reserved for it",
  function(t)
    local s, why = t.open(t.clock, { bounded = true })
    if not s then return "n/a", why end
    if not s.reserve_pins then return "n/a", "reserves no marks" end
    s:reserve_pins("h0000", { { server = "s", name = "echo" }, { server = "s", name = "add" } })
    local change = { tool = "echo", change = "changed", pin = string.rep("1", 32), upstream_pin = string.rep("2", 32) }
    -- reports of the same size under other registries until one does not fit
    local full, err
    for i = 1, 20000 do
      full, err = raises(function() s:pin_report(string.format("f%04d", i), "s", "echo", change) end)
      if full then break end
    end
    check(full, "20000 pin reports written and no write raised")
    check(raises(function() s:pin_report("h0000", "s", "echo", change) end), "the report that does not fit raises")
    check(tostring(err):find("cannot", 1, true), "the error says what it could not store: " .. tostring(err))
    eq("changed", (s:pin_change("h0000", "s", "echo") or {}).change, "the changed pin, once full")
    eq(nil, s:pin_change("h0000", "s", "add"), "a tool whose pin did not change")
    eq(nil, s:pin_change("h0001", "s", "echo"), "another registry")
    local listed
    for _, r in ipairs(s:pin_reports()) do
      if r.registry_hash == "h0000" then listed = r.server .. " " .. r.tool .. " " .. r.change.change end
    end
    eq("s echo changed", listed, "pin_reports() lists it")
  end)

case("a second handle that fills up with the first's records keeps its own quarantines", function(t)
  local a = t.store
  local b, why = t.peer(a, { bounded = true })
  if not b then return "n/a", why end
  b:quarantine("s", "t", "RESULT_DISAGREE", '"e1"')
  b:quarantine_server("h", "s", "by b")
  b:pin_report("h", "s", "t", { tool = "t", change = "changed" })
  local pad = string.rep("x", 500)
  -- (one registry hash each: added-tool reports are bounded per server and registry)
  for i = 1, 300 do a:pin_report("h" .. i, "s", "fill", { tool = "fill", change = "added", pad = pad }) end
  -- b takes in a's records, more than it holds: that may fail (then b's copy goes stale, unverified)
  pcall(t.settle, a, b)
  check((b:get("s", "t") or {}).quarantined, "b's quarantine, once full: " .. show(b:get("s", "t")))
  eq("by b", (b:server_quarantine("h", "s") or {}).reason, "b's server quarantine, once full")
  eq("changed", (b:pin_change("h", "s", "t") or {}).change, "b's pin change, once full")
  -- and what b learned reached a
  t.settle(b, a)
  eq("RESULT_DISAGREE", ((a:get("s", "t") or {}).quarantined or {}).reason, "b's quarantine, seen through a")
  eq("by b", (a:server_quarantine("h", "s") or {}).reason, "b's server quarantine, seen through a")
end)

case("a store it cannot reach grants nothing and lifts no quarantine", function(t)
  local s, why = t.open(t.clock, { unreachable = true })
  if not s then return "n/a", why end
  s:quarantine_server("h", "s", "seen while away")
  s:quarantine("s", "q", "RESULT_DISAGREE", '"e1"')
  s:verified("s", "t", '"e1"')
  check((s:get("s", "t") or {}).verified_epoch == nil, "a verification it cannot share counts as unverified: "
    .. show(s:get("s", "t")))
  check((s:get("s", "q") or {}).quarantined, "the quarantine learned while away holds: " .. show(s:get("s", "q")))
  eq("seen while away", (s:server_quarantine("h", "s") or {}).reason, "the server quarantine learned while away")
  eq(false, s:approval_open("x", { server = "s", tool = "t" }, 60, 1), "open")
  eq_results({ false, "unavailable" }, results(s:approval_take("x")), "take")
  eq("UNAVAILABLE", select(3, s:approval_decide("x", "grant")), "grant")
  eq("UNAVAILABLE", select(3, s:approval("x")), "approval")
  eq(nil, (s:approvals()), "approvals")
end)

case("exchanges (rounds, tasks): kept per kind and server for their ttl, replaced by key, new ones refused past the limit",
  function(t)
    local s, clock = t.store, t.clock
    eq(nil, s:exchange("round", "s", "k1"), "before any")
    eq(true, s:exchange_put("round", "s", "k1", { tool = "deploy", asked = { confirm = { method = "m" } } }, 2, 2), "put k1")
    eq({ tool = "deploy", asked = { confirm = { method = "m" } } }, s:exchange("round", "s", "k1"), "k1")
    eq(nil, s:exchange("task", "s", "k1"), "another kind")
    eq(nil, s:exchange("round", "s2", "k1"), "another server")
    eq(true, s:exchange_put("round", "s", "k1", { tool = "deploy", n = 2 }, 2, 2), "k1 replaced")
    eq({ tool = "deploy", n = 2 }, s:exchange("round", "s", "k1"), "k1 after its replacement")
    eq(true, s:exchange_put("round", "s", "k2", { n = 3 }, 2, 2), "put k2")
    eq_results({ nil, "full" }, results(s:exchange_put("round", "s", "k3", { n = 4 }, 2, 2)), "k3 past the limit")
    eq({ n = 3 }, s:exchange("round", "s", "k2"), "k2 kept when k3 was refused")
    eq(true, s:exchange_put("round", "s", "k2", { n = 5 }, 2, 2), "a live one replaced at the limit")
    eq(true, s:exchange_put("task", "s", "k3", { n = 6 }, 2, 2), "another kind has its own count")
    eq(true, s:exchange_put("round", "s2", "k3", { n = 7 }, 2, 2), "another server has its own count")
    clock.advance(2.2)
    eq(nil, s:exchange("round", "s", "k1"), "k1 after its ttl")
    eq(true, s:exchange_put("round", "s", "k3", { n = 8 }, 2, 2), "room again once the others expired")
    eq({ n = 8 }, s:exchange("round", "s", "k3"), "k3")
  end)

case("pending approvals: at most the limit per tool and per server, one per id; a decided or an expired one "
  .. "frees a place", function(t)
  local s, clock = t.store, t.clock
  local limits = { tool = 2, server = 3 }
  local function open(id, tool, server) return results(s:approval_open(id, { server = server or "s", tool = tool },
    2, 1, limits)) end
  eq_results({ true }, open("p1", "t"), "p1")
  eq_results({ false }, open("p1", "t"), "p1 again: one request per binding, counted once")
  eq_results({ true }, open("p2", "t"), "p2")
  eq_results({ false, "full", "tool" }, open("p3", "t"), "p3 past the tool's limit")
  eq(nil, s:approval("p3"), "p3 refused: no request opened")
  eq_results({ true }, open("u1", "u"), "u1: another tool")
  eq_results({ false, "full", "server" }, open("u2", "u"), "u2 past the server's limit")
  eq_results({ true }, open("v1", "t", "s2"), "another server has its own count")
  eq("denied", (s:approval_decide("p1", "deny") or {}).status, "p1 denied")
  eq_results({ true }, open("p3", "t"), "p3 once p1 is decided")
  eq_results({ false, "full", "tool" }, open("p4", "t"), "p4 past the limit again")
  clock.advance(2.2)
  eq_results({ true }, open("p4", "t"), "p4 once the others expired")
  eq_results({ true }, open("p5", "t"), "p5")
  eq_results({ false, "full", "tool" }, open("p6", "t"), "p6 past the limit")
  eq_results({ true }, results(s:approval_open("w1", { server = "s", tool = "t" }, 2, 1)), "no limits: none")
end)

case("quotas: a fixed window's limit taken for every key or none, shared by every handle, free again in the next "
  .. "window", function(t)
  local s, clock = t.store, t.clock
  -- (an hour's window: the counting below never straddles two on a real clock)
  local a = { key = "q1:a", limit = 2, window = 3600 }
  local b = { key = "q1:b", limit = 3, window = 3600 }
  eq(true, s:quota_take({ a }), "a: 1 of 2")
  eq(true, s:quota_take({ a, b }), "a: 2 of 2, b: 1 of 3")
  local r = results(s:quota_take({ b, a }))
  eq({ false, 2 }, { r[1], r[2] }, "a over its limit: the second take refuses")
  check(type(r[3]) == "number" and r[3] >= 1 and r[3] <= 3600 and r[3] == math.floor(r[3]),
    "retry_after is the whole seconds until the window ends: " .. show(r[3]))
  -- the refused take took nothing of b: two more fit, then none
  eq(true, s:quota_take({ b }), "b: 2 of 3")
  eq(true, s:quota_take({ b }), "b: 3 of 3")
  eq(false, (s:quota_take({ b })), "b over its limit")
  eq(true, s:quota_take({ { key = "q1:c", limit = 2, window = 3600 } }), "another key has its own count")
  local peer = t.peer(s)
  if peer then
    eq(true, peer:quota_take({ { key = "q1:c", limit = 2, window = 3600 } }), "c through a second handle: 2 of 2")
    eq(false, (s:quota_take({ { key = "q1:c", limit = 2, window = 3600 } })), "c over its limit, counted by both")
  end
  -- a one-second window: full (at most three tries: a try may fall in the next window), then free once it ends
  local one, full = { key = "q1:d", limit = 1, window = 1 }, false
  for _ = 1, 3 do
    local ok, i, retry = s:quota_take({ one })
    if ok == false then
      eq({ 1, 1 }, { i, retry }, "a one-second window's refusal")
      full = true
      break
    end
  end
  check(full, "a one-second window with limit 1 refuses a second take")
  clock.advance(1.05)
  eq(true, s:quota_take({ one }), "free in the next window")
end)

case("quotas: a store it cannot reach counts nothing, and says so (the call is refused)", function(t)
  local s, why = t.open(t.clock, { unreachable = true })
  if not s then return "n/a", why end
  local r = results(s:quota_take({ { key = "q1:a", limit = 5, window = 60 } }))
  eq_results({ nil, r[2], "UNAVAILABLE" }, r, "a take")
  check(type(r[2]) == "string" and r[2] ~= "", "a message says why: " .. show(r[2]))
end)

--- run_case(store, case) -> "pass" | "fail" | "n/a", message: one case on a
-- new store made by store.open.
function M.run_case(st, c)
  local clock = st.clock()
  local s, why = st.open(clock, {})
  if not s then return "fail", "cannot open a " .. st.name .. " store: " .. tostring(why) end
  local t = { store = s, clock = clock, open = st.open, peer = st.peer, settle = st.settle }
  local ok, status, message = pcall(c.run, t)
  if not ok then return "fail", status end
  if status == "n/a" then return "n/a", message end
  return "pass"
end

--- run(store) -> { {name =, status =, message =}, ... } for every case, in order.
function M.run(st)
  local out = {}
  for _, c in ipairs(M.cases) do
    local status, message = M.run_case(st, c)
    out[#out + 1] = { name = c.name, status = status, message = message }
  end
  return out
end

--- fake_clock() -> a clock control starting at 1000 whose advance moves it.
function M.fake_clock()
  local now = 1000
  return { now = function() return now end, advance = function(s) now = now + s end }
end

return M
