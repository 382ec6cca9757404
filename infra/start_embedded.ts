/**
 * `deno task start`: the whole service on one machine, in one process — the router on SVC_PORT
 * (default 8080, the public port) and one local worker on a private port of 127.0.0.1 that dials
 * back to the router like any fleet worker. Requests without X-SVC-MACHINE-PROFILE go to the
 * local worker's pool, so plain `curl localhost:8080/v1/...` works.
 *
 * Everything is in-process because the `worker` permission set may run only nvidia-smi.
 * Settings: every router and worker SVC_* variable applies; in addition SVC_WORKER_PORT (below),
 * and SVC_WORKER_TOKEN is shared by both sides (default: a random token for this run).
 */
import { ConfigError, type Env } from "@svc/shared/config";
import { loadRouterSettings } from "../router/settings.ts";
import { startRouter } from "../router/server.ts";
import { createWorker } from "../worker/bootstrap.ts";
import { WORKER_SETTING_NAMES } from "../worker/config/settings.ts";
import { START_SCHEMA } from "./start_settings.ts";
import { runWorkerProcess } from "../worker/server/lifecycle.ts";
import { gpuInventory, profileOfGpus } from "../worker/telemetry/gpu.ts";

/** A random token for this run (never printed). */
function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** This machine's profile: SVC_MACHINE_PROFILE, else the detected GPU type, else `cpu`. */
async function localProfile(env: Env): Promise<string> {
  const set = env.SVC_MACHINE_PROFILE?.trim().toLowerCase();
  if (set) return set;
  // The same cached detection the worker uses (a failure reads as no GPU: `cpu`).
  return profileOfGpus(await gpuInventory());
}

/** Start router + worker; returns when the worker process lifecycle ends (it exits itself). */
async function main(): Promise<void> {
  const env = Deno.env.toObject();
  const token = env.SVC_WORKER_TOKEN?.trim() || randomToken();
  const profile = await localProfile(env);
  let routerSettings;
  let start;
  try {
    start = START_SCHEMA.load(env);
    routerSettings = loadRouterSettings({
      ...env,
      SVC_WORKER_TOKEN: token,
      SVC_DEFAULT_MACHINE_PROFILE: env.SVC_DEFAULT_MACHINE_PROFILE || profile,
    }, [...WORKER_SETTING_NAMES, ...START_SCHEMA.names]);
  } catch (err) {
    console.error(`start: invalid configuration: ${(err as Error).message}`);
    Deno.exit(2);
  }
  const router = await startRouter(routerSettings);
  const workerEnv: Env = {
    ...env,
    // The worker is private: only the router (same process, loopback) talks to it.
    SVC_HOST: "127.0.0.1",
    SVC_PORT: String(start.SVC_WORKER_PORT),
    SVC_ROUTER_URL: router.url,
    SVC_WORKER_TOKEN: token,
    SVC_MACHINE_PROFILE: profile,
    SVC_ADVERTISE_URL: undefined,
  };
  let worker;
  try {
    worker = await createWorker(workerEnv, {
      // The router already warned about unknown names: the worker sees the same environment.
      alsoKnown: Object.keys(env),
      // One output for both: the worker's lines must not carry the router's secrets either.
      secrets: routerSettings.secrets,
    });
  } catch (err) {
    const what = err instanceof ConfigError ? "invalid configuration: " : "";
    console.error(`start: worker failed to start: ${what}${(err as Error).message}`);
    await router.close();
    Deno.exit(2);
  }
  // The worker's lifecycle owns SIGINT/SIGTERM: it drains (telling the router), then exits
  // the process, which also ends the router.
  await runWorkerProcess(worker);
}

if (import.meta.main) await main();
