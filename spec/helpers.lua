-- spec/helpers.lua: what several specs share -- where the tree is, which
-- interpreter runs them, and a way to run a command and see everything it did.
local M = {}

local function cwd()
  local p = io.popen("pwd")
  local dir = p:read("*l")
  p:close()
  return dir
end

M.root = os.getenv("TOOLGATE_ROOT") or cwd()
M.is_luajit = rawget(_G, "jit") ~= nil
M.lua = M.is_luajit and (os.getenv("LUAJIT") or "luajit") or (os.getenv("LUA") or "lua5.4")
M.other_lua = M.is_luajit and (os.getenv("LUA") or "lua5.4") or (os.getenv("LUAJIT") or "luajit")
M.build = os.getenv("BUILD") or "build"

-- Unique to this process: LuaJIT's math.random starts from the same seed in
-- every run, so two runs at once (make test in two checkouts) drew the same names.
local tmp_counter, tmp_tag = 0, nil
function M.tmpname(suffix)
  tmp_counter = tmp_counter + 1
  if not tmp_tag then
    local f = assert(io.open("/dev/urandom", "rb"))
    tmp_tag = f:read(6):gsub(".", function(c) return string.format("%02x", c:byte()) end)
    f:close()
  end
  local base = os.getenv("TMPDIR") or "/tmp"
  return string.format("%s/toolgate-spec-%s-%d%s", base, tmp_tag, tmp_counter, suffix or "")
end

function M.write_file(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function M.shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- run(cmd, stdin) -> exit code, stdout, stderr
function M.run(cmd, stdin)
  local out, err = M.tmpname(".out"), M.tmpname(".err")
  local full = cmd
  local inp
  if stdin then
    inp = M.tmpname(".in")
    M.write_file(inp, stdin)
    full = full .. " < " .. M.shell_quote(inp)
  else
    full = full .. " < /dev/null"
  end
  full = full .. " > " .. M.shell_quote(out) .. " 2> " .. M.shell_quote(err) .. "; echo $?"
  local p = assert(io.popen(full))
  local code = tonumber(p:read("*a"):match("(%d+)%s*$"))
  p:close()
  local o, e = M.read_file(out) or "", M.read_file(err) or ""
  os.remove(out)
  os.remove(err)
  if inp then os.remove(inp) end
  return code, o, e
end

-- run_both(args) -> the stdout of `lua args` under the interpreter running
-- the specs, then under the other: the same work through both bindings.
-- Each run must exit 0 (its stderr is the failure's message).
function M.run_both(args)
  local code1, mine, err1 = M.run(M.lua .. " " .. args)
  local code2, theirs, err2 = M.run(M.other_lua .. " " .. args)
  assert(code1 == 0, M.lua .. ": " .. err1)
  assert(code2 == 0, M.other_lua .. ": " .. err2)
  return mine, theirs
end

-- The toolgate command under the interpreter running the specs.
function M.toolgate(args, stdin)
  return M.run(M.lua .. " " .. M.root .. "/bin/toolgate " .. args, stdin)
end

-- npm_peer(package, pending[, dir]) -> true when dir/node_modules (dir:
-- "bench" unless given, relative to the root) has the package.  When make
-- test could not reach the npm registry (TOOLGATE_NPM_UNAVAILABLE, set by
-- mk/run-tests.sh), the test is marked pending -- reported as skipped, with
-- the reason -- and this returns false; otherwise a missing package fails
-- the test.
function M.npm_peer(package, pending, dir)
  dir = dir or "bench"
  local f = io.open(M.root .. "/" .. dir .. "/node_modules/" .. package .. "/package.json")
  if f then
    f:close()
    if M.have("node") then return true end
  end
  local why = os.getenv("TOOLGATE_NPM_UNAVAILABLE")
  if why then
    pending("needs npm " .. package .. ", and " .. why)
    return false
  end
  error("node and " .. dir .. "/node_modules/" .. package .. " are needed (make test installs them: npm ci --prefix "
    .. dir .. ")", 2)
end

function M.have(cmd)
  local code = M.run("command -v " .. cmd)
  return code == 0
end

-- The non-blank lines of text, in order.
function M.lines_of(text)
  local out = {}
  for line in text:gmatch("([^\n]*)\n") do
    if line:find("%S") then out[#out + 1] = line end
  end
  return out
end

-- validate_bench_check(schemas, calls_file) -> one boolean per call: the
-- C validator's verdicts (build/bench/validate_bench --check: tg_parse +
-- tg_validate, closed world), built with make when it is missing.
function M.validate_bench_check(schemas, calls_file)
  local bin = M.build .. "/bench/validate_bench"
  if not bin:match("^/") then bin = M.root .. "/" .. bin end
  if M.run("test -x " .. M.shell_quote(bin)) ~= 0 then -- make test builds it; a spec run alone may not have
    local code, _, err = M.run("make -s --no-print-directory -C " .. M.shell_quote(M.root) .. " BUILD=" ..
      M.shell_quote(M.build) .. " " .. M.shell_quote(M.build .. "/bench/validate_bench"))
    assert(code == 0, "make " .. M.build .. "/bench/validate_bench failed: " .. err)
  end
  local code, out, err = M.run(M.shell_quote(bin) .. " --check --schemas " .. M.shell_quote(schemas) ..
    " --calls " .. M.shell_quote(calls_file))
  assert(code == 0, "validate_bench --check failed: " .. err)
  local verdicts = {}
  for i, line in ipairs(M.lines_of(out)) do verdicts[i] = line == '{"valid":true}' end
  return verdicts
end

return M
