/** Prometheus metrics of the worker (series and labels exactly as the API defines them). */
import client from "prom-client";
import { DURATION_SERIES, type Phase, REQUESTS_SERIES } from "@svc/shared/status/request_series";
import { type ProcessMetrics, registerProcessMetrics } from "./process_metrics.ts";

export type { Phase };

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
    name: "svc_batch_size",
    help: "Items per inference batch",
    labelNames: ["model"] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [this.registry],
  });
  readonly tokens: client.Counter<"model"> = new client.Counter({
    name: "svc_tokens_processed_total",
    help: "Tokens run through models (without padding)",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly paddedTokens: client.Counter<"model"> = new client.Counter({
    name: "svc_padded_tokens_total",
    help: "Tokens run including padding (batch × longest), for padding efficiency",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly queueDepth: client.Gauge<"model"> = new client.Gauge({
    name: "svc_queue_depth",
    help: "Items waiting per model",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly computeThreads: client.Gauge = new client.Gauge({
    name: "svc_compute_threads",
    help: "ONNX Runtime intra-op threads every session gets (the worker's compute budget)",
    registers: [this.registry],
  });
  readonly modelLoaded: client.Gauge<"model" | "device"> = new client.Gauge({
    name: "svc_model_loaded",
    help: "1 when the model is loaded, 0 otherwise",
    labelNames: ["model", "device"] as const,
    registers: [this.registry],
  });
  readonly modelMemory: client.Gauge<"model" | "device"> = new client.Gauge({
    name: "svc_model_memory_bytes",
    help: "Memory held by the model's weights",
    labelNames: ["model", "device"] as const,
    registers: [this.registry],
  });

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
