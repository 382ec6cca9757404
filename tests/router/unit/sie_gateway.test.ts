/**
 * What the SIE clients read of the gateway (issue 25): `/health` workers carry `gpu` (the pool's
 * GPU type) and `healthy`; `/v1/pools` lists and reads pools in the shape the clients' `getPool`
 * and listing read (`spec`, `status.state`, `status.assigned_workers`), answers a create of an
 * accepted pool with the GPU types it runs, renews every accepted pool, and refuses the rest with
 * a 501 naming the settings; `X-SIE-Pool` (and `pool/gpu` in the profile header) picks the pool,
 * checked against the GPU type sent with it, or is a 400. Errors the router itself answers on the
 * compatible routes carry their clients' envelope.
 */
import assert from "node:assert/strict";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, type Json, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";
import {
  assertShape,
  CAPACITY_HEALTH,
  POOL_INFO,
  POOL_LIST_ITEM,
} from "../../compat/client/sie_shapes.ts";

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
    assertShape(health, CAPACITY_HEALTH, "/health");
    assert.equal(health.cluster.worker_count, 1, "the serving workers (the l4 one drains)");
    const byId = new Map(health.workers.map((w: Json) => [w.id, w]));
    assert.equal((byId.get("w-cpu") as Json).gpu, "cpu");
    assert.equal((byId.get("w-cpu") as Json).healthy, true);
    assert.equal((byId.get("w-l4") as Json).gpu, "l4");
    assert.equal((byId.get("w-l4") as Json).healthy, false, "a draining worker is not healthy");

    const list = await getJson(`${r.url}/v1/pools`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.pools.map((p: Json) => p.name), ["a100", "cpu", "l4"]);
    for (const p of list.body.pools) {
      assertShape(p, POOL_INFO, `pool ${p.name}`);
      assertShape(p, POOL_LIST_ITEM, `listed pool ${p.name}`);
    }
    const [a100, cpuPool, l4Pool] = list.body.pools;
    assert.deepEqual(
      [a100.state, a100.status.state, a100.configured, a100.worker_count, a100.gpu, a100.gpus],
      ["pending", "pending", true, 0, "a100", { a100: 0 }],
      "a configured pool without workers is pending (requests get 202)",
    );
    assert.deepEqual(a100.status.assigned_workers, []);
    assert.deepEqual([cpuPool.state, cpuPool.configured, cpuPool.workers], [
      "active",
      false,
      ["w-cpu"],
    ]);
    assert.deepEqual(cpuPool.spec, { gpus: { cpu: 1 }, bundle: null, minimum_worker_count: 0 });
    const cpuWorker = byId.get("w-cpu") as Json;
    assert.deepEqual(cpuPool.status.assigned_workers, [
      { name: "w-cpu", url: cpuWorker.url, gpu: "cpu" },
    ]);
    assert.deepEqual(
      [l4Pool.is_default, l4Pool.worker_count, l4Pool.healthy_workers, l4Pool.state],
      [true, 1, 0, "pending"],
      "a pool whose only worker drains serves nothing",
    );
    const one = await getJson(`${r.url}/v1/pools/cpu`);
    assertShape(one.body, POOL_INFO, "GET /v1/pools/cpu");
    assert.deepEqual(one.body, cpuPool);
    // getPool() answers null for a 404; deletePool() counts a 404 as gone.
    const missing = await getJson(`${r.url}/v1/pools/h100`);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.detail.code, "NOT_FOUND");

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
    // createPool(name, gpus) as the SIE clients send it: the GPU types the pool runs are fine.
    const withGpus = await post({ name: "cpu", gpus: { cpu: 2 }, minimum_worker_count: 1 });
    assert.equal(withGpus.status, 200);
    assert.equal(withGpus.body.status.state, "active", "the clients log status.state");
    const otherGpu = await post({ name: "cpu", gpus: { l4: 1 } });
    assert.equal(otherGpu.status, 501);
    assert.match(otherGpu.body.detail.message, /pool "cpu" runs machine profile "cpu", not "l4"/);
    const other = await post({ name: "eval-bench", gpus: { l4: 2 } });
    assert.equal(other.status, 501);
    assert.equal(other.body.detail.code, "NOT_IMPLEMENTED");
    assert.match(other.body.detail.message, /SVC_MACHINE_PROFILES/);
    assert.match(other.body.detail.message, /SVC_POOL/);
    // The body is validated like every other (zod): each refusal names the field.
    const refused = async (body: unknown, field: RegExp) => {
      const res = await post(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail.message, field);
    };
    await refused({}, /^name: a pool needs a `name`/);
    await refused({ name: 3 }, /^name: /);
    await refused({ name: "cpu", gpus: ["cpu"] }, /^gpus: /);
    await refused({ name: "cpu", gpus: { cpu: -1 } }, /^gpus\.cpu: /);
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`g${i}`, 1]));
    await refused({ name: "cpu", gpus: many }, /^gpus: at most 32 GPU types/);
    // `null` counts as absent, as for every optional field.
    assert.equal((await post({ name: "cpu", gpus: null, bundle: null })).status, 200);
    // The clients renew the pools they created every minute: nothing expires here.
    const renew = (name: string) => getJson(`${r.url}/v1/pools/${name}/renew`, { method: "POST" });
    const renewed = await renew("cpu");
    assert.equal(renewed.status, 200);
    assert.match(renewed.body.message, /no lease/);
    assert.equal((await renew("a100")).status, 200, "a configured pool without workers");
    assert.equal((await renew("h100")).status, 404);
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
    // The SIE clients send gpu "pool/gpu" as X-SIE-Pool plus X-SIE-MACHINE-PROFILE: the pool
    // routes; a GPU type its workers do not run is a 400, never a worker of another type.
    const clash = await encode(r.url, { "x-sie-pool": "cpu", "x-svc-machine-profile": "a100" });
    assert.equal(clash.status, 400);
    assert.match(
      (await clash.json()).detail.message,
      /X-SIE-Pool "cpu" and X-SVC-MACHINE-PROFILE "a100" disagree: the pool's workers run machine profile "cpu"/,
    );
    const agree = await encode(r.url, { "x-sie-pool": "cpu", "x-sie-machine-profile": "CPU" });
    assert.equal(agree.status, 200);
    await agree.body?.cancel();
    // Their gateway also reads "pool/gpu" in the profile header itself.
    const slashed = await encode(r.url, { "x-sie-machine-profile": "cpu/cpu" });
    assert.equal(slashed.status, 200);
    assert.equal((await slashed.json()).worker, "w-cpu");
    const slashedClash = await encode(r.url, { "x-sie-machine-profile": "cpu/l4" });
    assert.equal(slashedClash.status, 400);
    await slashedClash.body?.cancel();
    // "default" is the SIE gateway's pool of every worker: it asks for no pool.
    const shared = await encode(r.url, { "x-sie-pool": "default", "x-sie-machine-profile": "cpu" });
    assert.equal(shared.status, 200);
    await shared.body?.cancel();
    const badPool = await encode(r.url, { "x-sie-pool": "no pool!" });
    assert.equal(badPool.status, 400);
    assert.match((await badPool.json()).detail.message, /X-SIE-Pool is not a valid pool name/);
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test('gateway: a named pool (SVC_POOL) answers the SIE clients\' "pool/gpu"', async () => {
  const r = await startTestRouter({});
  const shared = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w-shared",
    profile: "cpu",
    models: [{ name: MODEL, state: "loaded" }],
  });
  const dedicated = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w-eval",
    profile: "cpu",
    pool: "eval-bench",
    models: [{ name: MODEL, state: "loaded" }],
  });
  try {
    await waitFor(
      async () => (await getJson(`${r.url}/health`)).body.workers.length === 2,
      "both workers registered",
    );
    // gpu: "eval-bench/cpu" → X-SIE-Pool: eval-bench, X-SIE-MACHINE-PROFILE: cpu.
    for (let i = 0; i < 4; i++) {
      const res = await encode(r.url, {
        "x-sie-pool": "eval-bench",
        "x-sie-machine-profile": "cpu",
      });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).worker, "w-eval", "only the pool's worker serves it");
    }
    const plain = await encode(r.url, { "x-sie-machine-profile": "cpu" });
    assert.equal((await plain.json()).worker, "w-shared");
    const wrong = await encode(r.url, {
      "x-sie-pool": "eval-bench",
      "x-sie-machine-profile": "l4",
    });
    assert.equal(wrong.status, 400);
    await wrong.body?.cancel();
    const pool = await getJson(`${r.url}/v1/pools/eval-bench`);
    assertShape(pool.body, POOL_INFO, "a named pool");
    assert.deepEqual([pool.body.gpu, pool.body.gpus, pool.body.state], [
      "cpu",
      { cpu: 1 },
      "active",
    ]);
    const created = await getJson(`${r.url}/v1/pools`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "eval-bench", gpus: { cpu: 1 } }),
    });
    assert.equal(created.status, 200, "createPool of a pool its workers form");
  } finally {
    await shared.close();
    await dedicated.close();
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
