--- toolgate.decision: what engine:check, engine:classify and engine:verify
-- return.
--
-- A decision is written once, as canonical JSON, by the C core (so both
-- bindings give the same bytes); Lua holds that text and the three fields
-- every caller reads first.  Anything else is read on demand:
--   d.verdict, d.code, d.stage      "accept" | "reject" | "defer", the code
--                                   (nil for an accept), the deciding stage
--   d:json()                        the decision, canonical JSON
--   d:table()                       the whole decision as a Lua table
--                                   (decoded once, on first use)
--   d.findings, d.binding, ...      any other field, through d:table()
--   d:get(key)                      one field, the rest left undecoded
-- A field set on the decision (d.line = 7) shadows the table's in Lua,
-- but d:json() stays what the core decided: it is the record.
-- @module toolgate.decision

local core = require "toolgate.core"
local json = require "toolgate.json"
local value = require "toolgate.value"

local M = {}

local Decision = {}

-- Decisions are toolgate's own output: read and written under the widest
-- limits the core has, never a policy's.
local codec

local function widest()
  if not codec then
    local lim = core.default_limits()
    local top = 2147483647
    lim.max_input_bytes, lim.max_string_bytes, lim.max_members, lim.max_items = top, top, top, top
    lim.max_depth = 1000
    codec = assert(core.new_engine(lim))
  end
  return codec
end
M.codec = widest

function Decision:json()
  local text = rawget(self, "_json")
  if not text then
    text = assert(widest():canon(assert(value.encode(rawget(self, "_table")))))
    rawset(self, "_json", text)
  end
  return text
end

function Decision:table()
  local t = rawget(self, "_table")
  if not t then
    t = assert(json.decode(widest(), rawget(self, "_json")))
    rawset(self, "_table", t)
  end
  return t
end

--- d:get(key) -> one top-level field (a Lua value), without decoding the
-- whole decision (a scalar; a container comes back as its table).
function Decision:get(k)
  local t = rawget(self, "_table")
  if t then return t[k] end
  local doc = assert(widest():parse(rawget(self, "_json")))
  local n = doc:root():get(k)
  local v = n and json.to_lua(n)
  doc:free()
  return v
end

-- Set at construction when present: asking for an absent one (the code of
-- an accept) must not decode the whole decision.
local FIRST = { verdict = true, code = true, stage = true }

Decision.__index = function(self, k)
  local method = Decision[k]
  if method then return method end
  if FIRST[k] then return nil end
  return Decision.table(self)[k]
end

M.mt = Decision

--- new(verdict, code, stage, json) -> decision: one the core wrote (code
-- nil for an accept, as the bindings give it).
function M.new(verdict, code, stage, text)
  return setmetatable({ verdict = verdict, code = code, stage = stage, _json = text }, Decision)
end

--- from_table(t) -> decision: one built in Lua (its JSON is written on demand).
function M.from_table(t)
  return setmetatable({ verdict = t.verdict, code = t.code, stage = t.stage, _table = t }, Decision)
end

--- is(v) -> whether v is a decision.
function M.is(v)
  return getmetatable(v) == Decision
end

return M
