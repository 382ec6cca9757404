/**
 * The in-flight body budget: how many request-body bytes one process holds, all requests together.
 * A declared Content-Length is a claim, not a reservation: bytes count as they are buffered, so a
 * thousand clients that announce 32 MiB and send ten bytes cost ten bytes each, while many large
 * bodies arriving at once are refused (503 + Retry-After) before memory runs out.
 *
 * How long bytes count depends on the reader: a worker gives them back once the body is read (it
 * decodes it at once), while the router keeps each body's {@link BodyHold} until its answer is
 * complete: a body waiting for capacity, being forwarded, or waiting for the worker's answer is
 * memory just as much as one still arriving.
 *
 * First come, first served: when bytes do not fit, the body that has been reading longest is not
 * the one refused; the bodies that started reading after it are, latest first, until its bytes
 * fit. Without that, many large bodies arriving together could each fill a share of the budget
 * and then all be refused, none of them ever complete.
 */
import { ClientGoneError, ServiceError } from "../errors.ts";

/** Process-wide count of body bytes held, with a capacity. */
export class BodyBudget {
  readonly capacity: number;
  #used = 0;
  /** Holds whose body is being read, in the order their reads began. */
  readonly #reading = new Set<BodyHold>();
  /** How holds change this budget: one ledger for all of them (nothing in it is per hold). */
  readonly #ledger: HoldLedger = {
    add: (bytes) => this.#used += bytes,
    sub: (bytes) => this.#used = Math.max(0, this.#used - bytes),
    reading: (hold, on) => on ? this.#reading.add(hold) : this.#reading.delete(hold),
    makeRoom: (hold, bytes) => this.#makeRoom(hold, bytes),
  };

  /** A budget of `capacity` bytes (the `SVC_MAX_INFLIGHT_BODY_BYTES` setting). */
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Bytes currently reserved. */
  get used(): number {
    return this.#used;
  }

  /** True when `bytes` more would fit now. */
  fits(bytes: number): boolean {
    return this.#used + bytes <= this.capacity;
  }

  /** A hold for one request's body: its bytes stay reserved until {@link BodyHold.release}. */
  hold(): BodyHold {
    return new BodyHold(this, this.#ledger);
  }

  /** The 503 for a body that does not fit. */
  full(): ServiceError {
    return new ServiceError(
      "QUEUE_FULL",
      `too many request bodies are in flight (the limit is ${this.capacity} bytes in all, ` +
        `SVC_MAX_INFLIGHT_BODY_BYTES); retry shortly`,
      { retryAfterS: 1 },
    );
  }

  /**
   * Make `bytes` fit for `hold` by refusing the bodies that began reading after it, latest
   * first, when it is the one reading longest; false when they still do not fit.
   */
  #makeRoom(hold: BodyHold, bytes: number): boolean {
    if (this.#reading.values().next().value !== hold) return false;
    const later = [...this.#reading].slice(1).reverse();
    for (const other of later) {
      if (this.fits(bytes)) break;
      other.evict(this.full());
    }
    return this.fits(bytes);
  }
}

/** How a hold changes its budget (kept out of the budget's public surface). */
interface HoldLedger {
  add(bytes: number): void;
  sub(bytes: number): void;
  reading(hold: BodyHold, on: boolean): void;
  makeRoom(hold: BodyHold, bytes: number): boolean;
}

/**
 * One request's bytes in the budget, kept past the end of the read: the owner releases them once
 * the body is no longer needed (the router: when the answer has been sent or abandoned; the
 * worker: when the body is read).
 */
export class BodyHold {
  readonly budget: BodyBudget;
  readonly #ledger: HoldLedger;
  #held = 0;
  #released = false;
  #failure: Error | undefined;
  #stopRead: (() => void) | undefined;

  constructor(budget: BodyBudget, ledger: HoldLedger) {
    this.budget = budget;
    this.#ledger = ledger;
  }

  /** Bytes this request holds. */
  get held(): number {
    return this.#held;
  }

  /** Why the read must stop (refused to make room for an earlier body), if it must. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** The body is being read; `stop` wakes the read up if the hold is refused meanwhile. */
  startReading(stop: () => void): void {
    if (this.#released) return;
    this.#stopRead = stop;
    this.#ledger.reading(this, true);
  }

  /** The read is over (whole or failed): the bytes stay held, but can no longer be refused. */
  stopReading(): void {
    this.#stopRead = undefined;
    this.#ledger.reading(this, false);
  }

  /**
   * Reserve `bytes` more: 503 QUEUE_FULL when they do not fit (unless this body has been reading
   * longest and later ones can make room). After the release the request is over, and a read
   * still going (a client gone mid-body) stops here.
   */
  reserve(bytes: number): void {
    if (this.#failure) throw this.#failure;
    if (this.#released) throw new ClientGoneError("the request was already answered");
    if (!this.budget.fits(bytes) && !this.#ledger.makeRoom(this, bytes)) throw this.budget.full();
    this.#ledger.add(bytes);
    this.#held += bytes;
  }

  /** Refuse this body to make room for an earlier one: its bytes go back and its read stops. */
  evict(err: Error): void {
    this.#failure ??= err;
    const stop = this.#stopRead;
    this.release();
    stop?.();
  }

  /** Give everything back (idempotent); later reservations are refused. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.stopReading();
    this.#ledger.sub(this.#held);
    this.#held = 0;
  }
}
