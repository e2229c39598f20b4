// The member verbs on one task (approvals.md §5, runs.md §6), shown where they apply.

import { api, R } from "./api.js";
import { act, h } from "./ui.js";

export const approve = (run, key) => act(() => api(`${R(run)}/tasks/${key}/approve`, { method: "POST", body: {} }), `Approved ${key}`);
export const deny = (run, key, reason) =>
  act(() => api(`${R(run)}/tasks/${key}/deny`, { method: "POST", body: reason ? { reason } : {} }), `Denied ${key}`);

/** Approve, and deny with an optional reason. `after` runs once either verb succeeded. */
export function decideBar(run, key, after = () => {}) {
  const reason = h("input", { placeholder: "reason (optional)", "aria-label": `Reason to deny ${key}`, "data-reason": key });
  return h("div.bar", {},
    h("button.primary", { "data-approve": key, onclick: async () => { if (await approve(run, key)) after(); } }, "Approve"),
    reason,
    h("button.danger", { "data-deny": key, onclick: async () => { if (await deny(run, key, reason.value.trim())) after(); } }, "Deny"));
}

/** The adjudication verbs a settled failure or a branch root offers. */
export function adjudicationBar(run, task) {
  const verbs = [];
  const candidate = ["failed", "timed_out", "uncertain"].includes(task.status) && !task.failure_resolution && task.on_failure !== "absorb";
  if (candidate) {
    verbs.push(h("button", { onclick: () => act(() => api(`${R(run)}/tasks/${task.key}/retry`, { method: "POST", body: {} }), "Retrying") }, "Retry"));
    verbs.push(h("button", { onclick: () => act(() => api(`${R(run)}/tasks/${task.key}/abandon`, { method: "POST", body: {} }), "Abandoned") }, "Abandon"));
  }
  if (task.kind === "model_task" && task.branch_of && task.key.endsWith("-model-1")) {
    verbs.push(h("button.danger", { onclick: () => act(() => api(`${R(run)}/tasks/${task.key}/cancel`, { method: "POST", body: {} }), "Branch canceled") }, "Cancel branch"));
  }
  if (task.status === "needs_approval") verbs.push(decideBar(run, task.key));
  return verbs.length ? h("div.bar", {}, verbs) : null;
}
