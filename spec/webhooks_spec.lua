-- toolgate.webhooks: the hooks' URLs, the two shapes of a notification
-- (JSON, Slack) and the bounded queue with its retries.  Pure Lua, under
-- both interpreters (the nginx and stdio senders: spec/webhooks_e2e_spec.lua).
local json = require "toolgate.json"
local decision = require "toolgate.decision"
local webhooks = require "toolgate.webhooks"

local function decode(text) return assert(json.decode(decision.codec(), text)) end

local record = { id = "ab12", status = "pending", server = "notes", tool = "write_note", code = "H4",
  message = "writes need a person's approval", arguments = '{"text":"<b>&```x"}', arguments_bytes = 20,
  arguments_truncated = false, args_digest = "d1", created = 1000, expires = 1600, uses = 1, principal = "alice" }

describe("toolgate.webhooks", function()
  it("reads URL and slack=URL, http:// to an IP or localhost only", function()
    local h = assert(webhooks.parse("http://127.0.0.1:8080/hook?x=1"))
    assert.same({ "json", "127.0.0.1", 8080, "/hook?x=1", "127.0.0.1:8080" }, { h.kind, h.host, h.port, h.path, h.authority })
    h = assert(webhooks.parse("slack=http://localhost/services/T"))
    assert.same({ "slack", "localhost", 80, "/services/T" }, { h.kind, h.host, h.port, h.path })
    assert.equals("::1", assert(webhooks.parse("http://[::1]:9/")).host)
    for bad, says in pairs({ ["https://hooks.slack.com/x"] = "no TLS", ["http://hooks.example/x"] = "looks up no names",
      ["teams=http://127.0.0.1/"] = "slack=URL", ["http://u:p@127.0.0.1/"] = "credentials",
      ["http://127.0.0.1:99999/"] = "bad port", ["ftp://127.0.0.1/"] = "http://HOST" }) do
      local ok, err = webhooks.parse(bad)
      assert.is_nil(ok)
      assert.truthy(err:find(says, 1, true), bad .. ": " .. err)
    end
  end)

  it("the JSON shape is the approval record and the inbox's URL", function()
    local b = decode(webhooks.payload("json", record, "http://127.0.0.1:9/approvals"))
    assert.equals("approval.requested", b.event)
    assert.equals("http://127.0.0.1:9/approvals", b.inbox)
    for k, v in pairs(record) do assert.equals(v, b.approval[k], k) end
    assert.is_nil(decode(webhooks.payload("json", record)).inbox)
  end)

  it("the Slack shape: text, a header naming server/tool, the reason, the arguments in a code block, the inbox", function()
    local b = decode(webhooks.payload("slack", record, "http://127.0.0.1:9/approvals"))
    assert.equals("toolgate: approval requested for notes/write_note (H4: writes need a person's approval) "
      .. "http://127.0.0.1:9/approvals", b.text)
    assert.same({ type = "header", text = { type = "plain_text", text = "Approval requested: notes/write_note" } },
      b.blocks[1])
    assert.equals("*Reason:* H4: writes need a person's approval\n*Approval:* `ab12`\n*Asked by:* alice",
      b.blocks[2].text.text)
    -- escaped for mrkdwn, a ``` inside broken up so the block holds
    assert.equals("*Arguments:*\n```{\"text\":\"&lt;b&gt;&amp;``\226\128\139`x\"}```", b.blocks[3].text.text)
    assert.equals("<http://127.0.0.1:9/approvals|Open the approvals inbox>", b.blocks[4].text.text)
    assert.equals(3, #decode(webhooks.payload("slack", record)).blocks)
  end)

  it("cuts long arguments to Slack's limit at a character's start, and says so", function()
    local long = {}
    for k, v in pairs(record) do long[k] = v end
    long.arguments = '{"text":"' .. string.rep("\195\169", 4000) .. '"}'
    long.arguments_bytes, long.arguments_truncated = 70000, true
    local b = decode(webhooks.payload("slack", long))
    local t = b.blocks[3].text.text
    assert.is_true(#t <= webhooks.SLACK_TEXT_MAX, #t)
    assert.truthy(t:find("(the record holds the first " .. #long.arguments .. " of 70000 bytes of the arguments)", 1, true))
    assert.truthy(t:find("Slack's limit; the inbox shows all)", 1, true))
    -- valid UTF-8: the JSON decoder took it, and the code block ends on a whole character
    assert.truthy(t:find('\195\169```\n', 1, true))
    long.server = string.rep("s", 300)
    assert.is_true(#decode(webhooks.payload("slack", long)).blocks[1].text.text <= webhooks.SLACK_HEADER_MAX)
  end)

  it("queues one item per hook, bounded; retries with doubling backoff; drops after the attempts", function()
    local a, s = assert(webhooks.parse("http://127.0.0.1:1/a")), assert(webhooks.parse("slack=http://127.0.0.1:1/s"))
    local q = webhooks.queue({ a, s }, { limit = 3, attempts = 3, backoff = 2 })
    assert.same({ 2, 0 }, { q:push(record, nil, 10) })
    assert.same({ 1, 1 }, { q:push(record, nil, 10) }) -- the bound: the fourth item does not fit
    local first = q:next(10)
    assert.equals(a, first.hook)
    assert.equals("approval.requested", decode(first.body).event)
    assert.equals(s, q:next(10).hook)
    assert.same({ "delivered", false }, { q:done(first, true, 10) })
    -- a's hook fails: down (a change), retried at 10 + 2, then 10 + 2 + 4, then dropped
    local x = q:next(10)
    assert.same({ "retried", true }, { q:done(x, false, 10) })
    assert.same({ nil, 12 }, { q:next(11) })
    x = q:next(12)
    assert.same({ "retried", false }, { q:done(x, false, 12) })
    assert.is_nil((q:next(15)))
    x = q:next(16)
    assert.same({ "dropped", false }, { q:done(x, false, 16) })
    assert.same({}, q.items)
    -- and up again: a change
    q:push(record, nil, 20)
    assert.same({ "delivered", true }, { q:done(q:next(20), true, 20) })
    assert.same({ "delivered", false }, { q:done(q:next(20), true, 20) }) -- the Slack hook was never down
  end)

  it("never waits longer than BACKOFF_MAX between tries", function()
    local q = webhooks.queue({ assert(webhooks.parse("http://127.0.0.1:1/a")) }, { attempts = 50, backoff = 1 })
    q:push(record, nil, 0)
    local now, gap = 0, 0
    for _ = 1, 20 do
      local x = assert(q:next(now))
      assert.equals("retried", (q:done(x, false, now)))
      local _, at = q:next(now)
      gap = at - now
      assert.is_true(gap <= webhooks.BACKOFF_MAX)
      now = at
    end
    assert.equals(webhooks.BACKOFF_MAX, gap)
  end)
end)
