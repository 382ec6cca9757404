/**
 * Coalescing: identical requests in flight at the same time (same key) reach a worker once. The
 * first leads: it goes to the worker, and lands its flight with the answer it got, whole (a 200
 * of at most the entry bound), or with nothing. Those that arrive meanwhile follow: each waits
 * for the landing, bounded by its own deadline and by its own client, and then answers with a
 * copy of the leader's answer. A failure is never shared: a follower that sees the flight land
 * with nothing, or end without an answer, goes to a worker itself (see cached.ts).
 */
import type { StoredAnswer } from "./store.ts";

/** What a follower gets from its flight: the leader's answer, or nothing (go yourself). */
export type Landing = Omit<StoredAnswer, "revision"> & { revision: string | undefined };

interface Flight {
  landed: Promise<Landing | undefined>;
  land(answer: Landing | undefined): void;
  followers: number;
}

/** A request leading its flight: it must call {@link Lead.land} exactly once. */
export interface Lead {
  land(answer: Landing | undefined): void;
}

/** Flights in the air, by key. */
export class Flights {
  readonly #flights = new Map<string, Flight>();

  /** Flights in the air. */
  get size(): number {
    return this.#flights.size;
  }

  /** Requests that joined the flights in the air (shown by tests). */
  get followers(): number {
    let n = 0;
    for (const f of this.#flights.values()) n += f.followers;
    return n;
  }

  /** The landing of the flight in the air for `key`, if there is one. */
  follow(key: string): Promise<Landing | undefined> | undefined {
    const flight = this.#flights.get(key);
    if (!flight) return undefined;
    flight.followers++;
    return flight.landed;
  }

  /** Lead a new flight for `key`; undefined when one is already in the air (follow it instead). */
  lead(key: string): Lead | undefined {
    if (this.#flights.has(key)) return undefined;
    let resolve!: (a: Landing | undefined) => void;
    const landed = new Promise<Landing | undefined>((r) => resolve = r);
    let done = false;
    const flight: Flight = {
      followers: 0,
      landed,
      land: (answer) => {
        if (done) return;
        done = true;
        if (this.#flights.get(key) === flight) this.#flights.delete(key);
        resolve(answer);
      },
    };
    this.#flights.set(key, flight);
    return { land: flight.land };
  }
}

/** How a follower's wait ended. */
export type WaitOutcome =
  | { kind: "landed"; answer: Landing }
  /** The flight landed with nothing: go to a worker yourself. */
  | { kind: "failed" }
  | { kind: "timeout" }
  | { kind: "client_gone" };

/**
 * Wait for a landing, at most `timeoutMs`, and no longer than `client` stays (its abort: the
 * client went away). Nothing of the wait outlives it (timer and listener are removed).
 */
export function awaitLanding(
  landed: Promise<Landing | undefined>,
  client: AbortSignal,
  timeoutMs: number,
): Promise<WaitOutcome> {
  if (client.aborted) return Promise.resolve({ kind: "client_gone" });
  return new Promise<WaitOutcome>((resolve) => {
    let settled = false;
    const settle = (o: WaitOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.removeEventListener("abort", onAbort);
      resolve(o);
    };
    const onAbort = () => settle({ kind: "client_gone" });
    const timer = setTimeout(() => settle({ kind: "timeout" }), timeoutMs);
    client.addEventListener("abort", onAbort, { once: true });
    landed.then((answer) => settle(answer ? { kind: "landed", answer } : { kind: "failed" }));
  });
}
