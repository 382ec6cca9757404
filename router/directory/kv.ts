/**
 * Worker directory in Deno KV: for many router instances (Deno Deploy isolates, self-hosted
 * routers on one `denokv`) that each hold some of the workers' sockets. Requests are routed from
 * a local cache; KV is written only on change and read when something changed (docs/fleet.md,
 * "Several routers"):
 *
 * - a worker's head (its record without models) at `[p, "workers", id]`, its model list in
 *   chunks at `[p, "models", id, gen, i]` (a new generation per change, so a reader never mixes
 *   two lists); written when what routes changes, and renewed every `renewMs` otherwise;
 * - each instance's heartbeat at `[p, "routers", id]`: a head is live while its deadline and its
 *   holder's heartbeat are (a dead instance's workers leave every view within `staleMs`);
 * - a change counter at `[p, "epoch"]` (KvU64, summed by every change): instances watch it and
 *   poll it (one small read; watches do not cross processes on a shared file), and re-read the
 *   heads only when it moved, or every `renewMs` for the renewals.
 */
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import type { Logger } from "@svc/shared/log";
import { chunkModels, COMMIT_BYTES, sameDepths, sameRouting } from "./chunks.ts";
import { LearnedBundles } from "./learned.ts";
import { ChangeFeed } from "../kv/change_feed.ts";
import { parseModelChunk, parseStoredHead, type StoredHead } from "./record.ts";
import {
  DEFAULT_LEARNED,
  isFresh,
  type LearnedLimits,
  mayReplace,
  type WorkerDirectory,
  type WorkerModel,
  type WorkerRecord,
} from "./types.ts";

/** Options of the KV directory. */
export interface KvDirectoryOptions {
  kv: Deno.Kv;
  /** First key part, so several fleets can share one database. */
  prefix: string;
  staleMs: number;
  /** How often the change counter is polled (watch wakes the instance sooner where it works). */
  refreshMs: number;
  /** A head is rewritten at least this often (liveness, load figures); default 10 s. */
  renewMs?: number;
  /** This instance's id (its heartbeat key); default a random one. */
  routerId?: string;
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

/** What this instance last wrote for a worker whose socket it holds. */
interface Written {
  conn_id: string;
  /** The record as last written (compared with the next to decide whether to write). */
  record: WorkerRecord;
  gen: string;
  chunks: number;
  /** Epoch ms of the last head write, and of the chunks' write (their expiry counts from it). */
  at: number;
  genAt: number;
}

/** What is known of a worker held by another instance. */
interface Remote {
  head: StoredHead;
  models: WorkerModel[];
}

/** Deletions per atomic commit (KV allows 1000 mutations; keys are small). */
const ATOMIC_BATCH = 10;
/**
 * Model → bundle pairs per atomic commit: 1000 names of 256 characters in 5 commits, not 100
 * (about 300 bytes a pair, far under the 800 KiB a commit may carry).
 */
const BUNDLE_BATCH = 200;
/** Removed connections are remembered this long so an in-flight refresh cannot resurrect them. */
const TOMBSTONE_MS = 10_000;
/** Bundles change rarely: re-read them once every this many refreshes. */
const BUNDLE_REFRESH_EVERY = 10;
/** Chunks expire (at the earliest) this long after their write; rewritten at half of it. */
const CHUNK_TTL_MS = 24 * 3600 * 1000;
/** Default of {@link KvDirectoryOptions.renewMs}. */
export const DEFAULT_RENEW_MS = 10_000;

/** The routing fields of a head: a change to one is written (and announced) at once. */
function sameHead(a: WorkerRecord, b: WorkerRecord): boolean {
  return a.draining === b.draining && a.url === b.url && a.pool === b.pool &&
    a.bundle === b.bundle && a.machine_profile === b.machine_profile && a.version === b.version &&
    a.instance_hash === b.instance_hash && a.registered_at === b.registered_at &&
    a.gpu_count === b.gpu_count;
}

/** True when two records of a worker id come from one process (the same instance key). */
function sameProcess(
  a: Pick<WorkerRecord, "instance_hash">,
  b: Pick<WorkerRecord, "instance_hash">,
): boolean {
  return a.instance_hash !== undefined && a.instance_hash === b.instance_hash;
}

/** Deno KV-backed directory with a local cache kept by watch, poll and renewals. */
export class KvWorkerDirectory implements WorkerDirectory {
  readonly kind = "kv" as const;
  readonly #kv: Deno.Kv;
  readonly #p: string;
  readonly #staleMs: number;
  readonly #renewMs: number;
  readonly #routerId: string;
  readonly #log: Logger;
  readonly #now: () => number;
  /** Records of the workers this instance holds (fresh from their sockets). */
  readonly #local = new Map<string, WorkerRecord>();
  readonly #written = new Map<string, Written>();
  /**
   * Connections held here whose head another connection of the same process holds (a worker
   * linked to several instances): served here from local memory, the head left to its owner
   * while that owner is live.
   */
  readonly #deferred = new Map<string, { conn_id: string; owner: StoredHead }>();
  readonly #remote = new Map<string, Remote>();
  /** Heartbeat deadlines of the instances, by id. */
  readonly #holders = new Map<string, number>();
  readonly #bundles: LearnedBundles;
  readonly #learned: LearnedLimits;
  readonly #tombstones = new Map<string, number>();
  /** Keys of stored heads that failed validation, warned about once each. */
  readonly #invalid = new Set<string>();
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #ready: Promise<void>;
  readonly #feed: ChangeFeed;
  #refreshes = 0;
  #snap: WorkerRecord[] | null = null;
  #snapUntil = 0;
  #closed = false;

  constructor(opts: KvDirectoryOptions) {
    this.#kv = opts.kv;
    this.#p = opts.prefix;
    this.#staleMs = opts.staleMs;
    this.#renewMs = opts.renewMs ?? DEFAULT_RENEW_MS;
    this.#routerId = opts.routerId ?? `dir-${crypto.randomUUID()}`;
    this.#log = opts.log;
    this.#now = opts.now ?? Date.now;
    this.#learned = opts.learned ?? DEFAULT_LEARNED;
    this.#bundles = new LearnedBundles({
      max: this.#learned.maxModels,
      ttlMs: this.#learned.ttlMs,
    });
    const warn = (what: string) => (err: unknown) =>
      this.#log("warn", `kv directory: ${what} failed`, { error: String(err) });
    this.#ready = this.#beat().catch(warn("heartbeat"));
    const beatMs = Math.max(50, Math.floor(this.#staleMs / 3));
    this.#timers.push(setInterval(() => this.#beat().catch(warn("heartbeat")), beatMs));
    // The heads are re-read when the counter moved, and once per renewal period in any case.
    this.#feed = new ChangeFeed({
      kv: this.#kv,
      key: this.#epochKey,
      pollMs: opts.refreshMs,
      everyMs: this.#renewMs,
      onChange: () => this.#doRefresh(),
      log: this.#log,
    });
  }

  #headKey(id: string): Deno.KvKey {
    return [this.#p, "workers", id];
  }

  #chunkKey(id: string, gen: string, i: number): Deno.KvKey {
    return [this.#p, "models", id, gen, i];
  }

  get #epochKey(): Deno.KvKey {
    return [this.#p, "epoch"];
  }

  /** Write this instance's heartbeat and read everyone's (one write, one short list). */
  async #beat(): Promise<void> {
    if (this.#closed) return;
    const now = this.#now();
    await this.#kv.set([this.#p, "routers", this.#routerId], { until: now + this.#staleMs }, {
      expireIn: this.#staleMs * 10,
    });
    this.#holders.set(this.#routerId, now + this.#staleMs);
    this.#changed();
    await this.#readHolders();
  }

  /** Read every instance's heartbeat deadline (instances gone from KV are forgotten). */
  async #readHolders(): Promise<void> {
    const seen = new Map<string, number>();
    const mine = this.#holders.get(this.#routerId);
    if (mine !== undefined) seen.set(this.#routerId, mine);
    for await (const e of this.#kv.list<{ until?: unknown }>({ prefix: [this.#p, "routers"] })) {
      const until = e.value?.until;
      if (typeof e.key[2] === "string" && typeof until === "number") seen.set(e.key[2], until);
    }
    const same = seen.size === this.#holders.size &&
      [...seen].every(([id, until]) => this.#holders.get(id) === until);
    if (same) return;
    this.#holders.clear();
    for (const [id, until] of seen) this.#holders.set(id, until);
    this.#changed();
  }

  /** True when a head read from KV is live: its deadline and its holder's heartbeat are. */
  #headLive(h: StoredHead, now: number): boolean {
    if (h.holder === this.#routerId) {
      const mine = this.#local.get(h.id);
      return mine?.conn_id === h.conn_id && isFresh(mine, now, this.#staleMs);
    }
    return h.alive_until >= now && (this.#holders.get(h.holder) ?? 0) >= now;
  }

  /**
   * Store a registration unless a live record of another process holds the id (checked
   * atomically against concurrent writers on other instances).
   */
  async claim(record: WorkerRecord): Promise<boolean> {
    await this.#ready;
    const key = this.#headKey(record.id);
    for (let attempt = 0; attempt < 3; attempt++) {
      const cur = await this.#kv.get<unknown>(key);
      // An invalid stored head holds nothing: it is overwritten.
      const stored = parseStoredHead(cur.value);
      const live = stored !== undefined && this.#headLive(stored, this.#now());
      if (!mayReplace(stored, record, live)) return false;
      this.#written.delete(record.id);
      if (!(await this.#write(record, cur, stored, true))) continue;
      await this.#storeBundles(record);
      return true;
    }
    return false;
  }

  /**
   * Keep the record of a registered connection: in local memory at once, in KV when what routes
   * changed (announced to the other instances) or a renewal is due; a reconnect that landed on
   * another instance wins over late writes from the old one.
   */
  async put(record: WorkerRecord): Promise<void> {
    await this.#ready;
    const w = this.#written.get(record.id);
    const now = this.#now();
    const d = this.#deferred.get(record.id);
    if (d?.conn_id === record.conn_id && this.#headLive(d.owner, now)) {
      // Checked against memory only: the holders' heartbeats say when the owner is gone.
      this.#setLocal(record.id, record);
      return;
    }
    this.#deferred.delete(record.id);
    if (w && w.conn_id === record.conn_id) {
      const routing = sameHead(w.record, record) && sameRouting(w.record.models, record.models);
      if (routing && now - w.at < this.#renewMs) {
        this.#setLocal(record.id, record);
        return;
      }
      const cur = await this.#kv.get<unknown>(this.#headKey(record.id));
      const stored = parseStoredHead(cur.value);
      if (stored && stored.conn_id !== record.conn_id && this.#headLive(stored, now)) {
        return this.#lost(record, stored);
      }
      const newList = !routing || !sameDepths(w.record.models, record.models);
      await this.#write(record, cur, stored, !routing, newList ? undefined : w);
    } else {
      const cur = await this.#kv.get<unknown>(this.#headKey(record.id));
      // An invalid stored head owns nothing: it is overwritten.
      const stored = parseStoredHead(cur.value);
      if (
        stored && stored.conn_id !== record.conn_id &&
        stored.registered_at > record.registered_at &&
        this.#headLive(stored, now)
      ) {
        return this.#lost(record, stored);
      }
      await this.#write(record, cur, stored, true);
    }
    await this.#storeBundles(record);
  }

  /**
   * A newer connection owns the worker's head: forget this one's, unless both are the same
   * process (its socket here still serves it; the head is renewed by the owner).
   */
  #lost(record: WorkerRecord, stored: StoredHead): void {
    this.#written.delete(record.id);
    if (sameProcess(record, stored)) {
      this.#deferred.set(record.id, { conn_id: record.conn_id, owner: stored });
      this.#setLocal(record.id, record);
      return;
    }
    if (this.#local.get(record.id)?.conn_id !== stored.conn_id) this.#dropLocal(record.id);
  }

  /**
   * Write the head (checked against `cur`) and, unless `keep` holds a still valid list, a new
   * generation of model chunks; the previous generation is deleted. `announce`: sum the change
   * counter. False when another writer got in between.
   */
  async #write(
    record: WorkerRecord,
    cur: Deno.KvEntryMaybe<unknown>,
    stored: StoredHead | undefined,
    announce: boolean,
    keep?: Written,
  ): Promise<boolean> {
    const now = this.#now();
    const reuse = keep && now - keep.genAt < CHUNK_TTL_MS / 2 ? keep : undefined;
    const gen = reuse?.gen ?? crypto.randomUUID();
    const op = this.#kv.atomic().check(cur);
    let chunks = reuse?.chunks ?? 0;
    const early: Deno.KvKey[] = [];
    if (!reuse) {
      const parts = chunkModels(record.models);
      chunks = parts.length;
      const total = parts.reduce((n, p) => n + p.bytes, 0);
      if (total <= COMMIT_BYTES) {
        parts.forEach((p, i) =>
          op.set(this.#chunkKey(record.id, gen, i), p.chunk, { expireIn: CHUNK_TTL_MS })
        );
      } else {
        // Too big for one commit: the chunks first, unreferenced until the head names them.
        let batch = this.#kv.atomic();
        let bytes = 0;
        for (let i = 0; i < parts.length; i++) {
          if (bytes + parts[i].bytes > COMMIT_BYTES) {
            await batch.commit();
            batch = this.#kv.atomic();
            bytes = 0;
          }
          const key = this.#chunkKey(record.id, gen, i);
          batch.set(key, parts[i].chunk, { expireIn: CHUNK_TTL_MS });
          early.push(key);
          bytes += parts[i].bytes;
        }
        await batch.commit();
      }
    }
    const { models: _models, ...rest } = record;
    const head: StoredHead = {
      ...rest,
      models_gen: gen,
      models_chunks: chunks,
      models_count: record.models.length,
      alive_until: now + 3 * this.#renewMs,
      holder: this.#routerId,
    };
    op.set(this.#headKey(record.id), head, { expireIn: 6 * this.#renewMs });
    if (stored && stored.models_gen !== gen) {
      for (let i = 0; i < stored.models_chunks; i++) {
        op.delete(this.#chunkKey(record.id, stored.models_gen, i));
      }
    }
    if (announce) op.sum(this.#epochKey, 1n);
    const res = await op.commit();
    if (!res.ok) {
      if (early.length > 0) await this.#deleteKeys(early);
      return false;
    }
    this.#written.set(record.id, {
      conn_id: record.conn_id,
      record,
      gen,
      chunks,
      at: now,
      genAt: reuse?.genAt ?? now,
    });
    this.#setLocal(record.id, record);
    return true;
  }

  async #deleteKeys(keys: Deno.KvKey[]): Promise<void> {
    for (let i = 0; i < keys.length; i += ATOMIC_BATCH) {
      const op = this.#kv.atomic();
      for (const k of keys.slice(i, i + ATOMIC_BATCH)) op.delete(k);
      await op.commit();
    }
  }

  /**
   * A worker alive with nothing new: its local record's time moves, and KV is written only once
   * the last write is a renewal period old (`put` decides what that write holds).
   */
  async touch(record: WorkerRecord): Promise<void> {
    const w = this.#written.get(record.id);
    const local = this.#local.get(record.id);
    if (
      w?.conn_id === record.conn_id && local?.conn_id === record.conn_id &&
      this.#now() - w.at < this.#renewMs
    ) {
      // In place, as the memory directory does: the snapshot and its views stay as they are.
      local.last_seen = record.last_seen;
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
    for (let i = 0; i < fresh.length; i += BUNDLE_BATCH) {
      const op = this.#kv.atomic();
      for (const m of fresh.slice(i, i + BUNDLE_BATCH)) {
        const value: StoredBundle = { bundle: m.bundle, at: now };
        op.set([this.#p, "bundles", m.name], value, { expireIn: this.#learned.ttlMs });
      }
      await op.commit();
    }
  }

  /** Delete the head and its chunks when `connId` still owns it (checked atomically). */
  async remove(id: string, connId: string): Promise<boolean> {
    this.#tombstones.set(connId, this.#now() + TOMBSTONE_MS);
    this.#changed();
    if (this.#local.get(id)?.conn_id === connId) this.#dropLocal(id);
    if (this.#written.get(id)?.conn_id === connId) this.#written.delete(id);
    if (this.#deferred.get(id)?.conn_id === connId) this.#deferred.delete(id);
    const key = this.#headKey(id);
    for (let attempt = 0; attempt < 3; attempt++) {
      const cur = await this.#kv.get<unknown>(key);
      const stored = parseStoredHead(cur.value);
      if (stored?.conn_id !== connId) return false;
      const op = this.#kv.atomic().check(cur).delete(key);
      for (let i = 0; i < stored.models_chunks; i++) {
        op.delete(this.#chunkKey(id, stored.models_gen, i));
      }
      const res = await op.sum(this.#epochKey, 1n).commit();
      if (res.ok) return true;
    }
    return false;
  }

  /** Something a snapshot shows changed: the next one is built anew. */
  #changed(): void {
    this.#snap = null;
  }

  #setLocal(id: string, record: WorkerRecord): void {
    this.#local.set(id, record);
    this.#changed();
  }

  #dropLocal(id: string): void {
    if (this.#local.delete(id)) this.#changed();
  }

  /**
   * Live records: this instance's from memory, the others' from the last read of KV. Built once
   * per change and kept until the first record in it may go stale (requests ask several times).
   */
  snapshot(): readonly WorkerRecord[] {
    const now = this.#now();
    if (this.#snap && now <= this.#snapUntil) return this.#snap;
    const out: WorkerRecord[] = [];
    let until = Infinity;
    for (const r of this.#local.values()) {
      if (isFresh(r, now, this.#staleMs) && !this.#tombstones.has(r.conn_id)) {
        out.push(r);
        until = Math.min(until, r.last_seen + this.#staleMs);
      }
    }
    for (const [id, r] of this.#remote) {
      if (this.#local.has(id) || this.#tombstones.has(r.head.conn_id)) continue;
      if (this.#headLive(r.head, now)) {
        out.push(this.#assemble(r));
        const holder = this.#holders.get(r.head.holder) ?? 0;
        until = Math.min(until, r.head.alive_until, holder);
      }
    }
    this.#snap = out;
    this.#snapUntil = until;
    return out;
  }

  readonly #assembled = new WeakMap<Remote, WorkerRecord>();

  /** The record of a remote worker, built once per read (selection indexes it by identity). */
  #assemble(r: Remote): WorkerRecord {
    let rec = this.#assembled.get(r);
    if (!rec) {
      const {
        models_gen: _g,
        models_chunks: _c,
        models_count: _n,
        alive_until: _a,
        holder: _h,
        ...fields
      } = r.head;
      rec = { ...fields, models: r.models };
      this.#assembled.set(r, rec);
    }
    return rec;
  }

  /** Re-read the heads (and changed model lists; now and then the learned bundles) from KV. */
  refresh(): Promise<void> {
    return this.#feed.update();
  }

  async #doRefresh(): Promise<void> {
    if (this.#closed) return;
    const now = this.#now();
    for (const [conn, until] of this.#tombstones) if (until < now) this.#tombstones.delete(conn);
    await this.#readHolders();
    const next = new Map<string, Remote>();
    const invalid = new Set<string>();
    const heads: StoredHead[] = [];
    for await (const e of this.#kv.list<unknown>({ prefix: [this.#p, "workers"] })) {
      const h = parseStoredHead(e.value);
      if (!h) {
        const key = String(e.key[2]);
        invalid.add(key);
        if (!this.#invalid.has(key)) {
          this.#log("warn", "kv directory: invalid worker record ignored", { key });
        }
        continue;
      }
      heads.push(h);
    }
    this.#invalid.clear();
    for (const k of invalid) this.#invalid.add(k);
    for (const h of heads) {
      if (this.#tombstones.has(h.conn_id)) continue;
      const mine = this.#local.get(h.id);
      if (mine) {
        if (mine.conn_id === h.conn_id && this.#written.has(h.id)) continue; // held here
        // The same process holds a socket here too: this instance serves it over its own.
        if (sameProcess(mine, h)) {
          const d = this.#deferred.get(h.id);
          if (d?.conn_id === mine.conn_id) d.owner = h;
          continue;
        }
        // Another connection took the worker over: this instance's copy is history.
        if (mine.registered_at <= h.registered_at) {
          this.#dropLocal(h.id);
          this.#written.delete(h.id);
        } else continue;
      }
      const prev = this.#remote.get(h.id);
      if (prev && prev.head.models_gen === h.models_gen) {
        next.set(h.id, { head: h, models: prev.models });
        continue;
      }
      const models = await this.#readModels(h);
      if (models) next.set(h.id, { head: h, models });
      else if (prev) next.set(h.id, { head: prev.head, models: prev.models }); // mid-change
    }
    this.#remote.clear();
    this.#changed();
    for (const [id, r] of next) {
      this.#remote.set(id, r);
      // Workers held by other instances: known at once; their own instance stores the pairs.
      for (const m of r.models) this.#bundles.restore(m.name, m.bundle, now, now);
    }
    if (this.#refreshes++ % BUNDLE_REFRESH_EVERY === 0) {
      const list = this.#kv.list<unknown>(
        { prefix: [this.#p, "bundles"] },
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

  /** A head's model list, or undefined while its chunks are incomplete (a write in between). */
  async #readModels(h: StoredHead): Promise<WorkerModel[] | undefined> {
    const parts: WorkerModel[][] = [];
    for await (
      const e of this.#kv.list<unknown>({ prefix: [this.#p, "models", h.id, h.models_gen] })
    ) {
      const chunk = parseModelChunk(e.value);
      if (!chunk || e.key[4] !== parts.length) return undefined;
      parts.push(chunk);
    }
    if (parts.length !== h.models_chunks) return undefined;
    const models = parts.flat();
    return models.length === h.models_count ? models : undefined;
  }

  /** Pairs stored in KV or reported to this instance since start (bounded). */
  learnedBundles(): ReadonlyMap<string, string> {
    return this.#bundles.view;
  }

  /** Stop watching, polling and beating; the caller owns (and closes) the Deno.Kv handle. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    await this.#feed.close();
    await this.#ready;
    // Gone at once from the other instances' views (their workers reconnect elsewhere).
    await this.#kv.delete([this.#p, "routers", this.#routerId]).catch(() => {});
  }
}
