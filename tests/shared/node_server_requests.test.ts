/**
 * What a handler of the node:http server gets and gives: the body through `readBodyLimited` from
 * the source handed beside the request, or through the `Request`'s own body; and what a direct handler claims (never a `Request`, its answer
 * written as it is) or leaves to the fetch handler.
 */
import assert from "node:assert/strict";
import {
  type DirectHandler,
  type DirectRequest,
  type FetchHandler,
  serveNodeHttp,
} from "@svc/shared/http/node_server";
import { readBodyLimited, readSourceLimited } from "@svc/shared/http/read_body";

/** Serve `handler` (and `direct`) on a free port for the duration of `use`. */
async function withServer(
  handler: FetchHandler,
  use: (url: string) => Promise<void>,
  direct?: DirectHandler,
): Promise<void> {
  const server = await serveNodeHttp(handler, {
    direct,
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

Deno.test("node server: a 300 KiB body arrives whole through readBodyLimited from the server's source", async () => {
  const sent = new Uint8Array(300 * 1024).map((_, i) => (i * 7) & 0xff);
  let hadSource = false;
  let received: Uint8Array | undefined;
  await withServer(async (req, info) => {
    hadSource = info.body !== undefined;
    received = await readBodyLimited(req, { maxBodyBytes: 1024 * 1024 }, info.body);
    return new Response(String(received.length));
  }, async (url) => {
    const res = await fetch(`${url}/upload`, { method: "POST", body: sent });
    assert.equal(await res.text(), String(sent.length));
  });
  assert.ok(hadSource);
  assert.deepEqual(received, sent);
});

Deno.test("node server: the Request's own body reads the same bytes (req.json() works)", async () => {
  let parsed: unknown;
  let bytes: Uint8Array | undefined;
  await withServer(async (req) => {
    if (new URL(req.url).pathname === "/json") parsed = await req.json();
    else bytes = new Uint8Array(await req.arrayBuffer());
    return new Response("ok");
  }, async (url) => {
    const doc = { items: [{ text: "x".repeat(100_000) }] };
    assert.equal(
      await (await fetch(`${url}/json`, { method: "POST", body: JSON.stringify(doc) })).text(),
      "ok",
    );
    const sent = new Uint8Array(200 * 1024).map((_, i) => (i * 3) & 0xff);
    assert.equal(await (await fetch(`${url}/raw`, { method: "POST", body: sent })).text(), "ok");
    assert.deepEqual(parsed, doc);
    assert.deepEqual(bytes, sent);
  });
});

Deno.test("node server: a body over the limit is refused and its connection is not reused", async () => {
  await withServer(async (req, info) => {
    try {
      await readBodyLimited(req, { maxBodyBytes: 1000 }, info.body);
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

Deno.test("node server: a direct handler answers what it claims, the fetch handler the rest", async () => {
  const fetched: string[] = [];
  const seen: { url: string; type?: string; trace?: string; body: Uint8Array }[] = [];
  const direct: DirectHandler = (req: DirectRequest) => {
    if (req.method !== "POST" || !new URL(req.url).pathname.startsWith("/direct/")) return;
    return (async () => {
      const body = await readSourceLimited(req.body, req.header("content-length"), {
        maxBodyBytes: 1 << 20,
      });
      seen.push({
        url: req.url,
        type: req.header("content-type"),
        trace: req.header("x-trace-id"),
        body,
      });
      return { status: 201, headers: { "x-answer": "direct" }, body: body.slice().reverse() };
    })();
  };
  await withServer((req) => {
    fetched.push(`${req.method} ${new URL(req.url).pathname}`);
    return new Response("fetch");
  }, async (url) => {
    const sent = new Uint8Array(200 * 1024).map((_, i) => (i * 13) & 0xff);
    // Dot segments are resolved before the handler sees the URL, as a Request's are.
    const res = await fetch(`${url}/direct/./a?q=1`, {
      method: "POST",
      headers: { "content-type": "application/x-test", "x-trace-id": "  abc " },
      body: sent,
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("x-answer"), "direct");
    assert.equal(res.headers.get("content-length"), String(sent.length));
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), sent.slice().reverse());
    assert.equal(seen[0].url, `${url}/direct/a?q=1`);
    assert.equal(seen[0].type, "application/x-test");
    assert.equal(seen[0].trace, "abc", "values are trimmed as Headers trims them");
    assert.deepEqual(seen[0].body, sent);
    for (const [method, path] of [["GET", "/direct/a"], ["POST", "/other"]]) {
      const r = await fetch(`${url}${path}`, { method, body: method === "POST" ? "x" : undefined });
      assert.equal(await r.text(), "fetch");
    }
  }, direct);
  assert.deepEqual(fetched, ["GET /direct/a", "POST /other"]);
});

Deno.test("node server: a direct handler that fails answers 500 and the server stays up", async () => {
  let calls = 0;
  const direct: DirectHandler = (req) => {
    if (!req.url.endsWith("/boom")) return;
    calls++;
    if (calls === 1) throw new Error("thrown");
    return Promise.reject(new Error("rejected"));
  };
  await withServer(() => new Response("fine"), async (url) => {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${url}/boom`, { method: "POST", body: "x" });
      assert.equal(res.status, 500);
      assert.equal((await res.json()).detail.code, "INTERNAL_ERROR");
    }
    assert.equal(await (await fetch(`${url}/ok`)).text(), "fine");
  }, direct);
  assert.equal(calls, 2);
});

Deno.test("node server: a direct answer to a body left unread closes its connection", async () => {
  const direct: DirectHandler = () =>
    Promise.resolve({ status: 404, headers: {}, body: new TextEncoder().encode("nope") });
  await withServer(() => new Response("unused"), async (url) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
    try {
      // A body declared at 100 KB of which 10 bytes come: the answer cannot wait for the rest.
      const head = "POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: 100000\r\n\r\n0123456789";
      await conn.write(new TextEncoder().encode(head));
      const buf = new Uint8Array(4096);
      let text = "";
      while (!text.includes("nope")) {
        const n = await conn.read(buf);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
      assert.match(text, /^HTTP\/1\.1 404/);
      assert.match(text, /\r\nconnection: close\r\n/i);
      assert.match(text, /\r\n\r\nnope$/);
    } finally {
      conn.close();
    }
  }, direct);
});
