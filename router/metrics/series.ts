/**
 * prom-client metrics with the router's series discipline: label values by name (typed by the
 * metric's label names), a cap on series per metric (label values come from clients and workers,
 * so hostile values must not exhaust memory), and pruning of series whose worker left. prom-client
 * holds the values and gives them back (`value`, `count`); these wrappers only remember which
 * series exist, for the cap and the pruning.
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

/** One value prom-client reports for a metric. */
interface Reported {
  value: number;
  labels: Partial<Record<string, string | number>>;
  metricName?: string;
}

/** The series a metric has (label sets, capped); prom-client keeps their values. */
abstract class Series<L extends string> {
  readonly #series = new Map<string, Labels<L>>();
  protected readonly labelNames: readonly L[];
  protected abstract readonly metric: client.Counter<L> | client.Gauge<L> | client.Histogram<L>;

  constructor(spec: MetricSpec<L>) {
    this.labelNames = spec.labelNames ?? [];
  }

  #keyOf(labels: Labels<L>): string {
    return this.labelNames.map((n) => labels[n]).join("\u0000");
  }

  /** True when the series may be written: it exists, or the cap leaves room for it. */
  protected admit(labels: Labels<L>): boolean {
    const key = this.#keyOf(labels);
    if (this.#series.has(key)) return true;
    if (this.#series.size >= MAX_SERIES_PER_METRIC) return false;
    this.#series.set(key, { ...labels });
    return true;
  }

  /** Forget every series (computed gauges are refilled by a collector). */
  protected forgetAll(): void {
    this.#series.clear();
  }

  /** What prom-client reports of this metric whose labels are `labels`. */
  protected async reported(labels: Labels<L>): Promise<Reported[]> {
    const { values } = await this.metric.get();
    return (values as Reported[]).filter((v) =>
      this.labelNames.every((n) => String(v.labels[n] ?? "") === labels[n])
    );
  }

  /**
   * Drop the series whose `label` is not in `keep` (workers that left: their ids are random per
   * process start, so without this they would fill the series cap over time).
   */
  retainWhere(label: L, keep: ReadonlySet<string>): void {
    for (const [key, labels] of this.#series) {
      if (keep.has(labels[label])) continue;
      this.#series.delete(key);
      this.metric.remove(labels as client.LabelValues<L>);
    }
  }
}

/** Counters and gauges: one value per series. */
abstract class ValueSeries<L extends string> extends Series<L> {
  protected abstract override readonly metric: client.Counter<L> | client.Gauge<L>;

  /** Current value of one series (0 when absent). */
  async value(labels: Labels<L> = {} as Labels<L>): Promise<number> {
    return (await this.reported(labels))[0]?.value ?? 0;
  }

  /** Every series with its value, as prom-client reports them. */
  async values(): Promise<{ labels: Labels<L>; value: number }[]> {
    const { values } = await this.metric.get();
    return (values as Reported[]).map((v) => ({
      labels: v.labels as unknown as Labels<L>,
      value: v.value,
    }));
  }
}

/** Monotonic counter. */
export class SeriesCounter<L extends string = never> extends ValueSeries<L> {
  protected readonly metric: client.Counter<L>;

  constructor(registry: client.Registry, spec: MetricSpec<L>) {
    super(spec);
    this.metric = new client.Counter({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      registers: [registry],
    });
  }

  /** Add `by` (default 1) to the series. */
  inc(labels: Labels<L> = {} as Labels<L>, by = 1): void {
    if (this.admit(labels)) this.metric.inc(labels as client.LabelValues<L>, by);
  }
}

/** Gauge; computed gauges are reset and refilled by a collector before each exposition. */
export class SeriesGauge<L extends string = never> extends ValueSeries<L> {
  protected readonly metric: client.Gauge<L>;

  constructor(registry: client.Registry, spec: MetricSpec<L>) {
    super(spec);
    this.metric = new client.Gauge({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      registers: [registry],
    });
  }

  /** Set the series to `value`. */
  set(labels: Labels<L>, value: number): void {
    if (this.admit(labels)) this.metric.set(labels as client.LabelValues<L>, value);
  }

  /** Forget every series. */
  reset(): void {
    this.forgetAll();
    this.metric.reset();
  }
}

/** Cumulative histogram with fixed upper bounds. */
export class SeriesHistogram<L extends string = never> extends Series<L> {
  protected readonly metric: client.Histogram<L>;
  readonly #countName: string;

  constructor(
    registry: client.Registry,
    spec: MetricSpec<L> & { buckets: readonly number[] },
  ) {
    super(spec);
    this.#countName = `${spec.name}_count`;
    this.metric = new client.Histogram({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      buckets: [...spec.buckets],
      registers: [registry],
    });
  }

  /** Record one observation. */
  observe(labels: Labels<L>, value: number): void {
    if (this.admit(labels)) this.metric.observe(labels as client.LabelValues<L>, value);
  }

  /** Number of observations of one series. */
  async count(labels: Labels<L>): Promise<number> {
    const counts = (await this.reported(labels)).filter((v) => v.metricName === this.#countName);
    return counts[0]?.value ?? 0;
  }
}

/** prom-client's undeclared reader of a metric's values (see SummedHistogram). */
interface PromStringSource {
  getForPromString(this: client.Histogram): Promise<Record<string, unknown>>;
}

/**
 * A histogram whose cumulative counts are added from outside, not observed one value at a time:
 * the router's `svc_batch_size` sums what its workers report. prom-client cannot take counts, so
 * this one keeps them itself and is exposed like any prom-client histogram (text and JSON), so
 * /metrics and the status stream read it the same way.
 */
export class SummedHistogram<L extends string = never> {
  readonly #book = new Map<
    string,
    { labels: Labels<L>; counts: number[]; sum: number; count: number }
  >();
  readonly #bounds: readonly number[];
  readonly #labelNames: readonly L[];

  constructor(registry: client.Registry, spec: MetricSpec<L> & { buckets: readonly number[] }) {
    this.#bounds = [...spec.buckets];
    this.#labelNames = spec.labelNames ?? [];
    const book = this.#book;
    const bounds = this.#bounds;
    const name = spec.name;
    // prom-client (15, pinned) reads a histogram's values through its undeclared
    // getForPromString, for the text exposition and for get() alike: answer from the book.
    const ownValues = (client.Histogram.prototype as unknown as PromStringSource).getForPromString;
    class Summed extends client.Histogram {
      async getForPromString() {
        const base = await ownValues.call(this);
        const values: {
          value: number;
          labels: Record<string, string>;
          sharedLabels: Record<string, string>;
          metricName: string;
        }[] = [];
        const row = (value: number, labels: Record<string, string>, suffix: string) =>
          values.push({ value, labels, sharedLabels: {}, metricName: `${name}_${suffix}` });
        for (const s of book.values()) {
          const labels: Record<string, string> = { ...s.labels };
          bounds.forEach((le, i) => row(s.counts[i] ?? 0, { ...labels, le: String(le) }, "bucket"));
          row(s.count, { ...labels, le: "+Inf" }, "bucket");
          row(s.sum, labels, "sum");
          row(s.count, labels, "count");
        }
        return { ...base, values };
      }
    }
    new Summed({
      name,
      help: spec.help,
      labelNames: [...this.#labelNames],
      buckets: [...bounds],
      registers: [registry],
    });
  }

  #keyOf(labels: Labels<L>): string {
    return this.#labelNames.map((n) => labels[n]).join("\u0000");
  }

  /** Add cumulative counts per bound, a sum and a count to one series (capped like the others). */
  add(labels: Labels<L>, counts: readonly number[], sum: number, count: number): void {
    const key = this.#keyOf(labels);
    let s = this.#book.get(key);
    if (!s) {
      if (this.#book.size >= MAX_SERIES_PER_METRIC) return;
      s = { labels: { ...labels }, counts: this.#bounds.map(() => 0), sum: 0, count: 0 };
      this.#book.set(key, s);
    }
    for (let i = 0; i < s.counts.length; i++) s.counts[i] += counts[i] ?? 0;
    s.sum += sum;
    s.count += count;
  }
}

/** A prom-client registry whose collectors run just before each exposition. */
export class MetricsRegistry {
  /** The prom-client registry the series register in. */
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
