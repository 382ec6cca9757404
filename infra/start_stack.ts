/**
 * The stack of `deno task start` (entry point: infra/start_embedded.ts): the whole service on one machine, in one process — the router on SVC_PORT
 * (default 8080, on 127.0.0.1 unless SVC_HOST says otherwise) and one local worker on a private
 * port of 127.0.0.1 that serves every bundle and dials back to the router like any fleet worker.
 * Requests without X-SVC-MACHINE-PROFILE go to the local worker's pool, so plain
 * `curl localhost:8080/v1/...` works.
 *
 * Offline first: the fixture models are written into SVC_OFFLINE_MODELS_DIR on first start and
 * served from there, so the docs' examples answer without a model hub; GloVe is built there
 * in the background on first start (offline_glove.ts) and served once built, without a restart.
 * The built-in catalog still loads from the hub when it is reachable.
 *
 * Everything is in-process: the `start` permission set is the worker's plus running npm (the
 * GloVe build) and ps (launcher_watch.ts: the stack stops when `npm start` is gone).
 * Settings: every router and worker SVC_* variable applies; in addition the START_SCHEMA ones,
 * and SVC_WORKER_TOKEN is shared by both sides (default: a random token for this run).
 */
import { COMMON_FIELDS, ConfigError, type Env, processHelp, serverArgs } from "@svc/shared/config";
import { listenFailureLine } from "@svc/shared/http/listen_error";
import { createLogger, type Logger } from "@svc/shared/log";
import { loadRouterSettings, ROUTER_REFERENCE } from "@svc/router/settings";
import { parseCidr, type RunningRouter, startRouter } from "@svc/router";
import { WORKER_REFERENCE, WORKER_SETTING_NAMES } from "@svc/worker/settings";
import { createWorker, runWorkerProcess, type WorkerInstance } from "@svc/worker";
import { gpuInventory, machineProfileOfGpus } from "@svc/worker/gpu";
import { ALL_BUNDLES } from "@svc/shared/catalog/bundles";
import { START_REFERENCE, START_SCHEMA, type StartSettings } from "./start_settings.ts";
import { type OfflineModels, prepareOfflineModels } from "./offline_models.ts";
import { buildGloveInBackground } from "./offline_glove.ts";
import { launcherGone } from "./launcher_watch.ts";

/** A random token for this run (never printed). */
function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** This machine's profile: SVC_MACHINE_PROFILE, else the detected GPU type, else `cpu`. */
async function localMachineProfile(env: Env): Promise<string> {
  const set = env.SVC_MACHINE_PROFILE?.trim().toLowerCase();
  if (set) return set;
  // The same cached detection the worker uses (a failure reads as no GPU: `cpu`).
  return machineProfileOfGpus(await gpuInventory());
}

/** Print one line and stop: start-up failures never end in a stack trace. */
function fail(line: string): never {
  console.error(`start: ${line}`);
  Deno.exit(2);
}

/** The offline models, prepared on first start; undefined when the user chose their own. */
async function offlineModels(env: Env, start: StartSettings): Promise<OfflineModels | undefined> {
  if (!start.SVC_OFFLINE_MODELS || env.SVC_MODELS_DIR?.trim()) return undefined;
  const dir = start.SVC_OFFLINE_MODELS_DIR!;
  const t0 = performance.now();
  try {
    const models = await prepareOfflineModels(dir, () => {
      console.log(`start: first start: writing the offline fixture models into ${dir} …`);
    });
    if (models.generated) {
      const s = ((performance.now() - t0) / 1000).toFixed(1);
      console.log(`start: offline models written in ${s} s (reused on later starts)`);
    }
    return models;
  } catch (err) {
    fail(
      `cannot prepare the offline models in ${dir} (SVC_OFFLINE_MODELS_DIR): ` +
        `${(err as Error).message}; set SVC_OFFLINE_MODELS=0 to start without them`,
    );
  }
}

/**
 * Lines that say nothing new on one machine go to debug: the start-up steps the banner sums up,
 * and the worker's access line (the router's is the one line per request).
 */
const QUIET = new Set([
  // The banner sums up each SVC_MODELS model (the worker's line lists every detected setting).
  "model_configured",
  "router listening",
  "worker listening",
  "worker ready",
  "joining the fleet",
  "registered with the router",
  "worker registered",
  "request",
]);

/** `log` with the QUIET messages of `component` demoted to debug. */
function quieter(log: Logger, component: "router" | "worker"): Logger {
  return (level, msg, fields) =>
    log(
      QUIET.has(msg) && (component === "worker" || msg !== "request") ? "debug" : level,
      msg,
      fields,
    );
}

/** Bound on waiting for the local worker to register before the banner is printed anyway. */
const REGISTER_WAIT_MS = 30_000;

/** How often the wait for the local worker says it is still waiting. */
const WAIT_NOTE_EVERY_MS = 5000;

/**
 * Resolves once a worker is registered with the router (or after REGISTER_WAIT_MS), with a line
 * every WAIT_NOTE_EVERY_MS meanwhile: the worker loads the models named in SVC_MODELS and
 * SVC_PRELOAD_MODELS first, which may take minutes.
 */
async function registered(router: RunningRouter): Promise<boolean> {
  const started = Date.now();
  const until = started + REGISTER_WAIT_MS;
  let noted = started;
  while (Date.now() < until) {
    if (router.directory.snapshot().some((w) => !w.draining)) return true;
    await new Promise((r) => setTimeout(r, 25));
    if (Date.now() - noted >= WAIT_NOTE_EVERY_MS) {
      noted = Date.now();
      const s = ((noted - started) / 1000).toFixed(0);
      console.log(
        `start: waiting for the local worker (${s} s): it loads the models of SVC_MODELS and ` +
          "SVC_PRELOAD_MODELS before it is ready …",
      );
    }
  }
  return false;
}

/** One line per SVC_MODELS entry: what it was configured as, or why it could not be. */
function userModelLines(worker: WorkerInstance, apiUrl: string): string[] {
  const { catalog } = worker.ctx;
  const pending = new Map(catalog.pendingEntries().map((p) => [p.id, p]));
  return worker.settings.catalog.entries.map((e) => {
    const p = pending.get(e.id);
    if (p) {
      return p.state === "failed"
        ? `SVC_MODELS: ${e.id} failed: ${p.lastError?.message}`
        : `SVC_MODELS: ${e.id} is still being configured`;
    }
    const c = catalog.get(e.id);
    if (!c) return `SVC_MODELS: ${e.id} is not served`;
    const dims = Object.entries(c.dims)
      .map(([k, v]) => k === "dense" ? `${v} dims` : `${v} ${k} dims`).join(", ");
    const what = [
      c.family,
      c.pooling !== "none" ? `${c.pooling} pooling` : undefined,
      dims || undefined,
      `max ${c.max_sequence_length} tokens`,
    ].filter(Boolean).join(", ");
    return `SVC_MODELS: ${e.id} ready (${what}); what was read from which file: GET ` +
      `${apiUrl}/v1/models/${e.id}`;
  });
}

/** The first lines a person reads: where the API and the dashboard are, and what is ready. */
function banner(
  router: RunningRouter,
  offline: OfflineModels | undefined,
  start: StartSettings,
  worker: WorkerInstance,
): string[] {
  const lines = [
    `API:       ${router.url}/v1/  (e.g. POST ${router.url}/v1/encode/fixture/dense)`,
    `dashboard: ${router.url}/`,
  ];
  if (offline) {
    lines.push(`offline models ready (${offline.ids.length}): ${offline.ids.join(", ")}`);
    if (!offline.glove && !start.SVC_OFFLINE_GLOVE) {
      lines.push(
        "glove/6B-100d: off (SVC_OFFLINE_GLOVE=0); build it with " +
          `npx deno task models:glove --out ${start.SVC_OFFLINE_MODELS_DIR} , then restart`,
      );
    }
  } else {
    lines.push("offline models: off (SVC_OFFLINE_MODELS=0 or SVC_MODELS_DIR set)");
  }
  lines.push(...userModelLines(worker, router.url));
  lines.push("built-in catalog models load from the model hub on first use (GET /v1/models)");
  return lines.map((l) => `start: ${l}`);
}

/** `deno task start --help`. */
function startHelp(): string {
  return processHelp({
    usage: "usage: [SVC_*=value ...] npm start   (or: npx deno task start)",
    about:
      "Router on SVC_PORT (8080, on 127.0.0.1 unless SVC_HOST) plus one local worker serving\n" +
      "every bundle, offline models included; it is ready (/readyz 200, the banner) once its\n" +
      "worker has registered. Every router and worker setting applies, and these:",
    sections: [
      ...START_REFERENCE,
      { id: "router and worker", fields: COMMON_FIELDS },
      ...WORKER_REFERENCE,
      ...ROUTER_REFERENCE,
    ],
  });
}

/** Start router + worker; returns when the worker process lifecycle ends (it exits itself). */
export async function main(): Promise<void> {
  const asked = serverArgs(Deno.args, startHelp, "deno task start");
  if (asked) {
    (asked.code === 0 ? console.log : console.error)(asked.out);
    Deno.exit(asked.code);
  }
  // Watched from the first moment: a launcher may go while the stack is still starting.
  const launcherExited = launcherGone();
  const env = Deno.env.toObject();
  const token = env.SVC_WORKER_TOKEN?.trim() || randomToken();
  let routerSettings;
  let start: StartSettings;
  try {
    start = START_SCHEMA.load(env);
    routerSettings = loadRouterSettings({
      ...env,
      // A local stack is not exposed by default; deployments set SVC_HOST=0.0.0.0 explicitly.
      SVC_HOST: env.SVC_HOST?.trim() || "127.0.0.1",
      SVC_WORKER_TOKEN: token,
      SVC_DEFAULT_MACHINE_PROFILE: env.SVC_DEFAULT_MACHINE_PROFILE ||
        await localMachineProfile(env),
      // Ready means the local worker serves: until it registers, requests would answer 202.
      SVC_READYZ_REQUIRE_WORKER: env.SVC_READYZ_REQUIRE_WORKER?.trim() || "1",
    }, [...WORKER_SETTING_NAMES, ...START_SCHEMA.names]);
  } catch (err) {
    fail(`invalid configuration: ${(err as Error).message}`);
  }
  const machineProfile = routerSettings.pools.defaultMachineProfile!;
  const offline = await offlineModels(env, start);
  let router: RunningRouter;
  try {
    router = await startRouter(routerSettings, {
      log: quieter(
        createLogger({
          ...routerSettings.log,
          component: "router",
          secrets: routerSettings.secrets,
        }),
        "router",
      ),
      // Its own worker, on this machine's loopback, even when the router listens on 0.0.0.0.
      trustedWorkerNetworks: [parseCidr("127.0.0.1/32")!],
    });
  } catch (err) {
    const { host, port } = routerSettings.listen;
    fail(
      listenFailureLine(err, {
        what: "router",
        host,
        port,
      }) ?? `router failed to start: ${(err as Error).message}`,
    );
  }
  const workerEnv: Env = {
    ...env,
    // The worker is private: only the router (same process, loopback) talks to it.
    SVC_HOST: "127.0.0.1",
    SVC_PORT: String(start.SVC_WORKER_PORT),
    SVC_ROUTER_URL: router.url,
    SVC_WORKER_TOKEN: token,
    SVC_MACHINE_PROFILE: machineProfile,
    SVC_ADVERTISE_URL: undefined,
    SVC_BUNDLE: env.SVC_BUNDLE?.trim() || ALL_BUNDLES,
    ...(offline
      ? { SVC_MODELS_DIR: offline.modelsDir, SVC_CLUSTER_CACHE: offline.clusterCache }
      : {}),
  };
  let worker;
  try {
    // The router already warned about unknown names: the worker sees the same environment.
    const alsoKnown = Object.keys(env);
    worker = await createWorker(workerEnv, {
      alsoKnown,
      // One output for both: the worker's lines must not carry the router's secrets either.
      secrets: routerSettings.secrets,
      wrapLog: (log) => quieter(log, "worker"),
    });
  } catch (err) {
    const what = err instanceof ConfigError ? "invalid configuration: " : "";
    await router.close();
    fail(`worker failed to start: ${what}${(err as Error).message}`);
  }
  // The worker's lifecycle owns SIGINT/SIGTERM: it drains (telling the router), then exits
  // the process, which also ends the router. It stops the same way when a launcher of this
  // process (npm, the deno task runner) is gone, and stops npm if the GloVe build runs it.
  const shutdown = new AbortController();
  let glove: Promise<boolean> | undefined;
  const running = runWorkerProcess(worker, {
    stopWhen: launcherExited.then((why) => {
      try {
        console.error(`start: ${why}; stopping the stack`);
      } catch {
        // The terminal went with the launcher: stop all the same.
      }
      return "launcher gone";
    }),
    onShutdown: async () => {
      shutdown.abort();
      await glove;
    },
  });
  const shown = registered(router).then((ok) => {
    if (!ok) console.log("start: the local worker has not registered yet; requests answer 202");
    for (const line of banner(router, offline, start, worker)) console.log(line);
  });
  // After the banner, so that the worker is up before the CPU-heavy build starts.
  // It never throws: a failure is one line and the fixtures stay served.
  if (offline && !offline.glove && start.SVC_OFFLINE_GLOVE) {
    glove = shown.then(() =>
      buildGloveInBackground({
        dir: start.SVC_OFFLINE_MODELS_DIR!,
        packageDir: start.SVC_OFFLINE_GLOVE_PACKAGE_DIR,
        catalog: worker.ctx.catalog,
        filter: worker.settings.catalog.filter,
        apiUrl: router.url,
        print: (line) => console.log(line),
        signal: shutdown.signal,
      })
    );
  }
  try {
    await Promise.all([running, shown]);
  } catch (err) {
    await router.close();
    fail(
      listenFailureLine(err, {
        what: "local worker",
        host: "127.0.0.1",
        port: start.SVC_WORKER_PORT,
        portSetting: "SVC_WORKER_PORT",
      }) ?? `worker failed: ${(err as Error).message}`,
    );
  }
}
