/**
 * Request routing through the real router to in-process fake workers: pools by header, bundles
 * by model, provisioning 202s, retries, timeouts, affinity, API keys, embeddings, catalog.
 */
import assert from "node:assert/strict";
import { type FakeWorker, startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN, type TestRouter } from "../helpers/router.ts";

type Spec = {
  id: string;
  profile: string;
  bundle?: string;
  models: { name: string; bundle?: string; state?: "loaded" | "available" }[];
  hold?: Promise<unknown>;
};

/** A hold for fake workers' answers, and its release. */
function held(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((r) => release = r);
  return { promise, release };
}

/** Encode requests a fake worker has received. */
function encodes(w: FakeWorker): number {
  return w.requests.filter((q) => q.path.startsWith("/v1/encode/")).length;
}

/** Router plus workers; everything is closed by the returned `close`. */
async function cluster(
  env: Record<string, string>,
  specs: Spec[],
): Promise<{ r: TestRouter; ws: FakeWorker[]; close: () => Promise<void> }> {
  // Which worker answered is what these tests check: the debug header says it.
  const r = await startTestRouter({ SVC_EXPOSE_WORKER_ID: "1", ...env });
  const ws = specs.map((s) => startFakeWorker({ routerUrl: r.url, token: TEST_TOKEN, ...s }));
  try {
    await waitFor(() => ws.every((w) => w.link.connected), "workers to register");
  } catch (err) {
    for (const w of ws) await w.close();
    await r.close();
    throw err;
  }
  return {
    r,
    ws,
    close: async () => {
      for (const w of ws) await w.close();
      await r.close();
    },
  };
}

function post(url: string, headers: Record<string, string> = {}, body = "{}"): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

const CPU = { "x-svc-machine-profile": "cpu", "content-type": "application/json" };
const DENSE = { name: "fixture/dense" };

Deno.test("routing: the header picks the pool; the alias header works; answers pass through", async () => {
  const c = await cluster({}, [
    { id: "cpu-1", profile: "cpu", models: [DENSE] },
    { id: "l4-1", profile: "l4", models: [DENSE] },
  ]);
  try {
    for (
      const [headers, want] of [[CPU, "cpu-1"], [{ "X-SVC-MACHINE-PROFILE": "L4" }, "l4-1"], [{
        "x-sie-machine-profile": "l4",
      }, "l4-1"]] as const
    ) {
      const res = await post(`${c.r.url}/v1/encode/fixture/dense`, headers);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-svc-worker-id"), want);
      assert.equal(res.headers.get("x-svc-server-version"), "0.1.0");
      assert.equal(res.headers.get("x-total-time"), "1.00", "timing headers pass through");
      assert.equal(res.headers.get("x-trace-id"), "t-1");
      assert.equal(res.headers.get("x-truncated-items"), "2", "and the truncation count");
      assert.equal((await res.json()).worker, want);
    }
  } finally {
    await c.close();
  }
});

Deno.test("routing: path, body and headers are forwarded; credentials are not", async () => {
  const c = await cluster({ SVC_API_KEYS: "client-key-123456" }, [{
    id: "w",
    profile: "cpu",
    models: [DENSE],
  }]);
  try {
    const body = JSON.stringify({ items: [{ text: "hello" }] });
    for (const path of ["/v1/encode/fixture%2Fdense?x=1", "/v1/score/fixture/dense"]) {
      const res = await post(`${c.r.url}${path}`, {
        ...CPU,
        authorization: "Bearer client-key-123456",
        accept: "application/json",
        "x-trace-id": "abc",
      }, body);
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const seen = c.ws[0].requests.at(-1)!;
      assert.equal(seen.path, path, "raw or %2F path forwarded unchanged");
      assert.equal(seen.body, body);
      assert.equal(seen.headers.get("accept"), "application/json");
      assert.equal(seen.headers.get("x-trace-id"), "abc");
      assert.equal(seen.headers.get("authorization"), null, "API key stays at the router");
    }
  } finally {
    await c.close();
  }
});

Deno.test("routing: no header → the only pool; with several and no default, 400 naming the setting", async () => {
  // One pool (SVC_MACHINE_PROFILES unset): the clients of other APIs send no header.
  const one = await cluster({}, [{ id: "w", profile: "cpu", models: [DENSE] }]);
  try {
    const res = await post(`${one.r.url}/v1/encode/fixture/dense`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const bad = await getJson(`${one.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "no good" },
      body: "{}",
    });
    assert.equal(bad.status, 400);
    // An unknown model is a 404 (with suggestions), whatever the profile says.
    const unknown = await getJson(`${one.r.url}/v1/encode/fixture/densse`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "nowhere" },
      body: "{}",
    });
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.detail.message, /fixture\/dense/);
  } finally {
    await one.close();
  }
  const two = await cluster({}, [
    { id: "a", profile: "cpu", models: [DENSE] },
    { id: "b", profile: "l4", models: [DENSE] },
  ]);
  try {
    const res = await getJson(`${two.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.detail.code, "INVALID_INPUT");
    assert.match(res.body.detail.message, /X-SVC-MACHINE-PROFILE header is required/);
    assert.match(res.body.detail.message, /several pools \(cpu, l4\)/);
    assert.match(res.body.detail.message, /SVC_DEFAULT_MACHINE_PROFILE/);
  } finally {
    await two.close();
  }
  const d = await cluster({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" }, [
    { id: "a", profile: "cpu", models: [DENSE] },
    { id: "b", profile: "l4", models: [DENSE] },
  ]);
  try {
    const res = await post(`${d.r.url}/v1/encode/fixture/dense`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    await d.close();
  }
});

Deno.test("routing: unknown model → 404; catalog model without a pool → 202 with Retry-After and demand", async () => {
  const c = await cluster({ SVC_MACHINE_PROFILES: "h100,l4" }, [{
    id: "w",
    profile: "cpu",
    models: [DENSE],
  }]);
  try {
    const nf = await getJson(`${c.r.url}/v1/encode/nobody%2Fknows`, {
      method: "POST",
      headers: CPU,
      body: "{}",
    });
    assert.equal(nf.status, 404);
    assert.equal(nf.body.detail.code, "MODEL_NOT_FOUND");
    assert.equal(nf.headers.get("x-svc-server-version"), "0.1.0");
    // Built-in catalog model, no worker anywhere: the router still knows its bundle.
    const p = await getJson(`${c.r.url}/v1/encode/BAAI%2Fbge-small-en-v1.5`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "h100" },
      body: "{}",
    });
    assert.equal(p.status, 202);
    assert.equal(p.headers.get("retry-after"), "10");
    assert.equal(p.body.status, "provisioning");
    assert.equal(p.body.machine_profile, "h100");
    assert.equal(p.body.bundle, "default");
    assert.equal(p.body.retry_after_s, 10);
    assert.equal(typeof p.body.message, "string");
    // Fixture model learned from a cpu worker, asked of an empty pool.
    const q = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "l4" },
      body: "{}",
    });
    assert.equal(q.status, 202);
    const metrics = await (await fetch(`${c.r.url}/metrics`)).text();
    assert.match(metrics, /svc_router_pending_demand\{machine_profile="h100",bundle="default"\} 1/);
    assert.match(metrics, /svc_router_pending_demand\{machine_profile="l4",bundle="default"\} 1/);
    const h = (await getJson(`${c.r.url}/health`)).body;
    assert.equal(h.pending_demand.length, 2);
  } finally {
    await c.close();
  }
});

Deno.test("routing: demand is met when the pool gets a worker", async () => {
  const c = await cluster({ SVC_MACHINE_PROFILES: "t4" }, []);
  let w: FakeWorker | undefined;
  try {
    const p = await post(`${c.r.url}/v1/encode/BAAI%2Fbge-small-en-v1.5`, {
      "x-svc-machine-profile": "t4",
    });
    assert.equal(p.status, 202);
    await p.body?.cancel();
    w = startFakeWorker({
      routerUrl: c.r.url,
      token: TEST_TOKEN,
      id: "t4-1",
      profile: "t4",
      models: [{ name: "BAAI/bge-small-en-v1.5" }],
    });
    await waitFor(() => w!.link.connected, "registration");
    const metrics = await (await fetch(`${c.r.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /svc_router_pending_demand\{/);
    const ok = await post(`${c.r.url}/v1/encode/BAAI%2Fbge-small-en-v1.5`, {
      "x-svc-machine-profile": "t4",
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  } finally {
    await w?.close();
    await c.close();
  }
});

Deno.test("routing: a model of another bundle goes to that bundle's pool of the same profile", async () => {
  const c = await cluster({ SVC_MACHINE_PROFILES: "cpu,l4" }, [
    {
      id: "cpu-default",
      profile: "cpu",
      bundle: "default",
      models: [DENSE, { name: "fixture/gliner", bundle: "extract" }],
    },
    { id: "cpu-extract", profile: "cpu", bundle: "extract", models: [{ name: "fixture/gliner" }] },
    { id: "l4-default", profile: "l4", bundle: "default", models: [DENSE] },
  ]);
  try {
    for (let i = 0; i < 5; i++) {
      const res = await post(`${c.r.url}/v1/extract/fixture%2Fgliner`, CPU);
      assert.equal(res.headers.get("x-svc-worker-id"), "cpu-extract");
      await res.body?.cancel();
    }
    // l4 has no extract pool: 202 for the extract bundle, never the default-bundle l4 worker.
    const p = await getJson(`${c.r.url}/v1/extract/fixture/gliner`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "l4" },
      body: "{}",
    });
    assert.equal(p.status, 202);
    assert.equal(p.body.bundle, "extract");
  } finally {
    await c.close();
  }
});

Deno.test("routing: a worker in shutdown (503 SHUTTING_DOWN) costs one retry on another", async () => {
  const c = await cluster({}, [
    { id: "a", profile: "cpu", models: [DENSE] },
    { id: "b", profile: "cpu", models: [DENSE] },
  ]);
  try {
    c.ws[0].shuttingDown = true;
    for (let i = 0; i < 6; i++) {
      const res = await post(`${c.r.url}/v1/encode/fixture/dense`, CPU);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-svc-worker-id"), "b");
      await res.body?.cancel();
    }
    // Both shutting down: the worker's own 503 (with Retry-After) reaches the client.
    c.ws[1].shuttingDown = true;
    const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: CPU,
      body: "{}",
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "5");
    assert.equal(res.body.detail.code, "SHUTTING_DOWN");
  } finally {
    await c.close();
  }
});

Deno.test("routing: MODEL_LOAD_FAILED and MODEL_LOADING pass through as the worker sent them, never retried elsewhere", async () => {
  const c = await cluster({}, [
    { id: "a", profile: "cpu", models: [DENSE] },
    { id: "b", profile: "cpu", models: [DENSE] },
  ]);
  try {
    const failed = {
      code: "MODEL_LOAD_FAILED",
      message: "model 'fixture/dense' failed to load: hub unreachable",
      error_class: "hub_unreachable",
      attempts: 1,
      permanent: false,
    };
    for (const w of c.ws) w.failWith = { status: 502, detail: failed };
    for (let i = 0; i < 4; i++) {
      const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
        method: "POST",
        headers: CPU,
        body: "{}",
      });
      assert.equal(res.status, 502);
      assert.deepEqual(res.body.detail, failed);
      assert.equal(res.headers.get("retry-after"), null, "no Retry-After reaches the client");
    }
    const attempts = () => c.ws.reduce((n, w) => n + w.requests.length, 0);
    assert.equal(attempts(), 4, "one worker per request: the failure is answered at once");

    const loading = { code: "MODEL_LOADING", message: "model 'fixture/dense' is still loading" };
    for (const w of c.ws) w.failWith = { status: 503, detail: loading, retryAfter: "5" };
    const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: CPU,
      body: "{}",
    });
    assert.equal(res.status, 503);
    assert.deepEqual(res.body.detail, loading);
    assert.equal(res.headers.get("retry-after"), "5");
    assert.equal(attempts(), 5);
  } finally {
    await c.close();
  }
});

Deno.test("routing: an unreachable worker costs one retry; none left → 502", async () => {
  const c = await cluster({}, [
    { id: "a", profile: "cpu", models: [DENSE] },
    { id: "b", profile: "cpu", models: [DENSE] },
  ]);
  try {
    await c.ws[0].stopHttp(); // socket still registered, HTTP gone (killed process, race)
    for (let i = 0; i < 6; i++) {
      const res = await post(`${c.r.url}/v1/encode/fixture/dense`, CPU);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-svc-worker-id"), "b");
      await res.body?.cancel();
    }
    await c.ws[1].stopHttp();
    const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: CPU,
      body: "{}",
    });
    assert.equal(res.status, 502);
    assert.equal(res.body.detail.code, "BAD_GATEWAY");
    assert.ok(
      (await c.r.metrics.upstreamErrors.value({ worker_id: "a", kind: "unreachable" })) >= 1,
    );
  } finally {
    await c.close();
  }
});

Deno.test("routing: a worker slower than SVC_UPSTREAM_TIMEOUT_MS → 504", async () => {
  // The worker answers only once the test is over: the 504 (not its 200) shows the bound acted.
  const busy = held();
  const c = await cluster({ SVC_UPSTREAM_TIMEOUT_MS: "100" }, [{
    id: "slow",
    profile: "cpu",
    models: [DENSE],
    hold: busy.promise,
  }]);
  try {
    const res = await getJson(`${c.r.url}/v1/encode/fixture/dense`, {
      method: "POST",
      headers: CPU,
      body: "{}",
    });
    assert.equal(res.status, 504);
    assert.equal(res.body.detail.code, "GATEWAY_TIMEOUT");
  } finally {
    busy.release();
    await c.close();
  }
});

Deno.test("routing: affinity — the worker with the model loaded gets the traffic (counters)", async () => {
  const c = await cluster({}, [
    { id: "cold", profile: "cpu", models: [DENSE] },
    { id: "warm", profile: "cpu", models: [{ name: "fixture/dense", state: "loaded" }] },
  ]);
  try {
    await waitFor(
      async () => (await getJson(`${c.r.url}/health`)).body.loaded_models.length === 1,
      "status",
    );
    for (let i = 0; i < 20; i++) {
      const res = await post(`${c.r.url}/v1/encode/fixture/dense`, CPU);
      await res.body?.cancel();
    }
    const m = c.r.metrics.upstream;
    assert.equal(
      await m.value({ worker_id: "warm", pool: "cpu", bundle: "default", affinity: "loaded" }),
      20,
    );
    assert.equal(
      await m.value({ worker_id: "cold", pool: "cpu", bundle: "default", affinity: "none" }),
      0,
    );
    assert.equal(c.ws[0].requests.length, 0);
  } finally {
    await c.close();
  }
});

Deno.test("routing: without affinity, load is spread by in-flight requests", async () => {
  // The workers answer once all ten are routed: every one is routed with the others in flight.
  const busy = held();
  const c = await cluster({}, [
    { id: "a", profile: "cpu", models: [DENSE], hold: busy.promise },
    { id: "b", profile: "cpu", models: [DENSE], hold: busy.promise },
  ]);
  try {
    // Ten different requests: identical ones in flight together would be coalesced into one.
    const answers = Promise.all(
      Array.from(
        { length: 10 },
        (_, i) => post(`${c.r.url}/v1/encode/fixture/dense`, CPU, JSON.stringify({ i })),
      ),
    );
    await waitFor(() => encodes(c.ws[0]) + encodes(c.ws[1]) === 10, "ten requests at the workers");
    busy.release();
    const all = await answers;
    const ids = all.map((r) => r.headers.get("x-svc-worker-id"));
    await Promise.all(all.map((r) => r.body?.cancel()));
    const a = ids.filter((x) => x === "a").length;
    assert.equal(a, 5, `in-flight balancing: ${ids.join(",")}`);
  } finally {
    busy.release();
    await c.close();
  }
});

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
