/**
 * Catalog entries whose configuration is worked out at run time (`SVC_MODELS`: read from the
 * model's own files). Until that is done an entry is `loading`; when it cannot be done it is
 * `failed` with its reason, remembered like a failed load (see load_failure.ts: answered at once
 * for the cool-down; then a transient cause such as an unreachable hub is tried again by the next
 * request, a permanent one only once the files it read have changed). Each entry fails alone.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { PendingEntryFacts } from "@svc/shared/catalog/model_info";
import { ServiceError } from "@svc/shared/errors";
import { deadline } from "@svc/shared/deadline";
import { failureRemembered, type LoadFailure, loadFailure } from "../registry/load_failure.ts";

/** An entry configured at run time. */
export interface DeferredEntry {
  id: string;
  /** The bundle it is announced under before its files said what it is. */
  bundle: string;
  /** Where it comes from (shown while it is pending; never a file-system path). */
  source: PendingEntryFacts["source"];
  /** Work out its configuration (called again after a failure that is over). */
  configure(): Promise<ModelConfig>;
  /** A fingerprint of the files it reads, without a network call (see load_failure.ts). */
  stamp(): Promise<string>;
}

interface Pending {
  entry: DeferredEntry;
  running?: Promise<void>;
  failure?: LoadFailure;
  recall?: Promise<boolean>;
}

/** Options of {@link DeferredEntries}. */
export interface DeferredOptions {
  /** A configured entry joins the catalog (false when its id is taken). */
  adopt(config: ModelConfig): boolean;
  cooldownMs: number;
  now: () => number;
  onEvent?: (event: string, fields: Record<string, unknown>) => void;
}

/** The pending entries of a served catalog. */
export class DeferredEntries {
  readonly #pending = new Map<string, Pending>();
  readonly #o: DeferredOptions;

  constructor(entries: readonly DeferredEntry[], opts: DeferredOptions) {
    this.#o = opts;
    for (const entry of entries) {
      const p: Pending = { entry };
      this.#pending.set(entry.id, p);
      this.#start(p);
    }
  }

  /** The pending entry a served name belongs to (`id`, or `id:profile`), if any. */
  #of(name: string): Pending | undefined {
    const exact = this.#pending.get(name);
    if (exact) return exact;
    const colon = name.lastIndexOf(":");
    return colon > 0 ? this.#pending.get(name.slice(0, colon)) : undefined;
  }

  /** True when the served name belongs to a pending entry. */
  has(name: string): boolean {
    return this.#pending.size > 0 && this.#of(name) !== undefined;
  }

  /** Ids of the pending entries. */
  get ids(): string[] {
    return [...this.#pending.keys()];
  }

  /** Resolves once every configuration started so far has ended (success or failure). */
  async settled(): Promise<void> {
    await Promise.all([...this.#pending.values()].map((p) => p.running));
  }

  /**
   * Wait (at most `waitMs`) for the entry `name` belongs to, trying again first when its failure
   * is over. Returns at once for names that are not pending.
   */
  async settle(name: string, waitMs: number): Promise<void> {
    const p = this.#of(name);
    if (!p) return;
    if (!p.running && p.failure) {
      const failure = p.failure;
      p.recall ??= failureRemembered(
        failure,
        this.#o.now(),
        this.#o.cooldownMs,
        () => p.entry.stamp(),
      ).finally(() => p.recall = undefined);
      const remembered = await p.recall;
      if (!remembered && !p.running && p.failure === failure) this.#start(p);
    }
    if (p.running) await deadline(p.running, waitMs, () => {});
  }

  /**
   * The answer for a name that is pending: 503 MODEL_LOADING while its files are read, its 502
   * MODEL_LOAD_FAILED once they could not be; undefined for names that are not pending.
   */
  answerFor(name: string): ServiceError | undefined {
    const p = this.#of(name);
    if (!p) return undefined;
    if (p.failure && !p.running) return p.failure.answer;
    return new ServiceError(
      "MODEL_LOADING",
      `model '${p.entry.id}' is being configured from its files`,
    );
  }

  /** Every pending entry as /v1/models and the status stream show it. */
  facts(): PendingEntryFacts[] {
    return [...this.#pending.values()].map((p) => ({
      id: p.entry.id,
      bundle: p.entry.bundle,
      state: p.failure && !p.running ? "failed" : "loading",
      lastError: p.failure && !p.running ? p.failure.lastError : null,
      source: p.entry.source,
    }));
  }

  #start(p: Pending): void {
    const { entry } = p;
    const started = performance.now();
    this.#o.onEvent?.("model_configuring", { model: entry.id });
    p.running = entry.configure().then(
      (config) => {
        this.#pending.delete(entry.id);
        if (!this.#o.adopt(config)) {
          this.#o.onEvent?.("model_configure_skipped", {
            model: entry.id,
            reason: "the id is already in the catalog",
          });
          return;
        }
        const settings = config.detected?.settings ?? {};
        this.#o.onEvent?.("model_configured", {
          model: entry.id,
          family: config.family,
          ...Object.fromEntries(
            Object.entries(settings).map(([k, s]) => [k, `${JSON.stringify(s.value)} (${s.from})`]),
          ),
          configure_ms: Math.round(performance.now() - started),
        });
      },
      async (err) => {
        const failure = loadFailure(entry.id, err, (p.failure?.attempts ?? 0) + 1, this.#o.now());
        if (failure.permanent) failure.stamp = await entry.stamp().catch(() => undefined);
        p.failure = failure;
        this.#o.onEvent?.("model_load_failed", {
          model: entry.id,
          stage: "configure",
          error_class: failure.errorClass,
          permanent: failure.permanent,
          attempts: failure.attempts,
          error: failure.detail,
        });
      },
    ).finally(() => p.running = undefined);
  }
}
