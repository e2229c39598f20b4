// The console in a real browser (issue 26): sign in, see a run appear and finish live, open a
// tool row with an image capture, approve a held call and watch the run continue, deny another.
// Run by scripts/test after the Rust tests: `node --test tests/console/*.test.mjs`.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { Nexus, Runner, browser, fakeUpstream, outDir, signedIn } from "./harness.mjs";

const OUT = outDir("console-tests");
let n, runner, b, page, upstream;
const STREAMED = ["Streaming ", "one ", "piece ", "at ", "a ", "time."];
const shot = (name) => page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });

before(async () => {
  upstream = await fakeUpstream(STREAMED, 400);
  n = await Nexus.start({ upstream: upstream.url });
  runner = new Runner(n);
  await runner.announce();
  runner.start();
  n.script("hello", [{ text: "Hello! I am a scripted model, answering slowly.", delay_ms: 4000 }]);
  n.script("capture", [
    { text: "Let me look at the screen.", tool_calls: [{ id: "c1", name: "screenshot", input: {} }], usage: { input_tokens: 412, output_tokens: 21 } },
    { text: "The screen shows a blue square on orange.", usage: { input_tokens: 530, output_tokens: 12, cache_read_input_tokens: 400 } },
  ]);
  n.script("notes", [
    { text: "I will write the first note.", tool_calls: [{ id: "n1", name: "write_note", input: { text: "first" } }] },
    { text: "Now the second note.", tool_calls: [{ id: "n2", name: "write_note", input: { text: "second" } }] },
    { text: "One note written; the second was refused." },
  ]);
  b = await browser();
});

after(async () => {
  await runner?.stop();
  await b?.close();
  n?.stop();
  upstream?.close();
});

test("sign in, the first page lists runs and serves a same-origin policy", async () => {
  const res = await fetch(`${n.base}/console/`, { headers: { "accept-encoding": "gzip" } });
  assert.equal(res.status, 200);
  const csp = res.headers.get("content-security-policy");
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /connect-src 'self'/);
  page = await signedIn(b, n);
  assert.equal(await page.locator("#nav").isVisible(), true);
  assert.equal(await page.evaluate(() => typeof sessionStorage.getItem("nexus.console.session")), "string");
  assert.equal(await page.evaluate(() => localStorage.length), 0, "the bearer stays out of localStorage");
  await shot("01-signed-in");
});

test("a ready sign-in link signs the tab in and leaves the address bar", async () => {
  const ctx = await b.newContext();
  const other = await ctx.newPage();
  await other.goto(`${n.base}/console/#/signin?ws=${n.ws}&token=${encodeURIComponent(n.human)}`);
  await other.waitForSelector("#runs", { state: "attached" });
  assert.doesNotMatch(other.url(), /token=/, "the bearer is gone from the address bar");
  assert.match(await other.evaluate(() => sessionStorage.getItem("nexus.console.session")), new RegExp(n.ws));
  await ctx.close();
});

test("a run appears in the list and finishes live", async () => {
  const id = await n.run("hello");
  const row = page.locator(`tr[data-run="${id}"]`);
  await row.waitFor({ timeout: 10000 });
  await row.locator(".s-running").waitFor({ timeout: 5000 });
  await shot("02-run-running");
  await row.locator(".s-completed").waitFor({ timeout: 15000 });
  await shot("03-run-completed");
  // Its page: the prompt and the reply as a conversation.
  await row.locator("a").click();
  await page.locator(".msg.user").filter({ hasText: "Go." }).waitFor();
  await page.locator(".msg.assistant").filter({ hasText: "Hello! I am a scripted model" }).waitFor();
  await page.locator("#live.live").filter({ hasText: "live" }).waitFor();
});

test("assistant text streams in from model_delta frames", async () => {
  const id = await n.run("", { model: "fake/streamer", start: false });
  await page.goto(`${n.base}/console/#/runs/${id}`);
  await page.locator("#live.live").filter({ hasText: "live" }).waitFor();
  await n.startRun(id);
  const streaming = page.locator(".msg.assistant.streaming");
  await streaming.filter({ hasText: "Streaming one" }).waitFor({ timeout: 10000 });
  assert.doesNotMatch(await streaming.innerText(), /time\./, "seen before the reply was complete");
  await shot("03b-streaming");
  await page.locator(".msg.assistant:not(.streaming)").filter({ hasText: "Streaming one piece at a time." }).waitFor({ timeout: 10000 });
});

test("a tool row opens to its image capture, structured content and metadata", async () => {
  const id = await n.run("capture", { runner: true, prompt: "What is on my screen?" });
  await page.goto(`${n.base}/console/#/runs/${id}`);
  const tool = page.locator("details.tool").first();
  await tool.locator("summary").filter({ hasText: "captured the screen (96×64)" }).waitFor({ timeout: 15000 });
  await page.locator(".msg.assistant").filter({ hasText: "blue square on orange" }).waitFor({ timeout: 15000 });
  await tool.locator("summary").click();
  const img = tool.locator("img.capture");
  await img.waitFor();
  await page.waitForFunction((el) => el.complete && el.naturalWidth === 96, await img.elementHandle());
  assert.match(await img.getAttribute("src"), /^blob:/);
  await tool.getByText('"width": 96').waitFor();
  await tool.getByText('"renderer": "console-test"').waitFor();
  await tool.locator(".badge.b-kind").filter({ hasText: "read_only" }).waitFor();
  await shot("04-tool-capture");
  // A laptop-sized view down to the image (the screenshots under docs/console/ are glance.test.mjs's).
  await page.setViewportSize({ width: 1200, height: 1000 });
  await page.screenshot({ path: join(OUT, "console.png") });
  await page.setViewportSize({ width: 1280, height: 860 });
  // The graph tab renders the run's Mermaid text with the vendored renderer.
  await page.getByRole("tab", { name: "Graph" }).click();
  await page.locator("#graph svg").waitFor({ timeout: 20000 });
  assert.ok(await page.locator("#graph svg .node").count() >= 3);
  await shot("05-graph");
});

test("approve a held call and watch the run continue, then deny the next", async () => {
  const id = await n.run("notes", { mode: "ask", runner: true });
  await page.goto(`${n.base}/console/#/approvals`);
  const first = page.locator(`[data-approval^="${id}/"]`);
  await first.waitFor({ timeout: 15000 });
  assert.equal(await first.count(), 1);
  await first.getByText('"text": "first"').waitFor();
  await first.locator(".badge.b-kind").filter({ hasText: "write" }).waitFor();
  await first.locator(".badge.b-true").filter({ hasText: "destructive" }).waitFor();
  await shot("06-approval-held");
  await first.locator("[data-approve]").click();
  // The run continues: the runner writes the first note, the model asks for a second.
  const second = page.locator(`[data-approval^="${id}/"]`).filter({ hasText: '"text": "second"' });
  await second.waitFor({ timeout: 15000 });
  assert.equal(await page.locator(`[data-approval^="${id}/"]`).filter({ hasText: '"text": "first"' }).count(), 0, "the decided row left the queue");
  await second.locator("[data-reason]").fill("not today");
  await second.locator("[data-deny]").click();
  await second.waitFor({ state: "detached", timeout: 10000 });
  await shot("07-approvals-empty");
  const run = await n.waitRun(id, ["completed"]);
  assert.equal(run.status, "completed");
  assert.deepEqual(runner.done.filter((t) => t === "write_note").length, 1);
  await page.goto(`${n.base}/console/#/runs/${id}`);
  await page.locator(".msg.assistant").filter({ hasText: "the second was refused" }).waitFor({ timeout: 10000 });
  const denied = page.locator("details.tool.err");
  await denied.locator("summary").click();
  await denied.getByText(/approval_denied: not today/).waitFor();
  await shot("08-run-after-deny");
});

test("a failed round is retried from its row", async () => {
  const id = await n.run("later");
  await n.waitRun(id, ["needs_attention"]);
  await page.goto(`${n.base}/console/#/runs/${id}`);
  await page.locator(".badge.s-needs_attention").first().waitFor();
  const round = page.locator(".msg.assistant").first();
  await round.locator("summary").click();
  await round.getByText(/provider_error/).waitFor();
  assert.equal(await round.getByText("undefined").count(), 0);
  await shot("09a-needs-attention");
  n.script("later", [{ text: "Here after all." }]);
  await round.getByRole("button", { name: "Retry" }).click();
  await page.locator(".msg.assistant").filter({ hasText: "Here after all." }).waitFor({ timeout: 15000 });
  await page.locator("h1 + .badge.s-completed, .bar .badge.s-completed").first().waitFor({ timeout: 10000 });
});

test("the event log and the task list", async () => {
  const id = await n.run("hello");
  await n.waitRun(id, ["completed"]);
  await page.goto(`${n.base}/console/#/runs/${id}?tab=events`);
  await page.locator("#events tr").filter({ hasText: "run_status_changed" }).first().waitFor();
  assert.ok(await page.locator("#events tr").count() >= 4);
  await page.getByRole("tab", { name: "Tasks" }).click();
  await page.locator("tr.row-link").filter({ hasText: "s1-model-1" }).click();
  await page.getByText("scripted/hello").first().waitFor();
});

test("a conversation takes an input and shows the turn live", async () => {
  await page.goto(`${n.base}/console/#/conversations`);
  await page.getByLabel("New conversation title").fill("Desk chat");
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByRole("heading", { name: "Desk chat" }).waitFor();
  await page.locator(".live").filter({ hasText: "live" }).waitFor();
  await page.fill("#input", "A note for the record.");
  await page.keyboard.press("Control+Enter");
  await page.locator(".msg.user").filter({ hasText: "A note for the record." }).waitFor({ timeout: 10000 });
  await shot("10-conversation");
});

test("runners, events and conversations pages render", async () => {
  await page.goto(`${n.base}/console/#/runners`);
  const card = page.locator(`[data-runner="${n.runnerId}"]`);
  await card.waitFor();
  await card.getByText("write_note").waitFor();
  assert.deepEqual(await page.locator("nav a.on").allInnerTexts(), ["Runners"]);
  await shot("09-runners");
  await page.goto(`${n.base}/console/#/runs`);
  await page.locator("#runs tr").first().waitFor();
  // The status filter: newest first, only the status asked for.
  await page.selectOption("#status-filter", "completed");
  await page.waitForURL(/status=completed/);
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("#runs tr")];
    return rows.length > 0 && rows.every((r) => r.querySelector(".s-completed"));
  });
  const all = await n.call("GET", n.W("/runs?status=completed&order=desc"));
  assert.deepEqual(await page.locator("#runs tr").evaluateAll((rs) => rs.map((r) => r.dataset.run)), all.runs.map((r) => r.public_id));
  await page.goto(`${n.base}/console/#/conversations`);
  await page.getByRole("heading", { name: "Conversations" }).waitFor();
  assert.deepEqual(page.problems, [], "no console errors or CSP violations");
});
