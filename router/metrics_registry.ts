/**
 * A minimal Prometheus registry with text exposition (format 0.0.4). The router keeps its own
 * because it must run on Deno Deploy with nothing but network and environment access, and
 * because it needs only counters, gauges and one histogram.
 */

/** Label values in the order of the metric's label names. */
export type LabelValues = readonly string[];

/** Series beyond this many per metric are dropped, so hostile label values cannot exhaust memory. */
export const MAX_SERIES_PER_METRIC = 2000;

/** Escape a label value for the text format. */
function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Render `{a="x",b="y"}` (empty string when there are no labels). */
function renderLabels(names: readonly string[], values: LabelValues, extra = ""): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** Format a sample value the way Prometheus expects (integers without a decimal point). */
function num(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

abstract class Metric {
  protected readonly series: Map<string, { labels: LabelValues; value: number }> = new Map();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly type: "counter" | "gauge",
  ) {}

  protected slot(labels: LabelValues): { labels: LabelValues; value: number } | undefined {
    const key = labels.join("\u0000");
    let s = this.series.get(key);
    if (!s) {
      if (this.series.size >= MAX_SERIES_PER_METRIC) return undefined;
      s = { labels: [...labels], value: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  /**
   * Drop the series whose label at `index` is not in `keep` (e.g. workers that left: their ids are
   * random per process start, so without this they would fill the series cap over time).
   */
  retainWhere(index: number, keep: ReadonlySet<string>): void {
    for (const [key, s] of this.series) if (!keep.has(s.labels[index])) this.series.delete(key);
  }

  /** Current value of one series (0 when absent); for tests and health views. */
  get(labels: LabelValues): number {
    return this.series.get(labels.join("\u0000"))?.value ?? 0;
  }

  /** Text exposition of this metric. */
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const s of this.series.values()) {
      lines.push(`${this.name}${renderLabels(this.labelNames, s.labels)} ${num(s.value)}`);
    }
    return lines.join("\n");
  }
}

/** Monotonic counter. */
export class Counter extends Metric {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "counter");
  }

  /** Add `by` (default 1) to the series. */
  inc(labels: LabelValues = [], by = 1): void {
    const s = this.slot(labels);
    if (s) s.value += by;
  }
}

/** Gauge; computed gauges are reset and refilled by a collector before each render. */
export class Gauge extends Metric {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, "gauge");
  }

  /** Set the series to `value`. */
  set(labels: LabelValues, value: number): void {
    const s = this.slot(labels);
    if (s) s.value = value;
  }

  /** Forget every series. */
  reset(): void {
    this.series.clear();
  }
}

/** Cumulative histogram with fixed upper bounds. */
export class Histogram {
  readonly #series = new Map<string, { labels: LabelValues; counts: number[]; sum: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {}

  /** Record one observation. */
  observe(labels: LabelValues, value: number): void {
    const key = labels.join("\u0000");
    let s = this.#series.get(key);
    if (!s) {
      if (this.#series.size >= MAX_SERIES_PER_METRIC) return;
      s = { labels: [...labels], counts: new Array(this.buckets.length + 1).fill(0), sum: 0 };
      this.#series.set(key, s);
    }
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]) i++;
    s.counts[i]++;
    s.sum += value;
  }

  /** Number of observations of one series. */
  count(labels: LabelValues): number {
    const s = this.#series.get(labels.join("\u0000"));
    return s ? s.counts.reduce((a, b) => a + b, 0) : 0;
  }

  /** Text exposition (`_bucket` cumulative, `_sum`, `_count`). */
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.#series.values()) {
      let cum = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cum += s.counts[i];
        const le = `le="${num(this.buckets[i])}"`;
        lines.push(`${this.name}_bucket${renderLabels(this.labelNames, s.labels, le)} ${cum}`);
      }
      cum += s.counts[this.buckets.length];
      lines.push(
        `${this.name}_bucket${renderLabels(this.labelNames, s.labels, 'le="+Inf"')} ${cum}`,
      );
      lines.push(`${this.name}_sum${renderLabels(this.labelNames, s.labels)} ${num(s.sum)}`);
      lines.push(`${this.name}_count${renderLabels(this.labelNames, s.labels)} ${cum}`);
    }
    return lines.join("\n");
  }
}

/** A set of metrics rendered together, with collectors run just before rendering. */
export class Registry {
  readonly #metrics: { render(): string }[] = [];
  readonly #collectors: (() => void)[] = [];

  /** Add a metric to the exposition. */
  register<T extends { render(): string }>(metric: T): T {
    this.#metrics.push(metric);
    return metric;
  }

  /** Run `fn` before each render (to fill computed gauges). */
  onCollect(fn: () => void): void {
    this.#collectors.push(fn);
  }

  /** The whole exposition, newline-terminated. */
  render(): string {
    for (const c of this.#collectors) c();
    return this.#metrics.map((m) => m.render()).join("\n") + "\n";
  }
}
