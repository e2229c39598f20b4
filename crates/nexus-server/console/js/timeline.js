// The run's timeline: every model round and tool task as a bar on one time axis, its waiting
// (queued, held for approval, waiting for a runner, waiting on a child) drawn apart from its work,
// live while the run runs. Phases come from what the server records: `GET R/tasks` names the
// rows (kind, tool, model) and `GET R/events` times them (`tasks_appended`, every
// `task_status_changed`, `task_claimed`), at `at_ms` (milliseconds). Only the rows in view are
// drawn, on one canvas, so a run of 500 rounds scrolls as lightly as one of five. A bar opens its
// task below the chart (click, or arrow keys and Enter).

import { api, R } from "./api.js";
import { h, span } from "./ui.js";
import { modelDetail, toolDetail } from "./detail.js";

const ROW = 22, AXIS = 26, LABEL = 260, KEY = 86, PAD = 16;
const SETTLED = new Set(["completed", "failed", "canceled", "timed_out", "skipped", "uncertain"]);

/** A phase's name, whether it is waiting (hatched, pale) or work (solid), and its colour. */
export const PHASES = {
  queued: { wait: true, colour: "#c9d0d9", label: "queued (waiting on its inputs)" },
  held: { wait: true, colour: "#e8b04a", label: "held for approval" },
  runner: { wait: true, colour: "#8fb0e8", label: "waiting for a runner" },
  child: { wait: true, colour: "#d9a0d6", label: "waiting on a child or an input" },
  model: { wait: false, colour: "#5b3fb0", label: "model round" },
  tool: { wait: false, colour: "#1d7a3a", label: "tool at work" },
};

const ms = (e) => e.at_ms ?? Date.parse(e.at);

/** The phase a task is in while it has `status` (`claimed`: a runner took it). */
function phaseOf(task, status, claimed) {
  if (status === "waiting") return "queued";
  if (status === "needs_approval") return "held";
  if (status === "awaiting_input") return "child";
  if (status === "dispatched") return claimed ? "tool" : "runner";
  if (status === "running") return task.kind === "model_task" ? "model" : "tool";
  return null;
}

/**
 * The bars of a run: one per task, in creation order, each a list of `{phase, from, to}`
 * (`to` null while open) and its end (`null` while not settled). Pure: tested in the browser
 * test through the page, and usable on its own.
 */
export function bars(tasks, events) {
  const byKey = new Map(tasks.map((t) => [t.key, { task: t, start: null, steps: [], end: null, claimed: null, status: null }]));
  for (const e of events) {
    if (e.type === "tasks_appended") {
      for (const k of e.data?.keys || []) { const b = byKey.get(k); if (b && b.start === null) b.start = ms(e); }
      continue;
    }
    const b = e.task_key && byKey.get(e.task_key);
    if (!b) continue;
    if (e.type === "task_status_changed") {
      // A retry starts the row again: its earlier generation's phases stay drawn.
      b.steps.push({ at: ms(e), from: e.data?.from, to: e.data?.to });
      if (SETTLED.has(e.data?.to)) b.end = ms(e); else if (b.end !== null) b.end = null;
    } else if (e.type === "task_claimed") b.claimed = ms(e);
  }
  const out = [];
  for (const b of byKey.values()) {
    const t = b.task;
    const created = b.start ?? Date.parse(t.created_at);
    const phases = [];
    let status = b.steps[0]?.from || "waiting", from = created;
    const close = (to) => {
      const end = to ?? Infinity;
      if (end <= from && status !== "running") return; // an instant's wait draws nothing
      if (status === "dispatched" && b.claimed !== null && b.claimed > from && b.claimed < end) {
        phases.push({ phase: "runner", from, to: b.claimed }, { phase: "tool", from: b.claimed, to });
      } else {
        const p = phaseOf(t, status, b.claimed !== null && b.claimed <= from);
        if (p) phases.push({ phase: p, from, to });
      }
    };
    for (const s of b.steps) {
      close(Math.max(s.at, from));
      status = s.to; from = Math.max(s.at, from);
    }
    if (!SETTLED.has(status)) close(null);
    out.push({ task: t, start: created, end: SETTLED.has(t.status) || SETTLED.has(status) ? (b.end ?? Date.parse(t.settled_at || t.created_at)) : null, phases, status: t.status });
  }
  return out;
}

/** The label of a row: what it did. */
function label(t) {
  if (t.kind === "tool_task") return `${t.tool_alias || t.tool_name || "tool"}`;
  if (t.kind === "model_task") return `model ${t.model || ""}`.trim();
  return "await";
}

function niceStep(total, px) {
  const target = total / Math.max(1, px / 110);
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000];
  return steps.find((s) => s >= target) || 3600000 * Math.ceil(target / 3600000);
}

export async function mount(el, run, signal) {
  const legend = h("p.legend", {}, h("strong", {}, "Phases:"), Object.entries(PHASES).map(([k, p]) =>
    h("span.swatch", { class: p.wait ? "wait" : "", style: `--c:${p.colour}`, "data-phase": k }, p.label)));
  const info = h("span.muted", { id: "timeline-info" }, "Loading…");
  const scroller = h("div.tl-scroll", { id: "timeline", tabindex: 0, role: "listbox", "aria-label": "Timeline: arrow keys choose a task, Enter opens it" });
  const spacer = h("div.tl-spacer");
  const canvas = h("canvas.tl-canvas");
  const tip = h("div.tl-tip", { hidden: true });
  scroller.append(canvas, spacer);
  const detail = h("div", { id: "timeline-detail" });
  el.replaceChildren(h("div.bar", {}, legend, h("span.grow"), info), h("div.tl-wrap", {}, scroller, tip), detail);

  const tasks = [];
  const seen = new Set();
  const events = [];
  let taskCursor = "", eventAfter = 0, rows = [], t0 = 0, t1 = 1, selected = -1, live = true, runEnded = false;

  const fetchTasks = async () => {
    for (;;) {
      const r = await api(`${R(run)}/tasks?limit=200${taskCursor ? `&after=${taskCursor}` : ""}`, { signal });
      for (const t of r.tasks) if (!seen.has(t.key)) { seen.add(t.key); tasks.push(t); }
      if (r.pagination?.next_after) taskCursor = r.pagination.next_after;
      if (!r.pagination?.next_after || r.tasks.length < 200) break;
    }
  };
  const fetchEvents = async () => {
    for (;;) {
      const r = await api(`${R(run)}/events?after=${eventAfter}&limit=500`, { signal });
      events.push(...r.events);
      if (r.events.length) eventAfter = r.events[r.events.length - 1].sequence;
      if (r.events.length < 500) break;
    }
  };

  const rebuild = () => {
    // A task appended since the last read of the list is read on the next refresh.
    rows = bars(tasks, events);
    runEnded = events.some((e) => e.type === "run_status_changed" && ["completed", "canceled"].includes(e.data?.to));
    live = rows.some((b) => b.end === null) && !runEnded;
    t0 = Math.min(...rows.map((b) => b.start).filter(Number.isFinite), Date.now());
    const ends = rows.map((b) => b.end ?? (live ? Date.now() : b.start)).filter(Number.isFinite);
    t1 = Math.max(t0 + 1, ...ends);
    spacer.style.height = `${AXIS + rows.length * ROW + 8}px`;
    // As tall as its rows, up to most of the window (then it scrolls).
    scroller.style.height = `${Math.min(AXIS + rows.length * ROW + 10, Math.max(240, Math.round(window.innerHeight * 0.7)))}px`;
    scroller.dataset.rows = String(rows.length);
    const work = rows.reduce((n, b) => n + b.phases.filter((p) => !PHASES[p.phase]?.wait).length, 0);
    info.textContent = `${rows.length} tasks · ${span(t1 - t0)}${live ? " · live" : ""}`;
    scroller.dataset.workPhases = String(work);
    draw();
  };

  const x = (t, w) => LABEL + ((t - t0) / (t1 - t0)) * (w - LABEL - PAD);

  function draw() {
    const w = scroller.clientWidth, hgt = scroller.clientHeight;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = w * dpr; canvas.height = hgt * dpr;
    canvas.style.width = `${w}px`; canvas.style.height = `${hgt}px`;
    spacer.style.marginTop = `-${hgt}px`;
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, hgt);
    g.font = "12px system-ui, sans-serif";
    g.textBaseline = "middle";
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor((top) / ROW) - 1);
    const last = Math.min(rows.length, Math.ceil((top + hgt) / ROW) + 1);
    // Grid lines and the axis.
    const step = niceStep(t1 - t0, w - LABEL - PAD);
    g.strokeStyle = "#eef0f3"; g.fillStyle = "#5f6b7a";
    for (let t = 0; t <= t1 - t0; t += step) {
      const px = Math.round(x(t0 + t, w)) + 0.5;
      g.beginPath(); g.moveTo(px, AXIS); g.lineTo(px, hgt); g.stroke();
      g.fillText(span(t), px + 3, AXIS / 2);
    }
    const now = Date.now();
    for (let i = first; i < last; i++) {
      const b = rows[i];
      const y = AXIS + i * ROW - top;
      if (y + ROW < AXIS || y > hgt) continue;
      if (i === selected) { g.fillStyle = "#eef3fd"; g.fillRect(0, y, w, ROW); }
      g.fillStyle = b.task.kind === "model_task" ? "#1d2126" : "#3b4450";
      const indent = b.task.kind === "model_task" ? 6 : 18;
      g.fillText(clip(g, label(b.task), LABEL - indent - KEY - 6), indent, y + ROW / 2);
      g.fillStyle = "#8b95a3";
      g.fillText(clip(g, b.task.key, KEY - 8), LABEL - KEY, y + ROW / 2);
      for (const p of b.phases) {
        const def = PHASES[p.phase];
        const xa = x(p.from, w), xb = Math.max(xa + 2, x(p.to ?? now, w));
        g.fillStyle = def.colour;
        if (def.wait) {
          // Waiting: a thinner, paler bar with its colour's outline, apart from the work.
          g.globalAlpha = 0.55; g.fillRect(xa, y + 7, xb - xa, ROW - 14); g.globalAlpha = 1;
          g.strokeStyle = def.colour; g.strokeRect(xa + 0.5, y + 6.5, Math.max(1, xb - xa - 1), ROW - 13);
        } else g.fillRect(xa, y + 4, xb - xa, ROW - 8);
      }
      if (["failed", "timed_out", "uncertain"].includes(b.status) && b.end !== null) {
        g.fillStyle = "#b3261e"; g.fillRect(x(b.end, w) - 2, y + 3, 3, ROW - 6);
      }
    }
    // The axis band stays on top of the rows scrolled under it.
    g.fillStyle = "rgba(255,255,255,.94)"; g.fillRect(0, 0, w, AXIS);
    g.fillStyle = "#5f6b7a";
    for (let t = 0; t <= t1 - t0; t += step) g.fillText(span(t), Math.round(x(t0 + t, w)) + 3, AXIS / 2);
    g.strokeStyle = "#d9dee5"; g.beginPath(); g.moveTo(0, AXIS - 0.5); g.lineTo(w, AXIS - 0.5); g.stroke();
  }

  const rowAt = (ev) => {
    const r = scroller.getBoundingClientRect();
    const y = ev.clientY - r.top + scroller.scrollTop - AXIS;
    const i = Math.floor(y / ROW);
    return ev.clientY - r.top < AXIS || i < 0 || i >= rows.length ? -1 : i;
  };
  const open = async (i) => {
    if (i < 0 || i >= rows.length) return;
    selected = i; draw();
    const t = rows[i].task;
    detail.replaceChildren(h("h2", {}, `${label(t)} `, h("span.mono.muted", {}, t.key)), h("p.muted", {}, "Loading…"));
    const body = t.kind === "model_task" ? modelDetail : t.kind === "tool_task" ? toolDetail : null;
    const phases = h("ul.phases", {}, rows[i].phases.map((p) => h("li", {}, h("span.swatch", { class: PHASES[p.phase].wait ? "wait" : "", style: `--c:${PHASES[p.phase].colour}` }, PHASES[p.phase].label), ` ${span((p.to ?? Date.now()) - p.from)}`)));
    try {
      detail.replaceChildren(h("h2", {}, `${label(t)} `, h("span.mono.muted", {}, t.key)), phases, body ? await body(run, t.key, signal) : h("p.muted", {}, "An await."));
      detail.dataset.task = t.key;
    } catch (e) { detail.append(h("p.error-text", {}, String(e))); }
  };
  scroller.addEventListener("scroll", () => requestAnimationFrame(draw), { passive: true });
  scroller.addEventListener("click", (ev) => open(rowAt(ev)));
  scroller.addEventListener("mousemove", (ev) => {
    const i = rowAt(ev);
    if (i < 0) { tip.hidden = true; return; }
    const b = rows[i];
    tip.hidden = false;
    tip.textContent = `${label(b.task)} · ${b.task.key} · ${b.status}${b.phases.length ? " — " : ""}${b.phases.map((p) => `${p.phase} ${span((p.to ?? Date.now()) - p.from)}`).join(", ")}`;
    const r = scroller.getBoundingClientRect();
    tip.style.top = `${ev.clientY - r.top + 14}px`;
    tip.style.left = `${Math.min(ev.clientX - r.left + 12, r.width - 320)}px`;
  });
  scroller.addEventListener("mouseleave", () => { tip.hidden = true; });
  scroller.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      selected = Math.max(0, Math.min(rows.length - 1, selected + (ev.key === "ArrowDown" ? 1 : -1)));
      const y = selected * ROW;
      if (y < scroller.scrollTop) scroller.scrollTop = y;
      else if (y + ROW + AXIS > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = y + ROW + AXIS - scroller.clientHeight;
      draw();
    } else if (ev.key === "Home" || ev.key === "End") {
      ev.preventDefault();
      selected = ev.key === "Home" ? 0 : rows.length - 1;
      scroller.scrollTop = ev.key === "Home" ? 0 : scroller.scrollHeight;
      draw();
    } else if (ev.key === "Enter") open(selected);
  });
  new ResizeObserver(() => draw()).observe(scroller);
  // While anything is open, the bars grow with the clock.
  const tick = setInterval(() => { if (live && !document.hidden) { t1 = Math.max(t1, Date.now()); draw(); } }, 1000);
  signal.addEventListener("abort", () => clearInterval(tick), { once: true });

  let busy = null;
  return {
    async refresh() {
      // One read at a time; the run page calls this at most every 300 ms while events arrive.
      busy ??= (async () => {
        try {
          await fetchEvents();
          const fresh = events.some((e) => e.type === "tasks_appended" && (e.data?.keys || []).some((k) => !seen.has(k)));
          if (!tasks.length || fresh) await fetchTasks();
          // A status the list read earlier is superseded by the events; keep the newest.
          const latest = new Map();
          for (const e of events) if (e.type === "task_status_changed" && e.task_key) latest.set(e.task_key, e.data?.to);
          for (const t of tasks) if (latest.has(t.key)) t.status = latest.get(t.key);
          rebuild();
        } finally { busy = null; }
      })();
      return busy;
    },
  };
}

function clip(g, text, max) {
  if (g.measureText(text).width <= max) return text;
  let s = text;
  while (s.length > 1 && g.measureText(`${s}…`).width > max) s = s.slice(0, -1);
  return `${s}…`;
}
