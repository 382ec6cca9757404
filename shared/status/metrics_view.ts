/**
 * A compact JSON view of a process's counters and histograms, for the status streams of worker
 * and router (`counters` and `histograms` fields of /ws/status). Shape:
 *
 *   counters:   { "<metric>": [{ "labels": { "<name>": "<value>", ... }, "value": 12 }, ...] }
 *   histograms: { "<metric>": { "buckets": [0.001, 0.005, ...],
 *                               "series": [{ "labels": {...}, "count": 12, "sum": 0.084,
 *                                            "counts": [0, 3, ...] }] } }
 *
 * `buckets` are the upper bounds (seconds, items...) shared by every series of the metric;
 * `counts[i]` is the cumulative number of observations <= `buckets[i]` (Prometheus semantics;
 * `count` is the +Inf bucket). Series that were never observed are left out.
 */
import client from "prom-client";

/** Label name → value of one series. */
export type SeriesLabels = Record<string, string>;

/** One counter series. */
export interface CounterSeries {
  labels: SeriesLabels;
  value: number;
}

/** One histogram series (cumulative counts per bucket). */
export interface HistogramSeries {
  labels: SeriesLabels;
  count: number;
  sum: number;
  counts: number[];
}

/** One histogram metric: its bucket bounds and its series. */
export interface HistogramView {
  buckets: number[];
  series: HistogramSeries[];
}

/** The `counters` and `histograms` of a status message. */
export interface MetricsView {
  counters: Record<string, CounterSeries[]>;
  histograms: Record<string, HistogramView>;
}

type RawValue = { value: number; labels: Record<string, string | number>; metricName?: string };

/** Label values as strings, without `le` (bucket bound) so a histogram's rows group by series. */
function seriesLabels(labels: Record<string, string | number>): SeriesLabels {
  const out: SeriesLabels = {};
  for (const [k, v] of Object.entries(labels)) if (k !== "le") out[k] = String(v);
  return out;
}

/** Group a histogram's flat rows (`_bucket` per le, `_sum`, `_count`) into series. */
function histogramView(name: string, values: RawValue[]): HistogramView {
  const bounds = new Set<number>();
  const series = new Map<string, HistogramSeries & { byLe: Map<number, number> }>();
  for (const v of values) {
    const labels = seriesLabels(v.labels);
    const key = JSON.stringify(Object.entries(labels).sort());
    let s = series.get(key);
    if (!s) series.set(key, s = { labels, count: 0, sum: 0, counts: [], byLe: new Map() });
    if (v.metricName === `${name}_sum`) s.sum = v.value;
    else if (v.metricName === `${name}_count`) s.count = v.value;
    else if (v.metricName === `${name}_bucket` && v.labels.le !== "+Inf") {
      const le = Number(v.labels.le);
      bounds.add(le);
      s.byLe.set(le, v.value);
    }
  }
  const buckets = [...bounds].sort((a, b) => a - b);
  const out: HistogramSeries[] = [];
  for (const { byLe, ...s } of series.values()) {
    if (s.count === 0) continue;
    out.push({ ...s, sum: round(s.sum), counts: buckets.map((b) => byLe.get(b) ?? 0) });
  }
  return { buckets, series: out };
}

/** Keep JSON short: sums of float seconds carry noise digits nobody reads. */
function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** Read every counter and histogram of `registry` (whose name `include` accepts) into the view. */
export async function metricsView(
  registry: client.Registry,
  include: (name: string) => boolean = () => true,
): Promise<MetricsView> {
  const counters: Record<string, CounterSeries[]> = {};
  const histograms: Record<string, HistogramView> = {};
  // Gauges are skipped on purpose: their collect() callbacks are for scrapes, not 5 Hz ticks.
  for (const metric of registry.getMetricsAsArray()) {
    if (!include((metric as unknown as { name: string }).name)) continue;
    if (metric instanceof client.Counter) {
      const { name, values } = await metric.get();
      counters[name] = (values as RawValue[])
        .filter((v) => v.value !== 0)
        .map((v) => ({ labels: seriesLabels(v.labels), value: v.value }));
    } else if (metric instanceof client.Histogram) {
      const { name, values } = await metric.get();
      histograms[name] = histogramView(name, values as RawValue[]);
    }
  }
  return { counters, histograms };
}
