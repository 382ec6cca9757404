/**
 * The router's `WebSocket /ws/status`: the fleet in the worker's status schema (message.ts), one
 * JSON message per second to every client, built once per tick and only while someone listens.
 * Once a second, not every 200 ms like a worker: the directory changes at status-frame pace.
 */
import type { Context, Env, Hono } from "hono";
import {
  acceptStreamClient,
  Broadcaster,
  type StreamSlots,
} from "@svc/shared/dashboard/broadcaster";
import { boundStatus, type ViewLimits } from "../views/bounds.ts";
import { BUILTIN_CATALOG, catalogById } from "@svc/shared/catalog";
import type { Logger } from "@svc/shared/log";
import { metricsView } from "@svc/shared/status/metrics_view";
import { readServerFacts } from "@svc/shared/status/server_facts";
import type { WorkerDirectory } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import { buildFleetStatus, type FleetStatusMessage } from "./message.ts";

/** Path of the status stream (the same as a worker's). */
export const STATUS_PATH = "/ws/status";
/** Period of the router's status stream. */
export const FLEET_STATUS_INTERVAL_MS = 1000;

/** What the stream reads. */
export interface FleetStatusDeps<E extends Env> {
  directory: WorkerDirectory;
  metrics: RouterMetrics;
  log: Logger;
  /**
   * True when the client may see fleet detail: the per-worker state of each model (worker ids).
   * Others get the same message without it.
   */
  detail: (c: Context<E>) => Promise<boolean>;
  /** How much of the fleet a message lists. */
  limits: ViewLimits;
  /** The subscriber cap the router's streams share. */
  slots: StreamSlots;
  /** Stream period (tests shorten it). */
  intervalMs?: number;
}

/** The worker's request series, as the router records them (not its own `svc_router_*`). */
function isRequestSeries(name: string): boolean {
  return name.startsWith("svc_") && !name.startsWith("svc_router_");
}

/**
 * Add `GET /ws/status` to the router app: two streams, with and without fleet detail, each built
 * only while someone listens. Returns their broadcasters (tests close them).
 */
export function mountFleetStatus<E extends Env>(
  app: Hono<E>,
  deps: FleetStatusDeps<E>,
): Broadcaster[] {
  const server = readServerFacts(Date.now());
  const catalog = catalogById(BUILTIN_CATALOG);
  const stream = (detail: boolean) =>
    new Broadcaster({
      intervalMs: deps.intervalMs ?? FLEET_STATUS_INTERVAL_MS,
      slots: deps.slots,
      build: async () => {
        await deps.directory.refresh(); // KV directories: see workers held by other isolates
        const message = boundStatus(
          buildFleetStatus({
            nowMs: Date.now(),
            server,
            workers: deps.directory.snapshot(),
            catalog,
            metrics: await metricsView(deps.metrics.registry.registry, isRequestSeries),
          }),
          deps.limits,
        );
        return JSON.stringify(detail ? message : withoutWorkers(message));
      },
      onError: (err) => deps.log("error", "fleet status failed", { error: String(err) }),
    });
  const detailed = stream(true);
  const summary = stream(false);
  app.get(STATUS_PATH, async (c) => {
    const to = await deps.detail(c) ? detailed : summary;
    return acceptStreamClient(c.req.raw, STATUS_PATH, to);
  });
  return [detailed, summary];
}

/** The message without each model's per-worker states (they name workers: fleet detail). */
function withoutWorkers(m: FleetStatusMessage): Omit<FleetStatusMessage, "models"> & {
  models: Omit<FleetStatusMessage["models"][number], "workers">[];
} {
  return { ...m, models: m.models.map(({ workers: _w, ...rest }) => rest) };
}
