/**
 * Request rates per worker for the fleet page, from the router's own counter of forwarded
 * requests (`svc_router_upstream_requests_total`). Rates are per router process: on Deno Deploy
 * each isolate sees the traffic it forwarded itself.
 */
import type { WorkerRecord } from "../directory/types.ts";
import type { RouterMetrics } from "../metrics/router_metrics.ts";

/** Requests forwarded to each of `workers` so far (all affinities), by worker id. */
export async function forwardedTo(
  metrics: RouterMetrics,
  workers: readonly WorkerRecord[],
): Promise<Map<string, number>> {
  const byId = new Map(workers.map((w) => [w.id, w]));
  const totals = new Map(workers.map((w) => [w.id, 0]));
  for (const { labels, value } of await metrics.upstream.values()) {
    const w = byId.get(labels.worker_id);
    // Series of an earlier registration of the id (another pool or bundle) are not this one's.
    if (!w || labels.pool !== w.pool || labels.bundle !== w.bundle) continue;
    totals.set(w.id, totals.get(w.id)! + value);
  }
  return totals;
}

/** Turns cumulative counts into per-second rates between successive samples. */
export class RateTracker {
  readonly #prev = new Map<string, { count: number; at: number }>();

  /**
   * The rate of each key since its previous sample (0 on its first sample). Keys not in
   * `counts` are forgotten, so departed workers do not accumulate.
   */
  sample(counts: ReadonlyMap<string, number>, nowMs: number): Map<string, number> {
    const rates = new Map<string, number>();
    for (const [key, count] of counts) {
      const p = this.#prev.get(key);
      const dt = p ? (nowMs - p.at) / 1000 : 0;
      rates.set(key, p && dt > 0 ? Math.max(0, count - p.count) / dt : 0);
      this.#prev.set(key, { count, at: nowMs });
    }
    for (const key of this.#prev.keys()) if (!counts.has(key)) this.#prev.delete(key);
    return rates;
  }
}

/**
 * Per-second rates of cumulative counts over a sliding window, for streams that sample more
 * often than requests arrive (a 200 ms tick would read 5 req/s as 0, 5, 0...). Keys not in a
 * sample are forgotten. A key keeps at most one sample per twentieth of the window, so callers
 * that sample on demand (every `/health` request) keep a bounded history however often they call.
 */
export class WindowRates {
  readonly #history = new Map<string, { count: number; at: number }[]>();

  constructor(private readonly windowMs = 2000) {}

  /** The rate of each key over the window that ends now (0 until a second sample). */
  sample(counts: ReadonlyMap<string, number>, nowMs: number): Map<string, number> {
    const rates = new Map<string, number>();
    const minGapMs = this.windowMs / 20;
    for (const [key, count] of counts) {
      const h = this.#history.get(key) ?? [];
      const last = h.at(-1);
      if (!last || nowMs - last.at >= minGapMs) h.push({ count, at: nowMs });
      // Keep the newest sample at least a window old, as the window's start.
      while (h.length > 2 && nowMs - h[1].at >= this.windowMs) h.shift();
      this.#history.set(key, h);
      const first = h[0];
      const dt = (nowMs - first.at) / 1000;
      rates.set(key, dt > 0 ? Math.max(0, count - first.count) / dt : 0);
    }
    for (const key of this.#history.keys()) if (!counts.has(key)) this.#history.delete(key);
    return rates;
  }
}
