// progress.mjs: the SDK client (1.32.2) calls a tool with a progress token
// through a gateway for spec/nginx_spec.lua, and says when each progress
// notification and the result arrived: an SSE answer must reach the client
// event by event, not at its end.
//   node progress.mjs URL TOOL ARGUMENTS_JSON
// Prints one JSON line: {"progress": [ms since the call, ...], "result_ms",
// "result"} or {"error"}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, argsText] = process.argv.slice(2);
const client = new Client({ name: "toolgate-spec", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
const out = { progress: [], result_ms: null, result: null };
try {
  await client.connect(transport);
  const t0 = Date.now();
  out.result = await client.callTool({ name: tool, arguments: JSON.parse(argsText) }, undefined,
    { onprogress: () => out.progress.push(Date.now() - t0), timeout: 20000 });
  out.result_ms = Date.now() - t0;
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (e) {
  out.error = String(e && e.stack || e);
  process.exitCode = 1;
}
process.stdout.write(JSON.stringify(out) + "\n");
