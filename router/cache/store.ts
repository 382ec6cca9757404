/**
 * The result store: answers by key, bounded in bytes, least recently used evicted first, each
 * served for at most a time to live. It holds bytes and knows nothing of HTTP or the fleet: what
 * a key covers is key.ts's job, and whether a stored answer's producer still vouches for it is
 * the caller's. Entries are indexed by their producer (the worker connection that computed them)
 * so that one worker's entries can be dropped at once, as a CDN purges by surrogate key.
 */

/** One stored answer: what the client got, and the revision of the model that computed it. */
export interface StoredAnswer {
  status: number;
  /** The client's headers of the original answer (names lower case), without X-SVC-Cache. */
  headers: readonly (readonly [string, string])[];
  body: Uint8Array;
  /** The worker's `X-SVC-Model-Revision`. */
  revision: string;
  /**
   * The connection (`conn_id`) of the worker that computed it: the entry lives only as long as
   * that connection does (a reconnect is a new one, and proves nothing of the old answers).
   */
  producer: string;
}

/**
 * What an entry costs beyond the characters of its key, revision and headers and its body's
 * bytes: the map slot, the entry, answer and byte-array objects, and per header pair its array
 * and two string objects. Measured here (V8 heap after full collections, 20,000 entries): about
 * 540 bytes an entry without headers, about 190 more per header pair of some 30 characters.
 * Counted so that many tiny answers cannot hold more than the bound.
 */
export const ENTRY_OVERHEAD_BYTES = 512;

/** What one header pair costs beyond its characters (see {@link ENTRY_OVERHEAD_BYTES}). */
export const HEADER_OVERHEAD_BYTES = 160;

/** Bounds of a store. */
export interface ResultStoreOptions {
  /** Everything held (bodies, headers, keys and the objects holding them: {@link entryBytes}). */
  maxBytes: number;
  /** Largest body kept. */
  maxEntryBytes: number;
  /** Age after which an entry is not served (0: no limit). */
  ttlMs: number;
  /** Clock in ms (tests pass fake time). */
  now?: () => number;
}

interface Entry {
  answer: StoredAnswer;
  bytes: number;
  storedAt: number;
}

/** An LRU map of answers bounded in bytes. */
export class ResultStore {
  readonly #o: ResultStoreOptions;
  readonly #now: () => number;
  /** Insertion order is recency order: a hit moves its entry to the end. */
  readonly #entries = new Map<string, Entry>();
  /** Keys by producer: a producer's entries are purged together. */
  readonly #byProducer = new Map<string, Set<string>>();
  #bytes = 0;

  constructor(opts: ResultStoreOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Bytes held, as the bound counts them. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries held. */
  get size(): number {
    return this.#entries.size;
  }

  /** The answer under `key` unless absent or expired (an expired one is dropped). */
  get(key: string): StoredAnswer | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (this.#o.ttlMs > 0 && this.#now() - e.storedAt >= this.#o.ttlMs) {
      this.#drop(key, e);
      return undefined;
    }
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.answer;
  }

  /**
   * Keep `answer` under `key` (replacing what was there), evicting the least recently used until
   * it fits; false when it can never fit (its body is over the entry bound, or it alone is over
   * the whole bound).
   */
  set(key: string, answer: StoredAnswer, storedAt?: number): boolean {
    const old = this.#entries.get(key);
    if (old) this.#drop(key, old);
    if (answer.body.length > this.#o.maxEntryBytes) return false;
    const bytes = entryBytes(key, answer);
    if (bytes > this.#o.maxBytes) return false;
    while (this.#bytes + bytes > this.#o.maxBytes) {
      const [oldestKey, oldest] = this.#entries.entries().next().value!;
      this.#drop(oldestKey, oldest);
    }
    // An answer from another tier keeps its own age: its lifetime does not restart here.
    this.#entries.set(key, { answer, bytes, storedAt: storedAt ?? this.#now() });
    this.#bytes += bytes;
    const keys = this.#byProducer.get(answer.producer);
    if (keys) keys.add(key);
    else this.#byProducer.set(answer.producer, new Set([key]));
    return true;
  }

  /** Drop the entry under `key`, if any. */
  delete(key: string): void {
    const e = this.#entries.get(key);
    if (e) this.#drop(key, e);
  }

  /** The producers that have entries here. */
  producers(): IterableIterator<string> {
    return this.#byProducer.keys();
  }

  /** Drop every entry `producer` computed; the number dropped. */
  purge(producer: string): number {
    const keys = this.#byProducer.get(producer);
    if (!keys) return 0;
    const n = keys.size;
    for (const key of [...keys]) this.delete(key);
    return n;
  }

  #drop(key: string, e: Entry): void {
    this.#entries.delete(key);
    this.#bytes -= e.bytes;
    const keys = this.#byProducer.get(e.answer.producer);
    keys?.delete(key);
    if (keys?.size === 0) this.#byProducer.delete(e.answer.producer);
  }
}

/** What an entry counts against the bound. */
export function entryBytes(key: string, answer: StoredAnswer): number {
  let bytes = ENTRY_OVERHEAD_BYTES + key.length + answer.body.length + answer.revision.length +
    answer.producer.length;
  for (const [k, v] of answer.headers) bytes += HEADER_OVERHEAD_BYTES + k.length + v.length;
  return bytes;
}
