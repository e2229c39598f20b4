// A run at a glance (the console's lists, timeline and graph), in a real browser: the runs list's
// server-side summary, a held run's wait, the timeline's phases and a 500-round run, graph labels,
// tool_search's list, the transcript's order around a deferred call, conversations told apart,
// runner presence, and `/console` without its slash. With NEXUS_CONSOLE_SHOTS=docs/console set,
// it also writes the documented screenshots of every page (1400 px wide).
// Run by scripts/test: `node --test tests/console/*.test.mjs`.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Nexus, Runner, browser, docShot, outDir, signedIn } from "./harness.mjs";

const OUT = outDir("console-glance");
let n, runner, b, page;
const ids = {};
const shot = (name, opts) => docShot(page, OUT, name, opts);

/** The finder's model step: tool_search and tool_call over the runner's deferred write_note. */
const finderRun = (n) => ({
  approval_mode: "ask",
  approval_rules: [{ tool: "tool_search|tool_call", verdict: "allow" }],
  default_runner_executor_public_id: n.runnerId,
  steps: [{ model: { prompt: "Leave a note for the morning shift.", model: "scripted/finder",
    kernel_tools: ["nexus.tools.search", "nexus.tools.call"],
    runner_executor_public_ids: [n.runnerId], runner_tool_names: ["write_note"] } }],
});

const ROUNDS = 500;

before(async () => {
  n = await Nexus.start();
  runner = new Runner(n);
  await runner.announce();
  runner.start();
  n.script("fix", [
    { text: "Let me look at the failing test first.", tool_calls: [{ id: "c1", name: "screenshot", input: {} }], usage: { input_tokens: 412, output_tokens: 21 } },
    { text: "Fixed: the test waited on the wall clock.", usage: { input_tokens: 530, output_tokens: 12 } },
  ]);
  // Rounds that take a moment (delay_ms), so the timeline's model bars have a width.
  n.script("finder", [
    { text: "I need a tool that writes notes.", tool_calls: [{ id: "s1", name: "tool_search", input: { query: "note" } }], delay_ms: 500, usage: { input_tokens: 1210, output_tokens: 18 } },
    { text: "Found write_note; calling it.", tool_calls: [{ id: "s2", name: "tool_call", input: { name: "write_note", input: { text: "coffee is on" } } }], delay_ms: 700, usage: { input_tokens: 1390, output_tokens: 31 } },
    { text: "Done: the note is on the desk.", delay_ms: 400, usage: { input_tokens: 1460, output_tokens: 9 } },
  ]);
  n.script("hold", [
    { text: "Writing the note.", tool_calls: [{ id: "h1", name: "write_note", input: { text: "held" } }] },
    { text: "Written." },
  ]);
  // Two root chains of ROUNDS / 2 (a chain stops at 256 rounds), as bench/console/ seeds it.
  const long = [];
  for (let c = 0; c < 2; c++) {
    for (let i = 0; i < ROUNDS / 2 - 1; i++) long.push({ text: `Round ${i}.`, tool_calls: [{ name: "tool_search", input: { query: `round ${c}-${i}` } }], usage: { input_tokens: 10, output_tokens: 2 } });
    long.push({ text: `Chain ${c + 1} done.` });
  }
  n.script("long", long);
  b = await browser();
  page = await signedIn(b, n, { width: 1400, height: 900 });
});

after(async () => {
  await runner?.stop();
  await b?.close();
  n?.stop();
});

test("/console without its slash serves a working page", async () => {
  const ctx = await b.newContext({ viewport: { width: 1400, height: 900 } });
  const p = await ctx.newPage();
  const missing = [];
  p.on("response", (r) => { if (r.status() === 404) missing.push(r.url()); });
  await p.goto(`${n.base}/console#/signin?ws=${n.ws}`);
  await p.locator("#token").waitFor({ timeout: 10000 });
  assert.equal(await p.locator("#nav").isVisible(), false, "no navigation before signing in");
  assert.notEqual(await p.evaluate(() => getComputedStyle(document.querySelector(".signin")).maxWidth), "none", "the stylesheet applies");
  assert.deepEqual(missing, [], "no asset answers 404");
  await docShot(p, OUT, "signin");
  await p.fill("#token", n.human);
  await p.click("button[type=submit]");
  await p.waitForSelector("#runs", { state: "attached" });
  await ctx.close();
});

test("the runs list shows each run's prompt, model, rounds, tools, tokens and duration", async () => {
  ids.fix = await n.runWith({ approval_mode: "bypass", default_runner_executor_public_id: n.runnerId,
    steps: [{ model: { prompt: "Fix the flaky clock test\nIt fails only on Mondays.", model: "scripted/fix", runner_executor_public_ids: [n.runnerId], runner_tool_names: null } }] });
  await n.waitRun(ids.fix, ["completed"]);
  // The API: one summary per run, from the server.
  const { runs } = await n.call("GET", n.W("/runs?order=desc"));
  const s = runs.find((r) => r.public_id === ids.fix).summary;
  assert.equal(s.prompt, "Fix the flaky clock test");
  assert.equal(s.model, "scripted/fix");
  assert.deepEqual([s.rounds, s.tool_calls, s.input_tokens, s.output_tokens], [2, 1, 942, 33]);
  assert.deepEqual(s.waiting_on, []);
  await page.goto(`${n.base}/console/#/runs`);
  const row = page.locator(`tr[data-run="${ids.fix}"]`);
  await row.getByText("Fix the flaky clock test").waitFor();
  assert.equal(await row.getByText("Mondays").count(), 0, "only the first line");
  const cells = await row.locator("td").allInnerTexts();
  assert.match(cells[2], /scripted\/fix/);
  assert.deepEqual([cells[3], cells[4]], ["2", "1"]);
  assert.match(cells[5], /942 in · 33 out/);
  assert.match(cells[6], /\d+(\.\d)? (ms|s)/);
  assert.doesNotMatch(cells[6], /^0 ms$/, "a run of about a second does not read 0 ms");
});

test("a run held for approval says so in the list, and its task says what it waits on", async () => {
  ids.hold = await n.run("hold", { mode: "ask", runner: true, prompt: "Write the held note." });
  const row = page.locator(`tr[data-run="${ids.hold}"]`);
  await row.locator('[data-waiting="approval"]').filter({ hasText: "held for approval" }).waitFor({ timeout: 15000 });
  const { runs } = await n.call("GET", n.W("/runs?order=desc"));
  assert.deepEqual(runs.find((r) => r.public_id === ids.hold).summary.waiting_on, [{ on: "approval", count: 1 }]);
  await page.goto(`${n.base}/console/#/approvals`);
  await page.locator(`[data-approval^="${ids.hold}/"]`).waitFor();
  await shot("approvals");
  await page.goto(`${n.base}/console/#/runs/${ids.hold}?tab=tasks`);
  await page.locator("tr.row-link").filter({ hasText: "write_note" }).click();
  const waiting = page.locator("dd").filter({ hasText: "approval" }).first();
  await waiting.waitFor();
  assert.doesNotMatch(await page.locator("#tab-body").innerText(), /\["approver"\]/);
});

test("the timeline draws each task's waiting apart from its work, and a bar opens its task", async () => {
  await page.goto(`${n.base}/console/#/runs/${ids.hold}?tab=timeline`);
  const tl = page.locator("#timeline");
  await page.waitForFunction(() => Number(document.querySelector("#timeline")?.dataset.rows) >= 2);
  const box = await tl.boundingBox();
  // Row 1 (under the axis band) is the held write_note call.
  await page.mouse.click(box.x + box.width / 2, box.y + 26 + 22 + 11);
  const detail = page.locator("#timeline-detail");
  await detail.locator("h2").filter({ hasText: "write_note" }).waitFor();
  await detail.locator(".phases").getByText("held for approval").waitFor();
  await page.waitForTimeout(1200); // the held bar grows with the clock
  await page.locator(".tl-scroll").screenshot({ path: `${OUT}/timeline-held.png` });
  await n.call("POST", n.W(`/runs/${ids.hold}/tasks/${await detail.getAttribute("data-task")}/approve`), { body: {} });
  await n.waitRun(ids.hold, ["completed"]);
  await page.reload();
  await page.waitForFunction(() => Number(document.querySelector("#timeline")?.dataset.rows) >= 3);
  await page.locator("#timeline").focus();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Enter");
  await detail.locator(".phases").getByText("waiting for a runner").waitFor();
  await detail.locator(".phases").getByText("tool at work").waitFor();
  await detail.locator(".phases").getByText("held for approval").waitFor();
  assert.deepEqual(page.problems, []);
});

test("tool_search shows the tools it found, and a deferred call's row comes before the answer", async () => {
  ids.finder = await n.runWith(finderRun(n));
  await page.goto(`${n.base}/console/#/approvals`);
  const held = page.locator(`[data-approval^="${ids.finder}/"]`);
  await held.waitFor({ timeout: 15000 });
  await page.waitForTimeout(1500); // a person reads the call before approving it
  await held.locator("[data-approve]").click();
  await n.waitRun(ids.finder, ["completed"]);
  const { rows } = await n.call("GET", n.W(`/runs/${ids.finder}/transcript`));
  const note = rows.findIndex((r) => r.role === "tool" && r.tool_name === "write_note");
  const answer = rows.findIndex((r) => r.role === "assistant" && /note is on the desk/.test(r.text || ""));
  assert.ok(note >= 0 && answer >= 0, JSON.stringify(rows.map((r) => r.key)));
  assert.ok(note < answer, `the approved call (${note}) comes before the answer (${answer})`);
  await page.goto(`${n.base}/console/#/runs/${ids.finder}`);
  await page.locator(".msg.assistant").filter({ hasText: "note is on the desk" }).waitFor();
  const order = await page.locator("#transcript > *").evaluateAll((els) => els.map((e) => e.textContent));
  assert.ok(order.findIndex((t) => /write_note|wrote a note/.test(t)) < order.findIndex((t) => /note is on the desk/.test(t)));
  const search = page.locator("details.tool").filter({ hasText: "found write_note" });
  await search.locator("summary").click();
  await search.locator("ul.found li").filter({ hasText: "write_note" }).filter({ hasText: "Write a note to the desk." }).waitFor();
  await shot("transcript", { height: 1220 });
  // The documented timeline: every phase of a finished run, the approved call opened.
  await page.goto(`${n.base}/console/#/runs/${ids.finder}?tab=timeline`);
  await page.waitForFunction(() => Number(document.querySelector("#timeline")?.dataset.rows) >= 6);
  const box = await page.locator("#timeline").boundingBox();
  const noteRow = (await n.call("GET", n.W(`/runs/${ids.finder}/tasks`))).tasks.findIndex((t) => t.tool_name === "write_note");
  await page.mouse.click(box.x + box.width / 2, box.y + 26 + 22 * noteRow + 11);
  await page.locator("#timeline-detail .phases").getByText("held for approval").waitFor();
  await page.mouse.move(box.x + box.width * 0.6, box.y + 26 + 22 * noteRow + 11);
  await shot("timeline", { height: 900, hover: true });
});

test("graph nodes read what they did, their status as colour", async () => {
  await page.goto(`${n.base}/console/#/runs/${ids.finder}?tab=graph`);
  const svg = page.locator("#graph svg");
  await svg.waitFor({ timeout: 20000 });
  const text = await svg.evaluate((el) => el.textContent);
  assert.match(text, /tool_search/);
  assert.match(text, /model scripted\/finder/);
  assert.doesNotMatch(text, /tool_task|model_task/);
  await page.locator(".legend .swatch").filter({ hasText: "completed" }).waitFor();
  await page.goto(`${n.base}/console/#/runs/${ids.fix}?tab=tasks`);
  await page.locator("tr.row-link").first().click();
  const sealed = page.locator("summary").filter({ hasText: "Sealed request (sha256" });
  await sealed.waitFor();
  await page.waitForTimeout(600); // the row's body settles (it loads once more on the run's refresh)
  await page.locator("summary").filter({ hasText: "Sealed request (sha256" }).click();
  await page.locator("details[open] > pre").filter({ hasText: "entries" }).first().waitFor();
  await shot("tasks");
  await page.goto(`${n.base}/console/#/runs/${ids.fix}?tab=events`);
  await page.locator("#events tr").first().waitFor();
  await shot("events");
});

test("two conversations with one title are told apart by their last message and turns", async () => {
  const make = async (text) => {
    const { conversation: c } = await n.call("POST", n.W("/conversations"), { body: { conversation: { title: "Desk chat" } } });
    await n.call("POST", n.W(`/conversations/${c.public_id}/inputs`), { body: { input: { content: text, delivery_mode: "queue" } } });
    return c.public_id;
  };
  const a = await make("The printer jams on A4.\nSince Monday.");
  const c2 = await make("Order more coffee beans.");
  await page.goto(`${n.base}/console/#/conversations`);
  const rowA = page.locator(`tr[data-conversation="${a}"]`);
  const rowB = page.locator(`tr[data-conversation="${c2}"]`);
  await rowA.getByText("The printer jams on A4.").waitFor({ timeout: 10000 });
  await rowB.getByText("Order more coffee beans.").waitFor({ timeout: 10000 });
  assert.equal(await rowA.getByText("Since Monday").count(), 0);
  assert.match((await rowA.locator("td").allInnerTexts())[2], /^[1-9]\d*$/);
  const { conversations } = await n.call("GET", n.W("/conversations"));
  const sa = conversations.find((c) => c.public_id === a).summary;
  assert.ok(sa.turn_count >= 1 && sa.last_activity_at, JSON.stringify(sa));
  await shot("conversations");
  await rowA.locator("a").click();
  await page.locator(".msg.user").filter({ hasText: "The printer jams" }).waitFor();
  await shot("conversation");
});

test("a connected runner reads online, and its last-seen moves on a reconnect", async () => {
  await page.goto(`${n.base}/console/#/runners`);
  const card = page.locator(`[data-runner="${n.runnerId}"]`);
  await card.waitFor();
  const before = await card.locator("[data-last-seen]").getAttribute("data-last-seen");
  await new Promise((r) => setTimeout(r, 1100)); // last_seen_at is whole seconds
  const ch = await n.channel();
  try {
    await card.locator('[data-presence="online"]').filter({ hasText: "online" }).waitFor({ timeout: 10000 });
    assert.equal(await card.getByText("not connected").count(), 0);
    const now = await card.locator("[data-last-seen]").getAttribute("data-last-seen");
    assert.ok(Date.parse(now) > Date.parse(before), `last seen moved: ${before} → ${now}`);
    await shot("runners");
  } finally { ch.close(); }
  await card.locator('[data-presence="offline"]').waitFor({ timeout: 10000 });
});

test(`a ${ROUNDS}-round run's timeline renders and stays responsive`, async () => {
  const step = (prompt) => ({ model: { prompt, model: "scripted/long", kernel_tools: ["nexus.tools.search"] } });
  const id = await n.runWith({ approval_mode: "bypass", steps: [step("First half."), step("Second half.")] });
  const done = await n.waitRun(id, ["completed", "needs_attention"], 240000);
  assert.equal(done.status, "completed", JSON.stringify(done.attention));
  const t0 = Date.now();
  await page.goto(`${n.base}/console/#/runs/${id}?tab=timeline`);
  await page.waitForFunction((want) => Number(document.querySelector("#timeline")?.dataset.rows) === want, 2 * ROUNDS - 2, { timeout: 60000 });
  const rendered = Date.now() - t0;
  // A generous sanity bound only; bench/console/ measures.
  assert.ok(rendered < 30000, `rendered in ${rendered} ms`);
  // Interactive: scrolling to the end and opening the last bar answer promptly.
  const t1 = Date.now();
  await page.locator("#timeline").evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await page.locator("#timeline").focus();
  await page.keyboard.press("End");
  const frame = await page.evaluate(() => new Promise((r) => { const s = performance.now(); requestAnimationFrame(() => r(performance.now() - s)); }));
  assert.ok(frame < 2000, `a frame took ${frame} ms`);
  assert.ok(Date.now() - t1 < 10000);
  const { runs } = await n.call("GET", n.W("/runs?order=desc&limit=1"));
  assert.equal(runs[0].summary.rounds, ROUNDS);
  assert.deepEqual(page.problems, []);
  // The documented runs list: every run of this file, one of them held.
  const held = await n.run("hold", { mode: "ask", runner: true, prompt: "Tidy the release notes\nand post them." });
  await page.goto(`${n.base}/console/#/runs`);
  await page.locator(`tr[data-run="${held}"] [data-waiting="approval"]`).waitFor({ timeout: 15000 });
  await shot("runs");
  // The documented graph: a held run, its statuses in their colours.
  await page.goto(`${n.base}/console/#/runs/${held}?tab=graph`);
  await page.locator("#graph svg").waitFor({ timeout: 20000 });
  await page.locator(".legend .swatch").filter({ hasText: "needs_approval" }).waitFor();
  await shot("graph");
});
