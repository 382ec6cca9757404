/** One measurement of a scenario in one round, and how load results turn into one. */
import type { LoadResult } from "./load_types.ts";
import { type LatencySummary, median, summarize } from "./stats.ts";
import type { BenchText } from "./texts.ts";

/** Throughput and latency of one scenario in one round. */
export interface Sample {
  requests: number;
  failed: number;
  tokens: number;
  elapsedMs: number;
  requestsPerS: number;
  tokensPerS: number;
  latency: LatencySummary;
  /**
   * Medians of the time a request spends outside the worker (client latency − X-Total-Time) and
   * outside inference (client latency − X-Inference-Time). Pairing each request with its own
   * server timing removes the (large, noisy) inference time from overhead comparisons.
   */
  outside?: { serverP50: number; inferenceP50: number };
  /**
   * CPU microseconds per request of the service answering (the worker's main thread, the router's
   * whole process), from /proc; absent off Linux and for raw runs.
   */
  cpuUsPerRequest?: number;
}

/** A sample from a load run whose request `i` carried `texts[i]` (one text per request). */
export function sampleFromLoad(result: LoadResult, texts: readonly BenchText[]): Sample {
  let tokens = 0;
  const latencies: number[] = [];
  const outsideServer: number[] = [];
  const outsideInference: number[] = [];
  result.latenciesMs.forEach((ms, i) => {
    if (ms < 0) return;
    tokens += texts[i].tokens;
    latencies.push(ms);
    if (result.serverMs[i] >= 0) outsideServer.push(ms - result.serverMs[i]);
    if (result.inferenceMs[i] >= 0) outsideInference.push(ms - result.inferenceMs[i]);
  });
  const s = result.elapsedMs / 1000;
  return {
    requests: result.ok,
    failed: result.failed,
    tokens,
    elapsedMs: result.elapsedMs,
    requestsPerS: result.ok / s,
    tokensPerS: tokens / s,
    latency: summarize(latencies),
    outside: { serverP50: median(outsideServer), inferenceP50: median(outsideInference) },
  };
}

/** A sample from sequential in-process runs (each one request of `tokensEach` tokens). */
export function sampleFromRuns(latenciesMs: readonly number[], tokensEach: number): Sample {
  const elapsedMs = latenciesMs.reduce((a, b) => a + b, 0);
  const s = elapsedMs / 1000;
  return {
    requests: latenciesMs.length,
    failed: 0,
    tokens: tokensEach * latenciesMs.length,
    elapsedMs,
    requestsPerS: latenciesMs.length / s,
    tokensPerS: (tokensEach * latenciesMs.length) / s,
    latency: summarize(latenciesMs),
  };
}

/** A throughput-only sample (batched raw runs have no per-request latency). */
export function sampleFromBatches(items: number, tokens: number, elapsedMs: number): Sample {
  const s = elapsedMs / 1000;
  return {
    requests: items,
    failed: 0,
    tokens,
    elapsedMs,
    requestsPerS: items / s,
    tokensPerS: tokens / s,
    latency: summarize([]),
  };
}
