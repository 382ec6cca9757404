/**
 * What the SIE clients read of the gateway (issue 25): `/health` workers carry `gpu` (the pool's
 * GPU type) and `healthy`; `/v1/pools` lists the pools (machine profiles), answers a create of an
 * accepted pool and refuses the rest with a 501 naming SVC_MACHINE_PROFILES; `X-SIE-Pool` picks
 * the pool like the machine-profile header, or is a 400. Errors the router itself answers on the
 * compatible routes carry their clients' envelope.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, type Json, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const MODEL = "BAAI/bge-small-en-v1.5";

function encode(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${url}/v1/encode/${encodeURIComponent(MODEL)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ items: [{ text: "x" }] }),
  });
}

Deno.test("gateway: /health workers carry gpu and healthy; /v1/pools lists, reads, refuses changes", async () => {
  const r = await startTestRouter({
    SVC_MACHINE_PROFILES: "l4,a100",
    SVC_DEFAULT_MACHINE_PROFILE: "l4",
  });
  const cpu = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w-cpu",
    profile: "cpu",
    models: [{ name: MODEL, state: "loaded" }],
  });
  const l4 = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w-l4",
    profile: "l4",
    models: [{ name: MODEL }],
  });
  try {
    await waitFor(
      async () => (await getJson(`${r.url}/health`)).body.workers.length === 2,
      "both workers registered",
    );
    l4.state.draining = true;
    await waitFor(
      async () =>
        (await getJson(`${r.url}/health`)).body.workers.some((w: Json) => w.state === "draining"),
      "the l4 worker draining",
    );
    const health = (await getJson(`${r.url}/health`)).body;
    const byId = new Map(health.workers.map((w: Json) => [w.id, w]));
    assert.equal((byId.get("w-cpu") as Json).gpu, "cpu");
    assert.equal((byId.get("w-cpu") as Json).healthy, true);
    assert.equal((byId.get("w-l4") as Json).gpu, "l4");
    assert.equal((byId.get("w-l4") as Json).healthy, false, "a draining worker is not healthy");

    const list = await getJson(`${r.url}/v1/pools`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.pools.map((p: Json) => p.name), ["a100", "cpu", "l4"]);
    const [a100, cpuPool, l4Pool] = list.body.pools;
    assert.deepEqual(
      [a100.status, a100.configured, a100.worker_count, a100.gpu],
      ["idle", true, 0, "a100"],
    );
    assert.deepEqual([cpuPool.status, cpuPool.configured, cpuPool.workers], [
      "active",
      false,
      ["w-cpu"],
    ]);
    assert.deepEqual([l4Pool.is_default, l4Pool.worker_count, l4Pool.healthy_workers], [
      true,
      1,
      0,
    ]);
    assert.equal((await getJson(`${r.url}/v1/pools/cpu`)).body.name, "cpu");
    const missing = await getJson(`${r.url}/v1/pools/h100`);
    assert.equal(missing.status, 404);

    // Creating an accepted pool answers it; another one is a 501 naming the setting.
    const post = (body: unknown) =>
      getJson(`${r.url}/v1/pools`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const same = await post({ name: "a100" });
    assert.equal(same.status, 200);
    assert.equal(same.body.name, "a100");
    const other = await post({ name: "h100", gpu: "h100" });
    assert.equal(other.status, 501);
    assert.equal(other.body.detail.code, "NOT_IMPLEMENTED");
    assert.match(other.body.detail.message, /SVC_MACHINE_PROFILES/);
    assert.equal((await post({})).status, 400);
    const del = await getJson(`${r.url}/v1/pools/a100`, { method: "DELETE" });
    assert.equal(del.status, 501);
    assert.match(del.body.detail.message, /SVC_MACHINE_PROFILES/);
    assert.equal((await getJson(`${r.url}/v1/pools/h100`, { method: "DELETE" })).status, 404);
  } finally {
    await cpu.close();
    await l4.close();
    await r.close();
  }
});

Deno.test("gateway: X-SIE-Pool routes like the machine-profile header, or is a clear 400", async () => {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "a100" });
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w-cpu",
    profile: "cpu",
    models: [{ name: MODEL, state: "loaded" }],
  });
  try {
    await waitFor(
      async () => (await getJson(`${r.url}/health`)).body.workers.length === 1,
      "the worker registered",
    );
    const ok = await encode(r.url, { "x-sie-pool": "cpu" });
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).worker, "w-cpu");
    // A configured pool without a worker provisions, as with the profile header.
    const idle = await encode(r.url, { "x-sie-pool": "a100" });
    assert.equal(idle.status, 202);
    await idle.body?.cancel();
    const unknown = await encode(r.url, { "x-sie-pool": "h100" });
    assert.equal(unknown.status, 400);
    assert.match((await unknown.json()).detail.message, /unknown machine profile "h100"/);
    const clash = await encode(r.url, { "x-sie-pool": "cpu", "x-svc-machine-profile": "a100" });
    assert.equal(clash.status, 400);
    assert.match((await clash.json()).detail.message, /X-SIE-Pool and X-SVC-MACHINE-PROFILE/);
    const agree = await encode(r.url, { "x-sie-pool": "cpu", "x-sie-machine-profile": "CPU" });
    assert.equal(agree.status, 200);
    await agree.body?.cancel();
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("gateway: the router's own errors carry the OpenAI and Cohere envelopes on their routes", async () => {
  const r = await startTestRouter({ SVC_API_KEYS: "key-0123456789" });
  try {
    const post = (path: string, headers: Record<string, string> = {}) =>
      getJson(`${r.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ model: "x/y", input: "a", query: "q", documents: ["d"] }),
      });
    const openai = await post("/v1/embeddings");
    assert.equal(openai.status, 401);
    assert.equal(openai.body.detail.code, "UNAUTHORIZED");
    assert.deepEqual(openai.body.error, {
      message: openai.body.detail.message,
      type: "authentication_error",
      param: null,
      code: "unauthorized",
    });
    for (const path of ["/v1/rerank", "/v2/rerank", "/v1/embed", "/v2/embed"]) {
      const cohere = await post(path);
      assert.equal(cohere.status, 401, path);
      assert.equal(cohere.body.message, cohere.body.detail.message, path);
    }
    // The native routes keep the native body alone.
    const native = await post(`/v1/encode/${encodeURIComponent(MODEL)}`);
    assert.equal(native.status, 401);
    assert.deepEqual(Object.keys(native.body), ["detail"]);
  } finally {
    await r.close();
  }
});
