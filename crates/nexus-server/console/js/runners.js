// Runners the caller may use (`GET /agent_api/v1/executors?kind=runner`): presence, announced
// tools with their effect profiles, environment and documents.

import { API, api, poll } from "./api.js";
import { age, effectBadges, h, json, kv } from "./ui.js";

export async function render(view, { signal }) {
  const list = h("div", { id: "runners" });
  view.replaceChildren(h("div.bar", {}, h("h1.grow", {}, "Runners"), h("span.live", {}, "● live")), list);
  // Polled (every 5 s): presence and last-seen move as runners connect and leave; cards that
  // were opened (Environment) stay open across a refresh.
  await poll(async () => {
    const { executors } = await api(`${API}/executors?kind=runner`, { signal });
    const open = new Set([...list.querySelectorAll("details[open]")].map((d) => d.closest("[data-runner]")?.dataset.runner));
    list.replaceChildren(...(executors.length ? executors.map((x) => runner(x, open.has(x.public_id))) : [h("p.muted", {}, "No runner is eligible for you.")]));
  }, 5000, signal);
}

/** Discovery's `presence` (executor.md §3): `online` while a push channel is open, `offline`
 *  once seen, `not_yet_seen` otherwise. */
export const PRESENCE = {
  online: ["s-completed", "online", "its push channel is open"],
  offline: ["s-canceled", "offline", "no push channel is open; it may still poll its inbox"],
  not_yet_seen: ["s-pending", "not yet seen", "it has never announced or connected"],
};

function runner(x, envOpen = false) {
  const [cls, word, why] = PRESENCE[x.presence] || ["", String(x.presence), ""];
  return h("div.card", { "data-runner": x.public_id },
    h("div.bar", {}, h("h2.grow", {}, x.display_name),
      h("span.badge", { class: cls, "data-presence": x.presence, title: why }, word),
      h("span.badge", {}, x.status), h("span.badge", {}, x.assignment_scope)),
    kv([["Id", h("span.mono", {}, x.public_id)], ["Last seen", h("span", { "data-last-seen": x.last_seen_at || "" }, x.last_seen_at ? `${x.last_seen_at} (${age(x.last_seen_at)})` : "never")],
      ["Presence", `${word}: ${why}`]]),
    h("h3", {}, `Tools (${(x.served_tools || []).length})`),
    h("table", {}, h("tbody", {}, (x.served_tools || []).map((t) => h("tr", {},
      h("td.mono", {}, t.name), h("td", {}, effectBadges(t.effect_profile)), h("td.muted", {}, t.description || "operator-only"))))),
    x.served_documents?.length ? [h("h3", {}, "Documents"), h("ul", {}, x.served_documents.map((d) => h("li", {}, h("strong", {}, d.name), " — ", d.description)))] : null,
    h("details", { open: envOpen }, h("summary", {}, "Environment"), json(x.environment || {})));
}
