// make-fixtures.mjs -- the call shapes of the real SDKs, as fixtures for
// toolgate's call decoding (spec/calls_spec.lua), built by the SDKs' own
// code, and a check that toolgate's member lists match the SDKs' types.
//
//   npm ci --prefix spec/sdk && node spec/sdk/make-fixtures.mjs [OUTDIR]
//
// Writes OUTDIR/sdk.jsonl (one call line per fixture, as toolgate check
// reads it) and OUTDIR/sdk.expect.jsonl (what toolgate must make of the
// line of the same number: its shape and calls, or the refusal's code and
// a part of its message); OUTDIR defaults to spec/data/calls.
//
// Where the objects come from: the OpenAI chat completion is what the
// SDK's ChatCompletionStream assembles from chunks; the Responses API
// response what its ResponseStream assembles from events; the Anthropic
// message what its MessageStream assembles from events (tool input from
// input_json_delta pieces); the MCP requests are what the MCP SDK's Client
// sends to a Server over an in-memory transport.  The rest are parts of
// those, and hostile variants of them (each says what it changes).
//
// Types vanish at run time, so the script reads them from the SDKs' .d.ts
// files: every call object of a valid fixture may only have members its
// type declares, and toolgate's member lists and item/block type lists
// (core/tg_call.c) must be exactly the SDKs' (MCP: the SDK's zod schemas).
// An SDK that grows a member or an item type fails here, saying which.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { ChatCompletionStream } from "openai/lib/ChatCompletionStream";
import { ResponseStream } from "openai/lib/responses/ResponseStream";
import { MessageStream } from "@anthropic-ai/sdk/lib/MessageStream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  CallToolRequestParamsSchema,
  CallToolRequestSchema,
  JSONRPCRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const outdir = process.argv[2] || path.join(root, "spec/data/calls");
const modules = path.join(here, "node_modules");
const problems = [];

// ---- the SDKs' types, read from their .d.ts files --------------------------

const dts = (p) => fs.readFileSync(path.join(modules, p), "utf8");
const OPENAI_CHAT = dts("openai/resources/chat/completions/completions.d.ts");
const OPENAI_RESPONSES = dts("openai/resources/responses/responses.d.ts");
const ANTHROPIC = dts("@anthropic-ai/sdk/resources/messages/messages.d.ts");
const ANTHROPIC_BETA = dts("@anthropic-ai/sdk/resources/beta/messages/messages.d.ts");

// The body of `export interface NAME [extends P] {` (or, for "NS.NAME", of
// `interface NAME {` inside `export declare namespace NS {`), up to its
// closing brace, and the interface it extends (or null).
function body(text, name) {
  let scope = text, indent = "";
  if (name.includes(".")) {
    const [ns, inner] = name.split(".");
    const at = text.indexOf(`export declare namespace ${ns} {\n`);
    if (at < 0) throw new Error(`no namespace ${ns}`);
    scope = text.slice(at, text.indexOf("\n}\n", at));
    name = inner;
    indent = "    ";
  }
  const open = new RegExp(`\\n${indent}${indent ? "" : "export "}interface ${name}(?: extends ([\\w.]+))? \\{\\n`);
  const m = open.exec(scope);
  if (!m) throw new Error(`no interface ${name}`);
  const from = m.index + m[0].length;
  return { text: scope.slice(from, scope.indexOf(`\n${indent}}\n`, from)), parent: m[1] || null };
}

// The members an interface declares (one level in; with those it extends).
function members(text, name) {
  const indent = name.includes(".") ? "        " : "    ";
  const re = new RegExp(`^${indent}([A-Za-z_$][\\w$]*)\\??:`, "gm");
  const b = body(text, name);
  const own = [...b.text.matchAll(re)].map((m) => m[1]);
  return b.parent ? [...new Set([...own, ...members(text, b.parent)])] : own;
}

// The "type" literal of each interface in `export type NAME = A | B | ...;`.
function unionTypes(text, name) {
  const m = text.match(new RegExp(`\\nexport type ${name} = ([^;]+);`));
  if (!m) throw new Error(`no union ${name}`);
  const literal = (t) => {
    const b = body(text, t), lit = b.text.match(/^ +type: '([^']+)';/m);
    if (lit) return lit[1];
    if (b.parent) return literal(b.parent);
    throw new Error(`${t} has no type literal`);
  };
  return m[1].split("|").map((t) => literal(t.trim()));
}

// ---- toolgate's lists, read from core/tg_call.c ----------------------------

const TG_CALL = fs.readFileSync(path.join(root, "core/tg_call.c"), "utf8");
function cList(name) {
  // a NULL-terminated list of strings, or a table of KEY("...") (the member lists)
  const m = TG_CALL.match(
    new RegExp(`static const (?:char \\*const|member_key) ${name}\\[\\w*\\] = \\{([^}]*)\\}`));
  if (!m) throw new Error(`core/tg_call.c has no list ${name}`);
  return [...m[1].matchAll(/"([^"]*)"/g)].map((x) => x[1]);
}

function sameSet(what, sdk, toolgate) {
  const a = new Set(sdk), b = new Set(toolgate);
  const missing = [...a].filter((x) => !b.has(x)), extra = [...b].filter((x) => !a.has(x));
  if (missing.length) problems.push(`${what}: the SDK has ${missing.join(", ")}, toolgate does not`);
  if (extra.length) problems.push(`${what}: toolgate has ${extra.join(", ")}, the SDK does not`);
}

const union = (...lists) => [...new Set(lists.flat())];
const TYPES = {
  openai: members(OPENAI_CHAT, "ChatCompletionMessageFunctionToolCall"),
  // ParsedFunction: the Function with the parse helpers' parsed_arguments
  openaiFunction: members(OPENAI_CHAT, "ParsedFunction"),
  // what ResponseStream and responses.parse() return
  functionCall: members(OPENAI_RESPONSES, "ParsedResponseFunctionToolCall"),
  toolUse: union(members(ANTHROPIC, "ToolUseBlock"), members(ANTHROPIC, "ToolUseBlockParam"),
    members(ANTHROPIC_BETA, "BetaToolUseBlock")),
  mcp: Object.keys(JSONRPCRequestSchema.shape),
  mcpParams: Object.keys(CallToolRequestParamsSchema.shape),
};
sameSet("OpenAI tool call members", TYPES.openai, cList("OPENAI_MEMBERS"));
sameSet("OpenAI function members", TYPES.openaiFunction, cList("OPENAI_FUNCTION_MEMBERS"));
sameSet("Responses function_call members", TYPES.functionCall, cList("FUNCTION_CALL_MEMBERS"));
sameSet("Anthropic tool_use members", TYPES.toolUse, cList("TOOL_USE_MEMBERS"));
sameSet("MCP request members", TYPES.mcp, cList("MCP_MEMBERS"));
sameSet("MCP tools/call params members", TYPES.mcpParams, cList("MCP_PARAMS_MEMBERS"));
sameSet("Responses output item types", unionTypes(OPENAI_RESPONSES, "ResponseOutputItem"),
  ["function_call", ...cList("RESPONSE_SKIP"), ...cList("RESPONSE_HOSTED"), ...cList("RESPONSE_CLIENT_OTHER")]);
sameSet("Anthropic content block types",
  union(unionTypes(ANTHROPIC, "ContentBlock"), unionTypes(ANTHROPIC_BETA, "BetaContentBlock")),
  ["tool_use", ...cList("MESSAGE_SKIP"), ...cList("MESSAGE_HOSTED")]);

// A valid fixture's call object has only its type's members.
function typed(kind, obj) {
  for (const k of Object.keys(obj)) {
    if (!TYPES[kind].includes(k)) problems.push(`a ${kind} fixture has "${k}", which its SDK type lacks`);
  }
  if (kind === "openai") typed("openaiFunction", obj.function);
  if (kind === "mcp") typed("mcpParams", obj.params);
  return obj;
}

// ---- objects made by the SDKs' code ------------------------------------------

const readable = (events) => new ReadableStream({
  start(c) {
    for (const e of events) c.enqueue(new TextEncoder().encode(JSON.stringify(e) + "\n"));
    c.close();
  },
});

// A chat.completion as ChatCompletionStream assembles it from chunks: each
// call's arguments arrive in pieces.
async function chatCompletion(id, calls, text) {
  const base = { id, object: "chat.completion.chunk", created: 1767225600, model: "gpt-4o-2024-08-06",
    system_fingerprint: "fp_toolgate", service_tier: "default" };
  const chunk = (delta, finish = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null,
    finish_reason: finish }] });
  const chunks = [chunk({ role: "assistant", content: text === undefined ? null : "", refusal: null })];
  if (text !== undefined) chunks.push(chunk({ content: text }));
  calls.forEach(([name, args], i) => {
    const json = JSON.stringify(args), cut = Math.floor(json.length / 2);
    chunks.push(chunk({ tool_calls: [{ index: i, id: `call_${id}_${i}`, type: "function",
      function: { name, arguments: "" } }] }));
    chunks.push(chunk({ tool_calls: [{ index: i, function: { arguments: json.slice(0, cut) } }] }));
    chunks.push(chunk({ tool_calls: [{ index: i, function: { arguments: json.slice(cut) } }] }));
  });
  chunks.push(chunk({}, calls.length ? "tool_calls" : "stop"));
  const stream = ChatCompletionStream.fromReadableStream(readable(chunks));
  return { completion: await stream.finalChatCompletion(), chunk: chunks[2] };
}

// A Responses API response as ResponseStream assembles it from events.
async function response(id, items) {
  let seq = 0;
  const ev = (type, rest) => ({ type, sequence_number: seq++, ...rest });
  const shell = { id, object: "response", created_at: 1767225600, status: "in_progress", error: null,
    incomplete_details: null, instructions: null, max_output_tokens: null, model: "gpt-5-2025-08-07",
    output: [], parallel_tool_calls: true, previous_response_id: null, reasoning: { effort: "low",
      summary: null }, store: true, temperature: 1, text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: "auto", tools: [], top_p: 1, truncation: "disabled", usage: null, user: null, metadata: {} };
  const events = [ev("response.created", { response: shell })];
  items.forEach((item, i) => {
    if (item.type === "function_call") {
      const args = item.arguments;
      events.push(ev("response.output_item.added", { output_index: i,
        item: { ...item, arguments: "", status: "in_progress" } }));
      events.push(ev("response.function_call_arguments.delta", { output_index: i, item_id: item.id,
        delta: args.slice(0, 5) }));
      events.push(ev("response.function_call_arguments.delta", { output_index: i, item_id: item.id,
        delta: args.slice(5) }));
      events.push(ev("response.function_call_arguments.done", { output_index: i, item_id: item.id,
        arguments: args, name: item.name }));
    } else {
      events.push(ev("response.output_item.added", { output_index: i, item }));
    }
    events.push(ev("response.output_item.done", { output_index: i, item }));
  });
  events.push(ev("response.completed", { response: { ...shell, status: "completed", output: items,
    usage: { input_tokens: 20, input_tokens_details: { cached_tokens: 0 }, output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 8 }, total_tokens: 50 } } }));
  return ResponseStream.fromReadableStream(readable(events)).finalResponse();
}

// An Anthropic message as MessageStream assembles it from events: text
// deltas, and tool input from input_json_delta pieces.
async function message(id, blocks) {
  const events = [{ type: "message_start", message: { id, type: "message", role: "assistant",
    model: "claude-sonnet-4-5-20250929", content: [], stop_reason: null, stop_sequence: null,
    stop_details: null, container: null, diagnostics: null,
    usage: { input_tokens: 25, output_tokens: 1, cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0, server_tool_use: null, service_tier: "standard" } } }];
  let tools = 0;
  blocks.forEach((b, i) => {
    if (b.type === "text") {
      events.push({ type: "content_block_start", index: i, content_block: { type: "text", text: "",
        citations: null } });
      events.push({ type: "content_block_delta", index: i, delta: { type: "text_delta", text: b.text } });
    } else if (b.type === "thinking") {
      events.push({ type: "content_block_start", index: i, content_block: { type: "thinking",
        thinking: "", signature: "" } });
      events.push({ type: "content_block_delta", index: i, delta: { type: "thinking_delta",
        thinking: b.thinking } });
      events.push({ type: "content_block_delta", index: i, delta: { type: "signature_delta",
        signature: "c2lnbmF0dXJl" } });
    } else {
      const { input, ...start } = b;
      const json = JSON.stringify(input), cut = Math.floor(json.length / 2);
      tools++;
      events.push({ type: "content_block_start", index: i, content_block: { ...start, input: {} } });
      events.push({ type: "content_block_delta", index: i, delta: { type: "input_json_delta",
        partial_json: json.slice(0, cut) } });
      events.push({ type: "content_block_delta", index: i, delta: { type: "input_json_delta",
        partial_json: json.slice(cut) } });
    }
    events.push({ type: "content_block_stop", index: i });
  });
  events.push({ type: "message_delta", delta: { stop_reason: tools ? "tool_use" : "end_turn",
    stop_sequence: null, stop_details: null, container: null }, usage: { output_tokens: 40 } });
  events.push({ type: "message_stop" });
  return MessageStream.fromReadableStream(readable(events)).finalMessage();
}

// The JSON-RPC requests the MCP SDK's Client sends for these calls (and
// for a tools/list), to a Server over an in-memory transport.
async function mcpRequests(calls) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = new Server({ name: "weather", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
  server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "ok" }] }));
  const sent = [];
  const send = clientSide.send.bind(clientSide);
  clientSide.send = (msg, opts) => {
    sent.push(JSON.parse(JSON.stringify(msg)));
    return send(msg, opts);
  };
  const client = new Client({ name: "toolgate-fixtures", version: "1.0.0" });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  for (const [name, args] of calls) await client.callTool({ name, arguments: args });
  await client.listTools();
  await client.close();
  const requests = sent.filter((m) => m.method === "tools/call" || m.method === "tools/list");
  for (const r of requests) JSONRPCRequestSchema.parse(r); // strict: no member the SDK does not know
  return requests;
}

// ---- the fixtures -------------------------------------------------------------

const lines = [], expects = [];
const clone = (v) => JSON.parse(JSON.stringify(v));
function valid(name, line, format, calls) {
  lines.push(line);
  expects.push({ case: name, format, calls: calls.map(([server, tool, args]) => ({ server, tool,
    arguments: args })) });
}
function refused(name, line, code, message) {
  lines.push(line);
  expects.push({ case: name, code, message });
}

const OSLO = { city: "Oslo" }, PARIS = { city: "Paris", unit: "celsius" }, TOKYO = { tz: "Asia/Tokyo" };

const chat = await chatCompletion("chatcmpl-toolgate1", [["get_weather", OSLO], ["get_time", TOKYO]]);
const completion = chat.completion, msg = completion.choices[0].message;
msg.tool_calls.forEach((c) => typed("openai", c));
valid("openai-chat: a chat.completion with two tool calls", completion, "openai-chat",
  [[null, "get_weather", OSLO], [null, "get_time", TOKYO]]);
valid("openai-message: its message", msg, "openai-message",
  [[null, "get_weather", OSLO], [null, "get_time", TOKYO]]);
valid("openai-tool-calls: its tool_calls", msg.tool_calls, "openai-tool-calls",
  [[null, "get_weather", OSLO], [null, "get_time", TOKYO]]);
valid("openai: one tool call", msg.tool_calls[0], "openai", [[null, "get_weather", OSLO]]);
const text = await chatCompletion("chatcmpl-toolgate2", [], "It is sunny in Oslo.");
valid("openai-chat: text only, no call", text.completion, "openai-chat", []);
refused("openai: a stream chunk is part of a call", chat.chunk, "BAD_CALL", "chunk");
refused("openai: a tool call with a stream chunk's index", { index: 0, ...msg.tool_calls[0] }, "BAD_CALL",
  "unknown member \"index\" in an OpenAI tool call");
{
  const c = clone(completion);
  c.choices[0].message.tool_calls[1].function.strict = true;
  refused("openai-chat: a function with a member its type lacks", c, "BAD_CALL",
    "unknown member \"strict\" in choices[0].message.tool_calls[1]");
  const p = clone(msg.tool_calls[0]);
  p.function.parsed_arguments = PARIS;
  refused("openai: parsed_arguments that are not the arguments", p, "BAD_CALL", "refusing to guess");
  const m = clone(msg.tool_calls[0]);
  delete m.function.arguments;
  refused("openai: a tool call without arguments", m, "BAD_CALL", "must have \"arguments\"");
  const cut = clone(msg.tool_calls[0]);
  cut.function.arguments = cut.function.arguments.slice(0, -1);
  refused("openai: arguments that are not JSON", cut, "BAD_ARGUMENTS", "not valid JSON");
}

const resp = await response("resp_toolgate1", [
  { type: "reasoning", id: "rs_1", summary: [], encrypted_content: null },
  { type: "message", id: "msg_1", role: "assistant", status: "completed",
    content: [{ type: "output_text", text: "Let me check.", annotations: [], logprobs: [] }] },
  typed("functionCall", { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather",
    arguments: JSON.stringify(PARIS), status: "completed" }),
  typed("functionCall", { type: "function_call", id: "fc_2", call_id: "call_2", name: "get_time",
    namespace: "weather", arguments: JSON.stringify(TOKYO), status: "completed" }),
]);
valid("openai-responses: a response with reasoning, a message and two function calls", resp,
  "openai-responses", [[null, "get_weather", PARIS], ["weather", "get_time", TOKYO]]);
valid("openai-function-call: one output item", resp.output[2], "openai-function-call",
  [[null, "get_weather", PARIS]]);
{
  const hosted = await response("resp_toolgate2", [
    { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "Oslo" } },
    resp.output[2],
  ]);
  refused("openai-responses: a web_search_call is a call OpenAI runs", hosted, "UNSUPPORTED_CALL",
    "output[0] is of type web_search_call");
  const r = clone(resp);
  r.output[3].arguments = "{\"tz\":";
  refused("openai-responses: arguments that are not JSON", r, "BAD_ARGUMENTS", "not valid JSON");
  const u = clone(resp);
  u.output.push({ type: "hologram_call", id: "x" });
  refused("openai-responses: an item type the SDK does not have", u, "BAD_CALL",
    "unknown type \"hologram_call\"");
  const n = clone(resp.output[2]);
  delete n.call_id;
  refused("openai-function-call: without call_id", n, "BAD_CALL", "call_id");
}

const anth = await message("msg_toolgate1", [
  { type: "thinking", thinking: "The user wants the weather." },
  { type: "text", text: "I'll look that up." },
  typed("toolUse", { type: "tool_use", id: "toolu_1", name: "get_weather", input: PARIS,
    caller: { type: "direct" } }),
  typed("toolUse", { type: "tool_use", id: "toolu_2", name: "get_time", input: TOKYO,
    caller: { type: "direct" } }),
]);
valid("anthropic-message: thinking, text and two tool_use blocks", anth, "anthropic-message",
  [[null, "get_weather", PARIS], [null, "get_time", TOKYO]]);
valid("anthropic: one tool_use block", anth.content[2], "anthropic", [[null, "get_weather", PARIS]]);
valid("anthropic-message: text only, no call", await message("msg_toolgate2",
  [{ type: "text", text: "Sunny." }]), "anthropic-message", []);
{
  const server = await message("msg_toolgate3", [
    { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "Oslo weather" },
      caller: { type: "direct" } },
    anth.content[2],
  ]);
  refused("anthropic-message: a server_tool_use is a call Anthropic runs", server, "UNSUPPORTED_CALL",
    "content[0] is of type server_tool_use");
  refused("anthropic: an mcp_tool_use block (the issue's line)", { type: "mcp_tool_use", id: "mcptoolu_1",
    name: "get-resource-links", server_name: "everything", input: { count: 999 } }, "UNSUPPORTED_CALL",
    "mcp_tool_use");
  refused("anthropic: tool_use with a native call's arguments", { ...anth.content[2], arguments: OSLO },
    "BAD_CALL", "refusing to guess");
  const x = clone(anth.content[2]);
  delete x.input;
  refused("anthropic: tool_use without input", x, "BAD_CALL", "must have \"input\"");
  const m = clone(anth);
  m.content[3].server_name = "weather";
  refused("anthropic-message: a tool_use block with a member its type lacks", m, "BAD_CALL",
    "unknown member \"server_name\" in content[3]");
  const b = clone(anth);
  b.content.splice(1, 0, { type: "image", source: { type: "url", url: "https://example.com/a.png" } });
  refused("anthropic-message: a block type a response does not have", b, "BAD_CALL",
    "unknown type \"image\"");
}

const rpc = await mcpRequests([["get_weather", OSLO], ["get_time", TOKYO]]);
rpc.slice(0, 2).forEach((r) => typed("mcp", r));
valid("mcp: a tools/call request", rpc[0], "mcp", [[null, "get_weather", OSLO]]);
valid("mcp-batch: two tools/call requests", rpc.slice(0, 2), "mcp-batch",
  [[null, "get_weather", OSLO], [null, "get_time", TOKYO]]);
refused("mcp-batch: a tools/list request among them", rpc, "BAD_CALL",
  "[2] (an MCP request) must have \"method\": \"tools/call\"");
{
  const r = clone(rpc[0]);
  r.params.args = r.params.arguments;
  delete r.params.arguments;
  refused("mcp: params with a member the SDK does not know", r, "BAD_CALL",
    "unknown member \"args\" in an MCP request");
}

// the lines: a LangChain ToolCall, and one line in two formats
refused("a LangChain tool call is no native call", { name: "get_weather", args: OSLO, id: "call_9",
  type: "tool_call" }, "BAD_CALL", "unknown member \"args\" in a native call");
refused("an OpenAI tool call and an MCP request in one line", { ...msg.tool_calls[0], ...rpc[1] },
  "BAD_CALL", "members of both an OpenAI tool call (\"function\") and an MCP request");

if (problems.length) {
  console.error("make-fixtures: toolgate and the SDKs disagree:\n  " + problems.join("\n  "));
  process.exit(1);
}
fs.mkdirSync(outdir, { recursive: true });
const jsonl = (list) => list.map((v) => JSON.stringify(v)).join("\n") + "\n";
fs.writeFileSync(path.join(outdir, "sdk.jsonl"), jsonl(lines));
fs.writeFileSync(path.join(outdir, "sdk.expect.jsonl"), jsonl(expects));
console.log(`make-fixtures: ${lines.length} fixtures in ${outdir}`);
