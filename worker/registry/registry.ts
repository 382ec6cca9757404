/**
 * Model registry: which models exist, their states, on-demand loading (one shared load per model,
 * bounded waits), memory accounting, and LRU eviction of idle models under memory pressure.
 * States: available → loading → loaded → unloading → available; a failed load is remembered.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { resolveServedName, type ServedModel } from "@svc/shared/catalog";
import { DEFAULT_RETRY_AFTER_S, type ErrorCode, ServiceError } from "@svc/shared/errors";
import type { ModelState } from "@svc/shared/schemas/models";
import type { WeightStore } from "../weights/types.ts";
import { Batcher, type BatchStats } from "../scheduler/batcher.ts";
import { InferenceThread } from "../inference/thread_client.ts";
import { filesSize, type MemoryProbe } from "./memory.ts";

export type { ModelState };

/** A model ready to take work. */
export interface LoadedModel {
  key: string;
  config: ModelConfig;
  batcher: Batcher;
  device: string;
  memoryBytes: number;
}

/** Registry settings and collaborators. */
export interface RegistryOptions {
  catalog: Map<string, ModelConfig>;
  weights: WeightStore;
  device: "cpu" | "cuda";
  intraOpThreads: number;
  maxBatchItems: number;
  maxWaitMs: number;
  maxQueueItems: number;
  maxLoadedModels: number;
  /** Cap on padded tokens per ONNX run (0: automatic per device, see runTokenBudget). */
  maxRunTokens: number;
  memoryThresholdPercent: number;
  memoryProbe: MemoryProbe;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
  onBatch?: (model: string, stats: BatchStats) => void;
}

interface Unit {
  key: string;
  config: ModelConfig;
  modelFile: string;
  state: ModelState;
  lastError: { code: ErrorCode; message: string } | null;
  /** The error a failed load answered with, repeated until the retry pause is over. */
  failure?: ServiceError;
  failedAt: number;
  load?: Promise<LoadedModel>;
  loaded?: LoadedModel & { thread: InferenceThread };
  lastUsed: number;
  inUse: number;
}

/** Snapshot of one model for catalog and status endpoints. */
export interface UnitStatus {
  name: string;
  state: ModelState;
  device: string | null;
  memoryBytes: number;
  queueDepth: number;
  /** Waiting items plus items of the batch being run. */
  pendingItems: number;
  lastError: { code: ErrorCode; message: string } | null;
  config: ModelConfig;
}

/** The worker's model registry. */
export class ModelRegistry {
  readonly #o: RegistryOptions;
  readonly #units = new Map<string, Unit>();

  constructor(opts: RegistryOptions) {
    this.#o = opts;
    for (const c of opts.catalog.values()) this.#unit(c, c.files.model);
  }

  /** The catalog this registry serves. */
  get catalog(): Map<string, ModelConfig> {
    return this.#o.catalog;
  }

  /** Resolve a served name (`id` or `id:profile`); 404 MODEL_NOT_FOUND otherwise. */
  resolve(name: string): ServedModel {
    const r = resolveServedName(name, this.#o.catalog);
    if (!r) throw new ServiceError("MODEL_NOT_FOUND", `model '${name}' is not in the catalog`);
    return r;
  }

  /** State of a model (its default weights file) without loading it. */
  status(id: string): UnitStatus | undefined {
    const c = this.#o.catalog.get(id);
    return c ? this.#status(this.#unit(c, c.files.model)) : undefined;
  }

  /** Every unit's status (one per model and weights variant that has been touched). */
  statuses(): UnitStatus[] {
    return [...this.#units.values()].map((u) => this.#status(u));
  }

  /** Memory in use and available, as eviction sees it (container limit when there is one). */
  memoryUsage(): { usedBytes: number; totalBytes: number } {
    return this.#o.memoryProbe();
  }

  /** The device models run on (`cpu` or `cuda`). */
  get deviceName(): string {
    return this.#o.device;
  }

  /**
   * Get a loaded model, loading it if needed. Waits at most `waitMs`; then 503 MODEL_NOT_LOADED
   * with Retry-After while the load goes on in the background.
   */
  async acquire(served: ServedModel, waitMs: number): Promise<LoadedModel> {
    const modelFile = profileModelFile(served);
    const u = this.#unit(served.config, modelFile);
    u.lastUsed = performance.now();
    if (u.loaded && u.state === "loaded") return u.loaded;
    if (u.state === "unloading") {
      throw this.#notLoaded(`model '${u.config.id}' is unloading`);
    }
    if (!u.load) {
      const retryMs = (DEFAULT_RETRY_AFTER_S.MODEL_NOT_LOADED ?? 5) * 1000;
      if (u.state === "failed" && u.failure && performance.now() - u.failedAt < retryMs) {
        throw u.failure;
      }
      u.load = this.#load(u);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(this.#notLoaded(`model '${u.config.id}' is still loading`)),
        waitMs,
      );
    });
    try {
      return await Promise.race([u.load, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Unload a model (after its queued and running work finishes). */
  async unload(key: string): Promise<void> {
    const u = this.#units.get(key);
    if (!u?.loaded || u.state !== "loaded") return;
    u.state = "unloading";
    const loaded = u.loaded;
    await loaded.batcher.whenIdle();
    await loaded.thread.dispose();
    u.loaded = undefined;
    u.load = undefined;
    u.state = "available";
    this.#o.onEvent?.("model_unloaded", { model: u.config.id, key });
  }

  /** Evict least-recently-used idle models while over the memory threshold or the model cap. */
  async evictIfNeeded(exceptKey?: string): Promise<void> {
    for (;;) {
      const loaded = [...this.#units.values()].filter((u) => u.state === "loaded");
      const pressure = this.#o.memoryProbe().usedPercent;
      const over = pressure > this.#o.memoryThresholdPercent;
      const tooMany = loaded.length >= this.#o.maxLoadedModels && exceptKey !== undefined;
      if (!over && !tooMany) return;
      const victim = loaded
        .filter((u) =>
          u.key !== exceptKey && u.inUse === 0 && !u.loaded!.batcher.busy &&
          u.loaded!.batcher.queueDepth === 0
        )
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (!victim) return;
      this.#o.onEvent?.("model_evicted", {
        model: victim.config.id,
        memory_used_percent: Math.round(pressure * 10) / 10,
        reason: over ? "memory_pressure" : "model_cap",
      });
      await this.unload(victim.key);
    }
  }

  /** Mark a model in use for the duration of `fn` (in-use models are never evicted). */
  async use<T>(m: LoadedModel, fn: () => Promise<T>): Promise<T> {
    const u = this.#units.get(m.key);
    if (u) u.inUse++;
    try {
      return await fn();
    } finally {
      if (u) {
        u.inUse--;
        u.lastUsed = performance.now();
      }
    }
  }

  /** Stop every model within `timeoutMs` (process exit): queued work fails, threads end. */
  async closeAll(timeoutMs = 2000): Promise<void> {
    // Called at process exit, possibly after the drain bound ran out: waiting for queued work
    // here would make that bound meaningless, so fail what is left and stop the threads.
    const stopping = new ServiceError("SHUTTING_DOWN", "worker is shutting down");
    await Promise.all([...this.#units.values()].map(async (u) => {
      const loaded = u.loaded;
      if (!loaded) return;
      u.state = "unloading";
      loaded.batcher.failAll(stopping);
      await loaded.thread.dispose(timeoutMs).catch(() => {});
      u.loaded = undefined;
      u.load = undefined;
      u.state = "available";
    }));
  }

  #unit(config: ModelConfig, modelFile: string): Unit {
    const key = modelFile === config.files.model ? config.id : `${config.id}@${modelFile}`;
    let u = this.#units.get(key);
    if (!u) {
      u = {
        key,
        config,
        modelFile,
        state: "available",
        lastError: null,
        failedAt: 0,
        lastUsed: 0,
        inUse: 0,
      };
      this.#units.set(key, u);
    }
    return u;
  }

  async #load(u: Unit): Promise<LoadedModel> {
    u.state = "loading";
    const started = performance.now();
    this.#o.onEvent?.("model_loading", { model: u.config.id, key: u.key });
    try {
      await this.evictIfNeeded(u.key);
      const wanted: Record<string, string> = { ...u.config.files, model: u.modelFile };
      if (u.modelFile !== u.config.files.model) delete wanted.model_data;
      const files = await this.#o.weights.ensureFiles(
        u.config.hub.repo,
        u.config.hub.revision,
        wanted,
        {
          gated: u.config.hub.gated,
          modelId: u.config.id,
        },
      );
      const runTokens = runTokenBudget(
        u.config.batch_token_budget,
        this.#o.device,
        this.#o.maxRunTokens,
      );
      const thread = await InferenceThread.start({
        config: u.config,
        files,
        executionProviders: this.#o.device === "cuda" ? ["cuda", "cpu"] : ["cpu"],
        intraOpThreads: this.#o.intraOpThreads,
        runTokenBudget: runTokens,
      });
      const memoryBytes = await filesSize([files.model, files.model_data].filter(Boolean));
      const batcher = new Batcher({
        maxBatchItems: this.#o.maxBatchItems,
        batchTokenBudget: u.config.batch_token_budget,
        maxWaitMs: this.#o.maxWaitMs,
        maxQueueItems: this.#o.maxQueueItems,
        run: (items, params) => thread.run(items, params),
        onBatch: (s) => this.#o.onBatch?.(u.config.id, s),
      });
      u.loaded = {
        key: u.key,
        config: u.config,
        batcher,
        device: this.#o.device,
        memoryBytes,
        thread,
      };
      u.state = "loaded";
      u.lastError = null;
      this.#o.onEvent?.("model_loaded", {
        model: u.config.id,
        key: u.key,
        device: this.#o.device,
        memory_bytes: memoryBytes,
        load_ms: Math.round(performance.now() - started),
      });
      return u.loaded;
    } catch (err) {
      const se = err instanceof ServiceError ? err : undefined;
      const message = err instanceof Error ? err.message : String(err);
      u.state = "failed";
      u.failedAt = performance.now();
      u.lastError = { code: se?.code ?? "INTERNAL_ERROR", message };
      u.load = undefined;
      this.#o.onEvent?.("model_load_failed", { model: u.config.id, error: message });
      // Transient causes (network, timeouts) stay 503 + Retry-After; others (gated repo, bad
      // weights) keep their own code so clients do not retry what only an operator can fix.
      const text = `model '${u.config.id}' failed to load: ${message}`;
      u.failure = se && se.code !== "MODEL_NOT_LOADED"
        ? new ServiceError(se.code === "MODEL_NOT_FOUND" ? "INTERNAL_ERROR" : se.code, text)
        : se
        ? this.#notLoaded(text)
        : new ServiceError("INTERNAL_ERROR", text);
      throw u.failure;
    }
  }

  #notLoaded(message: string): ServiceError {
    return new ServiceError("MODEL_NOT_LOADED", message);
  }

  #status(u: Unit): UnitStatus {
    return {
      name: u.key,
      state: u.state,
      device: u.loaded ? u.loaded.device : null,
      memoryBytes: u.loaded?.memoryBytes ?? 0,
      queueDepth: u.loaded?.batcher.queueDepth ?? 0,
      pendingItems: u.loaded?.batcher.pendingItems ?? 0,
      lastError: u.lastError,
      config: u.config,
    };
  }
}

/**
 * Padded tokens one ONNX run may hold. A batch (up to the model's budget) is cut into runs of at
 * most this size inside the thread. On CPU, runs of about 1k tokens are fastest (measured: 4k-token
 * runs were 16–22% slower, attention falls out of cache); GPUs want the whole budget at once.
 */
export function runTokenBudget(modelBudget: number, device: string, cap: number): number {
  const limit = cap > 0 ? cap : device === "cpu" ? CPU_RUN_TOKENS : modelBudget;
  return Math.min(modelBudget, limit);
}

/** Default cap of padded tokens per ONNX run on CPU. */
export const CPU_RUN_TOKENS = 1024;

/** The ONNX file a profile runs (profiles may pick a quantised variant via `model_file`). */
export function profileModelFile(served: ServedModel): string {
  const opt = served.config.profiles[served.profile]?.options?.model_file;
  return typeof opt === "string" && opt.length > 0 ? opt : served.config.files.model;
}
