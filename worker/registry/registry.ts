/**
 * Model registry: the state of every model the served catalog lists (catalog/served.ts), on-demand
 * loading (one shared load per model, bounded waits), memory accounting, and LRU eviction of idle
 * models under memory pressure.
 * States: available → loading → loaded → unloading → available; a failed load is remembered.
 * Models run through an injected backend (`runner.ts`), so all of this is testable without ONNX.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { ServedModel } from "@svc/shared/catalog";
import { type ErrorCode, ServiceError } from "@svc/shared/errors";
import { deadline } from "@svc/shared/deadline";
import type { ModelState } from "@svc/shared/schemas/models";
import type { WeightStore } from "../weights/types.ts";
import { WeightsError } from "../weights/errors.ts";
import { Batcher, type BatchStats } from "../scheduler/batcher.ts";
import { filesSize, type MemoryProbe } from "./memory.ts";
import { failureRemembered, type LoadFailure, loadFailure } from "./load_failure.ts";
import type { ModelBackend, ModelRunner, RunnerSpec } from "./runner.ts";
import { runTokenBudget } from "../inference/device_policy.ts";
import type { ServedCatalog } from "../catalog/served.ts";
import type { SchedulingSettings } from "../config/settings.ts";
import type { ModelJsonBounds } from "../weights/model_json.ts";
import type { ExtractBudget } from "../families/extract_budget.ts";
import type { WorkItem, WorkParams } from "../families/types.ts";
import type { LoraStatus, LoraStore } from "../lora/store.ts";
import { type LoraOptions, LoraStores, withLoras } from "../lora/stores.ts";
import type { LoraLabels } from "../lora/labels.ts";
import { RevisionHasher } from "./revision.ts";
import { type Int8Verdict, quantizationInfo, servedFiles } from "../catalog/int8.ts";
import type { QuantizationInfo } from "@svc/shared/schemas/models";

export type { ModelState };

/** A model ready to take work. */
export interface LoadedModel {
  key: string;
  config: ModelConfig;
  batcher: Batcher;
  device: string;
  /** The model's weights (its LoRA adapters are counted by `loras`). */
  memoryBytes: number;
  /** The model's LoRA adapters (families that take them). */
  loras?: LoraStore;
  /** What items would cost the model, in tokens it reads (ModelRunner.cost), when it can say. */
  cost?: (items: WorkItem[], params: WorkParams) => Promise<number>;
  /**
   * What its answers depend on, as a digest (see revision.ts); undefined when its files could
   * not be hashed (nothing is then announced, and the router caches none of its answers).
   */
  revision?: string;
  /** The load probe's verdict on its quantised graph (catalog/int8.ts), when it had one. */
  int8?: Int8Verdict;
}

/**
 * Registry settings (the worker's scheduling settings; the item cap is the served catalog's) and
 * collaborators.
 */
export interface RegistryOptions extends Omit<SchedulingSettings, "cpuMaxItemTokens"> {
  /** What this worker serves; each entry gets a unit, and so does every entry added later. */
  catalog: ServedCatalog;
  weights: WeightStore;
  /** Starts a runner for each model that loads (and knows the device they run on). */
  backend: ModelBackend;
  /** Bounds of one extract item's work, handed to every model's runner (absent: defaults). */
  extractBudget?: ExtractBudget;
  /** Bounds of the model's JSON files, read by its inference thread (absent: the defaults). */
  jsonBounds?: ModelJsonBounds;
  memoryProbe: MemoryProbe;
  /** LoRA adapters; absent: the defaults (10 per model, 256 MiB files). */
  lora?: LoraOptions;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
  onBatch?: (model: string, stats: BatchStats) => void;
  /** Clock in ms for recency and failure memory (default `performance.now`). */
  now?: () => number;
  /** Computes a loaded model's revision (default: hashes its files; see revision.ts). */
  revisions?: Pick<RevisionHasher, "revisionOf">;
}

interface Unit {
  key: string;
  config: ModelConfig;
  modelFile: string;
  state: ModelState;
  /** The last failed load, until a load succeeds (its answer is repeated for a while). */
  failure?: LoadFailure;
  /** A request is checking whether `failure` still holds (shared by concurrent requests). */
  recall?: Promise<boolean>;
  load?: Promise<LoadedModel>;
  loaded?: LoadedModel & { runner: ModelRunner };
  lastUsed: number;
  inUse: number;
  /** Whether its files are on this machine (undefined until checked: refreshPresence). */
  onDisk?: boolean;
}

/** A started model: its local files, what its runner was started from, the runner. */
interface Started {
  files: Record<string, string>;
  spec: RunnerSpec;
  runner: ModelRunner;
  revision: string | undefined;
  int8?: Int8Verdict;
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
  /** The catalog entry, with the model's own max_sequence_length. */
  config: ModelConfig;
  /** The longest item this worker runs, in tokens (the CPU item cap may lower the model's). */
  maxItemTokens: number;
  /** LoRA adapters loading or loaded on the model (absent: none). */
  loras?: LoraStatus[];
  /** Whether its weights are on this machine (undefined: not checked yet, or loaded). */
  onDisk?: boolean;
  /** The loaded model's revision (see revision.ts); absent unless loaded. */
  revision?: string;
  /** Its quantised graph: checked or not, and which graph runs (absent: none involved). */
  quantization?: QuantizationInfo;
  /** The files it runs by role (a refused quantised graph's float files in its place). */
  files?: Record<string, string>;
}

/** The worker's model registry. */
export class ModelRegistry {
  readonly #o: RegistryOptions;
  readonly #units = new Map<string, Unit>();
  readonly #now: () => number;
  /** The adapter stores of loaded models (families that take LoRA adapters). */
  readonly #loras: LoraStores;

  constructor(opts: RegistryOptions) {
    this.#o = { ...opts, revisions: opts.revisions ?? new RevisionHasher() };
    this.#now = opts.now ?? (() => performance.now());
    for (const c of opts.catalog.entries.values()) this.#unit(c, c.files.model);
    // A unit at once, so the next status frame announces it and the router learns the name.
    opts.catalog.onAdded((c) => this.#unit(c, c.files.model));
    this.#loras = new LoraStores({
      settings: opts.lora,
      weights: opts.weights,
      failureCooldownMs: opts.loadFailureCooldownMs,
      now: this.#now,
      onEvent: opts.onEvent,
    });
  }

  /** State of a model (its default weights file) without loading it. */
  status(id: string): UnitStatus | undefined {
    const c = this.#o.catalog.get(id);
    return c ? this.#status(this.#unit(c, c.files.model)) : undefined;
  }

  /**
   * State of what a served name runs (a profile may run its own weights file), without loading
   * it or adding it to {@link statuses}: a file never asked for reads as `available`.
   */
  servedStatus(served: ServedModel): UnitStatus | undefined {
    const modelFile = modelProfileFile(served);
    if (modelFile === served.config.files.model) return this.status(served.config.id);
    const u = this.#units.get(unitKey(served.config, modelFile));
    return u ? this.#status(u) : this.#status(this.#newUnit(served.config, modelFile));
  }

  /** Every unit's status (one per model and weights variant that has been touched). */
  statuses(): UnitStatus[] {
    return [...this.#units.values()].map((u) => this.#status(u));
  }

  /**
   * Note which models not loaded have their weights on this machine (stats of the local cache and
   * a cluster cache directory only; no download, no network): the pages show the others as
   * "not cached" with what would fetch them.
   */
  async refreshPresence(): Promise<void> {
    const has = this.#o.weights.hasLocally?.bind(this.#o.weights);
    if (!has) return;
    for (const u of [...this.#units.values()]) {
      if (u.state !== "available" && u.state !== "failed") continue;
      const { repo, revision } = u.config.hub;
      u.onDisk = await has(repo, revision, this.#wanted(u)).catch(() => undefined);
    }
  }

  /** Memory in use and available, as eviction sees it (container limit when there is one). */
  memoryUsage(): { usedBytes: number; totalBytes: number } {
    return this.#o.memoryProbe();
  }

  /** Label values of adapters in metrics: a bounded set. */
  get loraLabels(): LoraLabels {
    return this.#loras.labels;
  }

  /** The device models run on (`cpu` or `cuda`). */
  get deviceName(): string {
    return this.#o.backend.device;
  }

  /**
   * Get a loaded model, loading it if needed. Waits at most `waitMs`; then 503 MODEL_LOADING
   * with Retry-After while the load goes on in the background. A remembered failed load is
   * answered at once with its 502 MODEL_LOAD_FAILED (see load_failure.ts).
   */
  async acquire(served: ServedModel, waitMs: number): Promise<LoadedModel> {
    const modelFile = modelProfileFile(served);
    const u = this.#unit(served.config, modelFile);
    u.lastUsed = this.#now();
    while (!u.load) {
      const failure = u.failure;
      if (!failure) {
        u.load = this.#load(u);
        break;
      }
      u.recall ??= failureRemembered(
        failure,
        this.#now(),
        this.#o.loadFailureCooldownMs,
        () => this.#cacheStamp(u),
      ).finally(() => u.recall = undefined);
      const remembered = await u.recall;
      // Another request may have started a load (or recorded a newer failure) meanwhile.
      if (u.load || u.failure !== failure) continue;
      if (remembered) throw failure.answer;
      u.load = this.#load(u);
    }
    if (u.loaded && u.state === "loaded") return u.loaded;
    if (u.state === "unloading") {
      throw new ServiceError("MODEL_NOT_LOADED", `model '${u.config.id}' is unloading`);
    }
    return await deadline(u.load, waitMs, () => {
      throw new ServiceError("MODEL_LOADING", `model '${u.config.id}' is still loading`);
    });
  }

  /** Unload a model (after its queued and running work finishes). */
  async unload(key: string): Promise<void> {
    const u = this.#units.get(key);
    if (!u?.loaded || u.state !== "loaded") return;
    u.state = "unloading";
    const loaded = u.loaded;
    await loaded.batcher.whenIdle();
    await loaded.loras?.close();
    await loaded.runner.dispose();
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
        u.lastUsed = this.#now();
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
      await Promise.all([
        loaded.loras?.close(timeoutMs),
        loaded.runner.dispose(timeoutMs).catch(() => {}),
      ]);
      u.loaded = undefined;
      u.load = undefined;
      u.state = "available";
    }));
  }

  #unit(config: ModelConfig, modelFile: string): Unit {
    const key = unitKey(config, modelFile);
    let u = this.#units.get(key);
    if (!u) {
      u = this.#newUnit(config, modelFile);
      this.#units.set(key, u);
    }
    return u;
  }

  #newUnit(config: ModelConfig, modelFile: string): Unit {
    return {
      key: unitKey(config, modelFile),
      config,
      modelFile,
      state: "available",
      lastUsed: 0,
      inUse: 0,
    };
  }

  /** The files a unit loads, by role (a profile's own model file has no external data). */
  #wanted(u: Unit): Record<string, string> {
    const wanted: Record<string, string> = { ...u.config.files, model: u.modelFile };
    if (u.modelFile !== u.config.files.model) delete wanted.model_data;
    return wanted;
  }

  #cacheStamp(u: Unit): Promise<string> {
    return this.#o.weights.cacheStamp(u.config.hub.repo, u.config.hub.revision, this.#wanted(u));
  }

  /** Fetch the model's files and start its runner. */
  async #start(u: Unit): Promise<Started> {
    const files = await this.#o.weights.ensureFiles(
      u.config.hub.repo,
      u.config.hub.revision,
      this.#wanted(u),
      { gated: u.config.hub.gated, modelId: u.config.id },
    );
    const spec: RunnerSpec = {
      config: u.config,
      files,
      runTokenBudget: runTokenBudget(
        u.config.batch_token_budget,
        this.#o.backend.device,
        this.#o.maxRunTokens,
      ),
      extractBudget: this.#o.extractBudget,
      jsonBounds: this.#o.jsonBounds,
    };
    // Hashed while the session is built (the files are read by both; other cores are idle).
    const revision = this.#o.revisions!.revisionOf(u.config, u.modelFile, files).catch((err) => {
      this.#o.onEvent?.("model_revision_unknown", {
        model: u.config.id,
        key: u.key,
        error: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    });
    const probe = await this.#int8Probe(u);
    const runner = await this.#o.backend.start(
      probe && "floatFiles" in probe ? { ...spec, int8Probe: probe } : spec,
    );
    // Without its float files (or a runner that probes) the quantised graph serves, marked as
    // not checked.
    const int8 = !probe
      ? runner.int8
      : "error" in probe
      ? { accepted: true, error: probe.error, ms: 0 }
      : runner.int8 ?? { accepted: true, error: "the runner ran no probe", ms: 0 };
    if (!int8 || int8.accepted || !probe || !("floatFiles" in probe)) {
      return { files, spec, runner, revision: await revision, ...(int8 ? { int8 } : {}) };
    }
    // The float graph runs: its files are what the model is, for memory, revision and adapters.
    const floatFiles = { ...files, ...probe.floatFiles };
    if (!probe.floatFiles.model_data) delete floatFiles.model_data;
    const floatConfig = { ...u.config, files: servedFiles(u.config, int8) };
    await revision;
    const floatRevision = await this.#o.revisions!.revisionOf(floatConfig, u.modelFile, floatFiles)
      .catch(() => undefined);
    return {
      files: floatFiles,
      spec: { ...spec, config: floatConfig, files: floatFiles },
      runner,
      revision: floatRevision,
      int8,
    };
  }

  /**
   * The float files (local paths) a unit's quantised graph is probed against, fetched like its
   * own, or why they could not be had; undefined when it has no plan to check (profiles' own
   * files, other devices).
   */
  async #int8Probe(
    u: Unit,
  ): Promise<{ floatFiles: Record<string, string> } | { error: string } | undefined> {
    const plan = u.config.int8;
    if (!plan || plan.skipped || u.modelFile !== u.config.files.model) return undefined;
    if (this.#o.backend.device !== "cpu") return undefined;
    try {
      const floatFiles = await this.#o.weights.ensureFiles(
        u.config.hub.repo,
        u.config.hub.revision,
        plan.float_files,
        { gated: u.config.hub.gated, modelId: u.config.id },
      );
      return { floatFiles };
    } catch (err) {
      return {
        error: `its float graph could not be had: ${err instanceof Error ? err.message : err}`,
      };
    }
  }

  /**
   * {@link #start}, and when the files were had but the model does not load from them, once more
   * after moving the local cache's copies aside: a copy cut short or corrupted on this disk would
   * otherwise fail every load until someone deleted it by hand.
   */
  async #startChecked(u: Unit): Promise<Started> {
    try {
      return await this.#start(u);
    } catch (err) {
      if (err instanceof WeightsError || !this.#o.weights.quarantine) throw err;
      const { repo, revision } = u.config.hub;
      const moved = await this.#o.weights.quarantine(repo, revision, this.#wanted(u))
        .catch(() => []);
      if (moved.length === 0) throw err;
      this.#o.onEvent?.("model_files_quarantined", {
        model: u.config.id,
        files: moved,
        error: err instanceof Error ? err.message : String(err),
      });
      return await this.#start(u);
    }
  }

  async #load(u: Unit): Promise<LoadedModel> {
    u.state = "loading";
    const started = performance.now();
    const device = this.#o.backend.device;
    this.#o.onEvent?.("model_loading", { model: u.config.id, key: u.key });
    try {
      await this.evictIfNeeded(u.key);
      const { files, spec, runner, revision, int8 } = await this.#startChecked(u);
      const memoryBytes = await filesSize([files.model, files.model_data].filter(Boolean));
      const loras = this.#loras.storeFor(spec, this.#o.backend);
      const batcher = new Batcher({
        maxBatchRequests: this.#o.maxBatchRequests,
        maxBatchItems: this.#o.maxBatchItems,
        batchTokenBudget: u.config.batch_token_budget,
        maxItemTokens: u.config.max_sequence_length,
        maxWaitMs: this.#o.maxWaitMs,
        maxQueueItems: this.#o.maxQueueItems,
        run: withLoras(
          (items, params, abandoned, requestOf) => runner.run(items, params, abandoned, requestOf),
          loras,
        ),
        onBatch: (s) => this.#o.onBatch?.(u.config.id, s),
      });
      u.loaded = {
        key: u.key,
        config: u.config,
        batcher,
        device,
        memoryBytes,
        runner,
        loras,
        revision,
        cost: runner.cost && ((items, params) => runner.cost!(items, params)),
        ...(int8 ? { int8 } : {}),
      };
      u.state = "loaded";
      u.failure = undefined;
      u.onDisk = true;
      this.#o.onEvent?.("model_loaded", {
        model: u.config.id,
        key: u.key,
        device,
        memory_bytes: memoryBytes,
        load_ms: Math.round(performance.now() - started),
      });
      this.#reportInt8(u, int8);
      return u.loaded;
    } catch (err) {
      const { repo, revision } = u.config.hub;
      const unchecked = this.#o.weights.unchecked?.(repo, revision, this.#wanted(u)) ?? [];
      const failure = loadFailure(
        u.config.id,
        err,
        (u.failure?.attempts ?? 0) + 1,
        this.#now(),
        unchecked,
      );
      // Taken after the failure: a later difference means someone changed the files.
      if (failure.permanent) failure.stamp = await this.#cacheStamp(u).catch(() => undefined);
      u.state = "failed";
      u.failure = failure;
      u.load = undefined;
      this.#o.onEvent?.("model_load_failed", {
        model: u.config.id,
        key: u.key,
        error_class: failure.errorClass,
        permanent: failure.permanent,
        attempts: failure.attempts,
        error: failure.detail,
      });
      throw failure.answer;
    }
  }

  /**
   * One log line per load of a quantised graph: checked and kept, refused (a warning: the float
   * graph runs), or not checked (a warning: nothing vouches for it on this CPU).
   */
  #reportInt8(u: Unit, int8: Int8Verdict | undefined): void {
    const info = quantizationInfo(u.config, u.modelFile, int8);
    if (!info || !(int8 || info.serving === "quantized")) return;
    const event = !info.checked
      ? "model_int8_unchecked"
      : info.serving === "quantized"
      ? "model_int8_checked"
      : "model_int8_refused";
    this.#o.onEvent?.(event, {
      model: u.config.id,
      key: u.key,
      graph: info.graph,
      ...(info.float_graph ? { float_graph: info.float_graph } : {}),
      serving: info.serving,
      reason: info.reason,
      ...(int8 ? { probe_ms: int8.ms } : {}),
    });
  }

  #status(u: Unit): UnitStatus {
    return {
      name: u.key,
      state: u.state,
      device: u.loaded ? u.loaded.device : null,
      memoryBytes: (u.loaded?.memoryBytes ?? 0) + (u.loaded?.loras?.memoryBytes ?? 0),
      queueDepth: u.loaded?.batcher.queueDepth ?? 0,
      pendingItems: u.loaded?.batcher.pendingItems ?? 0,
      lastError: u.failure?.lastError ?? null,
      // The entry as declared (the model's length), with the length this worker runs beside it.
      config: {
        ...u.config,
        max_sequence_length: this.#o.catalog.declaredMaxLength(u.config.id) ??
          u.config.max_sequence_length,
      },
      maxItemTokens: u.config.max_sequence_length,
      loras: u.loaded?.loras?.statuses() ?? [],
      ...(u.onDisk === undefined ? {} : { onDisk: u.onDisk }),
      ...(u.state === "loaded" && u.loaded?.revision ? { revision: u.loaded.revision } : {}),
      ...quantizationField(quantizationInfo(u.config, u.modelFile, u.loaded?.int8)),
      files: { ...servedFiles(u.config, u.loaded?.int8), model: servedModelFile(u) },
    };
  }
}

function quantizationField(q: QuantizationInfo | undefined): { quantization?: QuantizationInfo } {
  return q ? { quantization: q } : {};
}

/** The graph a unit runs: its own file, or the float graph in place of a refused quantised one. */
function servedModelFile(u: Unit): string {
  if (u.modelFile !== u.config.files.model) return u.modelFile;
  return servedFiles(u.config, u.loaded?.int8).model;
}

/** Registry key of a model's weights file: its id, or `id@file` for a profile's own file. */
function unitKey(config: ModelConfig, modelFile: string): string {
  return modelFile === config.files.model ? config.id : `${config.id}@${modelFile}`;
}

/** The ONNX file a profile runs (profiles may pick a quantised variant via `model_file`). */
export function modelProfileFile(served: ServedModel): string {
  const opt = served.config.profiles[served.modelProfile]?.options?.model_file;
  return typeof opt === "string" && opt.length > 0 ? opt : served.config.files.model;
}
