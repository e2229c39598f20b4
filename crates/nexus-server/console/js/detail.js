// One row opened: a tool call's input, output, content blocks (a capture shown as an image),
// structured_content and metadata as data, its error in its words; a round's sealed request,
// usage and the run's per-round cache report.

import { api, blobUrl, R } from "./api.js";
import { h, json, kv, status, effectBadges } from "./ui.js";
import { adjudicationBar } from "./actions.js";

export async function toolDetail(run, key, signal) {
  const { task: t } = await api(`${R(run)}/tasks/${key}`, { signal });
  return h("div", {},
    adjudicationBar(run, t),
    kv([
      ["Task", h("span.mono", {}, t.key)],
      ["Tool", t.tool_alias && t.tool_alias !== t.tool_name ? `${t.tool_alias} (${t.tool_name})` : t.tool_name],
      ["Status", status(t.status)],
      ["Target", t.target?.display_name],
      ["Effect", t.effect_profile ? effectBadges(t.effect_profile) : null],
      ["Approval", t.approval ? `${t.approval.origin === "mode" ? "granted by the run's approval mode" : `decided by a ${t.approval.origin}`} · ${t.approval.decided_at}` : null],
      ["Waiting on", waitingOn(t)],
    ]),
    errorOf(t),
    h("h3", {}, "Input"), json(t.tool_input),
    t.content !== undefined && h("h3", {}, "Output"),
    t.content !== undefined && (t.tool_name === "tool_search" && searchResults(t.content) || blocks(t.content, signal)),
    t.structured_content !== undefined && [h("h3", {}, "structured_content (data, not shown to the model as text)"), json(t.structured_content)],
    t.metadata !== undefined && [h("h3", {}, "metadata (data, never shown to the model)"), json(t.metadata)]);
}

/** `waiting_on` in words: a held call waits on an approver, a waiting row on the rows it
 *  depends on (each a link to that row in the Tasks tab). */
export function waitingOn(t) {
  const w = t.waiting_on;
  if (!w || !w.length) return null;
  if (t.status === "needs_approval") return "a member's approval (Approve or Deny above, or on the Approvals page)";
  return h("span", {}, `${w.length === 1 ? "the task" : `${w.length} tasks`} `,
    w.map((k, i) => [i ? ", " : "", h("span.mono", {}, k)]), " to settle first");
}

/** `tool_search`'s result (`{tools: [{name, definition, skills}], truncated}` as text) as
 *  the list of tools it found; `null` when the text is not that shape (then it shows as text). */
export function searchResults(content) {
  const text = content.find?.((b) => b.type === "text")?.text;
  let found;
  try { found = JSON.parse(text); } catch { return null; }
  if (!found || !Array.isArray(found.tools)) return null;
  const described = (d) => d?.function?.description ?? d?.description ?? "";
  const routed = (d) => d?.route?.kind === "runner" ? `on a runner (${d.route.tool_name || ""})` : "";
  return h("div.search-results", {},
    h("p.muted", {}, found.tools.length ? `Found ${found.tools.length} tool${found.tools.length > 1 ? "s" : ""}${found.truncated ? " (more matched; the list was cut at the limit)" : ""}:` : "No tool matched."),
    found.tools.length ? h("ul.found", {}, found.tools.map((x) => h("li", {},
      h("strong.mono", {}, x.name), " ", h("span", {}, described(x.definition)),
      routed(x.definition) ? h("span.muted", {}, ` — ${routed(x.definition)}`) : null,
      x.skills?.length ? h("div.muted", {}, `skills: ${x.skills.map((k) => k.name).join(", ")}`) : null))) : null,
    h("details", {}, h("summary.muted", {}, "As the model read it (JSON)"), json(found)));
}

function errorOf(t) {
  if (!t.error) return null;
  return h("p.error-text", {}, `${t.error.key}${t.error.detail ? `: ${t.error.detail}` : ""}`, t.failure_resolution ? ` (${t.failure_resolution})` : "");
}

const UPLOAD = /^nexus:\/\/uploads\/([0-9a-f-]{36})$/;

/** Content blocks: text as text, a `resource_link` to an image capture as that image. */
function blocks(content, signal) {
  if (!content.length) return h("p.muted", {}, "(empty)");
  return h("div", {}, content.map((b) => {
    if (b.type === "text") return h("pre", {}, b.text);
    if (b.type === "resource_link") {
      const id = UPLOAD.exec(b.uri || "")?.[1];
      const label = `${b.title || b.name}${b.mimeType ? ` (${b.mimeType}${b.size !== undefined ? `, ${b.size} bytes` : ""})` : ""}`;
      if (!id) return h("p", {}, label, " ", h("span.mono", {}, b.uri));
      const holder = h("div", {}, h("p", {}, label));
      blobUrl(id, signal).then((url) => {
        if ((b.mimeType || "").startsWith("image/") || !b.mimeType) {
          const img = h("img.capture", { src: url, alt: b.description || b.name });
          img.addEventListener("error", () => img.replaceWith(h("a", { href: url, download: b.name }, `Download ${b.name}`)));
          holder.append(img);
        } else holder.append(h("a", { href: url, download: b.name }, `Download ${b.name}`));
      }, (e) => holder.append(h("p.error-text", {}, String(e))));
      return holder;
    }
    return json(b);
  }));
}

export async function modelDetail(run, key, signal) {
  const [{ task: t }, request, cache] = await Promise.all([
    api(`${R(run)}/tasks/${key}`, { signal }),
    api(`${R(run)}/tasks/${key}/request`, { signal }).catch((e) => e),
    api(`${R(run)}/cache`, { signal }).catch(() => null),
  ]);
  const round = cache?.cache?.rounds?.find((r) => r.key === key);
  return h("div", {},
    adjudicationBar(run, t),
    kv([
      ["Model", t.model],
      ["Status", status(t.status)],
      ["Generation", t.generation],
      ["Request bytes", t.request_bytes],
      ["Usage", t.usage ? `${t.usage.input_tokens ?? 0} in · ${t.usage.output_tokens ?? 0} out · ${t.usage.cache_read_input_tokens ?? 0} cache read · ${t.usage.cache_creation_input_tokens ?? 0} cache write` : null],
      ["Tools sent", round?.tools_sha256 ? `sha256 ${round.tools_sha256.slice(0, 16)}…, ${round.tools_changed ? "changed since the previous round" : "same as the previous round"}` : null],
    ]),
    errorOf(t),
    t.instructions && [h("h3", {}, "Instructions"), h("pre", {}, t.instructions)],
    h("details", {}, h("summary", {}, `Tool definitions (${(t.tool_definitions || []).length})`), json(t.tool_definitions || [])),
    request instanceof Error
      ? h("p.muted", {}, `Sealed request: ${request}`)
      : h("details", {}, h("summary", {}, `Sealed request (sha256 ${request.request.body_sha256?.slice(0, 16)}…, ${request.request.request_bytes} bytes)`), json(request.request)),
    cache && h("details", {}, h("summary", {}, "Cache report (every round)"), cacheTable(cache.cache)));
}

function cacheTable(c) {
  return h("table", {},
    h("thead", {}, h("tr", {}, ["Round", "Status", "Tools", "Input", "Cache read", "Cache write", "Output"].map((x) => h("th", {}, x)))),
    h("tbody", {}, c.rounds.map((r) => h("tr", {},
      h("td.mono", {}, r.key), h("td", {}, status(r.status)),
      h("td", {}, r.tools_changed ? "changed" : "same"),
      h("td", {}, r.usage?.input_tokens ?? ""), h("td", {}, r.usage?.cache_read_input_tokens ?? ""),
      h("td", {}, r.usage?.cache_creation_input_tokens ?? ""), h("td", {}, r.usage?.output_tokens ?? "")))));
}
