--- toolgate.quota: the built-in "quota" stage (docs/quotas.md).
--
-- A policy's quota = { rules = { ... } } limits how many calls a rule's
-- calls may make per window, counted in the engine's store
-- (store:quota_take: the shared dict of one nginx node, Redis for a fleet,
-- SQLite for the stdio proxy, memory for toolgate check).  A rule:
--   { server = "pay", tool = "transfer",   -- both optional: any
--     where = "/amount > 1000",            -- or a list of them, all must hold
--     limit = 3, window = 60,              -- at most 3 calls per 60 s window
--     per = "principal" }                  -- or "server", "context.KEY"; none: one count
-- Windows are fixed: they start at whole multiples of `window` seconds
-- since the epoch, so every node and process counts the same window.
-- The stage is the pipeline's last, and takes a slot only when no earlier
-- stage objected: a refused or deferred call spends nothing.
-- @module toolgate.quota

local core = require "toolgate.core"

local M = {}

-- Comparisons: a where is one "POINTER OP LITERAL".
local OPS = { ["=="] = true, ["!="] = true, ["<"] = true, ["<="] = true, [">"] = true, [">="] = true }

-- Decimal texts, compared exactly whatever their size ------------------------

-- A JSON number's text as sign, digits (no leading zeros) and the power of
-- ten of the first digit: "-1234.5e2" -> -1, "12345", 5 (0.12345e5); 0 -> 0.
local function decimal(text)
  local sign, int, frac, exp = text:match("^(%-?)(%d+)%.?(%d*)[eE]?([+-]?%d*)$")
  if not int then return nil end
  local digits = int .. frac
  local point = #int + (tonumber(exp) or 0)
  local lead = digits:find("[1-9]")
  if not lead then return 0, "", 0 end
  digits = digits:sub(lead):gsub("0+$", "")
  return sign == "-" and -1 or 1, digits, point - lead + 1
end

-- -> -1, 0, 1 as the number text a is below, equal to, above b
local function compare_numbers(a, b)
  local sa, da, pa = decimal(a)
  local sb, db, pb = decimal(b)
  if sa ~= sb then return sa < sb and -1 or 1 end
  if sa == 0 then return 0 end
  local mag
  if pa ~= pb then mag = pa < pb and -1 or 1
  elseif da == db then mag = 0
  else
    local n = math.max(#da, #db)
    local ta, tb = da .. string.rep("0", n - #da), db .. string.rep("0", n - #db)
    mag = ta < tb and -1 or 1
  end
  return mag * sa
end
M.compare_numbers = compare_numbers

local function holds(op, c)
  if op == "==" then return c == 0 elseif op == "!=" then return c ~= 0
  elseif op == "<" then return c < 0 elseif op == "<=" then return c <= 0
  elseif op == ">" then return c > 0 end
  return c >= 0
end

-- Predicates ----------------------------------------------------------------

-- A JSON number's text: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
local function is_number_text(s)
  local int, rest = s:match("^%-?(%d+)(.*)$")
  if not int or (#int > 1 and int:sub(1, 1) == "0") then return false end
  rest = rest:gsub("^%.%d+", "", 1)
  return rest == "" or rest:find("^[eE][+-]?%d+$") ~= nil
end

-- A JSON pointer's tokens ("/a/b~1c" -> { "a", "b/c" }), nil when it is not one.
local function tokens(pointer)
  if pointer:sub(1, 1) ~= "/" then return nil end
  local out = {}
  for raw in (pointer .. "/"):sub(2):gmatch("([^/]*)/") do
    if raw:find("~[^01]") or raw:find("~$") then return nil end
    out[#out + 1] = raw:gsub("~1", "/"):gsub("~0", "~")
  end
  return out
end

-- The literal of a where: a JSON number, a JSON string (with JSON's
-- escapes), true, false or null.  -> kind, value | nil, message
local function literal(text)
  if text == "true" or text == "false" then return "boolean", text == "true" end
  if text == "null" then return "null", nil end
  if text:sub(1, 1) == '"' then
    local doc = core.new_engine():parse(text)
    local v = doc and doc:root():value()
    if type(v) ~= "string" then return nil, "the literal " .. text .. " is not a JSON string" end
    return "string", v
  end
  if not is_number_text(text) then
    return nil, "the literal " .. text .. " is not a JSON number, a \"string\", true, false or null"
  end
  return "number", text
end

--- predicate(where) -> test | nil, message: where is "POINTER OP LITERAL"
-- ("/amount > 1000", "/to == \"acme\""); test(args_node) is true or false,
-- nil when the pointer finds no value (the rule does not apply).  A value
-- of another kind than the literal's (a string where a number was
-- expected) holds: a quota counts when in doubt.  Numbers compare by
-- their exact decimal value, strings by their bytes.
function M.predicate(where)
  if type(where) ~= "string" then return nil, "must be a string \"POINTER OP LITERAL\", not a " .. type(where) end
  local pointer, op, lit = where:match("^%s*(%S+)%s*([=!<>]=?)%s*(.-)%s*$")
  if not pointer or not OPS[op] or lit == "" then
    return nil, string.format("%q is not \"POINTER OP LITERAL\" (OP one of == != < <= > >=)", where)
  end
  local path = tokens(pointer)
  if not path then return nil, string.format("%q is not a JSON pointer (\"/amount\", \"/to/account\")", pointer) end
  local kind, want = literal(lit)
  if not kind then return nil, want end
  if (kind == "boolean" or kind == "null") and op ~= "==" and op ~= "!=" then
    return nil, op .. " compares numbers or strings, not " .. lit
  end
  return function(args)
    local node = args
    for _, t in ipairs(path) do
      if not node then return nil end
      local nt = node:type()
      if nt == "object" then node = node:get(t)
      elseif nt == "array" and t:find("^%d+$") and not t:find("^0%d") then node = node:at(tonumber(t) + 1)
      else return nil end
    end
    if not node then return nil end
    local nt = node:type()
    if kind == "null" or kind == "boolean" then
      local same = nt == kind and (kind == "null" or node:value() == want)
      if op == "==" then return same end
      return not same
    end
    if nt ~= kind then return true end
    if kind == "number" then return holds(op, compare_numbers(node:text(), want)) end
    local s = node:value()
    return holds(op, s == want and 0 or (s < want and -1 or 1))
  end
end

-- Rules ---------------------------------------------------------------------

local RULE_FIELDS = { server = true, tool = true, where = true, limit = true, window = true, per = true }
local MAX_WHOLE = 2147483647

local function whole(v, lo, hi)
  return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi
end

-- One rule, checked -> rule | nil, message, the field below the rule (".where")
local function compile_rule(r)
  if type(r) ~= "table" then return nil, "must be a rule table {limit =, window =, ...}, not a " .. type(r) end
  local names = {}
  for k in pairs(r) do names[#names + 1] = tostring(k) end
  table.sort(names)
  for _, k in ipairs(names) do
    if not RULE_FIELDS[k] then
      return nil, "unknown field (a rule has server, tool, where, limit, window and per)", "." .. k
    end
  end
  for _, k in ipairs({ "server", "tool" }) do
    if r[k] ~= nil and (type(r[k]) ~= "string" or r[k] == "") then
      return nil, "must be a non-empty string (leave it out for any)", "." .. k
    end
  end
  if not whole(r.limit, 1, MAX_WHOLE) then return nil, "must be a whole number of calls from 1 to 2^31-1", ".limit" end
  if not whole(r.window, 1, 366 * 86400) then
    return nil, "must be a whole number of seconds from 1 to a year", ".window"
  end
  local per = r.per
  if per ~= nil and per ~= "principal" and per ~= "server" and not (type(per) == "string" and per:find("^context%.."))
  then
    return nil, "must be \"principal\", \"server\" or \"context.KEY\" (leave it out for one count)", ".per"
  end
  local wheres = r.where
  if type(wheres) == "string" then wheres = { wheres } end
  if wheres ~= nil and type(wheres) ~= "table" then
    return nil, "must be a string \"POINTER OP LITERAL\" or a list of them", ".where"
  end
  local tests, texts = {}, {}
  for i, w in ipairs(wheres or {}) do
    local test, why = M.predicate(w)
    if not test then return nil, why, ".where" .. (type(r.where) == "table" and "[" .. i .. "]" or "") end
    tests[i], texts[i] = test, (w:gsub("^%s+", ""):gsub("%s+$", ""))
  end
  if wheres and #tests == 0 and next(wheres) ~= nil then return nil, "must be a list of strings", ".where" end
  -- what the rule's counts are kept under: the rule's own terms, not its
  -- place in the list (a reload that adds a rule keeps the others' counts)
  local base = table.concat({ r.server or "*", r.tool or "*", table.concat(texts, " && "), per or "",
    tostring(r.window) }, "\0")
  return { server = r.server, tool = r.tool, where = texts, tests = tests, limit = r.limit, window = r.window,
           per = per, base = base }
end

--- compile(settings) -> { rules = {...} } | nil, message, the field below
-- settings (".rules[2].where"): a policy's quota section, checked.
function M.compile(settings)
  if type(settings) ~= "table" then return nil, "must be a table { rules = { ... } }", "" end
  for k in pairs(settings) do
    if k ~= "rules" then return nil, "unknown setting (quota has rules)", "." .. tostring(k) end
  end
  local list = settings.rules
  if type(list) ~= "table" then return nil, "must be a list of rules", ".rules" end
  local n = 0
  for _ in pairs(list) do n = n + 1 end
  if n ~= #list then return nil, "must be a list of rules (no named keys)", ".rules" end
  local rules = {}
  for i, r in ipairs(list) do
    local rule, why, below = compile_rule(r)
    if not rule then return nil, why, ".rules[" .. i .. "]" .. (below or "") end
    rules[i] = rule
  end
  return { rules = rules }
end

-- The value of a rule's per for this call: "" when there is none (every
-- such call shares one count: an unnamed caller is not unlimited).
local function per_value(rule, server, ctx, principal)
  local per = rule.per
  local v
  if per == "principal" then v = principal
  elseif per == "server" then v = server
  elseif per then v = ctx and ctx[per:sub(9)] end
  if type(v) == "number" then v = string.format("%.17g", v) end
  if type(v) ~= "string" then return "" end
  return v
end

--- takes(quota, server, tool, args, ctx, principal) -> the store's takes
-- for this call: { {key =, limit =, window =, rule =}, ... } of every rule
-- that applies (args: the arguments node; ctx: the call's context table).
function M.takes(quota, server, tool, args, ctx, principal)
  local out = {}
  for _, rule in ipairs(quota.rules) do
    local applies = (rule.server == nil or rule.server == server) and (rule.tool == nil or rule.tool == tool)
    for _, test in ipairs(rule.tests) do
      if not applies then break end
      applies = args ~= nil and test(args) == true
    end
    if applies then
      -- (a digest: one short key of plain characters in every store, whatever the names hold)
      out[#out + 1] = { key = "q1:" .. core.hash_bytes(rule.base .. "\0" .. per_value(rule, server, ctx, principal)),
                        limit = rule.limit, window = rule.window, rule = rule }
    end
  end
  return out
end

local function rule_text(rule)
  local parts = { string.format("at most %d call%s per %d s", rule.limit, rule.limit == 1 and "" or "s", rule.window) }
  if rule.server or rule.tool then parts[#parts + 1] = "to " .. (rule.server or "*") .. "/" .. (rule.tool or "*") end
  if #rule.where > 0 then parts[#parts + 1] = "where " .. table.concat(rule.where, " and ") end
  if rule.per then parts[#parts + 1] = "per " .. rule.per end
  return table.concat(parts, " ")
end

--- take(store, quota, server, tool, args, ctx, principal) -> nil (the call
-- may go: a slot taken of every rule that applies) | objection {verdict,
-- stage, code, message}, fields {limit, window, retry_after} | nil: a
-- store that cannot count (Redis away) refuses, QUOTA_UNAVAILABLE, never
-- passes.
function M.take(store, quota, server, tool, args, ctx, principal)
  local takes = M.takes(quota, server, tool, args, ctx, principal)
  if #takes == 0 then return nil end
  -- (a store that raises, a file it cannot write, counts nothing either)
  local ran, ok, a, b = pcall(store.quota_take, store, takes)
  if not ran then ok, a = nil, ok end
  if ok == true then return nil end
  if ok == nil then
    return { verdict = "reject", stage = "quota", code = "QUOTA_UNAVAILABLE",
             message = "the quota cannot be counted (" .. tostring(a) .. "): the call is refused until it can" }
  end
  local rule, retry = takes[a].rule, b
  return { verdict = "reject", stage = "quota", code = "QUOTA",
           message = string.format("quota: %s; the next call fits in %d s", rule_text(rule), retry) },
    { limit = rule.limit, window = rule.window, retry_after = retry }
end

return M
