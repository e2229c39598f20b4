// The event log (`GET R/events`), newest at the bottom, extended live by the run's stream.

import { api, R } from "./api.js";
import { h } from "./ui.js";

export async function mount(el, run, signal) {
  const tbody = h("tbody", { id: "events" });
  const more = h("button", { hidden: true }, "More");
  el.replaceChildren(h("table", {}, h("thead", {}, h("tr", {}, ["#", "At", "Type", "Task", "Data"].map((x) => h("th", {}, x)))), tbody), h("p", {}, more));
  let after = 0;
  const seen = new Set();
  const add = (e) => {
    if (seen.has(e.sequence)) return;
    seen.add(e.sequence);
    tbody.append(h("tr", {}, h("td", {}, e.sequence), h("td.mono.nowrap", { title: e.at }, e.at_ms !== undefined ? new Date(e.at_ms).toISOString().slice(11, 23) : e.at?.slice(11, 23) || ""), h("td", {}, e.type),
      h("td.mono.nowrap", {}, e.task_key || ""), h("td.mono", {}, JSON.stringify(e.data))));
  };
  const page = async () => {
    const r = await api(`${R(run)}/events?after=${after}&limit=500`, { signal });
    r.events.forEach(add);
    if (r.events.length) after = r.events[r.events.length - 1].sequence;
    more.hidden = r.events.length < 500;
  };
  more.addEventListener("click", page);
  await page();
  return {
    event(f) { if (Number(f.id) === after + 1 && more.hidden) { add(f.data && f.data.sequence !== undefined ? f.data : { sequence: Number(f.id), type: f.event, data: f.data }); after = Number(f.id); } },
  };
}
