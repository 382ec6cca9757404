/** Bounded parallelism for independent async jobs. */

/**
 * Runs `fn` over `items` with at most `limit` running at once. After a failure no new item
 * starts; the running ones are awaited (so nothing keeps working behind the caller's back),
 * then the first error is thrown.
 */
export async function mapLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const lane = async (): Promise<void> => {
    while (errors.length === 0 && next < items.length) {
      const item = items[next++];
      try {
        await fn(item);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  const lanes = Math.max(1, Math.min(Math.floor(limit), items.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  if (errors.length > 0) throw errors[0];
}
