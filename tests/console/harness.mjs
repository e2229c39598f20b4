// A real `nexus serve` on a temporary SQLite data dir, bootstrapped, with the test acting as
// the runner over the executor plane, and headless Debian Chromium driven by playwright-core.
// Shared by the browser tests and the console benchmark (bench/console/).

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { deflateSync } from "node:zlib";
import { chromium } from "playwright-core";

export const ROOT = resolve(import.meta.dirname, "../..");
const TARGET = process.env.CARGO_TARGET_DIR || join(ROOT, "target");
export const NEXUS = process.env.NEXUS_BIN || join(TARGET, "debug", "nexus");
export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

/** The folder for a test's screenshots and logs (under the target dir, so gitignored). */
export function outDir(name) {
  const dir = join(TARGET, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => ok(port)); });
    s.on("error", fail);
  });
}

export class Nexus {
  /** `upstream`: the base URL of a Chat Completions server, configured as provider `fake`. */
  static async start({ upstream } = {}) {
    if (!existsSync(NEXUS)) throw new Error(`${NEXUS} is missing: run cargo build -p nexus-cli first`);
    const n = new Nexus();
    n.dir = mkdtempSync(join(tmpdir(), "nexus-console-"));
    mkdirSync(join(n.dir, "scripts"), { recursive: true });
    if (upstream) writeFileSync(join(n.dir, "nexus.toml"), `[providers.fake]\nkind = "openai"\nbase_url = "${upstream}"\n`);
    n.boot = JSON.parse(execFileSync(NEXUS, ["admin", "bootstrap", "--data-dir", n.dir, "--json"], { encoding: "utf8" }));
    n.port = await freePort();
    n.base = `http://127.0.0.1:${n.port}`;
    n.log = [];
    n.proc = spawn(NEXUS, ["serve", "--data-dir", n.dir, "--listen", `127.0.0.1:${n.port}`], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, RUST_LOG: process.env.RUST_LOG || "warn" } });
    for (const s of [n.proc.stdout, n.proc.stderr]) s.on("data", (d) => n.log.push(String(d)));
    for (let i = 0; i < 200; i++) {
      try { if ((await fetch(`${n.base}/healthz`)).ok) return n; } catch { /* not yet */ }
      await new Promise((r) => setTimeout(r, 100));
    }
    n.stop();
    throw new Error(`nexus serve did not come up:\n${n.log.join("")}`);
  }

  get ws() { return this.boot.workspace_public_id; }
  get human() { return this.boot.human.member_token; }
  get runnerToken() { return this.boot.runner.transport_token; }
  get runnerId() { return this.boot.runner.executor_public_id; }
  W(path = "") { return `/agent_api/v1/workspaces/${this.ws}${path}`; }

  stop() { this.proc?.kill("SIGTERM"); }

  script(name, lines) { writeFileSync(join(this.dir, "scripts", `${name}.jsonl`), lines.map((l) => JSON.stringify(l)).join("\n") + "\n"); }

  async call(method, path, { token = this.human, body, form } = {}) {
    const headers = { authorization: `Bearer ${token}` };
    let payload;
    if (form) payload = form;
    else if (body !== undefined) { headers["content-type"] = "application/json"; payload = JSON.stringify(body); }
    const res = await fetch(this.base + path, { method, headers, body: payload });
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return json;
  }

  /** Creates and starts a run of one model step on `scripted/<script>`. */
  async run(script, { mode = "bypass", prompt = "Go.", runner = false, start = true, model } = {}) {
    const step = { model: { prompt, model: model || `scripted/${script}` } };
    const run = { approval_mode: mode, steps: [step] };
    if (runner) {
      run.default_runner_executor_public_id = this.runnerId;
      step.model.runner_executor_public_ids = [this.runnerId];
      step.model.runner_tool_names = null;
    }
    const { run: r } = await this.call("POST", this.W("/runs"), { body: { run } });
    if (start) await this.startRun(r.public_id);
    return r.public_id;
  }

  /** Creates (and starts) a run from a whole `run` body. */
  async runWith(run, { start = true } = {}) {
    const { run: r } = await this.call("POST", this.W("/runs"), { body: { run } });
    if (start) await this.startRun(r.public_id);
    return r.public_id;
  }

  /** Opens the runner's push channel (a WebSocket upgrade, kept open until `close()`). */
  channel() {
    return new Promise((ok, fail) => {
      const req = httpRequest(`${this.base}/agent_api/v1/executor/channel`, {
        headers: { authorization: `Bearer ${this.runnerToken}`, connection: "Upgrade", upgrade: "websocket",
          "sec-websocket-version": "13", "sec-websocket-key": randomBytes(16).toString("base64") },
      });
      req.on("upgrade", (_res, socket) => ok({ close: () => socket.destroy() }));
      req.on("response", (res) => fail(new Error(`the channel answered ${res.statusCode}`)));
      req.on("error", fail);
      req.end();
    });
  }

  async startRun(id) { await this.call("POST", this.W(`/runs/${id}/start`), { body: {} }); }

  async waitRun(id, statuses, ms = 20000) {
    const until = Date.now() + ms;
    for (;;) {
      const { run } = await this.call("GET", this.W(`/runs/${id}`));
      if (statuses.includes(run.status)) return run;
      if (Date.now() > until) throw new Error(`run ${id} is ${run.status}, not ${statuses}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export const PROFILES = {
  screenshot: { kind: "read_only", destructive: false, effect_scope: "closed", idempotency: "intrinsic", reconciliation: "none" },
  write_note: { kind: "write", destructive: true, effect_scope: "closed", idempotency: "none", reconciliation: "none" },
};

/** The test as a runner: announces two tools, then claims and commits what reaches its inbox. */
export class Runner {
  constructor(nexus) { this.n = nexus; this.stopped = false; this.done = []; }

  async announce() {
    const tool = (name, description) => ({ name, description, effect_profile: PROFILES[name], input_schema: { type: "object", properties: { text: { type: "string" } } } });
    await this.n.call("PUT", "/agent_api/v1/executor/announcement", {
      token: this.n.runnerToken,
      body: { tools: [tool("screenshot", "Capture the screen as a PNG."), tool("write_note", "Write a note to the desk.")], environment: { os: "test", desk: "/tmp/desk" } },
    });
  }

  start() { this.loop = this.serve(); return this; }
  async stop() { this.stopped = true; await this.loop; }

  async serve() {
    const X = "/agent_api/v1/executor";
    const t = this.n.runnerToken;
    while (!this.stopped) {
      try {
        const { tasks } = await this.n.call("GET", `${X}/inbox`, { token: t });
        for (const row of tasks.filter((r) => r.kind === "tool_call" && !r.claimed)) {
          const base = `${X}/inbox/${row.run_public_id}/${row.task_key}`;
          const { claim } = await this.n.call("POST", `${base}/claim`, { token: t, body: {} });
          const result = await this.execute(row);
          await this.n.call("POST", `${base}/commit`, { token: t, body: { claim_token: claim.claim_token, ...result } });
          this.done.push(row.tool_name);
        }
      } catch (e) { if (!this.stopped) console.error("runner:", e.message); }
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  async execute(row) {
    if (row.tool_name === "screenshot") {
      const form = new FormData();
      form.append("upload[file]", new Blob([png(96, 64)], { type: "image/png" }), "screen.png");
      const { upload } = await this.n.call("POST", "/agent_api/v1/executor/uploads", { token: this.n.runnerToken, form });
      return {
        content: [{ type: "text", text: "Captured the screen." },
          { type: "resource_link", uri: `nexus://uploads/${upload.public_id}`, name: "screen.png", mimeType: "image/png", size: upload.byte_size }],
        title: "captured the screen (96×64)",
        structured_content: { width: 96, height: 64 },
        metadata: { renderer: "console-test" },
      };
    }
    return { content: `Wrote: ${row.tool_input.text}`, title: `wrote a note (${row.tool_input.text})` };
  }
}

/** A Chat Completions server that streams `pieces` of text, `gapMs` apart (the console's
 *  `model_delta` view; the scripted provider does not stream). */
export async function fakeUpstream(pieces, gapMs) {
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: "assistant", content: "" }));
      for (const p of pieces) { await new Promise((r) => setTimeout(r, gapMs)); res.write(chunk({ content: p })); }
      res.write(chunk({}, "stop"));
      res.write(`data: ${JSON.stringify({ id: "c", choices: [], usage: { prompt_tokens: 12, completion_tokens: pieces.length } })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => server.close() };
}

/** A small RGB PNG: a blue square on orange, made here (no image library). */
export function png(w, h) {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0;
    for (let x = 0; x < w; x++) {
      const inner = x > w / 4 && x < (3 * w) / 4 && y > h / 4 && y < (3 * h) / 4;
      raw.set(inner ? [36, 88, 198] : [240, 150, 40], y * (w * 3 + 1) + 1 + x * 3);
    }
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

function crc32(buf) {
  let c = ~0;
  for (const b of buf) { c ^= b; for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1)); }
  return ~c >>> 0;
}

export async function browser() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/** A page signed in to the console, its console errors and CSP violations collected. */
export async function signedIn(b, n, { width = 1280, height = 860 } = {}) {
  const ctx = await b.newContext({ viewport: { width, height } });
  const page = await ctx.newPage();
  page.problems = [];
  // Script errors and policy violations ("Refused to …"); a refused API call is the page's to
  // show in words (a 404 request_not_sealed for a round that never sealed, say), not a problem.
  page.on("console", (m) => { if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) page.problems.push(m.text()); });
  page.on("pageerror", (e) => page.problems.push(String(e)));
  await page.goto(`${n.base}/console/#/signin?ws=${n.ws}`);
  await page.fill("#token", n.human);
  await page.click("button[type=submit]");
  await page.waitForSelector("#runs", { state: "attached" });
  return page;
}

/** Where the console's screenshots go: `NEXUS_CONSOLE_SHOTS=docs/console` writes the documented
 *  pictures there (1400 px wide); unset, nothing is written outside the target dir. */
export const SHOTS = process.env.NEXUS_CONSOLE_SHOTS ? resolve(ROOT, process.env.NEXUS_CONSOLE_SHOTS) : null;

/** Takes the page's documented picture `name` (`SHOTS/name.png`) at 1400 × `height`, when
 *  asked to; always a copy under `out` for the test's own record. */
export async function docShot(page, out, name, { height = 900, hover = false } = {}) {
  const size = page.viewportSize();
  await page.setViewportSize({ width: 1400, height });
  if (!hover) await page.mouse.move(1, 1);
  await page.evaluate(() => document.getElementById("toast")?.replaceChildren());
  await page.waitForTimeout(150);
  await page.screenshot({ path: join(out, `${name}.png`) });
  if (SHOTS) { mkdirSync(SHOTS, { recursive: true }); await page.screenshot({ path: join(SHOTS, `${name}.png`) }); }
  await page.setViewportSize(size);
}
