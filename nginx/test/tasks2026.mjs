// tasks2026.mjs: the smallest MCP 2026-07-28 server with the tasks extension
// (io.modelcontextprotocol/tasks, ext-tasks draft), for
// spec/mcp2026_spec.lua.  Hand-written JSON-RPC: @modelcontextprotocol/server
// 2.4.0 has no tasks API, and its client none either (the spec drives this
// server with client2026.mjs raw).  It serves the modern era only: a request
// without _meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
// gets -32022 (HTTP 400).  It does not check the HTTP headers against the
// body (Mcp-Method, Mcp-Name), so a mismatch refused is refused by whatever
// stands in front of it.
//   PORT=0 node tasks2026.mjs         Streamable HTTP on 127.0.0.1, POST /mcp
//                                     (JSON answers), prints "listening on port N";
//                                     GET /calls: what ran, a JSON list
//   CALLS_FILE=F node tasks2026.mjs stdio   JSON lines; what ran appended to F
// Methods: server/discover (capabilities.extensions names the tasks
// extension), tools/list, tools/call (a CreateTaskResult, resultType "task",
// status "working", when the request's clientCapabilities declare the
// extension; else the result at once), tasks/get, tasks/update, tasks/cancel.
// Tools: long_job {n} with an outputSchema {count: integer}: working on the
// first tasks/get, then completed with result {structuredContent: {count: n}}
// (BREAK_TASK=1: {count: "many"}, which breaks the schema); long_echo {text}
// without one: input_required (inputRequests.confirm, an elicitation) until a
// tasks/update answers it, then completed echoing text.  An unknown taskId is
// -32602.
import http from "node:http";
import fs from "node:fs";
import readline from "node:readline";
import { randomUUID } from "node:crypto";

const VERSION = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
const INFO = { "io.modelcontextprotocol/serverInfo": { name: "tasks2026", version: "1.0.0" } };
const calls = [];
const tasks = new Map();

function ran(call) {
  calls.push(call);
  if (process.env.CALLS_FILE) fs.appendFileSync(process.env.CALLS_FILE, JSON.stringify(call) + "\n");
}

const TOOLS = [
  { name: "long_job", description: "Counts to n, slowly (a task)",
    inputSchema: { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 100 } }, required: ["n"], additionalProperties: false },
    outputSchema: { type: "object", properties: { count: { type: "integer" } }, required: ["count"] },
    annotations: { readOnlyHint: true, openWorldHint: false } },
  { name: "long_echo", description: "Echoes text once confirmed (a task that asks for input)",
    inputSchema: { type: "object", properties: { text: { type: "string", maxLength: 100 } }, required: ["text"], additionalProperties: false },
    annotations: { readOnlyHint: true, openWorldHint: false } },
];
const CONFIRM = { method: "elicitation/create", params: { mode: "form", message: "Echo it?",
  requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] } } };

const complete = (r) => ({ resultType: "complete", ...r, _meta: INFO });
const text = (t) => ({ content: [{ type: "text", text: t }] });
class RpcError extends Error {
  constructor(code, message, data, status) { super(message); Object.assign(this, { code, data, status }); }
}

function finalResult(task) {
  if (task.name === "long_job") {
    const count = process.env.BREAK_TASK === "1" ? "many" : task.arguments.n;
    return { ...text(String(count)), structuredContent: { count } };
  }
  return text(`echo: ${task.arguments.text}`);
}

// The task as tasks/get shows it now; each poll moves a working task on.
function detailed(task) {
  const now = new Date().toISOString();
  const base = { taskId: task.id, status: task.status, createdAt: task.createdAt, lastUpdatedAt: now, ttlMs: 60000, pollIntervalMs: 100 };
  if (task.status === "input_required") return { ...base, inputRequests: { confirm: CONFIRM } };
  if (task.status === "completed") return { ...base, result: finalResult(task) };
  return base;
}

function advance(task) {
  if (task.status !== "working") return;
  if (task.polls++ < 1) return;
  if (task.name === "long_echo" && !task.confirmed) task.status = "input_required";
  else { task.status = "completed"; ran({ name: task.name, arguments: task.arguments, completed: true, taskId: task.id }); }
}

function taskOf(params) {
  const task = tasks.get(params?.taskId);
  if (!task) throw new RpcError(-32602, `Unknown task: ${params?.taskId}`);
  return task;
}

function handle(msg) {
  const meta = msg.params?._meta ?? {};
  const version = meta["io.modelcontextprotocol/protocolVersion"];
  if (version !== VERSION) {
    throw new RpcError(-32022, `Unsupported protocol version: ${version ?? "none (initialize?)"}`,
      { supported: [VERSION], requested: version ?? null }, 400);
  }
  const caps = meta["io.modelcontextprotocol/clientCapabilities"] ?? {};
  const p = msg.params;
  switch (msg.method) {
    case "server/discover":
      return complete({ supportedVersions: [VERSION], capabilities: { tools: {}, extensions: { [TASKS]: {} } }, ttlMs: 0, cacheScope: "private" });
    case "tools/list":
      return complete({ tools: TOOLS, ttlMs: 0, cacheScope: "private" });
    case "tools/call": {
      const tool = TOOLS.find((t) => t.name === p?.name);
      if (!tool) throw new RpcError(-32602, `Tool ${p?.name} not found`);
      ran({ name: tool.name, arguments: p.arguments ?? {}, completed: false });
      if (!caps.extensions?.[TASKS]) return complete(finalResult({ name: tool.name, arguments: p.arguments ?? {} }));
      const now = new Date().toISOString();
      const task = { id: randomUUID(), name: tool.name, arguments: p.arguments ?? {}, status: "working", polls: 0, createdAt: now };
      tasks.set(task.id, task);
      return { resultType: "task", taskId: task.id, status: "working", statusMessage: "The operation is now in progress.",
        createdAt: now, lastUpdatedAt: now, ttlMs: 60000, pollIntervalMs: 100, _meta: INFO };
    }
    case "tasks/get": {
      const task = taskOf(p);
      advance(task);
      return complete(detailed(task));
    }
    case "tasks/update": {
      const task = taskOf(p);
      ran({ name: "tasks/update", taskId: task.id, inputResponses: p.inputResponses ?? null });
      const answer = p.inputResponses?.confirm;
      if (task.status === "input_required" && answer?.action === "accept" && answer.content?.confirm === true) {
        task.confirmed = true;
        task.status = "working";
      }
      return complete({});
    }
    case "tasks/cancel": {
      const task = taskOf(p);
      if (!["completed", "failed", "cancelled"].includes(task.status)) task.status = "cancelled";
      return complete({});
    }
    default:
      throw new RpcError(-32601, "Method not found", undefined, 404);
  }
}

// one JSON-RPC message -> [HTTP status, answer or null for a notification]
function answer(msg) {
  if (msg?.id === undefined) return [202, null];
  try {
    return [200, { jsonrpc: "2.0", id: msg.id, result: handle(msg) }];
  } catch (e) {
    const error = { code: e.code ?? -32603, message: e.message };
    if (e.data !== undefined) error.data = e.data;
    return [e.status ?? 200, { jsonrpc: "2.0", id: msg.id, error }];
  }
}

if (process.argv[2] === "stdio") {
  readline.createInterface({ input: process.stdin }).on("line", (line) => {
    let msg;
    try { msg = JSON.parse(line); } catch {
      return process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }) + "\n");
    }
    const [, reply] = answer(msg);
    if (reply) process.stdout.write(JSON.stringify(reply) + "\n");
  });
} else {
  const server = http.createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/calls") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify(calls));
    }
    if (req.method !== "POST") { res.writeHead(405, { allow: "POST" }); return res.end(); }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    let msg;
    try { msg = JSON.parse(Buffer.concat(chunks).toString("utf8")); } catch {
      res.writeHead(400, { "content-type": "application/json" });
      return res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
    }
    const [status, reply] = answer(msg);
    if (!reply) { res.writeHead(202); return res.end(); }
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(reply));
  });
  server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
    process.stdout.write("listening on port " + server.address().port + "\n");
  });
}
