/**
 * Three routers on one Deno KV database (instances of one fleet, modelled in one process): what
 * a client can observe is the same on each. The result cache misses once and then hits on every
 * instance; 202s show the fleet's total demand; a drain sent to any instance drains the worker;
 * pool renewals answer the same everywhere. No KV path is set, so the change counters are polled
 * only every second here: the prompt updates the waits see come from KV watches.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";

const REV = "0123456789abcdef0123456789abcdef";
const ENV = {
  SVC_DIRECTORY: "kv",
  SVC_KV_REFRESH_MS: "100",
  SVC_WORKER_STALE_MS: "600000",
  SVC_MACHINE_PROFILES: "cpu,gpu",
  // A model the router knows with no worker: each of its 202s counts (made-up names count once).
  SVC_EXTRA_MODELS: "org/known=default",
};

async function threeRouters(fn: (r: TestRouter[]) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const routers: TestRouter[] = [];
  try {
    for (let i = 0; i < 3; i++) routers.push(await startTestRouter(ENV, { kv }));
    await fn(routers);
  } finally {
    for (const r of routers) await r.close();
    kv.close();
  }
}

function encode(
  url: string,
  body: string,
  profile = "cpu",
  model = "fixture%2Fdense",
): Promise<Response> {
  return fetch(`${url}/v1/encode/${model}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-svc-machine-profile": profile },
    body,
  });
}

Deno.test("kv fleet: one body misses once, then hits on every instance", async () => {
  await threeRouters(async ([a, b, c]) => {
    const w = startFakeWorker({
      routerUrl: a.url,
      token: TEST_TOKEN,
      id: "kv-cache-w",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded", revision: REV }],
    });
    try {
      for (const r of [a, b, c]) {
        await waitFor(
          async () => (await getJson(`${r.url}/health`)).body.worker_count === 1,
          "seen",
        );
      }
      const body = JSON.stringify({ items: [{ text: "shared" }] });
      const first = await encode(b.url, body);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-svc-cache"), "miss");
      const text = await first.text();
      await b.cache!.tier!.flush();
      for (const r of [a, c, b]) {
        const res = await encode(r.url, body);
        assert.equal(res.headers.get("x-svc-cache"), "hit", r.url);
        assert.equal(await res.text(), text);
      }
      assert.equal(w.requests.filter((q) => q.path.startsWith("/v1/encode")).length, 1);
    } finally {
      await w.close();
    }
  });
});

Deno.test("kv fleet: 202s show the total demand on every instance", async () => {
  await threeRouters(async ([a, b, c]) => {
    const pending = async (url: string) => {
      const res = await encode(url, "{}", "gpu", "org%2Fknown");
      assert.equal(res.status, 202);
      return (await res.json()).pending as number;
    };
    assert.equal(await pending(a.url), 1);
    assert.equal(await pending(a.url), 2);
    assert.equal(await pending(a.url), 3);
    // b and c learn a's count through KV (batched writes, a polled change counter).
    for (const r of [b, c]) {
      await waitFor(async () => {
        const h = (await getJson(`${r.url}/health`)).body;
        return h.pending_demand?.[0]?.pending === 3;
      }, "the total reaches the other instance");
    }
    assert.equal(await pending(b.url), 4);
    await waitFor(async () => {
      const h = (await getJson(`${c.url}/health`)).body;
      return h.pending_demand?.[0]?.pending === 4;
    }, "b's request counted on c");
    assert.equal(await pending(c.url), 5);
  });
});

Deno.test("kv fleet: a drain sent to any instance drains the worker; renewals agree", async () => {
  await threeRouters(async ([a, b, c]) => {
    const w = startFakeWorker({
      routerUrl: a.url,
      token: TEST_TOKEN,
      id: "kv-drain-w",
      profile: "cpu",
      models: [{ name: "fixture/dense" }],
    });
    try {
      for (const r of [a, b, c]) {
        await waitFor(
          async () => (await getJson(`${r.url}/health`)).body.worker_count === 1,
          "seen",
        );
        const renew = await getJson(`${r.url}/v1/pools/cpu/renew`, { method: "POST" });
        assert.equal(renew.status, 200, "the pool is known on every instance");
      }
      const res = await getJson(`${c.url}/v1/admin/workers/kv-drain-w/drain`, { method: "POST" });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.state, "draining");
      for (const r of [a, b, c]) {
        await waitFor(
          async () => (await getJson(`${r.url}/readyz`)).body.healthy_workers === 0,
          "every instance sees the drain",
        );
      }
      const none = await getJson(`${b.url}/v1/admin/workers/nobody/drain`, { method: "POST" });
      assert.equal(none.status, 404);
    } finally {
      await w.close();
    }
  });
});
