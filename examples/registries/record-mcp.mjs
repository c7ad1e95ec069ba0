#!/usr/bin/env node
// Records the tool registries (tools/list results) of three reference MCP
// servers into mcp-<server>.json, for use as realistic toolgate registries.
//
// Usage:
//   cd examples/registries && npm ci && node record-mcp.mjs
//
// Requires Node 18+. No dependencies beyond the three pinned server packages
// in package.json. Each server is spawned over stdio and spoken to with MCP
// JSON-RPC 2.0 (newline-delimited JSON): initialize ->
// notifications/initialized -> tools/list (following nextCursor) -> close.
//
// Machine-specific paths: the filesystem server is given a fresh temporary
// directory as its only allowed directory, and the memory server a temporary
// MEMORY_FILE_PATH (so nothing is written into node_modules). Should any
// string in a recorded tool (e.g. a description) embed the temporary path, it
// is replaced with the stable placeholder "/sandbox" (see scrubPaths below).
// The recorded tools are otherwise written exactly as the servers returned them.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const PROTOCOL_VERSION = "2025-06-18";
const CLIENT_INFO = { name: "toolgate-recorder", version: "1" };
const REQUEST_TIMEOUT_MS = 30_000;
const EXIT_TIMEOUT_MS = 5_000;
const MAX_PAGES = 100;
const PLACEHOLDER = "/sandbox";

const SERVERS = [
  { server: "filesystem", pkg: "@modelcontextprotocol/server-filesystem", needsDir: true },
  { server: "everything", pkg: "@modelcontextprotocol/server-everything", args: ["stdio"] },
  { server: "memory", pkg: "@modelcontextprotocol/server-memory", needsMemoryFile: true },
];

function fail(msg) {
  const err = new Error(msg);
  err.recorderError = true;
  return err;
}

function locatePackage(pkg) {
  const dir = join(HERE, "node_modules", ...pkg.split("/"));
  const pj = join(dir, "package.json");
  if (!existsSync(pj)) {
    throw fail(`${pkg} is not installed in ${join(HERE, "node_modules")}; run: cd examples/registries && npm ci`);
  }
  const meta = JSON.parse(readFileSync(pj, "utf8"));
  let bin = meta.bin;
  if (typeof bin === "object" && bin !== null) bin = Object.values(bin)[0];
  if (typeof bin !== "string") throw fail(`${pkg}: package.json has no usable "bin" entry`);
  return { version: meta.version, entry: join(dir, bin) };
}

// Minimal newline-delimited JSON-RPC 2.0 client over a child's stdio.
class StdioRpc {
  constructor(label, child) {
    this.label = label;
    this.child = child;
    this.nextId = 1;
    this.pending = new Map();
    this.buf = "";
    this.stderr = "";
    this.closed = false;
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => this.onData(chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      this.stderr = (this.stderr + chunk).slice(-8000);
    });
    child.stdin.on("error", () => {}); // surfaced via 'exit' / timeouts instead
    child.on("error", (e) => this.rejectAll(fail(`${label}: failed to spawn server: ${e.message}`)));
    child.on("exit", (code, signal) => {
      this.closed = true;
      this.rejectAll(
        fail(`${label}: server exited unexpectedly (code ${code}, signal ${signal})${this.stderrTail()}`),
      );
    });
  }

  stderrTail() {
    const t = this.stderr.trim();
    return t ? `\n--- server stderr (tail) ---\n${t.split("\n").slice(-20).join("\n")}` : "";
  }

  rejectAll(err) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(err);
    }
    this.pending.clear();
  }

  onData(chunk) {
    this.buf += chunk;
    let nl;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, nl).replace(/\r$/, "");
      this.buf = this.buf.slice(nl + 1);
      if (line.trim() === "") continue;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        this.rejectAll(fail(`${this.label}: server wrote non-JSON to stdout: ${line.slice(0, 200)}`));
        continue;
      }
      this.onMessage(msg);
    }
  }

  onMessage(msg) {
    if (msg === null || typeof msg !== "object" || msg.jsonrpc !== "2.0") {
      this.rejectAll(fail(`${this.label}: not a JSON-RPC 2.0 message: ${JSON.stringify(msg).slice(0, 200)}`));
      return;
    }
    const isResponse = "id" in msg && !("method" in msg);
    if (isResponse) {
      const p = this.pending.get(msg.id);
      if (!p) return; // unknown / late response: ignore
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error) {
        p.reject(fail(`${this.label}: ${p.method} failed: ${JSON.stringify(msg.error)}`));
      } else {
        p.resolve(msg.result);
      }
      return;
    }
    if ("id" in msg && "method" in msg) {
      // Server->client request (e.g. ping, roots/list). We declared no client
      // capabilities, so answer ping and refuse everything else.
      if (msg.method === "ping") this.send({ jsonrpc: "2.0", id: msg.id, result: {} });
      else this.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
    }
    // Notifications (logging, list_changed, ...) are ignored.
  }

  send(obj) {
    if (this.closed) return;
    this.child.stdin.write(JSON.stringify(obj) + "\n");
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(fail(`${this.label}: server already exited before ${method}${this.stderrTail()}`));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(fail(`${this.label}: timed out after ${REQUEST_TIMEOUT_MS} ms waiting for ${method}${this.stderrTail()}`));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer, method });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method, params) {
    this.send(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params });
  }

  // Close stdin (the stdio transport's shutdown signal), then escalate.
  async close() {
    this.child.removeAllListeners("exit");
    this.rejectAll(fail(`${this.label}: connection closed`));
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    const wait = (ms) => new Promise((r) => setTimeout(r, ms).unref());
    this.child.stdin.end();
    if (await Promise.race([exited.then(() => true), wait(EXIT_TIMEOUT_MS).then(() => false)])) return;
    this.child.kill("SIGTERM");
    if (await Promise.race([exited.then(() => true), wait(EXIT_TIMEOUT_MS).then(() => false)])) return;
    this.child.kill("SIGKILL");
    await exited;
  }
}

// Replace every occurrence of the given machine-specific paths inside any
// string (keys and values) of a JSON value with PLACEHOLDER. Returns the
// number of replacements so we can report them.
function scrubPaths(value, paths) {
  let count = 0;
  const fix = (s) => {
    for (const p of paths) {
      if (p && s.includes(p)) {
        count += s.split(p).length - 1;
        s = s.split(p).join(PLACEHOLDER);
      }
    }
    return s;
  };
  const walk = (v) => {
    if (typeof v === "string") return fix(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") {
      const out = {};
      for (const [k, x] of Object.entries(v)) out[fix(k)] = walk(x);
      return out;
    }
    return v;
  };
  const result = walk(value);
  return { result, count };
}

async function record(spec) {
  const { version, entry } = locatePackage(spec.pkg);
  const tmp = mkdtempSync(join(tmpdir(), `toolgate-${spec.server}-`));
  // Longest first, so a realpath that extends the raw path is replaced whole.
  const tmpPaths = [...new Set([realpathSync(tmp), tmp])].sort((a, b) => b.length - a.length);
  const args = [entry, ...(spec.args ?? [])];
  const env = { ...process.env };
  if (spec.needsDir) args.push(tmp);
  if (spec.needsMemoryFile) env.MEMORY_FILE_PATH = join(tmp, "memory.jsonl");

  const child = spawn(process.execPath, args, { cwd: tmp, env, stdio: ["pipe", "pipe", "pipe"] });
  const rpc = new StdioRpc(spec.server, child);
  try {
    const init = await rpc.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: CLIENT_INFO,
    });
    if (!init || typeof init.protocolVersion !== "string") {
      throw fail(`${spec.server}: initialize result has no protocolVersion: ${JSON.stringify(init).slice(0, 300)}`);
    }
    if (!init.capabilities || !("tools" in init.capabilities)) {
      throw fail(`${spec.server}: server does not advertise the "tools" capability`);
    }
    rpc.notify("notifications/initialized");

    const tools = [];
    let cursor;
    for (let page = 0; ; page++) {
      if (page >= MAX_PAGES) throw fail(`${spec.server}: tools/list pagination exceeded ${MAX_PAGES} pages`);
      const res = await rpc.request("tools/list", cursor === undefined ? {} : { cursor });
      if (!res || !Array.isArray(res.tools)) {
        throw fail(`${spec.server}: tools/list result has no tools array: ${JSON.stringify(res).slice(0, 300)}`);
      }
      tools.push(...res.tools);
      if (typeof res.nextCursor === "string" && res.nextCursor !== "") cursor = res.nextCursor;
      else break;
    }

    const { result: scrubbed, count } = scrubPaths(tools, tmpPaths);
    const out = {
      server: spec.server,
      protocolVersion: init.protocolVersion,
      package: `${spec.pkg}@${version}`,
      tools: scrubbed,
    };
    const file = join(HERE, `mcp-${spec.server}.json`);
    writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
    const note = count ? ` (${count} temp-path occurrence(s) replaced with ${PLACEHOLDER})` : "";
    console.log(`${spec.server}: ${tools.length} tools, protocol ${init.protocolVersion} -> ${file}${note}`);
  } finally {
    await rpc.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

const [major] = process.versions.node.split(".").map(Number);
if (major < 18) {
  console.error(`record-mcp: Node 18+ required (found ${process.version})`);
  process.exit(2);
}

let failed = false;
for (const spec of SERVERS) {
  try {
    await record(spec);
  } catch (e) {
    failed = true;
    console.error(`record-mcp: ERROR: ${e.recorderError ? e.message : e.stack || e}`);
  }
}
process.exit(failed ? 1 : 0);
