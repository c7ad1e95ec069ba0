// http.mjs: raw HTTP for spec/nginx_spec.lua, where the SDK client would
// hide what crosses the wire.
//   node http.mjs send URL BODY [COUNT [HEADERS_JSON]]
//     COUNT identical POSTs at once; one JSON line each: {status, type, body}
//   node http.mjs load URL BODY MILLISECONDS CONCURRENCY
//     POSTs for that long on that many connections at once; prints
//     {"ok": n, "failed": n, "statuses": {...}, "errors": [...]} (ok: a 2xx
//     whose body is a JSON-RPC result or error, never a transport failure)
//   node http.mjs port N
//     N free TCP ports on 127.0.0.1, from the kernel (bound to port 0, then released)
import net from "node:net";

const [mode, ...rest] = process.argv.slice(2);
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function post(url, body, headers) {
  const r = await fetch(url, { method: "POST", headers: { ...HEADERS, ...headers }, body });
  return { status: r.status, type: r.headers.get("content-type"), body: await r.text() };
}

if (mode === "send") {
  const [url, body, count = "1", headers = "{}"] = rest;
  const all = await Promise.all(Array.from({ length: Number(count) }, () => post(url, body, JSON.parse(headers))));
  for (const r of all) process.stdout.write(JSON.stringify(r) + "\n");
} else if (mode === "load") {
  const [url, body, ms, conc] = rest;
  const end = Date.now() + Number(ms);
  const res = { ok: 0, failed: 0, statuses: {}, errors: [] };
  const worker = async () => {
    while (Date.now() < end) {
      try {
        const r = await post(url, body, {});
        res.statuses[r.status] = (res.statuses[r.status] || 0) + 1;
        if (r.status >= 200 && r.status < 300 && /"(result|error)"/.test(r.body)) res.ok += 1;
        else { res.failed += 1; if (res.errors.length < 5) res.errors.push(r); }
      } catch (e) {
        res.failed += 1;
        if (res.errors.length < 5) res.errors.push(String(e) + " " + String(e.cause && (e.cause.code || e.cause.message)));
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
