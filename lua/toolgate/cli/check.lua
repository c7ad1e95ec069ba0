-- toolgate check: the policy's pipeline on each call line.
local cli = require "toolgate.cli"
local engine_mod = require "toolgate.engine"

local M = {}

M.usage = [[
usage: toolgate check [--policy FILE|NAME] [--registry [SERVER=]FILE]... [options] [FILE]

Runs the policy's stages (by default the Resolution Rung, the causal gate
and the contract verifier) on each tool call in FILE (or standard input),
one JSON value per line, and writes one decision per call, in order:
  {"verdict":"accept|reject|defer","stage":"decode|rung|gate|...",
   "code":"H1|H2|H3|H4|...","path":"/json/pointer","message":"...",
   "server":"...","tool":"...","line":N,"index":I,"format":"openai-chat",
   "policy_version":"...","registry_hash":"...",...}
A line may hold several calls (a chat.completion, a message, a Responses
API response, an Anthropic message, an MCP batch): each gets its decision,
with index counting from 0; a line of no call (a text-only message) writes
nothing; a line that cannot be decoded gets one reject without index.

An input whose first line that is not blank is the start of a JSON value
that goes on past it (a response saved with indentation, as the SDKs and
jq print it, or several such documents one after another, as jq without
-c prints them) is read as JSON documents instead: each is decided as a
line is, "line" being the line it starts on (and "offset" counted from
its start), and no part of a document is ever decided on its own.  The
first line decides: JSON Lines stay JSON Lines, byte for byte.  A
document that is not JSON, or larger than the policy's max_input_bytes
(1 MiB by default), gets one reject and ends the reading (where the next
one would start cannot be told; stderr says so).

  --policy FILE|NAME        a policy file, or a shipped policy by name:
                              default  (the default) rung, gate, verifier; the
                                       gate needs each tool's risk and scopes
                              rung     the schemas alone, no contract needed:
                                       for OpenAI and Anthropic tool lists,
                                       which carry no risks (formats too
                                       with --assert-formats)
                              mcp      risks and scopes from MCP annotations
                              strict   every registry finding fails the load
                              example  a template to copy
  --registry [SERVER=]FILE  a registry file (repeatable), added to the policy's
                            own sources: toolgate's format, an OpenAI or Anthropic
                            tools array, or an MCP tools/list result; SERVER=
                            names the server its tools belong to
  --assert-formats          check every "format" the tools' schemas use
                            (email, uuid, date, date-time, uri, ...: the
                            formats of toolgate validate --assert-formats),
                            as the policy's registry.assert_formats = true
                            does: a value that fails is H3.  A format
                            toolgate cannot check fails the load
                            (UNSUPPORTED_FORMAT) rather than pass unchecked.
                            Without it a format is an annotation (in every
                            shipped policy but strict)
  --context FILE            the per-call context (a JSON object: scopes,
                            max_risk, epoch, ...): what the operator grants.
                            A call line carrying its own "context" is refused
                            (CONTEXT_IN_CALL): a model must not grant itself
                            scopes
  --line-context            trust the input: merge each line's "context" over
                            --context (for replaying recorded traffic whose
                            contexts you trust; never for what a model wrote)
  --format FMT              call format: auto (default: told by the members
                            only one format has; a line with the members of
                            two is refused), native, openai, anthropic, mcp
                            (only that format's shapes, read strictly); a
                            shape a decision's "format" shows (openai-chat,
                            anthropic-message, mcp-batch, ...: see Shapes)
                            reads its format's every shape
  --server NAME             server for calls that name none
  --also                    for accepted calls, list the other tools whose input
                            schemas also accept the arguments (H5)
  --threads N               threads that decide together (default: the
                            processors online, at most 4); the output is
                            the same bytes whatever N.  A policy with custom
                            stages or its own gate rule decides on one
                            thread
  --fail-on VERDICT         exit 1 if any call's decision has this verdict
                            (a refusal shadow marks counts: its verdict
                            is the one it would have had)
  --shadow                  as if the policy's mode were "shadow": each
                            reject and defer it would let run carries
                            "enforced":false (not H1, PIN_CHANGED,
                            SERVER_QUARANTINED or the policy's own
                            always_enforce codes, nor a line that cannot
                            be decoded).  A policy whose mode or modes say
                            "shadow" marks them so without it.  Verdicts,
                            counts and exit status stay as they are.
                            Decides a line at a time, as --explain does
  --explain                 each decision carries "explain": a trace of each
                            stage that ran, what it looked at (the call, the
                            tool's contract fields, the context's values,
                            the thresholds), what it said and its CPU time
                            in microseconds; for a custom stage or the gate's
                            own rule, what the function returned and the
                            instructions it used of its budget.  Decides on
                            one thread, a call at a time (slower: for
                            reading, not for traffic).  Without it the
                            output is as it always was

Shapes (the decision's "format"): native {"server","name","arguments"};
openai (a Chat Completions tool call), openai-tool-calls (a bare array of
them), openai-message, openai-chat (a chat.completion),
openai-function-call (a Responses API function_call item),
openai-responses (a Responses API response); anthropic (a tool_use block),
anthropic-message; mcp (a tools/call request), mcp-batch.  A call object
with a member its SDK type does not define is refused (BAD_CALL names it).
What is no call is refused saying what it is: a request body to a model
({"model","messages","tools"}: its calls are in the response, its .tools
are a registry), an array of responses or messages (jq -s: give one per
line, jq -c '.[]'), a file that looks like YAML (one reject, "not JSON
(YAML?)").

Codes: H1 unknown or ambiguous tool; H2 undeclared or missing key; H3 a
value failing its check; H4 outside the caller's scopes or risk; BAD_CALL,
BAD_ARGUMENTS and the JSON error codes for lines that cannot be decoded;
UNSUPPORTED_CALL for a call toolgate cannot gate (one the provider runs
itself, such as Anthropic server_tool_use or an OpenAI web_search_call,
or one without JSON arguments); QUOTA past a policy's quota (with limit,
window and retry_after: docs/quotas.md); POLICY_ERROR when a policy
function fails.
Nothing that cannot be checked is ever accepted.

When the policy's gate will refuse tools only because they declare no risk,
a warning on stderr says so once, at load, and how to give them one.

An input in which no call was read (an empty file, text-only messages)
writes nothing and says so on stderr, "FILE: no call in it"; the exit
status stays 0.

exit status: 0 done, 1 --fail-on matched (or a line met an internal error:
it gets an INTERNAL_ERROR reject and a note on stderr), 2 bad usage, a
policy or registry that cannot be loaded, or an input that cannot be read
or an output that cannot be written (one line on stderr saying why)
]]

function M.run(args)
  local opts, pos = cli.parse(args, {
    flags = { also = true, ["line-context"] = true, explain = true, ["assert-formats"] = true, shadow = true },
    options = { format = true, server = true, ["fail-on"] = true, policy = true, context = true, threads = true },
    multi = { registry = true },
  })
  if #pos > 1 then cli.usage_error("at most one FILE") end
  local format = opts.format or "auto"
  if not engine_mod.FORMATS[format] then cli.usage_error("unknown --format " .. format) end
  local fail_on = cli.fail_on(opts)
  local threads = cli.threads(opts.threads)
  local engine = cli.load_engine("check", opts, { format = format,
    trust_call_context = opts["line-context"], report_also = opts.also, explain = opts.explain,
    shadow = opts.shadow }, true)
  if not engine then return cli.EXIT_USAGE end
  local ctx = cli.engine_context("check", engine, opts, { server = opts.server })
  if not ctx then return cli.EXIT_USAGE end
  local counts = { cli.stream("check", pos[1], function(input, output)
    return engine:check_file(input, output, ctx, threads)
  end) }
  if not counts[1] then return cli.EXIT_USAGE end
  local name = (pos[1] == nil or pos[1] == "-") and "<stdin>" or pos[1]
  if counts[4] then
    cli.diag("check", name .. ":" .. counts[4] .. ": the document there was refused, and the input after it was "
      .. "not read (where the next document would start cannot be told)")
  end
  local n = { accept = counts[1], reject = counts[2], defer = counts[3] }
  if n.accept + n.reject + n.defer == 0 then
    -- said, so that a run fed nothing by mistake does not pass unseen
    cli.diag("check", name .. ": no call in it (an empty input, or text-only messages)")
  end
  return fail_on and n[fail_on] > 0 and cli.EXIT_FAILED or cli.EXIT_OK
end

return M
