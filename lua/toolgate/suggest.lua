--- toolgate.suggest: the valid name a mistyped one most likely meant.
--
-- Wherever toolgate meets a name it does not know in what a person wrote
-- (a policy's settings, a registry setting, a value of a fixed set), it
-- names the closest valid one when the mistake looks like a typo:
--   closest("clossed", { "closed", "sources" })  --> "closed"
--   hint("rejet", { "allow", "error", "reject" }) --> ' (did you mean "reject"?)'
-- A typo here is at most two edits (a letter added, dropped, changed, or two
-- neighbours swapped: Damerau-Levenshtein, optimal string alignment), and at
-- most a third of the valid name's length, so a short name only matches a
-- near twin ("nsme" is "name", "foo" is nothing).
-- @module toolgate.suggest

local M = {}

M.MAX_EDITS = 2

-- Edits between a and b; anything above MAX_EDITS counts as MAX_EDITS + 1.
local function distance(a, b)
  local la, lb = #a, #b
  if math.abs(la - lb) > M.MAX_EDITS then return M.MAX_EDITS + 1 end
  local before, prev = nil, {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    local cur = { [0] = i }
    local ai = a:byte(i)
    for j = 1, lb do
      local bj = b:byte(j)
      local d = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ai == bj and 0 or 1))
      if before and j > 1 and ai == b:byte(j - 1) and a:byte(i - 1) == bj then
        d = math.min(d, before[j - 2] + 1)
      end
      cur[j] = d
    end
    before, prev = prev, cur
  end
  return prev[lb]
end

--- closest(name, known) -> the name of the list known that name is a
-- likely typo of, or nil (the first of the nearest, in known's order).
function M.closest(name, known)
  if type(name) ~= "string" then return nil end
  local best, best_d
  for _, k in ipairs(known) do
    local d = distance(name, k)
    local allowed = math.min(M.MAX_EDITS, math.max(1, math.floor(#k / 3)))
    if d > 0 and d <= allowed and (best_d == nil or d < best_d) then best, best_d = k, d end
  end
  return best
end

--- hint(name, known) -> ' (did you mean "x"?)', or "" when nothing is close.
function M.hint(name, known)
  local s = M.closest(name, known)
  return s and string.format(" (did you mean %q?)", s) or ""
end

--- sorted_keys(t) -> the string keys of t, sorted (the known names of a
-- table of settings).
function M.sorted_keys(t)
  local out = {}
  for k in pairs(t) do
    if type(k) == "string" then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

return M
