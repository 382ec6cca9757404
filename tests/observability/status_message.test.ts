/** The status message builder and the compact metrics view, from plain inputs. */
import assert from "node:assert/strict";
import client from "prom-client";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { StatusMessageSchema } from "@svc/shared/schemas/status";
import type { UnitStatus } from "#worker/registry/registry.ts";
import { buildStatusMessage, type StatusInputs } from "#worker/status/message.ts";
import { parseNvidiaSmiCsv } from "@svc/worker/gpu";
import { metricsView } from "@svc/shared/status/metrics_view";
import { assertShape, WORKER_STATUS_MESSAGE } from "../compat/client/sie_shapes.ts";

const config = {
  id: "org/model",
  family: "dense",
  hub: { repo: "org/model-onnx", revision: "main", gated: false },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 8 },
  max_sequence_length: 512,
} as unknown as ModelConfig;

function unit(over: Partial<UnitStatus>): UnitStatus {
  return {
    name: "org/model",
    state: "available",
    device: null,
    memoryBytes: 0,
    queueDepth: 0,
    pendingItems: 0,
    lastError: null,
    config,
    maxItemTokens: 512,
    ...over,
  };
}

function inputs(over: Partial<StatusInputs> = {}): StatusInputs {
  return {
    nowMs: 1_700_000_000_500,
    server: {
      version: "1.2.3",
      startedAtMs: 1_700_000_000_500 - 61_900,
      user: "svc",
      workingDir: "/srv",
      pid: 42,
    },
    identity: { name: "w-1", bundle: "default", machineProfile: undefined, pool: undefined },
    ready: true,
    gpus: [],
    memoryThresholdPct: 85,
    models: [],
    metrics: { counters: {}, histograms: {} },
    process: {
      rss_bytes: 1,
      heap_used_bytes: 1,
      uptime_seconds: 61.9,
      event_loop_lag_ms: 0.5,
      in_flight: 0,
      draining: false,
    },
    images: { threads: 4, started: 1, busy: 1, queue_depth: 3, abandoned: 0 },
    ...over,
  };
}

Deno.test("status message: CPU machine reports no GPUs and gpu=cpu", () => {
  const m = buildStatusMessage(inputs());
  StatusMessageSchema.parse(m);
  assertShape(m, WORKER_STATUS_MESSAGE, "the worker's status message");
  // Who sends it, as the SIE clients' worker message names it.
  assert.deepEqual(
    [m.name, m.gpu_count, m.bundle, m.machine_profile, m.pool_name, m.ready],
    ["w-1", 0, "default", "cpu", "cpu", true],
  );
  assert.deepEqual(m.images, { threads: 4, started: 1, busy: 1, queue_depth: 3, abandoned: 0 });
  assert.equal(m.gpu, "cpu");
  assert.deepEqual(m.gpus, []);
  assert.equal(m.timestamp, 1_700_000_000.5);
  assert.deepEqual(m.server, {
    version: "1.2.3",
    uptime_seconds: 61,
    user: "svc",
    working_dir: "/srv",
    pid: 42,
  });
});

Deno.test("status message: GPU readings from nvidia-smi with the normalised type and threshold", () => {
  const gpus = parseNvidiaSmiCsv(
    "0, NVIDIA H100 80GB HBM3, 37, 20480, 81559, 41\n1, NVIDIA H100 80GB HBM3, [N/A], 0, 81559, [N/A]\n",
  );
  const m = buildStatusMessage(inputs({ gpus, memoryThresholdPct: 70 }));
  StatusMessageSchema.parse(m);
  assertShape(m, WORKER_STATUS_MESSAGE, "the worker's status message");
  assert.equal(m.gpu, "h100");
  assert.deepEqual([m.gpu_count, m.machine_profile], [2, "h100"], "detected: the first GPU's type");
  assert.equal(m.gpus[1].device, "cuda:1");
  // A configured profile and pool are reported as set; a draining worker is not ready.
  const set = buildStatusMessage(inputs({
    gpus,
    identity: { name: "w-2", bundle: "gliner", machineProfile: "h100-spot", pool: "eval" },
    process: { ...inputs().process, draining: true },
  }));
  assert.deepEqual(
    [set.gpu, set.machine_profile, set.pool_name, set.bundle, set.ready],
    ["h100", "h100-spot", "eval", "gliner", false],
  );
  assert.deepEqual(m.gpus[0], {
    index: 0,
    device: "cuda:0",
    name: "NVIDIA H100 80GB HBM3",
    gpu_type: "h100",
    utilization_percent: 37,
    utilization_pct: 37,
    memory_used_bytes: 20480 * 1024 * 1024,
    memory_total_bytes: 81559 * 1024 * 1024,
    memory_threshold_pct: 70,
    temperature_c: 41,
  });
  // Unreadable values stay numbers, as the message types them.
  assert.equal(m.gpus[1].utilization_percent, 0);
  assert.equal(m.gpus[1].temperature_c, 0);
});

Deno.test("status message: models map to the four stream states", () => {
  const m = buildStatusMessage(inputs({
    models: [
      unit({
        name: "a",
        state: "loaded",
        device: "cuda",
        memoryBytes: 123.4,
        queueDepth: 7,
        pendingItems: 11,
      }),
      unit({ name: "b", state: "loading" }),
      unit({ name: "c", state: "failed", lastError: { code: "INTERNAL_ERROR", message: "boom" } }),
      unit({ name: "d", state: "unloading", device: "cpu" }),
    ],
  }));
  StatusMessageSchema.parse(m);
  assertShape(m, WORKER_STATUS_MESSAGE, "the worker's status message");
  assert.deepEqual(m.models.map((x) => [x.name, x.state]), [
    ["a", "loaded"],
    ["b", "loading"],
    ["c", "available"],
    ["d", "unloading"],
  ]);
  assert.deepEqual(m.loaded_models, ["a"]);
  // The failure stays `available` (four states) and carries its reason, for the worker's page.
  assert.deepEqual(m.models[2].last_error, { code: "INTERNAL_ERROR", message: "boom" });
  assert.equal(m.models[0].last_error, null);
  assert.equal(m.models[0].memory_bytes, 123);
  assert.equal(m.models[0].queue_depth, 7);
  assert.equal(m.models[0].queue_pending_items, 11, "waiting plus running items");
  // An SVC_MODELS entry not configured yet claims nothing it serves, in the same config shape.
  const pending = buildStatusMessage(inputs({
    pending: [{
      id: "me/model",
      bundle: "default",
      state: "loading",
      lastError: null,
      source: { kind: "hub", repo: "me/model-onnx", revision: "main" },
    }],
  }));
  assertShape(pending, WORKER_STATUS_MESSAGE, "a pending entry");
  assert.deepEqual(pending.models[0].config, {
    id: "me/model",
    bundle: "default",
    source: { kind: "hub", repo: "me/model-onnx", revision: "main" },
    configured: false,
    hf_id: "me/model-onnx",
    adapter: "",
    inputs: [],
    outputs: [],
    dims: {},
  });
  // The entry, with the length the worker runs beside its own.
  assert.deepEqual(m.models[0].config, {
    ...config,
    max_item_tokens: 512,
    hf_id: "org/model-onnx",
    adapter: "dense",
  });
});

Deno.test("metrics view: counters and cumulative histogram series, unobserved left out", async () => {
  const registry = new client.Registry();
  const c = new client.Counter({
    name: "reqs_total",
    help: "h",
    labelNames: ["model", "status"] as const,
    registers: [registry],
  });
  const h = new client.Histogram({
    name: "lat_seconds",
    help: "h",
    labelNames: ["model"] as const,
    buckets: [0.1, 1],
    registers: [registry],
  });
  new client.Gauge({ name: "g", help: "h", registers: [registry] }).set(5);
  c.inc({ model: "a", status: "200" }, 3);
  h.observe({ model: "a" }, 0.05);
  h.observe({ model: "a" }, 0.5);
  h.observe({ model: "a" }, 5);
  h.zero({ model: "b" });
  const v = await metricsView(registry);
  assert.deepEqual(v.counters, {
    reqs_total: [{ labels: { model: "a", status: "200" }, value: 3 }],
  });
  assert.deepEqual(v.histograms, {
    lat_seconds: {
      buckets: [0.1, 1],
      series: [{ labels: { model: "a" }, count: 3, sum: 5.55, counts: [1, 2] }],
    },
  });
});
