// client.mjs: the MCP TypeScript SDK's client, talking to a gateway for
// spec/nginx_spec.lua.  node client.mjs URL STEPS_JSON
// STEPS_JSON is a list of {"op": "list"} | {"op": "call", "name", "arguments"}
// | {"op": "ping"}; one JSON line is printed per step: {"ok": result} or
// {"error": {"code", "message", "data"}}.  The first line is the initialize
// result (server info, the session id).  HEADERS (a JSON object in the
// environment) are sent with every request (requestInit), e.g. a token.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { runSteps } from "./steps.mjs";

const [url, stepsText] = process.argv.slice(2);
const steps = JSON.parse(stepsText || "[]");
const client = new Client({ name: "toolgate-spec", version: "1.0.0" });
const headers = JSON.parse(process.env.HEADERS || "{}");
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
try {
  await client.connect(transport);
  out({ ok: { server: client.getServerVersion(), session: transport.sessionId ?? null } });
  await runSteps(client, steps, out);
  await transport.terminateSession().catch(() => {});
  await client.close();
} catch (e) {
  out({ fatal: String(e && e.stack || e) });
  process.exitCode = 1;
}
