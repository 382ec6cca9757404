/**
 * Pieces both live pages (router fleet page, worker page) share: the HTTP response that serves a
 * self-contained page, and the browser script that keeps a status socket open.
 */

/** Serve an inline HTML page: nothing else may load (works offline) and it may not be framed. */
export function dashboardResponse(html: string): Response {
  return new Response(html, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-cache",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
    },
  });
}

/** Where a page keeps the API key a person entered: this tab only, never a URL or a cookie. */
export const KEY_STORAGE_ITEM = "svc.api-key";

/**
 * Browser script: open a WebSocket to `path` on this host, call the page's `render(message)` for
 * every frame, show the state in `#conn`, and reconnect with capped exponential backoff. When the
 * handshake is refused for want of a key (a check of the path says 401, or 403 for a key without
 * the rights), it shows a form that takes a key into `sessionStorage` and sends it as a subprotocol (`svc.bearer.<base64url>`,
 * next to `svc.status`, which the server answers with): never in a URL, never in a cookie.
 */
export function liveSocketScript(path: string): string {
  return `const STREAM_PATH = ${JSON.stringify(path)};
const KEY_ITEM = ${JSON.stringify(KEY_STORAGE_ITEM)};
let delay = 250;
function storedKey() {
  try { return sessionStorage.getItem(KEY_ITEM) || ""; } catch (e) { return ""; }
}
function keyProtocol(key) {
  let bin = "";
  for (const b of new TextEncoder().encode(key)) bin += String.fromCharCode(b);
  return "svc.bearer." + btoa(bin).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
}
function keyForm(message) {
  let form = document.getElementById("keyform");
  if (!form) {
    form = document.createElement("form");
    form.id = "keyform";
    form.dataset.testid = "key-form";
    form.style.cssText = "margin:.6rem 0;padding:.6rem .8rem;background:#fff;border:1px solid #dde;border-radius:6px";
    const label = document.createElement("label");
    label.id = "keymsg"; label.htmlFor = "apikey"; label.style.cssText = "display:block;margin-bottom:.4rem";
    const input = document.createElement("input");
    input.id = "apikey"; input.type = "password"; input.autocomplete = "off"; input.placeholder = "API key";
    input.dataset.testid = "key-input";
    const button = document.createElement("button");
    button.type = "submit"; button.textContent = "Use key"; button.dataset.testid = "key-submit";
    form.append(label, input, button);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      try { sessionStorage.setItem(KEY_ITEM, key); } catch (err) { /* storage off: this page only */ }
      input.value = "";
      form.hidden = true;
      delay = 250;
      connect();
    });
    document.body.insertBefore(form, document.body.children[1] || null);
  }
  document.getElementById("keymsg").textContent = message;
  form.hidden = false;
  const conn = $("conn"); conn.textContent = "key needed"; conn.className = "pill down";
}
function retry() {
  const conn = $("conn");
  conn.textContent = "disconnected"; conn.className = "pill down";
  setTimeout(connect, delay); delay = Math.min(delay * 2, 5000);
}
/**
 * Why a handshake failed: a 401 asks for a key, a 403 for another one (a client key where an admin
 * key is needed), with the server's reason; anything else (down, restarting) retries.
 */
async function refused(key) {
  let why = "";
  try {
    const res = await fetch(STREAM_PATH, {
      headers: key ? { authorization: "Bearer " + key } : {},
      cache: "no-store",
    });
    if (res.status !== 401 && res.status !== 403) return retry();
    if (res.status === 403) {
      try { why = (await res.json()).detail.message || ""; } catch (e) { /* not JSON */ }
    }
  } catch (e) { return retry(); }
  try { sessionStorage.removeItem(KEY_ITEM); } catch (e) { /* nothing stored */ }
  keyForm((key
    ? "That key was refused. Enter a valid key."
    : "This page needs a key (the router's admin key, SVC_ADMIN_KEYS; a worker's " +
      "SVC_WORKER_API_KEY); it is kept in this browser tab only.") + (why ? " (" + why + ")" : ""));
}
function connect() {
  const key = storedKey();
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + STREAM_PATH;
  const ws = key ? new WebSocket(url, ["svc.status", keyProtocol(key)]) : new WebSocket(url);
  const conn = $("conn");
  let opened = false;
  ws.onopen = () => { opened = true; delay = 250; conn.textContent = "live"; conn.className = "pill live"; };
  ws.onmessage = (e) => { try { render(JSON.parse(e.data)); } catch (err) { console.error(err); } };
  ws.onclose = () => { if (opened) retry(); else refused(key); };
}
connect();`;
}
