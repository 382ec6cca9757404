/**
 * Drains sent to any router instance: `POST /v1/admin/workers/{id}/drain` on an instance that
 * does not hold the worker's socket leaves a mark in KV (`[prefix, "drains", id]`, naming the
 * connection); the instance that holds it sees the mark (change counter, watched and polled),
 * carries the drain out, and deletes the mark. A mark names a connection so that a worker that
 * registers again (a restart: it serves again) is not drained by an old mark; a mark nobody
 * carries out is ignored after {@link MARK_TTL_MS} and expires. A worker linked to several
 * instances has a connection on each: its mark also names the process (its instance key's
 * hash), every instance drains the connection of that process it holds, and the mark stays
 * until it expires (an instance the worker dials again later drains it too).
 */
import type { Logger } from "@svc/shared/log";
import { ChangeFeed } from "./change_feed.ts";

/** A mark counts for this long (the deadline is in the value; `expireIn` deletes later). */
export const MARK_TTL_MS = 60_000;

/** A stored mark. */
interface Mark {
  conn_id: string;
  /** The worker process's instance hash: its connections on every instance are drained. */
  instance_hash?: string;
  until: number;
}

/**
 * Drain the worker here if this instance holds connection `connId` of it, or a connection of the
 * same process (`instanceHash`); true when done.
 */
export type CarryOut = (id: string, connId: string, instanceHash?: string) => Promise<boolean>;

/** Drain marks in KV and the carrying out of those for this instance's workers. */
export class KvDrains {
  readonly #kv: Deno.Kv;
  readonly #p: string;
  readonly #feed: ChangeFeed;
  readonly #carryOut: CarryOut;
  readonly #now: () => number;

  constructor(opts: {
    kv: Deno.Kv;
    prefix: string;
    pollMs: number;
    carryOut: CarryOut;
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

  /**
   * Ask the instance holding connection `connId` of worker `id` to drain it, and with
   * `instanceHash` every instance holding a connection of that process.
   */
  async request(id: string, connId: string, instanceHash?: string): Promise<void> {
    const mark: Mark = {
      conn_id: connId,
      ...(instanceHash === undefined ? {} : { instance_hash: instanceHash }),
      until: this.#now() + MARK_TTL_MS,
    };
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
      const hash = typeof m.instance_hash === "string" ? m.instance_hash : undefined;
      // A mark for a process stays for its other instances (and later links) until it expires.
      if (await this.#carryOut(id, m.conn_id, hash) && hash === undefined) {
        await this.#kv.atomic().check(e).delete(e.key).commit();
      }
    }
  }

  /** Stop watching. */
  close(): Promise<void> {
    return this.#feed.close();
  }
}
