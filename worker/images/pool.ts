/**
 * The image pool: up to `threads` Web Workers that decode and prepare images, started on first
 * use. Input bytes are copied once into the job and transferred; the output tensor comes back
 * transferred, never copied. The main thread never decodes.
 *
 * Sharing: each request (the `owner` of its jobs) has its own queue, and free threads take the
 * requests' next images in turn (round robin), so a request with many images cannot make a later
 * request wait behind all of them. One request runs at most `perRequest` images at once (by
 * default one thread fewer than the pool), so another request always finds a thread.
 *
 * Time: a decode running longer than `decodeTimeoutMs` on its thread fails its request at once
 * (400 naming the setting). Its thread is set aside, not terminated: the decoder's native work runs
 * outside JavaScript, and terminating the Web Worker does not stop it (measured: the CPU work of
 * a terminated decode went on to its end), so the thread is kept until that work ends, then
 * closed. A fresh thread takes its place while the pool's threads and the ones set aside number
 * less than twice `threads`; beyond that the pool runs with fewer threads until set-aside work
 * ends, so decodes never hold more than twice the pool's threads of CPU.
 */
import { ServiceError } from "@svc/shared/errors";
import type { ImageFormat } from "@svc/shared/schemas/item";
import type { DecodeLimits, PreparedImage } from "./decode.ts";
import type { ImageJob, ImageThreadMessage } from "./protocol.ts";
import type { ImageSpec } from "./spec.ts";

/** Pool settings. */
export interface ImagePoolOptions {
  /** Most threads (`SVC_IMAGE_WORKERS`). */
  threads: number;
  /** Most images waiting for a thread (`SVC_MAX_IMAGE_QUEUE`); beyond it QUEUE_FULL at once. */
  maxQueue: number;
  limits: DecodeLimits;
  /**
   * Most images of one request prepared at once (`SVC_IMAGE_WORKERS_PER_REQUEST`); absent or 0:
   * one thread fewer than `threads` (at least one).
   */
  perRequest?: number;
  /** Longest time one image may take on its thread (`SVC_IMAGE_DECODE_TIMEOUT_MS`); absent: any. */
  decodeTimeoutMs?: number;
  /** Told when a thread fails outside an image's fault (the detail stays out of answers). */
  onFailure?: (message: string) => void;
  /** Told when a decode overran its time and its thread was set aside (with the count set aside). */
  onAbandoned?: (abandoned: number) => void;
}

/** Options of one {@link ImagePool.prepare} call. */
export interface PrepareOptions {
  /** Aborting it drops the job while it waits for a thread. */
  signal?: AbortSignal;
  /** The request the image belongs to (any object, compared by identity); absent: its own. */
  owner?: object;
}

/** A prepared image and how long its thread worked on it. */
export interface PoolResult {
  image: PreparedImage;
  ms: number;
}

/** Why an image could not be prepared: `rejected` is the client's image, `failed` is ours. */
export class ImageJobError extends Error {
  constructor(readonly kind: "rejected" | "failed", message: string) {
    super(message);
    this.name = "ImageJobError";
  }
}

/** Live numbers for the status stream. */
export interface ImagePoolStatus {
  /** Threads allowed. */
  threads: number;
  /** Threads started so far (set-aside threads not counted). */
  started: number;
  /** Threads working on an image. */
  busy: number;
  /** Images waiting for a thread. */
  queue_depth: number;
  /** Threads set aside after a decode overran its time, until its native work ends. */
  abandoned: number;
}

interface Pending {
  job: ImageJob;
  owner: OwnerQueue;
  resolve(r: PoolResult): void;
  reject(e: Error): void;
}

/** One request's images waiting, and how many of its images threads are working on. */
interface OwnerQueue {
  key: object;
  waiting: Pending[];
  running: number;
  /** When it last had an image started (the pool's count of starts); 0: never. */
  lastTurn: number;
}

class PoolThread {
  readonly worker: Worker;
  current: Pending | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    onMessage: (t: PoolThread, msg: ImageThreadMessage) => void,
    onCrash: (t: PoolThread, e: ErrorEvent) => void,
  ) {
    this.worker = new Worker(new URL("./pool_thread.ts", import.meta.url).href, { type: "module" });
    this.worker.onmessage = (e: MessageEvent<ImageThreadMessage>) => onMessage(this, e.data);
    this.worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      onCrash(this, e);
    };
  }

  stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The worker's image preprocessing pool. */
export class ImagePool {
  readonly #opts: ImagePoolOptions;
  readonly #perRequest: number;
  readonly #threads: PoolThread[] = [];
  readonly #abandoned = new Set<PoolThread>();
  /** Requests with images waiting or running, in arrival order. */
  readonly #owners = new Map<object, OwnerQueue>();
  #waiting = 0;
  #starts = 0;
  #nextId = 1;
  #closed = false;

  constructor(opts: ImagePoolOptions) {
    this.#opts = opts;
    this.#perRequest = opts.perRequest
      ? Math.min(opts.perRequest, opts.threads)
      : Math.max(1, opts.threads - 1);
  }

  /** Numbers for `/ws/status`. */
  status(): ImagePoolStatus {
    return {
      threads: this.#opts.threads,
      started: this.#threads.length,
      busy: this.#threads.filter((t) => t.current !== undefined).length,
      queue_depth: this.#waiting,
      abandoned: this.#abandoned.size,
    };
  }

  /**
   * Prepare one image. Rejects with ImageJobError (`rejected` for a bad image or one that took
   * too long), with QUEUE_FULL when too many images wait, or with the signal's reason once
   * `signal` aborts while it waits.
   */
  prepare(
    bytes: Uint8Array,
    format: ImageFormat | undefined,
    spec: ImageSpec,
    opts: PrepareOptions = {},
  ): Promise<PoolResult> {
    const { signal } = opts;
    if (this.#closed) return Promise.reject(new ServiceError("SHUTTING_DOWN", "shutting down"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#waiting >= this.#opts.maxQueue) {
      return Promise.reject(
        new ServiceError(
          "QUEUE_FULL",
          `image queue is full (${this.#waiting} images waiting, bound ` +
            `${this.#opts.maxQueue}, SVC_MAX_IMAGE_QUEUE)`,
        ),
      );
    }
    // A copy of just these bytes: cloning or transferring the view would move the whole request
    // body buffer behind it.
    const job: ImageJob = {
      id: this.#nextId++,
      bytes: bytes.slice(),
      format,
      spec,
      limits: this.#opts.limits,
    };
    const key = opts.owner ?? {};
    let owner = this.#owners.get(key);
    if (!owner) {
      owner = { key, waiting: [], running: 0, lastTurn: 0 };
      this.#owners.set(key, owner);
    }
    const queue = owner;
    return new Promise<PoolResult>((resolve, reject) => {
      const pending: Pending = { job, owner: queue, resolve, reject };
      queue.waiting.push(pending);
      this.#waiting++;
      signal?.addEventListener("abort", () => {
        const at = queue.waiting.indexOf(pending);
        if (at >= 0) {
          queue.waiting.splice(at, 1);
          this.#waiting--;
          this.#forgetIfIdle(queue);
          reject(signal.reason);
        }
      }, { once: true });
      this.#pump();
    });
  }

  /** Stop every thread; waiting and running jobs fail. */
  close(): Promise<void> {
    this.#closed = true;
    const err = new ServiceError("SHUTTING_DOWN", "shutting down");
    for (const owner of this.#owners.values()) {
      for (const p of owner.waiting.splice(0)) p.reject(err);
    }
    this.#owners.clear();
    this.#waiting = 0;
    for (const t of this.#threads.splice(0)) {
      t.stopTimer();
      t.current?.reject(err);
      t.current = undefined;
      t.worker.terminate();
    }
    for (const t of this.#abandoned) t.worker.terminate();
    this.#abandoned.clear();
    return Promise.resolve();
  }

  #pump(): void {
    while (this.#waiting > 0) {
      const owner = this.#nextOwner();
      if (!owner) return;
      const thread = this.#freeThread();
      if (!thread) return;
      const next = owner.waiting.shift()!;
      this.#waiting--;
      owner.running++;
      owner.lastTurn = ++this.#starts;
      thread.current = next;
      thread.worker.postMessage(next.job, [next.job.bytes.buffer]);
    }
  }

  /**
   * The request whose turn it is: of those with an image waiting and a thread left to them, the
   * one served longest ago (a request never served first, then the earliest to arrive).
   */
  #nextOwner(): OwnerQueue | undefined {
    let best: OwnerQueue | undefined;
    for (const owner of this.#owners.values()) {
      if (owner.waiting.length === 0 || owner.running >= this.#perRequest) continue;
      if (!best || owner.lastTurn < best.lastTurn) best = owner;
    }
    return best;
  }

  /** An idle thread, or a new one while the pool (and the threads set aside) leave room. */
  #freeThread(): PoolThread | undefined {
    const idle = this.#threads.find((t) => t.current === undefined);
    if (idle) return idle;
    const { threads } = this.#opts;
    if (this.#threads.length >= threads) return undefined;
    if (this.#threads.length + this.#abandoned.size >= 2 * threads) return undefined;
    const thread = new PoolThread((t, m) => this.#message(t, m), (t, e) => this.#crashed(t, e));
    this.#threads.push(thread);
    return thread;
  }

  #forgetIfIdle(owner: OwnerQueue): void {
    if (owner.waiting.length === 0 && owner.running === 0) this.#owners.delete(owner.key);
  }

  /** The job `p` left its thread (finished, failed or set aside). */
  #finish(p: Pending): void {
    p.owner.running--;
    this.#forgetIfIdle(p.owner);
  }

  #message(thread: PoolThread, msg: ImageThreadMessage): void {
    if (this.#abandoned.has(thread)) {
      // Its native work has ended: the answer went out long ago.
      if (!("started" in msg)) this.#retire(thread);
      return;
    }
    const p = thread.current;
    if (!p || p.job.id !== msg.id) return;
    if ("started" in msg) {
      const ms = this.#opts.decodeTimeoutMs;
      if (ms !== undefined) thread.timer = setTimeout(() => this.#overran(thread, ms), ms);
      return;
    }
    thread.stopTimer();
    thread.current = undefined;
    this.#finish(p);
    if (msg.ok) p.resolve({ image: msg.image, ms: msg.ms });
    else {
      if (msg.kind === "failed") this.#opts.onFailure?.(msg.message);
      p.reject(new ImageJobError(msg.kind, msg.kind === "failed" ? "decoder failed" : msg.message));
    }
    this.#pump();
  }

  /** A decode ran past the time bound: fail it now and set its thread aside. */
  #overran(thread: PoolThread, ms: number): void {
    const p = thread.current;
    thread.timer = undefined;
    if (!p) return;
    const at = this.#threads.indexOf(thread);
    if (at >= 0) this.#threads.splice(at, 1);
    this.#abandoned.add(thread);
    this.#finish(p);
    p.reject(
      new ImageJobError(
        "rejected",
        `took more than ${ms} ms to decode; the limit is ${ms} ms (SVC_IMAGE_DECODE_TIMEOUT_MS)`,
      ),
    );
    this.#opts.onAbandoned?.(this.#abandoned.size);
    this.#pump();
  }

  /** Close a set-aside thread once its work has ended; a replacement may start. */
  #retire(thread: PoolThread): void {
    thread.worker.terminate();
    this.#abandoned.delete(thread);
    this.#pump();
  }

  #crashed(thread: PoolThread, e: ErrorEvent): void {
    if (this.#abandoned.has(thread)) return this.#retire(thread);
    thread.stopTimer();
    thread.worker.terminate();
    const at = this.#threads.indexOf(thread);
    if (at >= 0) this.#threads.splice(at, 1);
    this.#opts.onFailure?.(`image thread crashed: ${e.message}`);
    const p = thread.current;
    thread.current = undefined;
    if (p) {
      this.#finish(p);
      p.reject(new ImageJobError("failed", "image thread crashed"));
    }
    this.#pump();
  }
}
