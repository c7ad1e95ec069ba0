// stdio_rtt.mjs: tools/call round trips, one at a time, over a command's
// stdio (an MCP server, or toolgate mcp-proxy around it), timed from the
// write of the request to the read of its answer.  Prints one line:
// NAME p50_us=.. p90_us=.. p99_us=.. max_us=.. n=..
// node bench/stdio_rtt.mjs NAME N COMMAND [ARGS...]  (the first N/10 are warm-up)
import { spawn } from "node:child_process";
import { onMessages } from "../spec/stdio/jsonl.mjs";

const [name, nText, command, ...args] = process.argv.slice(2);
const n = Number(nText);
const warm = Math.floor(n / 10);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
let id = 0, t0 = 0n;
const times = [];
const send = () => {
  id++;
  t0 = process.hrtime.bigint();
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call",
    params: { name: "echo", arguments: { message: "m" + id } } }) + "\n");
};
onMessages(child.stdout, (m) => {
  if (m.id !== id) return;
  if (m.error) throw new Error(name + ": " + JSON.stringify(m.error));
  const us = Number(process.hrtime.bigint() - t0) / 1000;
  if (id > warm) times.push(us);
  if (id < n + warm) send();
  else {
    times.sort((a, b) => a - b);
    const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(1);
    console.log(`${name} p50_us=${q(0.5)} p90_us=${q(0.9)} p99_us=${q(0.99)} max_us=${times[times.length - 1].toFixed(1)} n=${times.length}`);
    child.stdin.end();
  }
});
send();
