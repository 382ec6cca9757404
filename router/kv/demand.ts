/**
 * Pending demand counted across router instances in Deno KV, so `/health`, the 202's `pending`,
 * `svc_router_pending_demand` and the webhook show the fleet's total, not one instance's slice.
 * Per (profile, bundle): a KvU64 count (summed, no check-and-retry), the first and the latest
 * request's time (min, max), windowed like the local tracker (no request for the window: gone).
 * Adds are batched and written in the background; the totals are read back when the change
 * counter moves, so a request never waits for KV.
 */
import type { DemandEntry } from "@svc/shared/schemas/router";
import type { Logger } from "@svc/shared/log";
import { ChangeFeed } from "./change_feed.ts";

/** What the local demand tracker asks of the shared count (router/provisioning.ts). */
export interface DemandShare {
  /** Count one unserved request (written in the background). */
  add(machineProfile: string, bundle: string, now: number): void;
  /** The pool is served: its demand ends everywhere (written in the background). */
  clear(machineProfile: string, bundle: string): void;
  /** True when a shared count is known for the pool. */
  has(machineProfile: string, bundle: string): boolean;
  /** Shared entries not past the window, including this instance's adds not yet read back. */
  entries(now: number): DemandEntry[];
  /** The shared entry of one pool, if any (see {@link entries}). */
  entry(machineProfile: string, bundle: string, now: number): DemandEntry | undefined;
  /**
   * True when this instance may post the pool's webhook notice now: no instance posted it within
   * `intervalMs` (checked and marked atomically; when KV cannot say, this instance posts).
   */
  claimPost(
    machineProfile: string,
    bundle: string,
    now: number,
    intervalMs: number,
  ): Promise<boolean>;
  /** Write what is batched and stop. */
  close(): Promise<void>;
}

/** Adds are written this long after the first one of a batch. */
const BATCH_MS = 50;
/** At most this many pools are tracked (profiles come from a client header). */
const MAX_ENTRIES = 256;

/** One pool's count. */
interface Count {
  profile: string;
  bundle: string;
  n: number;
  first: number;
  last: number;
}

function poolKey(profile: string, bundle: string): string {
  return `${profile}\u0000${bundle}`;
}

/** Demand counts in KV under `[prefix, "demand", profile, bundle, field]`. */
export class KvDemand implements DemandShare {
  readonly #kv: Deno.Kv;
  readonly #p: string;
  readonly #windowMs: number;
  readonly #log: Logger;
  readonly #feed: ChangeFeed;
  /** Counts as last read from KV, plus the batches this instance committed since. */
  #view = new Map<string, Count>();
  /** Adds not yet sent. */
  readonly #unsent = new Map<string, Count>();
  /** Batches being committed. */
  readonly #inflight = new Set<Count>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #writes = new Set<Promise<void>>();

  constructor(opts: {
    kv: Deno.Kv;
    prefix: string;
    windowS: number;
    pollMs: number;
    log: Logger;
  }) {
    this.#kv = opts.kv;
    this.#p = opts.prefix;
    this.#windowMs = opts.windowS * 1000;
    this.#log = opts.log;
    this.#feed = new ChangeFeed({
      kv: opts.kv,
      key: this.#epochKey,
      pollMs: opts.pollMs,
      onChange: () => this.#read(),
      log: opts.log,
    });
  }

  get #epochKey(): Deno.KvKey {
    return [this.#p, "demand-epoch"];
  }

  /** Read the shared counts now (tests; the change feed does it in the background). */
  refresh(): Promise<void> {
    return this.#feed.update();
  }

  /** Count one unserved request; sent with the others of the next {@link BATCH_MS}. */
  add(machineProfile: string, bundle: string, now: number): void {
    const key = poolKey(machineProfile, bundle);
    const u = this.#unsent.get(key);
    if (u) {
      u.n++;
      u.last = now;
    } else {
      if (this.#unsent.size >= MAX_ENTRIES) return;
      this.#unsent.set(key, { profile: machineProfile, bundle, n: 1, first: now, last: now });
    }
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#track(this.#flush());
    }, BATCH_MS);
  }

  #track(p: Promise<void>): void {
    const q: Promise<void> = p.catch((err) =>
      this.#log("warn", "shared demand: KV write failed", { error: String(err) })
    ).finally(() => this.#writes.delete(q));
    this.#writes.add(q);
  }

  async #flush(): Promise<void> {
    if (this.#unsent.size === 0) return;
    // Taken out at once: a flush started meanwhile must not send the same counts again.
    const batch = [...this.#unsent.values()];
    this.#unsent.clear();
    for (const c of batch) this.#inflight.add(c);
    let ok = false;
    try {
      const op = this.#kv.atomic();
      for (const c of batch) {
        const base = [this.#p, "demand", c.profile, c.bundle];
        op.sum([...base, "n"], BigInt(c.n))
          .min([...base, "first"], BigInt(c.first))
          .max([...base, "last"], BigInt(c.last));
      }
      ok = (await ChangeFeed.bump(op, this.#epochKey).commit()).ok;
    } finally {
      for (const c of batch) {
        this.#inflight.delete(c);
        // Known to be in KV now: counted until the next read replaces the view. A failed
        // commit's counts are dropped (demand is a signal, not a ledger).
        if (!ok) continue;
        const v = this.#view.get(poolKey(c.profile, c.bundle));
        if (v) {
          v.n += c.n;
          v.first = Math.min(v.first, c.first);
          v.last = Math.max(v.last, c.last);
        } else if (this.#view.size < MAX_ENTRIES) {
          this.#view.set(poolKey(c.profile, c.bundle), { ...c });
        }
      }
    }
  }

  /** End the pool's demand everywhere (its counts deleted, the change announced). */
  clear(machineProfile: string, bundle: string): void {
    const key = poolKey(machineProfile, bundle);
    this.#view.delete(key);
    this.#unsent.delete(key);
    const base = [this.#p, "demand", machineProfile, bundle];
    const op = this.#kv.atomic();
    for (const f of ["n", "first", "last"]) op.delete([...base, f]);
    this.#track(ChangeFeed.bump(op, this.#epochKey).commit().then(() => {}));
  }

  /** True when a count of the pool is known here (read, unsent or being sent). */
  has(machineProfile: string, bundle: string): boolean {
    const key = poolKey(machineProfile, bundle);
    if (this.#view.has(key) || this.#unsent.has(key)) return true;
    return [...this.#inflight].some((c) => poolKey(c.profile, c.bundle) === key);
  }

  /** The fleet's entry of one pool, as known here. */
  entry(machineProfile: string, bundle: string, now: number): DemandEntry | undefined {
    return this.#merged(poolKey(machineProfile, bundle), now);
  }

  /** The fleet's entries, as known here. */
  entries(now: number): DemandEntry[] {
    const keys = new Set([...this.#view.keys(), ...this.#unsent.keys()]);
    for (const c of this.#inflight) keys.add(poolKey(c.profile, c.bundle));
    const out: DemandEntry[] = [];
    for (const key of keys) {
      const e = this.#merged(key, now);
      if (e) out.push(e);
    }
    return out;
  }

  /** The view's, unsent and in-flight counts of one pool together. */
  #merged(key: string, now: number): DemandEntry | undefined {
    const parts = [this.#view.get(key), this.#unsent.get(key)].filter((c) => c !== undefined);
    for (const c of this.#inflight) if (poolKey(c.profile, c.bundle) === key) parts.push(c);
    if (parts.length === 0) return undefined;
    const last = Math.max(...parts.map((c) => c.last));
    if (now - last > this.#windowMs) return undefined;
    return {
      machine_profile: parts[0].profile,
      bundle: parts[0].bundle,
      pending: parts.reduce((n, c) => n + c.n, 0),
      first_at: Math.min(...parts.map((c) => c.first)),
      last_at: last,
    };
  }

  /** Replace the view with KV's counts; counts past the window are deleted. */
  async #read(): Promise<void> {
    const parts = new Map<string, Partial<Count> & { profile: string; bundle: string }>();
    const list = this.#kv.list<unknown>({ prefix: [this.#p, "demand"] }, {
      limit: MAX_ENTRIES * 3,
    });
    for await (const e of list) {
      const [, , profile, bundle, field] = e.key;
      if (typeof profile !== "string" || typeof bundle !== "string") continue;
      if (!(e.value instanceof Deno.KvU64)) continue;
      const key = poolKey(profile, bundle);
      const c = parts.get(key) ?? { profile, bundle };
      const n = Number(e.value.value);
      if (field === "n") c.n = n;
      else if (field === "first") c.first = n;
      else if (field === "last") c.last = n;
      parts.set(key, c);
    }
    const now = Date.now();
    const view = new Map<string, Count>();
    const expired: Deno.KvKey[] = [];
    for (const [key, c] of parts) {
      if (c.n === undefined || c.last === undefined) continue;
      if (now - c.last > this.#windowMs) {
        for (const f of ["n", "first", "last"]) {
          expired.push([this.#p, "demand", c.profile, c.bundle, f]);
        }
        continue;
      }
      const first = c.first ?? c.last;
      view.set(key, { profile: c.profile, bundle: c.bundle, n: c.n, first, last: c.last });
    }
    this.#view = view;
    for (let i = 0; i < expired.length; i += 9) {
      const op = this.#kv.atomic();
      for (const k of expired.slice(i, i + 9)) op.delete(k);
      await op.commit();
    }
  }

  /** One webhook post per pool and interval across the instances (see {@link DemandShare}). */
  async claimPost(
    machineProfile: string,
    bundle: string,
    now: number,
    intervalMs: number,
  ): Promise<boolean> {
    const key = [this.#p, "webhook", machineProfile, bundle];
    try {
      const cur = await this.#kv.get<{ at?: unknown }>(key);
      const at = cur.value?.at;
      if (typeof at === "number" && now - at < intervalMs) return false;
      const res = await this.#kv.atomic().check(cur).set(key, { at: now }, {
        expireIn: intervalMs * 2,
      }).commit();
      return res.ok;
    } catch (err) {
      this.#log("warn", "shared demand: webhook claim failed", { error: String(err) });
      return true;
    }
  }

  /** Send what is batched, wait for writes in flight, stop watching. */
  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#flush().catch(() => {});
    await Promise.all([...this.#writes]);
    await this.#feed.close();
  }
}
