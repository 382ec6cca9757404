/**
 * What a handler of the node:http server gets and gives: the body through `readBodyLimited` (the
 * `Request` itself has none), and answers built by `bytesResponse` written from their bytes.
 */
import assert from "node:assert/strict";
import { type FetchHandler, serveNodeHttp } from "@svc/shared/http/node_server";
import { readBodyLimited } from "@svc/shared/http/read_body";
import { bytesResponse } from "@svc/shared/http/answer_bytes";

/** Serve `handler` on a free port for the duration of `use`. */
async function withServer(
  handler: FetchHandler,
  use: (url: string) => Promise<void>,
): Promise<void> {
  const server = await serveNodeHttp(handler, {
    hostname: "127.0.0.1",
    port: 0,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 10_000,
  });
  try {
    await use(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown(1000);
  }
}

Deno.test("node server: a 300 KiB body arrives whole through readBodyLimited; the Request has none", async () => {
  const sent = new Uint8Array(300 * 1024).map((_, i) => (i * 7) & 0xff);
  let ownBody: unknown = "unset";
  let received: Uint8Array | undefined;
  await withServer(async (req) => {
    ownBody = req.body;
    received = await readBodyLimited(req, { maxBodyBytes: 1024 * 1024 });
    return new Response(String(received.length));
  }, async (url) => {
    const res = await fetch(`${url}/upload`, { method: "POST", body: sent });
    assert.equal(await res.text(), String(sent.length));
  });
  assert.equal(ownBody, null);
  assert.deepEqual(received, sent);
});

Deno.test("node server: a body over the limit is refused and its connection is not reused", async () => {
  await withServer(async (req) => {
    try {
      await readBodyLimited(req, { maxBodyBytes: 1000 });
      return new Response("read");
    } catch {
      return new Response("refused", { status: 400 });
    }
  }, async (url) => {
    // No Content-Length (a stream): the limit is found while reading.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(800));
        c.enqueue(new Uint8Array(800));
        c.close();
      },
    });
    const res = await fetch(`${url}/upload`, { method: "POST", body });
    assert.equal(res.status, 400);
    assert.equal(await res.text(), "refused");
    assert.equal(res.headers.get("connection"), "close");
  });
});

Deno.test("node server: a bytesResponse is written from its bytes, without reading it back", async () => {
  const payload = new TextEncoder().encode("vector bytes ".repeat(100));
  const answers: Response[] = [];
  await withServer((req) => {
    const plain = new URL(req.url).pathname === "/plain";
    const res = plain
      ? new Response(payload, { headers: { "content-type": "application/octet-stream" } })
      : bytesResponse(payload, { headers: { "content-type": "application/octet-stream" } });
    answers.push(res);
    return res;
  }, async (url) => {
    for (const path of ["/bytes", "/plain"]) {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.headers.get("content-length"), String(payload.length));
      assert.deepEqual(new Uint8Array(await res.arrayBuffer()), payload);
    }
  });
  assert.equal(answers[0].bodyUsed, false, "the remembered bytes were written");
  assert.equal(answers[1].bodyUsed, true, "any other answer is read");
});
