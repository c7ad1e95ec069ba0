-- toolgate env: the "from a source tree" line of README.md.  After
-- eval "$(bin/toolgate env)", a script run elsewhere, with none of the
-- specs' own LUA_PATH, LUA_CPATH or TOOLGATE_LIB, finds toolgate under
-- both interpreters.
local h = require "helpers"

-- the shell command that evals toolgate env (run under INTERP) and then
-- runs LUA_CMD from /tmp, without the environment the specs run in
local function after_env(interp, lua_cmd)
  return "env -u LUA_PATH -u LUA_CPATH -u TOOLGATE_LIB sh -c " .. h.shell_quote(
    'eval "$(' .. interp .. " " .. h.shell_quote(h.root .. "/bin/toolgate") .. ' env)" && cd /tmp && ' .. lua_cmd)
end

describe("toolgate env", function()
  for _, interp in ipairs({ h.lua, h.other_lua }) do
    it("lets lua5.4 and luajit require toolgate from anywhere (env printed under " .. interp .. ")", function()
      for _, lua in ipairs({ "lua5.4", "luajit" }) do
        local code, out, err = h.run(after_env(interp, lua .. [[ -e 'print(require("toolgate").canon("[1.0]"))']]))
        assert.equal(0, code, lua .. ": " .. err)
        assert.equal("[1]\n", out, lua)
      end
    end)
  end

  it("prints three exports a shell can eval, and nothing else", function()
    local code, out, err = h.run(h.lua .. " " .. h.shell_quote(h.root .. "/bin/toolgate") .. " env")
    assert.equal(0, code, err)
    local names = {}
    for name in out:gmatch("export (%u[%u_]*)=") do names[#names + 1] = name end
    assert.same({ "LUA_PATH", "LUA_CPATH", "TOOLGATE_LIB" }, names)
    assert.equal(3, #h.lines_of(out))
  end)

  it("refuses an argument, exit 2", function()
    local code, _, err = h.run(h.lua .. " " .. h.shell_quote(h.root .. "/bin/toolgate") .. " env now")
    assert.equal(2, code)
    assert.matches("env takes no argument", err, 1, true)
  end)
end)
