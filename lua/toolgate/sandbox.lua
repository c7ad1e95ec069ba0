--- toolgate.sandbox: where policy code runs.
--
-- Like Redis scripting: an allow-list environment (unknown globals raise,
-- globals cannot be set), text chunks only, and an instruction budget on
-- every call into policy code, enforced by a count hook.  Under LuaJIT a
-- count hook never fires inside JIT-compiled code, so every policy chunk
-- (and each function it defines, now or later) has the JIT switched off,
-- and so has this module: the work it does inside a call counts too.
--
-- One call into policy code (M.call, M.call_then, M.load) is one protected
-- call under the budget that runs, in order: the policy function; the copy
-- of whatever it returned into plain values (M.plain: nil, booleans,
-- numbers, strings, toolgate.null, exact-number boxes (made afresh from
-- their text), tables of those read with next only, array marks kept as
-- toolgate.array_mt; no other metatable, function (but in a
-- policy file's own table), coroutine or userdata crosses out, cycles are
-- refused, depth and entries bounded); and the caller's reading of those
-- copies (call_then's reader: tostring of a reason, checks of kinds).  So
-- no policy metamethod (__index, __pairs, __tostring, __eq, ...) ever runs
-- outside the pcall and the budget, and every failure, a spent budget
-- included, comes back as false, message: the caller's POLICY_ERROR.
--
-- Bounded, in every call, under Lua 5.4 and LuaJIT alike:
--   * VM instructions (budget, counted in steps of HOOK_EVERY); a policy's
--     own pcall/xpcall cannot swallow a spent budget, and an xpcall handler
--     is not called for it (it would run where the hook raised, unhooked);
--   * the library functions whose work is not one instruction's: the
--     string library (also as methods, ("x"):rep(n): the string metatable's
--     __index is this module's bounded table for the length of the call,
--     and put back after it, also on error), table.concat/insert/remove/
--     sort/unpack/move, tonumber.  Each charges its work to the budget
--     (built or scanned bytes at BYTES_PER_INSTRUCTION, moved values at one
--     each, estimated pattern steps at STEPS_PER_INSTRUCTION) before it
--     runs, and refuses outright what is over its limit: a built string over
--     MAX_BUILD_BYTES (rep with or without sep, format, table.concat, gsub),
--     a format width or precision over MAX_FORMAT_WIDTH, a pattern subject
--     over MAX_SUBJECT_BYTES, a pattern whose estimated work (pattern_work)
--     is over MAX_PATTERN_WORK.  string.dump and Lua 5.4's string.pack,
--     packsize and unpack are not there.
--   * what a function returns: MAX_RESULT_DEPTH, MAX_RESULT_ENTRIES.
-- Not bounded: memory and time spent by single VM instructions on values
-- the policy made itself.  The `..` operator is one instruction whatever
-- the length of its result (thirty doublings of a string make a GiB), and
-- so is a call passing a long vararg list, a table constructor of one, or
-- a comparison of two long strings; neither interpreter lets Lua code put a
-- bound on its allocator.  Policies are the operator's code: the sandbox
-- guards against their mistakes and against the inputs an attacker writes
-- (which reach a policy only as strings the core's limits bounded), not
-- against a policy written to exhaust memory.  A policy given as a Lua
-- table is the host's code: its functions run under the budget, with the
-- bounded string methods, but see the host's globals; none may yield.
-- @module toolgate.sandbox

local value = require "toolgate.value"

local jit = rawget(_G, "jit")
if jit then jit.off(true, true) end -- this chunk and every function in it

local M = {}

M.DEFAULT_BUDGET = 1000000     -- VM instructions per call into policy code
M.MAX_RESULT_DEPTH = 32        -- tables inside tables in what a policy function returns
M.MAX_RESULT_ENTRIES = 10000   -- table entries in all it returns (a policy file's table: only the budget)
M.MAX_BUILD_BYTES = 1048576    -- the string string.rep, string.format, table.concat or string.gsub builds
M.MAX_FORMAT_WIDTH = 99        -- width and precision of one string.format item
M.MAX_SUBJECT_BYTES = 262144   -- the subject of string.find, match, gmatch, gsub (a gsub's room to grow)
M.MAX_PATTERN_WORK = 10000000  -- estimated steps of one find, match, gmatch or gsub (pattern_work)
M.BYTES_PER_INSTRUCTION = 64   -- built or scanned bytes that cost one instruction of the budget
M.STEPS_PER_INSTRUCTION = 16   -- estimated pattern steps that cost one instruction
local HOOK_EVERY = 1000        -- the count hook's period

local unpack = table.unpack or rawget(_G, "unpack")
local getinfo, gethook, sethook, raw_getmetatable = debug.getinfo, debug.gethook, debug.sethook, debug.getmetatable
local s_byte, s_char, s_find, s_format, s_gmatch, s_gsub, s_match, s_rep, s_sub =
  string.byte, string.char, string.find, string.format, string.gmatch, string.gsub, string.match, string.rep,
  string.sub
local t_concat, t_insert, t_remove, t_sort = table.concat, table.insert, table.remove, table.sort
local t_move, t_pack = rawget(table, "move"), rawget(table, "pack") -- move: both; pack: Lua 5.4
local floor, max, log = math.floor, math.max, math.log
local string_mt = raw_getmetatable("")

-- The error a spent budget raises: a unique value, so a policy's own pcall
-- cannot swallow it (the sandboxed pcall rethrows it).
local BUDGET = setmetatable({}, { __tostring = function() return "instruction budget exceeded" end })

-- The call under way: instructions left, and the hook's period (0: none).
local left, step = 0, 0

local function pack(...) return { n = select("#", ...), ... } end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- charge(units): spends units instructions of the call's budget.
local function charge(units)
  if step > 0 and units > 0 then
    left = left - units
    if left <= 0 then error(BUDGET, 0) end
  end
end

local function charge_bytes(n) charge(n / M.BYTES_PER_INSTRUCTION) end

local run -- below; the hook knows its frame

local function on_count()
  -- the instructions run runs after its pcall returned, before it puts the
  -- host's hook back, are not the policy's: an error there would escape
  if getinfo(2, "f").func == run then return end
  left = left - step
  if left <= 0 then error(BUDGET, 0) end
end

-- A policy's pcall/xpcall: whatever it caught, a spent budget goes on.
local function rethrowing(protected)
  return function(...)
    local r = pack(protected(...))
    if step > 0 and left <= 0 then error(BUDGET, 0) end
    return unpack(r, 1, r.n)
  end
end

local policy_pcall, rethrowing_xpcall = rethrowing(pcall), rethrowing(xpcall)

-- Both interpreters run a message handler where the error was raised, and
-- for the budget's error that is inside the count hook, with hooks off: a
-- handler called then would run unbounded.  So it is not called then.
local function policy_xpcall(f, handler, ...)
  if type(handler) ~= "function" then return rethrowing_xpcall(f, handler, ...) end
  return rethrowing_xpcall(f, function(e)
    if e == BUDGET or (step > 0 and left <= 0) then return e end
    return handler(e)
  end, ...)
end

-- Helpers policies may require (the only modules they can).
local HELPERS = {}

--- Makes module available to policies as require(name).
function M.register_helper(name, module)
  HELPERS[name] = module
end

-- The bounded string and table functions.

-- The length of a string argument as the library sees it; nil for a value
-- the library refuses (then the real function says so).
local function len_of(v)
  local t = type(v)
  if t == "string" then return #v end
  if t == "number" then return #tostring(v) end
end

-- The bytes s:sub(i, j) and s:byte(i, j) cover (Lua's rules for i and j).
local function span(n, i, j)
  i, j = tonumber(i), tonumber(j)
  if not i or not j then return 0 end
  if i < 0 then i = n + i + 1 end
  if j < 0 then j = n + j + 1 end
  if i < 1 then i = 1 end
  if j > n then j = n end
  return j >= i and j - i + 1 or 0
end

-- over(what, size, limit_name, level): the error of a limit, raised at the
-- policy's line (level: the policy's frame as error counts it from here).
local function over(what, size, limit_name, level)
  error(s_format("%s: %s is over the policy limit %s = %d", what, size, limit_name, M[limit_name]), level)
end

-- Refuses a string of bytes over MAX_BUILD_BYTES, else charges it; for the
-- functions the policy called.
local function build_check(what, bytes)
  if bytes > M.MAX_BUILD_BYTES then over(what, s_format("a result of %.0f bytes", bytes), "MAX_BUILD_BYTES", 4) end
  charge_bytes(bytes)
end

-- class_end(p, i, len) -> the index after the single-character class at i
-- (lstrlib's classEnd: %x, [set] with its first character and escapes, or
-- one character); len + 1 when p ends first (the real function reports it).
local function class_end(p, i, len)
  local c = s_byte(p, i)
  if c == 37 then return i + 2 end -- %x
  if c ~= 91 then return i + 1 end -- one character
  i = i + 1
  if s_byte(p, i) == 94 then i = i + 1 end
  repeat
    if i > len then return len + 1 end
    local d = s_byte(p, i)
    i = i + 1
    if d == 37 then i = i + 1 end
  until i > len or s_byte(p, i) == 93
  return i + 1
end

-- How many places of s a single-character item (at p[i..e-1]) matches: the
-- starts an unanchored pattern that begins with it can get past it from.
local function item_count(s, p, i, e)
  local item = s_sub(p, i, e - 1)
  local c = s_byte(item, 1)
  if c == 46 then return #s end -- "." matches everywhere
  if c ~= 37 and c ~= 91 and not s_find(item, "^%w") then
    item = "%" .. item -- a punctuation character, as itself
  end
  charge_bytes(#s)
  local _, count = s_gsub(s, item, "")
  return count
end

--- pattern_work(s, p, anchorable) -> the estimated steps of matching the
-- Lua pattern p against the subject s (all of a gmatch or gsub).
-- Lua patterns backtrack: an item quantified with *, + or - tries every
-- length it can take and the rest of the pattern after each, and %b and
-- back-references scan.  With n = #s, m = #p, k such items (not counting a
-- *, + or - item that ends the pattern: it scans once and then succeeds),
-- o items quantified with ?, and S starts (1 when anchored with ^, else
-- the places of s its first item matches when that item is one character
-- class with no quantifier or +, else n + 1):
--   work = m * (n + 1 + S * C(n + k, k) * 2^o)
-- The lengths the k items take along one path sum to at most n, so one
-- start has at most C(n + k, k) * 2^o paths, each of at most m item steps.
-- An estimate, sound up to a small factor; for the pattern
-- "^/srv/(.-)/(.-)/(.-)/(.-)%.txt$" (k = 4) over 2,000 bytes it is about
-- 2e13, and the real matcher takes minutes.
function M.pattern_work(s, p, anchorable)
  local n, m = #s, #p
  if not s_find(p, "[][^$*+?.()%%-]") then return max(m, 1) * (n + 1 + n + 1) end -- a literal
  local i, anchored = 1, false
  if anchorable and s_byte(p, 1) == 94 then anchored, i = true, 2 end
  local k, o, pending = 0, 0, 0
  local first_i, first_e, first_ok -- the first item, when it bounds the starts
  while i <= m do
    local c = s_byte(p, i)
    local c2 = s_byte(p, i + 1)
    if c == 40 or c == 41 then -- captures cost nothing
      i = i + 1
    elseif c == 36 and i == m then -- "$" at the end: the item before it can fail after its scan
      k, pending, i = k + pending, 0, i + 1
    elseif c == 37 and c2 == 98 then -- %bxy scans
      k, pending, i = k + pending + 1, 0, i + 4
      first_ok = first_ok or false
    elseif c == 37 and c2 == 102 then -- %f[set] tests one place
      k, pending, i = k + pending, 0, class_end(p, i + 2, m)
      first_ok = first_ok or false
    elseif c == 37 and c2 and c2 >= 48 and c2 <= 57 then -- a back-reference compares
      k, pending, i = k + pending + 1, 0, i + 2
      first_ok = first_ok or false
    else
      local e = class_end(p, i, m)
      local q = s_byte(p, e)
      k, pending = k + pending, 0
      if first_ok == nil then
        first_ok, first_i, first_e = q ~= 42 and q ~= 45 and q ~= 63, i, e
      end
      if q == 42 or q == 43 or q == 45 then
        pending, i = 1, e + 1
      elseif q == 63 then
        o, i = o + 1, e + 1
      else
        i = e
      end
    end
  end
  local starts = n + 1
  if anchored then
    starts = 1
  elseif k > 0 and first_ok then
    starts = item_count(s, p, first_i, first_e)
  end
  local paths = 2 ^ o
  for j = 1, k do paths = paths * (n + j) / j end
  return max(m, 1) * (n + 1 + starts * paths)
end

-- Refuses a subject or pattern over the limits, and charges the work.
local function bound_pattern(what, s, p, anchorable, plain)
  local n, m = len_of(s), len_of(p)
  if not n or not m then return end -- the real function names the bad argument
  if n > M.MAX_SUBJECT_BYTES then
    error(s_format("%s: a subject of %d bytes is over the policy limit MAX_SUBJECT_BYTES = %d",
      what, n, M.MAX_SUBJECT_BYTES), 3)
  end
  local work = plain and max(m, 1) * (n + 1) or M.pattern_work(tostring(s), tostring(p), anchorable)
  if work > M.MAX_PATTERN_WORK then
    local shown = tostring(p)
    if #shown > 60 then shown = s_sub(shown, 1, 57) .. "..." end
    error(s_format("%s: the pattern %q over %d bytes may take about %.3g steps, over the policy limit "
      .. "MAX_PATTERN_WORK = %d", what, shown, n, work, M.MAX_PATTERN_WORK), 3)
  end
  charge(work / M.STEPS_PER_INSTRUCTION)
  return n
end

-- The bounded string library: string methods see this table during a call
-- (policies never reach it: each environment has its own copy as `string`).
local STRING = {
  len = string.len,
}

function STRING.byte(s, i, j)
  local n = len_of(s)
  if n then
    local from = i == nil and 1 or i
    charge(span(n, from, j == nil and from or j))
  end
  return s_byte(s, i, j)
end

function STRING.char(...)
  charge_bytes(select("#", ...))
  return s_char(...)
end

function STRING.sub(s, i, j)
  local n = len_of(s)
  if n then charge_bytes(span(n, i == nil and 1 or i, j == nil and -1 or j)) end
  return s_sub(s, i, j)
end

for _, name in ipairs({ "lower", "upper", "reverse" }) do
  local f = string[name]
  STRING[name] = function(s)
    charge_bytes(len_of(s) or 0)
    return f(s)
  end
end

function STRING.rep(s, n, sep)
  local ls, lsep, count = len_of(s), sep == nil and 0 or len_of(sep), tonumber(n)
  if ls and lsep and count and count > 0 then
    -- also the count: rep("", 2^62) copies nothing 2^62 times
    local bytes = ls * count + lsep * (count - 1)
    if count > M.MAX_BUILD_BYTES or bytes > M.MAX_BUILD_BYTES then
      over("string.rep", s_format("a result of %.0f bytes (%.0f copies)", bytes, count), "MAX_BUILD_BYTES", 3)
    end
    charge_bytes(max(count, bytes))
  end
  return s_rep(s, n, sep)
end

-- The bytes one format item can give: its width, and what its argument
-- can take (%s: the argument; %q: every byte escaped; numbers: 512).
local function format_item(conv, width, precision, arg)
  if conv == "s" then return max(width, len_of(arg) or 0) end
  if conv == "q" then return type(arg) == "string" and 4 * #arg + 2 or 512 end
  if conv == "c" then return max(width, 1) end
  return width + precision + 512
end

function STRING.format(fmt, ...)
  if type(fmt) ~= "string" then return s_format(fmt, ...) end
  local args = pack(...)
  local total, argi, i, n = 0, 0, 1, #fmt
  while i <= n do
    local pct = s_find(fmt, "%", i, true)
    if not pct then
      total = total + n - i + 1
      break
    end
    total = total + pct - i
    if s_byte(fmt, pct + 1) == 37 then
      total, i = total + 1, pct + 2
    else
      local _, e, width, precision, conv = s_find(fmt, "^[-+ #0]*(%d*)%.?(%d*)(.?)", pct + 1)
      width, precision = tonumber(width) or 0, tonumber(precision) or 0
      if width > M.MAX_FORMAT_WIDTH or precision > M.MAX_FORMAT_WIDTH then
        over("string.format", s_format("the item %q", s_sub(fmt, pct, e)), "MAX_FORMAT_WIDTH", 3)
      end
      argi = argi + 1
      -- %s of a table: its __tostring runs here, once, under the budget, so
      -- the bytes it gives are known before the real format copies them
      if conv == "s" and argi <= args.n and len_of(args[argi]) == nil then args[argi] = tostring(args[argi]) end
      total, i = total + format_item(conv, width, precision, args[argi]), e + 1
    end
  end
  build_check("string.format", total)
  return s_format(fmt, unpack(args, 1, args.n))
end

function STRING.find(s, p, init, plain)
  bound_pattern("string.find", s, p, true, plain)
  return s_find(s, p, init, plain)
end

function STRING.match(s, p, init)
  bound_pattern("string.match", s, p, true)
  return s_match(s, p, init)
end

function STRING.gmatch(s, p, ...)
  bound_pattern("string.gmatch", s, p, false)
  return s_gmatch(s, p, ...)
end

-- The replacement string's literal bytes, its %0s and the captures its
-- %1..%9 name.
local function replacement_shape(r)
  local zeros, digits = 0, {}
  local i = 1
  while true do
    i = s_find(r, "%", i, true)
    if not i then break end
    local d = s_byte(r, i + 1)
    if d == 48 then zeros = zeros + 1
    elseif d and d > 48 and d <= 57 then digits[#digits + 1] = d - 48 end
    i = i + 2
  end
  return #r, zeros, digits
end

function STRING.gsub(s, p, repl, max_n)
  local n = bound_pattern("string.gsub", s, p, true)
  if not n then return s_gsub(s, p, repl, max_n) end
  local total = n -- the subject, plus every replacement
  local function add(v)
    local lv = len_of(v)
    if lv then
      total = total + lv
      if total > M.MAX_BUILD_BYTES then
        error(s_format("string.gsub: a result of more than %d bytes is over the policy limit MAX_BUILD_BYTES = %d",
          total, M.MAX_BUILD_BYTES), 0)
      end
      charge_bytes(lv)
    end
    return v
  end
  local kind = type(repl)
  if kind == "string" or kind == "number" then
    local literal, zeros, digits = replacement_shape(tostring(repl))
    local matches = n + 1
    if tonumber(max_n) and tonumber(max_n) < matches then matches = max(floor(tonumber(max_n)), 0) end
    if zeros + #digits > 0 or total + matches * literal > M.MAX_BUILD_BYTES then
      -- count what the replacements take: one more pass over s (keeping it)
      bound_pattern("string.gsub", s, p, true)
      local count, captured = 0, 0
      s_gsub(s, p, function(...)
        count = count + 1
        for _, d in ipairs(digits) do captured = captured + (len_of((select(d, ...))) or 0) end
      end, max_n)
      -- a %0 is the whole match: all of them together at most the subject
      total = total + count * literal + captured + zeros * n
    else
      total = total + matches * literal
    end
    build_check("string.gsub", total)
  elseif kind == "table" then
    charge_bytes(n)
    local t = repl
    repl = function(key) return add(t[key]) end
  elseif kind == "function" then
    charge_bytes(n)
    local f = repl
    repl = function(...) return add((f(...))) end
  end
  return s_gsub(s, p, repl, max_n)
end

local TABLE = {}

-- list[i..j] as table.concat reads it, checked and counted first.
function TABLE.concat(list, sep, i, j)
  local lsep = sep == nil and 0 or len_of(sep)
  if type(list) ~= "table" or not lsep then return t_concat(list, sep, i, j) end
  local first, last = tonumber(i == nil and 1 or i), tonumber(j == nil and #list or j)
  if not first or not last then return t_concat(list, sep, i, j) end
  local pieces, count, total = {}, 0, 0
  for k = first, last do
    local v = list[k]
    local lv = len_of(v)
    if not lv then error(s_format("invalid value (at index %d) in table for 'concat'", k), 2) end
    total = total + lv + (count > 0 and lsep or 0)
    if total > M.MAX_BUILD_BYTES then
      over("table.concat", s_format("a result of more than %d bytes", total), "MAX_BUILD_BYTES", 3)
    end
    count = count + 1
    pieces[count] = v
  end
  charge_bytes(total)
  return t_concat(pieces, sep)
end

-- The values a shift moves: table.insert(t, pos, v) and table.remove(t, pos).
function TABLE.insert(t, ...)
  if type(t) == "table" and select("#", ...) == 2 then charge(#t - (tonumber((...)) or #t) + 1) end
  return t_insert(t, ...)
end

function TABLE.remove(t, ...)
  local pos = select("#", ...) > 0 and tonumber((...)) or nil
  if type(t) == "table" and pos then charge(#t - pos) end
  return t_remove(t, ...)
end

function TABLE.sort(t, cmp)
  if type(t) == "table" then
    local n = #t
    if n > 1 then charge(n * log(n) / log(2)) end
  end
  return t_sort(t, cmp)
end

function TABLE.unpack(t, i, j)
  if type(t) == "table" then
    local first, last = tonumber(i == nil and 1 or i), tonumber(j == nil and #t or j)
    if first and last then charge(last - first + 1) end
  end
  return unpack(t, i, j)
end

if t_move then
  function TABLE.move(a1, f, e, ...)
    local from, to = tonumber(f), tonumber(e)
    if from and to then charge(to - from + 1) end
    return t_move(a1, f, e, ...)
  end
end

if t_pack then
  function TABLE.pack(...)
    charge(select("#", ...))
    return t_pack(...)
  end
end

local function safe_tonumber(v, base)
  if type(v) == "string" then charge_bytes(#v) end
  return tonumber(v, base)
end

-- Results: plain values only.

-- What may cross out: the caller's reading of the results, and at load a
-- policy file's table, whose functions are its stages and hooks.
local RESULT = { functions = false, max_entries = M.MAX_RESULT_ENTRIES }
local POLICY = { functions = true, max_entries = math.huge }

-- Each environment's own array mark and exact-number metatable (policies
-- never see toolgate.array_mt or toolgate.exact_mt, which every array and
-- box of the host shares), weakly.
local MARKS = setmetatable({}, { __mode = "k" })
local EXACT = setmetatable({}, { __mode = "k" })

local function where(path)
  if #path == 0 then return "" end
  local parts = {}
  for i, k in ipairs(path) do parts[i] = type(k) == "string" and "." .. k or "[" .. tostring(k) .. "]" end
  return " at " .. t_concat(parts)
end

local function refuse(state, what)
  error("a policy function returned " .. what .. where(state.path)
    .. "; what policy code returns must be plain values (nil, booleans, numbers, strings, null, exact-number "
    .. "boxes, plain tables)", 0)
end

local function plain(v, depth, state)
  local t = type(v)
  if t == "string" or t == "number" or t == "boolean" or t == "nil" then return v end
  if value.null ~= nil and v == value.null then return v end
  if t == "function" and state.mode.functions then return v end
  if t ~= "table" then refuse(state, "a " .. t) end
  if depth > M.MAX_RESULT_DEPTH then
    refuse(state, "tables nested deeper than MAX_RESULT_DEPTH = " .. M.MAX_RESULT_DEPTH)
  end
  if state.open[v] then refuse(state, "a table that contains itself (a cycle)") end
  local mt = raw_getmetatable(v)
  if mt == value.exact_mt or EXACT[mt] then -- a number a double cannot hold: a fresh box, a value
    local text = rawget(v, "text")
    if type(text) ~= "string" or not value.is_number_text(text) then
      refuse(state, "an exact-number box without a JSON number text")
    end
    return value.box(text)
  end
  local out = {}
  if mt ~= nil then
    if not (value.is_array_mt(mt) or MARKS[mt]) then refuse(state, "a table with a metatable") end
    setmetatable(out, value.array_mt)
  end
  state.open[v] = true
  local path = state.path
  local k, x = next(v)
  while k ~= nil do
    local tk = type(k)
    if tk ~= "string" and tk ~= "number" then refuse(state, "a table with a key of type " .. tk) end
    state.entries = state.entries + 1
    if state.entries > state.mode.max_entries then
      refuse(state, "more than MAX_RESULT_ENTRIES = " .. M.MAX_RESULT_ENTRIES .. " table entries")
    end
    path[depth] = k
    out[k] = plain(x, depth + 1, state)
    path[depth] = nil
    k, x = next(v, k)
  end
  state.open[v] = nil
  return out
end

--- plain(v[, functions]) -> a copy of v in plain values | raises
-- The copy every result of policy code goes through (inside the call, see
-- the module comment); functions = true lets functions through as they are.
function M.plain(v, functions)
  return plain(v, 1, { open = {}, entries = 0, path = {}, mode = functions and POLICY or RESULT })
end

-- Environments and calls.

--- A fresh environment for one policy chunk.
function M.environment()
  local array_mt = { __name = "toolgate.array" }
  MARKS[array_mt] = true
  local exact_mt = copy(value.exact_mt) -- the same metamethods: boxes still compare alike
  EXACT[exact_mt] = true
  local own = setmetatable({}, { __mode = "k" }) -- the metatables this policy set
  local env = {
    assert = assert, error = error, ipairs = ipairs, pairs = pairs, next = next,
    select = select, tonumber = safe_tonumber, tostring = tostring, type = type,
    rawequal = rawequal, rawget = rawget, rawset = rawset,
    -- a __gc finalizer would run later, outside any budget.  Lua 5.4
    -- marks a table for finalization here or never: a __gc (any value, a
    -- placeholder too) in mt now is refused, one added later is never called
    setmetatable = function(t, mt)
      if type(mt) == "table" then
        if rawget(mt, "__gc") ~= nil then
          error("a policy may not set a __gc finalizer: it would run outside the instruction budget", 2)
        end
        own[mt] = true
      end
      return setmetatable(t, mt)
    end,
    unpack = TABLE.unpack,
    -- only the policy's own metatables: getmetatable("") would hand out the
    -- real string library, the host's array mark and box metatable are
    -- shared by every array and box it makes, and a __gc put in any host
    -- metatable would be called for the host's next object
    getmetatable = function(v)
      local mt = raw_getmetatable(v)
      if mt == nil or type(v) == "string" then return nil end
      if value.is_array_mt(mt) then return array_mt end
      if mt == value.exact_mt then return exact_mt end
      if own[mt] then return getmetatable(v) end
      return nil
    end,
    pcall = policy_pcall,
    xpcall = policy_xpcall,
    string = copy(STRING),
    table = copy(TABLE),
    math = copy(math),
    os = { time = os.time, clock = os.clock },
    null = value.null,
    array_mt = array_mt,
    require = function(name)
      local h = HELPERS[name]
      if h == nil then error("a policy may only require toolgate's helpers, not '" .. tostring(name) .. "'", 2) end
      return h
    end,
  }
  env._G = env
  return setmetatable(env, {
    __index = function(_, k)
      error("unknown global '" .. tostring(k) .. "' (policies run in a sandbox: no io, os, debug, load, ...)", 2)
    end,
    __newindex = function(_, k)
      error("a policy may not set the global '" .. tostring(k) .. "'; use local", 2)
    end,
  })
end

-- Inside the pcall: the function, the copies, the caller's reading.
local SCALAR = { string = true, number = true, boolean = true, ["nil"] = true }

local function protected(mode, reader, context, fn, ...)
  local r = pack(fn(...))
  local state
  for i = 1, r.n do
    if not SCALAR[type(r[i])] then
      state = state or { open = {}, entries = 0, path = {}, mode = mode }
      r[i] = plain(r[i], 1, state)
    end
  end
  if reader then return pack(reader(context, unpack(r, 1, r.n))) end
  return r
end

-- An error value as text, without running anything of the policy's.
local function message_of(e)
  if type(e) == "string" then return e end
  if type(e) == "number" then return tostring(e) end
  return "a policy raised a " .. type(e) .. " as its error (not a message)"
end

-- Counting one instruction at a time (an --explain trace saying what a
-- policy function used of its budget), and what the last call used.
local precise, last_spent = false, 0

run = function(budget, mode, reader, context, fn, ...)
  local old_hook, old_mask, old_count = gethook()
  local outer_left, outer_step, index = left, step, string_mt.__index
  left, step = budget, (precise and 1) or (budget < HOOK_EVERY and budget) or HOOK_EVERY
  string_mt.__index = STRING
  sethook(on_count, "", step)
  local ok, r = pcall(protected, mode, reader, context, fn, ...)
  if old_hook then sethook(old_hook, old_mask, old_count) else sethook() end
  last_spent = budget - left
  string_mt.__index, left, step = index, outer_left, outer_step
  if ok then return true, unpack(r, 1, r.n) end
  if r == BUDGET then return false, "instruction budget of " .. budget .. " exceeded" end
  return false, message_of(r)
end

--- counted(fn, ...) -> spent, fn's results: runs fn (which calls into
-- policy code through this module) with the budget counted one instruction
-- at a time, not in steps of HOOK_EVERY; spent is what the last call into
-- policy code charged to its budget (its instructions, the work of the
-- bounded library functions, the copy of its results).  Slower: for
-- traces, not for the fast path.
function M.counted(fn, ...)
  precise, last_spent = true, 0
  local r = pack(pcall(fn, ...))
  precise = false
  if not r[1] then error(r[2], 0) end
  return last_spent, unpack(r, 2, r.n)
end

--- Calls fn under an instruction budget.
-- call(budget, fn, ...) -> true, results... | false, message
-- Runs fn with the count hook armed and the bounded string methods, copies
-- its results into plain values (M.plain) inside the same protected call,
-- and restores whatever hook and string methods were there.
function M.call(budget, fn, ...)
  return run(budget, RESULT, nil, nil, fn, ...)
end

--- Calls fn, then reads its results, both under the budget.
-- call_then(budget, reader, context, fn, ...) -> true, reader's results... | false, message
-- As call, and then reader(context, plain results...) in the same
-- protected call: the caller's checks of what fn returned; an error the
-- reader raises is the policy's (false, message), like one fn raises.
function M.call_then(budget, reader, context, fn, ...)
  return run(budget, RESULT, reader, context, fn, ...)
end

--- confine(t): switches the JIT off for every function in the table t (and
-- the tables in it), so the budget holds for policies given as Lua tables
-- too.  A file's chunk is switched off as a whole in load().  (Under LuaJIT
-- a function a table-policy calls that was defined elsewhere keeps its JIT:
-- give policies as files when the budget must bound everything.)
function M.confine(t, seen)
  if not jit then return end
  seen = seen or {}
  if seen[t] then return end
  seen[t] = true
  for _, v in pairs(t) do
    if type(v) == "function" then jit.off(v, true)
    elseif type(v) == "table" then M.confine(v, seen) end
  end
end

--- load(text, chunkname, budget) -> the chunk's result | nil, message
-- Compiles text (never bytecode) in a fresh environment, switches the JIT
-- off for it, and runs it under the budget; its result is copied like any
-- other (plain values, and functions), so no table the policy's closures
-- can still reach, and no metatable, becomes part of the engine.
function M.load(text, chunkname, budget)
  local chunk, err = load(text, chunkname, "t", M.environment())
  if not chunk then return nil, err end
  if jit then jit.off(chunk, true) end
  local ok, result = run(budget or M.DEFAULT_BUDGET, POLICY, nil, nil, chunk)
  if not ok then return nil, result end
  return result
end

return M
