import assert from "node:assert/strict";
import { silentLogger } from "@svc/shared/log";
import { createRouterMetrics } from "#router/metrics/router_metrics.ts";
import { DemandTracker } from "#router/provisioning.ts";
import type { WorkerRecord } from "#router/directory/types.ts";

Deno.test("demand: counts per pool, ends when served or after the window", async () => {
  let now = 1_000_000;
  const metrics = createRouterMetrics();
  const d = new DemandTracker({
    windowS: 60,
    webhook: undefined,
    routerId: "r",
    log: silentLogger,
    metrics,
    now: () => now,
  });
  d.record("l4", "default", "m");
  d.record("l4", "default", "m");
  d.record("h100", "extract", "x");
  assert.deepEqual(
    d.pending().map((e) => [e.machine_profile, e.bundle, e.pending]),
    [["l4", "default", 2], ["h100", "extract", 1]],
  );
  assert.equal(await metrics.provisioning.value({ machine_profile: "l4", bundle: "default" }), 2);
  d.satisfied("l4", "default");
  assert.deepEqual(d.pending().map((e) => e.machine_profile), ["h100"]);
  now += 61_000;
  assert.deepEqual(d.pending(), []);
  d.record("h100", "extract", "x");
  assert.equal(d.pending()[0].pending, 1, "a new demand starts from zero after the window");
});

Deno.test("demand: webhook is posted, debounced per pool, with the bearer token", async () => {
  const received: { auth: string | null; body: Record<string, unknown> }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    received.push({ auth: req.headers.get("authorization"), body: await req.json() });
    return new Response("ok");
  });
  let now = 0;
  const metrics = createRouterMetrics();
  const d = new DemandTracker({
    windowS: 600,
    webhook: {
      url: `http://127.0.0.1:${server.addr.port}/hook`,
      token: "hook-token",
      intervalS: 30,
    },
    routerId: "r1",
    log: silentLogger,
    metrics,
    now: () => now,
  });
  try {
    d.record("l4", "default", "m");
    d.record("l4", "default", "m");
    d.record("t4", "default", "m");
    await d.flush();
    assert.equal(received.length, 2, "one post per pool inside the interval");
    now += 31_000;
    d.record("l4", "default", "m");
    await d.flush();
    assert.equal(received.length, 3);
    const first = received.find((r) => r.body.machine_profile === "l4")!;
    assert.equal(first.auth, "Bearer hook-token");
    assert.equal(first.body.event, "demand");
    assert.equal(first.body.bundle, "default");
    assert.equal(first.body.router_id, "r1");
    assert.equal(received[2].body.pending, 3);
    assert.equal(await metrics.webhook.value({ result: "ok" }), 3);
  } finally {
    await server.shutdown();
  }
});

Deno.test("demand: a failing webhook is counted, never thrown", async () => {
  const logs: string[] = [];
  const metrics = createRouterMetrics();
  const d = new DemandTracker({
    windowS: 600,
    webhook: { url: "http://127.0.0.1:1/hook?secret=s3cr3t", token: undefined, intervalS: 1 },
    routerId: "r",
    log: (_l, msg, f) => logs.push(msg + JSON.stringify(f ?? {})),
    metrics,
  });
  d.record("l4", "default", "m");
  await d.flush();
  assert.equal(await metrics.webhook.value({ result: "error" }), 1);
  assert.ok(logs.every((l) => !l.includes("s3cr3t")), "webhook URL is not logged");
});

Deno.test("demand: made-up profiles cannot make the router post without bound", async () => {
  const posts: string[] = [];
  const fakeFetch: typeof fetch = (_url, init) => {
    posts.push(String(init?.body));
    return Promise.resolve(new Response("ok"));
  };
  let now = 0;
  const d = new DemandTracker({
    windowS: 600,
    webhook: { url: "http://127.0.0.1:9/hook", token: undefined, intervalS: 30 },
    routerId: "r",
    log: silentLogger,
    metrics: createRouterMetrics(),
    fetch: fakeFetch,
    now: () => now,
  });
  for (let i = 0; i < 200; i++) d.record(`made-up-${i}`, "default", "m");
  await d.flush();
  assert.ok(posts.length > 0 && posts.length <= 16, `${posts.length} posts in one interval`);
  now += 31_000;
  d.record("l4", "default", "m");
  await d.flush();
  assert.ok(posts.at(-1)!.includes('"l4"'), "a later interval posts again");
});

Deno.test("demand: a pool that gained a serving worker leaves every reader's view at once", () => {
  const d = new DemandTracker({
    windowS: 600,
    webhook: undefined,
    routerId: "r",
    log: silentLogger,
    metrics: createRouterMetrics(),
  });
  d.record("l4", "default", "m");
  d.record("t4", "default", "m");
  const worker = {
    id: "w",
    url: "http://127.0.0.1:1",
    machine_profile: "l4",
    pool: "l4",
    bundle: "default",
    draining: false,
    models: [],
  } as unknown as WorkerRecord;
  assert.deepEqual(d.pending([worker]).map((e) => e.machine_profile), ["t4"]);
  assert.deepEqual(d.pending().map((e) => e.machine_profile), ["t4"], "and it stays gone");
});

Deno.test("demand: made-up names count once per pool and bundle, refreshed at most once a second", async () => {
  let now = 5_000_000;
  const metrics = createRouterMetrics();
  const d = new DemandTracker({
    windowS: 60,
    webhook: undefined,
    routerId: "r",
    log: silentLogger,
    metrics,
    now: () => now,
  });
  for (let i = 0; i < 20_000; i++) d.record("cpu", "default", `made/up-${i}`, true);
  assert.deepEqual(d.pending().map((e) => [e.machine_profile, e.bundle, e.pending]), [
    ["cpu", "default", 1],
  ]);
  assert.equal(
    await metrics.provisioning.value({ machine_profile: "cpu", bundle: "default" }),
    1,
    "one count, not 20,000",
  );
  // Known models still count each request; invented ones keep the pool's one count alive.
  d.record("cpu", "default", "BAAI/bge-small-en-v1.5");
  now += 59_000;
  d.record("cpu", "default", "made/up-x", true);
  now += 59_000;
  assert.equal(d.pending()[0].pending, 2, "alive while invented names keep coming");
  now += 2_000;
  assert.deepEqual(d.pending(), []);
  // Through the router: 2000 invented names, one pending request for the pool.
  const { startTestRouter, getJson } = await import("../helpers/router.ts");
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "cpu" });
  try {
    for (let i = 0; i < 2000; i++) {
      const res = await fetch(`${r.url}/v1/encode/made%2Fup-${i}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
        body: "{}",
      });
      assert.equal(res.status, 202);
      await res.body?.cancel();
    }
    const h = await getJson(`${r.url}/health`);
    assert.deepEqual(
      h.body.pending_demand.map((e: { bundle: string; pending: number }) => [e.bundle, e.pending]),
      [["default", 1]],
    );
  } finally {
    await r.close();
  }
});
