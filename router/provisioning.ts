/**
 * Demand for pools that have no serving worker. Each unserved request is counted per
 * (machine profile, bundle); the count is the autoscaler's signal (metric, optional webhook).
 * A count ends when the pool gets a serving worker, or after a window without new demand, so a
 * pool nobody asks for can scale back to zero. Requests for names nobody knows (routed to the
 * fallback bundle on a guess) count once per pool and bundle, however many names they make up,
 * and refresh that count at most once a second: twenty thousand invented names are one pending
 * request, not twenty thousand, and cost no more bookkeeping than one a second.
 */
import type { DemandEntry } from "@svc/shared/schemas/router";
import { VERSION } from "@svc/shared/version";
import type { Logger } from "@svc/shared/log";
import type { RouterMetrics } from "./metrics/router_metrics.ts";
import type { WorkerRecord } from "./directory/types.ts";
import { poolHasCapacity } from "./pools/selection.ts";
import type { DemandShare } from "./kv/demand.ts";

/** Webhook settings; the URL and token are never logged. */
export interface WebhookOptions {
  url: string;
  token: string | undefined;
  intervalS: number;
}

/** At most this many pools are tracked (profiles come from a client header). */
const MAX_ENTRIES = 256;
/** Webhook posts allowed per interval across all pools. */
const MAX_POSTS_PER_INTERVAL = 16;
/** Bound on one webhook post. */
const WEBHOOK_TIMEOUT_MS = 5000;
/** Requests for made-up names refresh their pool's demand at most this often. */
const GUESSED_REFRESH_MS = 1000;

/** Tracks pending demand and notifies the webhook, debounced per pool. */
export class DemandTracker {
  readonly #entries = new Map<string, DemandEntry>();
  readonly #lastPost = new Map<string, number>();
  readonly #windowMs: number;
  readonly #webhook: WebhookOptions | undefined;
  readonly #routerId: string;
  readonly #log: Logger;
  readonly #metrics: RouterMetrics;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #posts = new Set<Promise<void>>();
  /** Pools whose demand holds the one count of made-up names, and when it was refreshed. */
  readonly #guessed = new Map<string, number>();
  #windowStart = -Infinity;
  #windowPosts = 0;
  /** The count shared by all router instances (KV mode), merged into what is shown. */
  #share: DemandShare | undefined;

  constructor(opts: {
    windowS: number;
    webhook: WebhookOptions | undefined;
    routerId: string;
    log: Logger;
    metrics: RouterMetrics;
    fetch?: typeof fetch;
    now?: () => number;
    share?: DemandShare;
  }) {
    this.#share = opts.share;
    this.#windowMs = opts.windowS * 1000;
    this.#webhook = opts.webhook;
    this.#routerId = opts.routerId;
    this.#log = opts.log;
    this.#metrics = opts.metrics;
    this.#fetch = opts.fetch ?? fetch;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * Count one unserved request for (profile, bundle) and maybe notify the webhook. `guessed`: the
   * model is a name nobody knows (see the module comment).
   */
  record(machineProfile: string, bundle: string, model: string, guessed = false): DemandEntry {
    const now = this.#now();
    const key = `${machineProfile}\u0000${bundle}`;
    let e = this.#entries.get(key);
    if (!e || now - e.last_at > this.#windowMs) {
      if (!e && this.#entries.size >= MAX_ENTRIES) this.#evictOldest();
      e = { machine_profile: machineProfile, bundle, pending: 0, first_at: now, last_at: now };
      this.#entries.set(key, e);
      this.#guessed.delete(key);
    }
    let counted = true;
    if (guessed) {
      const at = this.#guessed.get(key);
      counted = at === undefined;
      if (at !== undefined && now - at < GUESSED_REFRESH_MS) {
        return merge(e, this.#share?.entry(machineProfile, bundle, now));
      }
      if (at === undefined) {
        if (this.#guessed.size >= MAX_ENTRIES) {
          this.#guessed.delete(this.#guessed.keys().next().value!);
        }
        e.pending++;
      }
      this.#guessed.set(key, now);
    } else {
      e.pending++;
    }
    e.last_at = now;
    this.#metrics.provisioning.inc({ machine_profile: machineProfile, bundle });
    // The fleet's total, when instances share one: what the 202 and the webhook say.
    const shown = this.#withShared(e, now, counted);
    this.#maybeNotify(key, shown, model, now);
    return shown;
  }

  /** `e` with the shared count folded in; `counted`: this request added one (shared too). */
  #withShared(e: DemandEntry, now: number, counted: boolean): DemandEntry {
    const share = this.#share;
    if (!share) return e;
    if (counted) share.add(e.machine_profile, e.bundle, now);
    return merge(e, share.entry(e.machine_profile, e.bundle, now));
  }

  /** The pool has a serving worker again: its demand is met. */
  satisfied(machineProfile: string, bundle: string): void {
    const key = `${machineProfile}\u0000${bundle}`;
    this.#entries.delete(key);
    this.#guessed.delete(key);
    // Checked in memory first: every served request says so, and only a known count is cleared.
    if (this.#share?.has(machineProfile, bundle)) this.#share.clear(machineProfile, bundle);
  }

  /**
   * Current demand: entries older than the window are dropped, and so are pools that `workers`
   * (when given) now serve, so every reader (metrics, /health, the dashboard) sees the same.
   */
  pending(workers?: readonly WorkerRecord[]): DemandEntry[] {
    const now = this.#now();
    const out: DemandEntry[] = [];
    for (const [key, e] of this.#entries) {
      const met = workers !== undefined && poolHasCapacity(workers, e.machine_profile, e.bundle);
      if (met || now - e.last_at > this.#windowMs) this.#entries.delete(key);
      else out.push({ ...e });
    }
    if (!this.#share) return out;
    // Other instances' demand: the shared count wins where both know a pool (it includes ours).
    const byKey = new Map(out.map((e) => [`${e.machine_profile}\u0000${e.bundle}`, e]));
    for (const s of this.#share.entries(now)) {
      const met = workers !== undefined && poolHasCapacity(workers, s.machine_profile, s.bundle);
      if (met) continue;
      const key = `${s.machine_profile}\u0000${s.bundle}`;
      byKey.set(key, merge(byKey.get(key), s));
    }
    return [...byKey.values()];
  }

  /** Stop sharing (pending adds are sent first). */
  async close(): Promise<void> {
    await this.flush();
    await this.#share?.close();
  }

  /** Wait for webhook posts in flight (tests and shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.#posts]);
  }

  #evictOldest(): void {
    let oldestKey: string | undefined;
    let oldest = Infinity;
    for (const [k, e] of this.#entries) {
      if (e.last_at < oldest) {
        oldest = e.last_at;
        oldestKey = k;
      }
    }
    if (oldestKey !== undefined) this.#entries.delete(oldestKey);
  }

  #maybeNotify(key: string, e: DemandEntry, model: string, now: number): void {
    if (!this.#webhook) return;
    const intervalMs = this.#webhook.intervalS * 1000;
    const last = this.#lastPost.get(key);
    if (last !== undefined && now - last < intervalMs) return;
    // Profiles come from a client header: without a bound across pools, every made-up profile
    // would make the router post once. At most MAX_POSTS_PER_INTERVAL posts per interval.
    if (now - this.#windowStart >= intervalMs) {
      this.#windowStart = now;
      this.#windowPosts = 0;
    }
    if (this.#windowPosts >= MAX_POSTS_PER_INTERVAL) return;
    this.#windowPosts++;
    this.#lastPost.set(key, now);
    if (this.#lastPost.size > MAX_ENTRIES) {
      this.#lastPost.delete(this.#lastPost.keys().next().value!);
    }
    const hook = this.#webhook;
    const body = {
      event: "demand",
      machine_profile: e.machine_profile,
      bundle: e.bundle,
      model,
      pending: e.pending,
      first_at: new Date(e.first_at).toISOString(),
      router_id: this.#routerId,
      version: VERSION,
    };
    // Instances sharing demand also share the debounce: one post per pool and interval.
    const claim = this.#share?.claimPost(e.machine_profile, e.bundle, now, intervalMs);
    const p = (claim ? claim : Promise.resolve(true))
      .then((mine) => mine ? this.#post(hook, body) : undefined)
      .finally(() => this.#posts.delete(p));
    this.#posts.add(p);
  }

  async #post(hook: WebhookOptions, body: Record<string, unknown>): Promise<void> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (hook.token) headers.authorization = `Bearer ${hook.token}`;
    try {
      const res = await this.#fetch(hook.url, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      });
      await res.body?.cancel();
      this.#metrics.webhook.inc({ result: res.ok ? "ok" : "error" });
      if (!res.ok) this.#log("warn", "provision webhook refused", { status: res.status });
    } catch (err) {
      this.#metrics.webhook.inc({ result: "error" });
      this.#log("warn", "provision webhook failed", { error: (err as Error).name });
    }
  }
}

/**
 * This instance's entry and the shared one together: the larger count (the shared one includes
 * this instance's adds, but may not have been read back yet), the earliest start, the latest
 * request.
 */
function merge(local: DemandEntry | undefined, shared: DemandEntry | undefined): DemandEntry {
  if (!local) return { ...shared! };
  if (!shared) return local;
  return {
    ...local,
    pending: Math.max(local.pending, shared.pending),
    first_at: Math.min(local.first_at, shared.first_at),
    last_at: Math.max(local.last_at, shared.last_at),
  };
}
