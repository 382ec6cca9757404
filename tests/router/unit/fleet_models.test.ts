/**
 * The workers' model series on the router's /metrics (router/metrics/fleet_models.ts): gauges
 * summed over the workers' latest status; tokens and batch sizes grown by what each worker's
 * cumulative values grew, so they never go down when a worker leaves or restarts.
 */
import assert from "node:assert/strict";
import { VERSION } from "@svc/shared/version";
import type { WorkerModel, WorkerRecord } from "#router/directory/types.ts";
import { createRouterMetrics } from "#router/metrics/router_metrics.ts";
import { parseProm, sum } from "../../observability/helpers/prom_text.ts";
import { metricsView } from "@svc/shared/status/metrics_view";

function worker(id: string, models: WorkerModel[], gpuCount = 0): WorkerRecord {
  return {
    id,
    conn_id: `c-${id}`,
    router_id: "r1",
    url: "http://127.0.0.1:1",
    machine_profile: "cpu",
    pool: "cpu",
    bundle: "default",
    version: VERSION,
    gpu_count: gpuCount,
    gpu_types: [],
    models,
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
    registered_at: 0,
    last_seen: 0,
  };
}

/** A loaded model that ran `batches` batches of `size` items and `tokens` tokens. */
function model(name: string, tokens: number, batches: number, size: number): WorkerModel {
  // Bounds 1, 2, 4, 8...: a batch of `size` items counts in every bound >= size.
  const bounds = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
  return {
    name,
    bundle: "default",
    state: "loaded",
    queue_depth: 1,
    device: "cpu",
    memory_bytes: 1000,
    tokens_total: tokens,
    batch_sizes: {
      counts: bounds.map((b) => (size <= b ? batches : 0)),
      sum: batches * size,
      count: batches,
    },
  };
}

Deno.test("fleet model series: the seven worker series, summed; counters only grow", async () => {
  const metrics = createRouterMetrics();
  const scrape = async (workers: WorkerRecord[]) => {
    metrics.models.collect(workers);
    return parseProm(await metrics.registry.render());
  };
  const m = { model: "m/x" };
  let s = await scrape([
    worker("a", [model("m/x", 100, 2, 3)]),
    worker("b", [model("m/x", 50, 1, 8), { ...model("m/y", 0, 0, 1), state: "available" }], 1),
  ]);
  assert.equal(sum(s, "svc_tokens_processed_total", m), 150);
  assert.equal(sum(s, "svc_batch_size_count", m), 3);
  assert.equal(sum(s, "svc_batch_size_sum", m), 14);
  assert.equal(sum(s, "svc_batch_size_bucket", { ...m, le: "4" }), 2);
  assert.equal(sum(s, "svc_batch_size_bucket", { ...m, le: "8" }), 3);
  assert.equal(sum(s, "svc_batch_size_bucket", { ...m, le: "+Inf" }), 3);
  assert.equal(sum(s, "svc_queue_depth", m), 2);
  assert.equal(sum(s, "svc_model_loaded", { ...m, device: "cpu" }), 2, "two workers have it");
  assert.equal(sum(s, "svc_model_memory_bytes", { ...m, device: "cpu" }), 2000);
  assert.equal(sum(s, "svc_model_loaded", { model: "m/y", device: "cpu" }), 0);

  // a ran more; b restarted (its counts went down): what it reports now is all new.
  s = await scrape([worker("a", [model("m/x", 130, 3, 3)]), worker("b", [model("m/x", 20, 1, 2)])]);
  assert.equal(sum(s, "svc_tokens_processed_total", m), 150 + 30 + 20);
  assert.equal(sum(s, "svc_batch_size_count", m), 3 + 1 + 1);
  assert.equal(sum(s, "svc_batch_size_sum", m), 14 + 3 + 2);

  // a leaves: nothing goes down, the gauges follow; a comes back with more: only the growth.
  s = await scrape([worker("b", [model("m/x", 20, 1, 2)])]);
  assert.equal(sum(s, "svc_tokens_processed_total", m), 200);
  assert.equal(sum(s, "svc_model_loaded", { ...m, device: "cpu" }), 1);
  s = await scrape([worker("a", [model("m/x", 140, 4, 3)]), worker("b", [model("m/x", 20, 1, 2)])]);
  assert.equal(sum(s, "svc_tokens_processed_total", m), 210);
  assert.equal(sum(s, "svc_batch_size_count", m), 6);
  // The status stream's view reads the same histogram.
  const view = await metricsView(metrics.registry.registry);
  const batches = view.histograms.svc_batch_size.series.find((x) => x.labels.model === "m/x");
  assert.deepEqual([batches?.count, batches?.sum], [6, 14 + 3 + 2 + 3]);
  assert.equal(
    view.counters.svc_tokens_processed_total.find((x) => x.labels.model === "m/x")?.value,
    210,
  );

  // Workers that send none of the new fields (an earlier release) still count in the gauges.
  const old: WorkerModel = { name: "m/z", bundle: "default", state: "loaded", queue_depth: 4 };
  s = await scrape([worker("c", [old], 2)]);
  assert.equal(sum(s, "svc_queue_depth", { model: "m/z" }), 4);
  assert.equal(sum(s, "svc_model_loaded", { model: "m/z", device: "cuda" }), 1);
  assert.equal(sum(s, "svc_tokens_processed_total", { model: "m/z" }), 0);
});
