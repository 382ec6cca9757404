/**
 * The models this worker serves, as it runs them: every entry with the device's item cap applied
 * (the length it declares kept beside it), entries added at run time, `SVC_MODELS` entries still
 * being configured from their own files, and the lookup of a served name (`id` or `id:profile`)
 * with the error for a name nobody serves here. The registry loads what this resolves.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import {
  resolveServedName,
  type ServedModel,
  servedNamesOf,
  unresolvedNameError,
} from "@svc/shared/catalog";
import { notInCatalogMessage } from "@svc/shared/catalog/suggest";
import type { PendingEntryFacts } from "@svc/shared/catalog/model_info";
import { ServiceError } from "@svc/shared/errors";
import { itemTokenCap } from "../inference/device_policy.ts";
import { DeferredEntries, type DeferredEntry } from "./deferred.ts";

/** What a served catalog is built from. */
export interface ServedCatalogOptions {
  /** The entries as declared (filtered, with this device's files chosen). */
  entries: ReadonlyMap<string, ModelConfig>;
  /** The device models run on: the CPU item cap applies there. */
  device: string;
  /** Longest item (tokens) on CPU (SVC_CPU_MAX_ITEM_TOKENS; default: device_policy.ts). */
  cpuMaxItemTokens?: number;
  /** Entries configured at run time from their own files (`SVC_MODELS`); each joins once done. */
  deferred?: readonly DeferredEntry[];
  /** How long a failed configuration is answered at once (SVC_LOAD_FAILURE_COOLDOWN_MS). */
  failureCooldownMs: number;
  /** Clock in ms for failure memory (default `performance.now`). */
  now?: () => number;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
}

/** The worker's served catalog. */
export class ServedCatalog {
  readonly #o: ServedCatalogOptions;
  /** Entries as this worker runs them (the CPU item cap applied). */
  readonly #entries = new Map<string, ModelConfig>();
  /** The max_sequence_length each entry declares (the model's), before the CPU item cap. */
  readonly #declaredLength = new Map<string, number>();
  readonly #deferred: DeferredEntries;
  readonly #onAdded: ((config: ModelConfig) => void)[] = [];

  constructor(opts: ServedCatalogOptions) {
    this.#o = opts;
    for (const c of opts.entries.values()) this.#put(c);
    this.#deferred = new DeferredEntries(opts.deferred ?? [], {
      adopt: (config) => this.add(config),
      cooldownMs: opts.failureCooldownMs,
      now: opts.now ?? (() => performance.now()),
      onEvent: opts.onEvent,
    });
  }

  /** Every entry as this worker runs it, by id. */
  get entries(): ReadonlyMap<string, ModelConfig> {
    return this.#entries;
  }

  /** The entry of `id` as this worker runs it. */
  get(id: string): ModelConfig | undefined {
    return this.#entries.get(id);
  }

  /** Call `fn` with every entry added from now on (the registry gives each a unit). */
  onAdded(fn: (config: ModelConfig) => void): void {
    this.#onAdded.push(fn);
  }

  /**
   * Serve one more model from now on (`deno task start` adds GloVe once it is built in the
   * background); false, and nothing changes, when the id is already served.
   */
  add(added: ModelConfig): boolean {
    if (this.#entries.has(added.id)) return false;
    const config = this.#put(added);
    for (const fn of this.#onAdded) fn(config);
    return true;
  }

  #put(declared: ModelConfig): ModelConfig {
    this.#declaredLength.set(declared.id, declared.max_sequence_length);
    const config = itemTokenCap(declared, this.#o.device, this.#o.cpuMaxItemTokens);
    this.#entries.set(config.id, config);
    return config;
  }

  /**
   * The model's own max_sequence_length (what its entry declares); {@link entries} hold the
   * length this worker truncates at, which the CPU item cap may lower.
   */
  declaredMaxLength(id: string): number | undefined {
    return this.#declaredLength.get(id);
  }

  /**
   * Resolve a served name (`id` or `id:profile`). A pending entry answers 503 MODEL_LOADING (its
   * files are being read) or its 502 MODEL_LOAD_FAILED; anything else is {@link unknownName}'s
   * error.
   */
  resolve(name: string): ServedModel {
    const r = resolveServedName(name, this.#entries);
    if (r) return r;
    throw this.#deferred.answerFor(name) ?? this.unknownName(name);
  }

  /**
   * The error for a name nobody serves here: 400 INVALID_INPUT for a served model with a profile
   * it lacks (`id:tiny`, naming its profiles), else 404 MODEL_NOT_FOUND with the closest served
   * names as suggestions.
   */
  unknownName(name: string): ServiceError {
    const unresolved = unresolvedNameError(name, this.#entries);
    if (unresolved.code !== "MODEL_NOT_FOUND") return unresolved;
    return new ServiceError("MODEL_NOT_FOUND", notInCatalogMessage(name, this.#servedNames()));
  }

  /** Every name served (or pending) here: ids, `id:profile` names, pending ids. */
  *#servedNames(): Generator<string> {
    for (const c of this.#entries.values()) yield* servedNamesOf(c);
    yield* this.#deferred.ids;
  }

  /**
   * Wait (at most `waitMs`) while the entry `name` belongs to is being configured from its files,
   * trying a failed one again once its failure is over. Undefined for every other name (nothing
   * to wait for: the request path does not even await).
   */
  settle(name: string, waitMs: number): Promise<void> | undefined {
    return this.#deferred.has(name) ? this.#deferred.settle(name, waitMs) : undefined;
  }

  /** Resolves once the configurations started so far have ended (start-up readiness). */
  settled(): Promise<void> {
    return this.#deferred.settled();
  }

  /** Entries still being configured, or whose configuration failed (with the reason). */
  pendingEntries(): PendingEntryFacts[] {
    return this.#deferred.facts();
  }
}
