/**
 * The router's `/ws/status` message: the fleet in the worker's status schema
 * (`StatusMessageSchema`), so a client or dashboard written for a worker's stream reads the
 * router's too. Built from plain inputs so it is easy to test:
 *
 * - `name`: the router's id; `gpu` and `machine_profile`: the machine profiles with a serving
 *   worker, `bundle` their bundles, `gpu_count` their GPUs (comma-separated, `none` when none);
 * - `server`: the router process's own facts;
 * - `models`: the union of every worker's models, one entry per name, in the state of the most
 *   advanced worker (loaded, then loading, then unloading, else available; a remembered load
 *   failure shows as `available`, as on a worker), queue depths summed (workers report waiting
 *   items only, so `queue_pending_items` is that same sum); each entry adds `workers`
 *   (extension) with every worker's own state, failures included, and the SIE clients'
 *   `ModelSummary` fields (`worker_count`, `gpu_types`, `total_queue_depth`, as in /health), so
 *   the message is also the SIE gateway's cluster message (`timestamp`, `cluster`, `workers`,
 *   `models`);
 * - `counters` / `histograms`: the `svc_*` series of the router's /metrics: the requests it
 *   forwarded (the fleet's request counts summed over its workers), and the tokens and batch
 *   sizes its workers report;
 * - `device`: where the workers that report one run the model (`cpu`, `cuda`; several joined by
 *   `,`; null while none does), `memory_bytes` the memory it holds summed over the workers;
 * - `gpus` is empty: GPU readings stay on each worker's own stream;
 * - `cluster` (extension): /health's `cluster` (serving workers, their GPUs and loaded models),
 *   with `total_qps` the requests per second this router forwarded over the last seconds;
 * - `workers` (extension): each worker as /health lists it (`gpu`, `healthy`...), plus `qps`.
 */
import type { ModelStatus, StatusMessage } from "@svc/shared/schemas/status";
import type { ClusterSummary, ModelHealth, WorkerHealth } from "@svc/shared/schemas/router";
import type { ModelState } from "@svc/shared/fleet/protocol";
import type { MetricsView } from "@svc/shared/status/metrics_view";
import { type ServerFacts, serverInfo } from "@svc/shared/status/server_facts";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { statusModelConfig, unconfiguredModelConfig } from "@svc/shared/status/model_config";
import type { WorkerRecord } from "../directory/types.ts";
import { clusterSummary, moreAdvanced } from "../health.ts";

/** One worker's view of a model (extension of a model entry). */
export interface WorkerModelState {
  id: string;
  pool: string;
  state: ModelState;
  queue_depth: number;
}

/** A model entry of the fleet message: the worker schema's, every worker's state, the summary. */
export interface FleetModelEntry
  extends ModelStatus, Pick<ModelHealth, "worker_count" | "gpu_types" | "total_queue_depth"> {
  workers: WorkerModelState[];
}

/** One worker in the fleet message: its /health entry plus its request rate. */
export interface FleetWorkerStatus extends WorkerHealth {
  /** Requests per second this router forwarded to it, over the last seconds. */
  qps: number;
}

/** The router's status message: the worker schema plus `cluster` and `workers`. */
export interface FleetStatusMessage extends StatusMessage {
  models: FleetModelEntry[];
  cluster: ClusterSummary;
  workers: FleetWorkerStatus[];
}

/** Everything one message is built from. */
export interface FleetStatusInputs {
  nowMs: number;
  /** The router's id (`name`). */
  routerId: string;
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

/** Build one fleet status message. */
export function buildFleetStatus(i: FleetStatusInputs): FleetStatusMessage {
  const workers = [...i.workers].sort((a, b) => a.id.localeCompare(b.id));
  const models = new Map<string, FleetModelEntry>();
  const liveTypes = new Set<string>();
  const liveBundles = new Set<string>();
  for (const w of workers) {
    if (!w.draining) {
      liveTypes.add(w.machine_profile);
      liveBundles.add(w.bundle);
    }
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
            ? statusModelConfig(config)
            : unconfiguredModelConfig(m.name, { bundle: m.bundle }),
          worker_count: 0,
          gpu_types: [],
          total_queue_depth: 0,
          workers: [],
        };
        models.set(m.name, entry);
      }
      entry.state = moreAdvanced(entry.state, m.state);
      if (m.device) entry.device = joinDevice(entry.device, m.device);
      entry.memory_bytes += m.memory_bytes ?? 0;
      entry.queue_depth += m.queue_depth;
      entry.queue_pending_items += m.queue_depth;
      entry.total_queue_depth += m.queue_depth;
      if (m.state === "loaded" && !w.draining) {
        entry.worker_count++;
        if (!entry.gpu_types.includes(w.machine_profile)) entry.gpu_types.push(w.machine_profile);
      }
      entry.workers.push({ id: w.id, pool: w.pool, state: m.state, queue_depth: m.queue_depth });
    }
  }
  for (const m of models.values()) m.gpu_types.sort();
  const list = [...models.values()].sort((a, b) => a.name.localeCompare(b.name));
  const loaded = list.filter((m) => m.state === "loaded").map((m) => m.name);
  const fleet: FleetWorkerStatus[] = [];
  for (const w of workers) {
    const h = i.health.get(w.id);
    if (h) fleet.push({ ...h, qps: round(i.rates.get(w.id) ?? 0) });
  }
  const serving = workers.filter((w) => !w.draining);
  // The worker reports its GPU type; the fleet has as many as its serving machine profiles.
  const machineProfiles = joinedOrNone(liveTypes);
  return {
    timestamp: i.nowMs / 1000,
    name: i.routerId,
    gpu: machineProfiles,
    gpu_count: serving.reduce((n, w) => n + w.gpu_count, 0),
    bundle: joinedOrNone(liveBundles),
    machine_profile: machineProfiles,
    loaded_models: loaded,
    server: serverInfo(i.server, i.nowMs),
    gpus: [],
    models: list,
    counters: i.metrics.counters,
    histograms: i.metrics.histograms,
    cluster: clusterSummary(workers, round(fleet.reduce((n, w) => n + w.qps, 0))),
    workers: fleet,
  };
}

/** Names sorted and comma-separated; `none` for none. */
function joinedOrNone(names: ReadonlySet<string>): string {
  return names.size > 0 ? [...names].sort().join(",") : "none";
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
