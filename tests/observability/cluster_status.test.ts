/** The router's fleet status message: /health's view plus request rates, pools aggregated. */
import assert from "node:assert/strict";
import type { WorkerRecord } from "#router/directory/types.ts";
import { ClusterStatusBuilder } from "#router/dashboard/cluster_status.ts";
import { createRouterMetrics } from "#router/metrics/router_metrics.ts";
import { assertShape, CLUSTER_STATUS_MESSAGE } from "../compat/client/sie_shapes.ts";

function record(id: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id,
    conn_id: `c-${id}`,
    router_id: "r1",
    url: `http://127.0.0.1:1/${id}`,
    machine_profile: "l4",
    pool: "l4",
    bundle: "default",
    version: "0.1.0",
    gpu_count: 1,
    gpu_types: ["l4"],
    models: [
      { name: "m/a", bundle: "default", state: "loaded", queue_depth: 3 },
      { name: "m/b", bundle: "default", state: "available", queue_depth: 0 },
    ],
    queue_depth: 3,
    in_flight: 1,
    memory_used_bytes: 1000,
    memory_total_bytes: 4000,
    draining: false,
    registered_at: 1_700_000_000_000,
    last_seen: 1_700_000_000_000,
    ...over,
  };
}

Deno.test("cluster status: workers, pools, models and per-worker request rates", async () => {
  const metrics = createRouterMetrics();
  const builder = new ClusterStatusBuilder();
  const workers = [record("w1"), record("w2", { draining: true, queue_depth: 2 })];
  const t0 = 1_700_000_001_000;
  const inputs = (nowMs: number, ws = workers) => ({
    workers: ws,
    demand: [],
    routerId: "r1",
    directory: "memory",
    pools: { defaultMachineProfile: undefined, machineProfiles: [] },
    metrics,
    nowMs,
  });
  metrics.upstream.inc({ worker_id: "w1", pool: "l4", bundle: "default", affinity: "loaded" }, 4);
  const first = await builder.build(inputs(t0));
  assert.equal(first.timestamp, t0 / 1000);
  assert.equal(first.worker_count, 2);
  assert.equal(first.status, "degraded", "one worker is draining");
  assert.equal(first.requests_per_s, 0, "no rate before a second sample");
  assert.equal(first.workers[0].requests_total, 4);

  metrics.upstream.inc({ worker_id: "w1", pool: "l4", bundle: "default", affinity: "loaded" }, 6);
  metrics.upstream.inc({ worker_id: "w1", pool: "l4", bundle: "default", affinity: "none" }, 4);
  metrics.upstream.inc({ worker_id: "w2", pool: "l4", bundle: "default", affinity: "loading" }, 2);
  const second = await builder.build(inputs(t0 + 2000));
  const [w1, w2] = second.workers;
  assert.equal(w1.id, "w1");
  assert.equal(w1.requests_per_s, 5);
  assert.equal(w2.requests_per_s, 1);
  assert.equal(second.requests_per_s, 6);
  assert.equal(second.cluster.total_qps, 6, "the SIE clients' name for the fleet rate");
  assertShape(second, CLUSTER_STATUS_MESSAGE, "/ws/cluster-status");
  assert.deepEqual(
    [second.cluster.worker_count, second.cluster.gpu_count, second.cluster.models_loaded],
    [1, 1, 1],
    "the SIE clients' numbers count serving workers",
  );
  assert.deepEqual(
    second.models.map((m) => [m.name, m.state, m.worker_count, m.gpu_types, m.total_queue_depth]),
    [["m/a", "loaded", 1, ["l4"], 6], ["m/b", "available", 0, [], 0]],
  );
  assert.deepEqual([w1.gpu, w1.healthy, w2.healthy], [w1.machine_profile, true, false]);
  assert.equal(w2.state, "draining");
  assert.deepEqual(w1.models, [{ name: "m/a", state: "loaded", queue_depth: 3 }]);
  assert.equal(w1.memory_total_bytes, 4000);
  assert.deepEqual(second.pools, [{
    pool: "l4",
    bundle: "default",
    workers: 2,
    serving: 1,
    queue_depth: 5,
    requests_per_s: 6,
  }]);

  // A worker that left disappears; its counts are not carried over.
  const third = await builder.build(inputs(t0 + 3000, [workers[0]]));
  assert.deepEqual(third.workers.map((w) => w.id), ["w1"]);
  assert.equal(third.worker_count, 1);
  assert.equal(third.status, "healthy");
});
