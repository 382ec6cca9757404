/**
 * The router serves the workers' surface (docs/api.md "Router endpoints"): `/health` with what the
 * SIE clients read for capacity (`type`, `cluster`, `live_gpu_types`, `configured_gpu_types`),
 * the workers' `svc_*` request series next to `svc_router_*` on /metrics, and `/ws/status` in the
 * worker's status schema, fleet-wide.
 */
import assert from "node:assert/strict";
import { StatusMessageSchema } from "@svc/shared/schemas/status";
import { VERSION } from "@svc/shared/version";
import type { WorkerRecord } from "#router/directory/types.ts";
import { buildHealth, workerHealth } from "#router/health.ts";
import { buildFleetStatus, type FleetStatusMessage } from "#router/status/message.ts";
import { parseProm, sum } from "../../observability/helpers/prom_text.ts";
import { recordFrames, wsUrl } from "../../observability/helpers/ws.ts";
import { type FakeWorker, startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";
import {
  assertShape,
  CAPACITY_HEALTH,
  CLUSTER_STATUS_MESSAGE,
  WORKER_STATUS_MESSAGE,
} from "../../compat/client/sie_shapes.ts";

function record(id: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id,
    conn_id: `c-${id}`,
    router_id: "r1",
    url: `http://127.0.0.1:1/${id}`,
    machine_profile: "l4",
    pool: "l4",
    bundle: "default",
    version: VERSION,
    gpu_count: 1,
    gpu_types: ["l4"],
    models: [],
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
    registered_at: 1_700_000_000_000,
    last_seen: 1_700_000_000_000,
    ...over,
  };
}

const FLEET = [
  record("a", {
    models: [
      {
        name: "m/x",
        bundle: "default",
        state: "loaded",
        queue_depth: 2,
        device: "cuda",
        memory_bytes: 1000,
      },
      { name: "m/y", bundle: "default", state: "failed", queue_depth: 0 },
    ],
  }),
  record("b", {
    machine_profile: "a100-80gb",
    pool: "a100-80gb",
    gpu_count: 4,
    models: [
      {
        name: "m/x",
        bundle: "default",
        state: "loading",
        queue_depth: 3,
        device: "cpu",
        memory_bytes: 500,
      },
      { name: "m/y", bundle: "default", state: "loading", queue_depth: 0 },
      { name: "m/z", bundle: "other", state: "available", queue_depth: 0 },
    ],
  }),
  record("c", { machine_profile: "cpu", pool: "cpu", gpu_count: 0, draining: true }),
];

Deno.test("health: type gateway, cluster numbers, live and configured GPU types", () => {
  const base = { demand: [], routerId: "r1", directory: "memory", now: 1_700_000_001_000 };
  const h = buildHealth({
    ...base,
    workers: FLEET,
    pools: { defaultMachineProfile: "t4", machineProfiles: [] },
  });
  assert.equal(h.type, "gateway");
  assertShape(h, CAPACITY_HEALTH, "/health");
  // Counted over the serving workers, as the SIE gateway counts its healthy ones.
  assert.deepEqual(h.cluster, { worker_count: 2, gpu_count: 5, models_loaded: 1, total_qps: 0 });
  assert.deepEqual([h.worker_count, h.healthy_workers], [3, 2]);
  assert.deepEqual(h.workers.map((w) => [w.name, w.id]), [["a", "a"], ["b", "b"], ["c", "c"]]);
  // Models carry the SIE clients' summary beside ours.
  assert.deepEqual(
    h.models.map((m) => [m.name, m.state, m.worker_count, m.gpu_types, m.total_queue_depth]),
    [
      ["m/x", "loaded", 1, ["l4"], 5],
      ["m/y", "loading", 0, [], 0],
      ["m/z", "available", 0, [], 0],
    ],
  );
  assert.deepEqual(h.gpu_types, ["a100-80gb", "cpu", "l4"], "every registered worker");
  assert.deepEqual(h.live_gpu_types, ["a100-80gb", "l4"], "the draining cpu worker serves none");
  assert.deepEqual(h.configured_gpu_types, ["a100-80gb", "cpu", "l4", "t4"], "no allow-list");
  const allowed = buildHealth({
    ...base,
    workers: FLEET,
    pools: { defaultMachineProfile: undefined, machineProfiles: ["l4", "h100"] },
  });
  assert.deepEqual(allowed.configured_gpu_types, ["h100", "l4"], "SVC_MACHINE_PROFILES");
  const empty = buildHealth({
    ...base,
    workers: [],
    pools: { defaultMachineProfile: undefined, machineProfiles: [] },
  });
  assert.deepEqual(
    [empty.cluster, empty.live_gpu_types, empty.configured_gpu_types],
    [{ worker_count: 0, gpu_count: 0, models_loaded: 0, total_qps: 0 }, [], []],
  );
});

Deno.test("fleet status: the worker schema, the union of models with every worker's state", () => {
  const now = 1_700_000_005_500;
  const m = buildFleetStatus({
    nowMs: now,
    routerId: "router-1",
    server: { version: VERSION, startedAtMs: now - 4_000, user: "svc", workingDir: "/srv", pid: 7 },
    workers: FLEET,
    catalog: new Map(),
    metrics: { counters: { svc_requests_total: [] }, histograms: {} },
    health: new Map(FLEET.map((w) => [w.id, workerHealth(w, now)])),
    rates: new Map([["a", 2.5], ["b", 1.25]]),
  });
  StatusMessageSchema.parse(m);
  // Read as a worker's message, and as the SIE gateway's cluster message.
  assertShape(m, WORKER_STATUS_MESSAGE, "the router's /ws/status");
  assertShape(m, CLUSTER_STATUS_MESSAGE, "the router's /ws/status");
  assert.equal(m.timestamp, now / 1000);
  assert.deepEqual(
    [m.name, m.gpu_count, m.bundle, m.machine_profile],
    ["router-1", 5, "default", "a100-80gb,l4"],
    "the serving workers' GPUs, bundles and profiles",
  );
  assert.deepEqual(m.server, {
    version: VERSION,
    uptime_seconds: 4,
    user: "svc",
    working_dir: "/srv",
    pid: 7,
  });
  assert.equal(m.gpu, "a100-80gb,l4");
  assert.deepEqual(m.gpus, []);
  assert.deepEqual(m.loaded_models, ["m/x"]);
  assert.deepEqual(m.cluster, {
    worker_count: 2,
    gpu_count: 5,
    models_loaded: 1,
    total_qps: 3.75,
  });
  assert.deepEqual(
    m.workers.map((w) => [w.id, w.gpu, w.healthy, w.qps]),
    [["a", "l4", true, 2.5], ["b", "a100-80gb", true, 1.25], ["c", "cpu", false, 0]],
  );
  const byName = new Map(m.models.map((x) => [x.name, x]));
  assert.deepEqual([...byName.keys()], ["m/x", "m/y", "m/z"]);
  const x = byName.get("m/x")!;
  assert.equal(x.state, "loaded", "the most advanced worker's state");
  assert.equal(x.queue_depth, 5, "summed over workers");
  assert.equal(x.device, "cpu,cuda", "the devices it runs on");
  assert.equal(x.memory_bytes, 1500, "memory summed over workers");
  assert.deepEqual(
    [x.worker_count, x.gpu_types, x.total_queue_depth],
    [1, ["l4"], 5],
    "serving workers with it loaded, their GPU types, the queue summed",
  );
  assert.equal(byName.get("m/y")!.device, null, "no worker reports where it runs");
  assert.deepEqual(x.workers, [
    { id: "a", pool: "l4", state: "loaded", queue_depth: 2 },
    { id: "b", pool: "a100-80gb", state: "loading", queue_depth: 3 },
  ]);
  const y = byName.get("m/y")!;
  assert.equal(y.state, "loading");
  assert.deepEqual(
    y.workers.map((w) => w.state),
    ["failed", "loading"],
    "failures kept per worker",
  );
  assert.deepEqual(byName.get("m/z")!.config, {
    id: "m/z",
    bundle: "other",
    hf_id: "m/z",
    adapter: "",
    inputs: [],
    outputs: [],
    dims: {},
  });
});

/** Router + one fake worker serving fixture/dense. */
async function withFleet(
  env: Record<string, string>,
  fn: (url: string, w: FakeWorker) => Promise<void>,
): Promise<void> {
  const r = await startTestRouter(env);
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  try {
    await waitFor(() => w.link.connected, "worker to register");
    await fn(r.url, w);
  } finally {
    await w.close();
    await r.close();
  }
}

Deno.test("router: svc_* request series beside svc_router_*, /health and /ws/status through HTTP", async () => {
  await withFleet({}, async (url) => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/v1/encode/fixture%2Fdense`, {
        method: "POST",
        headers: { "x-svc-machine-profile": "cpu", "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    const unknown = await fetch(`${url}/v1/encode/no%2Fsuch`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": "cpu" },
      body: "{}",
    });
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();

    const samples = parseProm(await (await fetch(`${url}/metrics`)).text());
    const dense = { model: "fixture/dense", endpoint: "encode" };
    assert.equal(sum(samples, "svc_requests_total", { ...dense, status: "200" }), 3);
    assert.equal(
      sum(samples, "svc_requests_total", { model: "unknown", endpoint: "encode", status: "404" }),
      1,
      "a model the fleet does not know is labelled unknown",
    );
    for (const phase of ["total", "inference"]) {
      assert.equal(
        sum(samples, "svc_request_duration_seconds_count", { ...dense, phase }),
        3,
        phase,
      );
    }
    // The fake worker sends X-Inference-Time: 0.50 (ms).
    const inference = sum(samples, "svc_request_duration_seconds_sum", {
      ...dense,
      phase: "inference",
    });
    assert.ok(Math.abs(inference - 3 * 0.0005) < 1e-9, String(inference));
    assert.equal(sum(samples, "svc_router_requests_total", { endpoint: "encode" }), 4);

    const health = await getJson(`${url}/health`);
    assert.equal(health.body.type, "gateway");
    assertShape(health.body, CAPACITY_HEALTH, "/health");
    assert.deepEqual(
      [health.body.cluster.worker_count, health.body.cluster.models_loaded],
      [1, 1],
    );
    assert.deepEqual(health.body.live_gpu_types, ["cpu"]);
    assert.deepEqual(health.body.configured_gpu_types, ["cpu"]);

    const client = recordFrames(wsUrl(url, "/ws/status"));
    try {
      await client.opened;
      await waitFor(() => client.frames.length > 0, "a status frame");
      const m = JSON.parse(client.frames[0].data) as FleetStatusMessage;
      StatusMessageSchema.parse(m);
      assertShape(m, WORKER_STATUS_MESSAGE, "the router's /ws/status");
      assertShape(m, CLUSTER_STATUS_MESSAGE, "the router's /ws/status");
      assert.equal(m.server.version, VERSION);
      assert.equal(m.server.pid, Deno.pid);
      assert.deepEqual(m.loaded_models, ["fixture/dense"]);
      const series =
        (m.counters as Record<string, { labels: Record<string, string>; value: number }[]>)
          .svc_requests_total;
      assert.deepEqual(
        series.find((s) => s.labels.model === "fixture/dense")?.value,
        3,
        "the router's request counts, in the worker's counter view",
      );
      assert.ok(!("svc_router_requests_total" in m.counters), "the router's own series stay out");
      assert.ok("svc_request_duration_seconds" in m.histograms);
    } finally {
      await client.close();
    }
    const plain = await fetch(`${url}/ws/status`);
    assert.equal(plain.status, 400, "a WebSocket endpoint, like the worker's");
    await plain.body?.cancel();
  });
});
