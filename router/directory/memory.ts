/** Worker directory held in process memory: right for one router process. */
import { isFresh, type WorkerDirectory, type WorkerRecord } from "./types.ts";

/** In-memory directory; `now` is injectable so tests can age records. */
export class MemoryWorkerDirectory implements WorkerDirectory {
  readonly kind = "memory" as const;
  readonly #records = new Map<string, WorkerRecord>();
  readonly #bundles = new Map<string, string>();
  readonly #staleMs: number;
  readonly #now: () => number;
  #cache: WorkerRecord[] | null = null;

  constructor(opts: { staleMs: number; now?: () => number }) {
    this.#staleMs = opts.staleMs;
    this.#now = opts.now ?? Date.now;
  }

  /** Insert or replace a record and learn its model → bundle pairs. */
  put(record: WorkerRecord): Promise<void> {
    this.#records.set(record.id, record);
    for (const m of record.models) this.#bundles.set(m.name, m.bundle);
    this.#cache = null;
    return Promise.resolve();
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

  /** Model → bundle pairs seen in any registration so far. */
  learnedBundles(): ReadonlyMap<string, string> {
    return this.#bundles;
  }

  /** Drop everything. */
  close(): Promise<void> {
    this.#records.clear();
    this.#cache = null;
    return Promise.resolve();
  }
}
