/**
 * What all fleet sockets together may cost this router: connections, announced models and frame
 * bytes per second. Per-socket caps bound one token holder; these bound many of them. Beyond a
 * cap new registrations are refused and the biggest talkers are closed first, so that a real
 * worker, whose frames are small, keeps its place while others are noisy.
 */

/** The caps (`SVC_FLEET_MAX_*`). */
export interface FleetCaps {
  /** Fleet sockets at once, registered or not. */
  maxConnections: number;
  /** Models announced by all registered workers together. */
  maxModels: number;
  /** Bytes of fleet frames per second, all sockets together. */
  maxBytesPerS: number;
}

/** What the budget tracks of a connection. */
export interface Talker {
  /** Bytes it sent in the current one-second window. */
  windowBytes: number;
  /** Models its worker announces (0 until registered). */
  announced: number;
}

/** The running totals against the caps. */
export class FleetBudget {
  readonly caps: FleetCaps;
  readonly #talkers = new Set<Talker>();
  readonly #now: () => number;
  #windowStart: number;
  #windowBytes = 0;
  /** This second's frames went over the byte cap: new sockets wait for the next second. */
  #tripped = false;
  #announced = 0;

  constructor(caps: FleetCaps, now: () => number) {
    this.caps = caps;
    this.#now = now;
    this.#windowStart = now();
  }

  /** Fleet sockets held. */
  get connections(): number {
    return this.#talkers.size;
  }

  /** Models announced by registered workers, all together. */
  get announced(): number {
    return this.#announced;
  }

  /** True when one more socket would be over the connection cap. */
  get connectionsFull(): boolean {
    return this.#talkers.size >= this.caps.maxConnections;
  }

  /** A socket joined. */
  join(t: Talker): void {
    this.#talkers.add(t);
  }

  /** A socket left: its bytes and models no longer count. */
  leave(t: Talker): void {
    if (!this.#talkers.delete(t)) return;
    this.#windowBytes -= t.windowBytes;
    this.#announced -= t.announced;
    t.windowBytes = 0;
    t.announced = 0;
  }

  /**
   * True once this second's frames went over the byte cap, until the second is over: new sockets
   * and registrations are refused meanwhile (sockets that redial at once would otherwise cost a
   * register frame each, read in full, however many are refused).
   */
  get bytesFull(): boolean {
    this.#roll();
    return this.#tripped || this.#windowBytes > this.caps.maxBytesPerS;
  }

  /**
   * Count a frame of `bytes` from `t`. Returns the sockets to close (the caller makes them
   * {@link leave}), biggest talker first, until the second's total is back under the cap; empty
   * when it is under.
   */
  frame(t: Talker, bytes: number): Talker[] {
    this.#roll();
    t.windowBytes += bytes;
    this.#windowBytes += bytes;
    const out: Talker[] = [];
    let total = this.#windowBytes;
    if (total > this.caps.maxBytesPerS) this.#tripped = true;
    while (total > this.caps.maxBytesPerS) {
      const biggest = this.#biggest((x) => x.windowBytes, out);
      if (!biggest) break;
      out.push(biggest);
      total -= biggest.windowBytes;
    }
    return out;
  }

  /** True when `t` may announce `count` models (registration). */
  fits(t: Talker, count: number): boolean {
    return this.#announced - t.announced + count <= this.caps.maxModels;
  }

  /**
   * `t` now announces `count` models. Returns the workers to close (the caller makes them
   * {@link leave}), most models first, until the total is back under the cap.
   */
  announce(t: Talker, count: number): Talker[] {
    this.#announced += count - t.announced;
    t.announced = count;
    const out: Talker[] = [];
    let total = this.#announced;
    while (total > this.caps.maxModels) {
      const biggest = this.#biggest((x) => x.announced, out);
      if (!biggest) break;
      out.push(biggest);
      total -= biggest.announced;
    }
    return out;
  }

  #biggest(size: (t: Talker) => number, skip: readonly Talker[]): Talker | undefined {
    let best: Talker | undefined;
    for (const t of this.#talkers) {
      if (skip.includes(t) || size(t) === 0) continue;
      if (!best || size(t) > size(best)) best = t;
    }
    return best;
  }

  /** Start a new one-second window when the current one is over. */
  #roll(): void {
    const now = this.#now();
    if (now - this.#windowStart < 1000) return;
    this.#windowStart = now;
    this.#windowBytes = 0;
    this.#tripped = false;
    for (const t of this.#talkers) t.windowBytes = 0;
  }
}
