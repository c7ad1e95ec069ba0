-- toolgate classify: self-consistency of sampled plans.
local cli = require "toolgate.cli"

local M = {}

M.usage = [[
usage: toolgate classify [--policy FILE|NAME] [--registry [SERVER=]FILE]... [--context FILE] [FILE]

Reads one plan-sample set per line (FILE or standard input) and writes one
decision per line.  A plan was sampled N times and each sample run in a
sandbox or dry run:
  {"plan_id":"p1","tool":{"server":"","name":"read_config"[,"deterministic":true,"verified":true]},
   "samples":[{"arguments":{...},"result":...,"epoch":"e7"}, ...][,"epoch_fixed":true]}
or, for a plan of several calls,
  {"plan_id":"p2","samples":[{"epoch":"e7","calls":[{"server","name","arguments"},...],
   "results":[...]}, ...]}
Inline "deterministic"/"verified" override the registry and the probe state
(for replaying recorded experiments), but a tool quarantined during this run
counts as unverified whatever the plan says.

Agreement is measured on the canonical arguments and, separately, on the
canonical results; the decision carries arg_agreement, result_agreement, n,
distinct_args, distinct_results, the disagreeing argument pointers, and
one of the codes ARG_DISAGREE (reject), INSUFFICIENT_SAMPLES,
EPOCH_NOT_FIXED, DETERMINISM_UNVERIFIED, RESULT_DISAGREE, RESULT_UNSTABLE,
ARG_UNSTABLE (defer), or a rung code when the representative sample fails
the rung.  Thresholds come from the policy's consistency settings.  A
RESULT_DISAGREE quarantines the tool's determinism declaration for the
plans that follow; quarantined tools are listed on standard error.

  --policy FILE|NAME        a policy file or shipped policy: default (the
                            default), rung, mcp, strict, example (see
                            toolgate check --help)
  --registry [SERVER=]FILE  registry files (repeatable), added to the policy's
  --assert-formats          check every "format" the tools' schemas use, as
                            toolgate check --assert-formats does
  --context FILE            the context (a JSON object)
  --threads N               threads that classify together (default: the
                            processors online, at most 4); the output and
                            the quarantines are the same whatever N.  A
                            policy with custom stages, its own gate rule or
                            resolver functions classifies on one thread
  --fail-on VERDICT         exit 1 if any decision has this verdict

exit status: 0 done, 1 --fail-on matched, 2 bad usage, an unloadable
policy or registry, or an input that cannot be read or an output that
cannot be written
]]

function M.run(args)
  local opts, pos = cli.parse(args, {
    flags = { ["assert-formats"] = true },
    options = { policy = true, context = true, ["fail-on"] = true, threads = true },
    multi = { registry = true },
  })
  if #pos > 1 then cli.usage_error("at most one FILE") end
  local fail_on = cli.fail_on(opts)
  local threads = cli.threads(opts.threads)
  local engine = cli.load_engine("classify", opts, nil, true)
  if not engine then return cli.EXIT_USAGE end
  local ctx = cli.engine_context("classify", engine, opts)
  if not ctx then return cli.EXIT_USAGE end
  local counts = { cli.stream("classify", pos[1], function(input, output)
    return engine:classify_file(input, output, ctx, threads)
  end) }
  if not counts[1] then return cli.EXIT_USAGE end
  local names = {}
  for key, r in pairs(engine.store:records()) do
    if r.quarantined then names[#names + 1] = key:gsub("%z", "/") .. " (" .. r.quarantined.reason .. ")" end
  end
  table.sort(names)
  for _, q in ipairs(names) do cli.diag("classify", "quarantined: " .. q) end
  local n = { accept = counts[1], reject = counts[2], defer = counts[3] }
  return fail_on and n[fail_on] > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
