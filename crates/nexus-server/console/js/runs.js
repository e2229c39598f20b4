// Runs: newest first (`GET W/runs?order=desc`), a status filter, polled every 2 s. Polling, not
// a stream: the workspace has no run-list feed, and one small page every 2 s is cheap.

import { api, poll, W } from "./api.js";
import { age, h, status } from "./ui.js";

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
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Run"), h("th", {}, "Status"), h("th", {}, "Attention"), h("th", {}, "Approval"), h("th", {}, "Kind"), h("th", {}, "Created"), h("th", {}, "Ended"))), tbody, older),
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

function row(run) {
  const open = () => { location.hash = `#/runs/${run.public_id}`; };
  return h("tr.row-link", { tabindex: 0, "data-run": run.public_id, onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); } },
    h("td.mono", {}, h("a", { href: `#/runs/${run.public_id}` }, run.public_id)),
    h("td", {}, status(run.status)),
    h("td", {}, run.attention ? `${run.attention.reason} (${run.attention.task_key})` : ""),
    h("td", {}, run.approval_mode),
    h("td", {}, run.hosting?.kind === "conversation" ? "conversation turn" : "standalone"),
    h("td", { title: run.created_at }, age(run.created_at)),
    h("td", { title: run.ended_at || "" }, run.ended_at ? age(run.ended_at) : ""));
}
