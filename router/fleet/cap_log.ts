/**
 * Refusals at a fleet cap, told to the operator: a warning that names the cap and the setting to
 * raise, at most once per cap every ten seconds (a full fleet's workers redial with backoff, and
 * each refusal logged would flood the log), with how many were refused meanwhile.
 */
import type { Logger } from "@svc/shared/log";

/** What to do about a cap the fleet has outgrown (in refusals and the log). */
export const RAISE_HINT =
  "retry later; the router's operator raises the cap, or SVC_FLEET_WORKERS, the fleet size the " +
  "caps derive from";

/** Least time between two warnings about the same cap. */
const LOG_EVERY_MS = 10_000;

/** Rate-limited warnings about refusals at the fleet's caps. */
export class CapRefusalLog {
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #byCap = new Map<string, { loggedAt: number; since: number }>();

  constructor(log: Logger, now: () => number) {
    this.#log = log;
    this.#now = now;
  }

  /** A worker was refused at `cap`; `fields` go into the warning when one is due. */
  refused(cap: string, fields: Record<string, unknown>): void {
    const now = this.#now();
    const e = this.#byCap.get(cap) ?? { loggedAt: -Infinity, since: 0 };
    e.since++;
    this.#byCap.set(cap, e);
    if (now - e.loggedAt < LOG_EVERY_MS) return;
    this.#log("warn", "worker refused: the fleet is at a cap", {
      ...fields,
      refused: e.since,
      hint: `raise ${cap}, or SVC_FLEET_WORKERS (the fleet size the caps derive from)`,
    });
    e.loggedAt = now;
    e.since = 0;
  }
}
