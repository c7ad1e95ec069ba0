--- toolgate.state: what toolgate remembers about tools' determinism.
--
-- Per (server, tool): whether a probe verified its determinism declaration
-- in an epoch, and whether the declaration is quarantined (why, since
-- when, in which epoch).  A failed probe or a RESULT_DISAGREE decision
-- quarantines the declaration: the tool is then treated as unverified, so
-- its plans can no longer be rejected on argument disagreement; a probe
-- that passes in a later epoch lifts the quarantine.
--
-- A store is any table with these methods; memory() is the in-process one
-- (an nginx shared-dict store can implement the same four):
--   store:get(server, name)                   -> record | nil
--   store:verified(server, name, epoch)       -- a probe passed in epoch
--   store:quarantine(server, name, reason, epoch)
--   store:records()                           -> { ["server\0name"] = record }
-- record = { verified_epoch = E|nil, quarantined = { reason =, since =, epoch = } | nil }
-- Epochs are stored and compared as the canonical JSON text of the epoch
-- value (the string "e7" as "\"e7\"", the number 1 as "1"), one rule for
-- probes and for every kind of plan.
-- @module toolgate.state

local M = {}

local Memory = {}
Memory.__index = Memory

--- The in-process store (what toolgate.new uses unless given opts.state).
function M.memory()
  return setmetatable({ data = {} }, Memory)
end

local function key(server, name) return (server or "") .. "\0" .. name end

function Memory:get(server, name)
  return self.data[key(server, name)]
end

function Memory:verified(server, name, epoch)
  local k = key(server, name)
  local r = self.data[k] or {}
  r.verified_epoch = epoch
  -- a pass in the epoch that caught the tool disagreeing proves nothing new
  if r.quarantined and r.quarantined.epoch ~= epoch then r.quarantined = nil end
  self.data[k] = r
end

-- A declaration already quarantined keeps its first reason and time: that is
-- where a person starts looking.
function Memory:quarantine(server, name, reason, epoch)
  local k = key(server, name)
  local r = self.data[k] or {}
  if not r.quarantined then r.quarantined = { reason = reason, since = os.time(), epoch = epoch } end
  r.verified_epoch = nil
  self.data[k] = r
end

function Memory:records()
  return self.data
end

--- is_verified(store, server, name, epoch): verified in this epoch and not quarantined
function M.is_verified(store, server, name, epoch)
  local r = store:get(server, name)
  return r ~= nil and r.quarantined == nil and epoch ~= nil and r.verified_epoch == epoch
end

--- is_quarantined(store, server, name): whether the tool's declaration is quarantined
function M.is_quarantined(store, server, name)
  local r = store:get(server, name)
  return r ~= nil and r.quarantined ~= nil
end

return M
