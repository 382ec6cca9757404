/**
 * Per-model batch former. Items are queued, and a request's items may span batches. A batch
 * closes at `maxBatchRequests` requests (counting each request with items in it), at
 * `maxBatchItems` items, at the token budget, or `maxWaitMs` after its first item; an idle thread
 * gets work at once when `maxWaitMs` is 0, and while a batch runs the next one fills (continuous
 * batching). Items only share a batch with items of equal parameters. Requests are batched in
 * arrival order; a request with more items than one batch holds is drawn shortest first
 * (batch_select.ts), so that each of its batches holds similar lengths and its runs pad little.
 */
import { ClientGoneError, invalidInput, ServiceError } from "@svc/shared/errors";
import { hidePaths } from "@svc/shared/redact";
import type { ItemOutput, WorkItem, WorkParams } from "../families/types.ts";
import type { BatchTiming } from "../inference/protocol.ts";
import { TokenEstimator } from "./token_estimate.ts";
import { selectBatch } from "./batch_select.ts";

/** How many batches' worth of queued items (by the item cap) a batch is chosen from. */
const SELECT_WINDOW = 4;

/**
 * Runs one batch on the model's inference thread. `abandoned` (one flag per item, over a
 * SharedArrayBuffer so the thread sees writes made while it runs) is set to 1 for the items of
 * requests whose client went away: the runner skips those it has not run yet, and leaves their
 * outputs undefined. `requestOf` numbers each item's request within the batch: an item refused
 * before the batch runs (an error from tokenising) takes its request's other items with it.
 */
export type BatchRunner = (
  items: WorkItem[],
  params: WorkParams,
  abandoned?: Int32Array,
  requestOf?: number[],
) => Promise<{ outputs: ItemOutput[]; timing: BatchTiming; paddedTokens: number }>;

/** Statistics of one finished batch, for metrics. */
export interface BatchStats {
  size: number;
  tokens: number;
  paddedTokens: number;
  timing: BatchTiming;
}

/** Batcher settings. */
export interface BatcherOptions {
  /** Most requests with items in one batch (SVC_MAX_BATCH_REQUESTS). */
  maxBatchRequests: number;
  /** Most items in one batch (SVC_MAX_BATCH_ITEMS). */
  maxBatchItems: number;
  /** Upper bound of estimated tokens in one batch (the thread sub-batches by real lengths). */
  batchTokenBudget: number;
  /** The model's longest item in tokens (an item that reaches it was truncated). */
  maxItemTokens?: number;
  maxWaitMs: number;
  /** Items allowed to wait; beyond it new requests get QUEUE_FULL at once. */
  maxQueueItems: number;
  run: BatchRunner;
  onBatch?: (stats: BatchStats) => void;
}

/** What a finished request gets back: one output per item plus its share of the timing. */
export interface RequestResult {
  outputs: ItemOutput[];
  queueMs: number;
  timing: BatchTiming;
  tokens: number;
}

class PendingRequest {
  readonly outputs: ItemOutput[];
  remaining: number;
  settled = false;
  lastDispatch = 0;
  readonly timing: BatchTiming = { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 };

  constructor(
    readonly key: string,
    readonly params: WorkParams,
    n: number,
    readonly enqueuedAt: number,
    readonly resolve: (r: RequestResult) => void,
    readonly reject: (e: Error) => void,
    /** Called once when the request is answered either way (its queue weight is given back). */
    readonly onSettled: () => void = () => {},
  ) {
    this.outputs = new Array(n);
    this.remaining = n;
  }

  fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.onSettled();
    this.reject(err);
  }

  finish(r: RequestResult): void {
    if (this.settled) return;
    this.settled = true;
    this.onSettled();
    this.resolve(r);
  }
}

interface QueuedItem {
  req: PendingRequest;
  index: number;
  item: WorkItem;
}

/**
 * Refuse (400) a request of more work items than a model's queue can ever hold: waiting would
 * never help, so it is not QUEUE_FULL.
 */
export function assertFitsQueue(workItems: number, maxQueueItems: number): void {
  if (workItems > maxQueueItems) {
    throw invalidInput(
      `this request needs ${workItems} work items but a model's queue holds at most ` +
        `${maxQueueItems} (SVC_MAX_QUEUE_ITEMS): send fewer items per request`,
    );
  }
}

/**
 * Stable key of the parameters that must match for items to share a batch: every field of the
 * params that is set, by name. A batch runs with one request's params, so each field must be in
 * the key; derived rather than listed, a field added to WorkParams cannot mix batches.
 */
export function groupKey(params: WorkParams): string {
  const fields = (Object.keys(params) as (keyof WorkParams)[])
    .filter((k) => params[k] !== undefined)
    .sort();
  return JSON.stringify(fields.map((k) => [k, params[k]]));
}

/** The per-model queue and batch former. */
export class Batcher {
  readonly #opts: BatcherOptions;
  /** Token estimates of queued items, learning from the thread's exact counts. */
  readonly #estimator: TokenEstimator;
  /** FIFO per parameter group; Map iteration order keeps groups in arrival order. */
  readonly #groups = new Map<string, QueuedItem[]>();
  #queued = 0;
  /** Queue weight of unanswered requests beyond their items (see {@link submit}). */
  #extraWeight = 0;
  #running = false;
  #runningItems = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #idleWaiters: (() => void)[] = [];
  /** Set by failAll: what every later request, and the batch still running, fail with. */
  #closedWith: Error | undefined;
  /** The batch on the thread: its items (in order) and their abandoned flags. */
  #inFlight: { batch: QueuedItem[]; abandoned: Int32Array } | undefined;

  constructor(opts: BatcherOptions) {
    this.#opts = opts;
    this.#estimator = new TokenEstimator(opts.maxItemTokens);
  }

  /** Tokens per character the batch budget currently assumes (learned per model). */
  get tokensPerChar(): number {
    return this.#estimator.tokensPerChar;
  }

  /** Items waiting (not yet dispatched). */
  get queueDepth(): number {
    return this.#queued;
  }

  /** Items waiting plus items in the batch on the inference thread. */
  get pendingItems(): number {
    return this.#queued + this.#runningItems;
  }

  /** True while a batch is on the inference thread. */
  get busy(): boolean {
    return this.#running;
  }

  /**
   * Queue a request's items; rejects at once with QUEUE_FULL when the bound would be passed.
   * `weight` is what the request counts against the queue bound when it is more than its items
   * (an extract request's cost in rows of the model's length): held until it is answered.
   */
  submit(
    items: WorkItem[],
    params: WorkParams,
    signal?: AbortSignal,
    weight: number = items.length,
  ): Promise<RequestResult> {
    if (items.length === 0) return Promise.resolve(emptyResult());
    const extra = Math.max(0, Math.ceil(weight) - items.length);
    try {
      assertFitsQueue(items.length + extra, this.#opts.maxQueueItems);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.#queued + this.#extraWeight + items.length + extra > this.#opts.maxQueueItems) {
      return Promise.reject(
        new ServiceError(
          "QUEUE_FULL",
          `queue is full (${this.#queued + this.#extraWeight} items waiting, bound ` +
            `${this.#opts.maxQueueItems})`,
        ),
      );
    }
    if (signal?.aborted) return Promise.reject(new ClientGoneError());
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    const key = groupKey(params);
    return new Promise<RequestResult>((resolve, reject) => {
      const req = new PendingRequest(
        key,
        params,
        items.length,
        performance.now(),
        resolve,
        reject,
        () => this.#extraWeight -= extra,
      );
      this.#extraWeight += extra;
      let group = this.#groups.get(key);
      if (!group) this.#groups.set(key, group = []);
      items.forEach((item, index) => group.push({ req, index, item }));
      this.#queued += items.length;
      signal?.addEventListener("abort", () => this.#cancel(req), { once: true });
      this.#schedule();
    });
  }

  /** Resolves when nothing is queued or running (used by graceful shutdown). */
  whenIdle(): Promise<void> {
    if (!this.#running && this.#queued === 0) return Promise.resolve();
    return new Promise((r) => this.#idleWaiters.push(r));
  }

  /**
   * Fail everything queued, and later the batch on the thread, with `err` (model unloading or
   * process stopping): a request whose model is torn down under it gets that answer (503 with
   * Retry-After), not the inference error the teardown causes.
   */
  failAll(err: Error): void {
    this.#closedWith = err;
    for (const group of this.#groups.values()) for (const q of group) q.req.fail(err);
    this.#groups.clear();
    this.#queued = 0;
    this.#notifyIdle();
  }

  /**
   * Drop a request's waiting items so they never reach the model, and flag its items in the
   * running batch: the thread skips the runs it has not started yet.
   */
  #abandon(req: PendingRequest): void {
    const group = this.#groups.get(req.key);
    if (group) {
      const kept = group.filter((q) => q.req !== req);
      this.#queued -= group.length - kept.length;
      if (kept.length === 0) this.#groups.delete(req.key);
      else this.#groups.set(req.key, kept);
    }
    const running = this.#inFlight;
    if (running) {
      running.batch.forEach((q, i) => {
        if (q.req === req) Atomics.store(running.abandoned, i, 1);
      });
    }
  }

  #cancel(req: PendingRequest): void {
    if (req.settled) return;
    this.#abandon(req);
    req.fail(new ClientGoneError());
    this.#notifyIdle();
  }

  #schedule(): void {
    if (this.#running || this.#queued === 0) return;
    if (this.#opts.maxWaitMs <= 0 || this.#headGroupFull()) {
      this.#dispatch();
      return;
    }
    if (this.#timer !== undefined) return;
    const head = this.#groups.values().next().value as QueuedItem[];
    const waited = performance.now() - head[0].req.enqueuedAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#dispatch();
    }, Math.max(0, this.#opts.maxWaitMs - waited));
  }

  /** True when the oldest group already fills a batch, by items or by requests. */
  #headGroupFull(): boolean {
    const head = this.#groups.values().next().value as QueuedItem[] | undefined;
    if (!head) return false;
    if (head.length >= this.#opts.maxBatchItems) return true;
    let requests = 0;
    for (let i = 0; i < head.length; i++) {
      if (i > 0 && head[i].req === head[i - 1].req) continue;
      if (++requests >= this.#opts.maxBatchRequests) return true;
    }
    return false;
  }

  /** Take the oldest group's items up to the caps and send them to the thread. */
  #dispatch(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#running) return;
    const next = this.#groups.entries().next().value as [string, QueuedItem[]] | undefined;
    if (!next) return;
    const [key, group] = next;
    const batch = this.#takeBatch(group);
    // Re-append a partly drained group so other groups get their turn (no starvation).
    this.#groups.delete(key);
    if (group.length > 0) this.#groups.set(key, group);
    this.#queued -= batch.length;
    this.#running = true;
    this.#runningItems = batch.length;
    const now = performance.now();
    for (const q of batch) q.req.lastDispatch = now;
    const abandoned = new Int32Array(new SharedArrayBuffer(batch.length * 4));
    this.#inFlight = { batch, abandoned };
    const ordinal = new Map<PendingRequest, number>();
    const requestOf = batch.map((q) => {
      let n = ordinal.get(q.req);
      if (n === undefined) ordinal.set(q.req, n = ordinal.size);
      return n;
    });
    this.#opts.run(batch.map((q) => q.item), batch[0].req.params, abandoned, requestOf).then(
      (r) => this.#complete(batch, r),
      (err) => this.#completeWithError(batch, err),
    );
  }

  /**
   * Remove the next batch from `group` (batch_select.ts: the front of the queue, or the shortest
   * items of an oldest request that overflows a batch), looking at most SELECT_WINDOW batches'
   * worth of items deep.
   */
  #takeBatch(group: QueuedItem[]): QueuedItem[] {
    const { maxBatchItems, maxBatchRequests, batchTokenBudget } = this.#opts;
    const window = group.slice(0, maxBatchItems * SELECT_WINDOW);
    const picked = selectBatch(
      // Estimated now, not when queued: items that waited get the rate learned meanwhile.
      window.map((q) => ({ tokens: this.#estimator.estimate(q.item), request: q.req })),
      { maxItems: maxBatchItems, maxRequests: maxBatchRequests, tokenBudget: batchTokenBudget },
    );
    if (picked.length === picked[picked.length - 1] + 1) return group.splice(0, picked.length);
    const taken = new Set(picked);
    const batch = picked.map((i) => window[i]);
    let kept = 0;
    for (let i = 0; i < group.length; i++) if (!taken.has(i)) group[kept++] = group[i];
    group.length = kept;
    return batch;
  }

  #complete(
    batch: QueuedItem[],
    r: { outputs: ItemOutput[]; timing: BatchTiming; paddedTokens: number },
  ): void {
    this.#running = false;
    this.#runningItems = 0;
    this.#inFlight = undefined;
    // The exact counts first (a cheap pass), so that the next batch is cut with them; then start
    // it before answering this one: the thread should never wait on us.
    batch.forEach((q, i) => {
      const out = r.outputs[i];
      if (out && !out.error) this.#estimator.observe(q.item, out.tokens);
    });
    this.#schedule();
    let tokens = 0;
    const seen = new Set<PendingRequest>();
    batch.forEach((q, i) => {
      const out = r.outputs[i];
      tokens += out?.tokens ?? 0;
      const req = q.req;
      if (req.settled) return;
      if (out?.error) {
        req.fail(new ServiceError(out.error.code, out.error.message));
        // The request is answered: its other items would run for nobody.
        this.#abandon(req);
        return;
      }
      req.outputs[q.index] = out;
      req.remaining--;
      if (!seen.has(req)) {
        seen.add(req);
        req.timing.tokenizationMs += r.timing.tokenizationMs;
        req.timing.inferenceMs += r.timing.inferenceMs;
        req.timing.postprocessingMs += r.timing.postprocessingMs;
      }
    });
    for (const req of seen) {
      if (req.remaining === 0 && !req.settled) {
        req.finish({
          outputs: req.outputs,
          queueMs: req.lastDispatch - req.enqueuedAt,
          timing: req.timing,
          tokens: req.outputs.reduce((s, o) => s + (o?.tokens ?? 0), 0),
        });
      }
    }
    this.#opts.onBatch?.({
      size: batch.length,
      tokens,
      paddedTokens: r.paddedTokens,
      timing: r.timing,
    });
    this.#notifyIdle();
  }

  #completeWithError(batch: QueuedItem[], err: unknown): void {
    this.#running = false;
    this.#runningItems = 0;
    this.#inFlight = undefined;
    this.#schedule();
    const message = hidePaths(err instanceof Error ? err.message : String(err));
    const e = this.#closedWith ??
      (err instanceof ServiceError
        ? err
        : new ServiceError("INFERENCE_ERROR", `inference failed: ${message}`));
    for (const q of batch) {
      if (q.req.settled) continue;
      q.req.fail(e);
      this.#abandon(q.req);
    }
    this.#notifyIdle();
  }

  #notifyIdle(): void {
    if (this.#running || this.#queued > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}

function emptyResult(): RequestResult {
  return {
    outputs: [],
    queueMs: 0,
    timing: { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 },
    tokens: 0,
  };
}
