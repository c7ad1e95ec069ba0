-- toolgate.state: one contract, every store that runs outside nginx held to
-- it (the in-process store and the SQLite file; the shared-dict store is
-- held to the same by spec/nginx_spec.lua, inside nginx).  Then what only a
-- file can do: survive a reopen, and be shared by several processes.
local h = require "helpers"
local state = require "toolgate.state"
local sqlite = require "toolgate.state.sqlite"

local q = h.shell_quote

local function tmpdb()
  local path = h.tmpname(".sqlite")
  os.remove(path)
  return path
end

local STORES = {
  memory = function(clock) return state.memory({ clock = clock }) end,
  sqlite = function(clock) return assert(sqlite.open(tmpdb(), { clock = clock })) end,
}

for _, kind in ipairs({ "memory", "sqlite" }) do
  describe("toolgate.state contract: " .. kind, function()
    local now = 1000
    local function clock() return now end
    local store
    before_each(function()
      now = 1000
      store = STORES[kind](clock)
    end)

    it("keeps determinism records: verified, quarantined (first reason kept), lifted in a later epoch", function()
      assert.is_nil(store:get("s", "t"))
      store:verified("s", "t", '"e1"')
      assert.equal('"e1"', store:get("s", "t").verified_epoch)
      assert.is_nil(store:get("s", "t").quarantined)
      store:quarantine("s", "t", "RESULT_DISAGREE", '"e1"')
      store:quarantine("s", "t", "a later reason", '"e1"')
      local r = store:get("s", "t")
      assert.is_nil(r.verified_epoch)
      assert.equal("RESULT_DISAGREE", r.quarantined.reason)
      assert.equal('"e1"', r.quarantined.epoch)
      store:verified("s", "t", '"e2"')
      r = store:get("s", "t")
      assert.equal('"e2"', r.verified_epoch)
      assert.is_nil(r.quarantined)
      store:verified("s", "u", "7")
      local all = store:records()
      assert.equal('"e2"', all["s\0t"].verified_epoch)
      assert.equal("7", all["s\0u"].verified_epoch)
    end)

    it("opens an approval once, grants its uses once each, and refuses a second decision", function()
      assert.is_true(store:approval_open("a1", { server = "s", tool = "t", args_digest = "d1" }, 60, 2))
      assert.is_false(store:approval_open("a1", { server = "s", tool = "t" }, 60, 2))
      assert.same({ false, "pending" }, { store:approval_take("a1") })
      local r = store:approval("a1")
      assert.equal("pending", r.status)
      assert.equal("d1", r.args_digest)
      assert.equal(1060, r.expires)
      assert.equal("granted", store:approval_decide("a1", "grant").status)
      assert.same({ true, "granted" }, { store:approval_take("a1") })
      assert.same({ true, "used" }, { store:approval_take("a1") })
      assert.same({ false, "used" }, { store:approval_take("a1") })
      assert.same({ nil, "approval a1 is already used", "ALREADY_DECIDED" }, { store:approval_decide("a1", "deny") })
      assert.is_true(store:approval_open("a2", { server = "s", tool = "t" }, 60, 1))
      assert.equal("denied", store:approval_decide("a2", "deny").status)
      assert.same({ false, "denied" }, { store:approval_take("a2") })
      local ids = {}
      for _, a in ipairs(store:approvals()) do ids[#ids + 1] = a.id end
      assert.same({ "a1", "a2" }, ids)
    end)

    it("lets approvals expire with their ttl, a grant's from when it was given", function()
      store:approval_open("a", { server = "s", tool = "t" }, 60, 1)
      now = 1050
      store:approval_decide("a", "grant")
      now = 1100 -- past the request's first ttl, within the grant's
      assert.equal("granted", store:approval("a").status)
      now = 1111
      assert.is_nil(store:approval("a"))
      assert.same({ false }, { store:approval_take("a") })
      assert.equal("NOT_FOUND", select(3, store:approval_decide("a", "grant")))
      assert.same({}, store:approvals())
      assert.is_true(store:approval_open("a", { server = "s", tool = "t" }, 60, 1))
    end)

    it("reports a pin change once per registry and keeps a server's first quarantine", function()
      local change = { tool = "t", change = "changed", pin = "p1", upstream_pin = "p2" }
      assert.is_true(store:pin_report("h1", "s", "t", change))
      assert.is_false(store:pin_report("h1", "s", "t", change))
      assert.is_true(store:pin_report("h2", "s", "t", change))
      assert.is_true(store:pin_report("h1", "s", "n", { tool = "n", change = "added" }))
      assert.same(change, store:pin_change("h1", "s", "t"))
      assert.is_nil(store:pin_change("h1", "s", "n")) -- added, not changed
      assert.is_nil(store:pin_change("h3", "s", "t"))
      assert.equal(3, #store:pin_reports())
      assert.is_nil(store:server_quarantine("h1", "s"))
      store:quarantine_server("h1", "s", "first")
      store:quarantine_server("h1", "s", "second")
      assert.equal("first", store:server_quarantine("h1", "s").reason)
      assert.is_nil(store:server_quarantine("h2", "s"))
      local qs = store:quarantined_servers()
      assert.equal(1, #qs)
      assert.same({ "h1", "s", "first" }, { qs[1].registry_hash, qs[1].server, qs[1].reason })
    end)
  end)
end

describe("toolgate.state.sqlite", function()
  it("keeps everything across a reopen, and the decision log in order", function()
    local path = tmpdb()
    local a = assert(sqlite.open(path))
    a:verified("s", "t", '"e1"')
    a:approval_open("x", { server = "s", tool = "t", binding = { args_digest = "d" } }, 3600, 1)
    a:pin_report("h", "s", "t", { tool = "t", change = "removed" })
    a:log('{"n":1}')
    a:log('{"n":2}')
    a:close()
    local b = assert(sqlite.open(path))
    assert.equal('"e1"', b:get("s", "t").verified_epoch)
    assert.equal("d", b:approval("x").binding.args_digest)
    assert.equal("removed", b:pin_reports()[1].change.change)
    local log = b:log_lines(0)
    assert.same({ '{"n":1}', '{"n":2}' }, { log[1].line, log[2].line })
    assert.same({ '{"n":2}' }, { b:log_lines(log[1].seq)[1].line })
    b:close()
    os.remove(path)
  end)

  it("sees another connection's pin change and quarantine at once (the per-call reads are memoized)", function()
    local path = tmpdb()
    local a, b = assert(sqlite.open(path)), assert(sqlite.open(path))
    assert.is_nil(a:pin_change("h", "s", "t"))
    assert.is_nil(a:server_quarantine("h", "s"))
    b:pin_report("h", "s", "t", { tool = "t", change = "changed" })
    b:quarantine_server("h", "s", "by b")
    assert.equal("changed", a:pin_change("h", "s", "t").change)
    assert.equal("by b", a:server_quarantine("h", "s").reason)
    -- and its own writes
    assert.is_nil(a:pin_change("h", "s", "u"))
    a:pin_report("h", "s", "u", { tool = "u", change = "changed" })
    assert.equal("changed", a:pin_change("h", "s", "u").change)
    a:close()
    b:close()
    os.remove(path)
  end)

  it("says why when the file cannot be opened", function()
    local s, err = sqlite.open("/nonexistent-dir/state.sqlite")
    assert.is_nil(s)
    assert.matches("cannot open", err)
  end)

  it("lets exactly N calls through a grant of N uses when several processes take them at once", function()
    local path = tmpdb()
    local s = assert(sqlite.open(path))
    s:approval_open("shared", { server = "s", tool = "t" }, 3600, 25)
    s:approval_decide("shared", "grant")
    s:close()
    -- 4 processes, 20 attempts each, all started before any finishes
    local script = h.tmpname(".lua")
    h.write_file(script, 'local s = assert(require("toolgate.state.sqlite").open(arg[1]))\n'
      .. "local n = 0\nfor _ = 1, 20 do if s:approval_take('shared') then n = n + 1 end end\nprint(n)\n")
    local cmd = {}
    for i = 1, 4 do
      cmd[#cmd + 1] = h.lua .. " " .. q(script) .. " " .. q(path) .. " > " .. q(path .. ".out" .. i) .. " &"
    end
    cmd[#cmd + 1] = "wait"
    assert.equal(0, (h.run("sh -c " .. q(table.concat(cmd, " ")))))
    local total = 0
    for i = 1, 4 do total = total + assert(tonumber(h.read_file(path .. ".out" .. i))) end
    assert.equal(25, total)
    assert.equal("used", assert(sqlite.open(path)):approval("shared").status)
    for i = 1, 4 do os.remove(path .. ".out" .. i) end
    os.remove(script)
  end)
end)
