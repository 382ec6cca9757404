/**
 * A browser's status socket with the key as a subprotocol, on both router servers (node:http
 * locally, Deno.serve on Deno Deploy): accepted with the right key (an admin key for the fleet
 * page's /ws/cluster-status, a client key for /ws/status), answered with `svc.status` (never the
 * key's subprotocol), refused with a wrong one or a client key where an admin key is needed.
 */
import assert from "node:assert/strict";
import { keyProtocol, STREAM_PROTOCOL } from "@svc/shared/http/ws_auth";
import { startTestRouter } from "../helpers/router.ts";

const KEY = "stream-auth-test-key-0123";
const ADMIN_KEY = "stream-auth-admin-key-4567";

/** Open a socket with `protocols`; resolves with the protocol the server chose, or "refused". */
function open(url: string, protocols: string[]): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols);
    const t = setTimeout(() => {
      ws.close();
      resolve("timeout");
    }, 10_000);
    ws.onopen = () => {
      clearTimeout(t);
      const p = ws.protocol;
      ws.onclose = () => resolve(p);
      ws.close();
    };
    ws.onerror = () => {
      clearTimeout(t);
      resolve("refused");
    };
  });
}

for (const server of ["node", "deno"]) {
  Deno.test(`stream auth (${server}): the key as a subprotocol opens the status streams`, async () => {
    const r = await startTestRouter({
      SVC_API_KEYS: KEY,
      SVC_ADMIN_KEYS: ADMIN_KEY,
      SVC_ROUTER_SERVER: server,
    });
    try {
      const url = r.url.replace("http", "ws") + "/ws/cluster-status";
      assert.equal(await open(url, [STREAM_PROTOCOL, keyProtocol(ADMIN_KEY)]), STREAM_PROTOCOL);
      assert.equal(await open(url, [STREAM_PROTOCOL, keyProtocol(KEY)]), "refused");
      assert.equal(await open(url, [STREAM_PROTOCOL, keyProtocol("wrong-key-0000")]), "refused");
      assert.equal(await open(url, [STREAM_PROTOCOL]), "refused");
      // The workers' stream is for clients: their key opens it.
      const status = r.url.replace("http", "ws") + "/ws/status";
      assert.equal(await open(status, [STREAM_PROTOCOL, keyProtocol(KEY)]), STREAM_PROTOCOL);
      assert.equal(await open(status, [STREAM_PROTOCOL]), "refused");
      // The page itself is served without a key: it holds no data.
      const page = await fetch(`${r.url}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<title>Fleet<\/title>/);
    } finally {
      await r.close();
    }
  });
}
