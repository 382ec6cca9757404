/**
 * Worker selection for one request: pure, synchronous, one pass over the fleet snapshot.
 *
 * Eligible: same pool and bundle, not draining, offers the model, not excluded. Among them the
 * worker that already has the model loaded wins (then one that is loading it, so a second load
 * is not started elsewhere), then the least loaded. A loaded worker whose load reached the spill
 * threshold loses its preference, so a hot model spreads to idle workers instead of queueing on
 * one. Ties are broken at random so equal workers share traffic.
 */
import type { WorkerModel, WorkerRecord } from "../directory/types.ts";

/** Why a worker was chosen (a metric label: affinity shown by counters). */
export type Affinity = "loaded" | "loading" | "none";

/** What one request needs. */
export interface SelectionRequest {
  pool: string;
  bundle: string;
  model: string;
}

/** Outcome of a selection. */
export type Selection =
  | { kind: "worker"; worker: WorkerRecord; affinity: Affinity }
  /** No serving worker in (pool, bundle): the pool must be provisioned. */
  | { kind: "no_capacity" }
  /** The pool has serving workers but none offers this model. */
  | { kind: "not_served" };

/** Inputs beyond the fleet snapshot. */
export interface SelectionOptions {
  /** A loaded worker with this load or more loses its affinity preference. */
  spillLoad: number;
  /** Requests this router has in flight to a worker. */
  inFlight: (workerId: string) => number;
  /** Workers to use only when nothing else is eligible (recent connection failure). */
  coolingDown?: (workerId: string) => boolean;
  /** Workers never to use (already tried for this request). */
  exclude?: ReadonlySet<string>;
  random?: () => number;
}

const modelIndex = new WeakMap<WorkerRecord, Map<string, WorkerModel>>();

/** The worker's model map, built once per record object (records are replaced, never mutated). */
export function modelsOf(worker: WorkerRecord): Map<string, WorkerModel> {
  let idx = modelIndex.get(worker);
  if (!idx) {
    idx = new Map(worker.models.map((m) => [m.name, m]));
    modelIndex.set(worker, idx);
  }
  return idx;
}

/** Load estimate: requests running or queued there, using the fresher of our count and its report. */
export function workerLoad(worker: WorkerRecord, localInFlight: number): number {
  return Math.max(localInFlight, worker.in_flight) + worker.queue_depth;
}

/** True when the worker can take new requests of (pool, bundle). */
export function isServing(worker: WorkerRecord, pool: string, bundle: string): boolean {
  return worker.pool === pool && worker.bundle === bundle && !worker.draining;
}

/** Choose the worker for one request. */
export function selectWorker(
  workers: readonly WorkerRecord[],
  req: SelectionRequest,
  opts: SelectionOptions,
): Selection {
  const random = opts.random ?? Math.random;
  let serving = 0;
  let best: { worker: WorkerRecord; affinity: Affinity; rank: number; load: number } | undefined;
  let ties = 0;
  let fallback: typeof best;
  for (const w of workers) {
    if (!isServing(w, req.pool, req.bundle)) continue;
    serving++;
    if (opts.exclude?.has(w.id)) continue;
    const m = modelsOf(w).get(req.model);
    if (!m) continue;
    const affinity: Affinity = m.state === "loaded"
      ? "loaded"
      : m.state === "loading"
      ? "loading"
      : "none";
    const load = workerLoad(w, opts.inFlight(w.id));
    // A worker whose load of this model failed still answers (with its error) as a last resort.
    const rank = m.state === "failed"
      ? 3
      : load >= opts.spillLoad
      ? 2
      : affinity === "loaded"
      ? 0
      : affinity === "loading"
      ? 1
      : 2;
    const cand = { worker: w, affinity, rank, load };
    if (opts.coolingDown?.(w.id)) {
      if (!fallback || load < fallback.load) fallback = cand;
      continue;
    }
    if (!best || rank < best.rank || (rank === best.rank && load < best.load)) {
      best = cand;
      ties = 1;
    } else if (rank === best.rank && load === best.load) {
      // Reservoir sampling: each of the k equal candidates ends up chosen with probability 1/k.
      ties++;
      if (random() * ties < 1) best = cand;
    }
  }
  const chosen = best ?? fallback;
  if (chosen) {
    return { kind: "worker", worker: chosen.worker, affinity: chosen.affinity };
  }
  return serving > 0 ? { kind: "not_served" } : { kind: "no_capacity" };
}

/** True when (pool, bundle) has at least one serving worker. */
export function poolHasCapacity(
  workers: readonly WorkerRecord[],
  pool: string,
  bundle: string,
): boolean {
  return workers.some((w) => isServing(w, pool, bundle));
}
