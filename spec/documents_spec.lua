-- toolgate.documents: input that is not JSON Lines (a response saved with
-- indentation, documents one after another), as a user of toolgate check
-- has it.
local h = require "helpers"

describe("toolgate check, given a response saved as an SDK or jq prints it", function()
  local tools = h.root .. "/examples/quickstart/openai-tools.json"
  local saved = h.root .. "/examples/quickstart/chat_response.json"
  local function check(args, stdin)
    return h.toolgate("check --policy rung --registry " .. tools .. " " .. args, stdin)
  end

  it("decides a pretty-printed chat.completion as one document, as its one-line form", function()
    local code, out, err = check(saved)
    assert.equal(0, code, err)
    local _, one_line = h.toolgate("canon " .. saved)
    local code2, expected = check("", one_line)
    assert.equal(0, code2)
    assert.equal(expected, out)
    local lines = h.lines_of(out)
    assert.equal(2, #lines)
    assert.matches('"format":"openai-chat","id":"call_a5","index":0,"line":1,', lines[1], 1, true)
    assert.matches('"id":"call_a6","index":1,"keyword":"closed","line":1,', lines[2], 1, true)
    assert.equal("", err)
  end)

  it("never decides a fragment of a document as a call: documents one after another, each on its line", function()
    local text = h.read_file(saved)
    local fragment = '{"id": "call_x", "type": "function", "function": {"name": "get_weather", ' ..
      '"arguments": "{\\"city\\":\\"Oslo\\"}"}}'
    -- jq without -c: several documents, the last a bare tool call on one line
    local code, out, err = check("", text .. "\n" .. text .. fragment .. "\n")
    assert.equal(0, code, err)
    local lines = h.lines_of(out)
    assert.equal(5, #lines)
    for i, l in ipairs(lines) do
      assert.matches('"line":' .. ({ 1, 1, 56, 56, 110 })[i] .. ',', l, 1, true)
      assert.not_matches('"code":"H1"', l, 1, true)
      assert.not_matches('"stage":"decode"', l, 1, true)
    end
    assert.matches('"format":"openai","id":"call_x"', lines[5], 1, true)
  end)

  it("refuses a document that is not JSON, and says on stderr that nothing after it was read", function()
    local text = h.read_file(saved)
    local code, out, err = check("--fail-on reject", text .. "{\n  \"id\": 'x'\n}\n" .. text)
    assert.equal(1, code)
    local lines = h.lines_of(out)
    assert.equal(3, #lines)
    assert.matches('"code":"SYNTAX","line":55,', lines[3], 1, true)
    assert.matches("<stdin>:55: the document there was refused, and the input after it was not read", err, 1, true)
  end)

  it("refuses a document larger than max_input_bytes, naming the limit, and reads nothing after it", function()
    local policy = h.tmpname(".lua")
    h.write_file(policy, 'return { name = "small", version = "1", stages = { "rung" }, '
      .. 'limits = { max_input_bytes = 3000 } }')
    local text = h.read_file(saved)
    local big = text:gsub('"gpt%-4o%-2024%-08%-06"', '"' .. ("g"):rep(4000) .. '"')
    local code, out, err = h.toolgate("check --policy " .. policy .. " --registry " .. tools, text .. big .. text)
    os.remove(policy)
    assert.equal(0, code, err)
    local lines = h.lines_of(out)
    assert.equal(3, #lines)
    assert.matches('"code":"INPUT_TOO_LARGE","line":55,"message":"the JSON document that starts on line 55 is larger '
      .. 'than max_input_bytes (3000 bytes); the input after it was not read"', lines[3], 1, true)
  end)

  it("decides a document longer than a piece of input, then the many short ones after it, each on its line", function()
    local text = h.read_file(saved)
    -- the message's text: 200 KB over 2,000 lines of the string's own escapes, one line
    local long = text:gsub('"content": null', '"content": "' .. ("weather report \\n"):rep(12000) .. '"')
    local short = '{\n  "id": "call_s",\n  "type": "function",\n  "function": {\n    "name": "get_weather",\n'
      .. '    "arguments": "{\\"city\\":\\"Oslo\\"}"\n  }\n}\n'
    local code, out, err = check("", long .. short:rep(600))
    assert.equal(0, code, err)
    local lines = h.lines_of(out)
    assert.equal(602, #lines)
    assert.matches('"id":"call_a6","index":1,"keyword":"closed","line":1,', lines[2], 1, true)
    assert.matches('"format":"openai","id":"call_s","index":0,"line":55,', lines[3], 1, true)
    assert.matches('"id":"call_s","index":0,"line":' .. (55 + 599 * 8) .. ',', lines[602], 1, true)
    assert.matches('"verdict":"accept"', lines[602], 1, true)
  end)

  it("explains each call of a pretty-printed document, as it explains a line", function()
    local code, out, err = check("--explain " .. saved)
    assert.equal(0, code, err)
    local lines = h.lines_of(out)
    assert.equal(2, #lines)
    assert.matches('"explain":', lines[1], 1, true)
    assert.matches('"line":1,', lines[2], 1, true)
  end)

  it("still reads JSON Lines a line at a time, a bad line refused and the next decided", function()
    local line = h.read_file(h.root .. "/examples/quickstart/openai-calls.jsonl"):match("^[^\n]*\n")
    local code, out = check("", line .. '{"id":"call_9",\n' .. line)
    assert.equal(0, code)
    local lines = h.lines_of(out)
    assert.equal(3, #lines)
    assert.matches('"line":2,', lines[2], 1, true)
    assert.matches('"verdict":"accept"', lines[3], 1, true)
  end)
end)

describe("a core reader, read from the host (both bindings)", function()
  local core = require "toolgate.core"

  it("gives the complete lines it holds, at most max bytes, and keeps them until taken", function()
    local file = h.tmpname(".txt")
    h.write_file(file, "one\ntwo\nthree")
    local e = assert(core.new_engine())
    local r = assert(e:reader(file))
    assert.equal("one\ntwo\n", r:lines(1))
    assert.equal("one\nt", r:lines(1, 5))
    r:take(4)
    assert.equal("two\n", r:lines(1))
    r:take(100) -- no further than the lines held
    assert.equal("three\n", r:lines(1)) -- the last line, given its newline at the end
    r:take(6)
    assert.equal("", r:lines(1))
    assert.has_error(function() r:lines(-1) end)
    assert.has_error(function() r:take(-1) end)
    r:close()
    assert.has_error(function() r:lines(1) end)
    os.remove(file)
    local missing, message, code = e:reader("/nonexistent/calls.jsonl")
    assert.is_nil(missing)
    assert.equal("IO_ERROR", code)
    assert.matches("cannot read /nonexistent/calls.jsonl", message, 1, true)
  end)
end)
