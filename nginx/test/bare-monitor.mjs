// bare-monitor.mjs: an MCP server (no SDK) whose tools carry no annotations,
// as the system-monitor server on npm lists them: get-system-info and
// kill-process.  A tools/call is answered with a text naming the tool and its
// arguments; initialize with 2025-06-18; any other request gets an empty
// result.  Over stdio (newline-delimited JSON-RPC), or with PORT=N over
// Streamable HTTP (POST /mcp, application/json answers; PORT=0: the kernel's
// port, printed as "listening on port N"), where each tools/call that ran is
// also logged on stdout ("ran NAME ARGS"), for a spec to see what reached it.
import { createInterface } from "node:readline";
import http from "node:http";

const tools = [
  { name: "get-system-info", description: "Get system information (OS, CPU, memory)",
    inputSchema: { type: "object", properties: {} } },
  { name: "kill-process", description: "Kill a process by its PID",
    inputSchema: { type: "object", properties: { pid: { type: "integer", minimum: 1 } }, required: ["pid"] } },
];

// the answer to one JSON-RPC message (undefined for a notification)
function answer(m) {
  if (m.id === undefined) return undefined;
  if (m.method === "initialize") {
    return { jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} },
      serverInfo: { name: "bare-monitor", version: "1" } } };
  }
  if (m.method === "tools/list") return { jsonrpc: "2.0", id: m.id, result: { tools } };
  if (m.method === "tools/call") {
    return { jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text",
      text: `ran ${m.params.name} ${JSON.stringify(m.params.arguments ?? {})}` }] } };
  }
  return { jsonrpc: "2.0", id: m.id, result: {} };
}

if (process.env.PORT === undefined) {
  createInterface({ input: process.stdin }).on("line", (line) => {
    const a = answer(JSON.parse(line));
    if (a) process.stdout.write(JSON.stringify(a) + "\n");
  });
} else {
  const server = http.createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/mcp") return res.writeHead(405).end();
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let m;
      try { m = JSON.parse(Buffer.concat(chunks).toString("utf8")); } catch { return res.writeHead(400).end(); }
      const a = answer(m);
      if (!a) return res.writeHead(202).end();
      if (m.method === "tools/call") console.log(a.result.content[0].text);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(a));
    });
  });
  server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log(`listening on port ${server.address().port}`));
}
