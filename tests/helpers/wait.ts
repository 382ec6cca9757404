/**
 * The one polling helper of the test suite: wait until a condition holds, bounded in time.
 * Tests wait for an observable state (a worker registered, a ticker stopped) instead of guessing
 * a sleep; the bound only decides how long a broken build takes to fail, so keep it generous.
 */

/** A child process whose exit ends the wait at once (its last output goes into the error). */
export interface WatchedProcess {
  running(): boolean;
  tail(): string;
}

/** Options of {@link waitFor}. */
export interface WaitOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between checks (default 20 ms). */
  everyMs?: number;
  /** Fail at once, with its output, when this process exits before the condition holds. */
  proc?: WatchedProcess;
  /** A check that throws means "not yet" (a server still starting) instead of failing the wait. */
  retryErrors?: boolean;
}

/** Default bound of {@link waitFor}: long enough for a busy 2-core machine. */
export const WAIT_TIMEOUT_MS = 10_000;

/**
 * Resolve once `check` returns true, with the milliseconds it took; throw naming `what` after
 * the timeout (a number is the timeout in ms).
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  opts: number | WaitOptions = {},
): Promise<number> {
  const o: WaitOptions = typeof opts === "number" ? { timeoutMs: opts } : opts;
  const timeoutMs = o.timeoutMs ?? WAIT_TIMEOUT_MS;
  const start = performance.now();
  for (;;) {
    let ok = false;
    try {
      ok = await check();
    } catch (err) {
      if (!o.retryErrors) throw err;
    }
    if (ok) return performance.now() - start;
    if (o.proc && !o.proc.running()) {
      throw new Error(`process exited while waiting for ${what}\n${o.proc.tail()}`);
    }
    if (performance.now() - start > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, o.everyMs ?? 20));
  }
}
