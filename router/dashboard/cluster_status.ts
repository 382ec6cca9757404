/**
 * The fleet status message of `/ws/cluster-status`: the router's /health document (pools,
 * workers with their models and states, queue depths, memory) plus a timestamp and request
 * rates, so the live page needs one stream and no other calls.
 *
 *   { timestamp, ...HealthBody, requests_per_s, cluster: {...HealthBody.cluster, total_qps},
 *     workers: [{ ...WorkerHealth, requests_per_s, requests_total }],
 *     pools:   [{ ...PoolHealth, requests_per_s, queue_depth }] }
 */
import type { WorkerRecord } from "../directory/types.ts";
import type { DemandEntry, HealthBody, PoolHealth, WorkerHealth } from "@svc/shared/schemas/router";
import { buildHealth } from "../health.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import type { PoolSettings } from "../settings.ts";
import { forwardedTo, RateTracker } from "./rates.ts";
import { boundView, type ViewLimits } from "../views/bounds.ts";

/** One worker on the fleet page. */
export interface ClusterWorker extends WorkerHealth {
  /** Requests this router forwarded to the worker. */
  requests_total: number;
  requests_per_s: number;
}

/** One (pool, bundle) on the fleet page. */
export interface ClusterPool extends PoolHealth {
  queue_depth: number;
  requests_per_s: number;
}

/** One message of the fleet stream. */
export interface ClusterStatus extends Omit<HealthBody, "workers" | "pools" | "cluster"> {
  /** Unix seconds. */
  timestamp: number;
  requests_per_s: number;
  /** /health's `cluster`, plus `total_qps` (the same number as `requests_per_s`). */
  cluster: HealthBody["cluster"] & { total_qps: number };
  pools: ClusterPool[];
  workers: ClusterWorker[];
}

/** Inputs of one message. */
export interface ClusterInputs {
  workers: readonly WorkerRecord[];
  demand: DemandEntry[];
  routerId: string;
  directory: string;
  pools: Pick<PoolSettings, "defaultMachineProfile" | "machineProfiles">;
  metrics: RouterMetrics;
  nowMs: number;
  /** How much of the fleet the message lists (unbounded when absent). */
  limits?: ViewLimits;
}

/** Round a rate for display (two decimals). */
function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Builds successive messages (it keeps the previous counts to derive rates). */
export class ClusterStatusBuilder {
  readonly #rates = new RateTracker();

  /** The message for `i`. */
  async build(i: ClusterInputs): Promise<ClusterStatus> {
    const full = buildHealth({
      workers: i.workers,
      demand: i.demand,
      routerId: i.routerId,
      directory: i.directory,
      pools: i.pools,
      now: i.nowMs,
    });
    const health = i.limits ? boundView(full, i.limits) : full;
    const totals = await forwardedTo(i.metrics, i.workers);
    const rates = this.#rates.sample(totals, i.nowMs);
    const workers: ClusterWorker[] = health.workers.map((w) => ({
      ...w,
      requests_total: totals.get(w.id) ?? 0,
      requests_per_s: round(rates.get(w.id) ?? 0),
    }));
    const pools: ClusterPool[] = health.pools.map((p) => {
      const members = workers.filter((w) => w.pool === p.pool && w.bundle === p.bundle);
      return {
        ...p,
        queue_depth: members.reduce((a, w) => a + w.queue_depth, 0),
        requests_per_s: round(members.reduce((a, w) => a + w.requests_per_s, 0)),
      };
    });
    const total = round(workers.reduce((a, w) => a + w.requests_per_s, 0));
    return {
      ...health,
      timestamp: i.nowMs / 1000,
      requests_per_s: total,
      cluster: { ...health.cluster, total_qps: total },
      pools,
      workers,
    };
  }
}
