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

/** One series in a book: its label values and value. */
interface Slot {
  labels: LabelValues;
  value: number;
}

/**
 * The series book shared by the wrappers: label values → value, capped. The book is the truth;
 * prom-client only renders it when an exposition asks (its `collect` hook), so counting a request
 * is a map lookup and an addition. prom-client's own `inc` and `observe` built a label object and
 * a hash string per call: about 5 µs and 5 KB of garbage per proxied request for the router's
 * eight updates (measured in process).
 */
abstract class Series<M extends client.Counter | client.Gauge | client.Histogram> {
  protected readonly book: Map<string, Slot> = new Map();
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
  protected slot(labels: LabelValues): Slot | undefined {
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
      if (!keep.has(s.labels[index])) this.book.delete(key);
    }
  }
}

/** Monotonic counter. */
export class SeriesCounter extends Series<client.Counter> {
  protected readonly metric: client.Counter;

  constructor(registry: client.Registry, spec: MetricSpec) {
    super(spec);
    const book = this.book;
    const labelsOf = (values: LabelValues) => this.labelsOf(values);
    this.metric = new client.Counter({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of book.values()) this.inc(labelsOf(s.labels), s.value);
      },
    });
  }

  /** Add `by` (default 1) to the series. */
  inc(labels: LabelValues = [], by = 1): void {
    const s = this.slot(labels);
    if (s) s.value += by;
  }
}

/** Gauge; computed gauges are reset and refilled by a collector before each exposition. */
export class SeriesGauge extends Series<client.Gauge> {
  protected readonly metric: client.Gauge;

  constructor(registry: client.Registry, spec: MetricSpec) {
    super(spec);
    const book = this.book;
    const labelsOf = (values: LabelValues) => this.labelsOf(values);
    this.metric = new client.Gauge({
      name: spec.name,
      help: spec.help,
      labelNames: [...this.labelNames],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of book.values()) this.set(labelsOf(s.labels), s.value);
      },
    });
  }

  /** Set the series to `value`. */
  set(labels: LabelValues, value: number): void {
    const s = this.slot(labels);
    if (s) s.value = value;
  }

  /** Forget every series. */
  reset(): void {
    this.book.clear();
  }
}

/** One histogram series: cumulative counts per bound (Prometheus semantics), sum and count. */
interface HistogramSlot {
  labels: LabelValues;
  counts: number[];
  sum: number;
  count: number;
}

/** prom-client's undeclared reader of a metric's values (see bookHistogram). */
interface PromStringSource {
  getForPromString(this: client.Histogram): Promise<Record<string, unknown>>;
}

/** One row of a histogram's values, as prom-client renders them. */
interface HistogramRow {
  value: number;
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  metricName: string;
}

/**
 * Register a prom-client histogram whose values come from `book` (cumulative counts per bound):
 * prom-client (15, pinned) reads a histogram's values through its undeclared getForPromString,
 * for the text exposition and for get() alike, so that is what answers from the book. Rows have
 * prom-client's own shape (`le` in `labels`, the series' labels shared), so the exposition reads
 * as prom-client writes it.
 */
function bookHistogram(
  registry: client.Registry,
  spec: MetricSpec & { buckets: readonly number[] },
  book: ReadonlyMap<string, HistogramSlot>,
): void {
  const bounds = [...spec.buckets];
  const labelNames = spec.labelNames ?? [];
  const name = spec.name;
  const labelsOf = (values: LabelValues) => {
    const out: Record<string, string> = {};
    labelNames.forEach((n, i) => out[n] = values[i] ?? "");
    return out;
  };
  const ownValues = (client.Histogram.prototype as unknown as PromStringSource).getForPromString;
  class FromBook extends client.Histogram {
    async getForPromString() {
      const base = await ownValues.call(this);
      const values: HistogramRow[] = [];
      const row = (value: number, le: Record<string, string | number>, shared: object, s: string) =>
        values.push({
          value,
          labels: le,
          sharedLabels: shared as Record<string, string>,
          metricName: `${name}_${s}`,
        });
      for (const s of book.values()) {
        const labels = labelsOf(s.labels);
        bounds.forEach((le, i) => row(s.counts[i] ?? 0, { le }, labels, "bucket"));
        row(s.count, { le: "+Inf" }, labels, "bucket");
        row(s.sum, {}, labels, "sum");
        row(s.count, {}, labels, "count");
      }
      return { ...base, values };
    }
  }
  new FromBook({
    name,
    help: spec.help,
    labelNames: [...labelNames],
    buckets: bounds,
    registers: [registry],
  });
}

/** Cumulative histogram with fixed upper bounds, observed one value at a time. */
export class SeriesHistogram {
  readonly #book = new Map<string, HistogramSlot>();
  readonly #bounds: readonly number[];

  constructor(registry: client.Registry, spec: MetricSpec & { buckets: readonly number[] }) {
    this.#bounds = [...spec.buckets];
    bookHistogram(registry, spec, this.#book);
  }

  /** Record one observation. */
  observe(labels: LabelValues, value: number): void {
    const key = keyOf(labels);
    let s = this.#book.get(key);
    if (!s) {
      if (this.#book.size >= MAX_SERIES_PER_METRIC) return;
      s = { labels: [...labels], counts: this.#bounds.map(() => 0), sum: 0, count: 0 };
      this.#book.set(key, s);
    }
    const bounds = this.#bounds;
    for (let i = bounds.length - 1; i >= 0 && value <= bounds[i]; i--) s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  /** Number of observations of one series. */
  count(labels: LabelValues): number {
    return this.#book.get(keyOf(labels))?.count ?? 0;
  }

  /** Same as {@link count}. */
  get(labels: LabelValues = []): number {
    return this.count(labels);
  }
}

/**
 * A histogram whose cumulative counts are added from outside, not observed one value at a time:
 * the router's `svc_batch_size` sums what its workers report. Exposed like any prom-client
 * histogram (text and JSON), so /metrics and the status stream read it the same way.
 */
export class SummedHistogram {
  readonly #book = new Map<string, HistogramSlot>();
  readonly #bounds: readonly number[];

  constructor(registry: client.Registry, spec: MetricSpec & { buckets: readonly number[] }) {
    this.#bounds = [...spec.buckets];
    bookHistogram(registry, spec, this.#book);
  }

  /** Add cumulative counts per bound, a sum and a count to one series (capped like the others). */
  add(labels: LabelValues, counts: readonly number[], sum: number, count: number): void {
    const key = keyOf(labels);
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
    return this.#book.get(keyOf(labels))?.count ?? 0;
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
