/**
 * The result cache's second tier: answers kept in Deno KV, shared by every router instance, read
 * only after a miss in local memory (so a hit on one instance is a hit on all). The key is the
 * local tier's (key.ts: tenant, pool, route, body); whether the answer's producer still vouches
 * for it (registered, serving, announcing that revision) is the caller's check, as for local
 * entries: the directory is shared, so any instance can make it. A body is split into chunks under KV's 64 KiB
 * value limit; the head and its chunks are written in one atomic commit and read back with one
 * list (one snapshot), so a reader never sees half an answer. Answers above the tier's entry
 * bound stay local.
 */
import type { Logger } from "@svc/shared/log";
import type { StoredAnswer } from "./store.ts";

/** What the cache asks of a second tier. */
export interface SecondTier {
  /** The answer under `key` if one is stored and young enough; never throws. */
  get(key: string): Promise<(StoredAnswer & { storedAt: number }) | undefined>;
  /** Keep `answer` under `key` (in the background; failures are logged, not thrown). */
  set(key: string, answer: StoredAnswer): void;
  /** Wait for writes in flight (tests, shutdown). */
  flush(): Promise<void>;
}

/** Options of the KV tier. */
export interface KvTierOptions {
  kv: Deno.Kv;
  prefix: string;
  /** Largest body kept (bigger ones stay local); at most {@link MAX_TIER_ENTRY_BYTES}. */
  maxEntryBytes: number;
  /** An answer is served for at most this long after it was stored (0: a day, KV's expiry). */
  ttlMs: number;
  log: Logger;
  now?: () => number;
}

/** Body bytes per chunk (KV values are at most 65,536 bytes). */
const CHUNK_BYTES = 60_000;
/** Bound of the tier's entries: one commit carries at most 819,200 bytes. */
export const MAX_TIER_ENTRY_BYTES = 640 * 1024;
/** Most chunks one entry has (a head naming more is not believed when its chunks are deleted). */
const MAX_TIER_CHUNKS = Math.ceil(MAX_TIER_ENTRY_BYTES / CHUNK_BYTES);
/** Expiry of entries when the cache has no age limit. */
const NO_TTL_EXPIRY_MS = 24 * 3600 * 1000;

/** The head of a stored answer. */
interface Head {
  status: number;
  headers: [string, string][];
  revision: string;
  /** The worker connection that computed it (whether it still vouches is the caller's check). */
  producer: string;
  size: number;
  chunks: number;
  gen: string;
  stored_at: number;
}

/** A head as read back, or undefined when it is not one (another release, a hand edit). */
function parseHead(v: unknown): Head | undefined {
  const h = v as Partial<Head> | null;
  if (
    typeof h?.status !== "number" || !Array.isArray(h.headers) ||
    typeof h.revision !== "string" || typeof h.producer !== "string" ||
    typeof h.size !== "number" ||
    typeof h.chunks !== "number" || typeof h.gen !== "string" || typeof h.stored_at !== "number"
  ) return undefined;
  const pairsOk = h.headers.every((p) =>
    Array.isArray(p) && p.length === 2 && typeof p[0] === "string" && typeof p[1] === "string"
  );
  return pairsOk ? h as Head : undefined;
}

/** Result answers in Deno KV, chunked. */
export class KvResultTier implements SecondTier {
  readonly #o: KvTierOptions;
  readonly #now: () => number;
  readonly #writes = new Set<Promise<void>>();

  constructor(opts: KvTierOptions) {
    this.#o = { ...opts, maxEntryBytes: Math.min(opts.maxEntryBytes, MAX_TIER_ENTRY_BYTES) };
    this.#now = opts.now ?? Date.now;
  }

  /** One list of the entry's keys: its head and chunks in one snapshot. */
  async get(key: string): Promise<(StoredAnswer & { storedAt: number }) | undefined> {
    try {
      let head: Head | undefined;
      const chunks = new Map<string, Uint8Array>();
      for await (const e of this.#o.kv.list<unknown>({ prefix: [this.#o.prefix, "cache", key] })) {
        if (e.key[3] === "h") head = parseHead(e.value);
        else if (e.value instanceof Uint8Array) {
          chunks.set(`${String(e.key[3])}/${String(e.key[4])}`, e.value);
        }
      }
      if (!head) return undefined;
      const ttl = this.#o.ttlMs;
      if (ttl > 0 && this.#now() - head.stored_at >= ttl) return undefined;
      const body = new Uint8Array(head.size);
      let at = 0;
      for (let i = 0; i < head.chunks; i++) {
        const c = chunks.get(`${head.gen}/${i}`);
        if (!c || at + c.length > head.size) return undefined;
        body.set(c, at);
        at += c.length;
      }
      if (at !== head.size) return undefined;
      return {
        status: head.status,
        headers: head.headers,
        body,
        revision: head.revision,
        producer: head.producer,
        storedAt: head.stored_at,
      };
    } catch (err) {
      this.#o.log("warn", "result cache: KV read failed", { error: String(err) });
      return undefined;
    }
  }

  /** Store in the background when small enough; the previous generation expires by itself. */
  set(key: string, answer: StoredAnswer): void {
    if (answer.body.length > this.#o.maxEntryBytes) return;
    const p = this.#write(key, answer).catch((err) =>
      this.#o.log("warn", "result cache: KV write failed", { error: String(err) })
    ).finally(() => this.#writes.delete(p));
    this.#writes.add(p);
  }

  async #write(key: string, a: StoredAnswer): Promise<void> {
    const expireIn = this.#o.ttlMs > 0 ? this.#o.ttlMs : NO_TTL_EXPIRY_MS;
    const gen = crypto.randomUUID().slice(0, 8);
    const chunks = Math.ceil(a.body.length / CHUNK_BYTES);
    const head: Head = {
      status: a.status,
      headers: a.headers.map(([k, v]) => [k, v]),
      revision: a.revision,
      producer: a.producer,
      size: a.body.length,
      chunks,
      gen,
      stored_at: this.#now(),
    };
    const base = [this.#o.prefix, "cache", key];
    // The generation it replaces goes in the same commit: a key rewritten often (no-cache
    // repeats) must not leave every earlier body behind for reads to list until it expires.
    const cur = await this.#o.kv.get<unknown>([...base, "h"]);
    const old = parseHead(cur.value);
    const op = this.#o.kv.atomic().check(cur);
    if (old && old.gen !== gen) {
      for (let i = 0; i < Math.min(old.chunks, MAX_TIER_CHUNKS); i++) {
        op.delete([...base, old.gen, i]);
      }
    }
    for (let i = 0; i < chunks; i++) {
      op.set([...base, gen, i], a.body.slice(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES), {
        expireIn,
      });
    }
    op.set([...base, "h"], head, { expireIn });
    await op.commit();
  }

  /** Wait for writes in flight. */
  async flush(): Promise<void> {
    await Promise.all([...this.#writes]);
  }
}
