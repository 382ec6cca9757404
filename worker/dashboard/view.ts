/**
 * The worker page's pure view helpers. They run in the browser (the page embeds their source
 * with `.toString()`, so they must stay self-contained plain functions) and in tests.
 */

/** Summed latency histogram of one model: cumulative counts per upper bound (seconds). */
export interface LatencyHistogram {
  count: number;
  counts: number[];
  bounds: number[];
}

/**
 * Quantile `q` in milliseconds, interpolated linearly inside the bucket that holds it (what
 * Prometheus' histogram_quantile does), so it is an estimate between two bucket bounds rather
 * than always a bound. Past the last finite bound it answers that bound (a lower limit).
 */
export function latencyQuantile(h: LatencyHistogram | undefined, q: number): number | null {
  if (!h || h.count === 0) return null;
  const target = q * h.count;
  for (let i = 0; i < h.counts.length; i++) {
    if (h.counts[i] < target) continue;
    const lower = i === 0 ? 0 : h.bounds[i - 1];
    const below = i === 0 ? 0 : h.counts[i - 1];
    const inBucket = h.counts[i] - below;
    const share = inBucket > 0 ? (target - below) / inBucket : 1;
    return (lower + (h.bounds[i] - lower) * share) * 1000;
  }
  return h.bounds.length > 0 ? h.bounds[h.bounds.length - 1] * 1000 : null;
}

/** A model row as the page orders it. */
export interface ModelRowFacts {
  name: string;
  state: string;
  last_error?: { code: string; message: string } | null;
  /** `not_cached`: available, but its weights are on no disk of this worker. */
  weights?: string;
}

/**
 * The state the page shows: the stream reports a remembered load failure as `available` (its
 * four-state contract), the page says `failed`; an available model whose weights are not on this
 * machine is `not cached` (the stream's `weights_reason` says what would fetch them).
 */
export function shownState(m: ModelRowFacts): string {
  if (m.state !== "available") return m.state;
  return m.last_error ? "failed" : m.weights === "not_cached" ? "not cached" : m.state;
}

/**
 * Row order: loaded first, then loading/unloading, failed, available, not cached; by name within
 * each.
 */
export function compareModelRows(a: ModelRowFacts, b: ModelRowFacts): number {
  const rank = (m: ModelRowFacts): number => {
    const s = m.state !== "available"
      ? m.state
      : m.last_error
      ? "failed"
      : m.weights === "not_cached"
      ? "not cached"
      : m.state;
    return s === "loaded"
      ? 0
      : s === "loading" || s === "unloading"
      ? 1
      : s === "failed"
      ? 2
      : s === "available"
      ? 3
      : 4;
  };
  return rank(a) - rank(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
