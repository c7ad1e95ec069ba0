-- RFC 8785 canonical form and XXH3-128 digests, through the public module,
-- checked against independent implementations: V8 (node + npm canonicalize)
-- and xxhsum.
local toolgate = require "toolgate"
local h = require "helpers"

local function numbers_table()
  local rows = {}
  for line in io.lines(h.root .. "/spec/data/numbers.tsv") do
    if not line:match("^#") and line:find("\t") then
      local input, want = line:match("^([^\t]+)\t(.+)$")
      rows[#rows + 1] = { input = input, want = want }
    end
  end
  return rows
end


describe("canonical form", function()
  it("matches every literal row of spec/data/numbers.tsv", function()
    local n = 0
    for _, row in ipairs(numbers_table()) do
      if not row.input:match("^0x") then
        n = n + 1
        local got = toolgate.canon(row.input) or "ERROR"
        assert.equal(row.want, got, "input " .. row.input)
      end
    end
    assert.is_true(n > 50)
  end)

  it("matches V8 on every row of spec/data/numbers.tsv (the table itself is checked)", function()
    if not h.npm_peer("canonicalize", pending) then return end
    local script = h.tmpname(".mjs")
    h.write_file(script, [[
      import fs from 'fs';
      const { default: canonicalize } = await import(process.argv[3]);
      for (const line of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
        if (!line || line.startsWith('#')) continue;
        const [input] = line.split('\t');
        let out;
        try {
          let v;
          if (input.startsWith('0x')) {
            const b = Buffer.from(input.slice(2), 'hex');
            v = b.readDoubleBE(0);
          } else {
            v = JSON.parse(input);
          }
          out = canonicalize(v);
          if (out === undefined || out === 'null' && v !== null) out = 'ERROR';
        } catch (e) { out = 'ERROR'; }
        console.log(input + '\t' + out);
      }
    ]])
    local code, out, err = h.run("node " .. script .. " " .. h.root .. "/spec/data/numbers.tsv " ..
      h.root .. "/bench/node_modules/canonicalize/lib/canonicalize.js")
    os.remove(script)
    assert.equal(0, code, err)
    local v8 = {}
    for line in out:gmatch("[^\n]+") do
      local input, got = line:match("^([^\t]+)\t(.+)$")
      v8[input] = got
    end
    for _, row in ipairs(numbers_table()) do
      assert.equal(row.want, v8[row.input], "V8 on " .. row.input)
    end
  end)

  it("sorts keys by UTF-16 code units", function()
    assert.equal('{"\\r":1,"1":2,"\u{80}":3,"\u{F6}":4,"\u{20AC}":5,"\u{1F600}":6,"\u{FB33}":7}',
      toolgate.canon('{"\\ufb33":7,"\\ud83d\\ude00":6,"\\u20ac":5,"\\u00f6":4,"\\u0080":3,"1":2,"\\r":1}'))
  end)

  it("reports each malformed class with its own code", function()
    local cases = {
      { '{"a":1,"a":2}', "DUPLICATE_KEY" }, { '"\255"', "INVALID_UTF8" },
      { '"\\ud800"', "LONE_SURROGATE" }, { "NaN", "NONFINITE_NUMBER" },
      { "[Infinity]", "NONFINITE_NUMBER" }, { "01", "LEADING_ZERO" },
      { "[1] [2]", "TRAILING_GARBAGE" }, { '"a\1"', "CONTROL_CHARACTER" },
      { '"\\q"', "INVALID_ESCAPE" }, { "1.", "INVALID_NUMBER" }, { "1e999", "NUMBER_OUT_OF_RANGE" },
      { "", "EMPTY" }, { "[", "UNEXPECTED_END" }, { "[1,]", "SYNTAX" },
    }
    for _, c in ipairs(cases) do
      local ok, msg, code, offset = toolgate.canon(c[1])
      assert.is_nil(ok, c[1])
      assert.equal(c[2], code, c[1])
      assert.is_string(msg)
      assert.is_number(offset)
    end
  end)

  it("refuses depth 100,000 and a 50 MB string without trouble", function()
    local _, _, code, offset = toolgate.canon(string.rep("[", 100000))
    assert.equal("TOO_DEEP", code)
    assert.equal(64, offset)
    local big = '"' .. string.rep("x", 50 * 1024 * 1024) .. '"'
    _, _, code = toolgate.canon(big)
    assert.equal("INPUT_TOO_LARGE", code)
    local roomy = assert(toolgate.codec({ max_input_bytes = 64 * 1024 * 1024 }))
    _, _, code = roomy:canon(big)
    assert.equal("STRING_TOO_LONG", code)
  end)

  it("agrees byte for byte with npm canonicalize on 3,000 generated documents", function()
    if not h.npm_peer("canonicalize", pending) then return end
    assert.is_true(h.have("python3"), "python3 is needed (make test installs it)")
    local corpus = h.tmpname(".jsonl")
    local code, docs, err = h.run("python3 " .. h.root .. "/bench/gen_corpus.py --seed 7 --count 3000")
    assert.equal(0, code, err)
    h.write_file(corpus, docs)
    local code2, node_out, err2 = h.run("node " .. h.root .. "/bench/peers/canon_node.js --check " .. corpus)
    assert.equal(0, code2, err2)
    local expected = {}
    for line in node_out:gmatch("([^\n]*)\n") do expected[#expected + 1] = line end
    local n, differ, first = 0, 0, nil
    for line in io.lines(corpus) do
      if line:find("%S") then
        n = n + 1
        local mine = toolgate.canon(line) or "ERROR"
        if mine ~= expected[n] then
          differ = differ + 1
          first = first or ("line " .. n .. ":\n  toolgate " .. mine .. "\n  node     " .. tostring(expected[n]))
        end
      end
    end
    os.remove(corpus)
    assert.equal(3000, n)
    assert.equal(3000, #expected)
    assert.equal(0, differ, first)
  end)

  it("hashes as xxhsum -H2 does (XXH3-128 of the canonical bytes)", function()
    assert.is_true(h.have("xxhsum"), "xxhsum is needed (make test installs the xxhash package)")
    local dir = h.tmpname(".d")
    assert(os.execute("mkdir -p " .. dir))
    local docs = { "{}", "[]", '{"b":1,"a":[1.5,"é"]}', string.rep("x", 1000), "" }
    for i = 1, 60 do docs[#docs + 1] = string.format('{"i":%d,"s":"%s"}', i, string.rep("ab", i * 7)) end
    local files = {}
    for i, d in ipairs(docs) do
      local f = dir .. "/" .. i
      h.write_file(f, d)
      files[#files + 1] = f
    end
    local code, out = h.run("xxhsum -H2 " .. table.concat(files, " "))
    assert.equal(0, code)
    local got = {}
    for hex, name in out:gmatch("(%x+)%s+(%S+)") do got[name] = hex end
    for i, d in ipairs(docs) do
      assert.equal(got[files[i]], toolgate.hash_bytes(d))
      os.remove(files[i])
    end
    os.remove(dir)
    -- and hash(text) is hash_bytes(canon(text))
    local text = ' { "b" : 1 , "a" : [ 1.50 , "\\u00e9" ] } '
    assert.equal(toolgate.hash_bytes(toolgate.canon(text)), toolgate.hash(text))
  end)
end)
