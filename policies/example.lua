-- example.lua: a policy to copy and make your own.  Every field is shown;
-- all but name and version are optional (docs/policies.md has the details).
--
-- A policy file is Lua, run in a sandbox: no io, no os (but os.time and
-- os.clock), no debug, no load or require (but toolgate's helpers), and
-- unknown globals are errors.  Every call into it has an instruction
-- budget; a function that errors or runs out refuses the call.
--
-- Try it:  bin/toolgate check --policy policies/example.lua \
--            --context examples/calls/context.json examples/calls/mcp-calls.jsonl
-- (its registry sources below are the filesystem and memory servers, so the
-- calls to the "everything" server are H1: not in this registry).

return {
  -- Shown in every decision as policy_version = "example@1+<hash of this file>".
  name = "example",
  version = "1",
  description = "a starting point: the default pipeline plus a custom stage",

  registry = {
    -- Files to load, relative to this file (SERVER=FILE names an MCP
    -- list's server).  --registry on the command line adds more.
    sources = {
      "../examples/registries/mcp-filesystem.json",
      "../examples/registries/mcp-memory.json",
    },
    closed = true,            -- closed-world objects (false: standard JSON Schema)
    assert_formats = false,   -- true: date-time, email, hostname, uri, int32, ... asserted,
                              -- and a format toolgate does not assert fails the load
    ignore_keywords = {},     -- schema keywords to treat as annotations
    annotation_formats = {},  -- formats left unchecked under assert_formats
    on_collision = "allow",   -- "error" fails the load, "reject" refuses the calls,
    on_shadowing = "reject",  -- "allow" only reports (toolgate registry lint)
    on_confusable = "allow",
    on_bad_name = "reject",
  },

  -- The pipeline.  The rung comes first: stages that read a tool's contract
  -- (gate, verifier, and custom stages with reads_contract = true) cannot
  -- reject a tool that does not exist, so the loader refuses them before it.
  stages = {
    "rung",
    {
      name = "no_dotfiles",         -- a custom stage
      code = "DOTFILE",             -- the code of its rejects
      reads_contract = false,       -- true: it gets the tool's contract
      run = function(call, tool, ctx)
        local path = call.arguments.path
        if type(path) == "string" and path:match("/%.[^/]+$") then
          return false, "dotfiles are off limits: " .. path
        end
        return true
      end,
    },
    "gate",
    "verifier",
  },

  rung = {
    report_also = false,      -- true: accepted calls list other tools that accept the arguments (H5)
  },

  gate = {
    risk_levels = { "none", "low", "medium", "high", "critical" },
    -- Replace the default rule (scopes granted, risk <= ctx.max_risk) with
    -- your own.  Return true, false[, reason] or "defer"[, reason].
    admissible = function(contract, ctx, call)
      if contract.risk == "high" and not ctx.approved_by then
        return "defer", "high-risk calls need a named approver"
      end
      for _, scope in ipairs(contract.scopes or {}) do
        local granted = false
        for _, g in ipairs(ctx.scopes or {}) do
          if g == scope then granted = true end
        end
        if not granted then return false, "scope " .. scope .. " is not granted" end
      end
      return true
    end,
  },

  verifier = {
    require_contract = false, -- true: refuse tools whose results cannot be verified
    on_mismatch = "reject",   -- or "defer"
  },

  -- The self-consistency stage's settings (toolgate classify; add
  -- "consistency" to the stages, after the rung, to use it).
  consistency = {
    min_samples = 6,          -- fewer samples: defer INSUFFICIENT_SAMPLES (at 5, arg_reject
                              -- 0.20 could never reject: 5 samples agree at least 1/5)
    max_samples = 10000,      -- more: reject TOO_MANY_SAMPLES
    arg_accept = 0.80,        -- arguments agree this much: accept (if the results do too)
    arg_reject = 0.20,        -- below this: ARG_DISAGREE, when the tool is verified deterministic
    result_accept = 0.80,
    result_quarantine = 0.50, -- below this, a tool declared deterministic is quarantined
    on_invalid = "defer",     -- too few samples, an epoch that moved: "defer" or "reject"
  },

  -- The core's limits (docs/limits.md; these are the defaults).
  limits = { max_depth = 64, max_input_bytes = 1048576 },

  -- ID resolvers for arguments a schema marks x-toolgate-canonical "id":
  -- an alias table (a spelling -> the canonical id) or a function(id, tool).
  resolvers = {
    accounts = { ["acme corp"] = "acct_1", ACME = "acct_1" },
  },

  -- Derive contract fields from what the registry says of each tool (run
  -- once per tool at load).  Here: MCP read-only tools are low risk.
  contract = function(tool)
    local a = tool.annotations or {}
    local c = tool.contract or {}
    c.risk = c.risk or (a.readOnlyHint and "low" or "high")
    c.scopes = c.scopes or { tool.server .. (a.readOnlyHint and ":read" or ":write") }
    return c
  end,

  context = { scopes = {}, max_risk = "medium" },  -- the per-call context's defaults
  defer = { requires_approval = false },
  on_error = "reject",         -- what a failing policy function makes of a decision
  budget = 1000000,            -- VM instructions per call into this file's functions
}
