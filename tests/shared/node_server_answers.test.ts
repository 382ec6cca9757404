/**
 * How the node:http server writes a proxy's answers (`streamResponses`): small ones whole, once
 * their body is complete; large ones as their chunks arrive.
 */
import assert from "node:assert/strict";
import { type NodeHttpServer, serveNodeHttp } from "@svc/shared/http/node_server";
import { deadline } from "@svc/shared/deadline";

/**
 * Serve one answer of `size` declared bytes whose first half is ready at once and whose second
 * half waits for a release. With `releaseAfterMs` the release comes on that timer; without it, only
 * once the client has the headers. Reports whether the headers came before the release.
 */
async function headersBeforeRelease(
  size: number,
  releaseAfterMs?: number,
): Promise<{ early: boolean; bytes: number }> {
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let releasedYet = false;
  const releaseNow = () => {
    releasedYet = true;
    release();
  };
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
    headersTimeoutMs: 60_000,
    requestTimeoutMs: 60_000,
    streamResponses: true,
  });
  const timer = releaseAfterMs === undefined ? undefined : setTimeout(releaseNow, releaseAfterMs);
  try {
    // Bounded so that a server holding the headers back fails here instead of hanging the suite.
    const res = await deadline(
      fetch(`http://127.0.0.1:${server.addr.port}/`),
      30_000,
      () => assert.fail("no headers within 30 s"),
    );
    const early = !releasedYet;
    releaseNow();
    const bytes = (await res.arrayBuffer()).byteLength;
    return { early, bytes };
  } finally {
    clearTimeout(timer);
    releaseNow();
    await server.shutdown(1000);
  }
}

Deno.test("node server: a proxied answer up to 64 KiB is written whole, with its length", async () => {
  // The body completes on a timer; its headers can only come after that, however slow the machine.
  const r = await headersBeforeRelease(16 * 1024, 200);
  assert.equal(r.early, false, "the headers went out before the body was complete");
  assert.equal(r.bytes, 16 * 1024);
});

Deno.test("node server: a proxied answer over 64 KiB streams as it arrives", async () => {
  // Nothing completes the body until the headers are in: they must come from the first half.
  const r = await headersBeforeRelease(256 * 1024);
  assert.equal(r.early, true, "the headers waited for the whole body");
  assert.equal(r.bytes, 256 * 1024);
});
