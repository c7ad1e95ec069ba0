-- toolgate policy lint: a policy's load errors, then what is legal in it but
-- likely wrong (toolgate.lint).
local cli = require "toolgate.cli"
local decision = require "toolgate.decision"
local lint = require "toolgate.lint"
local policy_mod = require "toolgate.policy"
local test = require "toolgate.cli.test"

local M = {}

M.usage = [[
usage: toolgate policy lint [--registry [SERVER=]FILE]... [--context FILE] [--cases FILE]... [--notes]
                            POLICY | --policy POLICY

Loads POLICY (a file, or a shipped policy's name) as check would, and
reports what is legal but likely wrong, one finding per line,
  POLICY:LINE: warning: ...     likely a mistake
  POLICY:LINE: note: ...        noise: a setting that repeats the default
                                (listed with --notes, counted always)
then "N warnings, N notes".  The findings:
  - thresholds that make a verdict unreachable (1/min_samples >= arg_reject,
    arg_accept = arg_reject, result_quarantine >= result_accept, ...)
  - a custom stage that reads its tool argument (the contract) but does
    not declare reads_contract = true: it gets nil there
  - context keys the gate rule or a custom stage reads that no context
    holds (the policy's own, --context, the cases'); a key read with a
    fallback (ctx.now or os.time()) or compared with nil (ctx.x ~= nil)
    is one the function expects absent, not a finding
  - a gate.admissible that refused none of the cases (with --cases)
  - settings equal to their defaults (notes)
The load errors are the loader's (a risk the registry declares that is not
in the policy's risk order among them, with --registry), with the line of
the setting they name where it can be found.

  --registry [SERVER=]FILE  registry files (repeatable), added to the policy's
                            own sources: the registry the policy will run with
  --context FILE            a context the policy will see (a JSON object)
  --cases FILE              a case file (toolgate test), repeatable: its
                            contexts count as given, and the gate rule's
                            outcomes on its cases are read
  --notes                   list the notes too (the shipped policies spell
                            out defaults on purpose, to show them)

exit status: 0 no warnings (notes alone are no failure), 1 a warning, 2 bad
usage or a policy (or registry, or case file) that cannot be loaded
]]

-- The line a load error's field ("policy gate.risk_levels: ...") is on; a
-- risk the registry declares that the risk order lacks is the order's.
local function error_line(text, err, code)
  local field = tostring(err):match("^policy ([%w_.]+)[%[:]")
  if code == "BAD_CONTRACT" and tostring(err):find("risk levels", 1, true) then field = "gate.risk_levels" end
  return field and text and lint.line_of(text, field)
end

local function lint_one(opts, name)
  local path, rerr = policy_mod.resolve(name)
  if not path then
    cli.diag("policy lint", cli.not_a_policy(name) or rerr)
    return cli.EXIT_USAGE
  end
  local text = cli.read_all("policy lint", path)
  if not text then return cli.EXIT_USAGE end
  local function load_failed(err, code)
    local line = error_line(text, err, code)
    cli.out(path, line and (":" .. line) or "", ": error: ", code and (code .. ": ") or "", tostring(err), "\n")
    return cli.EXIT_USAGE
  end
  local pol, err, code = policy_mod.load(path)
  if not pol then return load_failed(code == "POLICY_LOAD" and cli.not_a_policy(path) or err, code) end
  local contexts, outcomes, base_ctx = {}, nil, {}
  if opts.context then
    base_ctx = cli.read_context("policy lint", decision.codec(), opts.context)
    if not base_ctx then return cli.EXIT_USAGE end
    contexts[1] = base_ctx
  end
  local engine_needed = opts.registry or #pol.registry_sources > 0
  if engine_needed then
    local engine
    engine, err, code = require("toolgate.engine").new({ policy = path, registry = opts.registry })
    if not engine then return load_failed(err, code) end
    if opts.cases then
      outcomes = {}
      for _, file in ipairs(opts.cases) do
        local cases, cerr = test.read_cases(file, decision.codec())
        if not cases then
          if cerr then cli.diag("policy lint", cerr) end
          return cli.EXIT_USAGE
        end
        for _, c in ipairs(cases) do
          if c.case.context then contexts[#contexts + 1] = c.case.context end
          outcomes[#outcomes + 1] = test.outcome(engine, c.case, base_ctx)
        end
      end
    end
  elseif opts.cases then
    cli.usage_error("--cases needs the registry the policy runs with (--registry, or the policy's registry.sources)")
  end
  local findings = lint.lint(pol, text, { contexts = contexts, outcomes = outcomes })
  local warnings, notes = 0, 0
  for _, f in ipairs(findings) do
    local note = f.severity == "note"
    if note then notes = notes + 1 else warnings = warnings + 1 end
    if opts.notes or not note then
      cli.out(path, f.line and (":" .. f.line) or "", ": ", f.severity, ": ", f.message, "\n")
    end
  end
  cli.out(warnings, warnings == 1 and " warning, " or " warnings, ", notes, notes == 1 and " note" or " notes",
    (notes > 0 and not opts.notes) and " (--notes lists them)\n" or "\n")
  return warnings > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

function M.run(args)
  if args[1] ~= "lint" then cli.usage_error("toolgate policy takes one subcommand: lint") end
  local rest = {}
  for i = 2, #args do rest[#rest + 1] = args[i] end
  local opts, pos = cli.parse(rest, {
    flags = { notes = true },
    options = { context = true, policy = true },
    multi = { registry = true, cases = true },
  })
  -- the policy as check takes it (--policy), or as the one argument
  if opts.policy then pos[#pos + 1] = opts.policy end
  if #pos ~= 1 then cli.usage_error("one POLICY (as an argument, or --policy POLICY)") end
  return lint_one(opts, pos[1])
end

return M
