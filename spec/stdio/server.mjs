// server.mjs: an MCP server built with the SDK, for spec/stdio_spec.lua.
// node server.mjs [MODE]; the environment variable DESCRIPTION is the
// description of its tool "echo" (a rug pull: the description changes
// between runs); PAGE_SIZE > 0 splits tools/list into pages of that many
// tools (nextCursor).  MODE:
//   (none)   serves echo, add and roots (which asks the client for its
//            roots, roots/list, while the call waits, and answers with them)
//   exit     exits (status 3) on the first tools/call, without answering
//   hang     never answers tools/call, ignores SIGTERM and outlives its input
//   garbage  answers each tools/call with a line that is not JSON, then
//            exits (status 4)
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const mode = process.argv[2] || "";
const server = new McpServer({ name: "spec-echo", version: "1.0.0" });
server.registerTool(
  "echo",
  {
    description: process.env.DESCRIPTION || "Echoes the message back.",
    inputSchema: { message: z.string() },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ message }) => {
    if (mode === "exit") process.exit(3);
    if (mode === "hang") return new Promise(() => {});
    if (mode === "garbage") {
      process.stdout.write("this is not JSON\n", () => process.exit(4));
      return new Promise(() => {});
    }
    return { content: [{ type: "text", text: message }] };
  },
);
server.registerTool(
  "add",
  {
    description: "Adds two numbers.",
    inputSchema: { a: z.number(), b: z.number() },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);
server.registerTool(
  "roots",
  {
    description: "Lists the client's roots.",
    inputSchema: {},
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async () => {
    const { roots } = await server.server.listRoots();
    return { content: [{ type: "text", text: roots.map((r) => r.uri).join(",") }] };
  },
);
if (mode === "hang") {
  process.on("SIGTERM", () => {});
  setInterval(() => {}, 1000); // alive after its input closes, as a hung server is
}
await server.connect(new StdioServerTransport());
