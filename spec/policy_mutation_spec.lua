-- No policy mistake raises: every field of policies/example.lua (the
-- template that shows every field), mutated one at a time, gives
-- toolgate.new's nil, message, "POLICY_INVALID" (POLICY_ORDER for a stage
-- order that cannot work) with the field named in the message; a sample of
-- the same mutations, written into the file, makes the CLI exit 2 with one
-- line on standard error.
--
-- The mutations, generated for every field path of the example's table:
--   kind     the value replaced by one of another kind (42 for a string,
--            "42" for a number, "yes" for a boolean, "x" for a table, true
--            for a function)
--   unknown  a key no section has, beside the field
--   typo     the field's own key with one letter changed: refused, naming
--            the key it most likely meant
-- and, listed below, a value out of range for every field that has a range.
-- Tables whose keys are the author's own (the context beyond the keys
-- toolgate reads, resolver names, alias tables) take unknown keys: there,
-- only kinds (and, in the context, typos of toolgate's keys) are refused.
local toolgate = require "toolgate"
local sandbox = require "toolgate.sandbox"
local h = require "helpers"

local EXAMPLE = h.root .. "/policies/example.lua"
local TEXT = assert(h.read_file(EXAMPLE))

-- The example's table, as the loader's sandbox returns it, with its
-- registry sources made absolute (a policy given as a table has no file to
-- be relative to).
local function example()
  local p = assert(sandbox.load(TEXT, "@" .. EXAMPLE))
  for i, s in ipairs(p.registry.sources) do p.registry.sources[i] = h.root .. "/policies/" .. s end
  return p
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b)
    if type(a) ~= type(b) then return type(a) < type(b) end
    return a < b
  end)
  return ks
end

-- Every field path ({ "registry", "sources", 1 }), parents before children.
local function paths(t, prefix, out)
  out = out or {}
  for _, k in ipairs(sorted_keys(t)) do
    local p = {}
    for i, x in ipairs(prefix) do p[i] = x end
    p[#p + 1] = k
    out[#out + 1] = p
    if type(t[k]) == "table" then paths(t[k], p, out) end
  end
  return out
end

-- A field's name as the loader writes it: registry.sources[1].
local function name_of(path, n)
  local s = ""
  for i = 1, n or #path do
    local k = path[i]
    if type(k) == "number" then s = s .. "[" .. k .. "]" else s = s == "" and k or s .. "." .. k end
  end
  return s
end

local function get(t, path, n)
  for i = 1, n or #path do t = t[path[i]] end
  return t
end

-- Tables whose keys are the author's own.
local function is_open(path, n)
  return (n >= 1 and (path[1] == "context" or path[1] == "resolvers"))
end

local function is_list(t)
  return type(t) == "table" and (#t > 0 or next(t) == nil)
end

local WRONG = { string = 42, number = "42", boolean = "yes", table = "x", ["function"] = true }

local function typo(key)
  local i = math.floor(#key / 2) + 1
  local c = key:sub(i, i) == "q" and "z" or "q"
  return key:sub(1, i - 1) .. c .. key:sub(i + 1)
end

-- mutations() -> list of { label, policy, field (the name the message must hold)[, hint] }
local function mutations()
  local out = {}
  for _, path in ipairs(paths(example(), {})) do
    local n = #path
    local parent_path = n - 1
    local key = path[n]
    -- kind
    local p = example()
    local value = get(p, path)
    get(p, path, parent_path)[key] = WRONG[type(value)]
    out[#out + 1] = { "kind: " .. name_of(path), p, name_of(path) }
    local parent = get(example(), path, parent_path)
    local list_parent = parent_path >= 1 and is_list(parent) and type(key) == "number"
    if not is_open(path, parent_path) or (path[1] == "context" and n == 2) then
      -- typo of the key (a list's indexes have none); then an unknown key beside it
      if type(key) == "string" then
        p = example()
        local t = get(p, path, parent_path)
        t[typo(key)], t[key] = t[key], nil
        local field = name_of(path, parent_path)
        field = field == "" and typo(key) or field .. "." .. typo(key)
        out[#out + 1] = { "typo: " .. name_of(path), p, field, string.format("did you mean %q", key) }
      end
      if not is_open(path, parent_path) then
        p = example()
        get(p, path, parent_path).unknown_setting = 1
        local field = list_parent and name_of(path, parent_path)
          or (parent_path == 0 and "unknown_setting" or name_of(path, parent_path) .. ".unknown_setting")
        out[#out + 1] = { "unknown: beside " .. name_of(path), p, field }
      end
    end
  end
  -- out of range: every field of the example that has a range
  local RANGES = {
    { { "on_error" }, "rejet", 'did you mean "reject"' }, { { "budget" }, 999 }, { { "budget" }, 1000.5 },
    { { "budget" }, 2 ^ 31 }, { { "name" }, "" }, { { "version" }, "" },
    { { "registry", "on_shadowing" }, "rejet", 'did you mean "reject"' }, { { "registry", "on_collision" }, "warn" },
    { { "registry", "on_confusable" }, "" }, { { "registry", "on_bad_name" }, "Reject" },
    { { "registry", "sources", 1 }, "" }, { { "registry", "sources", 2 }, { pth = "x.json" }, 'did you mean "path"' },
    { { "registry", "sources", 2 }, { path = "x.json", format = "openapi" }, 'did you mean "openai"' },
    { { "registry", "sources", 2 }, { server = "x" } }, { { "registry", "ignore_keywords" }, { 1 } },
    { { "registry", "annotation_formats" }, { uri = true } },
    { { "stages", 1 }, "rumg", 'did you mean "rung"' }, { { "stages", 2, "name" }, "gate" },
    { { "stages", 2, "name" }, "" }, { { "stages", 2, "code" }, "" },
    { { "gate", "risk_levels" }, {} }, { { "gate", "risk_levels", 2 }, "none" }, { { "gate", "risk_levels", 3 }, "" },
    { { "verifier", "on_mismatch" }, "accept" },
    { { "consistency", "min_samples" }, 0 }, { { "consistency", "min_samples" }, 6.5 },
    { { "consistency", "max_samples" }, 5 }, { { "consistency", "max_samples" }, 2 ^ 31 },
    { { "consistency", "arg_accept" }, 1.5 }, { { "consistency", "arg_reject" }, 0.9 },
    { { "consistency", "arg_reject" }, -0.1 }, { { "consistency", "result_accept" }, 0 / 0 },
    { { "consistency", "result_quarantine" }, 2 }, { { "consistency", "on_invalid" }, "accept" },
    { { "limits", "max_depth" }, 0 }, { { "limits", "max_depth" }, 1001 }, { { "limits", "max_depth" }, -1 },
    { { "limits", "max_input_bytes" }, 0.5 }, { { "limits", "max_input_bytes" }, 2 ^ 60 },
    { { "context", "max_risk" }, "extreme" }, { { "context", "max_risk" }, "hihg", 'did you mean "high"' },
    { { "context", "scopes" }, { "a", 7 } }, { { "context", "scopes" }, "filesystem:read" },
    { { "resolvers", "accounts" }, 7 }, { { "resolvers", "accounts", "ACME" }, { "acct_1" } },
  }
  for _, r in ipairs(RANGES) do
    local p = example()
    local path = r[1]
    get(p, path, #path - 1)[path[#path]] = r[2]
    out[#out + 1] = { "range: " .. name_of(path) .. " = " .. tostring(r[2]), p, name_of(path), r[3] }
  end
  return out
end

describe("policies/example.lua, every field mutated", function()
  it("loads as it is", function()
    local e, err = toolgate.new({ policy = example() })
    assert.is_truthy(e, err)
  end)

  it("gives nil, a message naming the field, POLICY_INVALID for every mutation, and never raises", function()
    local list = mutations()
    assert.is_true(#list > 150, "mutations: " .. #list)
    local kinds = {}
    for _, m in ipairs(list) do
      local label, p, field, hint = m[1], m[2], m[3], m[4]
      kinds[label:match("^%a+")] = (kinds[label:match("^%a+")] or 0) + 1
      local ok, e, err, code = pcall(toolgate.new, { policy = p })
      assert.is_true(ok, label .. " raised: " .. tostring(e))
      assert.is_nil(e, label .. " loaded")
      assert.equal("POLICY_INVALID", code, label .. ": " .. tostring(err))
      assert.matches("policy " .. field, err, 1, true, label .. ": " .. tostring(err))
      if hint then assert.matches(hint, err, 1, true, label .. ": " .. tostring(err)) end
      assert.is_nil(err:find("\n", 1, true), label)
    end
    assert.is_true(kinds.kind > 50 and kinds.typo > 40 and kinds.unknown > 40 and kinds.range > 40)
  end)

  it("says POLICY_ORDER for a stage order that cannot work", function()
    for _, stages in ipairs({ { "gate", "rung" }, { "verifier" }, { "consistency", "rung", "gate" } }) do
      local p = example()
      p.stages = stages
      local e, err, code = toolgate.new({ policy = p })
      assert.is_nil(e)
      assert.equal("POLICY_ORDER", code, err)
    end
  end)

  it("through the CLI: exit 2, one line on standard error, no traceback", function()
    local cases = {
      { "closed = true, ", 'closed = "no", ', "registry.closed" },
      { 'on_shadowing = "reject"', 'on_shadowing = "rejet"', "registry.on_shadowing" },
      { "assert_formats = false, ", 'assert_formats = "yes", ', "registry.assert_formats" },
      { "closed = true, ", "clossed = true, ", "registry.clossed" },
      { "max_depth = 64", "max_depht = 8", "limits.max_depht" },
      { "reads_contract = false, ", 'reads_contract = "no", ', "stages[2].reads_contract" },
      { "min_samples = 6, ", "min_samples = 0, ", "consistency.min_samples" },
      { 'on_error = "reject", ', 'on_error = "rejet", ', "on_error" },
    }
    for _, c in ipairs(cases) do
      local from = assert(TEXT:find(c[1], 1, true), c[1])
      assert.is_nil(TEXT:find(c[1], from + 1, true), "not unique: " .. c[1])
      local path = h.tmpname(".lua")
      h.write_file(path, TEXT:sub(1, from - 1) .. c[2] .. TEXT:sub(from + #c[1]))
      local code, out, err = h.toolgate("check --policy " .. path .. " " .. h.root .. "/examples/calls/mcp-calls.jsonl")
      os.remove(path)
      assert.equal(2, code, c[2] .. ": " .. err)
      assert.equal("", out)
      assert.matches("^toolgate check: POLICY_INVALID: policy " .. c[3]:gsub("%p", "%%%0") .. ": [^\n]*\n$", err)
    end
  end)
end)
