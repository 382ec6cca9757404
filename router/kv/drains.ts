/**
 * Drains sent to any router instance: `POST /v1/admin/workers/{id}/drain` on an instance that
 * does not hold the worker's socket leaves a mark in KV (`[prefix, "drains", id]`, naming the
 * connection); the instance that holds it sees the mark (change counter, watched and polled),
 * carries the drain out, and deletes the mark. A mark names a connection so that a worker that
 * registers again (a restart: it serves again) is not drained by an old mark; a mark nobody
 * carries out is ignored after {@link MARK_TTL_MS} and expires.
 */
import type { Logger } from "@svc/shared/log";
import { ChangeFeed } from "./change_feed.ts";

/** A mark counts for this long (the deadline is in the value; `expireIn` deletes later). */
export const MARK_TTL_MS = 60_000;

/** A stored mark. */
interface Mark {
  conn_id: string;
  until: number;
}

/** Drain marks in KV and the carrying out of those for this instance's workers. */
export class KvDrains {
  readonly #kv: Deno.Kv;
  readonly #p: string;
  readonly #feed: ChangeFeed;
  /** Drain the worker if this instance holds connection `connId` of it; true when done. */
  readonly #carryOut: (id: string, connId: string) => Promise<boolean>;
  readonly #now: () => number;

  constructor(opts: {
    kv: Deno.Kv;
    prefix: string;
    pollMs: number;
    carryOut: (id: string, connId: string) => Promise<boolean>;
    log: Logger;
    now?: () => number;
  }) {
    this.#kv = opts.kv;
    this.#p = opts.prefix;
    this.#carryOut = opts.carryOut;
    this.#now = opts.now ?? Date.now;
    this.#feed = new ChangeFeed({
      kv: opts.kv,
      key: this.#epochKey,
      pollMs: opts.pollMs,
      onChange: () => this.#scan(),
      log: opts.log,
    });
  }

  get #epochKey(): Deno.KvKey {
    return [this.#p, "drains-epoch"];
  }

  /** Ask the instance holding connection `connId` of worker `id` to drain it. */
  async request(id: string, connId: string): Promise<void> {
    const mark: Mark = { conn_id: connId, until: this.#now() + MARK_TTL_MS };
    const op = this.#kv.atomic().set([this.#p, "drains", id], mark, { expireIn: MARK_TTL_MS });
    await ChangeFeed.bump(op, this.#epochKey).commit();
  }

  /** Carry out the marks for workers held here; delete those done. */
  async #scan(): Promise<void> {
    const now = this.#now();
    for await (const e of this.#kv.list<Partial<Mark>>({ prefix: [this.#p, "drains"] })) {
      const id = e.key[2];
      const m = e.value;
      if (typeof id !== "string" || typeof m?.conn_id !== "string") continue;
      if (typeof m.until !== "number" || m.until < now) continue;
      if (await this.#carryOut(id, m.conn_id)) {
        await this.#kv.atomic().check(e).delete(e.key).commit();
      }
    }
  }

  /** Stop watching. */
  close(): Promise<void> {
    return this.#feed.close();
  }
}
