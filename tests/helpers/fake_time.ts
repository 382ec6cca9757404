/**
 * A small fake clock for timer logic (JSR's @std/testing is out of reach here). While installed,
 * `setTimeout`, `setInterval`, their `clear*`, `Date.now` and `performance.now` run on a virtual
 * clock that moves only when the test calls {@link FakeTime.tick}: a 200 ms cadence or a 30 ms
 * wait window is then checked exactly, however busy the machine is.
 *
 * ```ts
 * using time = new FakeTime();
 * const done = startSomethingWithATimer();
 * await time.tick(30); // runs every timer due within 30 ms, in order
 * ```
 */

interface Timer {
  id: number;
  at: number;
  seq: number;
  fn: (...args: unknown[]) => void;
  args: unknown[];
  /** Repeat period for intervals; undefined for timeouts. */
  every?: number;
}

const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  dateNow: Date.now,
};

let installed: FakeTime | undefined;

/** Let pending promise callbacks (and their follow-ups) run: one real macrotask turn. */
function flush(): Promise<void> {
  return new Promise((r) => real.setTimeout(r, 0));
}

/** The virtual clock; construct it to install it, `restore()` (or `using`) to put the real one back. */
export class FakeTime {
  #now: number;
  #perfOrigin: number;
  #timers = new Map<number, Timer>();
  #nextId = 1;
  #seq = 0;

  /** Install the fake clock, starting at `startMs` (Unix ms). Only one may be installed at once. */
  constructor(startMs = 1_700_000_000_000) {
    if (installed) throw new Error("a FakeTime is already installed");
    installed = this;
    this.#now = startMs;
    this.#perfOrigin = startMs;
    const g = globalThis as unknown as Record<string, unknown>;
    g.setTimeout = (fn: (...a: unknown[]) => void, ms = 0, ...args: unknown[]) =>
      this.#add(fn, ms, args, undefined);
    g.setInterval = (fn: (...a: unknown[]) => void, ms = 0, ...args: unknown[]) =>
      this.#add(fn, ms, args, Math.max(1, ms));
    g.clearTimeout = g.clearInterval = (id?: number) => {
      if (id !== undefined) this.#timers.delete(id);
    };
    Date.now = () => this.#now;
    Object.defineProperty(performance, "now", {
      value: () => this.#now - this.#perfOrigin,
      configurable: true,
      writable: true,
    });
  }

  /** Virtual Unix time in ms. */
  get now(): number {
    return this.#now;
  }

  /** Timers still pending. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /**
   * Advance the clock by `ms`, running every timer that falls due, earliest first, with pending
   * promise callbacks flushed before and after each one (so async code reacts as it would live).
   */
  async tick(ms = 0): Promise<void> {
    const end = this.#now + ms;
    await flush();
    for (;;) {
      const next = this.#due(end);
      if (!next) break;
      this.#now = Math.max(this.#now, next.at);
      if (next.every !== undefined) {
        next.at += next.every;
        next.seq = this.#seq++;
      } else this.#timers.delete(next.id);
      next.fn(...next.args);
      await flush();
    }
    this.#now = end;
    await flush();
  }

  /** Put the real timers and clocks back. */
  restore(): void {
    if (installed !== this) return;
    installed = undefined;
    const g = globalThis as unknown as Record<string, unknown>;
    g.setTimeout = real.setTimeout;
    g.clearTimeout = real.clearTimeout;
    g.setInterval = real.setInterval;
    g.clearInterval = real.clearInterval;
    Date.now = real.dateNow;
    delete (performance as unknown as Record<string, unknown>).now;
    this.#timers.clear();
  }

  [Symbol.dispose](): void {
    this.restore();
  }

  #add(fn: (...a: unknown[]) => void, ms: number, args: unknown[], every?: number): number {
    const id = this.#nextId++;
    const delay = Math.max(0, Number(ms) || 0);
    this.#timers.set(id, { id, at: this.#now + delay, seq: this.#seq++, fn, args, every });
    return id;
  }

  #due(end: number): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.#timers.values()) {
      if (t.at > end) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
