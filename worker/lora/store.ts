/**
 * The LoRA adapters of one loaded model: fetched through the model weight store (local cache →
 * cluster cache → hub, atomic writes), checked, and built into a session of their own in a thread
 * of their own (ONNX Runtime builds a session synchronously: in the model's thread, every base
 * request would wait for it). At most `maxLoaded` adapters are kept (least recently used idle one
 * evicted, reloaded on demand); a request waits a bounded time for its adapter, then gets
 * 503 LORA_LOADING with Retry-After while the load goes on. A failed load is remembered for a
 * cool-down, so a retry storm gets the same answer at once instead of refetching.
 */
import { ServiceError } from "@svc/shared/errors";
import { deadline } from "@svc/shared/deadline";
import { hidePaths } from "@svc/shared/redact";
import type { WeightStore } from "../weights/types.ts";
import { WeightFileTooLargeError, WeightsError } from "../weights/errors.ts";
import type { LoraLoadSpec } from "../inference/protocol.ts";
import type { WorkItem, WorkParams } from "../families/types.ts";
import type { BatchRunner } from "../scheduler/batcher.ts";
import type { ModelRunner, StartedLora } from "../registry/runner.ts";
import { LoraConfigError, parseLoraConfig } from "./lora_config.ts";
import { LoraMismatchError } from "./plan.ts";
import type { LoraDiskBudget } from "./disk_budget.ts";

/** The files of a PEFT LoRA adapter repository, by role. */
export const LORA_FILES = {
  config: "adapter_config.json",
  weights: "adapter_model.safetensors",
} as const;

/** Largest `adapter_config.json` read (they are a few hundred bytes). */
export const MAX_LORA_CONFIG_BYTES = 1024 * 1024;

/** Failed adapters remembered per model (oldest forgotten first). */
const MAX_REMEMBERED_FAILURES = 256;

/** Starts the runner of adapter `id` (the backend, with the model's load options). */
export type LoraStarter = (id: string, spec: LoraLoadSpec) => Promise<StartedLora>;

/** Settings and collaborators of one model's adapter store. */
export interface LoraStoreOptions {
  /** The base model: catalog id and hub repository. */
  model: { id: string; repo: string };
  weights: WeightStore;
  start: LoraStarter;
  /** Adapters kept loaded (SVC_MAX_LORAS_PER_MODEL). */
  maxLoaded: number;
  /** Largest adapter weights file (SVC_MAX_LORA_BYTES). */
  maxLoraBytes: number;
  /** How long a failed adapter is answered without a new attempt. */
  failureCooldownMs: number;
  /** `SVC_LORA_ALLOW`: the adapters clients may name (absent: any). */
  allowed?: (id: string) => boolean;
  /** `SVC_LORA_DISK_BYTES`: the worker-wide budget of adapter files on disk (absent: none). */
  disk?: LoraDiskBudget;
  now?: () => number;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
}

/** One adapter of the model as status endpoints report it. */
export interface LoraStatus {
  id: string;
  state: "loading" | "loaded";
  memory_bytes: number;
}

interface Entry {
  id: string;
  state: "loading" | "loaded";
  load: Promise<void>;
  controller: AbortController;
  runner?: ModelRunner;
  memoryBytes: number;
  lastUsed: number;
  /** Requests holding the adapter (from acquire to release): never evicted meanwhile. */
  inUse: number;
}

/** The adapters of one loaded model. */
export class LoraStore {
  readonly #o: LoraStoreOptions;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  readonly #failures = new Map<string, { at: number; error: ServiceError }>();
  #closed = false;

  constructor(opts: LoraStoreOptions) {
    this.#o = opts;
    this.#now = opts.now ?? (() => performance.now());
  }

  /**
   * Hold adapter `id` loaded for one request, loading it if needed: resolves with the function
   * that releases it. Waits at most `waitMs` for a load; then 503 LORA_LOADING with Retry-After.
   */
  async acquire(id: string, waitMs: number): Promise<() => void> {
    if (this.#o.allowed && !this.#o.allowed(id)) {
      throw new ServiceError(
        "INVALID_INPUT",
        `options.lora_id '${id}' is not among the adapters this worker serves (SVC_LORA_ALLOW)`,
      );
    }
    for (;;) {
      if (this.#closed) {
        throw new ServiceError("MODEL_NOT_LOADED", `model '${this.#o.model.id}' is unloading`);
      }
      const failure = this.#failures.get(id);
      if (failure) {
        if (this.#now() - failure.at < this.#o.failureCooldownMs) throw failure.error;
        this.#failures.delete(id);
      }
      const e = this.#entries.get(id) ?? this.#start(id);
      if (e.state === "loaded") {
        e.inUse++;
        e.lastUsed = this.#now();
        this.#o.disk?.touch(id);
        return () => {
          e.inUse--;
          e.lastUsed = this.#now();
        };
      }
      await deadline(e.load, waitMs, () => {
        throw new ServiceError(
          "LORA_LOADING",
          `LoRA adapter '${id}' of model '${this.#o.model.id}' is still loading`,
        );
      });
      // Loaded (or evicted again by a race): the loop looks once more.
    }
  }

  /** Run a batch on adapter `id` (held by its requests, so loaded while they wait). */
  run(
    id: string,
    items: WorkItem[],
    params: WorkParams,
    abandoned?: Int32Array,
    requestOf?: number[],
  ): ReturnType<BatchRunner> {
    const runner = this.#entries.get(id)?.runner;
    if (!runner) return Promise.reject(new Error(`LoRA adapter '${id}' is not loaded`));
    return runner.run(items, params, abandoned, requestOf);
  }

  /** Memory held by the loaded adapters' sessions (counted in the model's memory). */
  get memoryBytes(): number {
    let total = 0;
    for (const e of this.#entries.values()) total += e.memoryBytes;
    return total;
  }

  /** Adapters loading or loaded, most recently used first. */
  statuses(): LoraStatus[] {
    return [...this.#entries.values()]
      .sort((a, b) => b.lastUsed - a.lastUsed)
      .map((e) => ({ id: e.id, state: e.state, memory_bytes: e.memoryBytes }));
  }

  /** Stop fetches and release every adapter (the model unloads), each within `timeoutMs`. */
  async close(timeoutMs?: number): Promise<void> {
    this.#closed = true;
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    for (const e of entries) e.controller.abort();
    await Promise.all(entries.map((e) => e.runner?.dispose(timeoutMs).catch(() => {})));
  }

  /** Start loading `id`, first making room: the LRU idle adapter goes when the cap is reached. */
  #start(id: string): Entry {
    if (this.#entries.size >= this.#o.maxLoaded) this.#evictOne();
    const e: Entry = {
      id,
      state: "loading",
      load: Promise.resolve(),
      controller: new AbortController(),
      memoryBytes: 0,
      lastUsed: this.#now(),
      inUse: 0,
    };
    this.#entries.set(id, e);
    this.#o.onEvent?.("lora_loading", { model: this.#o.model.id, lora: id });
    const started = performance.now();
    e.load = this.#load(e).catch((err) => {
      if (this.#entries.get(id) === e) this.#entries.delete(id);
      const error = this.#answer(id, err);
      if (!e.controller.signal.aborted) this.#remember(id, error);
      // A refused adapter is not kept on disk: any client can name one, and the failure is
      // remembered for the cool-down anyway.
      if (error.code === "INVALID_INPUT") {
        this.#o.disk?.forget(id);
        this.#o.weights.discard?.(id, "main", { ...LORA_FILES }).catch(() => {});
      }
      this.#o.onEvent?.("lora_load_failed", {
        model: this.#o.model.id,
        lora: id,
        code: error.code,
        error: err instanceof Error ? err.message : String(err),
        load_ms: Math.round(performance.now() - started),
      });
      throw error;
    });
    // Requests observe the outcome; this keeps a load nobody waits for from being "unhandled".
    e.load.catch(() => {});
    return e;
  }

  #evictOne(): void {
    const victim = [...this.#entries.values()]
      .filter((e) => e.state === "loaded" && e.inUse === 0)
      .sort((a, b) => a.lastUsed - b.lastUsed)[0];
    if (!victim) {
      throw new ServiceError(
        "LORA_LOADING",
        `all ${this.#o.maxLoaded} LoRA adapter slots of model '${this.#o.model.id}' are busy ` +
          "(SVC_MAX_LORAS_PER_MODEL)",
      );
    }
    this.#entries.delete(victim.id);
    // Idle: none of its batches is queued or running, so its thread can go at once.
    victim.runner?.dispose().catch(() => {});
    this.#o.onEvent?.("lora_evicted", {
      model: this.#o.model.id,
      lora: victim.id,
      memory_bytes: victim.memoryBytes,
    });
  }

  async #load(e: Entry): Promise<void> {
    const disk = this.#o.disk;
    // Its files stay on disk while it loads, whatever other adapters need.
    disk?.pin(e.id);
    try {
      await this.#fetchAndStart(e);
    } finally {
      disk?.release(e.id);
    }
  }

  async #fetchAndStart(e: Entry): Promise<void> {
    const started = performance.now();
    // Bounded before the download where the source states sizes (hub, http cluster cache), and
    // while it streams where it does not.
    const files = await this.#o.weights.ensureFiles(e.id, "main", { ...LORA_FILES }, {
      modelId: e.id,
      signal: e.controller.signal,
      maxBytes: { config: MAX_LORA_CONFIG_BYTES, weights: this.#o.maxLoraBytes },
    });
    // Counted against SVC_LORA_DISK_BYTES; the least recently used others may go.
    await this.#o.disk?.admit(e.id);
    const fetchMs = performance.now() - started;
    const config = await this.#readConfig(files.config);
    const { runner, loaded } = await this.#o.start(e.id, {
      weightsPath: files.weights,
      config,
      model: this.#o.model,
    });
    if (this.#entries.get(e.id) !== e) {
      // Closed while the thread built it: release what it made.
      await runner.dispose().catch(() => {});
      throw new ServiceError("MODEL_NOT_LOADED", `model '${this.#o.model.id}' is unloading`);
    }
    e.runner = runner;
    e.state = "loaded";
    e.memoryBytes = loaded.memoryBytes;
    e.lastUsed = this.#now();
    this.#o.onEvent?.("lora_loaded", {
      model: this.#o.model.id,
      lora: e.id,
      memory_bytes: loaded.memoryBytes,
      patched_weights: loaded.patched,
      fetch_ms: Math.round(fetchMs),
      plan_ms: Math.round(loaded.planMs),
      merge_ms: Math.round(loaded.mergeMs),
      session_ms: Math.round(loaded.sessionMs),
      load_ms: Math.round(performance.now() - started),
    });
  }

  async #readConfig(path: string) {
    let json: unknown;
    try {
      json = JSON.parse(await Deno.readTextFile(path));
    } catch {
      throw new LoraConfigError("adapter_config.json is not valid JSON");
    }
    return parseLoraConfig(json);
  }

  #remember(id: string, error: ServiceError): void {
    this.#failures.delete(id);
    this.#failures.set(id, { at: this.#now(), error });
    if (this.#failures.size > MAX_REMEMBERED_FAILURES) {
      this.#failures.delete(this.#failures.keys().next().value!);
    }
  }

  /** What requests for a failed adapter are answered. */
  #answer(id: string, err: unknown): ServiceError {
    const model = this.#o.model.id;
    const text = hidePaths(err instanceof Error ? err.message : String(err));
    // The safetensors file is read in the adapter's thread, whose refusals arrive as mismatches.
    if (err instanceof LoraMismatchError || err instanceof LoraConfigError) {
      return new ServiceError(
        "INVALID_INPUT",
        `LoRA adapter '${id}' does not fit model '${model}': ${text}`,
      );
    }
    if (err instanceof WeightFileTooLargeError) {
      const file = err.ref.path;
      return new ServiceError(
        "INVALID_INPUT",
        `LoRA adapter '${id}': ${file} ${err.over}` +
          (file === LORA_FILES.weights ? " (SVC_MAX_LORA_BYTES)" : ""),
      );
    }
    if (err instanceof WeightsError) {
      if (err.failure === "not_found") {
        return new ServiceError("INVALID_INPUT", `LoRA adapter '${id}' was not found: ${text}`);
      }
      if (err.failure === "gated") {
        return new ServiceError(
          "INVALID_INPUT",
          `LoRA adapter '${id}' cannot be fetched: ${text}`,
        );
      }
      return new ServiceError(
        "BAD_GATEWAY",
        `LoRA adapter '${id}' could not be fetched (tried again after a cool-down): ${text}`,
      );
    }
    if (err instanceof ServiceError) return err;
    return new ServiceError("INTERNAL_ERROR", `LoRA adapter '${id}' failed to load: ${text}`);
  }
}
