/**
 * Weight fetches summed up per model: a load reads several files (graph, tokenizer, configs),
 * and one log line per model with the totals says what a line per file said, without the noise.
 */
import type { WeightFetchEvent } from "./types.ts";

/** What the files of one model cost to fetch. */
export interface FetchTotals {
  files: number;
  bytes: number;
  /** Where they came from (`cluster-cache`, `hub`, `local-cache`), comma-separated. */
  sources: string;
  /** The slowest file: files are fetched in parallel, so this is about the wall time. */
  slowest_ms: number;
}

/** Models whose totals are kept before the oldest are dropped (a load that never reports). */
const MAX_MODELS = 256;

/** Collects fetch events by model until the model's load reports (`take`). */
export class FetchSummary {
  readonly #byModel = new Map<
    string,
    { files: number; bytes: number; sources: Set<string>; ms: number }
  >();

  /** Count one fetched file. */
  add(e: WeightFetchEvent): void {
    let t = this.#byModel.get(e.modelId);
    if (!t) {
      if (this.#byModel.size >= MAX_MODELS) {
        this.#byModel.delete(this.#byModel.keys().next().value!);
      }
      t = { files: 0, bytes: 0, sources: new Set(), ms: 0 };
      this.#byModel.set(e.modelId, t);
    }
    t.files++;
    t.bytes += e.bytes;
    t.sources.add(e.source);
    t.ms = Math.max(t.ms, e.durationMs);
  }

  /** The totals of `model` since the last take, or undefined when nothing was fetched. */
  take(model: string): FetchTotals | undefined {
    const t = this.#byModel.get(model);
    if (!t) return undefined;
    this.#byModel.delete(model);
    return { files: t.files, bytes: t.bytes, sources: [...t.sources].join(","), slowest_ms: t.ms };
  }
}
