-- toolgate.cli: the toolgate command.  Dispatches to one module per command
-- (toolgate.cli.<name>) and holds what they share: option parsing, input
-- reading, diagnostics and exit codes.
--
-- Exit codes: 0 the job was done; 1 some input failed (or --fail-on matched);
-- 2 bad usage or unreadable input.

local core = require "toolgate.core"
local decision = require "toolgate.decision"
local lines = require "toolgate.lines"
local suggest = require "toolgate.suggest"
local value = require "toolgate.value"

local M = {}

M.EXIT_OK, M.EXIT_FAILED, M.EXIT_USAGE = 0, 1, 2

local COMMANDS = {
  { name = "canon", summary = "RFC 8785 canonical form (or its XXH3-128 hash) of JSON documents" },
  { name = "check", summary = "the policy's stages on each tool call: one decision per line" },
  { name = "classify", summary = "self-consistency of sampled plans: agreement on arguments and on results" },
  { name = "sweep", summary = "labeled plans over a grid of thresholds: confusion tables, CSV, JSON, plots" },
  { name = "test", summary = "a policy's cases: each call or plan against the decision fields it must get" },
  { name = "policy", summary = "policy lint: load errors, then what is legal but likely wrong, with lines" },
  { name = "probe", summary = "verify tools' determinism declarations by running a dry run twice" },
  { name = "validate", summary = "JSON Schema validation of instances (standard or closed world)" },
  { name = "registry", summary = "registry lint (collisions, shadowing, names, schemas), registry record (a live server), "
    .. "registry compile (an image every engine maps)" },
  { name = "gateway", summary = "an MCP gateway on nginx: approvals, tool pins, metrics, reload" },
  { name = "mcp-proxy", module = "mcp_proxy", summary = "a stdio MCP gateway around a local server" },
  { name = "approvals", summary = "the person's side of a defer: list, grant or deny (the local state)" },
  { name = "log", summary = "the decisions the stdio proxies made (the local state)" },
  { name = "env", summary = "LUA_PATH, LUA_CPATH, TOOLGATE_LIB for scripts: eval \"$(bin/toolgate env)\"" },
}

local function command_module(name)
  for _, c in ipairs(COMMANDS) do
    if c.name == name then return require("toolgate.cli." .. (c.module or name)) end
  end
end

-- A usage error carries its message up to main(), which prints it in one
-- line with where the command's options are (its --help), and exits 2: the
-- whole help after it would scroll the one line that matters off the screen.
local UsageError = {}
UsageError.__index = UsageError
function M.usage_error(msg) error(setmetatable({ msg = msg }, UsageError), 0) end

-- unknown_option(arg, spec): the usage error of an option spec does not
-- know, naming the one it was likely meant to be ("-policy" is "--policy")
local function unknown_option(arg, spec)
  local known = { "help" }
  for _, set in ipairs({ spec.flags or {}, spec.options or {}, spec.multi or {} }) do
    for _, name in ipairs(suggest.sorted_keys(set)) do known[#known + 1] = name end
  end
  local name = arg:match("^%-+([^=]*)")
  local meant
  for _, k in ipairs(known) do
    if k == name then meant = k end
  end
  meant = meant or suggest.closest(name, known)
  M.usage_error("unknown option " .. (arg:match("^[^=]*")) .. (meant and " (did you mean --" .. meant .. "?)" or ""))
end

-- parse(argv, spec) -> opts, positionals
-- spec.flags: set of boolean flags; spec.options: set of flags taking a value;
-- spec.multi: options that may repeat (their values collect in a list).
-- "--" ends options; "-" alone is a positional (standard input).
function M.parse(argv, spec)
  local opts, pos = {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      for j = i + 1, #argv do pos[#pos + 1] = argv[j] end
      break
    elseif a:sub(1, 2) == "--" then
      local name, val = a:match("^%-%-([^=]+)=(.*)$")
      name = name or a:sub(3)
      if spec.flags and spec.flags[name] then
        if val then M.usage_error("--" .. name .. " takes no value") end
        opts[name] = true
      elseif (spec.options and spec.options[name]) or (spec.multi and spec.multi[name]) then
        if not val then
          i = i + 1
          val = argv[i]
          if val == nil then M.usage_error("--" .. name .. " needs a value") end
        end
        if spec.multi and spec.multi[name] then
          opts[name] = opts[name] or {}
          table.insert(opts[name], val)
        else
          opts[name] = val
        end
      else
        unknown_option(a, spec)
      end
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      unknown_option(a, spec)
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

function M.diag(cmd, msg)
  io.stderr:write("toolgate ", cmd, ": ", msg, "\n")
end

-- Standard output, checked: the first write or flush that fails is kept,
-- and main then ends the command with exit status 2 saying so, so that a
-- full disk or a closed output is never a silent success.
local output_error
function M.out(...)
  local ok, err = io.stdout:write(...)
  if not ok and not output_error then output_error = tostring(err) end
end

function M.flush()
  local ok, err = io.stdout:flush()
  if not ok and not output_error then output_error = tostring(err) end
end

-- What the core reads for FILE: the path, or 0 (standard input) for none or "-".
local function core_input(path)
  if path == nil or path == "-" then return 0, "<stdin>" end
  return path, path
end

-- open_input(cmd, path) -> file handle, display name | nil (after a diagnostic)
function M.open_input(cmd, path)
  if path == nil or path == "-" then return io.stdin, "<stdin>" end
  local f, err = io.open(path, "rb")
  if not f then
    M.diag(cmd, "cannot read " .. tostring(err))
    return nil
  end
  return f, path
end

-- read_all(cmd, path) -> content, display name | nil
function M.read_all(cmd, path)
  local f, name = M.open_input(cmd, path)
  if not f then return nil end
  local data, err = f:read("*a")
  if f ~= io.stdin then f:close() end
  if not data then
    M.diag(cmd, "cannot read " .. name .. ": " .. tostring(err))
    return nil
  end
  return data, name
end

-- write_file(cmd, path, text) -> true | nil (after a diagnostic)
function M.write_file(cmd, path, text)
  local f, err = io.open(path, "wb")
  if not f then
    M.diag(cmd, "cannot write " .. tostring(err))
    return nil
  end
  local ok, werr = f:write(text)
  f:close()
  if not ok then
    M.diag(cmd, "cannot write " .. path .. ": " .. tostring(werr))
    return nil
  end
  return true
end

-- each_line(cmd, path, fn) -> true | nil (after a diagnostic): calls
-- fn(line, number, display name) for every line of the input that is not
-- blank (JSON Lines readers skip blank lines); the number counts all lines
-- from 1.
function M.each_line(cmd, path, fn)
  local f, name = M.open_input(cmd, path)
  if not f then return nil end
  local n = 0
  for line in f:lines() do
    n = n + 1
    if line:find("%S") then fn(line, n, name) end
  end
  if f ~= io.stdin then f:close() end
  return true
end

-- not_a_policy(arg) -> what the --policy argument that failed to load is,
-- when that is likelier the story than the loader's, or nil: a YAML or JSON
-- file (which Lua reads as a syntax error on line 1), or a file here taken
-- for a shipped policy's name, having no slash and no .lua.  (Also policy
-- lint's and gateway's, which resolve the policy themselves.)
function M.not_a_policy(arg)
  local f = io.open(arg, "rb")
  if not f then return nil end
  local head, err = f:read(4096)
  f:close()
  if not head and err then return nil end -- a directory
  head = head or ""
  local looks
  if head:match("^%s*[{%[]") then
    looks = "JSON"
  else
    for line in head:gmatch("[^\n]+") do
      if line:find("%S") and not line:match("^%s*#") and not line:match("^%-%-%-%s*$") then
        if line:match("^[%w_\"'-]+%s*:%s") or line:match("^[%w_\"'-]+%s*:%s*$") then looks = "YAML" end
        break
      end
    end
  end
  if looks then
    return arg .. " is not a Lua policy file: it looks like " .. looks .. "; a policy is a Lua file that returns a "
      .. "table (see docs/policies.md; the shipped policy example is a template to copy)"
  end
  if not arg:find("/", 1, true) and not arg:match("%.lua$") then
    return arg .. " is a file here, not a shipped policy's name: to load it as a policy file, give its path, ./" .. arg
  end
end

-- load_engine(cmd, opts, engine_opts, warn) -> engine | nil (after a
-- diagnostic): the engine of --policy (a path, or a shipped policy's name;
-- default: "default"), --registry and --assert-formats (a flag of check,
-- classify, test and mcp-proxy: validate's, for the tools' schemas), with
-- engine_opts (format, trust_call_context) passed on; warn prints the
-- load's warnings.
function M.load_engine(cmd, opts, engine_opts, warn)
  local o = { policy = opts.policy or "default", registry = opts.registry,
              assert_formats = opts["assert-formats"] or nil }
  for k, v in pairs(engine_opts or {}) do o[k] = v end
  local engine, err, code = require("toolgate.engine").new(o)
  if not engine then
    if code == "NO_REGISTRY" then
      err = "no registry: give the tools' list with --registry [SERVER=]FILE (or list it in the policy's "
        .. "registry.sources)"
    elseif code == "POLICY_LOAD" and type(o.policy) == "string" then
      err = M.not_a_policy(o.policy) or err
    end
    M.diag(cmd, (code and (code .. ": ") or "") .. tostring(err))
    return nil
  end
  if warn then
    for _, w in ipairs(engine:warnings()) do M.diag(cmd, "warning: " .. w) end
    -- a server that declares no annotations: what the policy makes of its tools, and how to say more
    for _, l in ipairs(require("toolgate.registry").unannotated(engine:snapshot().registry.tools)) do
      M.diag(cmd, l)
    end
  end
  return engine
end

-- The state directory of the commands that keep state (mcp-proxy,
-- approvals, log): --state DIR, else $XDG_STATE_HOME/toolgate, else
-- ~/.local/state/toolgate.  The file in it is state.sqlite.
function M.state_dir(opt)
  if opt then return opt end
  local xdg = os.getenv("XDG_STATE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/toolgate" end
  return (os.getenv("HOME") or ".") .. "/.local/state/toolgate"
end

local ENOENT, EEXIST = 2, 17 -- Linux

-- Whether a permission bit (octal 020: group write) is set, without the
-- bitwise operators LuaJIT lacks.
local function has_bit(perm, bit) return math.floor(perm / bit) % 2 == 1 end

-- The state directory, made (mode 700, and the missing directories above
-- it) when it is missing | nil, why.  Whoever may write the directory can
-- replace the approvals in it, so one that group or others may write, or
-- that another user owns, is refused, as ssh refuses such files.
function M.private_dir(dir)
  local proc = require "toolgate.proc"
  local st, err, errno = proc.stat(dir)
  if not st and errno == ENOENT then
    local path = dir:sub(1, 1) == "/" and "" or "."
    for part in dir:gmatch("[^/]+") do
      path = path .. "/" .. part
      local ok, merr, merrno = proc.mkdir(path, 448) -- 0700
      if not ok and merrno ~= EEXIST then return nil, "cannot open " .. dir .. ": cannot make " .. path .. ": " .. merr end
    end
    st, err = proc.stat(dir)
  end
  if not st then return nil, "cannot open " .. dir .. ": " .. tostring(err) end
  if not st.dir then return nil, "cannot open " .. dir .. ": not a directory" end
  if st.uid ~= proc.euid() and st.uid ~= 0 then
    return nil, dir .. " is owned by another user (uid " .. st.uid .. "): it could replace the approvals in it; "
      .. "give a directory of your own"
  end
  if has_bit(st.perm, 16) or has_bit(st.perm, 2) then
    return nil, string.format("%s is mode %04o: others may write it and replace the approvals in it; fix it with "
      .. "chmod 700 %s", dir, st.perm, dir)
  end
  return true
end

-- The local user, who asks on stdio (mcp-proxy's principal) and who decides
-- (approvals grant|deny): $USER, else $LOGNAME, when it is a principal's
-- name (toolgate.mcp.principal_valid), else "uid:N" of the effective uid.
-- Whoever runs the command could set $USER: it names them in the records,
-- it proves nothing (an HTTP gateway's principal comes from its auth layer).
function M.local_user()
  local valid = require("toolgate.mcp").principal_valid
  for _, var in ipairs({ "USER", "LOGNAME" }) do
    local v = os.getenv(var)
    if valid(v) then return v end
  end
  return "uid:" .. require("toolgate.proc").euid()
end

--- is_terminal(fd) -> whether the file descriptor (1: standard output) is
-- a terminal: a person reads it, not a program.
function M.is_terminal(fd)
  local ok, how, code = os.execute("test -t " .. math.floor(fd))
  if type(ok) == "number" then return ok == 0 end -- LuaJIT, Lua 5.1
  return ok == true and how == "exit" and code == 0
end

-- open_state(cmd, dir[, opts]) -> the SQLite store in dir (see
-- private_dir) | nil (after a diagnostic); opts as for
-- toolgate.state.sqlite's open (busy_ms)
function M.open_state(cmd, dir, opts)
  dir = M.state_dir(dir)
  local ok, why = M.private_dir(dir)
  if not ok then
    M.diag(cmd, "--state: " .. why)
    return nil
  end
  local store, err = require("toolgate.state.sqlite").open(dir .. "/state.sqlite", opts)
  if not store then M.diag(cmd, "--state: " .. tostring(err)) end
  return store
end

-- The threads a command decides on: --threads N (1 .. 64), or by default
-- default_threads(the processors online).
M.DEFAULT_MAX_THREADS = 4

--- default_threads(cpus) -> the processors, at most DEFAULT_MAX_THREADS
-- (beyond that the reading and writing of lines, on one thread, is what
-- limits a run).  Since the core reads the input itself, in pieces of
-- 1 MiB a thread (engine:check_file), two threads on a 2-vCPU machine take
-- 0.6-0.9x the wall time of one (docs/performance.md); with 64 KiB pieces
-- handed over from Lua they took 1.2-1.8x, a worker woken for each.
function M.default_threads(cpus)
  return math.max(1, math.min(cpus, M.DEFAULT_MAX_THREADS))
end

function M.threads(arg)
  if arg == nil then return M.default_threads(require("toolgate.core").cpu_count()) end
  local n = tonumber(arg)
  if not n or n ~= math.floor(n) or n < 1 or n > 64 then M.usage_error("--threads takes a whole number from 1 to 64") end
  return n
end

-- fail_on(opts) -> the verdict of --fail-on, or nil; any other value is a
-- usage error
function M.fail_on(opts)
  local v = opts["fail-on"]
  if v and v ~= "reject" and v ~= "defer" and v ~= "accept" then
    M.usage_error("--fail-on takes reject, defer or accept")
  end
  return v
end

-- engine_context(cmd, engine, opts[, extra]) -> the engine's compiled
-- context of --context FILE (with extra's fields over it) | nil (after a
-- diagnostic): compiled once for every line
function M.engine_context(cmd, engine, opts, extra)
  local ctx = {}
  if opts.context then
    ctx = M.read_context(cmd, engine:snapshot().core, opts.context)
    if not ctx then return nil end
  end
  for k, v in pairs(extra or {}) do ctx[k] = v end
  local compiled, err = engine:context(ctx)
  if not compiled then M.diag(cmd, "--context: " .. tostring(err)) end
  return compiled
end

-- stream(cmd, path, decide) -> accepts, rejects, defers[, what else the
-- method returned] | nil (after a diagnostic): FILE (or standard input)
-- through decide(input, output), an engine's file method (check_file,
-- classify_file) given the path (or 0) and standard output's descriptor:
-- the core reads the input, decides whole chunks and writes the decisions
-- itself; Lua only answers what is Lua's.
function M.stream(cmd, path, decide)
  local input = core_input(path)
  M.flush() -- what Lua buffered comes before what the core writes
  local a, r, d, more = decide(input, 1)
  if a == nil then -- nothing more was decided: say why
    M.diag(cmd, tostring(r))
    return nil
  end
  return a, r, d, more
end

-- read_lines(cmd, path, core_engine, step) -> the count of lines that
-- failed | nil (after a diagnostic): FILE (or standard input) read by the
-- core, step(reader, want, line) -- a core engine's canon_reader or a
-- schema's validate_reader, which write their output to standard output
-- themselves -- called until the input is done; a line that fails is
-- reported with its number, in order with the output, and the run goes on.
function M.read_lines(cmd, path, core_engine, step)
  local input, name = core_input(path)
  local reader, err = core_engine:reader(input)
  if not reader then
    M.diag(cmd, tostring(err))
    return nil
  end
  M.flush() -- what Lua buffered comes before what the core writes
  local line, failed = 0, 0
  while true do
    local ok, message, code, offset, last, done = step(reader, lines.CHUNK, line)
    if ok == false then
      reader:close()
      M.diag(cmd, tostring(message))
      return nil
    end
    line = last
    if ok == nil then
      failed = failed + 1
      M.diag(cmd, name .. ":" .. last .. ": " .. M.describe(message, code, offset))
    end
    if done then break end
  end
  reader:close()
  return failed
end

-- read_context(cmd, core_engine, path) -> table | nil (after a diagnostic)
function M.read_context(cmd, core_engine, path)
  local text = M.read_all(cmd, path)
  if not text then return nil end
  local v, err, code, offset = require("toolgate.json").decode(core_engine, text)
  if v == nil then
    M.diag(cmd, path .. ": " .. M.describe(err, code, offset))
    return nil
  end
  if type(v) ~= "table" then
    M.diag(cmd, path .. ": a context must be a JSON object")
    return nil
  end
  return v
end

-- A decision (or any Lua value) as one line of canonical JSON: sorted keys,
-- so output is stable for diffs and tests.  It cannot fail: a value that
-- does not encode (a bug) becomes an INTERNAL_ERROR record saying so,
-- keeping the line number, so every line still gets its line of output.
function M.encode(v)
  local output_codec = decision.codec() -- toolgate's own output: the widest limits, never a policy's
  local text, err = value.encode(v)
  local out
  if text then out, err = output_codec:canon(text) end
  if out then return out end
  M.diag("output", "cannot write a record as JSON (" .. tostring(err) .. "); writing INTERNAL_ERROR instead")
  local line = type(v) == "table" and type(v.line) == "number" and v.line or nil
  return assert(output_codec:canon(assert(value.encode({ verdict = "reject", code = "INTERNAL_ERROR", line = line,
    message = "toolgate could not write this decision: " .. tostring(err) }))))
end

-- "CODE at byte N: message" for an error from the core.
function M.describe(err, code, offset)
  local where = offset and (" at byte " .. offset) or ""
  return (code or "ERROR") .. where .. ": " .. tostring(err)
end

local function global_usage()
  local out = {
    "usage: toolgate <command> [options] [FILE]",
    "",
    "toolgate decides, before an LLM agent's tool call runs, whether it should run.",
    "Reads FILE (or standard input), writes JSON Lines to standard output and",
    "diagnostics to standard error.",
    "",
    "commands:",
  }
  for _, c in ipairs(COMMANDS) do
    out[#out + 1] = string.format("  %-10s %s", c.name, c.summary)
  end
  out[#out + 1] = ""
  out[#out + 1] = "toolgate <command> --help     options of one command"
  out[#out + 1] = "toolgate --version            version and binding"
  return table.concat(out, "\n") .. "\n"
end

-- main(argv) -> exit status
function M.main(argv)
  argv = argv or {}
  local cmd = argv[1]
  if cmd == nil or cmd == "--help" or cmd == "-h" or cmd == "help" then
    local sub = cmd == "help" and argv[2] and command_module(argv[2])
    io.stdout:write(sub and sub.usage or global_usage())
    return cmd == nil and M.EXIT_USAGE or M.EXIT_OK
  end
  if cmd == "--version" then
    io.stdout:write("toolgate ", core.VERSION, " (", core.BINDING, " binding, ", _VERSION,
                    rawget(_G, "jit") and (" " .. jit.version) or "", ")\n")
    return M.EXIT_OK
  end
  local mod = command_module(cmd)
  if not mod then
    local names = {}
    for _, c in ipairs(COMMANDS) do names[#names + 1] = c.name end
    local meant = suggest.closest(cmd, names)
    io.stderr:write("toolgate: unknown command '", cmd, "'", meant and (" (did you mean " .. meant .. "?)") or "",
      "; see 'toolgate --help'\n")
    return M.EXIT_USAGE
  end
  local args = {}
  for i = 2, #argv do args[#args + 1] = argv[i] end
  for _, a in ipairs(args) do
    if a == "--help" or a == "-h" then
      io.stdout:write(mod.usage)
      return M.EXIT_OK
    end
  end
  io.stdout:setvbuf("full")
  local ok, result = pcall(mod.run, args)
  M.flush()
  if ok and output_error then
    M.diag(cmd, "cannot write the output: " .. output_error)
    return M.EXIT_USAGE
  end
  if ok then return result end
  if getmetatable(result) == UsageError then
    io.stderr:write("toolgate ", cmd, ": ", result.msg, "; see 'toolgate ", cmd, " --help'\n")
    return M.EXIT_USAGE
  end
  error(result, 0)
end

return M
