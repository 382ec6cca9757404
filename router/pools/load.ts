/**
 * What this router process knows about worker load beyond the workers' own reports: requests it
 * has in flight to each worker (fresher than a status frame that is up to a second old), and
 * workers that just failed a connection, refused or dropped with a request on it (skipped
 * briefly, while their fleet socket may still be seen open).
 */

/** How long a worker that refused or dropped a connection is skipped. */
export const COOLDOWN_MS = 2000;

/** Per-process in-flight counts and cooldowns. */
export class LoadTracker {
  readonly #inFlight = new Map<string, number>();
  readonly #cooldownUntil = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Requests this router has in flight to `workerId`. */
  inFlight(workerId: string): number {
    return this.#inFlight.get(workerId) ?? 0;
  }

  /** Count a request to `workerId`; call the returned function exactly once when it ends. */
  begin(workerId: string): () => void {
    this.#inFlight.set(workerId, this.inFlight(workerId) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const n = this.inFlight(workerId) - 1;
      if (n <= 0) this.#inFlight.delete(workerId);
      else this.#inFlight.set(workerId, n);
    };
  }

  /** Skip `workerId` for a short while (it refused or dropped a connection). */
  coolDown(workerId: string, ms: number = COOLDOWN_MS): void {
    this.#cooldownUntil.set(workerId, this.#now() + ms);
  }

  /** True while `workerId` is being skipped. */
  coolingDown(workerId: string): boolean {
    const until = this.#cooldownUntil.get(workerId);
    if (until === undefined) return false;
    if (until > this.#now()) return true;
    this.#cooldownUntil.delete(workerId);
    return false;
  }
}
