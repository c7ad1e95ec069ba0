-- The rockspec must list every Lua module and every core source file, so a
-- LuaRocks install is never missing a piece the tree has.
local h = require "helpers"

local function list(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

describe("toolgate-scm-1.rockspec", function()
  local text = assert(h.read_file(h.root .. "/toolgate-scm-1.rockspec"))

  it("lists every Lua module under lua/", function()
    local files = list("cd " .. h.root .. " && find lua -name '*.lua' | sort")
    assert.is_true(#files > 3)
    for _, f in ipairs(files) do
      local mod = f:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/", ".")
      assert.truthy(text:find('["' .. mod .. '"] = "' .. f .. '"', 1, true), "rockspec misses " .. f)
    end
  end)

  it("installs every shipped policy beside the modules, where toolgate.policy finds it by name", function()
    local files = list("cd " .. h.root .. " && ls policies/*.lua")
    assert.is_true(#files >= 5)
    for _, f in ipairs(files) do
      local mod = "toolgate.policies." .. f:match("^policies/(.*)%.lua$")
      assert.truthy(text:find('["' .. mod .. '"] = "' .. f .. '"', 1, true), "rockspec misses " .. f)
    end
  end)

  it("compiles every core C file into the Lua 5.4 module", function()
    local files = list("cd " .. h.root .. " && ls core/*.c")
    assert.is_true(#files > 3)
    for _, f in ipairs(files) do
      assert.truthy(text:find('"' .. f .. '"', 1, true), "rockspec misses " .. f)
    end
  end)
end)
