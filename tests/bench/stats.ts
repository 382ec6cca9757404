/** Summary statistics of samples: medians, percentiles, latency summaries, ratios. */

/** Latency summary of one scenario, in milliseconds. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** The `q`-quantile (0..1) of the samples by linear interpolation; NaN when there are none. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const pos = Math.min(1, Math.max(0, q)) * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** The median of the samples (NaN when empty). */
export function median(samples: readonly number[]): number {
  return quantile(samples, 0.5);
}

/** Count, mean, p50, p90, p99 and max of latency samples. */
export function summarize(samples: readonly number[]): LatencySummary {
  const count = samples.length;
  const mean = count === 0 ? NaN : samples.reduce((a, b) => a + b, 0) / count;
  return {
    count,
    p50: quantile(samples, 0.5),
    p90: quantile(samples, 0.9),
    p99: quantile(samples, 0.99),
    // A loop rather than Math.max(...samples): spreading thousands of values can overflow the stack.
    max: samples.reduce((a, b) => Math.max(a, b), count === 0 ? NaN : -Infinity),
    mean,
  };
}

/** The value seen most often (ties: the one seen first); a thread count is a label, not a scale. */
export function mostFrequent(values: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best = values[0];
  for (const [v, n] of counts) if (n > (counts.get(best) ?? 0)) best = v;
  return best;
}

/** Round to `digits` decimals, keeping JSON small and readable (NaN becomes null upstream). */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
