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

/**
 * Browser script: open a WebSocket to `path` on this host, call the page's `render(message)` for
 * every frame, show the state in `#conn`, and reconnect with capped exponential backoff.
 */
export function liveSocketScript(path: string): string {
  return `let delay = 250;
function connect() {
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + ${
    JSON.stringify(path)
  });
  const conn = $("conn");
  ws.onopen = () => { delay = 250; conn.textContent = "live"; conn.className = "pill live"; };
  ws.onmessage = (e) => { try { render(JSON.parse(e.data)); } catch (err) { console.error(err); } };
  ws.onclose = () => {
    conn.textContent = "disconnected"; conn.className = "pill down";
    setTimeout(connect, delay); delay = Math.min(delay * 2, 5000);
  };
}
connect();`;
}
