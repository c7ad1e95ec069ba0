-- toolgate.mcp.http_client, the HTTP/1.1 client of `toolgate registry
-- record --url`: URLs, and answers read from given bytes (each also fed
-- one byte at a time): Content-Length, chunked and read-to-close bodies,
-- event streams; and hostile answers, every one an error, never a short or
-- unbounded body.  The socket path runs against real servers in
-- spec/registry_record_spec.lua.
local http = require "toolgate.mcp.http_client"

-- a source giving the pieces, then the end
local function source(pieces)
  local i = 0
  return function()
    i = i + 1
    return pieces[i]
  end
end

local function bytes_of(text)
  local out = {}
  for i = 1, #text do out[i] = text:sub(i, i) end
  return out
end

-- the body of answer text (whole, then byte by byte: both must agree) | nil, message
local function body(text, opts)
  local results = {}
  for _, pieces in ipairs({ { text }, bytes_of(text) }) do
    local r = http.reader(source(pieces), opts)
    local ok, err = r:head()
    local b
    if ok then b, err = r:read_all() end
    results[#results + 1] = { b, err, ok and r.status }
  end
  assert.same(results[1], results[2])
  return results[1][1], results[1][2], results[1][3]
end

-- the data of every event of a stream's answer, given in pieces
local function events(pieces)
  local r = http.reader(source(pieces))
  assert(r:head())
  local got = {}
  local ok, err = http.events(r, function(data, name)
    got[#got + 1] = name .. "=" .. data
    return data == "stop"
  end)
  return got, ok, err
end

describe("http_client", function()
  it("parses http:// URLs, and refuses https://, credentials and other schemes", function()
    assert.same({ host = "127.0.0.1", port = 8080, path = "/mcp?x=1", authority = "127.0.0.1:8080" },
      http.parse_url("http://127.0.0.1:8080/mcp?x=1"))
    assert.same({ host = "::1", port = 80, path = "/", authority = "[::1]" }, http.parse_url("http://[::1]"))
    assert.same({ host = "localhost", port = 3000, path = "/", authority = "localhost:3000" },
      http.parse_url("HTTP://localhost:3000"))
    local _, err = http.parse_url("https://example.com/mcp")
    assert.matches("https:// is not supported", err, 1, true)
    _, err = http.parse_url("http://user:secret@127.0.0.1/mcp")
    assert.matches("no credentials in the URL", err, 1, true)
    assert.is_nil(err:find("secret", 1, true))
    assert.is_nil(http.parse_url("ftp://127.0.0.1/"))
    assert.is_nil(http.parse_url("http://127.0.0.1:99999/"))
    assert.is_nil(http.parse_url("http:///mcp"))
  end)

  it("writes a POST with its length, and refuses a header value with a line break, naming only the header", function()
    local u = assert(http.parse_url("http://127.0.0.1:9/mcp"))
    assert.equal("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\nConnection: close\r\n"
      .. "Accept: application/json\r\n\r\n{}", http.request_text(u, { { "Accept", "application/json" } }, "{}"))
    local text, err = http.request_text(u, { { "Authorization", "Bearer s3cret\r\nX-Evil: 1" } }, "{}")
    assert.is_nil(text)
    assert.matches("Authorization", err, 1, true)
    assert.is_nil(err:find("s3cret", 1, true))
    assert.is_nil(http.request_text(u, { { "Bad Name", "v" } }, "{}"))
    assert.equal("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
      http.request_text(u, {}, "", "DELETE"))
  end)

  it("reads Content-Length, chunked and read-to-close bodies, skipping 1xx answers", function()
    assert.same({ "hello", nil, 200 }, { body("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA") })
    assert.same({ "hello world", nil, 200 },
      { body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n006\r\n world\r\n0\r\nX-T: 1\r\n\r\n") })
    assert.same({ "to the end", nil, 200 }, { body("HTTP/1.1 200 OK\r\n\r\nto the end") })
    assert.same({ "", nil, 202 }, { body("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n") })
    assert.same({ "x", nil, 200 }, { body("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\nContent-Length: 1\n\nx") })
    local r = http.reader(source({ "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
      .. "X-A: 1\r\nx-a: 2\r\nContent-Length: 2\r\n\r\n{}" }))
    assert(r:head())
    assert.equal(404, r.status)
    assert.equal("application/json", r.headers["content-type"])
    assert.equal("1, 2", r.headers["x-a"])
  end)

  it("refuses a body longer than the limit: by its Content-Length, its chunks, or its bytes before the close", function()
    local opts = { max_body = 10 }
    local _, err = body("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n" .. ("x"):rep(11), opts)
    assert.matches("a body longer than 10 bytes", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nxxxxxx\r\n5\r\nxxxxx\r\n0\r\n\r\n", opts)
    assert.matches("a body longer than 10 bytes", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\n\r\n" .. ("x"):rep(11), opts)
    assert.matches("a body longer than 10 bytes", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n")
    assert.matches("a malformed Content-Length", err, 1, true)
  end)

  it("refuses a chunk size that overflows, a malformed one, and a chunk longer than its size", function()
    local _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\nx")
    assert.matches("a chunk size too large (24 hex digits)", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" .. ("0"):rep(2000) .. "1\r\nx\r\n0\r\n\r\n")
    assert.matches("chunk size line longer than 1024 bytes", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n")
    assert.matches("a malformed chunk size", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n")
    assert.matches("a chunk longer than its size", err, 1, true)
    -- leading zeros are not digits that count
    assert.same({ "x", nil, 200 },
      { body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n000000000000000000001\r\nx\r\n0\r\n\r\n") })
  end)

  it("refuses an answer with a missing end: in its head, its Content-Length, a chunk, or before the last chunk", function()
    local _, err = body("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n")
    assert.matches("the answer ended inside its head", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel")
    assert.matches("the answer ended before its Content-Length", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
    assert.matches("the answer ended inside a chunk", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
    assert.matches("the answer ended inside its chunk size line", err, 1, true)
    _, err = body("")
    assert.matches("the answer ended inside its head", err, 1, true)
  end)

  it("refuses a head that is not HTTP/1.1, too long, or ambiguous about its body's length", function()
    local _, err = body("SSH-2.0-OpenSSH\r\n\r\n")
    assert.matches("not an HTTP/1.1 answer", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nX: " .. ("y"):rep(70000) .. "\r\n\r\n")
    assert.matches("head longer than 65536 bytes", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\n" .. ("X: y\r\n"):rep(300) .. "\r\n")
    assert.matches("more than 200 header fields", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n")
    assert.matches("both Transfer-Encoding and Content-Length", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
    assert.matches("two different Content-Length fields", err, 1, true)
    _, err = body("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
    assert.matches("an unsupported Transfer-Encoding", err, 1, true)
    _, err = body(("HTTP/1.1 100 Continue\r\n\r\n"):rep(12) .. "HTTP/1.1 200 OK\r\n\r\n")
    assert.matches("more than 10 interim answers", err, 1, true)
  end)

  it("reads an event stream: CRLF, LF and CR line ends (a CRLF split across reads), a BOM, comments, data lines", function()
    local head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    local got, ok = events({ head, "\239\187\191: keepalive\r\n\r\nevent: message\r\ndata: a\r", "\ndata: b\r\n\r",
      "\nid: 1\rdata: c\r\rdata:stop\n\ndata: after\n\n" })
    assert.is_true(ok)
    assert.same({ "message=a\nb", "message=c", "message=stop" }, got)
  end)

  it("says when an event stream ends before the answer, dropping an event without its blank line", function()
    local head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    local got, ok, err = events({ head, "9\r\ndata: a\n\n\r\n", "a\r\ndata: stop\r\n0\r\n\r\n" })
    assert.is_nil(ok)
    assert.same({ "message=a" }, got)
    assert.matches("the event stream ended before the answer", err, 1, true)
    ok, err = select(2, events({ head, "9\r\ndata: a\n\n\r\n" }))
    assert.is_nil(ok)
    assert.matches("the answer ended inside its chunk size line", err, 1, true)
  end)
end)
