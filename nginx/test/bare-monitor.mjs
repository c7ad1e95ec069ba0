// bare-monitor.mjs: a stdio MCP server (newline-delimited JSON-RPC, no SDK)
// whose tools carry no annotations, as the system-monitor server on npm
// lists them: get-system-info and kill-process.  A tools/call is answered
// with a text naming the tool and its arguments; initialize with 2025-06-18;
// any other request gets an empty result.
import { createInterface } from "node:readline";

const tools = [
  { name: "get-system-info", description: "Get system information (OS, CPU, memory)",
    inputSchema: { type: "object", properties: {} } },
  { name: "kill-process", description: "Kill a process by its PID",
    inputSchema: { type: "object", properties: { pid: { type: "integer", minimum: 1 } }, required: ["pid"] } },
];

const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") {
    return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} },
      serverInfo: { name: "bare-monitor", version: "1" } } });
  }
  if (m.method === "tools/list") return send({ jsonrpc: "2.0", id: m.id, result: { tools } });
  if (m.method === "tools/call") {
    return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text",
      text: `ran ${m.params.name} ${JSON.stringify(m.params.arguments ?? {})}` }] } });
  }
  send({ jsonrpc: "2.0", id: m.id, result: {} });
});
