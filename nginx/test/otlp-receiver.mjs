// otlp-receiver.mjs: an OpenTelemetry collector's OTLP/HTTP trace endpoint
// for the tracing specs (spec/otel_e2e_spec.lua).  Every export is decoded
// with the OpenTelemetry project's own protobuf definitions (the generated
// root of @opentelemetry/otlp-transformer): the JSON is read into an
// ExportTraceServiceRequest, encoded, decoded again, and every member the
// sender wrote must come back with the same value, so a misspelt or
// unknown field, an id that is not hex of the right length or a value of
// the wrong type is an error, not a silently empty span.
//   PORT=0 [REFUSE=1] node otlp-receiver.mjs OUT.jsonl
// prints "port N" once listening.  POST /v1/traces (application/json)
// takes an export: each span is a JSON line in OUT.jsonl ({resource,
// scope, traceId, spanId, parentSpanId, name, kind, startTimeUnixNano,
// endTimeUnixNano, attributes: {key: value}, events: [{name, attributes}],
// status}); a bad export is answered 400 and written as {"error": why}.
// POST /refuse makes it answer 503 to every export (REFUSE=1: from the
// start), POST /accept takes them again; GET /stats gives {exports,
// refused, spans, errors}.
import http from "node:http";
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const out = process.argv[2];
if (!out) throw new Error("usage: node otlp-receiver.mjs OUT.jsonl");
let refusing = process.env.REFUSE === "1";
const stats = { exports: 0, refused: 0, spans: 0, errors: 0 };

const ID_BYTES = { traceId: 16, spanId: 8, parentSpanId: 8 };

// The JSON as protobufjs's fromObject takes it: OTLP/JSON writes the ids
// as hex (proto3's JSON mapping would have base64), checked here.
function forProto(v, path) {
  if (Array.isArray(v)) return v.map((x, i) => forProto(x, `${path}[${i}]`));
  if (v === null || typeof v !== "object") return v;
  const o = {};
  for (const [k, x] of Object.entries(v)) {
    if (ID_BYTES[k]) {
      const re = new RegExp(`^[0-9a-f]{${ID_BYTES[k] * 2}}$`);
      if (typeof x !== "string" || !re.test(x)) throw new Error(`${path}.${k}: ${JSON.stringify(x)} is not ${ID_BYTES[k]} bytes of lower-case hex`);
      o[k] = Buffer.from(x, "hex");
    } else {
      o[k] = forProto(x, `${path}.${k}`);
    }
  }
  return o;
}

// Every member sent must be in what the definitions kept, with its value.
function same(sent, kept, path) {
  if (Array.isArray(sent)) {
    if (!Array.isArray(kept) || kept.length !== sent.length) throw new Error(`${path}: ${sent.length} items sent, ${kept?.length} kept`);
    sent.forEach((x, i) => same(x, kept[i], `${path}[${i}]`));
    return;
  }
  if (sent !== null && typeof sent === "object") {
    if (kept === null || typeof kept !== "object") throw new Error(`${path}: an object sent, ${JSON.stringify(kept)} kept`);
    for (const [k, x] of Object.entries(sent)) {
      if (!(k in kept)) throw new Error(`${path}.${k}: no such field in the OTLP definitions (unknown or misspelt)`);
      if (ID_BYTES[k]) {
        const hex = Buffer.from(kept[k], "base64").toString("hex");
        if (hex !== x) throw new Error(`${path}.${k}: ${x} sent, ${hex} kept`);
      } else {
        same(x, kept[k], `${path}.${k}`);
      }
    }
    return;
  }
  if (String(sent) !== String(kept)) throw new Error(`${path}: ${JSON.stringify(sent)} sent, ${JSON.stringify(kept)} kept`);
}

function decode(text) {
  const sent = JSON.parse(text);
  const msg = Request.fromObject(forProto(sent, "$"));
  const bad = Request.verify(msg);
  if (bad) throw new Error(bad);
  const back = Request.toObject(Request.decode(Request.encode(msg).finish()),
    { longs: String, enums: Number, bytes: String, defaults: true, arrays: true });
  same(sent, back, "$");
  return back;
}

function value(v) {
  for (const k of ["stringValue", "boolValue", "intValue", "doubleValue"]) if (k in v) return v[k];
  return null;
}
const attrs = (list) => Object.fromEntries((list || []).map((a) => [a.key, value(a.value)]));
const hex = (b64) => (b64 ? Buffer.from(b64, "base64").toString("hex") : "");

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const answer = (status, body) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "POST" && req.url === "/refuse") { refusing = true; return answer(200, {}); }
    if (req.method === "POST" && req.url === "/accept") { refusing = false; return answer(200, {}); }
    if (req.method === "GET" && req.url === "/stats") return answer(200, stats);
    if (req.method !== "POST" || req.url !== "/v1/traces") return answer(404, { error: "no such endpoint" });
    if (refusing) { stats.refused++; return answer(503, { error: "refusing" }); }
    const lines = [];
    try {
      if (!(req.headers["content-type"] || "").startsWith("application/json")) throw new Error(`Content-Type ${req.headers["content-type"]}`);
      const back = decode(Buffer.concat(chunks).toString("utf8"));
      for (const rs of back.resourceSpans) {
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            lines.push({ resource: attrs(rs.resource.attributes), scope: ss.scope.name, traceId: hex(s.traceId),
              spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name, kind: s.kind,
              startTimeUnixNano: s.startTimeUnixNano, endTimeUnixNano: s.endTimeUnixNano, attributes: attrs(s.attributes),
              events: s.events.map((e) => ({ name: e.name, attributes: attrs(e.attributes) })), status: s.status });
          }
        }
      }
    } catch (e) {
      stats.errors++;
      fs.appendFileSync(out, JSON.stringify({ error: String(e.message || e) }) + "\n");
      return answer(400, { error: String(e.message || e) });
    }
    stats.exports++;
    stats.spans += lines.length;
    if (lines.length) fs.appendFileSync(out, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    answer(200, {});
  });
});
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => console.log(`port ${server.address().port}`));
