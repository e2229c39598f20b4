// Approvals: the workspace's held calls (`GET W/approvals`), polled every 1.5 s so a row leaves
// when anyone decides. Polling, not a stream: held calls span every run of the workspace, and
// there is no workspace-wide feed; one page a poll is cheap.

import { api, poll, W } from "./api.js";
import { effectBadges, h, json, shortId } from "./ui.js";
import { decideBar } from "./actions.js";

export async function render(view, { signal }) {
  const list = h("div", { id: "approvals" });
  const empty = h("p.muted", { hidden: true }, "Nothing is waiting for approval.");
  view.replaceChildren(h("div.bar", {}, h("h1.grow", {}, "Approvals"), h("span.live", {}, "● live")), empty, list);
  const cards = new Map();
  const refresh = async () => {
    const all = [];
    let after = "";
    do {
      const r = await api(`${W()}/approvals?limit=200${after ? `&after=${after}` : ""}`, { signal });
      all.push(...r.approvals);
      after = r.pagination?.next_after;
    } while (after);
    const keep = new Set();
    for (const a of all) {
      const id = `${a.run_public_id}/${a.task_key}`;
      keep.add(id);
      if (!cards.has(id)) { const c = card(a, refresh); cards.set(id, c); list.append(c); }
    }
    for (const [id, c] of cards) if (!keep.has(id)) { c.remove(); cards.delete(id); }
    empty.hidden = cards.size > 0;
  };
  await poll(refresh, 1500, signal);
}

function card(a, refresh) {
  const name = a.tool_alias && a.tool_alias !== a.tool_name ? `${a.tool_alias} (${a.tool_name})` : a.tool_name;
  return h("div.card", { "data-approval": `${a.run_public_id}/${a.task_key}` },
    h("div.bar", {}, h("strong", {}, name), effectBadges(a.effect_profile), h("span.grow"),
      h("span.muted", {}, "run ", h("a.mono", { href: `#/runs/${a.run_public_id}` }, shortId(a.run_public_id)), ` · ${a.task_key}`,
        a.deadline_at ? ` · expires ${a.deadline_at.slice(0, 16).replace("T", " ")}` : "")),
    json(a.tool_input),
    decideBar(a.run_public_id, a.task_key, refresh));
}

