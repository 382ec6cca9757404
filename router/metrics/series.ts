/**
 * The router's metrics are plain prom-client metrics, as the worker's are; these wrappers add only
 * a cap on series per metric (label values come from clients and workers) and the pruning of
 * series whose worker left. prom-client's inc/observe cost 3-4 µs for the nine updates of a
 * proxied request on a quiet run of this 2-core machine (0.6-0.9 µs for the hand-kept value store
 * they replaced): under 1 % of the router's 1.8 ms of CPU per request, so prom-client keeps values.
 */
import client from "prom-client";

/** Label values by label name. */
export type Labels<L extends string> = Readonly<Record<L, string>>;

/** Series beyond this many per metric are dropped, so hostile label values cannot exhaust memory. */
export const MAX_SERIES_PER_METRIC = 2000;

/** Name, help and label names of a metric. */
export interface MetricSpec<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

/** Name, help, label names and upper bounds of a histogram. */
export type HistogramSpec<L extends string> = MetricSpec<L> & { buckets: readonly number[] };

/** One series as prom-client reports it. */
export interface SeriesValue<L extends string> {
  labels: Labels<L>;
  value: number;
}

/**
 * The label sets a metric has admitted, at most {@link MAX_SERIES_PER_METRIC}: one map level per
 * label name, so checking a request's labels builds no key string (that took 2-4 µs of the nine
 * updates of a proxied request; the levels take a tenth of it).
 */
class Admitted<L extends string> {
  readonly #names: readonly L[];
  #root = new Map<string, unknown>();
  #size = 0;

  constructor(names: readonly L[]) {
    this.#names = names;
  }

  /** True when `labels` has a series already or the cap leaves room for one. */
  admit(labels: Labels<L>): boolean {
    const n = this.#names.length;
    let level = this.#root;
    for (let i = 0; i < n - 1; i++) {
      const value = labels[this.#names[i]] ?? "";
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (!next) {
        if (this.#size >= MAX_SERIES_PER_METRIC) return false;
        level.set(value, next = new Map());
      }
      level = next;
    }
    const last = n === 0 ? "" : labels[this.#names[n - 1]] ?? "";
    if (level.has(last)) return true;
    if (this.#size >= MAX_SERIES_PER_METRIC) return false;
    level.set(last, { ...labels });
    this.#size++;
    return true;
  }

  /** Forget the label sets `drop` accepts, and return them. */
  drop(drop: (labels: Labels<L>) => boolean): Labels<L>[] {
    const all = this.#all();
    const dropped = all.filter(drop);
    if (dropped.length === 0) return dropped;
    this.clear();
    for (const labels of all) if (!drop(labels)) this.admit(labels);
    return dropped;
  }

  /** Forget every label set. */
  clear(): void {
    this.#root = new Map();
    this.#size = 0;
  }

  /** Every admitted label set (the leaves of the levels). */
  #all(): Labels<L>[] {
    const out: Labels<L>[] = [];
    const walk = (level: Map<string, unknown>, depth: number) => {
      for (const v of level.values()) {
        if (depth >= this.#names.length - 1) out.push(v as Labels<L>);
        else walk(v as Map<string, unknown>, depth + 1);
      }
    };
    walk(this.#root, 0);
    return out;
  }
}

/** Label values of one series, as prom-client types them. */
function promLabels<L extends string>(labels: Labels<L>): client.LabelValues<L> {
  return labels as client.LabelValues<L>;
}

/** The value of one series of a counter or gauge (0 when it has none). */
async function seriesValue<L extends string>(
  metric: client.Counter<L> | client.Gauge<L>,
  labels: Labels<L>,
): Promise<number> {
  const names = Object.keys(labels) as L[];
  const { values } = await metric.get();
  const found = values.find((v) => names.every((n) => String(v.labels[n]) === labels[n]));
  return found?.value ?? 0;
}

/** A prom-client counter with a cap on series. */
export class CappedCounter<L extends string = never> {
  /** The prom-client counter. */
  readonly metric: client.Counter<L>;
  readonly #admitted: Admitted<L>;

  constructor(registry: client.Registry, spec: MetricSpec<L>) {
    const labelNames = [...spec.labelNames ?? []];
    this.metric = new client.Counter<L>({ ...spec, labelNames, registers: [registry] });
    this.#admitted = new Admitted(labelNames);
  }

  /** Add `by` (default 1) to the series, unless the cap leaves no room for a new one. */
  inc(labels: Labels<L> = {} as Labels<L>, by = 1): void {
    if (this.#admitted.admit(labels)) this.metric.inc(promLabels(labels), by);
  }

  /** Current value of one series (0 when absent). */
  value(labels: Labels<L> = {} as Labels<L>): Promise<number> {
    return seriesValue(this.metric, labels);
  }

  /** Every series with its value. */
  async values(): Promise<SeriesValue<L>[]> {
    const { values } = await this.metric.get();
    return values.map((v) => ({ labels: v.labels as Labels<L>, value: v.value }));
  }

  /**
   * Drop the series whose `label` is not in `keep` (workers that left: their ids are random per
   * process start, so without this they would fill the series cap over time).
   */
  retainWhere(label: L, keep: ReadonlySet<string>): void {
    for (const labels of this.#admitted.drop((l) => !keep.has(l[label]))) {
      this.metric.remove(promLabels(labels));
    }
  }
}

/** A prom-client gauge with a cap on series; computed gauges are reset and set by a collector. */
export class CappedGauge<L extends string = never> {
  /** The prom-client gauge. */
  readonly metric: client.Gauge<L>;
  readonly #admitted: Admitted<L>;

  constructor(registry: client.Registry, spec: MetricSpec<L>) {
    const labelNames = [...spec.labelNames ?? []];
    this.metric = new client.Gauge<L>({ ...spec, labelNames, registers: [registry] });
    this.#admitted = new Admitted(labelNames);
  }

  /** Set the series to `value`, unless the cap leaves no room for a new one. */
  set(labels: Labels<L>, value: number): void {
    if (this.#admitted.admit(labels)) this.metric.set(promLabels(labels), value);
  }

  /** Current value of one series (0 when absent). */
  value(labels: Labels<L> = {} as Labels<L>): Promise<number> {
    return seriesValue(this.metric, labels);
  }

  /** Forget every series. */
  reset(): void {
    this.metric.reset();
    this.#admitted.clear();
  }
}

/** A prom-client histogram with a cap on series. */
export class CappedHistogram<L extends string = never> {
  /** The prom-client histogram. */
  readonly metric: client.Histogram<L>;
  readonly #admitted: Admitted<L>;
  readonly #countName: string;

  constructor(registry: client.Registry, spec: HistogramSpec<L>) {
    const labelNames = [...spec.labelNames ?? []];
    this.#countName = `${spec.name}_count`;
    this.metric = new client.Histogram<L>({
      ...spec,
      labelNames,
      buckets: [...spec.buckets],
      registers: [registry],
    });
    this.#admitted = new Admitted(labelNames);
  }

  /** Record one observation, unless the cap leaves no room for a new series. */
  observe(labels: Labels<L>, value: number): void {
    if (this.#admitted.admit(labels)) this.metric.observe(promLabels(labels), value);
  }

  /** Number of observations of one series. */
  async count(labels: Labels<L>): Promise<number> {
    const names = Object.keys(labels) as L[];
    const { values } = await this.metric.get();
    const found = values.find((v) =>
      v.metricName === this.#countName &&
      names.every((n) => String(v.labels[n]) === labels[n])
    );
    return found?.value ?? 0;
  }
}

/** One histogram series added from cumulative counts: per bound (Prometheus semantics), sum, count. */
interface SummedSeries<L extends string> {
  labels: Labels<L>;
  counts: number[];
  sum: number;
  count: number;
}

/** prom-client's reader of a histogram's values (undeclared in its types). */
interface PromStringSource {
  getForPromString(this: client.Histogram): Promise<Record<string, unknown>>;
}

/**
 * A histogram whose cumulative counts are added from outside, not observed one value at a time:
 * the router's `svc_batch_size` sums what its workers report, and prom-client has no way to add
 * counts per bucket. prom-client (15, pinned) reads a histogram's values through its undeclared
 * getForPromString, for the text exposition and for get() alike, so that answers from these sums,
 * in prom-client's own row shape.
 */
export class SummedHistogram<L extends string = never> {
  readonly #series = new Map<string, SummedSeries<L>>();
  readonly #names: readonly L[];
  readonly #bounds: readonly number[];

  constructor(registry: client.Registry, spec: HistogramSpec<L>) {
    this.#names = [...spec.labelNames ?? []];
    this.#bounds = [...spec.buckets];
    const series = this.#series;
    const bounds = this.#bounds;
    const name = spec.name;
    const own = (client.Histogram.prototype as unknown as PromStringSource).getForPromString;
    class FromSums extends client.Histogram<L> {
      async getForPromString() {
        const base = await own.call(this as unknown as client.Histogram);
        const values: Record<string, unknown>[] = [];
        const row = (value: number, le: object, labels: object, suffix: string) =>
          values.push({ value, labels: le, sharedLabels: labels, metricName: `${name}_${suffix}` });
        for (const s of series.values()) {
          bounds.forEach((le, i) => row(s.counts[i] ?? 0, { le }, s.labels, "bucket"));
          row(s.count, { le: "+Inf" }, s.labels, "bucket");
          row(s.sum, {}, s.labels, "sum");
          row(s.count, {}, s.labels, "count");
        }
        return { ...base, values };
      }
    }
    new FromSums({
      name,
      help: spec.help,
      labelNames: [...this.#names],
      buckets: [...bounds],
      registers: [registry],
    });
  }

  /** Add cumulative counts per bound, a sum and a count to one series (capped like the others). */
  add(labels: Labels<L>, counts: readonly number[], sum: number, count: number): void {
    let key = "";
    for (const n of this.#names) key += (labels[n] ?? "") + "\u0000";
    let s = this.#series.get(key);
    if (!s) {
      if (this.#series.size >= MAX_SERIES_PER_METRIC) return;
      s = { labels: { ...labels }, counts: this.#bounds.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    for (let i = 0; i < s.counts.length; i++) s.counts[i] += counts[i] ?? 0;
    s.sum += sum;
    s.count += count;
  }
}

/** A prom-client registry whose collectors run just before each exposition. */
export class MetricsRegistry {
  /** The prom-client registry the metrics register in. */
  readonly registry: client.Registry = new client.Registry();
  readonly #collectors: (() => void)[] = [];

  /** Run `fn` before each exposition (to fill computed gauges). */
  onCollect(fn: () => void): void {
    this.#collectors.push(fn);
  }

  /** Content type of the exposition (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The whole exposition, after the collectors ran. */
  async render(): Promise<string> {
    for (const c of this.#collectors) c();
    return await this.registry.metrics();
  }
}
