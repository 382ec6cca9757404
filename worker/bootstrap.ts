/** Composition root of a worker: settings → catalog, weights, registry, metrics, HTTP app. */
import type { Hono } from "hono";
import type { Env } from "@svc/shared/config";
import { loadCatalog } from "./catalog/loader.ts";
import { catalogForDevice } from "./catalog/device_files.ts";
import { loadWorkerSettings, type WorkerSettings } from "./config/settings.ts";
import { ModelRegistry } from "./registry/registry.ts";
import { memoryProbeFor } from "./registry/memory.ts";
import { threadBackend } from "./inference/thread_backend.ts";
import type { ModelBackend } from "./registry/runner.ts";
import { computeThreads } from "./inference/compute_budget.ts";
import { gpuInventory } from "./telemetry/gpu.ts";
import {
  applyAttentionBackend,
  cudaProviderProblem,
  GPU_SETUP_COMMAND,
} from "./inference/cuda_provider.ts";
import { probeCuda } from "./inference/cuda_probe.ts";
import { repoListerFrom, weightStoreFrom } from "./weights/settings.ts";
import { userModelEntry } from "./catalog/user_models.ts";
import type { DeferredEntry } from "./catalog/deferred.ts";
import { ServedCatalog } from "./catalog/served.ts";
import { FetchSummary } from "./weights/fetch_summary.ts";
import { WeightSourcesState } from "./weights/sources_state.ts";
import { WorkerMetrics } from "./telemetry/metrics.ts";
import { createLogger, type Logger } from "@svc/shared/log";
import { BodyBudget } from "@svc/shared/http/body_budget";
import type { DirectHandler } from "@svc/shared/http/direct_call";
import { createWorkerApp } from "./server/app.ts";
import { workerKeyCheck } from "./server/api_key.ts";
import { modelRouteHandler } from "./server/model_routes.ts";
import { workerSteps } from "./server/pipeline.ts";
import type { WorkerContext } from "./server/context.ts";
import { ServingState } from "./server/state.ts";
import { refreshModelGauges } from "./telemetry/model_gauges.ts";
import { mountStatusStream, type StatusStream } from "./status/mod.ts";
import { mountWorkerDashboard } from "./dashboard/mod.ts";
import { ImagePool } from "./images/pool.ts";

/** A composed worker, not yet listening. */
export interface WorkerInstance {
  /** Every route but the model operations. */
  app: Hono;
  /** The model operations (served before `app` is asked; see server/model_routes.ts). */
  direct: DirectHandler;
  /** The settings it was built from (parsed once, here). */
  settings: WorkerSettings;
  ctx: WorkerContext;
  /** The /ws/status stream. */
  status: StatusStream;
  /**
   * Configure every `SVC_MODELS` entry from its files, load every `SVC_PRELOAD_MODELS` model,
   * then mark the worker ready.
   */
  preload(): Promise<void>;
  /** Close status clients, stop telemetry timers, unload every model. */
  close(): Promise<void>;
}

/** Pick the execution device: `auto` means CUDA when a GPU was detected. */
export function chooseDevice(device: WorkerSettings["device"], gpuCount: number): "cpu" | "cuda" {
  if (device === "cpu") return "cpu";
  if (device === "cuda") return "cuda";
  return gpuCount > 0 ? "cuda" : "cpu";
}

/** Options of {@link createWorker} beyond the environment. */
export interface CreateWorkerOptions {
  log?: Logger;
  /**
   * Where the lines of the logger built from the settings go (default: standard output); tests
   * keep them, redacted as the process would write them.
   */
  writeLog?: (line: string) => void;
  gpuCount?: number;
  /** Other settings this process reads (`deno task start`: the router's), not typos. */
  alsoKnown?: readonly string[];
  /** More secrets to keep out of the worker's log lines (`deno task start`: the router's). */
  secrets?: readonly string[];
  /** Adjusts the logger built from the settings (`deno task start` demotes repeated lines). */
  wrapLog?: (log: Logger) => Logger;
  /**
   * Why CUDA cannot be used here, or undefined (default: the provider's files, then a probe
   * session; tests give their own).
   */
  cudaCheck?: () => Promise<string | undefined>;
  /**
   * What runs the models, instead of ONNX Runtime in inference threads (tests hand in a fake
   * runner, to check what the HTTP surface does without loading a model). Its device is the
   * worker's: SVC_DEVICE is not read, and no GPU is looked for.
   */
  backend?: ModelBackend;
}

/** Start-up failed for a reason the operator fixes (printed as one line, exit 2). */
export class StartupError extends Error {}

/**
 * Why ONNX Runtime cannot run on CUDA here: its provider's files (the cheap, exact check), then a
 * session of a one-node graph with the CUDA provider alone (driver, CUDA and cuDNN libraries, a
 * GPU). Undefined when CUDA works.
 */
export async function cudaUnavailable(): Promise<string | undefined> {
  const files = await cudaProviderProblem();
  if (files) return files;
  const probe = await probeCuda();
  if (probe === undefined) return undefined;
  return `ONNX Runtime cannot start its CUDA provider (${probe}); check the NVIDIA driver and ` +
    `the CUDA 12 and cuDNN 9 libraries: ${GPU_SETUP_COMMAND} --check (docs/gpu.md)`;
}

/**
 * Build a worker from an environment record: its settings are parsed here, once (a bad value
 * throws a ConfigError naming the variable), and every subsystem gets its slice.
 */
export async function createWorker(
  env: Env,
  opts: CreateWorkerOptions = {},
): Promise<WorkerInstance> {
  const settings = loadWorkerSettings(env, opts.alsoKnown);
  const built = opts.log ?? createLogger({
    ...settings.log,
    component: "worker",
    secrets: [...settings.secrets, ...opts.secrets ?? []],
    write: opts.writeLog,
  });
  const log = opts.wrapLog ? opts.wrapLog(built) : built;
  for (const w of settings.warnings) log("warn", w);
  const fileCatalog = await loadCatalog(settings.catalog);
  // Each file at debug; one line per model with the totals when its load ends.
  const fetches = new FetchSummary();
  const weightSources = new WeightSourcesState(settings.weights);
  const weights = weightStoreFrom(settings.weights, (e) => {
    fetches.add(e);
    if (e.bytes > 0 && e.source !== "local-cache") weightSources.reachable();
    log("debug", "weight file fetched", { ...e });
  });
  const metrics = new WorkerMetrics();
  // Only `auto` needs to look for GPUs; nvidia-smi is absent (and skipped) on CPU machines.
  const gpuCount = opts.backend ? 0 : opts.gpuCount ??
    (settings.device === "auto" ? (await gpuInventory()).length : 0);
  let device = opts.backend?.device ?? chooseDevice(settings.device, gpuCount);
  if (device === "cuda" && !opts.backend) {
    // Found now, not as a failure of every model after the worker reported ready.
    const problem = await (opts.cudaCheck ?? cudaUnavailable)();
    if (problem !== undefined && settings.device === "cuda") {
      throw new StartupError(`SVC_DEVICE=cuda, but ${problem}`);
    }
    if (problem !== undefined) {
      log("warn", "SVC_DEVICE=auto: GPU found, running on the CPU", {
        gpus: gpuCount,
        reason: problem,
      });
      device = "cpu";
    }
  }
  // Before any model session: ONNX Runtime reads its attention switches when a CUDA session
  // first runs attention. A CPU worker leaves the environment alone (the setting has no effect).
  if (device === "cuda" && settings.attentionBackend !== "auto") {
    const set = applyAttentionBackend(settings.attentionBackend);
    log("info", "attention backend", { backend: settings.attentionBackend, ort: set });
  }
  // SVC_MODELS: each entry is configured from its own files once the registry exists. A
  // directory (or an entry with explicit settings) replaces a catalog entry of the same id; a
  // bare hub id the catalog already has is served from its curated entry.
  const deferred: DeferredEntry[] = [];
  const lister = repoListerFrom(settings.weights);
  for (const entry of settings.catalog.entries) {
    if (
      entry.kind === "hub" && fileCatalog.has(entry.id) && Object.keys(entry.options).length === 0
    ) {
      log("info", "SVC_MODELS entry is a catalog model: served from its catalog entry", {
        model: entry.id,
      });
      continue;
    }
    fileCatalog.delete(entry.id);
    deferred.push(userModelEntry(entry, {
      store: weights,
      lister,
      workerBundle: settings.bundle,
      device,
      forceFp32: settings.forceFp32,
      json: settings.modelJson,
      followLinks: settings.weights.followLinks,
    }));
  }
  const compute = computeThreads(settings.intraOpThreads);
  metrics.computeThreads.set(compute.cpus);
  log("info", "compute budget", { intra_op_threads: compute.cpus, source: compute.source });
  const onEvent = (event: string, fields: Record<string, unknown>) => {
    // Fetches are filed under the model id, an adapter's under the adapter id.
    if (
      event === "model_load_failed" &&
      (fields.error_class === "hub_unreachable" || fields.error_class === "timeout")
    ) {
      weightSources.unreachable();
    }
    if (event === "model_loaded" || event === "model_load_failed") {
      const totals = typeof fields.model === "string" ? fetches.take(fields.model) : undefined;
      if (totals) log("info", "weights fetched", { model: fields.model, ...totals });
    } else if (event === "lora_loaded" || event === "lora_load_failed") {
      const totals = typeof fields.lora === "string" ? fetches.take(fields.lora) : undefined;
      if (totals) log("info", "weights fetched", { lora: fields.lora, ...totals });
    }
    log(
      event === "model_load_failed"
        ? "error"
        : event === "lora_load_failed" || event === "model_int8_refused" ||
            event === "model_int8_unchecked"
        ? "warn"
        : event === "model_configuring"
        ? "debug"
        : "info",
      event,
      fields,
    );
  };
  const catalog = new ServedCatalog({
    entries: catalogForDevice(fileCatalog, device, settings.forceFp32),
    device,
    cpuMaxItemTokens: settings.scheduling.cpuMaxItemTokens,
    deferred,
    failureCooldownMs: settings.scheduling.loadFailureCooldownMs,
    onEvent,
  });
  const registry = new ModelRegistry({
    ...settings.scheduling,
    catalog,
    weights,
    backend: opts.backend ?? threadBackend({ device, intraOpThreads: compute.cpus }),
    memoryProbe: memoryProbeFor(),
    lora: settings.lora,
    extractBudget: settings.extract,
    jsonBounds: settings.modelJson,
    onEvent,
    onBatch: (model, s) => metrics.observeBatch(model, s.size, s.tokens, s.paddedTokens),
  });
  const imagePool = new ImagePool({
    threads: settings.images.workers,
    perRequest: settings.images.workersPerRequest,
    maxQueue: settings.images.maxQueue,
    decodeTimeoutMs: settings.images.decodeTimeoutMs,
    limits: {
      maxPixels: settings.images.maxPixels,
      maxAspectRatio: settings.images.maxAspectRatio,
      maxJpegScans: settings.images.maxJpegScans,
    },
    onFailure: (error) => log("error", "image preprocessing failed", { error }),
    onAbandoned: (abandoned) =>
      log("warn", "image decode overran SVC_IMAGE_DECODE_TIMEOUT_MS; its thread is set aside", {
        abandoned,
      }),
  });
  const ctx: WorkerContext = {
    settings,
    catalog,
    registry,
    metrics,
    log,
    state: new ServingState(),
    limits: settings.limits,
    images: { pool: imagePool, limits: settings.images },
    body: { ...settings.http.body, budget: new BodyBudget(settings.http.maxInflightBodyBytes) },
    bundle: settings.bundle,
    startedAt: Date.now(),
    weightSources,
  };
  // Which models' weights are on this machine (stats only), for the pages' "not cached".
  registry.refreshPresence().catch(() => {});
  const steps = workerSteps(ctx, workerKeyCheck(settings.apiKey, settings.fleet?.workerId));
  const app = createWorkerApp(ctx, steps);
  const direct = modelRouteHandler(ctx, steps);
  app.get("/metrics", async () => {
    refreshModelGauges(ctx);
    const { body, contentType } = await metrics.render();
    return new Response(body, { headers: { "content-type": contentType } });
  });
  const status = mountStatusStream(app, ctx);
  mountWorkerDashboard(app);
  return {
    app,
    direct,
    settings,
    ctx,
    status,
    async preload() {
      // SVC_MODELS entries are read before the worker says it is ready (and before it joins
      // the fleet, whose registration lists them).
      await catalog.settled();
      for (const name of modelsToPreload(settings, catalog)) {
        log("info", "loading before ready", { model: name });
        try {
          await catalog.settle(name, 3_600_000);
          await registry.acquire(catalog.resolve(name), 3_600_000);
        } catch (err) {
          log("error", "preload failed", { model: name, error: (err as Error).message });
        }
      }
      ctx.state.ready = true;
    },
    async close() {
      await status.close();
      metrics.close();
      await registry.closeAll();
      await imagePool.close();
    },
  };
}

/**
 * The models loaded before `/readyz` is 200: `SVC_PRELOAD_MODELS`, then every `SVC_MODELS` entry
 * that could be configured. A model the user named is one they mean to call: ready means it
 * answers at once, not after a load the first request pays unannounced (GloVe took 7.7 s).
 */
function modelsToPreload(
  settings: WorkerSettings,
  catalog: { pendingEntries(): { id: string }[] },
): string[] {
  const failed = new Set(catalog.pendingEntries().map((p) => p.id));
  const named = settings.catalog.entries.map((e) => e.id).filter((id) => !failed.has(id));
  return [...new Set([...settings.preload, ...named])];
}
