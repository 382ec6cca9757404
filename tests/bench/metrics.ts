/** Reading the worker's Prometheus counters that the padding and efficiency checks rely on. */

/** The counters of one model, as scraped. */
export interface ModelCounters {
  /** `svc_tokens_processed_total`: real tokens run. */
  tokens: number;
  /** `svc_padded_tokens_total`: tokens run including padding (batch × longest). */
  padded: number;
  /** `svc_batch_size` histogram sum and count: items and batches. */
  batchItems: number;
  batches: number;
}

/** Value of `name{model="…"}` (exact label match) in a Prometheus text exposition; 0 when absent. */
export function readSeries(text: string, name: string, model: string): number {
  const prefix = `${name}{model="${model}"}`;
  for (const line of text.split("\n")) {
    if (line.startsWith(prefix)) return Number(line.slice(prefix.length).trim());
  }
  return 0;
}

/** An unlabelled gauge from a worker's /metrics (NaN when absent). */
export async function scrapeGauge(workerUrl: string, name: string): Promise<number> {
  const res = await fetch(`${workerUrl}/metrics`);
  const line = (await res.text()).split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

/** Parse the counters of `model` from a /metrics body. */
export function parseCounters(text: string, model: string): ModelCounters {
  return {
    tokens: readSeries(text, "svc_tokens_processed_total", model),
    padded: readSeries(text, "svc_padded_tokens_total", model),
    batchItems: readSeries(text, "svc_batch_size_sum", model),
    batches: readSeries(text, "svc_batch_size_count", model),
  };
}

/** Scrape a worker's /metrics for `model`. */
export async function scrapeCounters(workerUrl: string, model: string): Promise<ModelCounters> {
  const res = await fetch(`${workerUrl}/metrics`);
  return parseCounters(await res.text(), model);
}

/** `after − before`, field by field. */
export function counterDelta(before: ModelCounters, after: ModelCounters): ModelCounters {
  return {
    tokens: after.tokens - before.tokens,
    padded: after.padded - before.padded,
    batchItems: after.batchItems - before.batchItems,
    batches: after.batches - before.batches,
  };
}

/** Padding share of the tokens run (0 when nothing ran). */
export function padShare(d: ModelCounters): number {
  return d.padded > 0 ? (d.padded - d.tokens) / d.padded : 0;
}
