// The public member API, with the bearer kept in sessionStorage (this tab only).

const KEY = "nexus.console.session";

export function session() {
  try { return JSON.parse(sessionStorage.getItem(KEY)) || null; } catch { return null; }
}
export function signIn(token, ws) { sessionStorage.setItem(KEY, JSON.stringify({ token, ws })); }
export function signOut() { sessionStorage.removeItem(KEY); }

export const API = "/agent_api/v1";
export const W = () => `${API}/workspaces/${session().ws}`;
export const R = (run) => `${W()}/runs/${run}`;

/** A refusal in the server's words: `code` and `message` from the error envelope. */
export class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  toString() { return `${this.code}: ${this.message}`; }
}

function headers(extra = {}) {
  const s = session();
  return { ...(s ? { authorization: `Bearer ${s.token}` } : {}), ...extra };
}

async function refusal(res) {
  let code = `http_${res.status}`, message = res.statusText;
  try {
    const body = await res.json();
    if (body && body.error) { code = body.error.code || code; message = body.error.message || message; }
  } catch { /* not an envelope */ }
  if (res.status === 401) window.dispatchEvent(new CustomEvent("nexus:unauthorized"));
  return new ApiError(res.status, code, message);
}

/** GET (or another method with a JSON body) → the parsed JSON; a refusal throws ApiError. */
export async function api(path, { method = "GET", body, signal } = {}) {
  const init = { method, signal, headers: headers(body !== undefined ? { "content-type": "application/json" } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (!res.ok) throw await refusal(res);
  return res.status === 204 ? null : res.json();
}

/** An upload's bytes, fetched with the bearer, as a blob: URL (revoke it when done). */
export async function blobUrl(uploadId, signal) {
  const res = await fetch(`${API}/uploads/${uploadId}/bytes`, { headers: headers(), signal });
  if (!res.ok) throw await refusal(res);
  return URL.createObjectURL(await res.blob());
}

/**
 * Follows an SSE feed with fetch and a stream reader (EventSource cannot send the bearer),
 * reconnecting with Last-Event-ID after a drop. `onFrame({id, event, data})` receives durable
 * events (with an id) and ephemeral frames (without). `onState(live)` reports the connection.
 * Stops when `signal` aborts.
 */
export async function follow(path, { after = 0, onFrame, onState = () => {}, signal }) {
  let last = after;
  while (!signal.aborted) {
    try {
      const res = await fetch(path, { headers: headers({ accept: "text/event-stream", "last-event-id": String(last) }), signal });
      if (!res.ok) throw await refusal(res);
      onState(true);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut;
        while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
          const frame = parseFrame(block);
          if (!frame) continue;
          if (frame.id !== undefined) last = Number(frame.id);
          onFrame(frame);
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status < 500 && e.status !== 429) { onState(false, e); return; }
    }
    onState(false);
    await sleep(1000, signal);
  }
}

function parseFrame(block) {
  let id, event = "message", data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "id") id = value; else if (field === "event") event = value; else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  let parsed;
  try { parsed = JSON.parse(data.join("\n")); } catch { parsed = data.join("\n"); }
  return { id, event, data: parsed };
}

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

/** Calls `fn` now and every `ms` until `signal` aborts (the runs list, the approvals queue). */
export async function poll(fn, ms, signal) {
  while (!signal.aborted) {
    try { await fn(); } catch (e) { if (!signal.aborted) console.warn(e); }
    await sleep(document.hidden ? ms * 5 : ms, signal);
  }
}
