/** The worker and router processes under test, started as `deno task worker|router` would. */
import { freePort, type Proc, routerV8Flags, spawnDeno } from "./procs.ts";
import { waitFor } from "../helpers/wait.ts";
import { type FleetLink, startFleetLink } from "#worker/fleet/mod.ts";
import { loadWorkerSettings } from "@svc/worker/settings";

/** A running service: its process and base URL. */
export interface Service {
  proc: Proc;
  url: string;
}

/** The model every scenario runs. */
export const BENCH_MODEL = "fixture/bench-small";

/** Token shared by the bench router and worker (the fleet wants at least 16 characters). */
export const BENCH_FLEET_TOKEN = "bench-fleet-token-9d27c4e1a5b3";

/** Header that selects the CPU pool on the router. */
export const PROFILE_HEADER = { "X-SVC-MACHINE-PROFILE": "cpu" } as const;

/** How the bench configures the worker. */
export interface WorkerOptions {
  fixturesDir: string;
  /** Join this router (URL) when set. */
  routerUrl?: string;
  /** Worker entry point relative to the repository (default worker/main.ts; for A/B copies). */
  entry?: string;
}

/** Start a worker process with bench-small preloaded; resolves once /readyz answers 200. */
export async function startWorker(opts: WorkerOptions): Promise<Service> {
  const port = freePort();
  const cacheDir = await Deno.makeTempDir({ prefix: "svc-bench-cache-" });
  const env: Record<string, string> = {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: String(port),
    SVC_MODELS_DIR: `${opts.fixturesDir}/models`,
    SVC_CLUSTER_CACHE: `${opts.fixturesDir}/cache`,
    SVC_CACHE_DIR: cacheDir,
    SVC_HUB_DISABLED: "1",
    SVC_MODEL_FILTER: "fixture/*",
    SVC_PRELOAD_MODELS: BENCH_MODEL,
    SVC_DEVICE: "cpu",
    SVC_LOG_LEVEL: "warn",
    // No SVC_INTRA_OP_THREADS: the worker runs at its defaults and picks its own thread count.
  };
  if (opts.routerUrl) {
    Object.assign(env, {
      SVC_ROUTER_URL: opts.routerUrl,
      SVC_WORKER_TOKEN: BENCH_FLEET_TOKEN,
      SVC_WORKER_ID: "bench-worker",
      SVC_MACHINE_PROFILE: "cpu",
    });
  }
  const proc = spawnDeno(["-P=worker", opts.entry ?? "worker/main.ts"], env);
  // The weights copy goes with the process.
  proc.exited.finally(() => Deno.remove(cacheDir, { recursive: true }).catch(() => {}));
  return await serviceWhenOk(proc, `http://127.0.0.1:${port}`, "/readyz", 120_000);
}

/**
 * Start a router process; resolves once /healthz answers 200. The result cache is off unless
 * `resultCache` is set: the router's cost is measured on requests that reach the worker, and the
 * bench repeats its texts, which the cache would answer itself (and coalesce when in flight).
 */
export async function startRouter(resultCache = false): Promise<Service> {
  const port = freePort();
  const env: Record<string, string> = {
    SVC_HOST: "127.0.0.1",
    SVC_PORT: String(port),
    SVC_WORKER_TOKEN: BENCH_FLEET_TOKEN,
    SVC_LOG_LEVEL: "warn",
  };
  if (!resultCache) env.SVC_RESULT_CACHE_BYTES = "0";
  // As deployed: `deno task router`'s V8 flags (a bounded young generation).
  const v8 = await routerV8Flags();
  const proc = spawnDeno(["-P=router", ...(v8 ? [`--v8-flags=${v8}`] : []), "router/main.ts"], env);
  return await serviceWhenOk(proc, `http://127.0.0.1:${port}`, "/healthz", 30_000);
}

/** `proc` as a service once `GET url+probe` answers 2xx; killed when it does not in time. */
export async function serviceWhenOk(
  proc: Proc,
  url: string,
  probe: string,
  timeoutMs: number,
): Promise<Service> {
  try {
    await waitFor(() => isOk(`${url}${probe}`), `${url}${probe}`, {
      timeoutMs,
      everyMs: 100,
      proc,
      retryErrors: true,
    });
    return { proc, url };
  } catch (err) {
    await proc.kill();
    throw err;
  }
}

/**
 * Register the worker at `workerUrl` with a second router over HTTP (the HTTP transport), from
 * this process: a fleet link announcing the bench model loaded, pointing the router at the
 * worker's own port. The same worker process then serves both routers, one over the connection
 * it dialled and one over HTTP, so the two transports are compared on one worker.
 */
export function linkOverHttp(routerUrl: string, workerUrl: string): FleetLink {
  const loaded = [{ name: BENCH_MODEL, bundle: "default", state: "loaded" }];
  const link = startFleetLink({
    fleet: loadWorkerSettings({
      SVC_ROUTER_URL: routerUrl,
      SVC_WORKER_TOKEN: BENCH_FLEET_TOKEN,
      SVC_WORKER_ID: "bench-worker-http",
      SVC_MACHINE_PROFILE: "cpu",
      SVC_WORKER_TRANSPORT: "http",
      SVC_ADVERTISE_URL: workerUrl,
    }).fleet,
    port: null,
    servedModels: () => loaded,
    status: () => ({
      models: loaded.map((m) => ({ name: m.name, state: "loaded" as const, queue_depth: 0 })),
      queue_depth: 0,
      in_flight: 0,
      memory_used_bytes: 0,
      memory_total_bytes: 0,
      draining: false,
    }),
    log: () => {},
  });
  if (!link) throw new Error("fleet link not started");
  return link;
}

/** Resolves once the router reports at least one healthy worker. */
export async function waitForFleet(router: Service, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const res = await fetch(`${router.url}/readyz`);
      const body = await res.json() as { healthy_workers?: number };
      return (body.healthy_workers ?? 0) >= 1;
    },
    "a worker registered with the router",
    { timeoutMs, everyMs: 100, proc: router.proc, retryErrors: true },
  );
}

async function isOk(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await res.body?.cancel();
  return res.ok;
}
