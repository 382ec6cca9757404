/**
 * Process lifecycle: listen, preload, join the fleet, and shut down gracefully on SIGTERM/SIGINT
 * (readiness flips at once, new work gets 503 + Retry-After: 5, in-flight work finishes within
 * the drain bound, then exit 0; a second signal exits at once).
 */
import type { WorkerInstance } from "../bootstrap.ts";
import { deadline } from "@svc/shared/deadline";
import { startFleetLink } from "../fleet/mod.ts";
import { serveWorkerApp } from "./http_server.ts";
import { serveRequest } from "./serve_request.ts";
import { announcedBundle } from "./model_gate.ts";
import { workerMemory } from "../telemetry/worker_memory.ts";

/** How long the answers to requests cut off at the drain bound get to go out. */
const ANSWER_BOUND_MS = 2000;

/** What a process embedding the worker (`deno task start`) adds to its lifecycle. */
export interface LifecycleHooks {
  /** Resolves with a reason when the process should stop as on SIGTERM (its launcher died). */
  stopWhen?: Promise<string>;
  /** Runs (bounded) when shutdown starts: stop helper threads and the processes they run. */
  onShutdown?: () => Promise<void>;
}

/** What a drain stops besides the worker's models. */
export interface DrainParts {
  /** The worker's HTTP server. */
  server: { shutdown(): Promise<void> };
  /** The link to the router (told first, so that it stops sending work); null: standalone. */
  link?: { drain(): Promise<void>; close(): Promise<void> } | null;
  /** Runs (bounded) when the drain starts: see {@link LifecycleHooks.onShutdown}. */
  onShutdown?: () => Promise<void>;
}

/**
 * Stop gracefully: readiness flips and new work gets 503 SHUTTING_DOWN at once, the router is
 * told, in-flight work gets the drain bound (`SVC_SHUTDOWN_DRAIN_S`) to finish; then what still
 * runs is answered 503 SHUTTING_DOWN with Retry-After (never the 500 of a torn-down session),
 * the models unload and the link and the server close once those answers are out. Resolves with whether the
 * work drained within the bound.
 */
export async function drainWorker(
  worker: WorkerInstance,
  parts: DrainParts,
  reason: string,
): Promise<boolean> {
  const { ctx } = worker;
  const { link } = parts;
  ctx.state.draining = true;
  ctx.log("info", "shutdown started", { signal: reason, in_flight: ctx.state.inFlight });
  const helpers = parts.onShutdown
    ? deadline(parts.onShutdown().catch(() => {}), ANSWER_BOUND_MS)
    : undefined;
  await link?.drain().catch(() => {});
  const boundMs = ctx.settings.shutdownDrainS * 1000;
  const drained = await deadline(ctx.state.whenIdle().then(() => true), boundMs, () => false);
  ctx.log(drained ? "info" : "warn", "drain finished", {
    drained,
    in_flight: ctx.state.inFlight,
  });
  // Requests still running lose their models now: their batchers answer them 503
  // SHUTTING_DOWN with Retry-After, and those answers go out before the server and the link
  // close (requests that came over the link answer over it), so the router or the client
  // retries elsewhere.
  ctx.state.stopping = true;
  await worker.close().catch(() => {});
  await deadline(ctx.state.whenIdle(), ANSWER_BOUND_MS);
  await link?.close().catch(() => {});
  await deadline(parts.server.shutdown().catch(() => {}), ANSWER_BOUND_MS);
  await helpers;
  ctx.log("info", "worker stopped");
  return drained;
}

/** What stands for the HTTP server when there is none: it "finishes" when shut down. */
function noServer(): { finished: Promise<void>; shutdown(): Promise<void> } {
  const done = Promise.withResolvers<void>();
  return {
    finished: done.promise,
    shutdown: () => {
      done.resolve();
      return done.promise;
    },
  };
}

/** Serve until a termination signal, then drain and exit. */
export async function runWorkerProcess(
  worker: WorkerInstance,
  hooks: LifecycleHooks = {},
): Promise<never> {
  const { ctx } = worker;
  const { host: hostname, port, enabled } = ctx.settings.listen;
  const server = enabled === false ? noServer() : await serveWorkerApp(
    worker,
    ctx.settings.http,
    { hostname, port },
    (addr) => ctx.log("info", "worker listening", { host: addr.hostname, port: addr.port }),
  );
  if (enabled === false) ctx.log("info", "no HTTP port (SVC_WORKER_HTTP=off)");
  const actualPort = "addr" in server ? server.addr.port : null;

  let link: ReturnType<typeof startFleetLink> = null;
  let stopping: Promise<never> | undefined;
  const stop = (signal: string) => {
    if (stopping) {
      ctx.log("warn", "second signal: exiting now", { signal });
      Deno.exit(1);
    }
    stopping = drainAndExit(signal);
  };
  const drainAndExit = async (signal: string): Promise<never> => {
    await drainWorker(worker, { server, link, onShutdown: hooks.onShutdown }, signal);
    Deno.exit(0);
  };
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => stop(sig));
  hooks.stopWhen?.then((reason) => stop(reason));

  await worker.preload();
  ctx.log("info", "worker ready", { models: ctx.catalog.entries.size });
  link = startFleetLink({
    fleet: ctx.settings.fleet,
    port: actualPort,
    serve: serveRequest(worker, "router"),
    // SVC_MODELS entries that could not be configured are announced too (as failed): the router
    // then routes their requests here, and they get the reason.
    servedModels: () => [
      ...[...ctx.catalog.entries.values()].map((c) => {
        const status = ctx.registry.status(c.id);
        return {
          name: c.id,
          bundle: announcedBundle(c.bundle, ctx.bundle),
          state: status?.state ?? "available",
          revision: status?.revision,
        };
      }),
      ...ctx.catalog.pendingEntries().map((p) => ({
        name: p.id,
        bundle: announcedBundle(p.bundle, ctx.bundle),
        state: p.state,
      })),
    ],
    status: () => {
      const statuses = ctx.registry.statuses();
      // The worker's own memory (RSS, or the GPUs' on CUDA), never the host's used memory.
      const mem = workerMemory({
        device: ctx.registry.deviceName,
        rssBytes: Deno.memoryUsage().rss,
        budgetTotalBytes: ctx.registry.memoryUsage().totalBytes,
        // Only a CUDA worker reads its GPUs (nvidia-smi): a CPU one would query and discard them.
        gpus: ctx.registry.deviceName === "cuda" ? worker.status.gpus.latest() : [],
      });
      return {
        models: [
          ...statuses.map((s) => {
            const batches = ctx.metrics.batchTotals(s.name);
            return {
              name: s.name,
              state: s.state,
              queue_depth: s.queueDepth,
              device: s.device,
              memory_bytes: s.memoryBytes,
              revision: s.revision,
              ...(batches
                ? {
                  tokens_total: batches.tokens,
                  batch_sizes: { counts: batches.counts, sum: batches.sum, count: batches.count },
                }
                : {}),
            };
          }),
          ...ctx.catalog.pendingEntries().map((p) => ({
            name: p.id,
            state: p.state,
            queue_depth: 0,
          })),
        ],
        queue_depth: statuses.reduce((a, s) => a + s.queueDepth, 0),
        in_flight: ctx.state.inFlight,
        memory_used_bytes: mem.usedBytes,
        memory_total_bytes: mem.totalBytes,
        draining: ctx.state.draining,
      };
    },
    log: ctx.log,
  });
  await server.finished;
  // The server also finishes during a graceful stop: let that sequence end the process.
  if (stopping) await stopping;
  Deno.exit(0);
}
