// http.mjs: raw HTTP for spec/nginx_spec.lua, where the SDK client would
// hide what crosses the wire.
//   node http.mjs send URL BODY|@FILE [COUNT [HEADERS_JSON]]
//     COUNT identical POSTs at once; one JSON line each: {status, type, body}
//   node http.mjs load URL BODY MILLISECONDS CONCURRENCY [keep|close]
//     POSTs for that long on that many connections at once (kept alive, or
//     a new connection for each request); prints
//     {"ok": n, "failed": n, "statuses": {...}, "errors": [...]} (ok: a 2xx
//     whose body is a JSON-RPC result or error, never a transport failure)
//   node http.mjs port N
//     N free TCP ports on 127.0.0.1, from the kernel (bound to port 0, then released)
import http from "node:http";
import net from "node:net";
import { readFileSync } from "node:fs";

const [mode, ...rest] = process.argv.slice(2);
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

// keep-alive connections, or a new connection per request
const AGENTS = { keep: new http.Agent({ keepAlive: true, maxSockets: 64 }), close: new http.Agent({ keepAlive: false }) };

function post(url, body, headers, agent = "keep") {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { ...HEADERS, ...headers }, agent: AGENTS[agent] }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, type: res.headers["content-type"] ?? null,
        body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

if (mode === "send") {
  const [url, arg, count = "1", headers = "{}"] = rest;
  const body = arg.startsWith("@") ? readFileSync(arg.slice(1)) : arg;
  const all = await Promise.all(Array.from({ length: Number(count) }, () => post(url, body, JSON.parse(headers))));
  for (const r of all) process.stdout.write(JSON.stringify(r) + "\n");
} else if (mode === "load") {
  const [url, body, ms, conc, agent = "keep"] = rest;
  const end = Date.now() + Number(ms);
  const res = { ok: 0, failed: 0, statuses: {}, errors: [] };
  const worker = async () => {
    while (Date.now() < end) {
      try {
        const r = await post(url, body, {}, agent);
        res.statuses[r.status] = (res.statuses[r.status] || 0) + 1;
        if (r.status >= 200 && r.status < 300 && /"(result|error)"/.test(r.body)) res.ok += 1;
        else { res.failed += 1; if (res.errors.length < 5) res.errors.push(r); }
      } catch (e) {
        res.failed += 1;
        if (res.errors.length < 5) res.errors.push(String(e) + " " + String(e.code));
      }
    }
  };
  await Promise.all(Array.from({ length: Number(conc) }, worker));
  process.stdout.write(JSON.stringify(res) + "\n");
} else if (mode === "port") {
  const servers = [];
  for (let i = 0; i < Number(rest[0] || 1); i++) {
    const s = net.createServer();
    await new Promise((ok) => s.listen(0, "127.0.0.1", ok));
    servers.push(s);
  }
  process.stdout.write(servers.map((s) => s.address().port).join(" ") + "\n");
  for (const s of servers) s.close();
} else {
  process.stderr.write("usage: node http.mjs send|load|port ...\n");
  process.exitCode = 2;
}
