/**
 * The worker directory: which workers are registered, what they serve and how loaded they are.
 * One interface, two implementations: process memory (one router process) and Deno KV (many
 * router isolates on Deno Deploy, each holding some of the workers' sockets).
 */
import type { FleetModel, FleetModelStatus, WorkerTransport } from "@svc/shared/fleet/protocol";

/**
 * One model on one worker: registration data merged with the latest status (the wire's model
 * status plus the bundle the worker registered it under).
 */
export interface WorkerModel extends FleetModelStatus {
  bundle: string;
}

/** Everything the router knows about one registered worker. Plain JSON (stored in KV as is). */
export interface WorkerRecord {
  id: string;
  /** Identifies one socket: a reconnect gets a new one, so an old socket cannot remove it. */
  conn_id: string;
  /** Router process/isolate holding the socket. */
  router_id: string;
  /** Advertised base URL; empty when the worker has none (connection transport only). */
  url: string;
  /**
   * How requests reach the worker: over its connection to `router_id` (only that router holds
   * it), or HTTP to `url`. Absent in records of earlier releases: HTTP.
   */
  transport?: WorkerTransport;
  machine_profile: string;
  pool: string;
  bundle: string;
  version: string;
  gpu_count: number;
  gpu_types: string[];
  models: WorkerModel[];
  queue_depth: number;
  in_flight: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  draining: boolean;
  /**
   * SHA-256 (hex) of the worker's instance key, when it sent one: a new connection proves it is
   * the same process by presenting the same key. Never shown.
   */
  instance_hash?: string;
  /** Epoch ms. */
  registered_at: number;
  /** Epoch ms of the last frame that proved the worker alive (status at least). */
  last_seen: number;
}

/** The directory interface shared by both implementations. */
export interface WorkerDirectory {
  /** Which implementation (shown in /health). */
  readonly kind: "memory" | "kv";
  /**
   * Register a worker: store `record` unless a live record of another connection holds the id
   * and `record` does not prove to be the same process (same `instance_hash`). False: refused.
   */
  claim(record: WorkerRecord): Promise<boolean>;
  /** Replace the record of a registered connection (status, drain). */
  put(record: WorkerRecord): Promise<void>;
  /**
   * The worker of `record` (as last put) is alive at `record.last_seen`, and nothing else changed:
   * no copy, no write beyond what keeps it fresh for other router isolates, no view rebuilt.
   */
  touch(record: WorkerRecord): Promise<void>;
  /** Remove a worker, but only if `connId` still owns the record; true when removed. */
  remove(id: string, connId: string): Promise<boolean>;
  /**
   * Live workers, synchronously (the per-request hot path must not wait for storage). The KV
   * implementation answers from a cache refreshed in the background; both leave out stale records.
   */
  snapshot(): readonly WorkerRecord[];
  /** Re-read shared storage now (no-op in memory); used before answering /health. */
  refresh(): Promise<void>;
  /**
   * Model name → bundle learned from registrations, kept after the workers leave (bounded, the
   * least recently reported pairs forgotten first).
   */
  learnedBundles(): ReadonlyMap<string, string>;
  /** Stop background work and release storage. */
  close(): Promise<void>;
}

/** Build a record's model list from registration data (states start as announced). */
export function modelsFromRegistration(models: readonly FleetModel[]): WorkerModel[] {
  return models.map((m) => ({
    name: m.name,
    bundle: m.bundle,
    state: m.state,
    queue_depth: 0,
    ...(m.revision === undefined ? {} : { revision: m.revision }),
  }));
}

/**
 * True when `candidate` may take the worker id from `current`: there is no live record, it is the
 * same connection, or the candidate presents the same instance key (the same process again).
 */
export function mayTakeOver(
  current: WorkerRecord | undefined,
  candidate: WorkerRecord,
  now: number,
  staleMs: number,
): boolean {
  return mayReplace(current, candidate, current !== undefined && isFresh(current, now, staleMs));
}

/** {@link mayTakeOver} when the caller decides whether `current` is live (`live`). */
export function mayReplace(
  current: Pick<WorkerRecord, "conn_id" | "instance_hash"> | undefined,
  candidate: WorkerRecord,
  live: boolean,
): boolean {
  if (!current || current.conn_id === candidate.conn_id || !live) return true;
  return current.instance_hash !== undefined && current.instance_hash === candidate.instance_hash;
}

/** How much of what workers report a directory remembers. */
export interface LearnedLimits {
  /** Most model → bundle pairs remembered. */
  maxModels: number;
  /** A pair not reported for this long is forgotten. */
  ttlMs: number;
}

/** Default bound on remembered model → bundle pairs (`SVC_MAX_LEARNED_MODELS`). */
export const DEFAULT_LEARNED: LearnedLimits = { maxModels: 10_000, ttlMs: 7 * 24 * 3600 * 1000 };

/** True when the record's last proof of life is within `staleMs` of `now`. */
export function isFresh(record: WorkerRecord, now: number, staleMs: number): boolean {
  return now - record.last_seen <= staleMs;
}
