/**
 * Routing through the real router to in-process fake workers (routing_helpers.ts): API keys,
 * /v1/embeddings waiting for capacity, body bounds, /v1/models, probes and `id:profile` names.
 */
import assert from "node:assert/strict";
import { type FakeWorker, startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, TEST_TOKEN } from "../helpers/router.ts";
import { cluster, CPU, DENSE, post } from "../helpers/routing.ts";

Deno.test("routing: API keys guard /v1 and the fleet's status, not the probes", async () => {
  const c = await cluster({
    SVC_API_KEYS: "first-key-123,second-key-456",
    SVC_ADMIN_KEYS: "admin-key-0123456789",
  }, [{
    id: "w",
    profile: "cpu",
    models: [DENSE],
  }]);
  try {
    for (const auth of [undefined, "Bearer wrong-key-000", "Basic Zm9vOmJhcg=="]) {
      const headers: Record<string, string> = { ...CPU };
      if (auth) headers.authorization = auth;
      const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
        method: "POST",
        headers,
        body: "{}",
      });
      assert.equal(res.status, 401);
      assert.equal(res.body.detail.code, "UNAUTHORIZED");
      // How to authenticate, as the worker says it (the one bearer-key check and 401).
      assert.equal(res.headers.get("www-authenticate"), "Bearer");
    }
    const models = await getJson(`${c.r.url}/v1/models`);
    assert.equal(models.status, 401);
    assert.equal(models.headers.get("www-authenticate"), "Bearer");
    for (const key of ["first-key-123", "second-key-456"]) {
      const res = await post(`${c.r.url}/v1/encode/fixture/dense`, {
        ...CPU,
        authorization: `Bearer ${key}`,
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    for (const p of ["/healthz", "/readyz"]) {
      const res = await fetch(`${c.r.url}${p}`);
      assert.equal(res.status, 200, p);
      await res.body?.cancel();
    }
    // The dashboard page carries no data: open (its stream needs a key: stream_auth.test.ts).
    // /health needs a client key (its summary), /metrics names workers: an admin key (a client
    // key is refused with 403).
    const status = async (p: string, key?: string) => {
      const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
      const res = await fetch(`${c.r.url}${p}`, { headers });
      await res.body?.cancel();
      return res.status;
    };
    assert.equal(await status("/"), 200);
    assert.equal(await status("/health"), 401);
    assert.equal(await status("/health", "second-key-456"), 200);
    assert.equal(await status("/metrics"), 401);
    assert.equal(await status("/metrics", "second-key-456"), 403);
    assert.equal(await status("/metrics", "admin-key-0123456789"), 200);
    const logs = JSON.stringify(c.r.logs);
    assert.ok(!logs.includes("first-key-123") && !logs.includes("wrong-key-000"));
    assert.ok(!logs.includes("admin-key-0123456789"));
  } finally {
    await c.close();
  }
});

Deno.test("routing: /v1/embeddings never answers 202: it waits for capacity, then 503", async () => {
  const c = await cluster({ SVC_EMBEDDINGS_WAIT_MS: "300", SVC_MACHINE_PROFILES: "cpu" }, []);
  try {
    const body = JSON.stringify({ model: "BAAI/bge-small-en-v1.5", input: ["hi"] });
    const start = performance.now();
    const res = await getJson(`${c.r.url}/v1/embeddings`, {
      method: "POST",
      headers: { ...CPU, "content-type": "application/json" },
      body,
    });
    const waited = performance.now() - start;
    assert.equal(res.status, 503);
    assert.equal(res.body.detail.code, "NO_CAPACITY");
    assert.equal(res.headers.get("retry-after"), "10");
    // It waited the bound (never less), then gave up (the upper bound only catches a hang).
    assert.ok(waited >= 280 && waited < 15_000, `waited ${waited} ms`);
    assert.equal(
      await c.r.metrics.provisioning.value({ machine_profile: "cpu", bundle: "default" }),
      1,
      "demand recorded once",
    );
    const bad = await getJson(`${c.r.url}/v1/embeddings`, {
      method: "POST",
      headers: CPU,
      body: "{",
    });
    assert.equal(bad.status, 400);
    const unknown = await getJson(`${c.r.url}/v1/embeddings`, {
      method: "POST",
      headers: CPU,
      body: JSON.stringify({ model: "x/../y", input: "a" }),
    });
    assert.equal(unknown.status, 404, "a name that cannot be a model id");
  } finally {
    await c.close();
  }
});

Deno.test("routing: a worker that joins while /v1/embeddings waits serves the request", async () => {
  // A wait far longer than registration takes, so the request must be served, not refused.
  const c = await cluster({ SVC_EMBEDDINGS_WAIT_MS: "30000", SVC_MACHINE_PROFILES: "cpu" }, []);
  let w: FakeWorker | undefined;
  try {
    const body = JSON.stringify({ model: "BAAI/bge-small-en-v1.5", input: ["hi"] });
    const pending = fetch(`${c.r.url}/v1/embeddings`, {
      method: "POST",
      headers: { ...CPU, "content-type": "application/json" },
      body,
    });
    // The request is waiting once its demand is recorded; only then does the worker join.
    await waitFor(
      async () =>
        (await c.r.metrics.provisioning.value({ machine_profile: "cpu", bundle: "default" })) >= 1,
      "request waiting",
    );
    w = startFakeWorker({
      routerUrl: c.r.url,
      token: TEST_TOKEN,
      id: "late",
      profile: "cpu",
      models: [{ name: "BAAI/bge-small-en-v1.5" }],
    });
    const late = await pending;
    assert.equal(late.status, 200);
    assert.equal(late.headers.get("x-svc-worker-id"), "late");
    await late.body?.cancel();
  } finally {
    await w?.close();
    await c.close();
  }
});

Deno.test("routing: bodies larger than SVC_MAX_BODY_BYTES are refused", async () => {
  const c = await cluster({ SVC_MAX_BODY_BYTES: "2048" }, [{
    id: "w",
    profile: "cpu",
    models: [DENSE],
  }]);
  try {
    const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: CPU,
      body: "x".repeat(5000),
    });
    assert.equal(res.status, 400);
    assert.match(res.body.detail.message, /exceeds the limit of 2048 bytes/);
    assert.equal(c.ws[0].requests.length, 0);
  } finally {
    await c.close();
  }
});

Deno.test("routing: /v1/models merges live workers with the catalog; /v1/models/{m} never 404s a known model", async () => {
  const c = await cluster({ SVC_MACHINE_PROFILES: "l4" }, [
    { id: "cpu-1", profile: "cpu", models: [{ name: "fixture/dense", state: "loaded" }] },
    { id: "cpu-x", profile: "cpu", bundle: "extract", models: [{ name: "fixture/gliner" }] },
  ]);
  try {
    await waitFor(
      async () => (await getJson(`${c.r.url}/health`)).body.loaded_models.length === 1,
      "status",
    );
    const list = (await getJson(`${c.r.url}/v1/models`)).body.models as {
      name: string;
      loaded: boolean;
    }[];
    const names = list.map((m) => m.name);
    assert.ok(names.includes("fixture/dense") && names.includes("fixture/gliner"));
    assert.equal(list.find((m) => m.name === "fixture/dense")?.loaded, true);
    // Bundles answered by a worker are not padded with catalog entries.
    assert.ok(!names.includes("BAAI/bge-small-en-v1.5"));
    const one = await getJson(`${c.r.url}/v1/models/fixture%2Fdense`);
    assert.equal(one.status, 200);
    assert.equal(one.body.name, "fixture/dense");
    assert.equal(one.body.loaded, true);
    const cat = await getJson(`${c.r.url}/v1/models/BAAI/bge-small-en-v1.5`);
    assert.equal(cat.status, 200);
    assert.equal(cat.body.loaded, false);
    const nf = await getJson(`${c.r.url}/v1/models/nope%2Fnope`);
    assert.equal(nf.status, 404);
    assert.equal(nf.body.detail.code, "MODEL_NOT_FOUND");
    // Scoped by the header: an empty pool lists the catalog only.
    const l4 =
      (await getJson(`${c.r.url}/v1/models`, { headers: { "x-svc-machine-profile": "l4" } })).body
        .models as { name: string }[];
    assert.ok(l4.some((m) => m.name === "BAAI/bge-small-en-v1.5"));
    assert.ok(!l4.some((m) => m.name === "fixture/dense"));
  } finally {
    await c.close();
  }
});

Deno.test("routing: probes, unknown routes and metrics series", async () => {
  const c = await cluster({}, [{ id: "w", profile: "cpu", models: [DENSE] }]);
  try {
    assert.deepEqual((await getJson(`${c.r.url}/healthz`)).body, { status: "ok" });
    const nf = await getJson(`${c.r.url}/nope`);
    assert.equal(nf.status, 404);
    assert.ok(nf.body.detail.code);
    assert.equal(nf.headers.get("x-svc-server-version"), "0.1.0");
    const res = await post(`${c.r.url}/v1/encode/fixture/dense`, CPU);
    await res.body?.cancel();
    const text = await (await fetch(`${c.r.url}/metrics`)).text();
    for (
      const re of [
        /svc_router_requests_total\{endpoint="encode",status="200",machine_profile="cpu"\} 1/,
        /svc_router_request_duration_seconds_bucket\{le="\+Inf",endpoint="encode"\} 1/,
        /svc_router_workers\{pool="cpu",machine_profile="cpu",bundle="default",state="serving"\} 1/,
        /svc_router_upstream_requests_total\{worker_id="w",pool="cpu",bundle="default",affinity="none"\} 1/,
        /# TYPE svc_router_pending_demand gauge/,
      ]
    ) assert.match(text, re);
  } finally {
    await c.close();
  }
});

Deno.test("routing: `id:profile` names route as their model (affinity included)", async () => {
  const nomic = "nomic-ai/nomic-embed-text-v1.5";
  const c = await cluster({}, [
    { id: "cold", profile: "cpu", models: [{ name: nomic }, DENSE] },
    { id: "warm", profile: "cpu", models: [{ name: nomic, state: "loaded" }, DENSE] },
  ]);
  try {
    await waitFor(
      async () => (await getJson(`${c.r.url}/health`)).body.loaded_models.length === 1,
      "status",
    );
    const res = await post(
      `${c.r.url}/v1/encode/${encodeURIComponent(nomic + ":matryoshka-256")}`,
      CPU,
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-svc-worker-id"), "warm");
    await res.body?.cancel();
    // A learned (non-catalog) model with a profile suffix goes to its workers, who judge it.
    const fx = await post(`${c.r.url}/v1/encode/fixture/dense:some-profile`, CPU);
    assert.equal(fx.status, 200);
    await fx.body?.cancel();
    // A built-in model with a profile it does not have is unknown.
    const bad = await getJson(`${c.r.url}/v1/encode/BAAI%2Fbge-small-en-v1.5:nope`, {
      method: "POST",
      headers: CPU,
      body: "{}",
    });
    assert.equal(bad.status, 404);
  } finally {
    await c.close();
  }
});
