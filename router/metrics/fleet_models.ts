/**
 * The workers' model series on the router, from their status frames, so that its /metrics has all
 * seven of a worker's series; what each sums, and how counters survive a worker leaving or
 * restarting: docs/observability.md, "Router GET /metrics".
 */
import { BATCH_SIZE_BUCKETS, MODEL_SERIES } from "@svc/shared/status/request_series";
import type { FleetHistogram } from "@svc/shared/fleet/protocol";
import type { WorkerModel, WorkerRecord } from "../directory/types.ts";
import {
  CappedCounter,
  CappedGauge,
  type Labels,
  MAX_SERIES_PER_METRIC,
  type MetricsRegistry,
  SummedHistogram,
} from "./series.ts";

/** The labels of the per-device model gauges. */
type DeviceLabels = Labels<"model" | "device">;

/** What a worker reported for one model at the previous collection. */
interface Seen {
  tokens: number;
  batches: FleetHistogram;
}

/** Workers × models remembered between collections (the oldest forgotten first beyond it). */
const MAX_SEEN = MAX_SERIES_PER_METRIC * 4;

/** The model series and what they accumulated. */
export class FleetModelSeries {
  readonly #queueDepth: CappedGauge<"model">;
  readonly #loaded: CappedGauge<"model" | "device">;
  readonly #memory: CappedGauge<"model" | "device">;
  readonly #tokens: CappedCounter<"model">;
  readonly #batches: SummedHistogram<"model">;
  /** Last cumulative values per worker and model, kept after a worker leaves (it may return). */
  readonly #seen = new Map<string, Seen>();

  constructor(registry: MetricsRegistry) {
    const r = registry.registry;
    this.#queueDepth = new CappedGauge(r, MODEL_SERIES.queueDepth);
    this.#loaded = new CappedGauge(r, MODEL_SERIES.modelLoaded);
    this.#memory = new CappedGauge(r, MODEL_SERIES.modelMemory);
    this.#tokens = new CappedCounter(r, MODEL_SERIES.tokens);
    this.#batches = new SummedHistogram(r, {
      ...MODEL_SERIES.batchSize,
      buckets: BATCH_SIZE_BUCKETS,
    });
  }

  /** Refill the gauges and add what the counters grew, from the workers' latest status. */
  collect(workers: readonly WorkerRecord[]): void {
    const queue = new Map<string, number>();
    const loaded = new Map<string, { labels: DeviceLabels; n: number }>();
    const memory = new Map<string, { labels: DeviceLabels; n: number }>();
    const add = (
      m: Map<string, { labels: DeviceLabels; n: number }>,
      labels: DeviceLabels,
      n: number,
    ) => {
      const key = `${labels.model}\u0000${labels.device}`;
      const e = m.get(key) ?? { labels, n: 0 };
      e.n += n;
      m.set(key, e);
    };
    for (const w of workers) {
      for (const m of w.models) {
        queue.set(m.name, (queue.get(m.name) ?? 0) + m.queue_depth);
        const labels = { model: m.name, device: deviceOf(w, m) };
        add(loaded, labels, m.state === "loaded" ? 1 : 0);
        if (m.memory_bytes !== undefined) add(memory, labels, m.memory_bytes);
        this.#grow(w.id, m);
      }
    }
    this.#queueDepth.reset();
    for (const [model, n] of queue) this.#queueDepth.set({ model }, n);
    this.#loaded.reset();
    for (const e of loaded.values()) this.#loaded.set(e.labels, e.n);
    this.#memory.reset();
    for (const e of memory.values()) this.#memory.set(e.labels, e.n);
  }

  /** Add what one worker's cumulative tokens and batch sizes grew since they were last seen. */
  #grow(workerId: string, m: WorkerModel): void {
    if (m.tokens_total === undefined || m.batch_sizes === undefined) return;
    const key = `${workerId}\u0000${m.name}`;
    const prev = this.#seen.get(key);
    const now: Seen = { tokens: m.tokens_total, batches: m.batch_sizes };
    // Values that went down belong to a restarted worker: everything it reports is new.
    const restarted = prev !== undefined &&
      (now.tokens < prev.tokens || now.batches.count < prev.batches.count);
    const base = prev === undefined || restarted ? undefined : prev;
    const tokens = now.tokens - (base?.tokens ?? 0);
    if (tokens > 0) this.#tokens.inc({ model: m.name }, tokens);
    const count = now.batches.count - (base?.batches.count ?? 0);
    if (count > 0) {
      const counts = BATCH_SIZE_BUCKETS.map((_, i) =>
        Math.max(0, (now.batches.counts[i] ?? 0) - (base?.batches.counts[i] ?? 0))
      );
      const sum = Math.max(0, now.batches.sum - (base?.batches.sum ?? 0));
      this.#batches.add({ model: m.name }, counts, sum, count);
    }
    // Re-inserted, so the map's order is the order of last reports (oldest forgotten first).
    this.#seen.delete(key);
    this.#seen.set(key, now);
    if (this.#seen.size > MAX_SEEN) this.#seen.delete(this.#seen.keys().next().value!);
  }
}

/**
 * The device label of a model on a worker: the one it reports, else (a model not loaded) what
 * the worker runs models on, as a worker labels its own gauges.
 */
function deviceOf(w: WorkerRecord, m: WorkerModel): string {
  return m.device ?? (w.gpu_count > 0 ? "cuda" : "cpu");
}
