/**
 * The request series both processes expose on /metrics (and in their status streams), defined
 * once so the router's fleet-wide series read exactly like each worker's.
 */
import { operationOfPath } from "../operations.ts";

/** Latency phases of `svc_request_duration_seconds`. */
export type Phase = "queue" | "tokenization" | "inference" | "postprocessing" | "total";

/** `svc_requests_total`: one count per answered model request. */
export const REQUESTS_SERIES = {
  name: "svc_requests_total",
  help: "Total requests by model, endpoint and HTTP status",
  labelNames: ["model", "endpoint", "status"] as const,
};

/** `svc_request_duration_seconds`: request latency per phase. */
export const DURATION_SERIES = {
  name: "svc_request_duration_seconds",
  help: "Request latency by phase",
  labelNames: ["model", "endpoint", "phase"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
};

/**
 * The endpoint label of a model-operation path (shared/operations.ts): `encode`, `score`,
 * `extract`, `embeddings`, and `rerank` / `embed` for Cohere's routes (one label per API version).
 */
export function apiEndpointOf(path: string): string | undefined {
  return operationOfPath(path)?.endpoint;
}

/** Upper bounds of `svc_batch_size` (items per inference batch). */
export const BATCH_SIZE_BUCKETS: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/**
 * The worker's model series, which the router serves too (summed over its workers): name, help
 * and labels defined once.
 */
export const MODEL_SERIES = {
  batchSize: {
    name: "svc_batch_size",
    help: "Items per inference batch",
    labelNames: ["model"] as const,
  },
  tokens: {
    name: "svc_tokens_processed_total",
    help: "Tokens run through models (without padding)",
    labelNames: ["model"] as const,
  },
  queueDepth: {
    name: "svc_queue_depth",
    help: "Items waiting per model",
    labelNames: ["model"] as const,
  },
  modelLoaded: {
    name: "svc_model_loaded",
    help: "1 when the model is loaded, 0 otherwise",
    labelNames: ["model", "device"] as const,
  },
  modelMemory: {
    name: "svc_model_memory_bytes",
    help: "Memory held by the model's weights",
    labelNames: ["model", "device"] as const,
  },
};
