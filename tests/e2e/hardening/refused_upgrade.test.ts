/**
 * A WebSocket upgrade the server refuses (a status stream without its key) whose client hangs up
 * at once: the refusal is written to a socket the peer has reset. That `ECONNRESET` used to be
 * an uncaught error that ended the whole process (Chrome does it on every refused handshake). A
 * worker and a router with keys, 40 such clients each: both still answer.
 */
import assert from "node:assert/strict";
import { startRouterProcess, startWorkerProcess } from "../../observability/helpers/process.ts";

/** Send an upgrade request for `path` and close as its answer arrives, without reading it. */
async function upgradeAndHangUp(url: string, path: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const req = `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\n` +
    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
  await conn.write(new TextEncoder().encode(req));
  // One byte of the 401 read: the rest is unread at close, so the kernel answers with a reset.
  assert.equal(await conn.read(new Uint8Array(1)), 1, "the server answered");
  conn.close();
}

Deno.test({
  name: "refused upgrades: a client that resets after the 401 ends neither worker nor router",
  async fn() {
    const worker = await startWorkerProcess({ SVC_WORKER_API_KEY: "refused-upgrade-key-0123" });
    const router = await startRouterProcess({ SVC_API_KEYS: "refused-upgrade-client-key" });
    try {
      for (const [svc, path] of [[worker, "/ws/status"], [router, "/ws/cluster-status"]] as const) {
        for (let i = 0; i < 40; i++) await upgradeAndHangUp(svc.url, path);
        const res = await fetch(`${svc.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
        assert.equal(res.status, 200, svc.proc.output().slice(-2000));
        await res.body?.cancel();
        assert.ok(!/Uncaught|ECONNRESET/.test(svc.proc.output()), svc.proc.output().slice(-2000));
      }
    } finally {
      await worker.proc.stop();
      await router.proc.stop();
    }
  },
});
