// listen.mjs: a raw 2026-07-28 subscriptions/listen for spec/nginx_spec.lua,
// where the SDK client would hide when each byte of the stream arrived.
//   node listen.mjs URL MS [TOUCH_URL TOUCH_AFTER_MS [SESSION_ID]]
// POSTs subscriptions/listen {toolsListChanged: true} (id "L1") to URL with
// the standard headers (with SESSION_ID: opens a 2025 GET stream of that
// Mcp-Session-Id instead), keeps the stream open MS milliseconds, fetches
// TOUCH_URL (the upstream's GET /touch: list_changed) TOUCH_AFTER_MS after
// the answer's headers, then closes it.  Prints one JSON line:
// {"status", "type", "chunks": [{"t": ms since the headers, "text"}],
//  "touched": ms, "closed": ms}.
import http from "node:http";

const [url, ms, touchUrl, touchAfter, session] = process.argv.slice(2);
const body = JSON.stringify({ jsonrpc: "2.0", id: "L1", method: "subscriptions/listen", params: {
  notifications: { toolsListChanged: true },
  _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } });
const headers = session ? { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" }
  : { "content-type": "application/json", accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen" };

const out = { status: null, type: null, chunks: [], touched: null, closed: null };
const req = http.request(url, { method: session ? "GET" : "POST", headers }, (res) => {
  const t0 = Date.now();
  out.status = res.statusCode;
  out.type = res.headers["content-type"] ?? null;
  res.setEncoding("utf8");
  res.on("data", (c) => out.chunks.push({ t: Date.now() - t0, text: c }));
  if (touchUrl) setTimeout(() => http.get(touchUrl, (r) => { r.resume(); out.touched = Date.now() - t0; }),
    Number(touchAfter));
  setTimeout(() => { out.closed = Date.now() - t0; req.destroy(); }, Number(ms));
  res.on("error", () => {});
});
req.on("error", () => {});
req.on("close", () => process.stdout.write(JSON.stringify(out) + "\n"));
req.end(session ? undefined : body);
