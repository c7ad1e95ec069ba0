// recordable.mjs: an MCP server built with @modelcontextprotocol/server
// 2.4.0 for spec/registry_record_spec.lua (toolgate registry record in both
// eras and over both transports).
//   node recordable.mjs stdio          a stdio server
//   PORT=0 node recordable.mjs http    Streamable HTTP on 127.0.0.1, prints "port N"; POST /mcp
//   node recordable.mjs tools          prints the tools it lists, as JSON
// STRICT=1 serves 2026-07-28 only (legacy: "reject": initialize gets
// -32022); otherwise 2025 clients are served too.  PAGE_SIZE=N lists the
// tools N a page (nextCursor).  DESCRIPTION=... describes lookup otherwise
// (a rug pull).  TOKEN=T (http): every request must carry
// "Authorization: Bearer T", else 401.
import http from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

const TOOLS = [
  { name: "lookup", description: process.env.DESCRIPTION || "Looks a word up",
    inputSchema: { type: "object", properties: { word: { type: "string", maxLength: 64 } }, required: ["word"],
      additionalProperties: false },
    annotations: { readOnlyHint: true, openWorldHint: false } },
  { name: "stats", description: "Counts the words of a text",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    outputSchema: { type: "object", properties: { words: { type: "integer", minimum: 0 } }, required: ["words"] },
    annotations: { readOnlyHint: true } },
  { name: "write_note", description: "Writes a note",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false } },
  { name: "delete_all", description: "Deletes every note", inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: false, destructiveHint: true } },
  { name: "plain", description: "A tool without annotations", inputSchema: { type: "object" } },
];

const pageSize = Number(process.env.PAGE_SIZE || 0);

function factory() {
  const s = new McpServer({ name: "recordable", version: "1.0.0" }, { capabilities: { tools: {} } });
  s.server.setRequestHandler("tools/list", async (req) => {
    if (!pageSize) return { tools: TOOLS };
    const from = Number(req.params?.cursor ?? 0);
    const next = from + pageSize;
    return next < TOOLS.length ? { tools: TOOLS.slice(from, next), nextCursor: String(next) }
      : { tools: TOOLS.slice(from) };
  });
  s.server.setRequestHandler("tools/call", async () => ({ content: [{ type: "text", text: "done" }] }));
  return s;
}

const options = process.env.STRICT === "1" ? { legacy: "reject" } : {};
const mode = process.argv[2];
if (mode === "tools") {
  process.stdout.write(JSON.stringify(TOOLS) + "\n");
} else if (mode === "stdio") {
  serveStdio(factory, options);
} else if (mode === "http") {
  const handler = createMcpHandler(factory, options);
  const server = http.createServer(async (req, res) => {
    if (process.env.TOKEN && req.headers.authorization !== `Bearer ${process.env.TOKEN}`) {
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
      res.end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const port = server.address().port;
    const r = await handler.fetch(new Request(`http://127.0.0.1:${port}${req.url}`, {
      method: req.method, headers: req.headers, body: ["GET", "HEAD"].includes(req.method) ? undefined : body,
    }));
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) for await (const c of r.body) res.write(c);
    res.end();
  });
  server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => console.log(`port ${server.address().port}`));
} else {
  console.error("usage: node recordable.mjs stdio | http | tools");
  process.exit(2);
}
