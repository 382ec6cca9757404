/** Composition root of a worker: settings → catalog, weights, registry, metrics, HTTP app. */
import type { Hono } from "hono";
import { limitsFromEnv } from "@svc/shared/codec/limits";
import { loadCatalog } from "./catalog/loader.ts";
import { loadWorkerConfig, type WorkerConfig } from "./config/config.ts";
import { ModelRegistry } from "./registry/registry.ts";
import { memoryProbeFor } from "./registry/memory.ts";
import { threadBackend } from "./inference/thread_backend.ts";
import { gpuInventory } from "./telemetry/gpu.ts";
import { parseFleetConfig, workerBundle } from "./fleet/config.ts";
import { weightStoreFromEnv } from "./weights/from_env.ts";
import { WorkerMetrics } from "./telemetry/metrics.ts";
import { createLogger, type Logger } from "./telemetry/logger.ts";
import { createWorkerApp } from "./server/app.ts";
import type { WorkerContext } from "./server/context.ts";
import { ServingState } from "./server/state.ts";
import { refreshModelGauges } from "./telemetry/model_gauges.ts";
import { mountStatusStream, type StatusStream } from "./status/mod.ts";
import { mountWorkerDashboard } from "./dashboard/mod.ts";

/** A composed worker, not yet listening. */
export interface WorkerInstance {
  app: Hono;
  ctx: WorkerContext;
  /** The /ws/status stream. */
  status: StatusStream;
  /** Load every `SVC_PRELOAD_MODELS` model, then mark the worker ready. */
  preload(): Promise<void>;
  /** Close status clients, stop telemetry timers, unload every model. */
  close(): Promise<void>;
}

/** Secrets that must never appear in logs. */
export function secretsOf(env: Record<string, string | undefined>): (string | undefined)[] {
  const keys = (env.SVC_API_KEYS ?? "").split(",").map((k) => k.trim());
  return [env.HF_TOKEN, env.SVC_WORKER_TOKEN, ...keys];
}

/** Pick the execution device: `auto` means CUDA when a GPU was detected. */
export function chooseDevice(config: WorkerConfig, gpuCount: number): "cpu" | "cuda" {
  if (config.SVC_DEVICE === "cpu") return "cpu";
  if (config.SVC_DEVICE === "cuda") return "cuda";
  return gpuCount > 0 ? "cuda" : "cpu";
}

/** Build a worker from an environment record. */
export async function createWorker(
  env: Record<string, string | undefined>,
  opts: { log?: Logger; gpuCount?: number } = {},
): Promise<WorkerInstance> {
  const config = loadWorkerConfig(env);
  const log = opts.log ?? createLogger({
    json: config.SVC_LOG_JSON,
    level: config.SVC_LOG_LEVEL,
    secrets: secretsOf(env),
  });
  const limits = limitsFromEnv(env);
  // Fleet settings are checked now, not after preloading: a bad value must stop start-up.
  parseFleetConfig(env, config.SVC_PORT);
  const catalog = await loadCatalog({
    modelsDir: config.SVC_MODELS_DIR,
    filter: config.SVC_MODEL_FILTER,
  });
  const weights = weightStoreFromEnv(
    (name) => name === "SVC_CACHE_DIR" ? config.cacheDir : env[name],
    (e) => log.log("info", "weights fetched", { ...e }),
  );
  const metrics = new WorkerMetrics();
  // Only `auto` needs to look for GPUs; nvidia-smi is absent (and skipped) on CPU machines.
  const gpuCount = opts.gpuCount ??
    (config.SVC_DEVICE === "auto" ? (await gpuInventory()).length : 0);
  const device = chooseDevice(config, gpuCount);
  const registry = new ModelRegistry({
    catalog,
    weights,
    backend: threadBackend({ device, intraOpThreads: config.SVC_INTRA_OP_THREADS }),
    maxBatchItems: config.SVC_MAX_BATCH_REQUESTS,
    maxWaitMs: config.SVC_MAX_BATCH_WAIT_MS,
    maxQueueItems: config.SVC_MAX_QUEUE_ITEMS,
    maxLoadedModels: config.SVC_MAX_LOADED_MODELS,
    maxRunTokens: config.SVC_MAX_RUN_TOKENS,
    memoryThresholdPercent: config.SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT,
    memoryProbe: memoryProbeFor(),
    onEvent: (event, fields) =>
      log.log(event === "model_load_failed" ? "error" : "info", event, fields),
    onBatch: (model, s) => {
      metrics.batchSize.observe({ model }, s.size);
      metrics.tokens.inc({ model }, s.tokens);
      metrics.paddedTokens.inc({ model }, s.paddedTokens);
    },
  });
  const ctx: WorkerContext = {
    config,
    registry,
    metrics,
    log,
    state: new ServingState(),
    limits,
    bundle: workerBundle(env),
    startedAt: Date.now(),
  };
  const app = createWorkerApp(ctx);
  app.get("/metrics", async () => {
    refreshModelGauges(ctx);
    const { body, contentType } = await metrics.render();
    return new Response(body, { headers: { "content-type": contentType } });
  });
  const status = mountStatusStream(app, ctx);
  mountWorkerDashboard(app);
  return {
    app,
    ctx,
    status,
    async preload() {
      for (const name of config.SVC_PRELOAD_MODELS ?? []) {
        try {
          await registry.acquire(registry.resolve(name), 3_600_000);
        } catch (err) {
          log.log("error", "preload failed", { model: name, error: (err as Error).message });
        }
      }
      ctx.state.ready = true;
    },
    async close() {
      await status.close();
      metrics.close();
      await registry.closeAll();
    },
  };
}
