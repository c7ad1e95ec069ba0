-- toolgate.consistency: execution-grounded self-consistency of a sampled plan.
--
-- The caller sampled a plan N times, ran each sample in a sandbox or dry
-- run, and hands over the N (calls, results).  Agreement is measured on two
-- disjoint signals, because they mean different things:
--   argument agreement  the modal share of the samples' canonical argument
--                       structures (RFC 8785 plus the schema's
--                       x-toolgate-canonical normalizations; for a
--                       multi-step plan the canonical sequence of
--                       (server, name, arguments)): a made-up argument is a
--                       property of the plan;
--   result agreement    the modal share of the canonical results (plain RFC
--                       8785): a tool answering differently is a property of
--                       the tool, and alone it never rejects a plan.
-- The decision boundary (settings from the policy's `consistency` table):
--   fewer than min_samples                      defer INSUFFICIENT_SAMPLES
--   epoch not fixed across samples              defer EPOCH_NOT_FIXED
--   arg < arg_reject, deterministic + verified  reject ARG_DISAGREE
--   arg < arg_reject, otherwise                 defer DETERMINISM_UNVERIFIED
--   arg >= arg_accept, tool nondeterministic    accept (results carry no signal)
--   arg >= arg_accept, result < result_quarantine, deterministic
--                                               defer RESULT_DISAGREE, and the
--                                               declaration is quarantined
--   arg >= arg_accept, result < result_accept   defer RESULT_UNSTABLE
--   arg >= arg_accept, result >= result_accept  accept
--   anything else                               defer ARG_UNSTABLE
-- The three conditions of validity (samples, epoch, verified determinism)
-- give the policy's on_invalid verdict (defer by default, reject in strict).
-- Every sample's calls go through the rung; if the representative (modal)
-- sample fails it, the plan is rejected with that code whatever the
-- agreement; other failing samples are listed as disagreeing samples.

local core_mod = require "toolgate.core"
local json = require "toolgate.json"
local rung = require "toolgate.rung"
local sandbox = require "toolgate.sandbox"
local state_mod = require "toolgate.state"
local value = require "toolgate.value"

local M = {}

local array_mt = value.array_mt

local function arr(t) return setmetatable(t or {}, array_mt) end

-- Stand-ins for what a sample lacks, distinct from any real digest.
local NO_ARGUMENTS = core_mod.hash_bytes("\0no arguments")
local NO_RESULT = core_mod.hash_bytes("\0no result")
local NO_STEP = core_mod.hash_bytes("\0no step")

local function scalar(node)
  if not node then return nil end
  local t = node:type()
  if t == "string" or t == "number" then return node:value() end
  if t == "boolean" then return node:value() end
  return nil
end

-- The key an epoch is compared by: a string epoch is itself (as probes are
-- given it), any other JSON value its canonical form.
local function epoch_key(node)
  if not node then return nil end
  if node:type() == "string" then return node:value() end
  return node:canon()
end

-- Determinism of one tool for this plan: an inline declaration (replaying a
-- recorded experiment) overrides the registry's contract and the probe
-- record -- except a quarantine: what this engine saw after the recording
-- (a RESULT_DISAGREE, a failed probe) wins over a recorded "verified".
local function determinism(tool, inline, store, epoch)
  local deterministic, verified
  if inline and inline.deterministic ~= nil then
    deterministic = inline.deterministic
  else
    deterministic = tool and tool.contract.deterministic
  end
  if tool and state_mod.is_quarantined(store, tool.server, tool.name) then
    verified = false
  elseif inline and inline.verified ~= nil then
    verified = inline.verified
  elseif tool then
    verified = state_mod.is_verified(store, tool.server, tool.name, epoch)
  else
    verified = false
  end
  return deterministic, verified and deterministic == true
end

local function share(count, n)
  return n > 0 and count / n or 0
end

-- Reads one sample's steps: a list of {server, name, args} and the result
-- node(s).  Returns nil, reason for a malformed sample.
local function read_sample(plan, sample, single)
  if sample:type() ~= "object" then return nil, "a sample must be an object" end
  if single then
    local tool = plan:get("tool")
    local server = tool:get("server")
    local args = sample:get("arguments")
    if not args then return nil, "a sample needs \"arguments\"" end
    return { { server = server and server:value() or nil, name = tool:get("name"):value(), args = args } },
      sample:get("result")
  end
  local calls = sample:get("calls")
  if not calls or calls:type() ~= "array" then return nil, "a sample needs \"calls\" (an array)" end
  local steps = {}
  for k = 1, calls:len() do
    local c = calls:at(k)
    local name = c:type() == "object" and c:get("name")
    if not name or name:type() ~= "string" then return nil, "each call needs a string \"name\"" end
    local server = c:get("server")
    steps[k] = {
      server = server and server:type() == "string" and server:value() or nil,
      name = name:value(),
      args = c:get("arguments"),
    }
    if steps[k].args and steps[k].args:type() ~= "object" then
      return nil, "call arguments must be objects"
    end
  end
  return steps, sample:get("results")
end

-- The string values of node at the locations a pattern ("/a/*/b") matches.
local function strings_at(node, segments, i, out)
  if not node then return end
  if i > #segments then
    if node:type() == "string" then out[#out + 1] = node:value() end
    return
  end
  local seg, t = segments[i], node:type()
  if seg == "*" and (t == "object" or t == "array") then
    for k = 1, node:len() do strings_at(node:at(k), segments, i + 1, out) end
  elseif t == "object" then
    strings_at(node:get((seg:gsub("~1", "/"):gsub("~0", "~"))), segments, i + 1, out)
  elseif t == "array" and seg:match("^%d+$") then
    strings_at(node:at(tonumber(seg) + 1), segments, i + 1, out)
  end
end

-- plan_norms(snap, decoded) -> {tool = normalization plan for this plan} | nil, message
-- For the tools whose "id" rules a policy function resolves: a plan of their
-- own, the tool's rules and alias tables plus what the function says of each
-- ID the plan's samples hold (asked once per ID, in the sandbox).
local function plan_norms(snap, decoded)
  local norms, seen = {}, {}
  for _, d in ipairs(decoded) do
    for _, step in ipairs(d.steps) do
      local tool = step.resolved
      if tool and tool.id_functions and step.args then
        local norm = norms[tool]
        if not norm then
          norm = assert(snap.core:norm())
          for _, r in ipairs(tool.norm_rules) do assert(norm:add_rule(r.pattern, r.ops)) end
          for _, aliases in pairs(snap.policy.resolvers or {}) do
            if type(aliases) == "table" then
              for from, to in pairs(aliases) do
                if type(from) == "string" and type(to) == "string" then assert(norm:add_alias(from, to)) end
              end
            end
          end
          norms[tool], seen[tool] = norm, {}
        end
        for _, r in ipairs(tool.id_functions) do
          local segments = {}
          for seg in r.pattern:gmatch("/([^/]*)") do segments[#segments + 1] = seg end
          local found = {}
          strings_at(step.args, segments, 1, found)
          for _, raw in ipairs(found) do
            local pre = assert(tool.norm:apply(raw, r.pre_ops))
            local key = r.resolver .. "\0" .. pre
            if not seen[tool][key] then
              seen[tool][key] = true
              local ok, id = sandbox.call(snap.policy.budget, snap.policy.resolvers[r.resolver], pre,
                { server = tool.server, name = tool.name })
              if not ok then return nil, id end
              if type(id) ~= "string" then
                return nil, "resolver " .. r.resolver .. " returned a " .. type(id) .. ", not a string"
              end
              if id ~= pre then
                local added, aerr = norm:add_alias(pre, id)
                if not added then return nil, aerr end
              end
            end
          end
        end
      end
    end
  end
  return norms
end

-- classify(snap, plan, ctx, store, settings) -> decision fields, tools to
-- run the later stages on (the representative sample's resolved steps)
-- plan: the plan's root node; snap: an engine snapshot.
function M.classify(snap, plan, ctx, store, settings) -- luacheck: ignore 212/ctx
  local reg, core = snap.registry, snap.core
  local base = { stage = "consistency" }
  if plan:type() ~= "object" then
    return { verdict = "reject", stage = "decode", code = "BAD_PLAN", message = "a plan must be a JSON object" }
  end
  base.plan_id = scalar(plan:get("plan_id"))
  local samples = plan:get("samples")
  if not samples or samples:type() ~= "array" then
    return { verdict = "reject", stage = "decode", code = "BAD_PLAN", message = "a plan needs \"samples\" (an array)",
             plan_id = base.plan_id }
  end
  local tool_node = plan:get("tool")
  local single = tool_node ~= nil
  if single and (tool_node:type() ~= "object" or not tool_node:get("name")
      or tool_node:get("name"):type() ~= "string") then
    return { verdict = "reject", stage = "decode", code = "BAD_PLAN", message = "\"tool\" needs a string \"name\"",
             plan_id = base.plan_id }
  end
  local inline = single and {
    deterministic = tool_node:get("deterministic") and tool_node:get("deterministic"):value(),
    verified = tool_node:get("verified") and tool_node:get("verified"):value(),
  } or nil

  local n = samples:len()
  base.n = n
  if n == 0 then
    base.verdict, base.code = settings.on_invalid, "INSUFFICIENT_SAMPLES"
    base.message = "no samples"
    return base
  end

  -- read every sample, and check every call of every sample in the rung
  local decoded = {}
  local max_steps = 0
  for i = 1, n do
    local s = samples:at(i)
    local steps, results_or_err = read_sample(plan, s, single)
    if not steps then
      return { verdict = "reject", stage = "decode", code = "BAD_PLAN", plan_id = base.plan_id,
               message = string.format("sample %d: %s", i, results_or_err) }
    end
    for _, step in ipairs(steps) do
      if step.args then
        local res = reg.c:check(step.server, step.name, step.args)
        local tool = res and res.tool and reg.tools[res.tool]
        step.ok = res ~= nil and res.tool ~= nil and not res.findings and not tool.refuse
        step.resolved = tool
        step.tool = step.ok and tool or nil
      else
        step.ok = false
      end
    end
    if #steps > max_steps then max_steps = #steps end
    decoded[i] = { steps = steps, results = results_or_err, sample = s }
  end

  -- IDs a policy function resolves: ask it once per distinct ID in this plan
  local norms, perr = plan_norms(snap, decoded)
  if not norms then
    return { verdict = snap.policy.on_error, stage = "consistency", code = "POLICY_ERROR", plan_id = base.plan_id,
             message = "policy resolver failed: " .. tostring(perr) }
  end
  local function norm_of(tool) return tool and (norms[tool] or tool.norm) or nil end

  -- hash (16-byte digest tokens: no hex round trips)
  local plan_hashes, result_hashes, epochs = {}, {}, {}
  for i = 1, n do
    local steps, parts = decoded[i].steps, {}
    for k, step in ipairs(steps) do
      step.digest = step.args and step.args:digest(norm_of(step.resolved)) or NO_ARGUMENTS
      parts[k] = (step.server or "") .. "\0" .. step.name .. "\0" .. step.digest
    end
    plan_hashes[i] = single and steps[1].digest or core_mod.hash_bytes(table.concat(parts, "\1"))
    local results = decoded[i].results
    result_hashes[i] = results and results:digest() or NO_RESULT
    epochs[i] = epoch_key(decoded[i].sample:get("epoch"))
  end

  local arg = assert(core:agree(plan_hashes))
  local res = assert(core:agree(result_hashes))
  local rep = arg.representative
  base.arg_agreement = share(arg.modal_count, n)
  base.result_agreement = share(res.modal_count, n)
  base.distinct_args, base.distinct_results = arg.distinct, res.distinct
  base.representative = rep

  -- the plan that would run is the representative one: its rung verdict stands
  local rep_steps = decoded[rep].steps
  for k, step in ipairs(rep_steps) do
    if not step.ok then
      local d = step.args and rung.check(reg, step.server, step.name, step.args)
        or { verdict = "reject", stage = "rung", code = "BAD_ARGUMENTS", message = "the call has no arguments object" }
      d.stage, d.plan_id, d.n, d.representative = "rung", base.plan_id, n, rep
      d.arg_agreement, d.result_agreement = base.arg_agreement, base.result_agreement
      if not single then d.step = k end
      return d
    end
  end
  local failures = arr()
  for i = 1, n do
    for k, step in ipairs(decoded[i].steps) do
      if not step.ok then
        local d = step.args and rung.check(reg, step.server, step.name, step.args)
          or { code = "BAD_ARGUMENTS", message = "the call has no arguments object" }
        failures[#failures + 1] = { sample = i, step = (not single) and k or nil, code = d.code,
          path = d.path, message = d.message }
        break
      end
    end
  end
  if #failures > 0 then base.rung_failures = failures end

  -- per-step agreement of multi-step plans
  if not single then
    local per_step = arr()
    for k = 1, max_steps do
      local ah, rh = {}, {}
      for i = 1, n do
        local step = decoded[i].steps[k]
        ah[i] = step and core_mod.hash_bytes((step.server or "") .. "\0" .. step.name .. "\0" .. step.digest)
          or NO_STEP
        local r = decoded[i].results
        local rk = r and r:type() == "array" and r:at(k) or nil
        rh[i] = rk and rk:digest() or NO_RESULT
      end
      local a, r = assert(core:agree(ah)), assert(core:agree(rh))
      per_step[k] = { step = k, tool = rep_steps[k] and rep_steps[k].name or value.null,
        arg_agreement = share(a.modal_count, n), result_agreement = share(r.modal_count, n) }
    end
    base.steps = per_step
  end

  -- which argument was made up: per-pointer agreement with the representative
  if arg.modal_count < n then
    local disagreeing = arr()
    local by_step = single and 1 or #rep_steps
    for k = 1, by_step do
      local nodes, index_of_rep = {}, nil
      for i = 1, n do
        local step = decoded[i].steps[k]
        if step and step.args then
          nodes[#nodes + 1] = step.args
          if i == rep then index_of_rep = #nodes end
        end
      end
      if index_of_rep then
        local list = assert(core:pointer_agreement(nodes, index_of_rep, norm_of(rep_steps[k].tool), 16))
        for _, p in ipairs(list) do
          if p.agree < n and #disagreeing < 16 then
            disagreeing[#disagreeing + 1] = {
              pointer = single and p.pointer or ("/" .. (k - 1) .. "/arguments" .. p.pointer),
              agreement = share(p.agree, n),
            }
          end
        end
      end
    end
    base.disagreeing = disagreeing
  end

  -- conditions of validity
  local fixed
  local ef = plan:get("epoch_fixed")
  if ef and ef:type() == "boolean" then
    fixed = ef:value()
  else
    fixed = epochs[1] ~= nil
    for i = 2, n do if epochs[i] ~= epochs[1] then fixed = false end end
  end
  local epoch = samples:at(1):get("epoch")
  base.epoch = (fixed and epoch) and json.to_lua(epoch) or value.null
  local epoch_name = fixed and epoch_key(epoch) or nil

  if n < settings.min_samples then
    base.verdict, base.code = settings.on_invalid, "INSUFFICIENT_SAMPLES"
    base.message = string.format("%d samples; agreement needs at least %d", n, settings.min_samples)
    return base, rep_steps
  end
  if not fixed then
    base.verdict, base.code = settings.on_invalid, "EPOCH_NOT_FIXED"
    base.message = "the samples do not share one epoch: tool nondeterminism would leak into the argument signal"
    return base, rep_steps
  end

  -- determinism of the plan: every step's tool must be deterministic (and
  -- verified) for argument disagreement to mean a made-up argument
  local deterministic, verified, nondeterministic = true, true, false
  for _, step in ipairs(rep_steps) do
    local d, v = determinism(step.tool, inline, store, epoch_name)
    if d ~= true then deterministic = false end
    if d == false then nondeterministic = true end
    if not v then verified = false end
  end
  base.deterministic, base.verified = deterministic, verified

  local a, r = base.arg_agreement, base.result_agreement
  if a < settings.arg_reject then
    if deterministic and verified then
      base.verdict, base.code = "reject", "ARG_DISAGREE"
      base.message = string.format("argument agreement %.2f is below %.2f on a verified-deterministic tool: "
        .. "the fabricated-argument signature", a, settings.arg_reject)
    else
      base.verdict, base.code = settings.on_invalid, "DETERMINISM_UNVERIFIED"
      base.message = string.format("argument agreement %.2f is below %.2f, but the tool's determinism is not "
        .. "verified in this epoch, so the disagreement may come from its results", a, settings.arg_reject)
    end
    return base, rep_steps
  end
  if a >= settings.arg_accept then
    if nondeterministic then
      base.verdict = "accept"
      base.message = "arguments agree; the tool is nondeterministic by contract, so results carry no signal"
      return base, rep_steps
    end
    if r < settings.result_quarantine and deterministic then
      base.verdict, base.code = "defer", "RESULT_DISAGREE"
      base.message = string.format("arguments agree (%.2f) but results do not (%.2f) on a tool declared "
        .. "deterministic: the tool is suspect, not the plan; its declaration is quarantined", a, r)
      local quarantined = arr()
      for k, step in ipairs(rep_steps) do
        local tool = step.tool
        local step_r = single and r or base.steps[k].result_agreement
        if tool and tool.contract.deterministic ~= false and step_r < settings.result_quarantine then
          store:quarantine(tool.server, tool.name, string.format("RESULT_DISAGREE in plan %s: result agreement %.2f",
            tostring(base.plan_id), step_r), epoch_name)
          quarantined[#quarantined + 1] = { server = tool.server, name = tool.name }
        end
      end
      base.quarantined = quarantined
      return base, rep_steps
    end
    if r < settings.result_accept then
      base.verdict, base.code = "defer", "RESULT_UNSTABLE"
      base.message = string.format("arguments agree (%.2f) but results are unstable (%.2f): re-sample in a "
        .. "fresh epoch", a, r)
      return base, rep_steps
    end
    base.verdict = "accept"
    return base, rep_steps
  end
  base.verdict, base.code = "defer", "ARG_UNSTABLE"
  base.message = string.format("argument agreement %.2f is between %.2f and %.2f", a, settings.arg_reject,
    settings.arg_accept)
  return base, rep_steps
end

return M
