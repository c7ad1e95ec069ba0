-- toolgate.state: the contract's cases (spec/state_contract.lua) on the two
-- stores that run outside nginx, the in-process store and the SQLite file,
-- on a fake clock; spec/state_nginx_spec.lua runs the same cases on the
-- shared-dict and Redis stores, inside nginx.  Then what only a file can
-- do: survive a reopen, and be shared by several processes.
local h = require "helpers"
local state = require "toolgate.state"
local sqlite = require "toolgate.state.sqlite"
local contract = require "state_contract"

local q = h.shell_quote

-- the file behind each SQLite store the contract opened (its peer opens it
-- again); removed when the contract's cases are done
local opened = setmetatable({}, { __mode = "k" })
local files = {}

local function tmpdb()
  local path = h.tmpname(".sqlite")
  os.remove(path)
  return path
end

-- The stores this process can open; spec/state_nginx_spec.lua runs the same
-- cases on the shared-dict and Redis stores, inside nginx.
local STORES = {
  {
    name = "memory", clock = contract.fake_clock, clock_kind = "fake (the store's expiry follows it)",
    open = function(clock, opts)
      if opts.bounded then return nil, "in-process tables: no capacity of its own to fill" end
      if opts.unreachable then return nil, "in process: nothing to reach" end
      return state.memory({ clock = clock.now })
    end,
    peer = function() return nil, "in process: one handle is all there is" end,
  },
  {
    name = "sqlite", clock = contract.fake_clock, clock_kind = "fake (the store's expiry follows it)",
    open = function(clock, opts)
      if opts.bounded then return nil, "a file: it fills only with the disk" end
      if opts.unreachable then return nil, "a local file: nothing to reach" end
      local path = tmpdb()
      local s, err = sqlite.open(path, { clock = clock.now })
      files[#files + 1] = path
      if s then opened[s] = { path = path, clock = clock } end
      return s, err
    end,
    -- another connection on the same file
    peer = function(s, opts)
      if opts and opts.bounded then return nil, "a file: it fills only with the disk" end
      return assert(sqlite.open(opened[s].path, { clock = opened[s].clock.now }))
    end,
    settle = function() end,
  },
}

for _, st in ipairs(STORES) do
  describe("toolgate.state contract: " .. st.name .. " (clock: " .. st.clock_kind .. ")", function()
    for _, c in ipairs(contract.cases) do
      it(c.name, function()
        local status, message = contract.run_case(st, c)
        if status == "n/a" then
          io.stderr:write("# contract: " .. st.name .. ": n/a: " .. c.name .. ": " .. message .. "\n")
          pending("contract case n/a for " .. st.name .. ": " .. c.name .. ": " .. message)
          return
        end
        assert(status == "pass", st.name .. ": " .. c.name .. ": " .. tostring(message))
      end)
    end
    teardown(function()
      for _, path in ipairs(files) do
        for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
      end
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
    local after = assert(sqlite.open(path))
    assert.equal("used", after:approval("shared").status)
    after:close()
    for i = 1, 4 do os.remove(path .. ".out" .. i) end
    for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
    os.remove(script)
  end)

  it("lets exactly a quota's limit through when several processes (stdio proxies) take it at once", function()
    local path = tmpdb()
    assert(sqlite.open(path)):close()
    -- 4 processes, 20 takes each, of a limit of 23 in an hour's window
    local script = h.tmpname(".lua")
    h.write_file(script, 'local s = assert(require("toolgate.state.sqlite").open(arg[1]))\n'
      .. "local n = 0\nfor _ = 1, 20 do\n"
      .. "  if s:quota_take({ { key = 'q1:shared', limit = 23, window = 3600 } }) == true then n = n + 1 end\n"
      .. "end\nprint(n)\n")
    local cmd = {}
    for i = 1, 4 do
      cmd[#cmd + 1] = h.lua .. " " .. q(script) .. " " .. q(path) .. " > " .. q(path .. ".out" .. i) .. " &"
    end
    cmd[#cmd + 1] = "wait"
    assert.equal(0, (h.run("sh -c " .. q(table.concat(cmd, " ")))))
    local total = 0
    for i = 1, 4 do total = total + assert(tonumber(h.read_file(path .. ".out" .. i))) end
    assert.equal(23, total)
    for i = 1, 4 do os.remove(path .. ".out" .. i) end
    for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
    os.remove(script)
  end)
end)
