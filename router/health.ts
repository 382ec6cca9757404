/** The router's `/health` document: the fleet at a glance, per worker and per model. */
import { VERSION } from "@svc/shared/version";
import type { WorkerRecord } from "./directory/types.ts";
import type { PoolSettings } from "./settings.ts";
import type { ModelState } from "@svc/shared/fleet/protocol";
import type {
  ClusterSummary,
  DemandEntry,
  HealthBody,
  ModelHealth,
  PoolHealth,
  WorkerHealth,
} from "@svc/shared/schemas/router";

/**
 * Build the /health body. `healthy` means at least one worker serves and none is draining;
 * otherwise `degraded` (no capacity, or a pool in the middle of a shutdown).
 */
export function buildHealth(opts: {
  workers: readonly WorkerRecord[];
  demand: DemandEntry[];
  routerId: string;
  directory: string;
  /** Which machine profiles the router accepts (its pool settings). */
  pools: Pick<PoolSettings, "defaultMachineProfile" | "machineProfiles">;
  now: number;
  /** Requests per second forwarded over the last seconds (`cluster.total_qps`); 0 unknown. */
  totalQps?: number;
}): HealthBody {
  const workers = [...opts.workers].sort((a, b) => a.id.localeCompare(b.id));
  const models = new Map<string, ModelHealth>();
  const pools = new Map<string, PoolHealth>();
  const loaded = new Set<string>();
  const gpuTypes = new Set<string>();
  const liveTypes = new Set<string>();
  let gpuCount = 0;
  let serving = 0;
  for (const w of workers) {
    gpuCount += w.gpu_count;
    gpuTypes.add(w.machine_profile);
    if (!w.draining) {
      serving++;
      liveTypes.add(w.machine_profile);
    }
    const pk = `${w.pool}\u0000${w.bundle}`;
    const p = pools.get(pk) ?? { pool: w.pool, bundle: w.bundle, workers: 0, serving: 0 };
    p.workers++;
    if (!w.draining) p.serving++;
    pools.set(pk, p);
    for (const m of w.models) {
      const mh = models.get(m.name) ?? {
        name: m.name,
        bundle: m.bundle,
        workers: 0,
        loaded_on: 0,
        loading_on: 0,
        queue_depth: 0,
        state: "available",
        worker_count: 0,
        gpu_types: [],
        total_queue_depth: 0,
      };
      mh.workers++;
      if (m.state === "loaded") {
        mh.loaded_on++;
        loaded.add(m.name);
        if (!w.draining) {
          mh.worker_count++;
          if (!mh.gpu_types.includes(w.machine_profile)) mh.gpu_types.push(w.machine_profile);
        }
      }
      if (m.state === "loading") mh.loading_on++;
      mh.state = moreAdvanced(mh.state, m.state);
      mh.queue_depth += m.queue_depth;
      mh.total_queue_depth += m.queue_depth;
      models.set(m.name, mh);
    }
  }
  for (const mh of models.values()) mh.gpu_types.sort();
  const fallback = opts.pools.defaultMachineProfile;
  const configured = opts.pools.machineProfiles.length > 0
    ? new Set(opts.pools.machineProfiles)
    : new Set(fallback === undefined ? gpuTypes : [...gpuTypes, fallback]);
  return {
    status: serving > 0 && serving === workers.length ? "healthy" : "degraded",
    type: "gateway",
    version: VERSION,
    router_id: opts.routerId,
    directory: opts.directory,
    worker_count: workers.length,
    healthy_workers: serving,
    gpu_count: gpuCount,
    loaded_models: [...loaded].sort(),
    gpu_types: [...gpuTypes].sort(),
    cluster: clusterSummary(workers, opts.totalQps ?? 0),
    live_gpu_types: [...liveTypes].sort(),
    configured_gpu_types: [...configured].sort(),
    pools: [...pools.values()].sort((a, b) =>
      a.pool.localeCompare(b.pool) || a.bundle.localeCompare(b.bundle)
    ),
    workers: workers.map((w) => workerHealth(w, opts.now)),
    models: [...models.values()].sort((a, b) => a.name.localeCompare(b.name)),
    pending_demand: opts.demand,
  };
}

/**
 * The fleet in the SIE clients' capacity numbers, over the serving (not draining) workers, as
 * the SIE gateway counts its healthy ones: `getCapacity()` reads `worker_count` as healthy workers.
 */
export function clusterSummary(workers: readonly WorkerRecord[], totalQps: number): ClusterSummary {
  const serving = workers.filter((w) => !w.draining);
  const loaded = new Set<string>();
  for (const w of serving) {
    for (const m of w.models) if (m.state === "loaded") loaded.add(m.name);
  }
  return {
    worker_count: serving.length,
    gpu_count: serving.reduce((n, w) => n + w.gpu_count, 0),
    models_loaded: loaded.size,
    total_qps: totalQps,
  };
}

/** Rank of a state across workers: the most advanced worker's state wins. */
const STATE_RANK: Record<ModelHealth["state"], number> = {
  loaded: 3,
  loading: 2,
  unloading: 1,
  available: 0,
};

/**
 * `current` or `next`, whichever is more advanced, in the status streams' four states (a
 * remembered load failure reads as `available`).
 */
export function moreAdvanced(
  current: ModelHealth["state"],
  next: ModelState,
): ModelHealth["state"] {
  const s = next === "failed" ? "available" : next;
  return STATE_RANK[s] > STATE_RANK[current] ? s : current;
}

/** One worker as /health lists it. */
export function workerHealth(w: WorkerRecord, now: number): WorkerHealth {
  return {
    id: w.id,
    name: w.id,
    url: w.url,
    transport: w.transport ?? "http",
    machine_profile: w.machine_profile,
    pool: w.pool,
    bundle: w.bundle,
    version: w.version,
    state: w.draining ? "draining" : "serving",
    gpu: w.machine_profile,
    healthy: !w.draining,
    gpu_count: w.gpu_count,
    gpu_types: w.gpu_types,
    queue_depth: w.queue_depth,
    in_flight: w.in_flight,
    memory_used_bytes: w.memory_used_bytes,
    memory_total_bytes: w.memory_total_bytes,
    loaded_models: w.models.filter((m) => m.state === "loaded").map((m) => m.name),
    models: w.models.filter((m) => m.state !== "available").map((m) => ({
      name: m.name,
      state: m.state,
      queue_depth: m.queue_depth,
    })),
    registered_at: new Date(w.registered_at).toISOString(),
    last_seen_ms_ago: Math.max(0, now - w.last_seen),
  };
}
