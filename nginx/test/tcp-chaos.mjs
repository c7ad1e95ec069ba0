// tcp-chaos.mjs: a TCP proxy that disturbs the replies of the server behind
// it, for spec/fleet_spec.lua (a node's Redis connection through it).
//   node tcp-chaos.mjs TARGET_PORT
// Listens on 127.0.0.1 on a port the kernel gives, forwards every
// connection to 127.0.0.1:TARGET_PORT, and prints one JSON line
// {"port": P, "control": C}: C is an HTTP port that sets what happens to the
// server's replies (each chunk the server sends):
//   GET /chaos?cut=F&delay=MS   cut a reply with probability F (0 .. 1): half
//                               of it reaches the client, then both sides of
//                               the connection are closed (the server ran the
//                               command, the client never reads its answer);
//                               delay the others by 0 .. MS ms (in order)
//   GET /calm                   forward as it comes
//   GET /stats                  {"connections": n, "replies": n, "cut": n, "delayed": n}
// Runs until killed.
import http from "node:http";
import net from "node:net";

const target = Number(process.argv[2]);
let mode = { cut: 0, delay: 0 };
const stats = { connections: 0, replies: 0, cut: 0, delayed: 0 };

const proxy = net.createServer((client) => {
  stats.connections += 1;
  const server = net.connect(target, "127.0.0.1");
  // the replies of this connection, delayed but never reordered
  let last = Promise.resolve();
  const close = () => { client.destroy(); server.destroy(); };
  client.on("data", (d) => server.write(d));
  client.on("error", close);
  client.on("close", close);
  server.on("error", close);
  server.on("close", close);
  server.on("data", (chunk) => {
    stats.replies += 1;
    if (Math.random() < mode.cut) {
      stats.cut += 1;
      last = last.then(() => {
        if (!client.destroyed) client.write(chunk.subarray(0, Math.max(1, chunk.length >> 1)));
        close();
      });
      return;
    }
    const wait = Math.floor(Math.random() * mode.delay);
    if (wait > 0) stats.delayed += 1;
    last = last.then(() => new Promise((resolve) => setTimeout(resolve, wait))).then(() => {
      if (!client.destroyed) client.write(chunk);
    });
  });
});

const control = http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  if (u.pathname === "/chaos") {
    mode = { cut: Number(u.searchParams.get("cut") ?? 0), delay: Number(u.searchParams.get("delay") ?? 0) };
  } else if (u.pathname === "/calm") {
    mode = { cut: 0, delay: 0 };
  } else if (u.pathname !== "/stats") {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ...stats, mode }));
});

proxy.listen(0, "127.0.0.1", () => {
  control.listen(0, "127.0.0.1", () => {
    process.stdout.write(JSON.stringify({ port: proxy.address().port, control: control.address().port }) + "\n");
  });
});
