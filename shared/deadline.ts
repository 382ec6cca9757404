/** Bounded waits: one helper instead of hand-written races between a promise and a timer. */

/**
 * Settle like `work`, or, when `ms` pass first, like `onTimeout()` (its value, or its throw;
 * `undefined` without it). The timer is cleared either way, so nothing stays scheduled. `work` is
 * not cancelled: it goes on, and its late result (or rejection) is ignored.
 */
export function deadline<T>(work: Promise<T>, ms: number): Promise<T | undefined>;
/** As above, with `onTimeout()` deciding what a wait that ran out settles with. */
export function deadline<T, U>(work: Promise<T>, ms: number, onTimeout: () => U): Promise<T | U>;
export async function deadline<T, U>(
  work: Promise<T>,
  ms: number,
  onTimeout?: () => U,
): Promise<T | U | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<U | undefined>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(onTimeout?.());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
