// client.mjs: the MCP TypeScript SDK's stdio client, starting and talking
// to a command (toolgate mcp-proxy -- SERVER...) for spec/stdio_spec.lua.
// node client.mjs STEPS_JSON COMMAND [ARGS...]
// STEPS_JSON is a list of {"op": "list"} | {"op": "call", "name", "arguments"}
// | {"op": "ping"}; one JSON line is printed per step: {"ok": result} or
// {"error": {"code", "message", "data"}}.  The first line is the
// initialize result (the server's name and version).  The command's
// standard error goes to this script's.  With ROOTS=1 in the environment
// the client offers roots and answers the server's roots/list with one
// root, file:///spec-root.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { runSteps } from "../../nginx/test/steps.mjs";

const [stepsText, command, ...args] = process.argv.slice(2);
const steps = JSON.parse(stepsText || "[]");
const roots = process.env.ROOTS === "1";
const client = new Client({ name: "toolgate-spec", version: "1.0.0" }, { capabilities: roots ? { roots: {} } : {} });
if (roots) {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///spec-root", name: "spec" }] }));
}
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
try {
  await client.connect(transport);
  out({ ok: { server: client.getServerVersion() } });
  await runSteps(client, steps, out);
  await client.close();
} catch (e) {
  out({ fatal: String((e && e.stack) || e) });
  process.exitCode = 1;
}
