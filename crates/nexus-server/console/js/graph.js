// The run graph: `GET R/graph`'s Mermaid text, rendered by the vendored Mermaid, which is loaded
// only here (3.5 MB before gzip; the first load stays small).

import { api, R } from "./api.js";
import { h } from "./ui.js";

let loading = null;
function mermaid() {
  loading ??= new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = "vendor/mermaid.min.js";
    s.onload = () => {
      globalThis.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral", flowchart: { useMaxWidth: true } });
      resolve(globalThis.mermaid);
    };
    s.onerror = () => { loading = null; reject(new Error("could not load the graph renderer")); };
    document.head.append(s);
  });
  return loading;
}

let seq = 0;

export async function mount(el, run, signal) {
  const out = h("div.graph", { id: "graph" }, h("p.muted", {}, "Rendering…"));
  const text = h("pre");
  el.replaceChildren(out, h("details", {}, h("summary", {}, "Mermaid text"), text));
  let last = "";
  return {
    async refresh() {
      const [g, m] = await Promise.all([api(`${R(run)}/graph`, { signal }), mermaid()]);
      if (g.mermaid === last || signal.aborted) return;
      last = g.mermaid;
      text.textContent = g.mermaid;
      if (g.nodes.length > 400) {
        out.replaceChildren(h("p.muted", {}, `${g.nodes.length} nodes: too many to draw here; the Mermaid text is below.`));
        return;
      }
      const { svg } = await m.render(`g${++seq}`, g.mermaid);
      const doc = new DOMParser().parseFromString(svg, "image/svg+xml");
      out.replaceChildren(document.importNode(doc.documentElement, true));
    },
  };
}
