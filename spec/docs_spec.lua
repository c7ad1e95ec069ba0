-- docs/policies.md: the policy authoring guide's examples run as written.
-- Every complete policy in it loads; the worked examples give the decisions
-- and warnings the guide says they give.
local toolgate = require "toolgate"
local policy = require "toolgate.policy"
local h = require "helpers"

local guide = assert(h.read_file(h.root .. "/docs/policies.md"))

-- The fenced blocks of one language, in order.
local function blocks(lang)
  local out = {}
  for body in guide:gmatch("\n```" .. lang .. "\n(.-)\n```") do out[#out + 1] = body end
  return out
end

-- The lua block that starts "-- NAME:" (a whole policy file).
local function policy_block(name)
  for _, b in ipairs(blocks("lua")) do
    if b:find("^%-%- " .. name:gsub("%p", "%%%0") .. ":") then return b end
  end
end

local function write_policy(text)
  local path = h.tmpname(".lua")
  h.write_file(path, text)
  return path
end

describe("docs/policies.md", function()
  it("has policies that load, each with the name its file comment gives", function()
    local n = 0
    for _, b in ipairs(blocks("lua")) do
      local file = b:match("^%-%- [%w/]-([%w_-]+)%.lua")
      if file and b:find("\nreturn {", 1, true) then
        n = n + 1
        local path = write_policy(b)
        local p, err = policy.load(path)
        os.remove(path)
        assert.is_table(p, file .. ": " .. tostring(err))
        assert.equal(file, p.name)
      end
    end
    assert.is_true(n >= 3, "complete policies found: " .. n)
  end)

  it("gives the project gateway's decisions as its table says", function()
    local path = write_policy(assert(policy_block("project.lua")))
    local e = assert(toolgate.new({
      policy = path,
      registry = { "filesystem=" .. h.root .. "/examples/registries/mcp-filesystem.json" },
    }))
    local section = assert(guide:match("### A project gateway(.-)\n###"))
    local calls = {}
    for line in assert(section:match("\n```json\n(.-)\n```")):gmatch("[^\n]+") do calls[#calls + 1] = line end
    local rows = 0
    for i, verdict, stage, code in section:gmatch("\n| (%d) | (%a+) | ([%w_]+) |%s*([%w_]*)%s*|") do
      rows = rows + 1
      local d = e:check(calls[tonumber(i)])
      assert.equal(verdict, d.verdict, "line " .. i)
      assert.equal(stage, d.stage, "line " .. i)
      if code == "" then assert.is_nil(d.code, "line " .. i) else assert.equal(code, d.code, "line " .. i) end
      if verdict == "defer" then assert.is_true(d.requires_approval) end
    end
    assert.equal(5, rows)
    assert.equal(5, #calls)
    -- "without fs:write, line 3 becomes a reject"
    local d = e:check(calls[3], { scopes = { "fs:read" } })
    assert.equal("reject", d.verdict)
    assert.equal("H4", d.code)
    os.remove(path)
  end)

  it("gives the mcp policy's mapping of annotations as policies/mcp.lua does it", function()
    local p = assert(policy.load(h.root .. "/policies/mcp.lua"))
    local section = assert(guide:match("%*%*MCP annotations%.%*%*(.-)\n\n[^|]"))
    local rows = 0
    for ann, risk, effects, scopes in section:gmatch("\n| ([^|]-) | `(%a+)` | ([^|]-) | ([^|]-) |") do
      rows = rows + 1
      local annotations = {}
      for k, v in (ann:match("^`([^`]*)`") or ""):gmatch("(%a+): (%a+)") do annotations[k] = v == "true" end
      local c = p.contract({ server = "fs", name = "t", format = "mcp", annotations = annotations, contract = {} })
      local function list(cell)
        local out = {}
        for x in cell:gmatch("`([^`]+)`") do out[#out + 1] = (x:gsub("<server>", "fs")) end
        return out
      end
      assert.equal(risk, c.risk, ann)
      assert.same(list(effects), c.effects, ann)
      assert.same(list(scopes), c.scopes, ann)
    end
    assert.equal(6, rows)
  end)

  it("warns about min_samples = 5 with arg_reject = 0.20, not about the batches policy", function()
    local text = assert(policy_block("batches.lua"))
    local path = write_policy(text)
    local p = assert(policy.load(path))
    assert.same({}, p.warnings)
    h.write_file(path, (text:gsub("min_samples = 10", "min_samples = 5")))
    p = assert(policy.load(path))
    assert.equal(1, #p.warnings)
    assert.matches("at exactly 5 samples it cannot happen", p.warnings[1], 1, true)
    os.remove(path)
  end)

  it("keeps a stage's file-level counter per engine: one across --threads, apart in two engines, reset by reload", function()
    local path = write_policy(assert(policy_block("count_calls.lua")))
    local registry = h.root .. "/examples/quickstart/openai-tools.json"
    local call = '{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}'
    local function verdicts(e, n)
      local v = {}
      for _ = 1, n do v[#v + 1] = e:check(call).verdict:sub(1, 1) end
      return table.concat(v)
    end
    local a = assert(toolgate.new({ policy = path, registry = { registry } }))
    local b = assert(toolgate.new({ policy = path, registry = { registry } }))
    assert.equal("aaarr", verdicts(a, 5))
    assert.equal("aa", verdicts(b, 2))
    assert(a:reload())
    assert.equal("aaarr", verdicts(a, 5))
    -- toolgate check on 4 threads: the one counter sees every call once
    local lines = {}
    for i = 1, 20000 do lines[i] = (call:gsub('"id":"c"', '"id":"c' .. i .. '"')) end
    local input = h.tmpname(".jsonl")
    h.write_file(input, table.concat(lines, "\n") .. "\n")
    local code, out, err = h.run(h.lua .. " " .. h.shell_quote(h.root .. "/bin/toolgate") .. " check --threads 4 --policy "
      .. h.shell_quote(path) .. " --registry " .. h.shell_quote(registry) .. " " .. h.shell_quote(input))
    os.remove(input)
    os.remove(path)
    assert.equal(0, code, err)
    local _, accepts = out:gsub('"verdict":"accept"', "")
    assert.equal(3, accepts)
    assert.matches('"message":"call 20000: only three pass"', h.lines_of(out)[20000], 1, true)
  end)

  it("shows the testing section's draft policy and its cases as the files in examples/authoring/ hold them", function()
    local section = assert(guide:match("\n## Testing your policy\n(.-)\n## "))
    local draft = assert(h.read_file(h.root .. "/examples/authoring/oncall-draft.lua"))
    local shown = assert(section:match("\n```lua\n(.-\n)```"))
    assert.equal((draft:gsub("^%-%-[^\n]*\n%-%-[^\n]*\n%-%-[^\n]*\n", "")), shown)
    local cases = assert(h.read_file(h.root .. "/examples/authoring/oncall.jsonl"))
    assert.equal(cases, assert(section:match("\n```json\n(.-\n)```")))
  end)
end)

-- GitHub's anchor of a heading: lower case, punctuation but "-" and "_"
-- dropped, spaces to "-"; the second of one name gets "-1", and so on.
local function anchors(text)
  local set, seen = {}, {}
  local fenced = false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^```") then fenced = not fenced end
    local title = not fenced and line:match("^#+%s+(.-)%s*$")
    if title then
      local a = title:lower():gsub("[^%w%s_%-]", ""):gsub("%s", "-")
      local n = seen[a]
      seen[a] = (n or -1) + 1
      set[n and (a .. "-" .. (n + 1)) or a] = true
    end
  end
  return set
end

-- The relative links of a page: { { target =, line = }, ... }, code left out.
local function links(text)
  local out, fenced, n = {}, false, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:match("^```") then fenced = not fenced end
    if not fenced then
      for target in line:gsub("`[^`]*`", ""):gmatch("%]%(([^)%s]+)%)") do
        if not target:match("^%a[%w+.-]*:") then out[#out + 1] = { target = target, line = n } end
      end
    end
  end
  return out
end

describe("the documentation's links", function()
  local pages = { "README.md" }
  local p = assert(io.popen("cd " .. h.shell_quote(h.root) .. " && ls docs/*.md */README.md */*/README.md bench/NOTES.md"))
  for name in p:lines() do pages[#pages + 1] = name end
  p:close()

  it("README.md is a door: at most 320 lines", function()
    local text = assert(h.read_file(h.root .. "/README.md"))
    local _, lines = text:gsub("\n", "")
    assert.is_true(lines <= 320, "README.md has " .. lines .. " lines")
  end)

  it("finds GitHub's anchors", function()
    local set = anchors('# A b\n## What "canonical" means here\n```\n# not a heading\n```\n## A b\n### `x`, y_z!\n')
    assert.same({ ["a-b"] = true, ["what-canonical-means-here"] = true, ["a-b-1"] = true, ["x-y_z"] = true }, set)
  end)

  for _, page in ipairs(pages) do
    it(page .. ": every relative link names a file that exists, and an anchor it has", function()
      local text = assert(h.read_file(h.root .. "/" .. page))
      local dir = page:match("^(.*)/[^/]*$")
      local bad = {}
      for _, l in ipairs(links(text)) do
        local file, anchor = l.target:match("^([^#]*)#?(.*)$")
        local path = file == "" and page or ((dir and dir .. "/" or "") .. file)
        local body = h.read_file(h.root .. "/" .. path)
        local exists = body or os.rename(h.root .. "/" .. path, h.root .. "/" .. path)
        if not exists then
          bad[#bad + 1] = page .. ":" .. l.line .. ": " .. l.target .. " (no such file)"
        elseif anchor ~= "" and path:match("%.md$") and not anchors(body)[anchor] then
          bad[#bad + 1] = page .. ":" .. l.line .. ": " .. l.target .. " (no such heading)"
        end
      end
      assert.same({}, bad)
    end)
  end
end)
