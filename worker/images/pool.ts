/**
 * The image pool: up to `threads` Web Workers that decode and prepare images, started on first
 * use, fed from one bounded FIFO queue. Input bytes are copied once into the job and transferred;
 * the output tensor comes back transferred, never copied. The main thread never decodes.
 */
import { ServiceError } from "@svc/shared/errors";
import type { ImageFormat } from "@svc/shared/schemas/item";
import type { DecodeLimits, PreparedImage } from "./decode.ts";
import type { ImageJob, ImageJobResult } from "./protocol.ts";
import type { ImageSpec } from "./spec.ts";

/** Pool settings. */
export interface ImagePoolOptions {
  /** Most threads (`SVC_IMAGE_WORKERS`). */
  threads: number;
  /** Most images waiting for a thread (`SVC_MAX_IMAGE_QUEUE`); beyond it QUEUE_FULL at once. */
  maxQueue: number;
  limits: DecodeLimits;
  /** Told when a thread fails outside an image's fault (the detail stays out of answers). */
  onFailure?: (message: string) => void;
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
  /** Threads started so far. */
  started: number;
  /** Threads working on an image. */
  busy: number;
  /** Images waiting for a thread. */
  queue_depth: number;
}

interface Pending {
  job: ImageJob;
  resolve(r: PoolResult): void;
  reject(e: Error): void;
}

class PoolThread {
  readonly worker: Worker;
  current: Pending | undefined;

  constructor(
    onDone: (t: PoolThread, msg: ImageJobResult) => void,
    onCrash: (t: PoolThread, e: ErrorEvent) => void,
  ) {
    this.worker = new Worker(new URL("./pool_thread.ts", import.meta.url).href, { type: "module" });
    this.worker.onmessage = (e: MessageEvent<ImageJobResult>) => onDone(this, e.data);
    this.worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      onCrash(this, e);
    };
  }
}

/** The worker's image preprocessing pool. */
export class ImagePool {
  readonly #opts: ImagePoolOptions;
  readonly #threads: PoolThread[] = [];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;

  constructor(opts: ImagePoolOptions) {
    this.#opts = opts;
  }

  /** Numbers for `/ws/status`. */
  status(): ImagePoolStatus {
    return {
      threads: this.#opts.threads,
      started: this.#threads.length,
      busy: this.#threads.filter((t) => t.current !== undefined).length,
      queue_depth: this.#queue.length,
    };
  }

  /**
   * Prepare one image. Rejects with ImageJobError (`rejected` for a bad image), with QUEUE_FULL
   * when too many images wait, or with the signal's reason once `signal` aborts while it waits.
   */
  prepare(
    bytes: Uint8Array,
    format: ImageFormat | undefined,
    spec: ImageSpec,
    signal?: AbortSignal,
  ): Promise<PoolResult> {
    if (this.#closed) return Promise.reject(new ServiceError("SHUTTING_DOWN", "shutting down"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#queue.length >= this.#opts.maxQueue) {
      return Promise.reject(
        new ServiceError(
          "QUEUE_FULL",
          `image queue is full (${this.#queue.length} images waiting, bound ` +
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
    return new Promise<PoolResult>((resolve, reject) => {
      const pending: Pending = { job, resolve, reject };
      this.#queue.push(pending);
      signal?.addEventListener("abort", () => {
        const at = this.#queue.indexOf(pending);
        if (at >= 0) {
          this.#queue.splice(at, 1);
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
    for (const p of this.#queue.splice(0)) p.reject(err);
    for (const t of this.#threads.splice(0)) {
      t.current?.reject(err);
      t.current = undefined;
      t.worker.terminate();
    }
    return Promise.resolve();
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let thread = this.#threads.find((t) => t.current === undefined);
      if (!thread && this.#threads.length < this.#opts.threads) {
        thread = new PoolThread((t, m) => this.#done(t, m), (t, e) => this.#crashed(t, e));
        this.#threads.push(thread);
      }
      if (!thread) return;
      const next = this.#queue.shift()!;
      thread.current = next;
      thread.worker.postMessage(next.job, [next.job.bytes.buffer]);
    }
  }

  #done(thread: PoolThread, msg: ImageJobResult): void {
    const p = thread.current;
    thread.current = undefined;
    if (p && p.job.id === msg.id) {
      if (msg.ok) p.resolve({ image: msg.image, ms: msg.ms });
      else {
        if (msg.kind === "failed") this.#opts.onFailure?.(msg.message);
        p.reject(
          new ImageJobError(msg.kind, msg.kind === "failed" ? "decoder failed" : msg.message),
        );
      }
    }
    this.#pump();
  }

  #crashed(thread: PoolThread, e: ErrorEvent): void {
    thread.worker.terminate();
    const at = this.#threads.indexOf(thread);
    if (at >= 0) this.#threads.splice(at, 1);
    this.#opts.onFailure?.(`image thread crashed: ${e.message}`);
    thread.current?.reject(new ImageJobError("failed", "image thread crashed"));
    thread.current = undefined;
    this.#pump();
  }
}
