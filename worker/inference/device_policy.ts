/**
 * How a device runs a model: the padded tokens of one ONNX run, and the longest item it takes.
 * CPU and GPU want different shapes of work; the registry applies the policy when a model
 * starts, the served catalog when it lists an entry.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";

/** Default cap of padded tokens per ONNX run on CPU. */
export const CPU_RUN_TOKENS = 1024;

/** Default longest item (tokens) on CPU (SVC_CPU_MAX_ITEM_TOKENS). */
export const CPU_MAX_ITEM_TOKENS = 2048;

/**
 * Padded tokens one ONNX run may hold. A batch (up to the model's budget) is cut into runs of at
 * most this size inside the thread. On CPU, runs of about 1k tokens are fastest (measured: 4k-token
 * runs were 16–22% slower, attention falls out of cache); GPUs want the whole budget at once.
 */
export function runTokenBudget(modelBudget: number, device: string, cap: number): number {
  const limit = cap > 0 ? cap : device === "cpu" ? CPU_RUN_TOKENS : modelBudget;
  return Math.min(modelBudget, limit);
}

/**
 * The config a runner starts from: on CPU, `max_sequence_length` at most `cap`. One item is one
 * ONNX run however the batch is cut, and its attention scores grow with the square of its
 * length (8,192 tokens: about 3 GB per layer for 12 heads), so longer texts are truncated like
 * texts past the model's own limit. GPU runners keep the model's length.
 */
export function itemTokenCap(
  config: ModelConfig,
  device: string,
  cap = CPU_MAX_ITEM_TOKENS,
): ModelConfig {
  if (device !== "cpu" || config.max_sequence_length <= cap) return config;
  return { ...config, max_sequence_length: cap };
}
