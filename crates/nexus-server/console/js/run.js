// A run: its header (status, usage, stop), then Transcript, Timeline, Graph, Tasks and Events tabs. The
// page follows `GET R/events/stream`: a durable event refreshes what it changes (at most once a
// second), a `model_delta` frame streams into the round it names.

import { api, follow, R } from "./api.js";
import { act, age, duration, h, kv, status } from "./ui.js";
import { Transcript } from "./transcript.js";

const TABS = ["transcript", "timeline", "graph", "tasks", "events"];

export async function render(view, { arg: run, query, signal }) {
  const tab = TABS.includes(query.get("tab")) ? query.get("tab") : "transcript";
  const head = h("div");
  const live = h("span.live.off", { id: "live" }, "○ connecting");
  const body = h("div", { id: "tab-body" });
  const tabs = h("div.tabs", { role: "tablist" }, TABS.map((t) =>
    h("button", { role: "tab", "aria-selected": String(t === tab), onclick: () => { location.hash = `#/runs/${run}?tab=${t}`; } }, t[0].toUpperCase() + t.slice(1))));
  view.replaceChildren(head, tabs, body);

  let current = await api(R(run), { signal });
  const drawHead = () => head.replaceChildren(header(run, current, live));
  drawHead();

  let pane;
  if (tab === "transcript") pane = new Transcript(body, run, signal);
  else pane = await (await import(`./${tab === "tasks" ? "tasks" : tab}.js`)).mount(body, run, signal);

  let pending = null;
  const refresh = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      if (signal.aborted) return;
      try { current = await api(R(run), { signal }); drawHead(); await pane.refresh?.(); } catch { /* next event retries */ }
    }, 300);
  };
  await pane.refresh?.();
  follow(`${R(run)}/events/stream`, {
    signal,
    onState: (on, err) => {
      live.className = on ? "live" : "live off";
      live.textContent = on ? "● live" : err ? `○ ${err}` : "○ reconnecting";
    },
    onFrame: (f) => {
      if (f.event === "model_delta") pane.delta?.(f.data.task_key, f.data.delta);
      else if (f.id !== undefined) { pane.event?.(f); refresh(); }
    },
  });
}

function header(run, { run: r, usage }, live) {
  const stoppable = ["pending", "running", "needs_attention"].includes(r.status);
  return h("div", {},
    h("div.bar", {},
      h("h1.grow", {}, "Run ", h("span.mono", {}, run)),
      status(r.status), live,
      stoppable && r.status === "pending" && h("button", { onclick: () => act(() => api(`${R(run)}/start`, { method: "POST", body: {} }), "Started") }, "Start"),
      stoppable && h("button.danger", { id: "stop", onclick: () => { if (confirm("Stop this run? Live work is canceled.")) act(() => api(`${R(run)}/stop`, { method: "POST", body: {} }), "Stopping"); } }, "Stop")),
    kv([
      ["Attention", r.attention ? `${r.attention.reason} at ${r.attention.task_key}` : null],
      ["Duration", r.started_at ? `${duration(r.started_at, r.ended_at)}${r.ended_at ? "" : " so far"}` : null],
      ["Approval", r.approval_mode],
      ["Created", `${r.created_at} (${age(r.created_at)})`],
      ["Ended", r.ended_at],
      ["Hosting", r.hosting?.kind === "conversation" ? h("a", { href: `#/conversations/${r.hosting.conversation_public_id}` }, "a conversation turn") : null],
      ["Usage", usage ? `${usage.input_tokens} in · ${usage.output_tokens} out · ${usage.cache_read_input_tokens} cache read · ${usage.cache_creation_input_tokens} cache write` : null],
    ]));
}
