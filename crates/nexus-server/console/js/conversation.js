// One conversation: its turns (each reply links to the run that hosts it), its children, and an
// input box that queues or steers. Follows `GET C/events/stream` and reloads the turns on each
// event.

import { api, follow, W } from "./api.js";
import { act, h, shortId, status } from "./ui.js";

export async function render(view, { arg: id, signal }) {
  const C = `${W()}/conversations/${id}`;
  const { conversation: c } = await api(C, { signal });
  const turns = h("div", { id: "turns" });
  const children = h("ul");
  const live = h("span.live.off", {}, "○ connecting");
  const text = h("textarea", { id: "input", placeholder: "Write to the agent… (Ctrl+Enter sends)", "aria-label": "Message" });
  const mode = h("select", { "aria-label": "Delivery" }, h("option", { value: "queue" }, "queue"), h("option", { value: "steer" }, "steer the running reply"));
  const send = async () => {
    if (!text.value.trim()) return;
    const ok = await act(() => api(`${C}/inputs`, { method: "POST", body: { input: { content: text.value, delivery_mode: mode.value } } }), "Sent");
    if (ok) { text.value = ""; refresh().catch(() => {}); }
  };
  text.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(); });
  view.replaceChildren(
    h("div.bar", {}, h("h1.grow", {}, c.title || "Conversation", h("span.sub.mono", { title: c.public_id }, shortId(c.public_id))), live,
      h("button.danger", { onclick: () => act(() => api(`${C}/cancellation`, { method: "POST", body: {} }), "Canceled the running turn") }, "Cancel turn")),
    c.parent ? h("p", {}, "Child of ", h("a", { href: `#/conversations/${c.parent.public_id}` }, c.parent.label || c.parent.public_id)) : "",
    turns,
    h("div.card", {}, text, h("div.bar", {}, mode, h("button.primary", { onclick: send }, "Send"))),
    h("h2", {}, "Children"), children);

  const refresh = async () => {
    const all = [];
    let after = "";
    do {
      const r = await api(`${C}/turns?limit=200${after ? `&after=${after}` : ""}`, { signal });
      all.push(...r.turns);
      after = r.pagination?.next_after;
    } while (after);
    turns.replaceChildren(...all.slice(-200).map(turn));
    const kids = await api(`${C}/children`, { signal }).catch(() => ({ conversations: [] }));
    const list = kids.conversations || kids.children || [];
    children.replaceChildren(...(list.length ? list.map((k) => h("li", {}, h("a", { href: `#/conversations/${k.public_id}` }, k.parent?.label || k.title || k.public_id))) : [h("li.muted", {}, "none")]));
  };
  await refresh();
  let t = null;
  follow(`${C}/events/stream`, {
    signal,
    onState: (on) => { live.className = on ? "live" : "live off"; live.textContent = on ? "● live" : "○ reconnecting"; },
    onFrame: () => { clearTimeout(t); t = setTimeout(() => refresh().catch(() => {}), 200); },
  });
}

function turn(t) {
  const content = typeof t.content === "string" ? t.content : JSON.stringify(t.content);
  return h("div.msg", { class: t.role },
    h("span.who", {}, `${t.role} · #${t.position} `, status(t.status),
      t.run_public_id ? [" · ", h("a", { href: `#/runs/${t.run_public_id}` }, "open run")] : null),
    h("div.text", {}, content || ""),
    t.error ? h("p.error-text", {}, `${t.error.key || ""}${t.error.detail ? `: ${t.error.detail}` : ""}`) : null);
}
