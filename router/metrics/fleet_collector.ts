/**
 * The collector run before each `/metrics` exposition: worker counts per (pool, profile, bundle,
 * state), pending demand and the workers' model series are computed from the directory, and
 * per-worker series of workers that left are dropped.
 */
import type { WorkerDirectory } from "../directory/types.ts";
import type { DemandTracker } from "../provisioning.ts";
import type { RouterMetrics } from "./router_metrics.ts";
import type { Labels } from "./series.ts";

/** The labels of `svc_router_workers`. */
type WorkerLabels = Labels<"pool" | "machine_profile" | "bundle" | "state">;

/** Refill the fleet gauges from the directory and demand tracker at every collection. */
export function collectFleetMetrics(
  metrics: RouterMetrics,
  directory: WorkerDirectory,
  demand: DemandTracker,
): void {
  metrics.registry.onCollect(() => {
    const workers = directory.snapshot();
    const live = new Set(workers.map((w) => w.id));
    metrics.upstream.retainWhere("worker_id", live);
    metrics.upstreamErrors.retainWhere("worker_id", live);
    metrics.workers.reset();
    const counts = new Map<string, { labels: WorkerLabels; n: number }>();
    for (const w of workers) {
      const labels = {
        pool: w.pool,
        machine_profile: w.machine_profile,
        bundle: w.bundle,
        state: w.draining ? "draining" : "serving",
      };
      const key = Object.values(labels).join("\u0000");
      const e = counts.get(key) ?? { labels, n: 0 };
      e.n++;
      counts.set(key, e);
    }
    for (const e of counts.values()) metrics.workers.set(e.labels, e.n);
    metrics.pendingDemand.reset();
    for (const d of demand.pending(workers)) {
      metrics.pendingDemand.set(
        { machine_profile: d.machine_profile, bundle: d.bundle },
        d.pending,
      );
    }
    metrics.models.collect(workers);
  });
}
