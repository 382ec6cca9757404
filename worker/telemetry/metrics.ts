/** Prometheus metrics of the worker (series and labels exactly as the API defines them). */
import client from "prom-client";
import {
  BATCH_SIZE_BUCKETS,
  DURATION_SERIES,
  MODEL_SERIES,
  type Phase,
  REQUESTS_SERIES,
} from "@svc/shared/status/request_series";
import { type ProcessMetrics, registerProcessMetrics } from "./process_metrics.ts";

export type { Phase };

/**
 * A model's batches so far: tokens run, and the `svc_batch_size` histogram (cumulative counts
 * per bound of {@link BATCH_SIZE_BUCKETS}, sum and count of batch sizes).
 */
export interface BatchTotals {
  tokens: number;
  counts: number[];
  sum: number;
  count: number;
}

/**
 * The worker's metric set on its own registry (no global state shared between instances).
 * It also holds the process series (memory, uptime, event-loop lag); call `close()` to stop
 * their lag sampler.
 */
export class WorkerMetrics {
  readonly registry: client.Registry = new client.Registry();
  /** Process series (resident memory, heap, uptime, event-loop lag). */
  readonly process: ProcessMetrics;
  readonly requests: client.Counter<"model" | "endpoint" | "status"> = new client.Counter({
    ...REQUESTS_SERIES,
    labelNames: REQUESTS_SERIES.labelNames,
    registers: [this.registry],
  });
  readonly duration: client.Histogram<"model" | "endpoint" | "phase"> = new client.Histogram({
    ...DURATION_SERIES,
    labelNames: DURATION_SERIES.labelNames,
    registers: [this.registry],
  });
  readonly batchSize: client.Histogram<"model"> = new client.Histogram({
    ...MODEL_SERIES.batchSize,
    buckets: [...BATCH_SIZE_BUCKETS],
    registers: [this.registry],
  });
  readonly tokens: client.Counter<"model"> = new client.Counter({
    ...MODEL_SERIES.tokens,
    registers: [this.registry],
  });
  readonly paddedTokens: client.Counter<"model"> = new client.Counter({
    name: "svc_padded_tokens_total",
    help: "Tokens run including padding (batch × longest), for padding efficiency",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly queueDepth: client.Gauge<"model"> = new client.Gauge({
    ...MODEL_SERIES.queueDepth,
    registers: [this.registry],
  });
  readonly computeThreads: client.Gauge = new client.Gauge({
    name: "svc_compute_threads",
    help: "ONNX Runtime intra-op threads every session gets (the worker's compute budget)",
    registers: [this.registry],
  });
  readonly modelLoaded: client.Gauge<"model" | "device"> = new client.Gauge({
    ...MODEL_SERIES.modelLoaded,
    registers: [this.registry],
  });
  readonly modelMemory: client.Gauge<"model" | "device"> = new client.Gauge({
    ...MODEL_SERIES.modelMemory,
    registers: [this.registry],
  });
  /**
   * Per model: tokens and the batch-size histogram so far, as plain numbers the fleet link sends
   * the router in its status frames (prom-client's own values are only readable asynchronously).
   */
  readonly #batches = new Map<string, BatchTotals>();

  readonly loraRequests: client.Counter<"model" | "endpoint" | "lora" | "status"> = new client
    .Counter({
    name: "svc_lora_requests_total",
    help: "Requests that named a LoRA adapter, by adapter (loaded adapters, at most 64 ids; " +
      "others are `other`)",
    labelNames: ["model", "endpoint", "lora", "status"] as const,
    registers: [this.registry],
  });

  constructor(opts: { startedAtMs?: number } = {}) {
    this.process = registerProcessMetrics(this.registry, {
      startedAtMs: opts.startedAtMs ?? Date.now(),
    });
  }

  /** Stop background sampling (the worker's close()). */
  close(): void {
    this.process.stop();
  }

  /** Record one inference batch of `model`: its size and tokens (with and without padding). */
  observeBatch(model: string, size: number, tokens: number, paddedTokens: number): void {
    this.batchSize.observe({ model }, size);
    this.tokens.inc({ model }, tokens);
    this.paddedTokens.inc({ model }, paddedTokens);
    let t = this.#batches.get(model);
    if (!t) {
      t = { tokens: 0, counts: BATCH_SIZE_BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.#batches.set(model, t);
    }
    t.tokens += tokens;
    BATCH_SIZE_BUCKETS.forEach((le, i) => {
      if (size <= le) t.counts[i]++;
    });
    t.sum += size;
    t.count++;
  }

  /** Tokens and batch sizes of `model` so far (cumulative), or undefined before its first batch. */
  batchTotals(model: string): Readonly<BatchTotals> | undefined {
    return this.#batches.get(model);
  }

  /** Record one request's phases (milliseconds in, seconds out). */
  observeRequest(
    model: string,
    endpoint: string,
    status: number,
    phasesMs: Partial<Record<Phase, number>>,
  ): void {
    this.requests.inc({ model, endpoint, status: String(status) });
    for (const [phase, ms] of Object.entries(phasesMs)) {
      if (ms !== undefined) this.duration.observe({ model, endpoint, phase }, ms / 1000);
    }
  }

  /** Text exposition of every series. */
  async render(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
