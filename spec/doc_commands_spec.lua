-- The commands README.md, docs/*.md and nginx/README.md show, run as
-- printed.
--
-- The convention: a fenced block right after a line `<!-- doc-test -->` is
-- an example to run.  In it, a line starting "$ " is a command (a line
-- ending in "\" continues on the next); the lines after it, up to the next
-- command or the end of the block, are what it prints, standard output and
-- standard error together (2>&1).  Each command runs from the repository
-- root with bin/toolgate under the interpreter running the specs.  Before
-- the comparison, 32-hex-digit digests and the hash in a policy_version
-- ("rung@1+6ff6890d9860") are masked in both, so an edit to a policy or a
-- registry does not break the example, and so are an --explain trace's
-- CPU times and instruction counts; anything else must match.
local h = require "helpers"

-- Every page; the ones named hold at least that many marked commands, so a
-- page that lost its markers fails rather than passing with nothing run.
local AT_LEAST = { ["README.md"] = 5, ["docs/policies.md"] = 10, ["docs/cli.md"] = 2 }
local DOCS = { "README.md", "nginx/README.md" }
do
  local p = assert(io.popen("cd " .. h.shell_quote(h.root) .. " && ls docs/*.md"))
  for name in p:lines() do DOCS[#DOCS + 1] = name end
  p:close()
end

-- examples(text) -> { { command =, expected = }, ... } of every marked block
local function examples(text)
  local out = {}
  for body in text:gmatch("\n<!%-%- doc%-test %-%->\n```%a*\n(.-)\n?```") do
    local current
    local lines = {}
    for line in (body .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    local i = 1
    while i <= #lines do
      local line = lines[i]
      if line:sub(1, 2) == "$ " then
        local cmd = line:sub(3)
        while cmd:sub(-1) == "\\" and i < #lines do
          i = i + 1
          cmd = cmd:sub(1, -2) .. " " .. lines[i]:gsub("^%s+", "")
        end
        current = { command = cmd, expected = {} }
        out[#out + 1] = current
      else
        assert(current, "a doc-test block must start with a command: " .. line)
        current.expected[#current.expected + 1] = line
      end
      i = i + 1
    end
  end
  return out
end

local function mask(s)
  return (s:gsub("%x+", function(x) return #x == 32 and "<digest>" or x end)
    :gsub("(@[%w.-]+%+)%x%x%x%x%x%x%x%x%x%x%x%x", "%1<hash>")
    -- an --explain trace's times, and its instruction counts (the two
    -- interpreters' bytecodes differ)
    :gsub('"cpu_us":[%d.]+', '"cpu_us":<us>'):gsub("%([%d.]+ us%)", "(<us> us)")
    :gsub('"instructions":%d+', '"instructions":<n>'):gsub("%d+ of (%d+) instructions", "<n> of %1 instructions"))
end

describe("the documentation's examples", function()
  it("reads every page of docs/", function()
    assert.is_true(#DOCS >= 14, #DOCS .. " pages")
  end)

  for _, name in ipairs(DOCS) do
    local list = examples(assert(h.read_file(h.root .. "/" .. name)))

    if AT_LEAST[name] then
      it(name .. " marks its runnable examples", function()
        assert.is_true(#list >= AT_LEAST[name], name .. ": " .. #list .. " commands marked <!-- doc-test -->")
      end)
    end

    for k, ex in ipairs(list) do
      it(name .. " #" .. k .. ": " .. ex.command:sub(1, 70), function()
        local cmd = ex.command:gsub("%f[%w/]bin/toolgate", h.lua .. " bin/toolgate")
        local _, out = h.run("cd " .. h.shell_quote(h.root) .. " && { { " .. cmd .. "; } 2>&1; }")
        local want = table.concat(ex.expected, "\n")
        assert.equal(mask(want), mask((out:gsub("\n$", ""))))
      end)
    end
  end
end)
