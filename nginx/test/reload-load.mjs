// reload-load.mjs: spec/reload_spec.lua's upstream and its load, in plain
// node:http (a stateless JSON-RPC server needs no SDK).
//   PORT=0 node reload-load.mjs serve
//     an MCP server answering JSON: tools/call of any tool answers after
//     DELAY_MS (default 20: a reload can come while a call is in flight)
//     with the text "Echo: <arguments.message>"; prints "port N" once listening
//   node reload-load.mjs load URL TOOL CONNECTIONS CALLS
//     CALLS tools/call of TOOL on each of CONNECTIONS kept-alive connections,
//     one after the other, each with its own message "c<connection>-<call>";
//     prints {"sent": n, "failed": n, "answers": {"<class>": n}, "errors": [...]}
//     where an answer's class is "echo" (its own message echoed), or
//     "refused <stage> <code>" (a toolgate refusal: its decision), or
//     "other" (anything else: kept in errors)
import http from "node:http";

const [mode, ...rest] = process.argv.slice(2);

function reply(res, id, result) {
  const body = JSON.stringify({ jsonrpc: "2.0", id, result });
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

if (mode === "serve") {
  const delay = Number(process.env.DELAY_MS ?? 20);
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const msg = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
      if (!msg || msg.id === undefined) { res.writeHead(202); res.end(); return; }
      if (msg.method !== "tools/call") { reply(res, msg.id, {}); return; }
      const text = "Echo: " + String(msg.params?.arguments?.message);
      setTimeout(() => reply(res, msg.id, { content: [{ type: "text", text }] }), delay);
    });
  });
  server.keepAliveTimeout = 60000;
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => console.log("port " + server.address().port));
} else if (mode === "load") {
  const [url, tool, conns, calls] = rest;
  const res = { sent: 0, failed: 0, answers: {}, errors: [] };
  const note = (cls, what) => {
    res.answers[cls] = (res.answers[cls] || 0) + 1;
    if (cls === "other" && res.errors.length < 5) res.errors.push(what);
  };
  const post = (agent, body) => new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json",
      accept: "application/json, text/event-stream" } }, (r) => {
      const chunks = [];
      r.on("data", (c) => chunks.push(c));
      r.on("end", () => resolve({ status: r.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
      r.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
  const connection = async (c) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < Number(calls); i++) {
      const message = `c${c}-${i}`;
      const body = JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/call",
        params: { name: tool, arguments: { message } } });
      res.sent += 1;
      try {
        const r = await post(agent, body);
        const m = JSON.parse(r.body);
        const result = m.result;
        const d = result?._meta?.["toolgate/decision"] ?? m.error?.data?.decision;
        if (r.status === 200 && result && !result.isError && result.content?.[0]?.text === "Echo: " + message) {
          note("echo");
        } else if (r.status === 200 && d) note(`refused ${d.stage} ${d.code}`);
        else note("other", r);
      } catch (e) {
        res.failed += 1;
        if (res.errors.length < 5) res.errors.push(String(e) + " " + String(e.code));
      }
    }
    agent.destroy();
  };
  await Promise.all(Array.from({ length: Number(conns) }, (_, c) => connection(c)));
  process.stdout.write(JSON.stringify(res) + "\n");
} else {
  process.stderr.write("usage: node reload-load.mjs serve|load ...\n");
  process.exitCode = 2;
}
