// echo.mjs: a bare newline-delimited JSON-RPC server (no SDK: nothing
// between the pipe and the answer) for the burst test and the relay
// benchmark.  Each tools/call of "echo" is answered with its message;
// with NOTIFY=1 a notifications/message with a sequence number comes
// before each answer.  Any other request gets an empty result.
import { createInterface } from "node:readline";

const notify = process.env.NOTIFY === "1";
let seq = 0;
const rl = createInterface({ input: process.stdin });
const out = [];
let scheduled = false;
const send = (m) => {
  out.push(JSON.stringify(m));
  if (!scheduled) {
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      process.stdout.write(out.join("\n") + "\n");
      out.length = 0;
    });
  }
};
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (notify) send({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", seq: seq++, data: "x" } });
  if (m.method === "tools/call") send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: m.params.arguments.message }] } });
  else send({ jsonrpc: "2.0", id: m.id, result: {} });
});
