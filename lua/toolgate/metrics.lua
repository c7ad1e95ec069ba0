--- toolgate.metrics: a gateway's counters and histograms, kept in an nginx
-- shared dict (every worker adds to the same numbers with incr, no read-
-- modify-write) and written in the Prometheus text format.
--
--   local metrics = require("toolgate.metrics").new(ngx.shared.toolgate_metrics)
--   metrics:inc("toolgate_reloads_total", { result = "success" })
--   local h = metrics:histogram("toolgate_decision_seconds", { phase = "request" })
--   h:observe(0.000042)
--   metrics:render(extra_lines) -> text
--
-- The metric families and their help text are in FAMILIES; rendering lists
-- them in that order, labels sorted, with # HELP and # TYPE lines.
-- @module toolgate.metrics

local M = {}

--- Upper bounds of the latency histograms' buckets, in seconds.
M.BUCKETS = { 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.1 }
-- their le labels, written as a person reads them
local LE = { "0.00001", "0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.01", "0.1" }

--- The metric families: name, type, help.
M.FAMILIES = {
  { "toolgate_decisions_total", "counter", "Decisions, by phase (call, result, method), stage, verdict, code and mode "
    .. "(shadow: a refusal recorded and let run)." },
  { "toolgate_tool_decisions_total", "counter", "Decisions on tools/call and their results, by server, tool, verdict "
    .. "and mode." },
  { "toolgate_decision_seconds", "histogram",
    "Time the gateway spent deciding, by phase: request (a client's message: method routing, the policy's "
      .. "pipeline on each tools/call, approvals), response (a server's answer: tools/list filtered and checked "
      .. "against the pins, tools/call results through the contract verifier), api (the decision API)." },
  { "toolgate_approval_events_total", "counter", "Approval events: requested, granted, denied, used, refused_full "
    .. "(a deferred call refused: too many wait for a person)." },
  { "toolgate_approvals", "gauge", "Approval requests in the store, by state (pending, granted, denied, used)." },
  { "toolgate_approvals_expired", "gauge",
    "Approval requests that expired unanswered: requested, less those decided and those pending." },
  { "toolgate_pin_changes_total", "counter", "Tools whose upstream differs from the registry's pins, by server and "
      .. "change (changed, added, removed), each reported once per registry." },
  { "toolgate_quarantined", "gauge", "Quarantined: servers (pin changes), tools (changed pins), "
      .. "determinism declarations." },
  { "toolgate_webhook_deliveries_total", "counter", "Notifications of a pending approval to the webhooks, by result: "
      .. "delivered, retried (a try failed: tried again after a backoff), dropped (every try failed, or the queue was full)." },
  { "toolgate_reloads_total", "counter", "Reloads of the policy and registry, by result (success, failure)." },
  { "toolgate_engine_builds_total", "counter", "Engines built from the policy and registry, by process: master (at "
      .. "start and at nginx -s reload, before the workers fork: they share it), worker (a reload of the admin API)." },
  { "toolgate_otel_spans_exported_total", "counter", "Spans the OTLP collector took (docs/tracing.md)." },
  { "toolgate_otel_spans_dropped_total", "counter", "Spans never exported, by reason: queue_full (more waited than "
      .. "the worker's queue holds), export_failed (the collector could not be reached or refused the batch)." },
  { "toolgate_state_store_up", "gauge", "1 when the last poll of the fleet's Redis succeeded, else 0 (Redis store only)." },
  { "toolgate_state_store_degraded", "gauge", "1 while the fleet's Redis refuses writes and a grace after: determinism "
      .. "counts as unverified (Redis store only)." },
  { "toolgate_state_store_sync_age_seconds", "gauge",
    "Seconds since this node last copied the fleet's records from Redis (-1: never; Redis store only)." },
  { "toolgate_state_store_pending_writes", "gauge",
    "Quarantines, verifications and pin reports this node holds that Redis does not have yet (Redis store only)." },
  { "toolgate_state_store_errors_total", "counter",
    "State store operations that failed, by op (Redis: sync, write, approval, record: one skipped; every store: "
      .. "pin_report, quarantine_server: a write that did not fit, its tool refused all the same)." },
  { "toolgate_info", "gauge", "The policy version and registry hash the worker that answered decides with." },
}

local Metrics = {}
Metrics.__index = Metrics

--- new(dict) -> metrics over an ngx.shared dict (or anything with
-- incr(key, n, init), get(key), get_keys(0)).  Additions wait in the
-- process (a Lua table) until flush() writes them to the dict, each series
-- once (the host calls it every so often, and before rendering): the hot
-- path takes no shared-memory lock.
function M.new(dict)
  return setmetatable({ dict = dict, pending = {} }, Metrics)
end

--- flush(): adds what waits to the dict.
function Metrics:flush()
  local pending = self.pending
  if next(pending) == nil then return end
  self.pending = {}
  local d = self.dict
  for k, n in pairs(pending) do d:incr(k, n, 0) end
end

--- add(series, n): adds n to a series named as key() names it.
function Metrics:add(series, n)
  local pending = self.pending
  pending[series] = (pending[series] or 0) + n
end

local function escape(v)
  return (tostring(v):gsub("[\\\"\n]", { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" }))
end

local function labels_text(labels)
  if not labels then return "" end
  local names = {}
  for k in pairs(labels) do names[#names + 1] = k end
  table.sort(names)
  local parts = {}
  for i, k in ipairs(names) do parts[i] = k .. '="' .. escape(labels[k]) .. '"' end
  return "{" .. table.concat(parts, ",") .. "}"
end

--- key(name, labels) -> the series' name as the dict (and Prometheus) writes it.
function Metrics.key(_, name, labels)
  return name .. labels_text(labels)
end

--- inc(name, labels[, n]): adds n (default 1) to a counter.
function Metrics:inc(name, labels, n)
  self:add(self:key(name, labels), n or 1)
end

local Histogram = {}
Histogram.__index = Histogram

--- histogram(name, labels) -> a histogram series, its keys written once:
-- h:observe(seconds) adds one observation.
function Metrics:histogram(name, labels)
  local lt = labels_text(labels)
  local inner = lt == "" and "" or lt:sub(2, -2) .. ","
  local buckets = {}
  for i, le in ipairs(LE) do buckets[i] = name .. "_bucket{" .. inner .. 'le="' .. le .. '"}' end
  buckets[#LE + 1] = name .. "_bucket{" .. inner .. 'le="+Inf"}'
  return setmetatable({ metrics = self, buckets = buckets, sum = name .. "_sum" .. lt,
    count = name .. "_count" .. lt }, Histogram)
end

function Histogram:observe(seconds)
  local bounds, i = M.BUCKETS, 1
  while i <= #bounds and seconds > bounds[i] do i = i + 1 end
  local m = self.metrics
  m:add(self.buckets[i], 1)
  m:add(self.sum, seconds)
  m:add(self.count, 1)
end

local function fmt(v)
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
  return string.format("%.9g", v)
end

-- A histogram's buckets made cumulative, as Prometheus wants them.
local function cumulative(series)
  local groups = {}
  for k, v in pairs(series) do
    local base, le = k:match('^(.-_bucket{.-)le="([^"]+)"}$')
    if base then
      groups[base] = groups[base] or {}
      groups[base][le] = v
    end
  end
  local out = {}
  for base, buckets in pairs(groups) do
    local sum = 0
    for _, le in ipairs(LE) do
      sum = sum + (buckets[le] or 0)
      out[base .. 'le="' .. le .. '"}'] = sum
    end
    out[base .. 'le="+Inf"}'] = sum + (buckets["+Inf"] or 0)
  end
  return out
end

--- render([gauges]) -> the Prometheus text: every series in the dict,
-- and gauges given as { {name, labels, value}, ... } computed by the caller.
function Metrics:render(gauges)
  self:flush()
  local by_family = {}
  local function add(name, text, v)
    local fam = name
    for _, f in ipairs(M.FAMILIES) do
      if f[2] == "histogram" and (name == f[1] .. "_bucket" or name == f[1] .. "_sum" or name == f[1] .. "_count") then
        fam = f[1]
      end
    end
    by_family[fam] = by_family[fam] or {}
    by_family[fam][text] = v
  end
  local raw = {}
  for _, k in ipairs(self.dict:get_keys(0)) do
    local v = self.dict:get(k)
    if type(v) == "number" then raw[k] = v end
  end
  for k, v in pairs(raw) do
    if not k:find("_bucket{", 1, true) then add(k:match("^[^{]+"), k, v) end
  end
  for k, v in pairs(cumulative(raw)) do add(k:match("^[^{]+"), k, v) end
  for _, g in ipairs(gauges or {}) do add(g[1], g[1] .. labels_text(g[2]), g[3]) end
  local lines = {}
  for _, f in ipairs(M.FAMILIES) do
    local series = by_family[f[1]]
    lines[#lines + 1] = "# HELP " .. f[1] .. " " .. f[3]
    lines[#lines + 1] = "# TYPE " .. f[1] .. " " .. f[2]
    if series then
      local names = {}
      for k in pairs(series) do names[#names + 1] = k end
      table.sort(names)
      for _, k in ipairs(names) do lines[#lines + 1] = k .. " " .. fmt(series[k]) end
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

return M
