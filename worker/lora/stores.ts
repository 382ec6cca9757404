/**
 * The worker's LoRA side: one adapter store per loaded model whose family and backend take
 * adapters, all sharing what is worker-wide (the allow-list, the disk budget of adapter files,
 * the bounded set of adapter metric labels), and the dispatch of a batch to the runner of the
 * adapter it names.
 */
import { supportsLora } from "../families/kinds.ts";
import type { WeightStore } from "../weights/types.ts";
import type { BatchRunner } from "../scheduler/batcher.ts";
import type { ModelBackend, RunnerSpec } from "../registry/runner.ts";
import { LORA_FILES, LoraStore } from "./store.ts";
import { LoraDiskBudget } from "./disk_budget.ts";
import { loraAllowList } from "./allow.ts";
import { LoraLabels } from "./labels.ts";
import type { LoraSettings } from "../config/settings.ts";

/**
 * The LoRA settings the stores read (the wait is the request path's); without a disk bound the
 * adapter files are not bounded, without an allow-list any adapter may be named.
 */
export type LoraOptions =
  & Pick<LoraSettings, "maxPerModel" | "maxLoraBytes">
  & Partial<Pick<LoraSettings, "diskBytes" | "allow">>;

/** Adapter ids that may be metric label values, process-wide (see labels.ts). */
const MAX_LORA_LABELS = 64;

/** What {@link LoraStores} is built from. */
export interface LoraStoresOptions {
  /** The settings; absent: the defaults (10 per model, 256 MiB files). */
  settings?: LoraOptions;
  weights: WeightStore;
  /** How long a failed adapter is answered without a new attempt. */
  failureCooldownMs: number;
  now: () => number;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
}

/** The adapter stores of a worker's models. */
export class LoraStores {
  /** Label values of adapters in metrics: a bounded set. */
  readonly labels: LoraLabels = new LoraLabels(MAX_LORA_LABELS);
  readonly #o: LoraStoresOptions;
  /** `SVC_LORA_ALLOW` as a check, shared by every model's adapters. */
  readonly #allowed: ((id: string) => boolean) | undefined;
  /** `SVC_LORA_DISK_BYTES`, shared by every model's adapters. */
  readonly #disk: LoraDiskBudget | undefined;

  constructor(opts: LoraStoresOptions) {
    this.#o = opts;
    const lora = opts.settings;
    this.#allowed = loraAllowList(lora?.allow ?? []);
    this.#disk = lora?.diskBytes === undefined ? undefined : new LoraDiskBudget({
      maxBytes: lora.diskBytes,
      weights: opts.weights,
      files: { ...LORA_FILES },
      marker: LORA_FILES.weights,
      onEvent: (event, fields) => opts.onEvent?.(event, fields),
    });
  }

  /** The adapter store of a model whose family and backend take LoRA adapters. */
  storeFor(spec: RunnerSpec, backend: ModelBackend): LoraStore | undefined {
    const { config } = spec;
    if (!supportsLora(config.family) || !backend.startLora) return undefined;
    const settings = this.#o.settings ?? { maxPerModel: 10, maxLoraBytes: 256 * 1024 * 1024 };
    return new LoraStore({
      model: { id: config.id, repo: config.hub.repo },
      weights: this.#o.weights,
      start: (_id, lora) => backend.startLora!(spec, lora),
      maxLoaded: settings.maxPerModel,
      maxLoraBytes: settings.maxLoraBytes,
      failureCooldownMs: this.#o.failureCooldownMs,
      allowed: this.#allowed,
      disk: this.#disk,
      now: this.#o.now,
      onEvent: (event, fields) => {
        if (event === "lora_loaded") this.labels.admit(String(fields.lora));
        this.#o.onEvent?.(event, fields);
      },
    });
  }
}

/**
 * A model's batch runner: a batch that names an adapter (`params.lora`) runs on that adapter's
 * runner, any other on the model's own. Batches never mix adapters (the adapter is part of the
 * batch key), so each goes to one runner.
 */
export function withLoras(base: BatchRunner, loras: LoraStore | undefined): BatchRunner {
  if (!loras) return base;
  return (items, params, abandoned, requestOf) =>
    params.lora === undefined
      ? base(items, params, abandoned, requestOf)
      : loras.run(params.lora, items, params, abandoned, requestOf);
}
