/**
 * The router's `WebSocket /ws/status`: the fleet in the worker's status schema (message.ts),
 * every 200 ms like a worker's, built once per tick and only while someone listens (one encoded
 * frame for every client). A KV directory is read again at most once a second: the workers'
 * status frames arrive about that often.
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
import { forwardedTo, WindowRates } from "../dashboard/rates.ts";
import { workerHealth } from "../health.ts";
import { clientWorker } from "../views/health_view.ts";
import { buildFleetStatus, type FleetStatusMessage } from "./message.ts";

/** Path of the status stream (the same as a worker's). */
export const STATUS_PATH = "/ws/status";
/** Period of the router's status stream. */
export const FLEET_STATUS_INTERVAL_MS = 200;
/** Least time between two reads of a shared (KV) directory by the stream. */
const DIRECTORY_REFRESH_MS = 1000;

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
  /** The router's id (the messages' `name`). */
  routerId?: string;
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
  const rates = new WindowRates();
  let refreshedAt = -Infinity;
  // Both streams read one sample of the rates per tick (a second read would see zero).
  let latest: { atMs: number; message: FleetStatusMessage } | undefined;
  const sample = async (): Promise<FleetStatusMessage> => {
    const nowMs = Date.now();
    if (latest && nowMs - latest.atMs < (deps.intervalMs ?? FLEET_STATUS_INTERVAL_MS) / 2) {
      return latest.message;
    }
    if (nowMs - refreshedAt >= DIRECTORY_REFRESH_MS) {
      refreshedAt = nowMs;
      await deps.directory.refresh(); // KV directories: see workers held by other isolates
    }
    const workers = deps.directory.snapshot();
    // The workers' model series, as /metrics reads them (tokens, batch sizes).
    deps.metrics.models.collect(workers);
    const forwarded = await forwardedTo(deps.metrics, workers);
    const message = boundStatus(
      buildFleetStatus({
        nowMs,
        routerId: deps.routerId ?? "router",
        server,
        workers,
        catalog,
        metrics: await metricsView(deps.metrics.registry.registry, isRequestSeries),
        health: new Map(workers.map((w) => [w.id, workerHealth(w, nowMs)])),
        rates: rates.sample(forwarded, nowMs),
      }),
      deps.limits,
    );
    latest = { atMs: nowMs, message };
    return message;
  };
  const stream = (detail: boolean) =>
    new Broadcaster({
      intervalMs: deps.intervalMs ?? FLEET_STATUS_INTERVAL_MS,
      slots: deps.slots,
      build: async () => {
        const message = await sample();
        return JSON.stringify(detail ? message : withoutWorkerDetail(message));
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

/**
 * The message without what names or locates a worker (fleet detail): each model's per-worker
 * states go, and each worker keeps what `/health` shows a client (its profile, GPUs, state).
 */
function withoutWorkerDetail(m: FleetStatusMessage) {
  return {
    ...m,
    models: m.models.map(({ workers: _w, ...rest }) => rest),
    workers: m.workers.map(({ qps, ...w }) => ({ ...clientWorker(w), qps })),
  };
}
