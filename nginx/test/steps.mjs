// steps.mjs: the steps an SDK client runs for a spec, whatever its
// transport (client.mjs here over Streamable HTTP, spec/stdio/client.mjs
// over stdio).  Each step is {"op": "list"} | {"op": "call", "name",
// "arguments"} | {"op": "ping"} | {"op": "sleep", "ms"}; one JSON line is printed per step:
// {"ok": result} or {"error": {"code", "message", "data"}}.
export async function runSteps(client, steps, out) {
  for (const s of steps) {
    try {
      if (s.op === "list") out({ ok: await client.listTools() });
      else if (s.op === "ping") out({ ok: await client.ping() });
      else if (s.op === "sleep") out({ ok: await new Promise((done) => setTimeout(() => done({ slept: s.ms }), s.ms)) });
      else if (s.op === "call") out({ ok: await client.callTool({ name: s.name, arguments: s.arguments ?? {} }) });
      else out({ error: { message: "unknown step " + s.op } });
    } catch (e) {
      out({ error: { code: e.code ?? null, message: String(e.message), data: e.data ?? null } });
    }
  }
}
