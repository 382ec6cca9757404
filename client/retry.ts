/**
 * The client's retry rules as pure functions: what an answer means (done, wait, fail) and how
 * long each wait is. The transport applies them; tests check them without a clock.
 */

/** How the client waits and retries. Every wait also stops at the overall budget. */
export interface RetryPolicy {
  /** Overall bound on one call, waits included (default 5 minutes: a large model's first load). */
  budgetMs: number;
  /**
   * How long a call waits for a pool with no worker (answers `202`, or `503 NO_CAPACITY` from
   * `/v1/embeddings`) before it fails with `NO_CAPACITY` (default 60 s: a worker that is already
   * starting registers well within it; a pool nobody starts fails within a minute, not five).
   * Raise it for pools that scale from zero (a GPU machine's cold start takes minutes).
   */
  provisionWaitMs: number;
  /** First poll delay after a 202 without `Retry-After` (default 1 s). */
  provisionInitialMs: number;
  /** Growth of the 202 poll delay per poll (default 1.5). */
  provisionFactor: number;
  /** Longest delay between two 202 polls (default 30 s). */
  provisionMaxDelayMs: number;
  /** Longest wait a 503's `Retry-After` may impose (default 60 s; longer values are cut). */
  maxRetryAfterMs: number;
  /** First connection-retry delay before jitter (default 250 ms). */
  connectBaseMs: number;
  /** Cap of the connection-retry delay (default 10 s). */
  connectMaxDelayMs: number;
  /** Connection attempts before CONNECTION_FAILED (default 6). */
  connectAttempts: number;
}

/** Defaults of {@link RetryPolicy}. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = {
  budgetMs: 300_000,
  provisionWaitMs: 60_000,
  provisionInitialMs: 1_000,
  provisionFactor: 1.5,
  provisionMaxDelayMs: 30_000,
  maxRetryAfterMs: 60_000,
  connectBaseMs: 250,
  connectMaxDelayMs: 10_000,
  connectAttempts: 6,
};

/** What the client does with one answer. */
export type Verdict =
  | { kind: "done" }
  /** 202: the pool is provisioning; poll again. */
  | { kind: "provisioning" }
  /** 503/429 with Retry-After: wait as told, then retry. */
  | { kind: "retry_after"; seconds: number }
  /** Anything else that is not a success: raise at once. */
  | { kind: "fail" };

/** `Retry-After` in seconds (delta-seconds form; an HTTP date counts from `now`). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/**
 * The verdict on an answer's status. 503 and 429 are retried only when they say when
 * (MODEL_LOADING, LORA_LOADING, QUEUE_FULL, a worker shutting down); 502 MODEL_LOAD_FAILED
 * carries no Retry-After on purpose, and every other error fails at once.
 */
export function verdictOf(status: number, retryAfterS: number | undefined): Verdict {
  if (status === 202) return { kind: "provisioning" };
  if (status >= 200 && status < 300) return { kind: "done" };
  if ((status === 503 || status === 429) && retryAfterS !== undefined) {
    return { kind: "retry_after", seconds: retryAfterS };
  }
  return { kind: "fail" };
}

/**
 * Delay before poll `n` (0-based) of a provisioning pool: the server's `Retry-After` is the floor,
 * the client's own backoff grows from `provisionInitialMs` by `provisionFactor`, capped.
 */
export function provisionDelayMs(
  p: RetryPolicy,
  n: number,
  retryAfterS: number | undefined,
): number {
  const backoff = p.provisionInitialMs * p.provisionFactor ** n;
  const floor = retryAfterS === undefined ? 0 : retryAfterS * 1000;
  return Math.min(p.provisionMaxDelayMs, Math.max(floor, backoff));
}

/** Wait imposed by a 503's `Retry-After`, bounded by `maxRetryAfterMs`. */
export function retryAfterDelayMs(p: RetryPolicy, seconds: number): number {
  return Math.min(p.maxRetryAfterMs, seconds * 1000);
}

/**
 * Delay before connection retry `n` (0-based): "full jitter", a uniform draw below the capped
 * exponential `connectBaseMs · 2ⁿ`, so clients that lost the same server do not return together.
 */
export function connectDelayMs(p: RetryPolicy, n: number, random: () => number): number {
  const ceiling = Math.min(p.connectMaxDelayMs, p.connectBaseMs * 2 ** n);
  return Math.floor(random() * ceiling);
}

/** True when `server`'s major.minor differs from `client`'s (the skew warning rule). */
export function versionSkew(client: string, server: string): boolean {
  const mm = (v: string) => v.trim().split(".").slice(0, 2).join(".");
  return mm(client) !== mm(server);
}
