/**
 * Event-loop lag measured with a timer: a timeout asks to fire after `intervalMs`; however much
 * later it actually fires is time the loop spent on other work (a long synchronous task, GC).
 * prom-client's own lag metric relies on Node's perf_hooks histogram, which reads zero under Deno.
 */

/** Options of {@link EventLoopLagMonitor}. */
export interface LagMonitorOptions {
  /** How often to sample; shorter is finer but costs a wake-up each time. */
  intervalMs?: number;
  /** Called with every sample, in seconds. */
  onSample?: (lagSeconds: number) => void;
}

/** Samples event-loop lag until stopped; never keeps the process alive. */
export class EventLoopLagMonitor {
  readonly #intervalMs: number;
  readonly #onSample: ((lagSeconds: number) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #expectedAt = 0;
  #lastSeconds = 0;

  constructor(opts: LagMonitorOptions = {}) {
    this.#intervalMs = opts.intervalMs ?? 100;
    this.#onSample = opts.onSample;
  }

  /** Start sampling (idempotent). */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#arm();
  }

  /** Stop sampling (idempotent). */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The latest sample, in seconds. */
  get lastSeconds(): number {
    return this.#lastSeconds;
  }

  #arm(): void {
    this.#expectedAt = performance.now() + this.#intervalMs;
    // A chain of timeouts, not setInterval: an interval would skip ticks and hide the lag.
    const timer = setTimeout(() => this.#fire(), this.#intervalMs);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #fire(): void {
    const lag = Math.max(0, performance.now() - this.#expectedAt) / 1000;
    this.#lastSeconds = lag;
    this.#onSample?.(lag);
    this.#arm();
  }
}
