-- toolgate.mcp.headers: the HTTP headers of an MCP request against its body
-- (MCP 2026-07-28, Streamable HTTP "Standard Headers"), every rule and the
-- Base64 sentinel's edges, under both interpreters.  spec/nginx_spec.lua
-- runs it inside nginx in front of a real server.
local headers = require "toolgate.mcp.headers"

local V = "2026-07-28"

-- a modern tools/call of get-info; over lets a test change any part
local function call(over)
  local m = { request = true, method = "tools/call", protocol_version = V, name = "get-info", params = {},
    arguments = function() return {} end }
  for k, v in pairs(over or {}) do m[k] = v end
  return m
end

-- the same without the body's version claim (legacy)
local function legacy_call(over)
  local m = call(over)
  m.protocol_version = nil
  return m
end

local function hdrs(over)
  local t = { ["mcp-protocol-version"] = V, ["mcp-method"] = "tools/call", ["mcp-name"] = "get-info" }
  for k, v in pairs(over or {}) do t[k] = v ~= false and v or nil end
  return t
end

describe("toolgate.mcp.headers", function()
  describe("decode", function()
    it("decodes the spec's examples and passes plain values", function()
      assert.equals("Hello, 世界", headers.decode("=?base64?SGVsbG8sIOS4lueVjA==?="))
      assert.equals(" padded ", headers.decode("=?base64?IHBhZGRlZCA=?="))
      assert.equals("=?base64?literal?=", headers.decode("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="))
      assert.equals("get-info", headers.decode("=?base64?Z2V0LWluZm8=?="))
      assert.equals("get-info", headers.decode("get-info"))
      assert.equals("a\tb c", headers.decode("a\tb c"))
      assert.equals("", headers.decode("=?base64??="))
    end)

    it("reads markers in lower case only, and a value that only looks like one as itself", function()
      assert.equals("=?BASE64?Z2V0?=", headers.decode("=?BASE64?Z2V0?="))
      assert.equals("=?base64?", headers.decode("=?base64?"))
      assert.equals("=?base64?=", headers.decode("=?base64?="))
    end)

    it("refuses Base64 that is not canonical, and bytes that are not UTF-8", function()
      for _, bad in ipairs({ "=?base64?Z2V0LWluZm8?=", "=?base64?Z2V0LWluZm9=?=", "=?base64?Z2V0LWluZm9===?=",
        "=?base64?Z2V0LWluZm9!?=", "=?base64?Z2V0 LWluZm8=?=", "=?base64?Z2V0LWluZm9=A=?=",
        "=?base64?Z2V0LWluZm9?=", "=?base64?Z2V0LWluZm9=?=",
        "=?base64?Zh==?=", "=?base64?Zm9=?=",  -- unused bits set: not canonical ("f", "fo" are Zg==, Zm8=)
        "=?base64?gA==?=", "=?base64?wK8=?=", "=?base64?7aCA?=" }) do -- 0x80; overlong "/"; a surrogate
        local v, why = headers.decode(bad)
        assert.is_nil(v, bad)
        assert.is_string(why)
      end
      assert.equals("f", headers.decode("=?base64?Zg==?="))
      assert.equals("fo", headers.decode("=?base64?Zm8=?="))
    end)

    it("refuses a plain value with characters a header cannot carry plainly", function()
      for _, bad in ipairs({ "caf\195\169", "a\1b", "a\127", "line\nbreak" }) do
        assert.is_nil((headers.decode(bad)), bad)
      end
    end)
  end)

  describe("param_headers", function()
    it("finds the declarations reached through properties, with their paths and types", function()
      local list = assert(headers.param_headers({ type = "object", properties = {
        region = { type = "string", ["x-mcp-header"] = "Region" },
        opts = { type = "object", properties = { level = { type = "integer", ["x-mcp-header"] = "Level" },
          dry = { type = "boolean", ["x-mcp-header"] = "Dry-Run" } } },
        plain = { type = "string" },
      } }))
      assert.same({
        { header = "Dry-Run", lower = "mcp-param-dry-run", path = { "opts", "dry" }, type = "boolean" },
        { header = "Level", lower = "mcp-param-level", path = { "opts", "level" }, type = "integer" },
        { header = "Region", lower = "mcp-param-region", path = { "region" }, type = "string" },
      }, list)
      assert.same({}, headers.param_headers({ type = "object", properties = { a = { type = "string" } } }))
      -- data that holds the key is not a declaration
      assert.same({}, headers.param_headers({ type = "object", properties = { a = { type = "object",
        default = { ["x-mcp-header"] = "X" }, enum = { { ["x-mcp-header"] = "Y" } } } } }))
    end)

    it("refuses a declaration on a number, off the properties path, not a token, or repeated", function()
      local cases = {
        { { type = "object", properties = { n = { type = "number", ["x-mcp-header"] = "N" } } }, "not integer" },
        { { type = "object", properties = { l = { type = "array", items = { type = "string", ["x-mcp-header"] = "I" } } } },
          "properties alone" },
        { { type = "object", properties = { u = { anyOf = { { type = "string", ["x-mcp-header"] = "U" } } } } },
          "properties alone" },
        { { type = "object", ["$defs"] = { d = { type = "string", ["x-mcp-header"] = "D" } } }, "properties alone" },
        { { type = "string", ["x-mcp-header"] = "Root" }, "properties alone" },
        { { type = "object", properties = { s = { type = "string", ["x-mcp-header"] = "a b" } } }, "token" },
        { { type = "object", properties = { s = { type = "string", ["x-mcp-header"] = "" } } }, "token" },
        { { type = "object", properties = { s = { type = "string", ["x-mcp-header"] = 7 } } }, "token" },
        { { type = "object", properties = { a = { type = "string", ["x-mcp-header"] = "Same" },
          b = { type = "string", ["x-mcp-header"] = "SAME" } } }, "repeats" },
      }
      for i, c in ipairs(cases) do
        local list, why = headers.param_headers(c[1])
        assert.is_nil(list, "case " .. i)
        assert.matches(c[2], why, 1, true)
      end
    end)
  end)

  describe("check", function()
    it("passes a modern request whose headers agree, encoded or not", function()
      assert.is_nil(headers.check(hdrs(), call()))
      assert.is_nil(headers.check(hdrs({ ["mcp-name"] = "=?base64?Z2V0LWluZm8=?=" }), call()))
      assert.is_nil(headers.check(hdrs({ ["mcp-method"] = "server/discover", ["mcp-name"] = false }),
        call({ method = "server/discover", name = nil })))
      assert.is_nil(headers.check(hdrs({ ["mcp-method"] = "resources/read", ["mcp-name"] = "file:///a" }),
        call({ method = "resources/read", name = "file:///a" })))
      assert.is_nil(headers.check(hdrs({ ["mcp-method"] = "tasks/get", ["mcp-name"] = "t1" }),
        call({ method = "tasks/get", name = "t1" })))
    end)

    it("refuses a modern request without a required header", function()
      assert.matches("MCP%-Protocol%-Version header is absent", headers.check(hdrs({ ["mcp-protocol-version"] = false }), call()))
      assert.matches("Mcp%-Method header is absent", headers.check(hdrs({ ["mcp-method"] = false }), call()))
      assert.matches("Mcp%-Name header is absent", headers.check(hdrs({ ["mcp-name"] = false }), call()))
      assert.matches("Mcp%-Name header is absent", headers.check(hdrs({ ["mcp-method"] = "tasks/get", ["mcp-name"] = false }),
        call({ method = "tasks/get", name = "t1" })))
    end)

    it("refuses a value that differs from the body once decoded, or is not valid", function()
      assert.matches('names "stats" but the body carries params.name="get%-info"',
        headers.check(hdrs({ ["mcp-name"] = "stats" }), call()))
      assert.matches("Mcp%-Name", headers.check(hdrs({ ["mcp-name"] = "=?base64?c3RhdHM=?=" }), call()))
      assert.matches("Mcp%-Method header names", headers.check(hdrs({ ["mcp-method"] = "tools/list" }), call()))
      assert.matches("not valid", headers.check(hdrs({ ["mcp-name"] = "=?base64?Z2V0LWluZm8?=" }), call()))
      assert.matches("not valid", headers.check(hdrs({ ["mcp-name"] = "get-inf\195\182" }), call()))
      assert.matches("more than one", headers.check(hdrs({ ["mcp-name"] = { "get-info", "get-info" } }), call()))
      -- a name the header must encode, sent plainly, is not that name
      assert.is_nil(headers.check(hdrs({ ["mcp-name"] = "=?base64?IHBhZGRlZCA=?=" }), call({ name = " padded " })))
      assert.matches("Mcp%-Name", headers.check(hdrs({ ["mcp-name"] = "padded" }), call({ name = " padded " })))
      -- an Mcp-Name on a method that has none
      assert.matches("has no name", headers.check(hdrs({ ["mcp-method"] = "tools/list" }),
        call({ method = "tools/list", name = nil })))
    end)

    it("refuses a version header and a body claim that disagree, either way", function()
      assert.matches('names "2025%-11%-25" but the body claims "2026%-07%-28"',
        headers.check(hdrs({ ["mcp-protocol-version"] = "2025-11-25" }), call()))
      assert.matches("no params._meta protocol version",
        headers.check(hdrs(), legacy_call()))
      assert.matches("the body claims", headers.check(hdrs({ ["mcp-protocol-version"] = "2099-01-01" }), call()))
      -- an unsupported modern version that agrees is no mismatch (the gateway answers -32022 for it)
      assert.is_nil(headers.check(hdrs({ ["mcp-protocol-version"] = "2099-01-01" }), call({ protocol_version = "2099-01-01" })))
    end)

    it("lets a legacy request go without headers, but any it carries must agree", function()
      local legacy = legacy_call()
      assert.is_nil(headers.check({}, legacy))
      assert.is_nil(headers.check({ ["mcp-protocol-version"] = "2025-11-25" }, legacy))
      assert.is_nil(headers.check(hdrs({ ["mcp-protocol-version"] = "2025-06-18" }), legacy))
      assert.matches("Mcp%-Name header names", headers.check({ ["mcp-protocol-version"] = "2025-11-25",
        ["mcp-name"] = "stats" }, legacy))
      assert.matches("Mcp%-Method header names", headers.check({ ["mcp-method"] = "tools/list" }, legacy))
      -- an initialize with a modern version header
      assert.matches("no params._meta", headers.check({ ["mcp-protocol-version"] = V },
        { request = true, method = "initialize" }))
    end)

    it("lets a notification go without headers; one it carries must agree", function()
      local n = { method = "notifications/cancelled", protocol_version = V }
      assert.is_nil(headers.check({}, n))
      assert.is_nil(headers.check({ ["mcp-protocol-version"] = V, ["mcp-method"] = "notifications/cancelled" }, n))
      assert.matches("Mcp%-Method", headers.check({ ["mcp-method"] = "tools/call" }, n))
      assert.is_nil(headers.check({ ["mcp-protocol-version"] = V }, { method = "notifications/initialized" }))
    end)

    it("refuses standard headers on a batch, and a modern version for one", function()
      assert.matches("without batches", headers.check({ ["mcp-protocol-version"] = V }, { batch = true }))
      assert.matches("batch", headers.check({ ["mcp-method"] = "tools/call" }, { batch = true }))
      assert.is_nil(headers.check({ ["mcp-protocol-version"] = "2025-03-26" }, { batch = true }))
    end)

    it("refuses a header naming a message on a request without one (GET, DELETE)", function()
      assert.is_nil(headers.check_bodyless({ ["mcp-protocol-version"] = "2025-06-18", ["mcp-session-id"] = "s" }))
      assert.matches("mcp%-method", headers.check_bodyless({ ["mcp-method"] = "tools/call" }))
      assert.matches("mcp%-name", headers.check_bodyless({ ["mcp-name"] = "delete_all" }))
      assert.matches("mcp%-param%-x", headers.check_bodyless({ ["mcp-param-x"] = "1" }))
    end)

    describe("Mcp-Param-*", function()
      local declared = assert(headers.param_headers({ type = "object", properties = {
        region = { type = "string", ["x-mcp-header"] = "Region" },
        opts = { type = "object", properties = { level = { type = "integer", ["x-mcp-header"] = "Level" },
          dry = { type = "boolean", ["x-mcp-header"] = "Dry" } } },
      } }))
      local function pcall_(args, extra)
        return headers.check(hdrs(extra), call({ params = declared, arguments = function() return args end }))
      end

      it("passes headers that say the arguments: strings decoded, integers as numbers, booleans", function()
        assert.is_nil(pcall_({ region = "eu-west", opts = { level = 42, dry = true } },
          { ["mcp-param-region"] = "eu-west", ["mcp-param-level"] = "42.0", ["mcp-param-dry"] = "true" }))
        assert.is_nil(pcall_({ region = "Zürich" }, { ["mcp-param-region"] = "=?base64?WsO8cmljaA==?=" }))
        assert.is_nil(pcall_({}, {}))
      end)

      it("refuses a value without its header, a header without its value, or one that differs", function()
        assert.matches("arguments.region=\"eu\" but the Mcp%-Param%-Region header is absent", pcall_({ region = "eu" }, {}))
        assert.matches("Mcp%-Param%-Level header is absent", pcall_({ opts = { level = 1 } }, {}))
        assert.matches("carries no arguments.region", pcall_({}, { ["mcp-param-region"] = "eu" }))
        assert.matches("Mcp%-Param%-Region header names", pcall_({ region = "eu" }, { ["mcp-param-region"] = "us" }))
        assert.matches("Mcp%-Param%-Level", pcall_({ opts = { level = 42 } }, { ["mcp-param-level"] = "0x2A" }))
        assert.matches("Mcp%-Param%-Level", pcall_({ opts = { level = 42 } }, { ["mcp-param-level"] = "43" }))
        assert.matches("Mcp%-Param%-Dry", pcall_({ opts = { dry = false } }, { ["mcp-param-dry"] = "False" }))
        assert.matches("not valid", pcall_({ region = "Zürich" }, { ["mcp-param-region"] = "Zürich" }))
        assert.matches("does not declare", pcall_({}, { ["mcp-param-other"] = "x" }))
      end)

      it("refuses any Mcp-Param header where nothing declares one, and calls to a tool with an invalid declaration", function()
        assert.matches("does not declare", headers.check(hdrs({ ["mcp-param-region"] = "eu" }), call()))
        assert.matches("does not declare", headers.check({ ["mcp-param-region"] = "eu" },
          { request = true, method = "tools/list" }))
        assert.matches("not integer", headers.check(hdrs(), call({ params = false,
          params_error = "x-mcp-header at n is on a property that is not integer, string or boolean" })))
      end)
    end)
  end)
end)
