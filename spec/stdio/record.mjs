// record.mjs: the tools/list of a stdio MCP server, through the SDK's
// client, as a toolgate registry ({"server": NAME, "tools": [...]}), for
// spec/stdio_spec.lua.  node record.mjs NAME OUT_FILE COMMAND [ARGS...]
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [name, file, command, ...args] = process.argv.slice(2);
const client = new Client({ name: "toolgate-spec-recorder", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
const { tools } = await client.listTools();
writeFileSync(file, JSON.stringify({ server: name, tools }) + "\n");
await client.close();
