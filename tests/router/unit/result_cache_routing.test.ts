/**
 * The result cache and coalescing through the real router, to in-process fake workers that count
 * what reaches them: hits equal misses byte for byte, entries are per tenant and per model
 * revision, Cache-Control bypasses, only revisioned 200s are stored, the byte bound evicts, and
 * identical requests in flight reach a worker once (a failure is not shared).
 */
import assert from "node:assert/strict";
import { type FakeWorker, startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";
import { entryBytes } from "#router/cache/store.ts";

const REV_A = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const REV_B = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const KEY_1 = "tenant-one-key-0001";
const KEY_2 = "tenant-two-key-0002";
const ADMIN_KEY = "operator-admin-key-0003";
const CPU = { "x-svc-machine-profile": "cpu" };

/** A router and one fake worker serving `fixture/dense` at `revision`. */
async function setup(
  env: Record<string, string> = {},
  revision: string | null = REV_A,
): Promise<{ r: TestRouter; w: FakeWorker; close: () => Promise<void> }> {
  const r = await startTestRouter(env);
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded", revision: revision ?? undefined }],
  });
  const close = async () => {
    await w.close();
    await r.close();
  };
  try {
    await waitFor(() => w.link.connected, "the worker to register");
    if (revision) await announced(r, revision);
  } catch (err) {
    await close();
    throw err;
  }
  return { r, w, close };
}

/** Wait until the router's directory shows the worker's model at `revision`. */
async function announced(r: TestRouter, revision: string | undefined): Promise<void> {
  await waitFor(
    () => r.directory.snapshot().some((w) => w.models.some((m) => m.revision === revision)),
    `revision ${revision} announced`,
  );
}

interface Answer {
  status: number;
  cache: string | null;
  headers: Headers;
  body: Uint8Array;
}

async function encode(
  r: TestRouter,
  text: string,
  headers: Record<string, string> = {},
  path = "/v1/encode/fixture%2Fdense",
): Promise<Answer> {
  const res = await fetch(r.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...CPU, ...headers },
    body: JSON.stringify({ items: [{ text }] }),
  });
  const body = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, cache: res.headers.get("x-svc-cache"), headers: res.headers, body };
}

/** Headers of an answer without the ones that differ per response. */
function stable(h: Headers): [string, string][] {
  return [...h].filter(([k]) =>
    !["date", "x-svc-cache", "x-trace-id", "x-request-id", "connection", "keep-alive"].includes(k)
  );
}

Deno.test("result cache: a repeat is a hit equal to the miss, byte for byte and header for header", async () => {
  const { r, w, close } = await setup();
  try {
    const miss = await encode(r, "hello");
    assert.equal(miss.status, 200);
    assert.equal(miss.cache, "miss");
    assert.equal(miss.headers.get("x-svc-model-revision"), REV_A);
    const hit = await encode(r, "hello");
    assert.equal(hit.cache, "hit");
    assert.deepEqual(hit.body, miss.body);
    assert.deepEqual(stable(hit.headers), stable(miss.headers));
    // What the worker said of its truncations stays with the answer; which worker it was is not
    // told (SVC_EXPOSE_WORKER_ID is off), on the miss or on the hit.
    assert.equal(hit.headers.get("x-truncated-items"), "2");
    assert.equal(miss.headers.get("x-svc-worker-id"), null);
    assert.equal(hit.headers.get("x-svc-worker-id"), null);
    assert.equal(w.requests.length, 1, "the repeat never reached the worker");
    // Another text is another entry.
    assert.equal((await encode(r, "other")).cache, "miss");
    assert.equal(w.requests.length, 2);
    assert.equal(await r.metrics.cacheRequests.value({ result: "hit" }), 1);
    assert.equal(await r.metrics.cacheRequests.value({ result: "miss" }), 2);
    const metrics = await (await fetch(`${r.url}/metrics`)).text();
    assert.match(metrics, /svc_router_cache_requests_total\{result="hit"\} 1/);
    const bytes = Number(metrics.match(/^svc_router_cache_bytes (\d+)/m)?.[1]);
    assert.ok(bytes > miss.body.length * 2, `svc_router_cache_bytes ${bytes}`);
    // A hit is not a request a worker computed: the workers' series leave it out.
    assert.equal(
      await r.metrics.svcRequests.value({
        model: "fixture/dense",
        endpoint: "encode",
        status: "200",
      }),
      2,
    );
    // The Accept header is part of the key.
    assert.equal((await encode(r, "hello", { accept: "application/msgpack" })).cache, "miss");
  } finally {
    await close();
  }
});

Deno.test("result cache: with SVC_EXPOSE_WORKER_ID, a hit names the worker that computed it", async () => {
  const { r, w, close } = await setup({ SVC_EXPOSE_WORKER_ID: "1" });
  try {
    const miss = await encode(r, "hello");
    assert.equal(miss.cache, "miss");
    assert.equal(miss.headers.get("x-svc-worker-id"), "w1");
    const hit = await encode(r, "hello");
    assert.equal(hit.cache, "hit");
    assert.equal(hit.headers.get("x-svc-worker-id"), "w1");
    assert.deepEqual(stable(hit.headers), stable(miss.headers));
    assert.equal(w.requests.length, 1);
  } finally {
    await close();
  }
});

Deno.test("result cache: /v1/embeddings and the Cohere routes are cached too", async () => {
  const { r, w, close } = await setup();
  try {
    for (const path of ["/v1/embeddings", "/v2/embed"]) {
      const send = () =>
        fetch(r.url + path, {
          method: "POST",
          headers: { "content-type": "application/json", ...CPU },
          body: JSON.stringify({ model: "fixture/dense", input: "hi", texts: ["hi"] }),
        });
      const first = await send();
      await first.body?.cancel();
      const second = await send();
      await second.body?.cancel();
      assert.equal(first.headers.get("x-svc-cache"), "miss", path);
      assert.equal(second.headers.get("x-svc-cache"), "hit", path);
    }
    assert.equal(w.requests.length, 2);
  } finally {
    await close();
  }
});

Deno.test("result cache: one tenant never gets another's entry", async () => {
  const { r, w, close } = await setup({
    SVC_API_KEYS: `${KEY_1},${KEY_2}`,
    SVC_ADMIN_KEYS: ADMIN_KEY,
  });
  try {
    const one = { authorization: `Bearer ${KEY_1}` };
    const two = { authorization: `Bearer ${KEY_2}` };
    const admin = { authorization: `Bearer ${ADMIN_KEY}` };
    assert.equal((await encode(r, "hello", one)).cache, "miss");
    assert.equal((await encode(r, "hello", two)).cache, "miss");
    assert.equal((await encode(r, "hello", one)).cache, "hit");
    assert.equal((await encode(r, "hello", two)).cache, "hit");
    assert.equal(w.requests.length, 2);
    // An admin key used as a client key is a tenant of its own too.
    assert.equal((await encode(r, "hello", admin)).cache, "miss");
    assert.equal((await encode(r, "hello", admin)).cache, "hit");
    assert.equal(w.requests.length, 3);
    assert.equal((await encode(r, "hello", { authorization: "Bearer wrong-key-000" })).status, 401);
  } finally {
    await close();
  }
});

Deno.test("result cache: an entry is served only while its model revision is announced", async () => {
  const { r, w, close } = await setup();
  try {
    await encode(r, "hello");
    assert.equal((await encode(r, "hello")).cache, "hit");
    // New weights: the stored answer is not served; the new one replaces it.
    w.state.models.get("fixture/dense")!.revision = REV_B;
    await announced(r, REV_B);
    const fresh = await encode(r, "hello");
    assert.equal(fresh.cache, "miss");
    assert.equal(fresh.headers.get("x-svc-model-revision"), REV_B);
    assert.equal((await encode(r, "hello")).cache, "hit");
    // The model unloaded: nothing is announced, nothing is served.
    w.state.models.get("fixture/dense")!.revision = undefined;
    await waitFor(
      () => r.directory.snapshot()[0].models.every((m) => m.revision === undefined),
      "revision withdrawn",
    );
    assert.equal((await encode(r, "hello")).cache, "miss");
    assert.equal(w.requests.length, 3);
    // Not stored either (the answer named no revision); the same weights back: hits again.
    w.state.models.get("fixture/dense")!.revision = REV_B;
    await announced(r, REV_B);
    assert.equal((await encode(r, "hello")).cache, "hit");
    assert.equal(w.requests.length, 3);
  } finally {
    await close();
  }
});

Deno.test("result cache: no-store and no-cache reach the worker; no-cache refreshes the entry", async () => {
  const { r, w, close } = await setup();
  try {
    await encode(r, "hello");
    const noStore = await encode(r, "hello", { "cache-control": "no-store" });
    assert.equal(noStore.cache, "bypass");
    assert.equal(w.requests.length, 2);
    w.padBytes = 10;
    const noCache = await encode(r, "hello", { "cache-control": "no-cache" });
    assert.equal(noCache.cache, "bypass");
    assert.equal(w.requests.length, 3);
    const hit = await encode(r, "hello");
    assert.equal(hit.cache, "hit");
    assert.deepEqual(hit.body, noCache.body, "the refreshed answer is the one served");
    // A no-store answer is not stored.
    await encode(r, "fresh", { "cache-control": "no-store" });
    assert.equal((await encode(r, "fresh")).cache, "miss");
    assert.equal(await r.metrics.cacheRequests.value({ result: "bypass" }), 3);
  } finally {
    await close();
  }
});

Deno.test("result cache: failures and answers without a revision are not stored", async () => {
  const { r, w, close } = await setup();
  try {
    w.failWith = { status: 500, detail: { code: "INTERNAL_ERROR", message: "boom" } };
    assert.equal((await encode(r, "hello")).status, 500);
    const again = await encode(r, "hello");
    assert.equal(again.status, 500);
    assert.equal(again.cache, "miss");
    assert.equal(w.requests.length, 2);
    w.failWith = undefined;
    assert.equal((await encode(r, "hello")).cache, "miss");
    assert.equal((await encode(r, "hello")).cache, "hit");
  } finally {
    await close();
  }
  // A model whose answers name no revision (an old worker, a LoRA adapter): never stored.
  const bare = await setup({}, null);
  try {
    await encode(bare.r, "hello");
    assert.equal((await encode(bare.r, "hello")).cache, "miss");
    assert.equal(bare.w.requests.length, 2);
  } finally {
    await bare.close();
  }
});

Deno.test("result cache: bounded in bytes (least recently used out), big answers never held", async () => {
  // Room for three answers of about 2 KB (not four); bodies over 100 KB are not kept.
  const headers = Array.from(
    { length: 7 },
    (_, i): [string, string] => [`x-header-${i}abcdefg`, "0123"],
  );
  const probe = {
    status: 200,
    headers,
    body: new Uint8Array(2300),
    revision: REV_A,
    producer: crypto.randomUUID(),
  };
  const bound = 3 * entryBytes("k".repeat(44), probe) + 1000;
  const { r, w, close } = await setup({
    SVC_RESULT_CACHE_BYTES: String(bound),
    SVC_RESULT_CACHE_MAX_ENTRY_BYTES: String(100_000),
  });
  try {
    w.padBytes = 2000;
    for (const t of ["a", "b", "c"]) assert.equal((await encode(r, t)).cache, "miss");
    assert.equal((await encode(r, "a")).cache, "hit");
    assert.equal((await encode(r, "d")).cache, "miss"); // evicts b, the least recently used
    assert.equal((await encode(r, "b")).cache, "miss");
    assert.equal((await encode(r, "a")).cache, "hit");
    const metrics = await (await fetch(`${r.url}/metrics`)).text();
    const held = Number(metrics.match(/^svc_router_cache_bytes (\d+)/m)?.[1]);
    assert.ok(held > 0 && held <= bound, `svc_router_cache_bytes ${held} within ${bound}`);
    // Over the entry bound: passed on whole, never held.
    w.padBytes = 120_000;
    const big = await encode(r, "big");
    assert.equal(big.status, 200);
    assert.ok(big.body.length > 120_000);
    assert.equal((await encode(r, "big")).cache, "miss");
  } finally {
    await close();
  }
});

Deno.test("result cache: a streamed answer is stored while it streams, and a hit equals it", async () => {
  const { r, w, close } = await setup();
  try {
    w.padBytes = 200_000;
    const miss = await encode(r, "long");
    assert.ok(miss.body.length > 200_000);
    const hit = await encode(r, "long");
    assert.equal(hit.cache, "hit");
    assert.deepEqual(hit.body, miss.body);
    assert.equal(w.requests.length, 1);
  } finally {
    await close();
  }
});

Deno.test("coalescing: 16 identical requests in flight reach the worker once", async () => {
  const { r, w, close } = await setup();
  try {
    let release!: () => void;
    w.hold = new Promise<void>((res) => release = res);
    const all = Array.from({ length: 16 }, () => encode(r, "together"));
    // All 16 reach the router (one goes on to the worker) before the worker answers.
    await waitFor(() => w.requests.length === 1, "the leader at the worker");
    await waitFor(() => r.cache!.flights.followers === 15, "15 followers");
    release();
    const answers = await Promise.all(all);
    assert.equal(w.requests.length, 1);
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.deepEqual(a.body, answers[0].body);
    }
    assert.deepEqual(answers.map((a) => a.cache).sort(), ["miss", ...Array(15).fill("hit")].sort());
    assert.equal(await r.metrics.cacheRequests.value({ result: "coalesced" }), 15);
  } finally {
    await close();
  }
});

Deno.test("coalescing: a failed answer is not shared: its followers coalesce behind a new leader", async () => {
  const { r, w, close } = await setup();
  try {
    let release!: () => void;
    w.hold = new Promise<void>((res) => release = res);
    w.failWith = { status: 500, detail: { code: "INTERNAL_ERROR", message: "only the first" } };
    const all = Array.from({ length: 4 }, () => encode(r, "together"));
    await waitFor(() => w.requests.length === 1, "the leader at the worker");
    await waitFor(() => r.cache!.flights.followers === 3, "3 followers");
    // The leader's answer fails; requests arriving at the worker from now on succeed.
    w.failWith = undefined;
    w.hold = undefined;
    release();
    const answers = await Promise.all(all);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 500]);
    assert.equal(w.requests.length, 2, "one follower went to the worker, two followed it");
    assert.equal(r.cache!.flights.size, 0);
    assert.equal((await encode(r, "together")).cache, "hit");
  } finally {
    await close();
  }
});

Deno.test("coalescing: followers of flights that keep failing go alone after a few rounds", async () => {
  const { r, w, close } = await setup();
  try {
    let release!: () => void;
    w.hold = new Promise<void>((res) => release = res);
    w.failWith = { status: 500, detail: { code: "INTERNAL_ERROR", message: "always" } };
    const all = Array.from({ length: 6 }, () => encode(r, "doomed"));
    await waitFor(() => r.cache!.flights.followers === 5, "5 followers");
    release();
    const answers = await Promise.all(all);
    assert.deepEqual(answers.map((a) => a.status), Array(6).fill(500));
    // Three serial rounds (leader, then two new leaders), then the last three each alone.
    assert.equal(w.requests.length, 6);
    assert.equal(r.cache!.flights.size, 0);
  } finally {
    await close();
  }
});

Deno.test("coalescing: no-store requests are never coalesced", async () => {
  const { r, w, close } = await setup();
  try {
    let release!: () => void;
    w.hold = new Promise<void>((res) => release = res);
    const all = Array.from({ length: 3 }, () => encode(r, "x", { "cache-control": "no-store" }));
    await waitFor(() => w.requests.length === 3, "all three at the worker");
    release();
    for (const a of await Promise.all(all)) assert.equal(a.cache, "bypass");
  } finally {
    await close();
  }
});
