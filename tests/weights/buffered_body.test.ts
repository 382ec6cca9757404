import assert from "node:assert/strict";
import { fetchWithTimeout } from "#worker/weights/http.ts";

Deno.test("http: a buffered error body is cut off at 64 KiB, however much the server sends", async () => {
  const chunk = new Uint8Array(1024 * 1024).fill(0x61);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ >= 16) c.close();
        else c.enqueue(chunk);
      },
    });
    return new Response(body, { status: 500 });
  });
  try {
    const res = await fetchWithTimeout(`http://127.0.0.1:${server.addr.port}/x`, {}, {
      timeoutMs: 5000,
      buffer: (r) => !r.ok,
    });
    assert.equal(res.status, 500);
    assert.equal((await res.arrayBuffer()).byteLength, 64 * 1024);
  } finally {
    await server.shutdown();
  }
});
