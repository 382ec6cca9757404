/**
 * Whether a request a dying worker dropped is sent once more, to another worker. A worker that
 * dies takes every request it held; most of them are bystanders, and losing them loses plain
 * requests whenever a worker is killed. But one of them may be what killed it, and replaying that
 * one takes the next worker down too. So a dropped request is replayed only when it is not the
 * likely cause:
 *
 * - it is small (`SVC_REPLAY_MAX_BODY_BYTES`): the requests that have killed workers are heavy
 *   ones (the 100 KB relations request, body bombs), and a cheap request's worth of work cannot;
 * - its body has not been at a worker's death before: its digest is remembered at every drop, so a
 *   small request that kills the worker it is replayed on is never replayed again;
 * - the retry budget allows it: replays are at most `SVC_RETRY_BUDGET_PERCENT` of the requests
 *   forwarded over the last 10 s, plus `SVC_RETRY_BUDGET_MIN`, so a fleet dying of a flood is not
 *   fed the flood twice (the budget of Envoy and Finagle).
 */
import { createHash } from "node:crypto";
import type { BodyChunks } from "@svc/shared/http/read_body";

/** The replay bounds (router settings). */
export interface ReplaySettings {
  /** Largest body replayed; `0`: a dropped request is never replayed. */
  maxBodyBytes: number;
  /** Replays allowed per 100 requests forwarded in the window. */
  budgetPercent: number;
  /** Replays allowed per window whatever the traffic. */
  budgetMin: number;
  /** Bodies whose deaths are remembered (the least recently dropped forgotten first). */
  rememberBodies: number;
}

/** The window of the retry budget. */
const WINDOW_MS = 10_000;

/** Decides replays of dropped requests for one router process (or isolate). */
export class ReplayPolicy {
  readonly #s: ReplaySettings;
  readonly #now: () => number;
  /**
   * Deaths by body digest, in order of the last drop (oldest first), with the connection of the
   * latest: identical requests dropped by one death (a worker's connection carries many at once)
   * are one death of that body, not several.
   */
  readonly #deaths = new Map<string, { count: number; conn: string | undefined }>();
  #windowStart = 0;
  #sent = 0;
  #replayed = 0;
  /** The previous window's counts: the budget looks at the last full window too. */
  #prevSent = 0;

  constructor(settings: ReplaySettings, now: () => number = Date.now) {
    this.#s = settings;
    this.#now = now;
  }

  /** Count one request forwarded (the base of the retry budget). */
  sent(): void {
    this.#roll();
    this.#sent++;
  }

  /**
   * A worker dropped the request with `body` after receiving it: remember its body at a death
   * (of the worker connection `conn`), and say whether it may go once more to another worker.
   */
  dropped(body: BodyChunks | null, conn?: string): boolean {
    this.#roll();
    const size = body?.length ?? 0;
    const digest = digestOf(body);
    const before = this.#deaths.get(digest);
    const sameDeath = before !== undefined && conn !== undefined && before.conn === conn;
    const deaths = sameDeath ? before.count : (before?.count ?? 0) + 1;
    this.#deaths.delete(digest);
    this.#deaths.set(digest, { count: deaths, conn });
    while (this.#deaths.size > this.#s.rememberBodies) {
      this.#deaths.delete(this.#deaths.keys().next().value!);
    }
    if (deaths > 1 || size > this.#s.maxBodyBytes) return false;
    const allowed = this.#s.budgetMin +
      Math.floor((this.#sent + this.#prevSent) * this.#s.budgetPercent / 100);
    if (this.#replayed >= allowed) return false;
    this.#replayed++;
    return true;
  }

  #roll(): void {
    const now = this.#now();
    if (now - this.#windowStart < WINDOW_MS) return;
    this.#prevSent = now - this.#windowStart < 2 * WINDOW_MS ? this.#sent : 0;
    this.#windowStart = now;
    this.#sent = 0;
    this.#replayed = 0;
  }
}

/** SHA-256 of a body, chunk by chunk (no joined copy); computed only when a worker dropped it. */
function digestOf(body: BodyChunks | null): string {
  const h = createHash("sha256");
  for (const chunk of body?.chunks ?? []) h.update(chunk);
  return h.digest("hex");
}
