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

export function shortId(id) { return id ? id.slice(0, 8) : ""; }
