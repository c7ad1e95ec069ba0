// jsonl.mjs: each newline-delimited JSON message of a readable stream, to
// onMessage, in order (burst.mjs, bench/stdio_rtt.mjs).
export function onMessages(stream, onMessage) {
  let buf = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      onMessage(JSON.parse(line));
    }
  });
}
