// Conversations: the workspace's top-level conversations (`GET W/conversations`), and a button
// to start one.

import { api, W } from "./api.js";
import { act, age, h } from "./ui.js";

export async function render(view, { query, signal }) {
  const archived = query.get("archived") || "exclude";
  const { conversations } = await api(`${W()}/conversations?archived=${archived}`, { signal });
  const title = h("input", { placeholder: "title (optional)", "aria-label": "New conversation title" });
  view.replaceChildren(
    h("div.bar", {}, h("h1.grow", {}, "Conversations"),
      h("a", { href: archived === "exclude" ? "#/conversations?archived=only" : "#/conversations" }, archived === "exclude" ? "Archived" : "Active"),
      title,
      h("button", { onclick: async () => {
        const r = await act(() => api(`${W()}/conversations`, { method: "POST", body: { conversation: title.value.trim() ? { title: title.value.trim() } : {} } }));
        if (r) location.hash = `#/conversations/${r.conversation.public_id}`;
      } }, "New conversation")),
    conversations.length
      ? h("table", {}, h("thead", {}, h("tr", {}, ["Conversation", "Status", "Created"].map((x) => h("th", {}, x)))),
        h("tbody", {}, conversations.map((c) => h("tr.row-link", { tabindex: 0, onclick: () => { location.hash = `#/conversations/${c.public_id}`; }, onkeydown: (e) => { if (e.key === "Enter") location.hash = `#/conversations/${c.public_id}`; } },
          h("td", {}, h("a", { href: `#/conversations/${c.public_id}` }, c.title || c.public_id)),
          h("td", {}, c.archived ? "archived" : "active"),
          h("td", { title: c.created_at }, age(c.created_at))))))
      : h("p.muted", {}, "No conversations."));
}
