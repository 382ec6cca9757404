/**
 * The holding end of the relay: this instance's inbox in KV, learned of by a watch and a poll of
 * its bell (router/kv/change_feed.ts), each request claimed once (a checked delete of its head,
 * which the asker's withdrawal races), served over the worker's connection held here exactly as a
 * local request, and answered into KV for the asker: head and body chunks, every key expiring.
 */
import type { Logger } from "@svc/shared/log";
import type { BodyBudget, BodyHold } from "@svc/shared/http/body_budget";
import { downstreamHeaderPairs } from "../../proxy/headers.ts";
import type { UpstreamOutcome } from "../../proxy/upstream.ts";
import { ChangeFeed } from "../../kv/change_feed.ts";
import {
  parseRequestHead,
  type RelayAnswerHead,
  type RelayRequestHead,
  splitBody,
} from "./codec.ts";
import { RelayKeys } from "./keys.ts";
import { RELAY_TTL_GRACE_MS } from "./client.ts";
import { CLAIM_DELETES, deleteChunks, readChunks, writeChunks, writeWithRetry } from "./store.ts";
import { waitForKey } from "./wait.ts";

/** A relayed request as the holder hands it to a worker (headers allow-listed, no credentials). */
export interface RelayedRequest {
  workerId: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
  signal: AbortSignal;
}

/** Serves one relayed request over a connection held here (router/fleet/relay/serve.ts). */
export type RelayServe = (req: RelayedRequest) => Promise<UpstreamOutcome>;

/** Options of the holding end. */
export interface RelayInboxOptions {
  kv: Deno.Kv;
  prefix: string;
  /** This instance's id: the directory records of the workers it holds name it. */
  routerId: string;
  /** How often the bell is polled besides its watch. */
  pollMs: number;
  /** Largest body relayed in either direction (`SVC_RELAY_MAX_BODY_BYTES`). */
  maxBodyBytes: number;
  /**
   * `SVC_RELAY_PICKUP_MS`: a request being served has its busy key renewed this often (and
   * expiring after three), so its asker can tell a slow answer from a holder that is gone.
   */
  pickupMs: number;
  serve: RelayServe;
  /** The instance's body budget (`SVC_MAX_INFLIGHT_BODY_BYTES`): relayed bodies count in it. */
  budget?: BodyBudget;
  log: Logger;
}

/** A failed inbox read is tried again after this long. */
const DRAIN_RETRY_MS = 20;

/** A busy key outlives its last renewal by this many pickup bounds. */
const BUSY_TTL_PICKUPS = 3;

/** How long closing waits for relayed requests being served (the router exits within 5 s). */
const CLOSE_GRACE_MS = 2000;

/** The holder stops serving a request this long after the asker's deadline (its timer wins). */
const HOLDER_GRACE_MS = 1000;

/** Picks up relayed requests for this instance and answers them. */
export class RelayInbox {
  readonly #o: RelayInboxOptions;
  readonly #keys: RelayKeys;
  readonly #feed: ChangeFeed;
  readonly #serving = new Set<Promise<void>>();
  #closed = false;

  constructor(opts: RelayInboxOptions) {
    this.#o = opts;
    this.#keys = new RelayKeys(opts.prefix);
    this.#feed = new ChangeFeed({
      kv: opts.kv,
      key: this.#keys.bell(opts.routerId),
      pollMs: opts.pollMs,
      onChange: () => this.#drain(),
      log: opts.log,
    });
  }

  /**
   * {@link #drainOnce}, again shortly after a failure (a shared file's lock): the bell has not
   * moved, so no poll would bring the waiting requests back before their pickup bound.
   */
  async #drain(): Promise<void> {
    try {
      await this.#drainOnce();
    } catch (err) {
      this.#o.log("warn", "relay: reading the inbox failed; again shortly", { error: String(err) });
      if (!this.#closed) setTimeout(() => void this.#feed.update(), DRAIN_RETRY_MS);
    }
  }

  /** Claim every request waiting in the inbox and start serving it. */
  async #drainOnce(): Promise<void> {
    const kv = this.#o.kv;
    for await (const e of kv.list<unknown>({ prefix: this.#keys.inbox(this.#o.routerId) })) {
      if (this.#closed) return;
      const id = String(e.key.at(-1));
      const head = parseRequestHead(e.value);
      const bodyKey = this.#keys.requestBody(id);
      const usable = head !== undefined && head.deadline > Date.now() &&
        head.body_bytes <= this.#o.maxBodyBytes;
      // Relayed bodies count in this instance's body budget like its own clients' bodies; one
      // that does not fit is left unclaimed (its asker withdraws it at the pickup bound and
      // holds the request, as for a worker it cannot reach).
      let hold: BodyHold | undefined;
      if (usable && this.#o.budget) {
        hold = this.#o.budget.hold();
        try {
          hold.reserve(head.body_bytes);
        } catch {
          hold.release();
          this.#o.log("info", "relay: request left unclaimed: the body budget is full", {
            relay_id: id,
            bytes: head.body_bytes,
          });
          continue;
        }
      }
      // The body is read before the claim, so that one commit claims the request and deletes
      // what it read (a request withdrawn meanwhile costs a wasted read, nothing more).
      let body: Uint8Array | undefined;
      try {
        body = usable
          ? await readChunks(kv, bodyKey, head.body_chunks, head.body_bytes)
          : undefined;
      } catch (err) {
        hold?.release();
        throw err;
      }
      const chunks = head?.body_chunks ?? 0;
      const busy = this.#keys.busy(id);
      const claim = kv.atomic().check(e).delete(e.key)
        .set(busy, this.#o.routerId, { expireIn: BUSY_TTL_PICKUPS * this.#o.pickupMs });
      for (let i = 0; i < Math.min(chunks, CLAIM_DELETES); i++) claim.delete([...bodyKey, i]);
      const claimed = await claim.commit().then((r) => r.ok, (err) => {
        hold?.release();
        throw err;
      });
      if (!claimed) {
        hold?.release();
        continue; // withdrawn by its asker meanwhile
      }
      if (chunks > CLAIM_DELETES) {
        deleteChunks(kv, bodyKey, chunks).catch(() => {});
      }
      if (!head) {
        // Claimed, so the asker waits for an answer: tell it, rather than leave it to its deadline.
        this.#o.log("warn", "relay: invalid request refused", { relay_id: id });
        this.#refuse(id, "the request head is not one this instance accepts").catch(() => {});
        continue;
      }
      if (head.deadline <= Date.now()) {
        hold?.release();
        this.#o.log("info", "relay: request past its deadline dropped", { relay_id: id });
        continue; // nobody waits for it any more
      }
      const renew = setInterval(() => {
        kv.set(busy, this.#o.routerId, { expireIn: BUSY_TTL_PICKUPS * this.#o.pickupMs })
          .catch(() => {}); // one missed renewal is covered by the other two
      }, this.#o.pickupMs);
      const p = this.#serve(id, head, body).catch((err) =>
        this.#o.log("warn", "relay: answering failed", { relay_id: id, error: String(err) })
      ).finally(() => {
        clearInterval(renew);
        hold?.release();
        kv.delete(busy).catch(() => {});
      });
      this.#serving.add(p);
      p.finally(() => this.#serving.delete(p));
    }
  }

  /** Answer claimed request `id` as never delivered to a worker (the asker may try elsewhere). */
  async #refuse(id: string, error: string): Promise<void> {
    const expireIn = RELAY_TTL_GRACE_MS;
    const answer: RelayAnswerHead = { kind: "not_delivered", error };
    await writeWithRetry(async () =>
      (await this.#o.kv.set(this.#keys.answer(id), answer, { expireIn })).ok
    );
  }

  /** Serve one claimed request (`body`: undefined when unreadable) and write its answer. */
  async #serve(id: string, head: RelayRequestHead, body: Uint8Array | undefined): Promise<void> {
    const kv = this.#o.kv;
    let answer: RelayAnswerHead;
    let chunks: Uint8Array[] = [];
    if (!body) {
      answer = { kind: "not_delivered", error: "request body missing or over the relay bound" };
    } else {
      const until = head.deadline + HOLDER_GRACE_MS;
      // The asker's client leaving (a cancel mark) resets the worker's stream, as a local
      // client's disconnect does; watched only while the request is served.
      const served = new AbortController();
      const cancelled = new AbortController();
      const cancelKey = this.#keys.cancel(id);
      waitForKey(kv, cancelKey, { pollMs: this.#o.pollMs, untilMs: until, signal: served.signal })
        .then((w) => {
          if (w.kind !== "value") return;
          cancelled.abort();
          kv.delete(cancelKey).catch(() => {});
        });
      let out: UpstreamOutcome;
      try {
        out = await this.#o.serve({
          workerId: head.worker_id,
          method: head.method,
          path: head.path,
          headers: head.headers,
          body,
          signal: AbortSignal.any([
            AbortSignal.timeout(Math.max(1, until - Date.now())),
            cancelled.signal,
          ]),
        });
      } catch (err) {
        // Not an outcome of the stream (the worker's credential, a connection gone meanwhile):
        // the asker hears it at once instead of waiting for its deadline.
        this.#o.log("warn", "relay: serving a request failed", {
          relay_id: id,
          error: String(err),
        });
        out = { kind: "not_delivered", error: "the holding router could not send it" };
      } finally {
        served.abort();
      }
      ({ answer, chunks } = await this.#answerOf(out));
    }
    const expireIn = Math.max(1, head.deadline - Date.now()) + RELAY_TTL_GRACE_MS;
    // The asker waits for this write: a refused commit is tried again, not left to its deadline.
    const ok = await writeWithRetry(async () => {
      const last = kv.atomic().set(this.#keys.answer(id), answer, { expireIn });
      return await writeChunks(kv, this.#keys.answerBody(id), chunks, expireIn, last) &&
        (await last.commit()).ok;
    });
    if (!ok) throw new Error("the answer could not be written");
  }

  /** The answer head and body chunks of what the worker did (its body read whole, bounded). */
  async #answerOf(
    out: UpstreamOutcome,
  ): Promise<{ answer: RelayAnswerHead; chunks: Uint8Array[] }> {
    if (out.kind === "aborted") return { answer: { kind: "timeout" }, chunks: [] };
    if (out.kind !== "answer") return { answer: { kind: out.kind, error: out.error }, chunks: [] };
    const read = await readBounded(out.body, this.#o.maxBodyBytes);
    if (read.kind === "too_large") {
      return { answer: { kind: "too_large", body_bytes: read.bytes }, chunks: [] };
    }
    if (read.kind === "lost") return { answer: { kind: "dropped", error: read.error }, chunks: [] };
    const chunks = splitBody(read.parts);
    return {
      answer: {
        kind: "answer",
        status: out.status,
        headers: downstreamHeaderPairs(out.headers),
        body_bytes: read.bytes,
        body_chunks: chunks.length,
      },
      chunks,
    };
  }

  /**
   * Stop learning of new requests; requests being served get up to `graceMs` to finish and be
   * answered (the router's exit is bounded: those still running are answered by the askers'
   * own deadlines).
   */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    this.#closed = true;
    await this.#feed.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => timer = setTimeout(resolve, graceMs));
    await Promise.race([Promise.allSettled([...this.#serving]), grace]);
    clearTimeout(timer);
  }
}

/** A worker's answer body read whole up to `max` bytes. */
type BoundedRead =
  | { kind: "ok"; parts: Uint8Array[]; bytes: number }
  | { kind: "too_large"; bytes: number }
  | { kind: "lost"; error: string };

/** Read `body` whole, giving up (and cancelling it) past `max` bytes. */
async function readBounded(
  body: Uint8Array | ReadableStream<Uint8Array> | null,
  max: number,
): Promise<BoundedRead> {
  if (body === null) return { kind: "ok", parts: [], bytes: 0 };
  if (body instanceof Uint8Array) {
    return body.length > max
      ? { kind: "too_large", bytes: body.length }
      : { kind: "ok", parts: [body], bytes: body.length };
  }
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const step = await reader.read();
      if (step.done) return { kind: "ok", parts, bytes };
      bytes += step.value.length;
      if (bytes > max) {
        await reader.cancel().catch(() => {});
        return { kind: "too_large", bytes };
      }
      parts.push(step.value);
    }
  } catch (err) {
    // The worker's connection went part-way through its answer.
    return { kind: "lost", error: String(err) };
  }
}
