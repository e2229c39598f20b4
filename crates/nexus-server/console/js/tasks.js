// Every task of the run (`GET R/tasks`), including awaits and hidden rows, with the verbs that
// apply; a row opens to its full read.

import { api, R } from "./api.js";
import { age, h, status } from "./ui.js";
import { modelDetail, toolDetail } from "./detail.js";

export async function mount(el, run, signal) {
  const tbody = h("tbody");
  el.replaceChildren(h("table", {}, h("thead", {}, h("tr", {}, ["Task", "Kind", "Status", "Tool / model", "Created"].map((x) => h("th", {}, x)))), tbody));
  const open = new Set();
  return {
    async refresh() {
      const all = [];
      let after = "";
      for (;;) {
        const r = await api(`${R(run)}/tasks?limit=200${after ? `&after=${after}` : ""}`, { signal });
        all.push(...r.tasks);
        after = r.pagination?.next_after;
        if (!after) break;
      }
      tbody.replaceChildren(...all.flatMap((t) => {
        const detail = h("tr", { hidden: !open.has(t.key) }, h("td", { colspan: 5 }));
        const load = async () => {
          detail.firstChild.replaceChildren(await (t.kind === "model_task" ? modelDetail : t.kind === "tool_task" ? toolDetail : async () => h("p.muted", {}, "An await."))(run, t.key, signal));
        };
        if (open.has(t.key)) load();
        const toggle = () => { detail.hidden = !detail.hidden; if (detail.hidden) open.delete(t.key); else { open.add(t.key); load(); } };
        return [h("tr.row-link", { tabindex: 0, onclick: toggle, onkeydown: (e) => { if (e.key === "Enter") toggle(); } },
          h("td.mono", {}, t.key), h("td", {}, t.kind), h("td", {}, status(t.status)),
          h("td", {}, t.tool_name || t.model || ""), h("td", { title: t.created_at }, age(t.created_at))), detail];
      }));
    },
  };
}
