/**
 * How the node:http server writes a proxy's answers (`streamResponses`): small ones whole, once
 * their body is complete; large ones as their chunks arrive.
 */
import assert from "node:assert/strict";
import { type NodeHttpServer, serveNodeHttp } from "@svc/shared/http/node_server";

/**
 * Serve one answer of `size` declared bytes whose first half is ready at once and whose second
 * half waits for `release`; report whether the client saw the headers before the release.
 */
async function headersBeforeRelease(size: number): Promise<{ early: boolean; bytes: number }> {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let releasedYet = false;
  const half = Math.floor(size / 2);
  const server: NodeHttpServer = await serveNodeHttp(() => {
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new Uint8Array(half).fill(1));
        await released;
        c.enqueue(new Uint8Array(size - half).fill(2));
        c.close();
      },
    });
    return new Response(body, { headers: { "content-length": String(size) } });
  }, {
    hostname: "127.0.0.1",
    port: 0,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 10_000,
    streamResponses: true,
  });
  // A small answer's headers only come once the body is whole: release it after a while so the
  // request completes either way (the assertion is on the order, not on the time).
  const fallback = setTimeout(() => {
    releasedYet = true;
    release();
  }, 300);
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/`);
    const early = !releasedYet;
    clearTimeout(fallback);
    releasedYet = true;
    release();
    const bytes = (await res.arrayBuffer()).byteLength;
    return { early, bytes };
  } finally {
    clearTimeout(fallback);
    await server.shutdown(1000);
  }
}

Deno.test("node server: a proxied answer up to 64 KiB is written whole, with its length", async () => {
  const r = await headersBeforeRelease(16 * 1024);
  assert.equal(r.early, false, "the headers went out before the body was complete");
  assert.equal(r.bytes, 16 * 1024);
});

Deno.test("node server: a proxied answer over 64 KiB streams as it arrives", async () => {
  const r = await headersBeforeRelease(256 * 1024);
  assert.equal(r.early, true, "the headers waited for the whole body");
  assert.equal(r.bytes, 256 * 1024);
});
