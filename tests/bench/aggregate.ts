/** Scenario summaries (medians over rounds) and summed counters for results.json. */
import type { ModelCounters } from "./metrics.ts";
import type { ScenarioResult } from "./results.ts";
import type { Sample } from "./samples.ts";
import { median } from "./stats.ts";

/** Scenario summary: medians over rounds of each figure. */
export function scenario(
  id: string,
  description: string,
  samples: (Sample | undefined)[],
  note?: string,
): ScenarioResult {
  const rounds = samples.filter((s): s is Sample => s !== undefined);
  const med = (f: (s: Sample) => number): number | null => {
    const v = rounds.map(f).filter(Number.isFinite);
    return v.length > 0 ? median(v) : null;
  };
  return {
    id,
    description,
    measured: rounds.length > 0,
    note,
    median: {
      requestsPerS: med((s) => s.requestsPerS),
      tokensPerS: med((s) => s.tokensPerS),
      p50Ms: med((s) => s.latency.p50),
      p99Ms: med((s) => s.latency.p99),
    },
    rounds,
  };
}

/** Field-by-field sum of counter deltas. */
export function sumCounters(list: readonly ModelCounters[]): ModelCounters {
  const sum: ModelCounters = { tokens: 0, padded: 0, batchItems: 0, batches: 0 };
  for (const c of list) {
    sum.tokens += c.tokens;
    sum.padded += c.padded;
    sum.batchItems += c.batchItems;
    sum.batches += c.batches;
  }
  return sum;
}
