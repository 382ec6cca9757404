/**
 * Worker directory in Deno KV: for many router isolates (Deno Deploy) that each hold some of the
 * workers' sockets. Every isolate writes the records of its own sockets and reads everyone's.
 * Requests are routed from a local cache refreshed in the background, because a storage round
 * trip per request would cost more than the router's whole latency budget.
 */
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import type { Logger } from "@svc/shared/log";
import { LearnedBundles } from "./learned.ts";
import { parseWorkerRecord } from "./record.ts";
import {
  DEFAULT_LEARNED,
  isFresh,
  type LearnedLimits,
  mayTakeOver,
  type WorkerDirectory,
  type WorkerRecord,
} from "./types.ts";

/** Options of the KV directory. */
export interface KvDirectoryOptions {
  kv: Deno.Kv;
  /** First key part, so several fleets can share one database. */
  prefix: string;
  staleMs: number;
  refreshMs: number;
  /** Bound on remembered model → bundle pairs (default {@link DEFAULT_LEARNED}). */
  learned?: LearnedLimits;
  log: Logger;
  now?: () => number;
}

/** A stored model → bundle pair: the bundle and when it was stored (epoch ms). */
interface StoredBundle {
  bundle: string;
  at: number;
}

/** A stored pair as read back (older routers stored the bundle alone); undefined if invalid. */
function parseStoredBundle(value: unknown): StoredBundle | undefined {
  if (typeof value === "string") return SLUG_RE.test(value) ? { bundle: value, at: 0 } : undefined;
  const v = value as Partial<StoredBundle> | null;
  if (typeof v?.bundle !== "string" || !SLUG_RE.test(v.bundle)) return undefined;
  return { bundle: v.bundle, at: typeof v.at === "number" && Number.isFinite(v.at) ? v.at : 0 };
}
/** Deno KV caps mutations per atomic operation; stay well under every version's limit. */
const ATOMIC_BATCH = 10;
/** Removed connections are remembered this long so an in-flight refresh cannot resurrect them. */
const TOMBSTONE_MS = 10_000;
/** Bundles change rarely: re-read them once every this many refreshes. */
const BUNDLE_REFRESH_EVERY = 10;

/** Deno KV-backed directory with a background-refreshed cache. */
export class KvWorkerDirectory implements WorkerDirectory {
  readonly kind = "kv" as const;
  readonly #kv: Deno.Kv;
  readonly #prefix: string;
  readonly #staleMs: number;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #cache = new Map<string, WorkerRecord>();
  readonly #bundles: LearnedBundles;
  readonly #learned: LearnedLimits;
  readonly #tombstones = new Map<string, number>();
  /** Keys of stored records that failed validation, warned about once each. */
  readonly #invalid = new Set<string>();
  readonly #timer: ReturnType<typeof setInterval>;
  #refreshes = 0;
  #refreshing: Promise<void> | null = null;
  #closed = false;

  constructor(opts: KvDirectoryOptions) {
    this.#kv = opts.kv;
    this.#prefix = opts.prefix;
    this.#staleMs = opts.staleMs;
    this.#log = opts.log;
    this.#now = opts.now ?? Date.now;
    this.#learned = opts.learned ?? DEFAULT_LEARNED;
    this.#bundles = new LearnedBundles({
      max: this.#learned.maxModels,
      ttlMs: this.#learned.ttlMs,
    });
    this.#timer = setInterval(() => {
      this.refresh().catch((err) =>
        this.#log("warn", "kv directory refresh failed", { error: String(err) })
      );
    }, opts.refreshMs);
  }

  #workerKey(id: string): Deno.KvKey {
    return [this.#prefix, "workers", id];
  }

  /**
   * Store a registration unless a live record of another process holds the id (checked
   * atomically against concurrent writers on other isolates).
   */
  async claim(record: WorkerRecord): Promise<boolean> {
    const key = this.#workerKey(record.id);
    for (let attempt = 0; attempt < 3; attempt++) {
      const cur = await this.#kv.get<unknown>(key);
      // An invalid stored record holds nothing: it is overwritten.
      const stored = parseWorkerRecord(cur.value);
      if (!mayTakeOver(stored, record, this.#now(), this.#staleMs)) return false;
      const res = await this.#kv.atomic().check(cur).set(key, record, {
        expireIn: this.#staleMs * 10,
      }).commit();
      if (!res.ok) continue; // another isolate wrote in between: decide again on its record
      this.#cache.set(record.id, record);
      await this.#storeBundles(record);
      return true;
    }
    return false;
  }

  /**
   * Write a record unless a newer connection of the same worker owns the key (a reconnect that
   * landed on another isolate wins over late writes from the old one).
   */
  async put(record: WorkerRecord): Promise<void> {
    const key = this.#workerKey(record.id);
    const cur = await this.#kv.get<unknown>(key);
    // An invalid stored record owns nothing: it is overwritten.
    const stored = parseWorkerRecord(cur.value);
    if (
      stored && stored.conn_id !== record.conn_id && stored.registered_at > record.registered_at
    ) {
      return;
    }
    // The expiry only collects records of isolates that died without cleaning up; freshness
    // (last_seen) is what keeps a silent worker out of routing.
    const res = await this.#kv.atomic().check(cur).set(key, record, {
      expireIn: this.#staleMs * 10,
    }).commit();
    if (!res.ok) return; // a concurrent writer won; its record is at least as new
    this.#cache.set(record.id, record);
    await this.#storeBundles(record);
  }

  /**
   * A worker alive with nothing new: written only when what other isolates read of it is a third
   * of the stale bound old (a status frame a second would otherwise be a KV write a second).
   */
  async touch(record: WorkerRecord): Promise<void> {
    const cached = this.#cache.get(record.id);
    if (
      cached?.conn_id === record.conn_id && record.last_seen - cached.last_seen < this.#staleMs / 3
    ) {
      return;
    }
    await this.put(record);
  }

  /**
   * Persist model → bundle pairs that are new, changed or due for a longer expiry, so 404-vs-202
   * survives scale to zero and restarts.
   */
  async #storeBundles(record: WorkerRecord): Promise<void> {
    const now = this.#now();
    const fresh = record.models.filter((m) => this.#bundles.learn(m.name, m.bundle, now));
    for (let i = 0; i < fresh.length; i += ATOMIC_BATCH) {
      const op = this.#kv.atomic();
      for (const m of fresh.slice(i, i + ATOMIC_BATCH)) {
        const value: StoredBundle = { bundle: m.bundle, at: now };
        op.set([this.#prefix, "bundles", m.name], value, { expireIn: this.#learned.ttlMs });
      }
      await op.commit();
    }
  }

  /** Delete the record when `connId` still owns it (checked atomically). */
  async remove(id: string, connId: string): Promise<boolean> {
    this.#tombstones.set(connId, this.#now() + TOMBSTONE_MS);
    if (this.#cache.get(id)?.conn_id === connId) this.#cache.delete(id);
    const key = this.#workerKey(id);
    for (let attempt = 0; attempt < 3; attempt++) {
      const cur = await this.#kv.get<unknown>(key);
      if (parseWorkerRecord(cur.value)?.conn_id !== connId) return false;
      const res = await this.#kv.atomic().check(cur).delete(key).commit();
      if (res.ok) return true;
    }
    return false;
  }

  /** Cached live records, stale and removed ones left out. */
  snapshot(): readonly WorkerRecord[] {
    const now = this.#now();
    const out: WorkerRecord[] = [];
    for (const r of this.#cache.values()) {
      if (isFresh(r, now, this.#staleMs) && !this.#tombstones.has(r.conn_id)) out.push(r);
    }
    return out;
  }

  /** Re-read all worker records (and now and then the learned bundles) from KV. */
  refresh(): Promise<void> {
    // Coalesce: a refresh already running answers everyone who asks meanwhile.
    this.#refreshing ??= this.#doRefresh().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #doRefresh(): Promise<void> {
    if (this.#closed) return;
    const now = this.#now();
    for (const [conn, until] of this.#tombstones) if (until < now) this.#tombstones.delete(conn);
    const next = new Map<string, WorkerRecord>();
    const invalid = new Set<string>();
    for await (const e of this.#kv.list<unknown>({ prefix: [this.#prefix, "workers"] })) {
      const r = parseWorkerRecord(e.value);
      if (!r) {
        const key = String(e.key[2]);
        invalid.add(key);
        if (!this.#invalid.has(key)) {
          this.#log("warn", "kv directory: invalid worker record ignored", { key });
        }
        continue;
      }
      if (!this.#tombstones.has(r.conn_id)) next.set(r.id, r);
    }
    this.#invalid.clear();
    for (const k of invalid) this.#invalid.add(k);
    this.#cache.clear();
    for (const [id, r] of next) {
      this.#cache.set(id, r);
      // Workers held by other isolates: known at once; their own isolate stores the pairs.
      for (const m of r.models) this.#bundles.restore(m.name, m.bundle, now, now);
    }
    if (this.#refreshes++ % BUNDLE_REFRESH_EVERY === 0) {
      const list = this.#kv.list<unknown>(
        { prefix: [this.#prefix, "bundles"] },
        { limit: this.#learned.maxModels },
      );
      for await (const e of list) {
        const name = e.key[2];
        const stored = parseStoredBundle(e.value);
        if (typeof name !== "string" || !stored) continue;
        this.#bundles.restore(name, stored.bundle, stored.at, now);
      }
    }
  }

  /** Pairs stored in KV or reported to this isolate since start (bounded). */
  learnedBundles(): ReadonlyMap<string, string> {
    return this.#bundles.view;
  }

  /** Stop refreshing; the caller owns (and closes) the Deno.Kv handle. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#refreshing;
  }
}
