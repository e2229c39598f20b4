// The console's shell: sign-in, navigation, and one page at a time (hash routes, so the server
// serves one index and every link works after a reload).

import { api, API, session, signIn, signOut } from "./api.js";
import { h, toast } from "./ui.js";

const pages = {
  runs: () => import("./runs.js"),
  run: () => import("./run.js"),
  approvals: () => import("./approvals.js"),
  conversations: () => import("./conversations.js"),
  conversation: () => import("./conversation.js"),
  runners: () => import("./runners.js"),
};

let current = null; // the page's AbortController

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(query) };
}

async function route() {
  current?.abort();
  current = new AbortController();
  const signal = current.signal;
  const view = document.getElementById("view");
  const { parts, query } = parseHash();
  // A ready sign-in link (`#/signin?ws=…&token=…`, e.g. from `nexus demo`): stored for this
  // tab, then removed from the address bar and history.
  if (parts[0] === "signin" && query.get("token") && query.get("ws")) {
    signIn(query.get("token"), query.get("ws"));
    history.replaceState(null, "", "#/runs");
    return route();
  }
  if (!session()) return signInPage(view, query.get("ws") || "");
  chrome(true);
  let name = parts[0] || "runs";
  let arg = parts[1];
  if (name === "runs" && arg) name = "run";
  if (name === "conversations" && arg) name = "conversation";
  if (!pages[name]) name = "runs";
  const section = { run: "runs", conversation: "conversations" }[name] || name;
  for (const a of document.querySelectorAll("[data-nav]")) {
    a.classList.toggle("on", a.dataset.nav === section);
    if (a.dataset.nav === section) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  view.replaceChildren(h("p.muted", {}, "Loading…"));
  try {
    const page = await pages[name]();
    if (signal.aborted) return;
    await page.render(view, { arg, query, signal });
  } catch (e) {
    if (!signal.aborted) view.replaceChildren(h("h1", {}, "Something went wrong"), h("p.error-text", {}, String(e)));
  }
}

function chrome(on) {
  document.getElementById("nav").hidden = !on;
  document.getElementById("signout").hidden = !on;
  if (!on) document.getElementById("who").textContent = "";
}

function signInPage(view, ws) {
  chrome(false);
  const token = h("input", { id: "token", type: "password", autocomplete: "off", required: true, placeholder: "member bearer" });
  const wsInput = h("input", { id: "ws", value: ws, required: true, placeholder: "workspace public id", class: "mono" });
  const err = h("p.error-text");
  const form = h("form.signin", {
    onsubmit: async (ev) => {
      ev.preventDefault();
      signIn(token.value.trim(), wsInput.value.trim());
      try {
        await api(`${API}/workspaces/${wsInput.value.trim()}/runs?limit=1`);
        await whoami();
        location.hash = "#/runs";
        route();
      } catch (e) {
        signOut();
        err.textContent = String(e);
      }
    },
  },
  h("h1", {}, "Sign in"),
  h("p.muted", {}, "Paste a member bearer (for example the bootstrap's human.member_token). It is kept for this tab only."),
  h("label", { for: "token" }, "Bearer"), token,
  h("label", { for: "ws" }, "Workspace"), wsInput,
  h("p", {}, h("button.primary", { type: "submit" }, "Sign in")), err);
  view.replaceChildren(form);
  (ws ? token : wsInput).focus();
}

async function whoami() {
  try {
    const p = await api(`${API}/profile`);
    document.getElementById("who").textContent = `${p.member.handle} (${p.member.kind})`;
  } catch { /* the header line is optional */ }
}

document.getElementById("signout").addEventListener("click", () => { signOut(); location.hash = "#/"; route(); });
window.addEventListener("nexus:unauthorized", () => { toast("The bearer was refused; sign in again.", true); signOut(); route(); });
window.addEventListener("hashchange", route);
// Keyboard: g then r/a/c/u jumps between pages (outside inputs).
let g = false;
document.addEventListener("keydown", (ev) => {
  if (ev.target.closest("input, textarea, select") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (g) {
    const to = { r: "runs", a: "approvals", c: "conversations", u: "runners" }[ev.key];
    if (to) location.hash = `#/${to}`;
    g = false;
  } else if (ev.key === "g") g = true;
});
if (session()) whoami();
route();
