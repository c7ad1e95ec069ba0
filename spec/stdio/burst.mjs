// burst.mjs: N tools/call requests written at once to a command (toolgate
// mcp-proxy around echo.mjs), while the server sends a notification before
// each answer: both directions full at the same time.  Prints one JSON
// line: {"answers", "in_order", "notifications", "notes_in_order",
// "errors", "ms"}.  node burst.mjs N COMMAND [ARGS...]
import { spawn } from "node:child_process";
import { onMessages } from "./jsonl.mjs";

const [nText, command, ...args] = process.argv.slice(2);
const n = Number(nText);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const t0 = Date.now();
let answers = 0, inOrder = true, notes = 0, notesInOrder = true, errors = 0;
onMessages(child.stdout, (m) => {
  if (m.method) {
    if (m.params.seq !== notes) notesInOrder = false;
    notes++;
  } else {
    if (m.error) errors++;
    else if (m.id !== answers + 1 || m.result.content[0].text !== "m" + m.id) inOrder = false;
    answers++;
    if (answers === n) child.stdin.end();
  }
});
child.on("exit", (code) => {
  process.stdout.write(JSON.stringify({ answers, in_order: inOrder, notifications: notes,
    notes_in_order: notesInOrder, errors, status: code, ms: Date.now() - t0 }) + "\n");
});
const lines = [];
for (let i = 1; i <= n; i++) {
  lines.push(JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call",
    params: { name: "echo", arguments: { message: "m" + i } } }));
}
child.stdin.write(lines.join("\n") + "\n");
