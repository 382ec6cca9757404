/** Worker directory held in process memory: right for one router process. */
import { LearnedBundles } from "./learned.ts";
import {
  DEFAULT_LEARNED,
  isFresh,
  type LearnedLimits,
  mayTakeOver,
  type WorkerDirectory,
  type WorkerRecord,
} from "./types.ts";

/** In-memory directory; `now` is injectable so tests can age records. */
export class MemoryWorkerDirectory implements WorkerDirectory {
  readonly kind = "memory" as const;
  readonly #records = new Map<string, WorkerRecord>();
  readonly #bundles: LearnedBundles;
  readonly #staleMs: number;
  readonly #now: () => number;
  #cache: WorkerRecord[] | null = null;

  constructor(opts: { staleMs: number; learned?: LearnedLimits; now?: () => number }) {
    this.#staleMs = opts.staleMs;
    this.#now = opts.now ?? Date.now;
    const learned = opts.learned ?? DEFAULT_LEARNED;
    this.#bundles = new LearnedBundles({ max: learned.maxModels, ttlMs: learned.ttlMs });
  }

  /** Store a registration unless a live record of another process holds the id. */
  claim(record: WorkerRecord): Promise<boolean> {
    const now = this.#now();
    if (!mayTakeOver(this.#records.get(record.id), record, now, this.#staleMs)) {
      return Promise.resolve(false);
    }
    this.#store(record, now);
    return Promise.resolve(true);
  }

  /** Replace a record and learn its model → bundle pairs. */
  put(record: WorkerRecord): Promise<void> {
    this.#store(record, this.#now());
    return Promise.resolve();
  }

  /**
   * Only the stored record's `last_seen` moves (in place: the snapshot and the views built from
   * it stay as they are).
   */
  touch(record: WorkerRecord): Promise<void> {
    const cur = this.#records.get(record.id);
    if (cur && cur.conn_id === record.conn_id) cur.last_seen = record.last_seen;
    return Promise.resolve();
  }

  #store(record: WorkerRecord, now: number): void {
    this.#records.set(record.id, record);
    for (const m of record.models) this.#bundles.learn(m.name, m.bundle, now);
    this.#cache = null;
  }

  /** Remove the record when `connId` still owns it. */
  remove(id: string, connId: string): Promise<boolean> {
    const cur = this.#records.get(id);
    if (!cur || cur.conn_id !== connId) return Promise.resolve(false);
    this.#records.delete(id);
    this.#cache = null;
    return Promise.resolve(true);
  }

  /** Live records (stale ones are skipped; the fleet hub closes their sockets). */
  snapshot(): readonly WorkerRecord[] {
    this.#cache ??= [...this.#records.values()];
    const now = this.#now();
    const cache = this.#cache;
    // Avoid allocating on the hot path when nothing is stale, the usual case.
    if (cache.every((r) => isFresh(r, now, this.#staleMs))) return cache;
    return cache.filter((r) => isFresh(r, now, this.#staleMs));
  }

  /** Nothing to re-read: memory is the source of truth. */
  refresh(): Promise<void> {
    return Promise.resolve();
  }

  /** Model → bundle pairs reported by registrations so far (bounded). */
  learnedBundles(): ReadonlyMap<string, string> {
    return this.#bundles.view;
  }

  /** Drop everything. */
  close(): Promise<void> {
    this.#records.clear();
    this.#cache = null;
    return Promise.resolve();
  }
}
