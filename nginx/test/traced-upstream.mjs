// traced-upstream.mjs: a tiny MCP server (stateless Streamable HTTP, JSON
// answers) for the tracing specs: it keeps the traceparent header each
// POST came with, so a spec sees what the gateway passed on.
//   PORT=0 node traced-upstream.mjs
// prints "port N".  POST /mcp: initialize, tools/list (get_weather),
// tools/call (a text), notifications (202).  GET /seen gives
// [{method, traceparent (the header), meta (params._meta.traceparent)}, ...].
import http from "node:http";

const seen = [];
const TOOLS = [{ name: "get_weather", description: "The weather in a city",
  inputSchema: { type: "object", properties: { city: { type: "string", maxLength: 40 } }, required: ["city"] },
  annotations: { readOnlyHint: true, openWorldHint: false } }];

function answer(msg) {
  if (msg.method === "initialize") {
    return { protocolVersion: msg.params?.protocolVersion || "2025-06-18", capabilities: { tools: {} },
      serverInfo: { name: "traced", version: "1.0.0" } };
  }
  if (msg.method === "tools/list") return { tools: TOOLS };
  if (msg.method === "tools/call") return { content: [{ type: "text", text: `sunny in ${msg.params?.arguments?.city}` }] };
  return {};
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.method === "GET" && req.url === "/seen") {
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify(seen));
    }
    if (req.method !== "POST") { res.writeHead(405); return res.end(); }
    let msg;
    try { msg = JSON.parse(Buffer.concat(chunks).toString("utf8")); } catch { res.writeHead(400); return res.end(); }
    seen.push({ method: msg.method ?? null, traceparent: req.headers.traceparent ?? null,
      meta: msg.params?._meta?.traceparent ?? null });
    if (msg.id === undefined) { res.writeHead(202); return res.end(); }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: answer(msg) }));
  });
});
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => console.log(`port ${server.address().port}`));
