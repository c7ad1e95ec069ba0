// client2026.mjs: an MCP client for spec/mcp2026_spec.lua, over Streamable
// HTTP or stdio, in one of five modes:
//   legacy | auto | pin   @modelcontextprotocol/client 2.4.0 with that
//                         versionNegotiation (pin = { pin: "2026-07-28" })
//   v1                    @modelcontextprotocol/sdk 1.32.2 (2025-11-25 at most)
//   raw                   no SDK: JSON-RPC written by the steps (tasks, headers
//                         that disagree with the body), POSTed or sent as lines
//   node client2026.mjs MODE STEPS_JSON URL
//   node client2026.mjs MODE STEPS_JSON -- COMMAND ARGS...   (stdio; the
//                         command runs with this process's environment)
// One JSON line is printed per step, {"ok": ...} or {"error": {"code",
// "message", "data"}}, after a first line {"ok": {"era", "version",
// "server"}} (raw: {"ok": {"era": "raw"}}); a connect that fails prints
// {"fatal": ...} and exits 1.  Steps:
//   {"op":"list"}                              tools/list (every page)
//   {"op":"call","name","arguments","answer"}  tools/call; multi round-trip
//       questions (2026 inputRequests or 2025 elicitation/create) are answered
//       with "answer" (default {"action":"accept","content":{"confirm":true}})
//       and their messages listed in the output's "asked"
//   {"op":"call_manual","name","arguments","inputResponses","requestState"}
//       tools/call without auto-fulfilment (modern modes): the answer is the
//       server's, input_required included, so a spec can retry with other
//       arguments; "{{requestState}}" is the requestState of the last
//       input_required answer; a client with a call_manual step fulfils
//       nothing itself
//   {"op":"listen","ms","touch"}               subscriptions/listen
//       {toolsListChanged: true} (legacy and v1: the notifications the
//       connection gets anyway) for ms; "touch" is fetched (a URL) or signalled
//       (SIGUSR1 to the pid in the file after "pidfile:") once listening;
//       the output lists the notifications received
//   {"op":"raw","body","headers","until"}      (raw mode) body (a JSON value,
//       or a string sent as is) POSTed to URL with headers and the Accept
//       MCP needs: {"status", "type", "json" | "body"(, "messages" for SSE)};
//       over stdio body is written as one line and the answer with its id
//       (or what arrived within 5 s) is printed: {"messages": [...]}.
//       "{{taskId}}" in body and headers is the taskId of the last task created (a
//       CreateTaskResult an earlier step got); with "until": STATUS the step
//       is sent again (at most 20 times, 0.1 s apart) until its answer's
//       result has that status or is an error
import fs from "node:fs";
import { spawn } from "node:child_process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as Stdio1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as Http1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, stepsText, ...target] = process.argv.slice(2);
const steps = JSON.parse(stepsText || "[]");
const stdio = target[0] === "--" ? { command: target[1], args: target.slice(2), env: process.env } : null;
const url = stdio ? null : target[0];
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errorOf = (e) => ({ error: { code: e?.code ?? null, message: String(e?.message ?? e), data: e?.data ?? null } });
const DEFAULT_ANSWER = { action: "accept", content: { confirm: true } };

let current = null; // the step being run: its answer, and the questions asked during it
const notifications = [];

async function touch(what) {
  if (!what) return;
  if (what.startsWith("pidfile:")) process.kill(Number(fs.readFileSync(what.slice(8), "utf8")), "SIGUSR1");
  else await (await fetch(what)).text();
}

function elicit(req) {
  const s = current ?? {};
  (s.asked ??= []).push(req.params?.message ?? null);
  return s.answer ?? DEFAULT_ANSWER;
}

async function connectSdk() {
  if (mode === "v1") {
    const client = new Client1({ name: "toolgate-spec-v1", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => elicit(req));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async (n) => { notifications.push(n); });
    const transport = stdio ? new Stdio1(stdio) : new Http1(new URL(url));
    await client.connect(transport);
    out({ ok: { era: "legacy", version: transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null,
      server: client.getServerVersion() ?? null } });
    return client;
  }
  const negotiation = { legacy: undefined, auto: { mode: "auto" }, pin: { mode: { pin: "2026-07-28" } } };
  if (!(mode in negotiation)) throw new Error("unknown mode " + mode);
  const manual = steps.some((s) => s.op === "call_manual");
  const client = new Client({ name: "toolgate-spec-" + mode, version: "1.0.0" }, {
    capabilities: { elicitation: {} },
    ...(negotiation[mode] && { versionNegotiation: negotiation[mode] }),
    ...(manual && { inputRequired: { autoFulfill: false } }),
  });
  client.setRequestHandler("elicitation/create", async (req) => elicit(req));
  client.setNotificationHandler("notifications/tools/list_changed", async (n) => { notifications.push(n); });
  await client.connect(stdio ? new StdioClientTransport(stdio) : new StreamableHTTPClientTransport(new URL(url)));
  out({ ok: { era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion() ?? null,
    server: client.getServerVersion?.() ?? null } });
  return client;
}

async function listen(client, s) {
  notifications.length = 0;
  let sub = null;
  if (mode !== "v1" && client.getProtocolEra() === "modern") sub = await client.listen({ toolsListChanged: true });
  await touch(s.touch);
  await sleep(s.ms ?? 1000);
  if (sub) await sub.close();
  return { honored: sub ? sub.honoredFilter : null, notifications: [...notifications] };
}

async function runSdk(client) {
  let requestState = null; // the last one an input_required answer gave
  for (const s of steps) {
    current = s;
    try {
      let r;
      if (s.op === "list") r = await client.listTools();
      else if (s.op === "call") r = await client.callTool({ name: s.name, arguments: s.arguments ?? {} });
      else if (s.op === "call_manual") {
        const params = { name: s.name, arguments: s.arguments ?? {} };
        if (s.inputResponses) params.inputResponses = s.inputResponses;
        if (s.requestState !== undefined) params.requestState = s.requestState === "{{requestState}}" ? requestState : s.requestState;
        // a 2025 connection has no input_required: its questions come as elicitation/create
        r = await (mode === "v1" ? client.callTool(params) : client.callTool(params, { allowInputRequired: true }));
        if (typeof r?.requestState === "string") requestState = r.requestState;
      } else if (s.op === "listen") r = await listen(client, s);
      else throw new Error("unknown step " + s.op);
      out(s.asked ? { ok: r, asked: s.asked } : { ok: r });
    } catch (e) {
      out(s.asked ? { ...errorOf(e), asked: s.asked } : errorOf(e));
    }
  }
  current = null;
}

// SSE text -> the JSON messages its data lines carry
function sseMessages(text) {
  const messages = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    if (data) try { messages.push(JSON.parse(data)); } catch { messages.push(data); }
  }
  return messages;
}

async function rawHttp(s) {
  const body = typeof s.body === "string" ? s.body : JSON.stringify(s.body);
  const r = await fetch(url, { method: "POST", body,
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(s.headers ?? {}) },
    signal: AbortSignal.timeout(s.timeoutMs ?? 10000) });
  const type = r.headers.get("content-type");
  const text = await r.text();
  const res = { status: r.status, type };
  if (type?.includes("json")) try { res.json = JSON.parse(text); } catch { res.body = text; }
  else res.body = text;
  if (type?.includes("event-stream")) res.messages = sseMessages(text);
  return res;
}

function rawStdio() {
  const child = spawn(stdio.command, stdio.args, { env: process.env, stdio: ["pipe", "pipe", "inherit"] });
  const received = [];
  let waiter = null;
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      try { received.push(JSON.parse(line)); } catch { received.push(line); }
      waiter?.();
    }
  });
  return {
    async send(s) {
      const body = typeof s.body === "string" ? s.body : JSON.stringify(s.body);
      const id = typeof s.body === "object" ? s.body?.id : undefined;
      const from = received.length;
      child.stdin.write(body + "\n");
      const deadline = Date.now() + (s.timeoutMs ?? 5000);
      while (Date.now() < deadline) {
        if (id !== undefined && received.slice(from).some((m) => m?.id === id)) break;
        await Promise.race([new Promise((r) => { waiter = r; }), sleep(deadline - Date.now())]);
      }
      return { messages: received.slice(from) };
    },
    close() { child.stdin.end(); child.kill(); },
  };
}

// the JSON-RPC answers in what a raw step got
const answersOf = (r) => r.messages ?? (r.json ? [r.json] : []);

async function runRaw() {
  out({ ok: { era: "raw" } });
  const pipe = stdio ? rawStdio() : null;
  let taskId = null;
  for (const s of steps) {
    try {
      if (s.op !== "raw") throw new Error("raw mode runs raw steps only, not " + s.op);
      const body = typeof s.body === "string" ? s.body : JSON.stringify(s.body);
      const fill = (text) => (taskId ? text.replaceAll("{{taskId}}", taskId) : text);
      const step = { ...s, body: fill(body), headers: JSON.parse(fill(JSON.stringify(s.headers ?? {}))) };
      if (typeof s.body === "object") step.body = JSON.parse(step.body);
      let r;
      for (let i = 0; i < (s.until ? 20 : 1); i++) {
        if (i > 0) await sleep(100);
        r = pipe ? await pipe.send(step) : await rawHttp(step);
        if (!s.until || answersOf(r).some((m) => m?.result?.status === s.until || m?.error)) break;
      }
      for (const m of answersOf(r)) taskId = m?.result?.resultType === "task" ? m.result.taskId : taskId;
      out({ ok: r });
    } catch (e) {
      out(errorOf(e));
    }
  }
  pipe?.close();
}

try {
  if (mode === "raw") await runRaw();
  else {
    const client = await connectSdk();
    await runSdk(client);
    await client.close();
  }
} catch (e) {
  out({ fatal: String(e?.stack ?? e), code: e?.code ?? null });
  process.exitCode = 1;
}
process.exit();
