/**
 * The model → bundle pairs workers reported, remembered after they leave so that a pool scaled
 * to zero still gets its 202 (not a 404) for models only its workers know. Bounded: workers hold
 * only the fleet token, so what they report cannot be allowed to grow the router without limit.
 * Over the bound the earliest learned pairs go first (a live worker re-reports its models every
 * status frame, so only pairs of departed workers stay gone); a pair not reported for `ttlMs`
 * is forgotten.
 */

/** One remembered pair. */
interface Learned {
  bundle: string;
  /** Epoch ms of the last report (entries are kept in this order). */
  seenAt: number;
  /** Epoch ms at which storage last got the pair (its expiry counts from there). */
  storedAt: number;
}

/** Bounded model → bundle memory, earliest learned first out. */
export class LearnedBundles {
  readonly #entries = new Map<string, Learned>();
  readonly #view = new Map<string, string>();
  readonly #max: number;
  readonly #ttlMs: number;
  #expiredAt = 0;

  constructor(opts: { max: number; ttlMs: number }) {
    this.#max = opts.max;
    this.#ttlMs = opts.ttlMs;
  }

  /**
   * Remember `name → bundle` as reported at `now`. True when the pair is new, changed, or last
   * confirmed more than half the time-to-live ago (storage then refreshes its expiry).
   */
  learn(name: string, bundle: string, now: number): boolean {
    const cur = this.#entries.get(name);
    if (cur && cur.bundle === bundle) {
      // Updated in place (every status frame re-reports every model): order stays by first
      // report, and a pair a live worker still reports is learned again at once if dropped.
      cur.seenAt = now;
      if (now - cur.storedAt <= this.#ttlMs / 2) return false;
      cur.storedAt = now;
      return true;
    }
    this.#entries.set(name, { bundle, seenAt: now, storedAt: now });
    this.#view.set(name, bundle);
    this.#bound(now);
    return true;
  }

  /**
   * Remember a pair read back from storage, stored at `storedAt` (not stored again before half
   * its time-to-live has passed). What this process saw itself is kept: it is at least as fresh.
   */
  restore(name: string, bundle: string, storedAt: number, now: number): void {
    if (this.#entries.has(name)) return;
    this.#entries.set(name, { bundle, seenAt: storedAt, storedAt });
    this.#view.set(name, bundle);
    this.#bound(now);
  }

  /** Name → bundle, the pairs remembered now. */
  get view(): ReadonlyMap<string, string> {
    return this.#view;
  }

  /** How many pairs are remembered. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Over the bound, drop the earliest learned tenth in one pass (evicting one entry per
   * insert would walk the map's deleted slots again and again); pairs past their time-to-live
   * go once a minute.
   */
  #bound(now: number): void {
    const over = this.#entries.size > this.#max;
    if (!over && now - this.#expiredAt < 60_000) return;
    this.#expiredAt = now;
    let drop = over ? this.#entries.size - Math.floor(this.#max * 0.9) : 0;
    for (const [name, e] of this.#entries) {
      if (drop > 0 || now - e.seenAt > this.#ttlMs) {
        this.#entries.delete(name);
        this.#view.delete(name);
        drop--;
      }
    }
  }
}
