/**
 * The router's `WebSocket /ws/status`: the fleet in the worker's status schema (message.ts),
 * every 200 ms like a worker's, built once per tick and only while someone listens (one encoded
 * frame for every client). A KV directory is read again at most once a second: the workers'
 * status frames arrive about that often.
 */
import type { Env, Hono } from "hono";
import { acceptStreamClient, Broadcaster } from "@svc/shared/dashboard/broadcaster";
import { BUILTIN_CATALOG, catalogById } from "@svc/shared/catalog";
import type { Logger } from "@svc/shared/log";
import { metricsView } from "@svc/shared/status/metrics_view";
import { readServerFacts } from "@svc/shared/status/server_facts";
import type { WorkerDirectory } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";
import { forwardedTo, WindowRates } from "../dashboard/rates.ts";
import { workerHealth } from "../health.ts";
import { buildFleetStatus } from "./message.ts";

/** Path of the status stream (the same as a worker's). */
export const STATUS_PATH = "/ws/status";
/** Period of the router's status stream. */
export const FLEET_STATUS_INTERVAL_MS = 200;
/** Least time between two reads of a shared (KV) directory by the stream. */
const DIRECTORY_REFRESH_MS = 1000;

/** What the stream reads. */
export interface FleetStatusDeps {
  directory: WorkerDirectory;
  metrics: RouterMetrics;
  log: Logger;
  /** The router's id (the messages' `name`). */
  routerId?: string;
  /** Stream period (tests shorten it). */
  intervalMs?: number;
}

/** The worker's request series, as the router records them (not its own `svc_router_*`). */
function isRequestSeries(name: string): boolean {
  return name.startsWith("svc_") && !name.startsWith("svc_router_");
}

/** Add `GET /ws/status` to the router app; returns the broadcaster (tests close it). */
export function mountFleetStatus<E extends Env>(app: Hono<E>, deps: FleetStatusDeps): Broadcaster {
  const server = readServerFacts(Date.now());
  const catalog = catalogById(BUILTIN_CATALOG);
  const rates = new WindowRates();
  let refreshedAt = -Infinity;
  const broadcaster = new Broadcaster({
    intervalMs: deps.intervalMs ?? FLEET_STATUS_INTERVAL_MS,
    build: async () => {
      const nowMs = Date.now();
      if (nowMs - refreshedAt >= DIRECTORY_REFRESH_MS) {
        refreshedAt = nowMs;
        await deps.directory.refresh(); // KV directories: see workers held by other isolates
      }
      const workers = deps.directory.snapshot();
      // The workers' model series, as /metrics reads them (tokens, batch sizes).
      deps.metrics.models.collect(workers);
      const forwarded = new Map(workers.map((w) => [w.id, forwardedTo(deps.metrics, w)]));
      return JSON.stringify(buildFleetStatus({
        nowMs,
        routerId: deps.routerId ?? "router",
        server,
        workers,
        catalog,
        metrics: await metricsView(deps.metrics.registry.registry, isRequestSeries),
        health: new Map(workers.map((w) => [w.id, workerHealth(w, nowMs)])),
        rates: rates.sample(forwarded, nowMs),
      }));
    },
    onError: (err) => deps.log("error", "fleet status failed", { error: String(err) }),
  });
  app.get(STATUS_PATH, (c) => acceptStreamClient(c.req.raw, STATUS_PATH, broadcaster));
  return broadcaster;
}
