/** Process-wide serving state shared by the routes: readiness, draining, in-flight requests. */

/** Lifecycle flags of the worker process. */
export class ServingState {
  /** False until preloading finished. */
  ready = false;
  /** True once shutdown began: new work gets 503 + Retry-After. */
  draining = false;
  /** True once the drain bound ended and the models are torn down under what still runs. */
  stopping = false;
  #inFlight = 0;
  #waiters: (() => void)[] = [];

  /** Requests currently being served. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Count a request in; pair with `leave`. */
  enter(): void {
    this.#inFlight++;
  }

  /** Count a request out. */
  leave(): void {
    this.#inFlight--;
    if (this.#inFlight === 0) {
      const w = this.#waiters;
      this.#waiters = [];
      for (const f of w) f();
    }
  }

  /** Run `work` counted in flight, or answer `refused()` once draining has begun. */
  async admit<T>(work: () => Promise<T>, refused: () => T): Promise<T> {
    if (this.draining) return refused();
    this.enter();
    try {
      return await work();
    } finally {
      this.leave();
    }
  }

  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((r) => this.#waiters.push(r));
  }
}
