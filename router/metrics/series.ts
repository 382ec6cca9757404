/**
 * prom-client metrics with the router's series discipline: label values by position, a cap on
 * series per metric (label values come from clients and workers, so hostile values must not
 * exhaust memory), pruning of series whose worker left, and synchronous reads for the fleet page
 * and tests. prom-client does the exposition; these wrappers keep the series book.
 */
import client from "prom-client";

/** Label values in the order of the metric's label names. */
export type LabelValues = readonly string[];

/** Series beyond this many per metric are dropped, so hostile label values cannot exhaust memory. */
export const MAX_SERIES_PER_METRIC = 2000;

/** Name, help and label names of a metric. */
export interface MetricSpec {
  name: string;
  help: string;
  labelNames?: readonly string[];
}

/** Key of a series in the book. */
function keyOf(labels: LabelValues): string {
  return labels.join("\u0000");
}

/** The series book shared by the wrappers: label values → value, capped. */
abstract class Series<M extends client.Counter | client.Gauge | client.Histogram> {
  protected readonly book: Map<string, { labels: LabelValues; value: number }> = new Map();
  protected readonly labelNames: readonly string[];
  protected abstract readonly metric: M;

  constructor(spec: MetricSpec) {
    this.labelNames = spec.labelNames ?? [];
  }

  /** prom-client's label object for positional values. */
  protected labelsOf(values: LabelValues): client.LabelValues<string> {
    const out: Record<string, string> = {};
    this.labelNames.forEach((n, i) => out[n] = values[i] ?? "");
    return out;
  }

  /** The book entry of a series, created unless the cap is reached. */
  protected slot(labels: LabelValues): { labels: LabelValues; value: number } | undefined {
    const key = keyOf(labels);
    let s = this.book.get(key);
    if (!s) {
      if (this.book.size >= MAX_SERIES_PER_METRIC) return undefined;
      s = { labels: [...labels], value: 0 };
      this.book.set(key, s);
    }
    return s;
  }

  /** Current value of one series (0 when absent). */
  get(labels: LabelValues = []): number {
    return this.book.get(keyOf(labels))?.value ?? 0;
  }

  /**
   * Drop the series whose label at `index` is not in `keep` (workers that left: their ids are
   * random per process start, so without this they would fill the series cap over time).
   */
  retainWhere(index: number, keep: ReadonlySet<string>): void {
    for (const [key, s] of this.book) {
      if (keep.has(s.labels[index])) continue;
      this.book.delete(key);
      this.metric.remove(this.labelsOf(s.labels));
    }
  }
}

/** Monotonic counter. */
export class SeriesCounter extends Series<client.Counter> {
  protected readonly metric: client.Counter;

  constructor(registry: client.Registry, spec: MetricSpec) {
    super(spec);
    this.metric = new client.Counter({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      registers: [registry],
    });
  }

  /** Add `by` (default 1) to the series. */
  inc(labels: LabelValues = [], by = 1): void {
    const s = this.slot(labels);
    if (!s) return;
    s.value += by;
    this.metric.inc(this.labelsOf(labels), by);
  }
}

/** Gauge; computed gauges are reset and refilled by a collector before each exposition. */
export class SeriesGauge extends Series<client.Gauge> {
  protected readonly metric: client.Gauge;

  constructor(registry: client.Registry, spec: MetricSpec) {
    super(spec);
    this.metric = new client.Gauge({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      registers: [registry],
    });
  }

  /** Set the series to `value`. */
  set(labels: LabelValues, value: number): void {
    const s = this.slot(labels);
    if (!s) return;
    s.value = value;
    this.metric.set(this.labelsOf(labels), value);
  }

  /** Forget every series. */
  reset(): void {
    this.book.clear();
    this.metric.reset();
  }
}

/** Cumulative histogram with fixed upper bounds; the book counts observations per series. */
export class SeriesHistogram extends Series<client.Histogram> {
  protected readonly metric: client.Histogram;

  constructor(registry: client.Registry, spec: MetricSpec & { buckets: readonly number[] }) {
    super(spec);
    this.metric = new client.Histogram({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      buckets: [...spec.buckets],
      registers: [registry],
    });
  }

  /** Record one observation. */
  observe(labels: LabelValues, value: number): void {
    const s = this.slot(labels);
    if (!s) return;
    s.value++;
    this.metric.observe(this.labelsOf(labels), value);
  }

  /** Number of observations of one series. */
  count(labels: LabelValues): number {
    return this.get(labels);
  }
}

/** prom-client's undeclared reader of a metric's values (see SummedHistogram). */
interface PromStringSource {
  getForPromString(this: client.Histogram): Promise<Record<string, unknown>>;
}

/**
 * A histogram whose cumulative counts are added from outside, not observed one value at a time:
 * the router's `svc_batch_size` sums what its workers report. Exposed like any prom-client
 * histogram (text and JSON), so /metrics and the status stream read it the same way.
 */
export class SummedHistogram {
  readonly #book = new Map<
    string,
    { labels: LabelValues; counts: number[]; sum: number; count: number }
  >();
  readonly #bounds: readonly number[];
  readonly #labelNames: readonly string[];

  constructor(registry: client.Registry, spec: MetricSpec & { buckets: readonly number[] }) {
    this.#bounds = [...spec.buckets];
    this.#labelNames = spec.labelNames ?? [];
    const book = this.#book;
    const bounds = this.#bounds;
    const labelsOf = (values: LabelValues) => this.#labelsOf(values);
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
          const labels = labelsOf(s.labels);
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

  #labelsOf(values: LabelValues): Record<string, string> {
    const out: Record<string, string> = {};
    this.#labelNames.forEach((n, i) => out[n] = values[i] ?? "");
    return out;
  }

  /** Add cumulative counts per bound, a sum and a count to one series (capped like the others). */
  add(labels: LabelValues, counts: readonly number[], sum: number, count: number): void {
    const key = labels.join("\u0000");
    let s = this.#book.get(key);
    if (!s) {
      if (this.#book.size >= MAX_SERIES_PER_METRIC) return;
      s = { labels: [...labels], counts: this.#bounds.map(() => 0), sum: 0, count: 0 };
      this.#book.set(key, s);
    }
    for (let i = 0; i < s.counts.length; i++) s.counts[i] += counts[i] ?? 0;
    s.sum += sum;
    s.count += count;
  }

  /** Observations of one series so far. */
  count(labels: LabelValues): number {
    return this.#book.get(labels.join("\u0000"))?.count ?? 0;
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
