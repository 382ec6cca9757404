/** Reconnect delays: capped exponential backoff with jitter. */

/** First retry delay. */
export const RECONNECT_BASE_MS = 250;

/**
 * Delay before reconnect attempt `attempt` (0-based): base·2^attempt capped at `capMs`, then
 * "equal jitter" (half fixed, half random) so a fleet that lost its router does not reconnect
 * in lockstep, yet no worker retries in a tight loop.
 */
export function backoffDelay(
  attempt: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(capMs, RECONNECT_BASE_MS * 2 ** Math.min(Math.max(attempt, 0), 20));
  return Math.round(exp / 2 + random() * (exp / 2));
}
