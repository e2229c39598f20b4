// The transcript as a conversation (runs.md §10): prompts, assistant text (streaming in from
// `model_delta`), tool rows collapsed to their title. Only the newest PAGE rows are drawn;
// "Earlier" adds a page at a time, so a 500-round run does not freeze the tab.

import { api, R } from "./api.js";
import { h, status } from "./ui.js";
import { modelDetail, toolDetail } from "./detail.js";

const PAGE = 100;

export class Transcript {
  constructor(el, run, signal) {
    this.el = el; this.run = run; this.signal = signal;
    this.shown = PAGE; this.rows = []; this.streams = new Map(); this.open = new Set();
    this.earlier = h("button", { hidden: true, onclick: () => { this.shown += PAGE; this.draw(); } }, "Earlier rows");
    this.list = h("div", { id: "transcript" });
    el.replaceChildren(h("p", {}, this.earlier), this.list);
  }

  async refresh() {
    const { rows } = await api(`${R(this.run)}/transcript`, { signal: this.signal });
    this.rows = rows;
    for (const r of rows) if (r.role === "assistant" && r.text) this.streams.delete(r.key);
    this.draw();
  }

  delta(key, text) {
    this.streams.set(key, (this.streams.get(key) || "") + text);
    const msg = this.list.querySelector(`[data-stream="${CSS.escape(key)}"]`);
    if (!msg) return this.draw();
    msg.classList.add("streaming");
    msg.querySelector(".text").textContent = this.streams.get(key);
  }

  draw() {
    const from = Math.max(0, this.rows.length - this.shown);
    this.earlier.hidden = from === 0;
    this.earlier.textContent = `Earlier rows (${from} hidden)`;
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    this.list.replaceChildren(...this.rows.slice(from).map((r) => this.row(r)));
    if (atBottom && this.rows.length) window.scrollTo(0, document.body.scrollHeight);
  }

  row(r) {
    if (r.role === "user") return h("div.msg.user", { "data-key": r.key }, h("span.who", {}, "user"), h("div.text", {}, r.text || ""));
    if (r.role === "assistant") {
      const streamed = this.streams.get(r.key);
      const text = r.text ?? streamed;
      const live = !r.text && streamed !== undefined;
      const calls = r.tool_calls?.length ? ` · ${r.tool_calls.length} tool call${r.tool_calls.length > 1 ? "s" : ""}` : "";
      const el = h("div.msg.assistant", { "data-key": r.key, "data-stream": r.key, class: live ? "streaming" : "" },
        h("span.who", {}, `assistant · ${r.key}${r.mainline ? "" : ` · branch of ${r.branch_of}`}${calls} `, status(r.status)),
        h("div.text", {}, text || (r.status === "running" ? "" : h("span.muted", {}, r.status === "completed" ? "(no text)" : ""))));
      el.append(this.details(r, "Round details", () => modelDetail(this.run, r.key, this.signal)));
      return el;
    }
    const name = r.tool_alias || r.tool_name;
    const summary = h("summary", {}, r.title || `Called ${name}`, " ", status(r.status),
      r.output_preview && !r.title ? h("span.muted", {}, ` — ${previewLine(r)}`) : null);
    const d = this.details(r, summary, () => toolDetail(this.run, r.key, this.signal), "tool");
    if (r.is_error || ["failed", "timed_out", "uncertain"].includes(r.status)) d.classList.add("err");
    return d;
  }

  /** A collapsed section whose body loads when opened, stays open across redraws, and is
   *  loaded again only when the row's status moved. */
  details(r, summary, load, cls = "") {
    const key = `${r.role}:${r.key}`;
    const cached = this.bodies?.get(key);
    const body = cached && cached.status === r.status ? cached.node : h("div.body");
    const d = h("details", { class: cls, "data-key": r.key, open: this.open.has(key) },
      typeof summary === "string" ? h("summary.muted", {}, summary) : summary, body);
    const fill = async () => {
      (this.bodies ??= new Map()).set(key, { status: r.status, node: body });
      body.replaceChildren(h("p.muted", {}, "Loading…"));
      try { body.replaceChildren(await load()); } catch (e) { body.replaceChildren(h("p.error-text", {}, String(e))); }
    };
    d.addEventListener("toggle", () => {
      if (!d.open) { this.open.delete(key); return; }
      this.open.add(key);
      if (this.bodies?.get(key)?.node !== body || !body.childElementCount) fill();
    });
    return d;
  }
}

/** A tool row's one-line preview: `tool_search` names the tools it found, others show their
 *  output's first line. */
export function previewLine(r) {
  if (r.tool_name === "tool_search") {
    const names = [...new Set([...r.output_preview.matchAll(/"name":\s*"([^"]+)"/g)].map((m) => m[1]))];
    if (/^\{"tools":\[\]/.test(r.output_preview)) return "found no tool";
    if (names.length) return `found ${names.join(", ")}`;
  }
  return r.output_preview.split("\n")[0].slice(0, 80);
}
