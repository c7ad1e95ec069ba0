-- toolgate.consistency: execution-grounded self-consistency of a sampled plan.
--
-- The caller sampled a plan N times, ran each sample in a sandbox or dry
-- run, and hands over the N (calls, results).  Agreement is measured on two
-- disjoint signals, because they mean different things:
--   argument agreement  the modal share of the samples' canonical argument
--                       structures (RFC 8785 with exact numbers, the form
--                       args_digest hashes, plus the schema's
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
local registry = require "toolgate.registry"
local rung = require "toolgate.rung"
local sandbox = require "toolgate.sandbox"
local state_mod = require "toolgate.state"
local value = require "toolgate.value"

local M = {}

M.DEFAULT_MAX_SAMPLES = 10000 -- samples per plan (policy consistency.max_samples)

-- What a failing core call (out of memory) makes of a plan: a reject, never
-- a stand-in value that could let the samples agree.
local function hash_failed(code, message)
  return { verdict = "reject", stage = "consistency", code = code or "NOMEM",
           message = "the samples could not be hashed or counted: " .. tostring(message) }
end

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

-- The key an epoch is compared by, on every path (single-tool plans in C,
-- the others here, probes and the state store): its canonical form, so "1"
-- and 1 are two epochs and 1 and 1.0 one.
local function epoch_key(node)
  if not node then return nil end
  local key, err, code = node:canon()
  if not key then return nil, hash_failed(code, err) end
  return key
end
M.epoch_key = epoch_key

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

-- The string values of node at the locations a pattern's segments (unescaped:
-- "/a/*/b" as {"a", "*", "b"}) match.
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
    strings_at(node:get(seg), segments, i + 1, out)
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
          registry.add_alias_tables(norm, snap.policy.resolvers)
          norms[tool], seen[tool] = norm, {}
        end
        for _, r in ipairs(tool.id_functions) do
          local found = {}
          strings_at(step.args, r.segments, 1, found)
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

-- The two ways of reading a plan's samples.  Both give the same record:
--   representative, arg_modal, arg_distinct, result_modal, result_distinct,
--   epochs_equal, rep_steps (the representative's calls: server, name, args,
--   tool when it passes the rung, ok), failures ({sample, step, server,
--   name, args} of other samples failing the rung), per_step (multi-step
--   plans), arg_nodes(k) (every sample's arguments of step k, and the
--   representative's place among them), norm_of(tool).

-- A single-tool plan, in one pass in C (tg_plan_summarize).  nil when the
-- tool needs Lua during hashing (a policy function resolves its IDs).
local function gather_single(snap, plan, samples, n)
  local reg = snap.registry
  local tool_node = plan:get("tool")
  local server_node, name = tool_node:get("server"), tool_node:get("name"):value()
  local server = server_node and server_node:type() == "string" and server_node:value() or nil
  local index
  if server then
    index = reg.c:find(server, name)
  else
    local list = reg.c:find_name(name)
    index = #list == 1 and list[1] or nil
  end
  local tool = index and reg.tools[index]
  if tool and tool.id_functions then return nil end
  local usable = tool and not tool.refuse
  local sum, err, code = reg.c:summarize_plan(usable and index or nil, usable and tool.norm or nil, samples)
  if not sum then
    return nil, { verdict = "reject", stage = "decode", code = code == "NOMEM" and code or "BAD_PLAN", message = err }
  end
  local rep = sum.representative
  local function args_of(i) return samples:at(i):get("arguments") end
  local rep_ok = usable and true or false
  local rep_error
  if rep_ok and sum.n_failed > 0 then
    local res, cerr, ccode = reg.c:check(server, name, args_of(rep))
    rep_ok = res ~= nil and res.findings == nil
    if not res then rep_error = { code = ccode, message = cerr } end
  end
  local failures = {}
  for _, i in ipairs(sum.failed) do
    if i ~= rep then failures[#failures + 1] = { sample = i, step = 1, server = server, name = name, args = args_of(i) } end
  end
  return {
    representative = rep, arg_modal = sum.arg_modal, arg_distinct = sum.arg_distinct,
    result_modal = sum.result_modal, result_distinct = sum.result_distinct, epochs_equal = sum.epochs_equal,
    rep_steps = { { server = server, name = name, args = args_of(rep), tool = rep_ok and tool or nil, ok = rep_ok,
                    error = rep_error } },
    failures = failures,
    arg_nodes = function()
      local nodes = {}
      for i = 1, n do nodes[i] = args_of(i) end
      return nodes, rep
    end,
    norm_of = function(t) return t and t.norm or nil end,
  }
end

-- Any plan, sample by sample in Lua.
local function gather(snap, plan, samples, n, single)
  local reg, core = snap.registry, snap.core
  -- read every sample, and check every call of every sample in the rung
  local decoded = {}
  local max_steps = 0
  for i = 1, n do
    local s = samples:at(i)
    local steps, results_or_err = read_sample(plan, s, single)
    if not steps then
      return nil, { verdict = "reject", stage = "decode", code = "BAD_PLAN",
                    message = string.format("sample %d: %s", i, results_or_err) }
    end
    for _, step in ipairs(steps) do
      if step.args then
        local res, cerr, ccode = reg.c:check(step.server, step.name, step.args)
        if not res then -- the check could not finish (a limit, out of memory): refuse the plan
          return nil, { verdict = "reject", stage = "rung", code = ccode,
                        message = string.format("sample %d: the rung could not finish its check: %s", i, tostring(cerr)) }
        end
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
    return nil, { verdict = snap.policy.on_error, stage = "consistency", code = "POLICY_ERROR",
                  message = "policy resolver failed: " .. tostring(perr) }
  end
  local function norm_of(tool) return tool and (norms[tool] or tool.norm) or nil end

  -- a result's digest; a missing one digests as NO_RESULT
  local function result_digest(node)
    if not node then return NO_RESULT end
    local dg, derr, dcode = node:digest()
    if not dg then return nil, hash_failed(dcode, derr) end
    return dg
  end

  -- hash (16-byte digest tokens: no hex round trips)
  local plan_hashes, result_hashes, epochs = {}, {}, {}
  for i = 1, n do
    local steps, parts = decoded[i].steps, {}
    for k, step in ipairs(steps) do
      step.digest = NO_ARGUMENTS
      if step.args then
        local dg, derr, dcode = step.args:digest(norm_of(step.resolved), "exact")
        if not dg then return nil, hash_failed(dcode, derr) end
        step.digest = dg
      end
      step.key = (step.server or "") .. "\0" .. step.name .. "\0" .. step.digest
      parts[k] = step.key
    end
    plan_hashes[i] = single and steps[1].digest or core_mod.hash_bytes(table.concat(parts, "\1"))
    local failed
    result_hashes[i], failed = result_digest(decoded[i].results)
    if not result_hashes[i] then return nil, failed end
    local failed_epoch
    epochs[i], failed_epoch = epoch_key(decoded[i].sample:get("epoch"))
    if failed_epoch then return nil, failed_epoch end
  end
  local arg, aerr, acode = core:agree(plan_hashes)
  if not arg then return nil, hash_failed(acode, aerr) end
  local res, rerr, rcode = core:agree(result_hashes)
  if not res then return nil, hash_failed(rcode, rerr) end
  local rep = arg.representative
  local epochs_equal = epochs[1] ~= nil
  for i = 2, n do if epochs[i] ~= epochs[1] then epochs_equal = false end end

  local failures = {}
  for i = 1, n do
    if i ~= rep then
      for k, step in ipairs(decoded[i].steps) do
        if not step.ok then
          failures[#failures + 1] = { sample = i, step = k, server = step.server, name = step.name, args = step.args }
          break
        end
      end
    end
  end

  -- per-step agreement of multi-step plans
  local per_step
  if not single then
    per_step = arr()
    for k = 1, max_steps do
      local ah, rh = {}, {}
      for i = 1, n do
        local step = decoded[i].steps[k]
        ah[i] = step and core_mod.hash_bytes(step.key) or NO_STEP
        local r = decoded[i].results
        local failed
        rh[i], failed = result_digest(r and r:type() == "array" and r:at(k) or nil)
        if not rh[i] then return nil, failed end
      end
      local a, aerr2, acode2 = core:agree(ah)
      if not a then return nil, hash_failed(acode2, aerr2) end
      local r, rerr2, rcode2 = core:agree(rh)
      if not r then return nil, hash_failed(rcode2, rerr2) end
      local rs = decoded[rep].steps[k]
      per_step[k] = { step = k, tool = rs and rs.name or value.null,
        arg_agreement = share(a.modal_count, n), result_agreement = share(r.modal_count, n) }
    end
  end

  return {
    representative = rep, arg_modal = arg.modal_count, arg_distinct = arg.distinct,
    result_modal = res.modal_count, result_distinct = res.distinct, epochs_equal = epochs_equal,
    rep_steps = decoded[rep].steps, failures = failures, per_step = per_step, norm_of = norm_of,
    arg_nodes = function(k)
      local nodes, index_of_rep = {}, nil
      for i = 1, n do
        local step = decoded[i].steps[k]
        if step and step.args then
          nodes[#nodes + 1] = step.args
          if i == rep then index_of_rep = #nodes end
        end
      end
      return nodes, index_of_rep
    end,
  }
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
  -- a limit (README, "Limits"): the policy's consistency.max_samples
  local max_samples = settings.max_samples or M.DEFAULT_MAX_SAMPLES
  if n > max_samples then
    base.verdict, base.code = "reject", "TOO_MANY_SAMPLES"
    base.message = string.format("%d samples; a plan may have at most max_samples = %d", n, max_samples)
    return base
  end
  if n == 0 then
    base.verdict, base.code = settings.on_invalid, "INSUFFICIENT_SAMPLES"
    base.message = "no samples"
    return base
  end

  local G, gerr
  if single then G, gerr = gather_single(snap, plan, samples, n) end
  if not G and not gerr then G, gerr = gather(snap, plan, samples, n, single) end
  if not G then
    gerr.plan_id = base.plan_id
    return gerr
  end
  local rep, rep_steps = G.representative, G.rep_steps
  base.arg_agreement = share(G.arg_modal, n)
  base.result_agreement = share(G.result_modal, n)
  base.distinct_args, base.distinct_results = G.arg_distinct, G.result_distinct
  base.representative = rep

  -- the plan that would run is the representative one: its rung verdict stands
  for k, step in ipairs(rep_steps) do
    if not step.ok then
      local d = step.error and { verdict = "reject", stage = "rung", code = step.error.code,
          message = "the rung could not finish its check: " .. tostring(step.error.message) }
        or step.args and rung.check(reg, step.server, step.name, step.args)
        or { verdict = "reject", stage = "rung", code = "BAD_ARGUMENTS", message = "the call has no arguments object" }
      d.stage, d.plan_id, d.n, d.representative = "rung", base.plan_id, n, rep
      d.arg_agreement, d.result_agreement = base.arg_agreement, base.result_agreement
      if not single then d.step = k end
      return d
    end
  end
  local failures = arr()
  for _, f in ipairs(G.failures) do
    local d = f.args and rung.check(reg, f.server, f.name, f.args)
      or { code = "BAD_ARGUMENTS", message = "the call has no arguments object" }
    failures[#failures + 1] = { sample = f.sample, step = (not single) and f.step or nil, code = d.code,
      path = d.path, message = d.message }
  end
  if #failures > 0 then base.rung_failures = failures end
  base.steps = G.per_step

  -- which argument was made up: per-pointer agreement with the representative
  if G.arg_modal < n then
    local disagreeing = arr()
    for k = 1, #rep_steps do
      local nodes, index_of_rep = G.arg_nodes(k)
      if index_of_rep then
        local list, perr2, pcode = core:pointer_agreement(nodes, index_of_rep, G.norm_of(rep_steps[k].tool), 16)
        if not list then
          local d = hash_failed(pcode, perr2)
          d.plan_id = base.plan_id
          return d
        end
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
    fixed = G.epochs_equal
  end
  local epoch = samples:at(1):get("epoch")
  base.epoch = value.null
  if fixed and epoch then
    local e, eerr, ecode = json.to_lua(epoch)
    if eerr then
      local d = hash_failed(ecode, eerr)
      d.plan_id = base.plan_id
      return d
    end
    base.epoch = e
  end
  local epoch_name, failed_epoch
  if fixed then epoch_name, failed_epoch = epoch_key(epoch) end
  if failed_epoch then
    failed_epoch.plan_id = base.plan_id
    return failed_epoch
  end

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
