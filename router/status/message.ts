/**
 * The router's `/ws/status` message: the fleet in the worker's status schema
 * (`StatusMessageSchema`), so a client or dashboard written for a worker's stream reads the
 * router's too. Built from plain inputs so it is easy to test:
 *
 * - `server`: the router process's own facts;
 * - `models`: the union of every worker's models, one entry per name, in the state of the most
 *   advanced worker (loaded, then loading, then unloading, else available; a remembered load
 *   failure shows as `available`, as on a worker), queue depths summed (workers report waiting
 *   items only, so `queue_pending_items` is that same sum); each entry adds `workers`
 *   (extension) with every worker's own state, failures included;
 * - `counters` / `histograms`: the `svc_*` series of the router's /metrics: the requests it
 *   forwarded (the fleet's request counts summed over its workers), and the tokens and batch
 *   sizes its workers report;
 * - `device`: where the workers that report one run the model (`cpu`, `cuda`; several joined by
 *   `,`; null while none does), `memory_bytes` the memory it holds summed over the workers;
 * - `gpus` is empty: GPU readings stay on each worker's own stream;
 * - `cluster` (extension): the numbers of /health's `cluster`, plus `total_qps`, the requests
 *   per second this router forwarded over the last seconds;
 * - `workers` (extension): each worker as /health lists it (`gpu`, `healthy`...), plus `qps`.
 */
import type { ModelStatus, StatusMessage, StatusModelState } from "@svc/shared/schemas/status";
import type { ClusterSummary, WorkerHealth } from "@svc/shared/schemas/router";
import type { ModelState } from "@svc/shared/fleet/protocol";
import type { MetricsView } from "@svc/shared/status/metrics_view";
import { type ServerFacts, serverInfo } from "@svc/shared/status/server_facts";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { WorkerRecord } from "../directory/types.ts";

/** One worker's view of a model (extension of a model entry). */
export interface WorkerModelState {
  id: string;
  pool: string;
  state: ModelState;
  queue_depth: number;
}

/** A model entry of the fleet message: the worker schema's plus every worker's state. */
export interface FleetModelStatus extends ModelStatus {
  workers: WorkerModelState[];
}

/** One worker in the fleet message: its /health entry plus its request rate. */
export interface FleetWorkerStatus extends WorkerHealth {
  /** Requests per second this router forwarded to it, over the last seconds. */
  qps: number;
}

/** The router's status message: the worker schema plus `cluster` and `workers`. */
export interface FleetStatusMessage extends StatusMessage {
  models: FleetModelStatus[];
  cluster: ClusterSummary & { total_qps: number };
  workers: FleetWorkerStatus[];
}

/** Everything one message is built from. */
export interface FleetStatusInputs {
  nowMs: number;
  server: ServerFacts;
  workers: readonly WorkerRecord[];
  /** Catalog entries the router knows (its built-in catalog), for `config`. */
  catalog: ReadonlyMap<string, ModelConfig>;
  metrics: MetricsView;
  /** Each worker's /health entry, by id. */
  health: ReadonlyMap<string, WorkerHealth>;
  /** Requests per second forwarded to each worker, by id. */
  rates: ReadonlyMap<string, number>;
}

/** Rank of a state in the union: the most advanced worker's state wins. */
const RANK: Record<StatusModelState, number> = {
  loaded: 3,
  loading: 2,
  unloading: 1,
  available: 0,
};

/** The stream's four states: a remembered failure reads as `available`, as on a worker. */
function streamState(s: ModelState): StatusModelState {
  return s === "failed" ? "available" : s;
}

/** Build one fleet status message. */
export function buildFleetStatus(i: FleetStatusInputs): FleetStatusMessage {
  const workers = [...i.workers].sort((a, b) => a.id.localeCompare(b.id));
  const models = new Map<string, FleetModelStatus>();
  const liveTypes = new Set<string>();
  let gpuCount = 0;
  for (const w of workers) {
    gpuCount += w.gpu_count;
    if (!w.draining) liveTypes.add(w.machine_profile);
    for (const m of w.models) {
      let entry = models.get(m.name);
      if (!entry) {
        const config = i.catalog.get(m.name);
        entry = {
          name: m.name,
          state: "available",
          device: null,
          memory_bytes: 0,
          queue_depth: 0,
          queue_pending_items: 0,
          config: config
            ? config as unknown as Record<string, unknown>
            : { id: m.name, bundle: m.bundle },
          workers: [],
        };
        models.set(m.name, entry);
      }
      const state = streamState(m.state);
      if (RANK[state] > RANK[entry.state]) entry.state = state;
      if (m.device) entry.device = joinDevice(entry.device, m.device);
      entry.memory_bytes += m.memory_bytes ?? 0;
      entry.queue_depth += m.queue_depth;
      entry.queue_pending_items += m.queue_depth;
      entry.workers.push({ id: w.id, pool: w.pool, state: m.state, queue_depth: m.queue_depth });
    }
  }
  const list = [...models.values()].sort((a, b) => a.name.localeCompare(b.name));
  const loaded = list.filter((m) => m.state === "loaded").map((m) => m.name);
  const fleet: FleetWorkerStatus[] = [];
  for (const w of workers) {
    const h = i.health.get(w.id);
    if (h) fleet.push({ ...h, qps: round(i.rates.get(w.id) ?? 0) });
  }
  return {
    timestamp: i.nowMs / 1000,
    // The worker reports its GPU type; the fleet has as many as its serving machine profiles.
    gpu: liveTypes.size > 0 ? [...liveTypes].sort().join(",") : "none",
    loaded_models: loaded,
    server: serverInfo(i.server, i.nowMs),
    gpus: [],
    models: list,
    counters: i.metrics.counters,
    histograms: i.metrics.histograms,
    cluster: {
      worker_count: workers.length,
      gpu_count: gpuCount,
      models_loaded: loaded.length,
      total_qps: round(fleet.reduce((n, w) => n + w.qps, 0)),
    },
    workers: fleet,
  };
}

/** `device` with one more device name (sorted, each once). */
function joinDevice(current: string | null, device: string): string {
  if (current === null) return device;
  const all = new Set(current.split(","));
  all.add(device);
  return [...all].sort().join(",");
}

/** Two decimals: rates carry noise digits nobody reads. */
function round(x: number): number {
  return Math.round(x * 100) / 100;
}
