/**
 * The worker's status stream: WebSocket `/ws/status`, one JSON text message every 200 ms to
 * every connected client (docs/observability.md). One message is built per tick and shared by all
 * clients; nothing runs while nobody listens.
 */
import type { Hono } from "hono";
import type { WorkerContext } from "../server/context.ts";
import { metricsView } from "@svc/shared/status/metrics_view";
import { acceptStreamClient, Broadcaster, StreamSlots } from "@svc/shared/dashboard/broadcaster";
import { GpuReadings } from "./gpu_readings.ts";
import { buildStatusMessage, type WorkerIdentity, type WorkerStatusMessage } from "./message.ts";
import { readServerFacts } from "@svc/shared/status/server_facts";

/** Path of the status stream. */
export const STATUS_PATH = "/ws/status";
/** Period of the status stream. */
export const STATUS_INTERVAL_MS = 200;

/** The mounted stream. */
export interface StatusStream {
  broadcaster: Broadcaster;
  /** The GPU readings the stream shows (the fleet's status frames read them too). */
  gpus: GpuReadings;
  /** Build one message now (tests, the dashboard's first paint). */
  snapshot(): Promise<WorkerStatusMessage>;
  /** Close every client and stop the ticker. */
  close(): Promise<void>;
}

/** Options of {@link mountStatusStream}. */
export interface StatusStreamOptions {
  gpus?: GpuReadings;
  intervalMs?: number;
}

/** Add `GET /ws/status` to `app`. */
export function mountStatusStream(
  app: Hono,
  ctx: WorkerContext,
  opts: StatusStreamOptions = {},
): StatusStream {
  const server = readServerFacts(ctx.startedAt);
  const identity = identityOf(ctx);
  const gpus = opts.gpus ?? new GpuReadings({
    onError: (err) =>
      ctx.log("warn", "GPU readings failed; status reports the last ones", {
        error: err instanceof Error ? err.message : String(err),
      }),
  });
  const snapshot = async (): Promise<WorkerStatusMessage> =>
    buildStatusMessage({
      nowMs: Date.now(),
      server,
      identity,
      ready: ctx.state.ready,
      gpus: await gpus.current(),
      memoryThresholdPct: ctx.settings.scheduling.memoryThresholdPercent,
      models: ctx.registry.statuses(),
      pending: ctx.catalog.pendingEntries(),
      metrics: await metricsView(ctx.metrics.registry),
      process: {
        ...ctx.metrics.process.snapshot(),
        in_flight: ctx.state.inFlight,
        draining: ctx.state.draining,
      },
      images: ctx.images.pool.status(),
      weightsReason: ctx.weightSources?.reason(),
    });
  const broadcaster = new Broadcaster({
    intervalMs: opts.intervalMs ?? STATUS_INTERVAL_MS,
    slots: new StreamSlots(ctx.settings.http.maxStreamClients),
    build: async () => JSON.stringify(await snapshot()),
    onError: (err) =>
      ctx.log("error", "status message failed", {
        error: err instanceof Error ? err.message : String(err),
      }),
  });

  app.get(STATUS_PATH, (c) => acceptStreamClient(c.req.raw, STATUS_PATH, broadcaster));

  return {
    broadcaster,
    gpus,
    snapshot,
    async close() {
      broadcaster.close();
      await gpus.settle();
    },
  };
}

/** Who the worker is: its fleet settings, else the host name and the served bundle. */
function identityOf(ctx: WorkerContext): WorkerIdentity {
  const fleet = ctx.settings.fleet;
  let host = "";
  try {
    host = Deno.env.get("HOSTNAME") ?? "";
  } catch {
    // No env permission: the name stays empty.
  }
  return {
    name: fleet?.workerId ?? host,
    bundle: ctx.bundle,
    machineProfile: fleet?.machineProfile,
    pool: fleet?.pool,
  };
}
