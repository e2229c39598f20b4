// A scripted MCP server over stdio (newline-delimited JSON-RPC), for the bridge's tests: it
// does what the reference server cannot be made to do on demand: paginate, clash, refuse with
// a JSON-RPC error, exit in the middle of a call, grow its tool list.
//
// FIXTURE_MODE=collide lists two tools that sanitize to one name; FIXTURE_MODE=crash exits
// before answering `initialize`, after a line on stderr.
import { createInterface } from "node:readline";

const mode = process.env.FIXTURE_MODE ?? "default";
if (mode === "crash") {
  process.stderr.write("fixture: refusing to start\n");
  process.exit(7);
}

const schema = { type: "object", properties: { text: { type: "string" } } };
let tools =
  mode === "collide"
    ? [
        { name: "a.b", description: "one", inputSchema: schema },
        { name: "a_b", description: "two", inputSchema: schema },
      ]
    : [
        { name: "echo", description: "Echoes text", inputSchema: schema },
        { name: "bare", inputSchema: { properties: {} } },
        { name: "media", description: "Every kind of block", inputSchema: { type: "object" } },
        { name: "refuse", description: "Answers with a JSON-RPC error", inputSchema: { type: "object" } },
        { name: "oops", description: "Answers isError", inputSchema: { type: "object" } },
        { name: "structured", description: "Only structured content", inputSchema: { type: "object" } },
        { name: "grow", description: "Adds the tool `extra`", inputSchema: { type: "object" } },
        { name: "exit", description: "Exits without answering", inputSchema: { type: "object" } },
        {
          name: "annotated",
          description: "Claims to be harmless",
          inputSchema: { type: "object" },
          annotations: { readOnlyHint: true, openWorldHint: false, idempotentHint: true },
        },
      ];
const PAGE = 3;

const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
const b64 = (text) => Buffer.from(text).toString("base64");

function call(name, args) {
  if (!tools.some((t) => t.name === name)) return undefined;
  switch (name) {
    case "extra":
      return { content: [{ type: "text", text: "extra ran" }] };
    case "echo":
      return { content: [{ type: "text", text: `echo: ${args?.text ?? ""}` }] };
    case "bare":
      return { content: [] };
    case "annotated":
      return { content: [{ type: "text", text: "harmless" }] };
    case "media":
      return {
        content: [
          { type: "text", text: "media follows" },
          { type: "audio", data: b64("RIFF-fake-wav"), mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "fixture://files/data.bin", mimeType: "application/octet-stream", blob: b64("\u0000\u0001\u0002") } },
          { type: "resource", resource: { uri: "fixture://notes/1", mimeType: "text/plain", text: "an embedded note" } },
          { type: "resource_link", uri: "fixture://elsewhere/2", name: "elsewhere", mimeType: "text/plain" },
        ],
      };
    case "oops":
      return { content: [{ type: "text", text: "it went wrong" }], isError: true };
    case "structured":
      return { content: [], structuredContent: { n: 1, ok: true } };
    case "grow":
      if (!tools.some((t) => t.name === "extra")) {
        tools.push({ name: "extra", description: "Added at run time", inputSchema: schema });
      }
      setTimeout(() => send({ method: "notifications/tools/list_changed" }), 10);
      return { content: [{ type: "text", text: "grown" }] };
    case "exit":
      setTimeout(() => process.exit(3), 50);
      return null;
    default:
      return undefined;
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return; // notifications
  switch (msg.method) {
    case "initialize":
      send({
        id: msg.id,
        result: {
          protocolVersion: msg.params.protocolVersion,
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: "fixture", version: "1.0.0" },
        },
      });
      return;
    case "ping":
      send({ id: msg.id, result: {} });
      return;
    case "tools/list": {
      const start = Number(msg.params?.cursor ?? 0);
      const page = tools.slice(start, start + PAGE);
      const result = { tools: page };
      if (start + PAGE < tools.length) result.nextCursor = String(start + PAGE);
      send({ id: msg.id, result });
      return;
    }
    case "tools/call": {
      const { name, arguments: args } = msg.params;
      if (name === "refuse") {
        send({ id: msg.id, error: { code: -32001, message: "the fixture refuses" } });
        return;
      }
      const result = call(name, args);
      if (result === undefined) {
        send({ id: msg.id, error: { code: -32602, message: `Tool ${name} not found` } });
      } else if (result !== null) {
        send({ id: msg.id, result });
      }
      return;
    }
    default:
      send({ id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
  }
});
