/**
 * The asking end of the relay: a request for a worker whose connection another router instance
 * holds is written to KV for that instance (head, body chunks, a ring of its bell), and its answer
 * read back from KV. The outcomes are the HTTP client's (router/proxy/upstream.ts), so forwarding
 * applies the same rules whichever path a request took, plus one of its own: the holder never
 * picked the request up within the bound, and it was withdrawn (nothing reached any worker).
 */
import type { Logger } from "@svc/shared/log";
import { ServiceError } from "@svc/shared/errors";
import type { UpstreamOutcome, UpstreamRequest } from "../../proxy/upstream.ts";
import { parseAnswerHead, parseRequestHead, type RelayRequestHead, splitBody } from "./codec.ts";
import { RelayKeys } from "./keys.ts";
import { deleteChunks, readChunks, writeChunks, writeWithRetry } from "./store.ts";
import { waitForKey } from "./wait.ts";

/** What became of a relayed request. */
export type RelayOutcome =
  | UpstreamOutcome
  /** The holder did not claim it within the pickup bound; withdrawn, never served. */
  | { kind: "not_picked_up" }
  /** The worker's answer is larger than the relay carries. */
  | { kind: "too_large"; bytes: number };

/** Options of the asking end. */
export interface RelayClientOptions {
  kv: Deno.Kv;
  prefix: string;
  /** This instance's id (shown to the holder in its logs). */
  routerId: string;
  /** Largest body relayed in either direction (`SVC_RELAY_MAX_BODY_BYTES`). */
  maxBodyBytes: number;
  /** How often the answer key is polled besides its watch. */
  pollMs: number;
  /** A request not claimed by its holder within this long is withdrawn. */
  pickupMs: number;
  /** Bound on one relayed request (`SVC_UPSTREAM_TIMEOUT_MS`). */
  timeoutMs: number;
  log: Logger;
}

/** Tries of a withdrawal that fails (not one that finds the request claimed). */
const WITHDRAW_ATTEMPTS = 4;
const WITHDRAW_RETRY_MS = 10;

/** Keys outlive the request's deadline by this much, then KV collects them. */
export const RELAY_TTL_GRACE_MS = 60_000;

/** Sends requests through KV to the router instance holding a worker's connection. */
export class RelayClient {
  readonly #o: RelayClientOptions;
  readonly #keys: RelayKeys;

  constructor(opts: RelayClientOptions) {
    this.#o = opts;
    this.#keys = new RelayKeys(opts.prefix);
  }

  /** Largest body relayed (`SVC_RELAY_MAX_BODY_BYTES`). */
  get maxBodyBytes(): number {
    return this.#o.maxBodyBytes;
  }

  /** This instance's id: a record it holds itself is never relayed to. */
  get routerId(): string {
    return this.#o.routerId;
  }

  /**
   * Relay `req` to worker `workerId` through `holder`; resolves with what became of it (a KV
   * failure counts as a request that reached no worker, or, once the worker answered, as one it
   * dropped). Rejects only with a 400 for a request whose path or headers are over what the
   * holder accepts (checked here with the holder's own schema, before anything is written). `held` says whether the
   * holder still holds the worker (the directory's view): a holder that dies mid-relay costs
   * two pickup bounds, not the whole upstream timeout.
   */
  async send(
    holder: string,
    workerId: string,
    req: UpstreamRequest,
    held: () => boolean = () => true,
  ): Promise<RelayOutcome> {
    const id = crypto.randomUUID();
    const deadline = Date.now() + this.#o.timeoutMs;
    const expireIn = this.#o.timeoutMs + RELAY_TTL_GRACE_MS;
    const chunks = splitBody(req.body?.chunks ?? []);
    const { authorization: _never, ...headers } = req.headers;
    const head: RelayRequestHead = {
      asker: this.#o.routerId,
      worker_id: workerId,
      method: req.method,
      path: req.path,
      headers,
      body_bytes: req.body?.length ?? 0,
      body_chunks: chunks.length,
      deadline,
    };
    if (!parseRequestHead(head)) {
      throw new ServiceError(
        "INVALID_INPUT",
        "the request's path or headers are longer than a request relayed between router " +
          "instances may carry (a path of 16,384 characters, header values of 8,192)",
      );
    }
    const k = this.#keys;
    const inboxKey = k.request(holder, id);
    const written = await writeWithRetry(async () => {
      const last = this.#o.kv.atomic()
        .set(inboxKey, head, { expireIn })
        // Any new value moves the bell's versionstamp, which is all the holder compares; set,
        // not summed, so that it expires with the requests of an instance that is gone.
        .set(k.bell(holder), id, { expireIn });
      return await writeChunks(this.#o.kv, k.requestBody(id), chunks, expireIn, last) &&
        (await last.commit()).ok;
    });
    if (!written) {
      await deleteChunks(this.#o.kv, k.requestBody(id), chunks.length);
      return { kind: "not_delivered", error: "relay: the request could not be written to KV" };
    }
    // First the pickup bound: a holder that never claims the request is one that cannot serve.
    const pickupUntil = Math.min(deadline, Date.now() + this.#o.pickupMs);
    let got = await waitForKey(this.#o.kv, k.answer(id), {
      pollMs: this.#o.pollMs,
      untilMs: pickupUntil,
      signal: req.signal,
    });
    if (got.kind === "timeout") {
      if (await this.#withdraw(inboxKey, id, chunks.length)) return { kind: "not_picked_up" };
      // Claimed: the answer comes, unless the holder dies with the request. Its liveness is
      // checked once per pickup bound; gone, it gets one more bound to have written an answer.
      let graced = false;
      for (;;) {
        got = await waitForKey(this.#o.kv, k.answer(id), {
          pollMs: this.#o.pollMs,
          untilMs: Math.min(deadline, Date.now() + this.#o.pickupMs),
          signal: req.signal,
        });
        if (got.kind !== "timeout" || Date.now() >= deadline) break;
        // The holder's own word first (its busy key), then the directory's view of the worker.
        if (await this.#busy(id) || held()) continue;
        if (graced) {
          // The worker may have had it: like a connection lost mid-request, never sent again.
          return { kind: "dropped", error: "relay: the holding router went away" };
        }
        graced = true;
      }
    }
    if (got.kind !== "value") {
      // Aborted (client gone, or the forwarding deadline): taken back if still unclaimed, else
      // the holder is told to stop, so the worker drops the work as for a local client that
      // left. Whatever the holder writes expires.
      if (!(await this.#withdraw(inboxKey, id, chunks.length))) await this.#cancel(id, expireIn);
      return { kind: "aborted" };
    }
    return await this.#answer(id, got.entry.value);
  }

  /**
   * Take the request back unless the holder claimed it (both sides delete the inbox head,
   * checked, so exactly one wins); true when withdrawn.
   */
  async #withdraw(inboxKey: Deno.KvKey, id: string, chunks: number): Promise<boolean> {
    // A failed attempt (a shared file's lock) is tried again: read as "claimed", a request that
    // never reached a worker could end as WORKER_LOST.
    for (let attempt = 1;; attempt++) {
      try {
        const cur = await this.#o.kv.get(inboxKey);
        if (cur.versionstamp === null) return false;
        const res = await this.#o.kv.atomic().check(cur).delete(inboxKey).commit();
        if (!res.ok) return false;
        await deleteChunks(this.#o.kv, this.#keys.requestBody(id), chunks).catch(() => {});
        return true;
      } catch (err) {
        if (attempt >= WITHDRAW_ATTEMPTS) {
          this.#o.log("warn", "relay: withdrawing a request failed", { error: String(err) });
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, WITHDRAW_RETRY_MS * attempt));
      }
    }
  }

  /** True while the holder of claimed request `id` keeps its busy key alive. */
  async #busy(id: string): Promise<boolean> {
    try {
      return (await this.#o.kv.get(this.#keys.busy(id))).versionstamp !== null;
    } catch {
      return false; // unreadable: the directory's view decides
    }
  }

  /** Tell the holder of claimed request `id` that nobody waits for its answer any more. */
  async #cancel(id: string, expireIn: number): Promise<void> {
    try {
      await this.#o.kv.set(this.#keys.cancel(id), true, { expireIn });
    } catch (err) {
      this.#o.log("warn", "relay: cancelling a request failed", { error: String(err) });
    }
  }

  /** The holder's answer as an upstream outcome; its keys are deleted once read. */
  async #answer(id: string, value: unknown): Promise<RelayOutcome> {
    const kv = this.#o.kv;
    const head = parseAnswerHead(value);
    const chunks = head?.kind === "answer" ? head.body_chunks : 0;
    try {
      if (!head) return { kind: "dropped", error: "relay: invalid answer head" };
      if (head.kind === "too_large") return { kind: "too_large", bytes: head.body_bytes };
      if (head.kind === "timeout") return { kind: "aborted" };
      if (head.kind !== "answer") return { kind: head.kind, error: `relay: ${head.error}` };
      let body: Uint8Array | undefined;
      try {
        body = await readChunks(kv, this.#keys.answerBody(id), chunks, head.body_bytes);
      } catch (err) {
        this.#o.log("warn", "relay: reading an answer failed", { error: String(err) });
        body = undefined;
      }
      // The holder wrote the chunks before the head: missing ones mean they expired or were
      // tampered with, or could not be read; the worker did answer, so this is not a request
      // to send again.
      if (!body) return { kind: "dropped", error: "relay: answer body incomplete or unreadable" };
      return {
        kind: "answer",
        status: head.status,
        statusText: "",
        headers: Object.fromEntries(head.headers),
        body,
      };
    } finally {
      // Off the answer's path: the client need not wait for the cleanup (the keys expire anyway).
      deleteChunks(kv, this.#keys.answerBody(id), chunks, this.#keys.answer(id)).catch(() => {});
    }
  }
}
