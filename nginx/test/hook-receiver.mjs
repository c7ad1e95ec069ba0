// hook-receiver.mjs: a webhook receiver for spec/webhooks_e2e_spec.lua.
//   PORT=0 FAIL_FIRST=N node hook-receiver.mjs
// Prints "listening on port P"; answers every POST 200 (the first N with
// 500) and records it; GET /received answers the records, a JSON array of
// {"path", "type", "status", "body"} (status: what it answered).
import http from "node:http";

const failFirst = Number(process.env.FAIL_FIRST ?? 0);
const received = [];
const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/received") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(received));
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const status = received.length < failFirst ? 500 : 200;
    received.push({ path: req.url, type: req.headers["content-type"] ?? null, status,
      body: Buffer.concat(chunks).toString("utf8") });
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(status === 200 ? "ok" : "failing on purpose");
  });
});
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log("listening on port " + server.address().port);
});
