// Conversations: the workspace's top-level conversations (`GET W/conversations`) with their
// summary (turns, last activity, the last message's first line), and a button to start one.

import { api, poll, W } from "./api.js";
import { act, age, h, shortId } from "./ui.js";

export async function render(view, { query, signal }) {
  const archived = query.get("archived") || "exclude";
  const title = h("input", { placeholder: "title (optional)", "aria-label": "New conversation title" });
  const tbody = h("tbody", { id: "conversations" });
  const table = h("table", { hidden: true }, h("thead", {}, h("tr", {}, ["Conversation", "Last message", "Turns", "Last activity", "Created"].map((x) => h("th", {}, x)))), tbody);
  const empty = h("p.muted", { hidden: true }, "No conversations.");
  view.replaceChildren(
    h("div.bar", {}, h("h1.grow", {}, "Conversations"),
      h("a", { href: archived === "exclude" ? "#/conversations?archived=only" : "#/conversations" }, archived === "exclude" ? "Archived" : "Active"),
      title,
      h("button", { onclick: async () => {
        const r = await act(() => api(`${W()}/conversations`, { method: "POST", body: { conversation: title.value.trim() ? { title: title.value.trim() } : {} } }));
        if (r) location.hash = `#/conversations/${r.conversation.public_id}`;
      } }, "New conversation")),
    table, empty);
  // Polled (every 3 s), as the runs list: last messages and activity move while agents answer.
  await poll(async () => {
    const { conversations } = await api(`${W()}/conversations?archived=${archived}`, { signal });
    tbody.replaceChildren(...conversations.map(row));
    table.hidden = !conversations.length;
    empty.hidden = conversations.length > 0;
  }, 3000, signal);
}

function row(c) {
  const sum = c.summary || {};
  const open = () => { location.hash = `#/conversations/${c.public_id}`; };
  return h("tr.row-link", { tabindex: 0, "data-conversation": c.public_id, onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); } },
    h("td.about", {}, h("a", { href: `#/conversations/${c.public_id}` }, c.title || "untitled"),
      h("div.sub.mono", {}, shortId(c.public_id), c.archived ? h("span.muted", {}, " · archived") : null)),
    h("td.last", {}, sum.last_message ? [h("span.muted", {}, `${sum.last_role}: `), sum.last_message] : h("span.muted", {}, "no turns yet")),
    h("td.num", {}, sum.turn_count ?? ""),
    h("td", { title: sum.last_activity_at || "" }, sum.last_activity_at ? age(sum.last_activity_at) : ""),
    h("td", { title: c.created_at }, age(c.created_at)));
}
