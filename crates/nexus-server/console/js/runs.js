// Runs: newest first (`GET W/runs?order=desc`), a status filter, polled every 2 s. Each row reads
// its run's `summary` (first prompt line, model, what it waits on, rounds, tool calls, tokens),
// served with the page, so a page is one request. Polling, not a stream: the workspace has no
// run-list feed, and one small page every 2 s is cheap.

import { api, poll, W } from "./api.js";
import { age, duration, h, shortId, span, status, tokens, waitingBadges } from "./ui.js";

const STATUSES = ["", "pending", "running", "needs_attention", "canceling", "completed", "canceled"];
const PAGE = 50;

export async function render(view, { query, signal }) {
  const filter = query.get("status") || "";
  const select = h("select", { id: "status-filter", "aria-label": "Status" },
    STATUSES.map((s) => h("option", { value: s, selected: s === filter }, s || "all statuses")));
  select.addEventListener("change", () => { location.hash = select.value ? `#/runs?status=${select.value}` : "#/runs"; });
  const live = h("span.live", {}, "●  live");
  const tbody = h("tbody", { id: "runs" });
  const older = h("tbody");
  const more = h("button", { hidden: true }, "Older runs");
  const empty = h("p.muted", { hidden: true }, "No runs yet.");
  view.replaceChildren(
    h("div.bar", {}, h("h1.grow", {}, "Runs"), h("label", { for: "status-filter" }, "Status"), select, live),
    h("table.runs", {}, h("thead", {}, h("tr", {}, ["Run", "Status", "Model", "Rounds", "Tools", "Tokens", "Duration", "Created"].map((x) => h("th", {}, x)))), tbody, older),
    empty, h("p", {}, more));

  const q = (after) => `${W()}/runs?order=desc&limit=${PAGE}${filter ? `&status=${filter}` : ""}${after ? `&after=${after}` : ""}`;
  let next = null;
  more.addEventListener("click", async () => {
    const page = await api(q(next), { signal });
    older.append(...page.runs.map(row));
    next = page.pagination.next_after;
    more.hidden = !next;
  });
  await poll(async () => {
    const page = await api(q(), { signal });
    tbody.replaceChildren(...page.runs.map(row));
    if (!older.childElementCount) { next = page.pagination.next_after; more.hidden = !next; }
    empty.hidden = page.runs.length > 0;
    live.classList.remove("off");
  }, 2000, signal);
}

/** What the run is about: its first prompt line, or its conversation's title and turn. */
function about(run, sum) {
  const hosted = run.hosting?.kind === "conversation";
  if (hosted) {
    const title = sum.conversation_title || "untitled conversation";
    return [h("span", {}, title), h("span.muted", {}, ` · turn ${sum.turn_position ?? "?"}`)];
  }
  return sum.prompt ? h("span", {}, sum.prompt) : h("span.muted", {}, "(no prompt)");
}

function row(run) {
  const sum = run.summary || {};
  const open = () => { location.hash = `#/runs/${run.public_id}`; };
  return h("tr.row-link", { tabindex: 0, "data-run": run.public_id, onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); } },
    h("td.about", {}, h("a", { href: `#/runs/${run.public_id}`, title: run.public_id }, about(run, sum)),
      h("div.sub.mono", {}, shortId(run.public_id), run.approval_mode !== "bypass" ? h("span.muted", {}, ` · ${run.approval_mode}`) : null)),
    h("td", {}, status(run.status), waitingBadges(sum.waiting_on),
      run.attention ? h("div.sub.error-text", {}, `${run.attention.reason} at ${run.attention.task_key}`) : null),
    h("td.mono.sub", {}, sum.model || ""),
    h("td.num", {}, sum.rounds ?? ""),
    h("td.num", {}, sum.tool_calls ?? ""),
    h("td.num", { title: `${sum.input_tokens ?? 0} input, ${sum.output_tokens ?? 0} output tokens` }, tokens(sum)),
    h("td.num", { title: `${run.started_at || "not started"} → ${run.ended_at || "now"}` }, sum.started_at_ms ? span((sum.ended_at_ms ?? Date.now()) - sum.started_at_ms) : duration(run.started_at, run.ended_at)),
    h("td", { title: run.created_at }, age(run.created_at)));
}
