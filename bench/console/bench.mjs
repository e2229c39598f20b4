// The console's first load and its 500-round run page.
//
//   node bench/console/bench.mjs            (after cargo build -p nexus-cli; NEXUS_BIN= picks
//                                            another binary, e.g. target/release/nexus)
//
// Seeds 1,000 completed runs and one run of 500 model rounds (two root chains of 250: a chain
// stops at 256 rounds) on a fresh SQLite data dir, then, three times, each in a fresh browser
// context (cold cache, a signed-in tab): (1) loads /console/ and measures the bytes on the wire
// (CDP encodedDataLength: compressed bodies plus headers) and the time from navigation start to
// a runs list with its 50 rows drawn; (2) opens the 500-round run and measures the time to its
// transcript and the longest main-thread task (PerformanceObserver "longtask") while it loads;
// (3) opens the same run's Timeline tab and measures the time to its 998 bars and the longest
// main-thread task.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Nexus, browser, NEXUS, outDir } from "../../tests/console/harness.mjs";

const OUT = outDir("console-bench");

const RUNS = 1000;
const ROUNDS_PER_CHAIN = 250;

const n = await Nexus.start();
const load = () => require_loadavg();
try {
  console.log(`nexus: ${NEXUS}; load ${load()}`);
  n.script("one", [{ text: "Done." }]);
  let t = Date.now();
  const ids = [];
  for (let i = 0; i < RUNS; i++) ids.push(await n.run("one", { prompt: `Run ${i}` }));
  await n.waitRun(ids[ids.length - 1], ["completed"], 120000);
  console.log(`seeded ${RUNS} runs in ${((Date.now() - t) / 1000).toFixed(1)} s`);

  // One script for both chains: a reply is the line numbered by the assistant entries already in
  // the request, and the second step's request carries the first chain's 250 as history.
  const lines = [];
  for (let c = 0; c < 2; c++) {
    for (let i = 0; i < ROUNDS_PER_CHAIN - 1; i++) {
      const k = c * ROUNDS_PER_CHAIN + i;
      lines.push({ text: `Round ${k}: searching.`, tool_calls: [{ name: "tool_search", input: { query: `round ${k}` } }] });
    }
    lines.push({ text: `Finished chain ${c + 1}.` });
  }
  n.script("long", lines);
  t = Date.now();
  const step = (prompt) => ({ model: { prompt, model: "scripted/long", kernel_tools: ["nexus.tools.search"] } });
  const { run } = await n.call("POST", n.W("/runs"), { body: { run: { approval_mode: "bypass", steps: [step("First half."), step("Second half.")] } } });
  await n.call("POST", n.W(`/runs/${run.public_id}/start`), { body: {} });
  const done = await n.waitRun(run.public_id, ["completed", "needs_attention"], 600000);
  if (done.status !== "completed") throw new Error(`the 500-round run ended ${done.status}: ${JSON.stringify(done.attention)}`);
  const { rows } = await n.call("GET", n.W(`/runs/${run.public_id}/transcript`));
  console.log(`500-round run ${run.public_id}: ${rows.length} transcript rows, ${((Date.now() - t) / 1000).toFixed(1)} s`);

  const b = await browser();
  for (let k = 1; k <= 3; k++) {
    const first = await firstLoad(b, n);
    const long = await runPage(b, n, run.public_id, k === 1 ? join(OUT, "run-500.png") : null);
    const tl = await timelinePage(b, n, run.public_id);
    console.log(`#${k} timeline: ${tl.rows} bars at ${tl.ms.toFixed(0)} ms, longest task ${tl.longest.toFixed(0)} ms`);
    console.log(`#${k} first load: ${(first.bytes / 1024).toFixed(1)} KB in ${first.requests} requests, runs list drawn at ${first.ms.toFixed(0)} ms (${first.rows} rows; DOMContentLoaded ${first.dcl.toFixed(0)} ms, runs API answered at ${first.api.toFixed(0)} ms after ${first.apiMs.toFixed(0)} ms) | 500-round run page: transcript at ${long.ms.toFixed(0)} ms, ${long.rows} rows drawn, longest task ${long.longest.toFixed(0)} ms, blocking ${long.blocking.toFixed(0)} ms | load ${load()}`);
  }
  await b.close();
} finally {
  n.stop();
}

function require_loadavg() {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

async function context(b, n) {
  const ctx = await b.newContext({ viewport: { width: 1280, height: 860 } });
  await ctx.addInitScript(([token, ws]) => {
    sessionStorage.setItem("nexus.console.session", JSON.stringify({ token, ws }));
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: "longtask", buffered: true });
    // The moment the page draws what is measured, taken in the page (a poll from the test
    // would add its own round trip).
    new MutationObserver(() => {
      if (!window.__runs && document.querySelectorAll("#runs tr").length >= 50) window.__runs = performance.now();
      if (!window.__transcript && document.querySelector("#transcript > *")) window.__transcript = performance.now();
    }).observe(document, { childList: true, subtree: true });
  }, [n.human, n.ws]);
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  const stats = { bytes: 0, requests: 0 };
  cdp.on("Network.loadingFinished", (e) => { stats.bytes += e.encodedDataLength; stats.requests += 1; });
  return { ctx, page, stats };
}

async function firstLoad(b, n) {
  const { ctx, page, stats } = await context(b, n);
  await page.goto(`${n.base}/console/#/runs`);
  await page.waitForFunction(() => window.__runs);
  const ms = await page.evaluate(() => window.__runs);
  const rows = await page.locator("#runs tr").count();
  await page.waitForTimeout(200);
  // Where the time went: the document's DOMContentLoaded, and when the runs page's API answer ended.
  const parts = await page.evaluate(() => ({
    dcl: performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
    api: performance.getEntriesByType("resource").find((e) => e.name.includes("/runs?order=desc"))?.responseEnd ?? 0,
    apiMs: performance.getEntriesByType("resource").find((e) => e.name.includes("/runs?order=desc"))?.duration ?? 0,
  }));
  const out = { bytes: stats.bytes, requests: stats.requests, ms, rows, ...parts };
  await ctx.close();
  return out;
}

async function runPage(b, n, id, screenshot) {
  const { ctx, page } = await context(b, n);
  await page.goto(`${n.base}/console/#/runs/${id}`);
  await page.waitForFunction(() => window.__transcript);
  const ms = await page.evaluate(() => window.__transcript);
  await page.waitForTimeout(1500);
  const { longest, blocking, rows } = await page.evaluate(() => ({
    longest: Math.max(0, ...window.__long),
    blocking: window.__long.reduce((s, d) => s + Math.max(0, d - 50), 0),
    rows: document.querySelectorAll("#transcript > *").length,
  }));
  if (screenshot) await page.screenshot({ path: screenshot });
  await ctx.close();
  return { ms, longest, blocking, rows };
}

async function timelinePage(b, n, id) {
  const { ctx, page } = await context(b, n);
  await page.goto(`${n.base}/console/#/runs/${id}?tab=timeline`);
  await page.waitForFunction(() => Number(document.querySelector("#timeline")?.dataset.rows) >= 998, null, { timeout: 120000 });
  const ms = await page.evaluate(() => performance.now());
  await page.waitForTimeout(1000);
  const { longest, rows } = await page.evaluate(() => ({
    longest: Math.max(0, ...window.__long),
    rows: Number(document.querySelector("#timeline").dataset.rows),
  }));
  await ctx.close();
  return { ms, longest, rows };
}
