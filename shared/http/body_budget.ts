/**
 * The in-flight body budget: how many request-body bytes one process holds while reading bodies,
 * all requests together. A declared Content-Length is a claim, not a reservation: bytes count as
 * they are buffered, so a thousand clients that announce 32 MiB and send ten bytes cost ten bytes
 * each, while many large bodies arriving at once are refused (503 + Retry-After) before memory runs
 * out.
 */
import { ServiceError } from "../errors.ts";

/** Process-wide count of body bytes being read, with a capacity. */
export class BodyBudget {
  readonly capacity: number;
  #used = 0;

  /** A budget of `capacity` bytes (the `SVC_MAX_INFLIGHT_BODY_BYTES` setting). */
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Bytes currently reserved by bodies being read. */
  get used(): number {
    return this.#used;
  }

  /** Reserve `bytes`; throws 503 QUEUE_FULL (with Retry-After) when they do not fit. */
  reserve(bytes: number): void {
    if (this.#used + bytes > this.capacity) {
      throw new ServiceError(
        "QUEUE_FULL",
        `too many request bodies are being read at once (the limit is ${this.capacity} bytes ` +
          `in all, SVC_MAX_INFLIGHT_BODY_BYTES); retry shortly`,
        { retryAfterS: 1 },
      );
    }
    this.#used += bytes;
  }

  /** Give back `bytes` reserved earlier. */
  release(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}
