/**
 * Issue 35.8: a refusal sent before the request body ends (503 for the in-flight body budget; 400
 * for a body declared over SVC_MAX_BODY_BYTES, the API's status for it) reaches a client that is
 * still uploading. 24 parallel 31 MB
 * uploads (two of 40 MB) from Node's own `fetch` (undici, what most JavaScript clients run on; it reports a
 * reset as EPIPE or ECONNRESET) to a router whose budget holds two bodies: each gets a status,
 * none a reset. No worker: what is read waits briefly for capacity and is answered 503 too.
 */
import assert from "node:assert/strict";
import { startRouterProcess } from "../../observability/helpers/process.ts";

const MB = 1024 * 1024;

/** The uploads, run by node: one line of JSON, each client's status or error code. */
const CLIENTS = `
const [url, n, size, over] = process.argv.slice(1);
const MB = 1024 * 1024;
// Sent in 1 MB chunks 40 ms apart: the upload lasts over a second after any early answer, as
// on a busy machine or a real network, so a socket closed under it is seen as a reset.
const upload = (bytes) => new ReadableStream({
  async start(c) {
    c.enqueue(new TextEncoder().encode('{"model":"fixture/dense","input":"a"}'));
    for (let sent = 0; sent < bytes; sent += MB) {
      c.enqueue(new Uint8Array(Math.min(MB, bytes - sent)).fill(32));
      await new Promise((r) => setTimeout(r, 40));
    }
    c.close();
  },
});
const outcomes = await Promise.all(Array.from({ length: Number(n) }, async (_, i) => {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: upload(Number(i % 12 === 11 ? over : size)),
      duplex: "half",
      signal: AbortSignal.timeout(60000),
    });
    await res.arrayBuffer();
    return res.status;
  } catch (e) {
    return String(e.cause?.code ?? e.name);
  }
}));
console.log(JSON.stringify(outcomes));
`;

Deno.test({
  name: "refused uploads: 24 × 31 MB to a small body budget each get a status, none a reset",
  async fn() {
    const r = await startRouterProcess({
      SVC_DEFAULT_MACHINE_PROFILE: "cpu",
      SVC_MAX_BODY_BYTES: String(32 * MB),
      SVC_MAX_INFLIGHT_BODY_BYTES: String(64 * MB),
      SVC_EMBEDDINGS_WAIT_MS: "100",
      SVC_BODY_IDLE_TIMEOUT_MS: "20000",
    });
    try {
      const out = await new Deno.Command("node", {
        args: [
          "--input-type=module",
          "-e",
          CLIENTS,
          `${r.url}/v1/embeddings`,
          "24",
          String(31 * MB),
          String(40 * MB),
        ],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(120_000),
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const outcomes: (number | string)[] = JSON.parse(text);
      assert.equal(outcomes.length, 24);
      const bad = outcomes.filter((o) => ![200, 400, 413, 503].includes(o as number));
      assert.deepEqual(bad, [], `every client gets a status: ${text}`);
      // The budget refused most while they were still sending (the two bodies over the limit
      // get 400 once past it, or 503 first).
      assert.ok(outcomes.filter((o) => o === 503).length >= 20, text);
    } finally {
      await r.proc.stop();
    }
  },
});
