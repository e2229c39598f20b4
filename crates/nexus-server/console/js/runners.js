// Runners the caller may use (`GET /agent_api/v1/executors?kind=runner`): presence, announced
// tools with their effect profiles, environment and documents.

import { API, api } from "./api.js";
import { age, effectBadges, h, json, kv } from "./ui.js";

export async function render(view, { signal }) {
  const { executors } = await api(`${API}/executors?kind=runner`, { signal });
  view.replaceChildren(h("h1", {}, "Runners"),
    executors.length ? h("div", {}, executors.map(runner)) : h("p.muted", {}, "No runner is eligible for you."));
}

function runner(x) {
  const connected = x.presence === "connected" || x.presence?.connected === true;
  return h("div.card", { "data-runner": x.public_id },
    h("div.bar", {}, h("h2.grow", {}, x.display_name),
      h("span.badge", { class: connected ? "s-completed" : "s-canceled" }, connected ? "connected" : "not connected"),
      h("span.badge", {}, x.status), h("span.badge", {}, x.assignment_scope)),
    kv([["Id", h("span.mono", {}, x.public_id)], ["Last seen", x.last_seen_at ? `${x.last_seen_at} (${age(x.last_seen_at)})` : "never"],
      ["Presence", typeof x.presence === "string" ? x.presence : JSON.stringify(x.presence)]]),
    h("h3", {}, `Tools (${(x.served_tools || []).length})`),
    h("table", {}, h("tbody", {}, (x.served_tools || []).map((t) => h("tr", {},
      h("td.mono", {}, t.name), h("td", {}, effectBadges(t.effect_profile)), h("td.muted", {}, t.description || "operator-only"))))),
    x.served_documents?.length ? [h("h3", {}, "Documents"), h("ul", {}, x.served_documents.map((d) => h("li", {}, h("strong", {}, d.name), " — ", d.description)))] : null,
    h("details", {}, h("summary", {}, "Environment"), json(x.environment || {})));
}
