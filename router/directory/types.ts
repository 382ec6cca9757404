/**
 * The worker directory: which workers are registered, what they serve and how loaded they are.
 * One interface, two implementations: process memory (one router process) and Deno KV (many
 * router isolates on Deno Deploy, each holding some of the workers' sockets).
 */
import type { FleetModel, ModelState } from "@svc/shared/fleet/protocol";

/** One model on one worker: registration data merged with the latest status. */
export interface WorkerModel {
  name: string;
  bundle: string;
  state: ModelState;
  queue_depth: number;
}

/** Everything the router knows about one registered worker. Plain JSON (stored in KV as is). */
export interface WorkerRecord {
  id: string;
  /** Identifies one socket: a reconnect gets a new one, so an old socket cannot remove it. */
  conn_id: string;
  /** Router process/isolate holding the socket. */
  router_id: string;
  url: string;
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
  /** Epoch ms. */
  registered_at: number;
  /** Epoch ms of the last frame that proved the worker alive (status at least). */
  last_seen: number;
}

/** The directory interface shared by both implementations. */
export interface WorkerDirectory {
  /** Which implementation (shown in /health). */
  readonly kind: "memory" | "kv";
  /** Insert or replace a worker's record (register, status, drain). */
  put(record: WorkerRecord): Promise<void>;
  /** Remove a worker, but only if `connId` still owns the record; true when removed. */
  remove(id: string, connId: string): Promise<boolean>;
  /**
   * Live workers, synchronously (the per-request hot path must not wait for storage). The KV
   * implementation answers from a cache refreshed in the background; both leave out stale records.
   */
  snapshot(): readonly WorkerRecord[];
  /** Re-read shared storage now (no-op in memory); used before answering /health. */
  refresh(): Promise<void>;
  /** Model name → bundle learned from registrations, kept after the workers leave. */
  learnedBundles(): ReadonlyMap<string, string>;
  /** Stop background work and release storage. */
  close(): Promise<void>;
}

/** Build a record's model list from registration data (states start as announced). */
export function modelsFromRegistration(models: readonly FleetModel[]): WorkerModel[] {
  return models.map((m) => ({ name: m.name, bundle: m.bundle, state: m.state, queue_depth: 0 }));
}

/** True when the record's last proof of life is within `staleMs` of `now`. */
export function isFresh(record: WorkerRecord, now: number, staleMs: number): boolean {
  return now - record.last_seen <= staleMs;
}
