/**
 * Bodies of the router's own answers (docs/api.md "Router endpoints"): `/health`, `/readyz` and
 * the 202 of a pool being provisioned. Types only: clients and tests read them, the router builds
 * them.
 */

/** Pending demand of one pool (in `/health` and the fleet page). */
export interface DemandEntry {
  machine_profile: string;
  bundle: string;
  /** Unserved requests since the demand started. */
  pending: number;
  /** Epoch ms of the first and the latest unserved request. */
  first_at: number;
  last_at: number;
}

/** One worker as /health shows it. */
export interface WorkerHealth {
  id: string;
  /** The same as `id`, under the name the SIE clients read. */
  name: string;
  /** Advertised base URL; empty when the worker has none. */
  url: string;
  /** How requests reach it: over the connection it dialled, or HTTP to `url`. */
  transport: "connection" | "http";
  machine_profile: string;
  pool: string;
  bundle: string;
  version: string;
  state: "serving" | "draining";
  /**
   * The GPU type of the worker's pool (its machine profile; `cpu` on a machine without GPUs):
   * what the SIE clients' `getCapacity(gpu)` matches.
   */
  gpu: string;
  /** True while the worker takes new work (registered and not draining). */
  healthy: boolean;
  gpu_count: number;
  gpu_types: string[];
  queue_depth: number;
  in_flight: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  loaded_models: string[];
  /** Models in a state other than `available` (loading, loaded, unloading, failed). */
  models: { name: string; state: string; queue_depth: number }[];
  registered_at: string;
  last_seen_ms_ago: number;
}

/** One model across the fleet: ours, then the SIE clients' `ModelSummary` fields. */
export interface ModelHealth {
  name: string;
  bundle: string;
  /** Workers announcing it, in any state. */
  workers: number;
  loaded_on: number;
  loading_on: number;
  queue_depth: number;
  /**
   * The most advanced state on any worker: `loaded`, then `loading`, `unloading`, else
   * `available` (a remembered load failure reads as `available`, as in the status streams).
   */
  state: "loaded" | "loading" | "unloading" | "available";
  /** Serving (not draining) workers that have it loaded. */
  worker_count: number;
  /** Machine profiles of those workers. */
  gpu_types: string[];
  /** Items waiting for it, summed over the workers (the same number as `queue_depth`). */
  total_queue_depth: number;
}

/** One (pool, bundle) pair. */
export interface PoolHealth {
  pool: string;
  bundle: string;
  workers: number;
  serving: number;
}

/**
 * `cluster` of /health: the fleet in the numbers the SIE clients read for capacity, counted over
 * the serving (not draining) workers, as the SIE gateway counts its healthy ones.
 */
export interface ClusterSummary {
  /** Serving workers. */
  worker_count: number;
  /** GPUs of the serving workers. */
  gpu_count: number;
  /** Distinct models loaded on at least one serving worker. */
  models_loaded: number;
  /** Requests per second this router forwarded, over the last seconds. */
  total_qps: number;
}

/** The whole /health body. */
export interface HealthBody {
  status: "healthy" | "degraded";
  /** Always `gateway`: this is the router, not a worker (the SIE clients check it). */
  type: "gateway";
  version: string;
  router_id: string;
  directory: string;
  worker_count: number;
  healthy_workers: number;
  gpu_count: number;
  loaded_models: string[];
  /** Machine profiles of every registered worker, draining ones included. */
  gpu_types: string[];
  cluster: ClusterSummary;
  /** Machine profiles with at least one serving (not draining) worker. */
  live_gpu_types: string[];
  /**
   * Machine profiles the router accepts: `SVC_MACHINE_PROFILES` when set; otherwise any profile
   * is accepted, and this lists the ones it knows (the default profile and the workers').
   */
  configured_gpu_types: string[];
  pools: PoolHealth[];
  workers: WorkerHealth[];
  models: ModelHealth[];
  pending_demand: DemandEntry[];
}

/** `GET /readyz` on the router. */
export interface RouterReadyBody {
  /** `not_ready` only with `SVC_READYZ_REQUIRE_WORKER` (503) while the default pool is empty. */
  status: "ready" | "not_ready";
  /** Registered workers that take new work (not draining). */
  healthy_workers: number;
  /** With `SVC_DEFAULT_MACHINE_PROFILE`: the pool of requests without a profile header. */
  default_pool?: { machine_profile: string; serving_workers: number };
  /** Set when the default pool has no serving worker: what requests without a profile get. */
  message?: string;
}

/** `202 Accepted`: the request's pool has no serving worker yet; capacity has been requested. */
export interface ProvisioningBody {
  status: "provisioning";
  machine_profile: string;
  bundle: string;
  /** The model as the client named it. */
  model: string;
  /** Also sent as `Retry-After`. */
  retry_after_s: number;
  /** Unserved requests of this (profile, bundle) so far. */
  pending: number;
  message: string;
}

/** A worker of a pool, as the SIE clients' pool API lists it (`assigned_workers`). */
export interface PoolWorker {
  /** The worker id. */
  name: string;
  url: string;
  /** Its machine profile (GPU type). */
  gpu: string;
}

/**
 * Pool states: `active` with a serving worker, else `pending` (scaled to zero: requests get 202).
 * Pools here come from the settings and the workers' registrations: none has a lease that expires.
 */
export type PoolState = "active" | "pending";

/**
 * One pool of `GET /v1/pools`: the workers registered with that pool (`SVC_POOL`, by default
 * their machine profile). A configured pool (`SVC_MACHINE_PROFILES`, the default profile) is
 * listed with no worker; a registered worker's pool while it is registered. Shaped as the SIE
 * clients read a pool (`name`, `spec`, `status`, and the listing's `state`, `gpus`,
 * `worker_count`), plus this router's own fields.
 */
export interface PoolInfo {
  name: string;
  /**
   * The GPU type of its workers (their machine profiles, comma-separated when they differ); the
   * pool's own name while it has none (pools are named after their machine profile by default).
   */
  gpu: string;
  state: PoolState;
  /** Registered workers per machine profile (the pool's name with 0 while it has none). */
  gpus: Record<string, number>;
  /** What the pool is: its GPU types; it takes workers of every bundle; no minimum is kept. */
  spec: { gpus: Record<string, number>; bundle: null; minimum_worker_count: number };
  status: { state: PoolState; assigned_workers: PoolWorker[] };
  /** True when `SVC_MACHINE_PROFILES` or `SVC_DEFAULT_MACHINE_PROFILE` names it. */
  configured: boolean;
  /** True for the pool of requests that name none (`SVC_DEFAULT_MACHINE_PROFILE`). */
  is_default: boolean;
  worker_count: number;
  healthy_workers: number;
  gpu_count: number;
  /** Bundles its registered workers serve. */
  bundles: string[];
  /** Ids of its registered workers. */
  workers: string[];
}

/**
 * One worker as `/health` shows it to a client without fleet detail rights: what the SIE clients
 * read for capacity (profile, GPUs, state, loaded models), never its id, URL, load or memory.
 */
export type ClientWorkerHealth = Omit<
  WorkerHealth,
  | "id"
  | "name"
  | "url"
  | "version"
  | "queue_depth"
  | "in_flight"
  | "memory_used_bytes"
  | "memory_total_bytes"
  | "models"
  | "registered_at"
  | "last_seen_ms_ago"
>;

/** `/health` for a client without fleet detail rights (`view: "summary"`). */
export interface ClientHealthBody
  extends Omit<HealthBody, "router_id" | "directory" | "workers" | "pending_demand"> {
  /** `summary`: worker ids, URLs, load and pending demand need an admin key. */
  view: "summary";
  workers: ClientWorkerHealth[];
}
