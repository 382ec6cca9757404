/**
 * Issue 16.12, the small ones: msgpack strings with invalid UTF-8 are a 400 like JSON; an Accept
 * header that refuses msgpack (`q=0`) gets JSON; a wrong method on a known path is a 405 with
 * `Allow`, on the worker and on the router. (GLiNER labels that are special tokens or hold NUL are
 * a 400: tests/worker/extract_gliner.test.ts, "labels are data".) The worker's models run on a
 * fake backend: these are answers of the HTTP surface.
 */
import assert from "node:assert/strict";
import { startFakeBackendWorker } from "../worker/harness.ts";
import { startTestRouter } from "../router/helpers/router.ts";

/** `{items: [{text: <str8 of the given bytes>}]}` in msgpack. */
function msgpackWithText(bytes: number[]): Uint8Array<ArrayBuffer> {
  // fixmap(1) "items" fixarray(1) fixmap(1) "text" str8(len) bytes
  return Uint8Array.from([
    0x81,
    0xa5,
    ...new TextEncoder().encode("items"),
    0x91,
    0x81,
    0xa4,
    ...new TextEncoder().encode("text"),
    0xd9,
    bytes.length,
    ...bytes,
  ]);
}

Deno.test("protocol edges: invalid UTF-8 in a msgpack string is a 400; a genuine U+FFFD is fine", async () => {
  const w = await startFakeBackendWorker({ SVC_PRELOAD_MODELS: "fixture/dense" });
  try {
    const url = `${w.url}/v1/encode/fixture/dense`;
    const post = (body: Uint8Array<ArrayBuffer>) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/msgpack", accept: "application/json" },
        body,
      });
    for (const bad of [[0x68, 0xff, 0x69], [0xc3, 0x28], [0xed, 0xa0, 0x80]]) {
      const res = await post(msgpackWithText(bad));
      const body = await res.json();
      assert.equal(res.status, 400, `bytes ${bad}`);
      assert.equal(body.detail.code, "INVALID_INPUT");
      assert.match(body.detail.message, /not valid UTF-8/);
    }
    const fine = await post(msgpackWithText([...new TextEncoder().encode("ok \uFFFD ok")]));
    assert.equal(fine.status, 200);
    await fine.body?.cancel();
  } finally {
    await w.close();
  }
});

Deno.test("protocol edges: Accept with msgpack at q=0 gets JSON; the default stays msgpack", async () => {
  const w = await startFakeBackendWorker({ SVC_PRELOAD_MODELS: "fixture/dense" });
  try {
    const url = `${w.url}/v1/encode/fixture/dense`;
    const body = JSON.stringify({ items: [{ text: "hello" }] });
    const typeFor = async (accept?: string) => {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (accept !== undefined) headers.accept = accept;
      const res = await fetch(url, { method: "POST", headers, body });
      await res.body?.cancel();
      assert.equal(res.status, 200);
      return res.headers.get("content-type");
    };
    assert.equal(await typeFor("application/msgpack;q=0, application/json"), "application/json");
    assert.equal(
      await typeFor("application/json;q=0.9, application/msgpack;q=0.5"),
      "application/json",
    );
    assert.equal(await typeFor("application/json, application/msgpack"), "application/msgpack");
    assert.equal(await typeFor("*/*"), "application/msgpack");
    assert.equal(await typeFor(), "application/msgpack");
  } finally {
    await w.close();
  }
});

/** Method, path, expected Allow. */
type MethodCase = [string, string, string];

async function assert405(base: string, cases: MethodCase[]): Promise<void> {
  for (const [method, path, allow] of cases) {
    const res = await fetch(`${base}${path}`, { method });
    const body = await res.json();
    assert.equal(res.status, 405, `${method} ${path}`);
    assert.equal(res.headers.get("allow"), allow, `${method} ${path}`);
    assert.equal(body.detail.code, "METHOD_NOT_ALLOWED");
  }
}

Deno.test("protocol edges: a wrong method on a known path is 405 with Allow (worker)", async () => {
  const w = await startFakeBackendWorker({}, { preload: false });
  try {
    await assert405(w.url, [
      ["GET", "/v1/encode/fixture/dense", "POST"],
      ["PUT", "/v1/score/fixture/reranker", "POST"],
      ["GET", "/v1/embeddings", "POST"],
      ["POST", "/healthz", "GET, HEAD"],
      ["DELETE", "/v1/models", "GET, HEAD"],
      ["POST", "/v1/models/fixture/dense", "GET, HEAD"],
    ]);
    const unknown = await fetch(`${w.url}/v1/nothing`, { method: "POST" });
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();
  } finally {
    await w.close();
  }
});

Deno.test("protocol edges: a wrong method on a known path is 405 with Allow (router)", async () => {
  const router = await startTestRouter();
  try {
    await assert405(router.url, [
      ["GET", "/v1/encode/fixture/dense", "POST"],
      ["GET", "/v1/embeddings", "POST"],
      ["POST", "/healthz", "GET, HEAD"],
    ]);
    const unknown = await fetch(`${router.url}/v1/nothing`, { method: "POST" });
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();
  } finally {
    await router.close();
  }
});
