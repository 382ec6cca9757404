/**
 * The router's live fleet page: GET `/` (HTML) and WebSocket `/ws/cluster-status` (one
 * ClusterStatus JSON message per second, built once per tick for all viewers). router/app.ts
 * mounts it before the access log, so dashboard traffic is not counted as API requests.
 */
import type { Env, Hono } from "hono";
import type { WorkerDirectory } from "../directory/types.ts";
import type { Logger } from "@svc/shared/log";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import type { DemandTracker } from "../provisioning.ts";
import type { PoolSettings } from "../settings.ts";
import {
  acceptStreamClient,
  Broadcaster,
  type StreamSlots,
} from "@svc/shared/dashboard/broadcaster";
import type { ViewLimits } from "../views/bounds.ts";
import { ClusterStatusBuilder } from "./cluster_status.ts";
import { dashboardResponse } from "@svc/shared/dashboard";
import { FLEET_DASHBOARD_HTML } from "./page.ts";

/** Path of the fleet status stream. */
export const CLUSTER_STATUS_PATH = "/ws/cluster-status";
/** One message per second: the directory itself only changes at status-frame pace. */
export const CLUSTER_STATUS_INTERVAL_MS = 1000;

/** What the dashboard reads from the router. */
export interface DashboardDeps {
  directory: WorkerDirectory;
  demand: DemandTracker;
  metrics: RouterMetrics;
  log: Logger;
  routerId: string;
  /** The machine profiles the router accepts (its pool settings). */
  pools: Pick<PoolSettings, "defaultMachineProfile" | "machineProfiles">;
  /** How much of the fleet a message lists. */
  limits: ViewLimits;
  /** The subscriber cap the router's streams share. */
  slots: StreamSlots;
  /** Stream period (tests shorten it). */
  intervalMs?: number;
}

/** Add GET `/` and `/ws/cluster-status` to the router app. */
export function mountDashboard<E extends Env>(app: Hono<E>, deps: DashboardDeps): void {
  const builder = new ClusterStatusBuilder();
  const broadcaster = new Broadcaster({
    intervalMs: deps.intervalMs ?? CLUSTER_STATUS_INTERVAL_MS,
    slots: deps.slots,
    build: async () => {
      await deps.directory.refresh(); // KV directories: see workers held by other isolates
      const workers = deps.directory.snapshot();
      return JSON.stringify(
        await builder.build({
          workers,
          demand: deps.demand.pending(workers),
          routerId: deps.routerId,
          directory: deps.directory.kind,
          pools: deps.pools,
          metrics: deps.metrics,
          nowMs: Date.now(),
          limits: deps.limits,
        }),
      );
    },
    onError: (err) => deps.log("error", "cluster status failed", { error: String(err) }),
  });

  app.get("/", () => dashboardResponse(FLEET_DASHBOARD_HTML));

  app.get(
    CLUSTER_STATUS_PATH,
    (c) => acceptStreamClient(c.req.raw, CLUSTER_STATUS_PATH, broadcaster),
  );
}
