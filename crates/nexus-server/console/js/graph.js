// The run graph: `GET R/graph`'s nodes and edges drawn as a Mermaid flowchart by the vendored
// Mermaid, loaded only here (3.5 MB before gzip; the first load stays small). Each node reads
// what it did (the tool's name, the round's model) with its key below; its status is its colour
// (the legend under the graph). The server's own Mermaid text stays under "Mermaid text".

import { api, R } from "./api.js";
import { h } from "./ui.js";

let loading = null;
function mermaid() {
  loading ??= new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = new URL("../vendor/mermaid.min.js", import.meta.url).href;
    s.onload = () => {
      globalThis.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral", flowchart: { useMaxWidth: true } });
      resolve(globalThis.mermaid);
    };
    s.onerror = () => { loading = null; reject(new Error("could not load the graph renderer")); };
    document.head.append(s);
  });
  return loading;
}

/** Fill and border of each status (the legend and the classDefs). */
export const STATUS_COLOURS = {
  completed: ["#dcf3e2", "#1d7a3a"], running: ["#dde7fb", "#2458c6"], dispatched: ["#dde7fb", "#2458c6"],
  waiting: ["#eef0f3", "#5f6b7a"], needs_approval: ["#fdf0d5", "#9a6100"], awaiting_input: ["#fdf0d5", "#9a6100"],
  failed: ["#fbdedb", "#b3261e"], timed_out: ["#fbdedb", "#b3261e"], uncertain: ["#fbdedb", "#b3261e"],
  canceled: ["#f1e4e3", "#8a4b46"], skipped: ["#f4f6f9", "#8b95a3"],
};

/** What a node did, in words: the tool (its alias first), the round's model, or an await. */
export function nodeLabel(n) {
  if (n.kind === "tool_task") return n.tool_alias || n.tool_name || "tool";
  if (n.kind === "model_task") return n.model ? `model ${n.model}` : "model round";
  return "await";
}

const esc = (s) => String(s).replace(/[<>&]/g, "").replace(/"/g, "#quot;");

/** The flowchart text of a graph read. */
export function flowchart(g) {
  const lines = ["flowchart TD"];
  for (const n of g.nodes) lines.push(`  ${n.id}["${esc(nodeLabel(n))}<br/><small>${esc(n.key)}</small>"]`);
  const seen = new Set();
  for (const e of g.edges) {
    const k = `${e.from}>${e.to}`;
    if (seen.has(k)) continue;
    seen.add(k);
    lines.push(`  ${e.from} --> ${e.to}`);
  }
  const used = [...new Set(g.nodes.map((n) => n.status))];
  for (const s of used) {
    const [fill, stroke] = STATUS_COLOURS[s] || ["#fff", "#5f6b7a"];
    lines.push(`  classDef st_${s} fill:${fill},stroke:${stroke},color:#1d2126`);
  }
  for (const n of g.nodes) lines.push(`  class ${n.id} st_${n.status}`);
  return lines.join("\n");
}

function legend(statuses) {
  return h("p.legend", {}, h("strong", {}, "Status:"), statuses.map((s) => {
    const [fill, stroke] = STATUS_COLOURS[s] || ["#fff", "#5f6b7a"];
    return h("span.swatch", { style: `background:${fill};border-color:${stroke}` }, s);
  }));
}

let seq = 0;

export async function mount(el, run, signal) {
  const out = h("div.graph", { id: "graph" }, h("p.muted", {}, "Rendering…"));
  const key = h("div");
  const text = h("pre");
  el.replaceChildren(out, key, h("details", {}, h("summary", {}, "Mermaid text (as the server writes it)"), text));
  let last = "";
  return {
    async refresh() {
      const [g, m] = await Promise.all([api(`${R(run)}/graph`, { signal }), mermaid()]);
      const mine = flowchart(g);
      if (mine === last || signal.aborted) return;
      last = mine;
      text.textContent = g.mermaid;
      key.replaceChildren(legend([...new Set(g.nodes.map((n) => n.status))]));
      if (g.nodes.length > 400) {
        out.replaceChildren(h("p.muted", {}, `${g.nodes.length} nodes: too many to draw here; the Timeline tab shows every task, and the Mermaid text is below.`));
        return;
      }
      const { svg } = await m.render(`g${++seq}`, mine);
      // Parsed as HTML: the labels' line breaks are HTML inside foreignObject, which an XML
      // parse refuses (`<br>` is not closed).
      const doc = new DOMParser().parseFromString(svg, "text/html");
      out.replaceChildren(document.importNode(doc.body.querySelector("svg"), true));
    },
  };
}
