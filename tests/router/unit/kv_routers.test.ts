/**
 * Many router isolates (Deno Deploy) modelled in one process: two routers share one Deno KV
 * database. A worker's socket lives on router A; router B sees it and routes to it.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter } from "../helpers/router.ts";
import { TEST_TOKEN } from "../helpers/router.ts";

Deno.test("kv: two routers sharing one KV see each other's workers", async () => {
  const kv = await Deno.openKv(":memory:");
  // A stale bound far beyond every wait below: B can only learn of changes through KV.
  const env = {
    SVC_DIRECTORY: "kv",
    SVC_KV_REFRESH_MS: "100",
    SVC_WORKER_STALE_MS: "600000",
    SVC_MACHINE_PROFILES: "cpu",
    SVC_EXPOSE_WORKER_ID: "1", // which router answered is what this test checks
  };
  const a = await startTestRouter(env, { kv });
  const b = await startTestRouter(env, { kv });
  const w = startFakeWorker({
    routerUrl: a.url,
    token: TEST_TOKEN,
    id: "kv-worker",
    profile: "cpu",
    models: [{ name: "fixture/dense" }],
  });
  try {
    await waitFor(() => w.link.connected, "registration on router A");
    await waitFor(async () => {
      const h = (await getJson(`${b.url}/health`)).body;
      return h.worker_count === 1 && h.directory === "kv";
    }, "router B to see the worker");
    // B routes to the worker whose socket is on A; B also knows the fixture model's bundle.
    const res = await fetch(`${b.url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
      body: "{}",
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-svc-worker-id"), "kv-worker");
    await res.body?.cancel();
    // Status frames reach B through KV.
    w.state.models.get("fixture/dense")!.state = "loaded";
    await waitFor(async () => {
      const h = (await getJson(`${b.url}/health`)).body;
      return h.loaded_models.includes("fixture/dense");
    }, "status through KV");
    // Drain on A is seen by B.
    await w.link.drain();
    await waitFor(
      async () => (await getJson(`${b.url}/readyz`)).body.healthy_workers === 0,
      "drain through KV",
    );
    // The socket drops on A: B forgets the worker (A's removal reaches it through KV).
    await w.link.close();
    await waitFor(
      async () => (await getJson(`${b.url}/health`)).body.worker_count === 0,
      "removal through KV",
    );
    // The learned bundle survives: an empty pool answers 202, not 404.
    const p = await fetch(`${b.url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
      body: "{}",
    });
    assert.equal(p.status, 202);
    await p.body?.cancel();
  } finally {
    await w.close();
    await a.close();
    await b.close();
    kv.close();
  }
});
