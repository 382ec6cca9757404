/** What the bench asks its load-generator process to do, and what it answers. */

/** One closed-loop load run: send `requests` in order with `concurrency` in flight. */
export interface LoadJob {
  /** Full URL of the POST target. */
  url: string;
  headers: Record<string, string>;
  /** Texts of each request (one request body each), sent in this order. */
  requests: string[][];
  concurrency: number;
  /** No new request starts after this many milliseconds (the run stops by itself). */
  maxMs: number;
  /** Bound on one request. */
  timeoutMs: number;
}

/** Outcome of a load run. */
export interface LoadResult {
  /** Per request, in request order: latency in ms, or -1 when not sent or not answered 200. */
  latenciesMs: number[];
  /** Per request: the worker's X-Total-Time header (ms), -1 when absent. */
  serverMs: number[];
  /** Per request: the worker's X-Inference-Time header (ms), -1 when absent. */
  inferenceMs: number[];
  /** From the first send to the last answer. */
  elapsedMs: number;
  ok: number;
  failed: number;
  /** Answer count by HTTP status ("error" for a network failure or timeout). */
  statuses: Record<string, number>;
  /** The first failure, to explain a broken run. */
  firstError?: string;
}
