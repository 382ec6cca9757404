/**
 * The router's /readyz: 200 with no worker by default (the SIE contract: a scale-from-zero router
 * stays in its load balancer), naming an empty default pool; 503 until the default pool has a
 * serving worker when SVC_READYZ_REQUIRE_WORKER is on (what `deno task start` sets).
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const MODELS = [{ name: "fixture/dense" }];

Deno.test("readyz: 200 with an empty default pool, and the body says so", async () => {
  const r = await startTestRouter({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" });
  try {
    const empty = await getJson(`${r.url}/readyz`);
    assert.equal(empty.status, 200);
    assert.equal(empty.body.status, "ready");
    assert.equal(empty.body.healthy_workers, 0);
    assert.deepEqual(empty.body.default_pool, { machine_profile: "cpu", serving_workers: 0 });
    assert.match(empty.body.message, /no worker serves the default pool "cpu"/);
    assert.match(empty.body.message, /202/);
  } finally {
    await r.close();
  }
});

Deno.test("readyz: with SVC_READYZ_REQUIRE_WORKER, 503 until a worker of the default pool serves", async () => {
  const r = await startTestRouter({
    SVC_DEFAULT_MACHINE_PROFILE: "cpu",
    SVC_READYZ_REQUIRE_WORKER: "1",
  });
  const other = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w-gpu",
    profile: "l4",
    models: MODELS,
  });
  let local: ReturnType<typeof startFakeWorker> | undefined;
  try {
    await waitFor(() => other.link.connected, "l4 worker registered");
    // A worker of another pool does not make requests without a profile header servable.
    const notYet = await getJson(`${r.url}/readyz`);
    assert.equal(notYet.status, 503);
    assert.equal(notYet.headers.get("retry-after"), "1");
    assert.equal(notYet.body.status, "not_ready");
    assert.equal(notYet.body.healthy_workers, 1);
    assert.deepEqual(notYet.body.default_pool, { machine_profile: "cpu", serving_workers: 0 });
    local = startFakeWorker({
      routerUrl: r.url,
      token: TEST_TOKEN,
      id: "w-cpu",
      profile: "cpu",
      models: MODELS,
    });
    await waitFor(async () => (await getJson(`${r.url}/readyz`)).status === 200, "ready");
    const ready = await getJson(`${r.url}/readyz`);
    assert.deepEqual(ready.body, {
      status: "ready",
      healthy_workers: 2,
      default_pool: { machine_profile: "cpu", serving_workers: 1 },
    });
    // Drained, it no longer counts.
    const drained = await getJson(`${r.url}/v1/admin/workers/w-cpu/drain`, { method: "POST" });
    assert.equal(drained.status, 200, JSON.stringify(drained.body));
    assert.equal((await getJson(`${r.url}/readyz`)).status, 503);
  } finally {
    await local?.close();
    await other.close();
    await r.close();
  }
});

Deno.test("readyz: without a default pool, SVC_READYZ_REQUIRE_WORKER waits for any worker", async () => {
  const r = await startTestRouter({ SVC_READYZ_REQUIRE_WORKER: "1" });
  // Asked before any worker dials: the 503 is certain.
  const before = await getJson(`${r.url}/readyz`);
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "l4",
    models: MODELS,
  });
  try {
    assert.equal(before.status, 503);
    assert.match(before.body.message, /no worker serves yet/);
    await waitFor(async () => (await getJson(`${r.url}/readyz`)).status === 200, "ready");
    assert.deepEqual((await getJson(`${r.url}/readyz`)).body, {
      status: "ready",
      healthy_workers: 1,
    });
  } finally {
    await w.close();
    await r.close();
  }
});
