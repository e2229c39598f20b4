// Small DOM helpers shared by the pages.

/** h("tag.class", {attr, onclick}, ...children): an element. Strings become text nodes. */
export function h(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else if (k === "class") el.className += " " + v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function status(s) { return h("span.badge", { class: `s-${s}` }, s); }

export function age(ts) {
  if (!ts) return "";
  const s = Math.max(0, (Date.now() - Date.parse(ts)) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function json(value) { return h("pre", {}, JSON.stringify(value, null, 2)); }

export function kv(pairs) {
  return h("dl.kv", {}, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/** The frozen effect profile as badges (approvals.md §6). */
export function effectBadges(p) {
  if (!p) return h("span.muted", {}, "no effect profile");
  return h("span", {},
    h("span.badge.b-kind", { title: "kind" }, p.kind),
    h("span.badge", { class: `b-${p.destructive}`, title: "destructive" }, p.destructive ? "destructive" : "not destructive"),
    h("span.badge", { title: "effect scope" }, `scope: ${p.effect_scope}`),
    h("span.badge", { title: "idempotency" }, `idempotency: ${p.idempotency}`),
    h("span.badge", { title: "reconciliation" }, `reconciliation: ${p.reconciliation}`));
}

export function toast(text, bad = false) {
  const el = h("div", { class: bad ? "bad" : "" }, String(text));
  document.getElementById("toast").append(el);
  setTimeout(() => el.remove(), bad ? 8000 : 3000);
}

/** Runs an action, reporting a refusal in the server's words. */
export async function act(fn, done) {
  try { const r = await fn(); if (done) toast(done); return r; } catch (e) { toast(String(e), true); return null; }
}

/** The id's last 8 characters: public ids are UUIDv7, whose first characters are the
 *  creation time (runs of one minute share them) and whose last are random. */
export function shortId(id) { return id ? `…${id.slice(-8)}` : ""; }

/** A span of time in words: `850 ms`, `12.3 s`, `4 m 05 s`, `1 h 02 m`. */
export function span(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(Math.floor(s % 60)).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} m`;
}

/** A run's duration: start to end, or to now while it runs. */
export function duration(start, end) {
  if (!start) return "";
  const ms = (end ? Date.parse(end) : Date.now()) - Date.parse(start);
  // Whole-second stamps cannot tell a quick run's length.
  return end && ms < 1000 && !/\.\d/.test(start) ? "under 1 s" : span(ms);
}

function compact(n) { return n >= 10000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n); }

/** Tokens as `1.2k in · 33 out` (empty when the run used none). */
export function tokens(sum) {
  if (!sum || (!sum.input_tokens && !sum.output_tokens)) return "";
  return `${compact(sum.input_tokens || 0)} in · ${compact(sum.output_tokens || 0)} out`;
}

const WAITS = { approval: ["held for approval", "s-needs_approval"], runner: ["on a runner", "s-dispatched"], child: ["waiting on a child", "s-awaiting_input"] };

/** What a run waits on (`summary.waiting_on`) as badges. */
export function waitingBadges(list) {
  return (list || []).map((w) => {
    const [word, cls] = WAITS[w.on] || [w.on, ""];
    return h("span.badge.wait", { class: cls, "data-waiting": w.on }, w.count > 1 ? `${word} (${w.count})` : word);
  });
}
