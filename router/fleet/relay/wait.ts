/**
 * Waiting for one KV key to get a value: a watch (prompt where it sees the writer: one process,
 * Deno Deploy, a `denokv` server) and a poll (processes sharing a local file are not told of each
 * other's writes), first after `pollMs / 8`, each wait half again as long up to `pollMs`: a
 * quick answer is seen soon after it is written, a slow one costs few reads. Bounded by a time
 * and an abort signal: never a hang.
 */

/** The first poll's delay is this fraction of the poll interval. */
const FIRST_POLL_DIVISOR = 8;

/** How a wait ends: the entry with a value, or nothing by the time bound or the signal. */
export type WaitResult = { kind: "value"; entry: Deno.KvEntry<unknown> } | {
  kind: "timeout";
} | { kind: "aborted" };

/** Wait until `key` has a value, `untilMs` (epoch ms) passes or `signal` aborts. */
export function waitForKey(
  kv: Deno.Kv,
  key: Deno.KvKey,
  opts: { pollMs: number; untilMs: number; signal?: AbortSignal },
): Promise<WaitResult> {
  return new Promise((resolve) => {
    let done = false;
    let reader: ReadableStreamDefaultReader<Deno.KvEntryMaybe<unknown>[]> | undefined;
    const finish = (r: WaitResult) => {
      if (done) return;
      done = true;
      clearTimeout(poll);
      clearTimeout(bound);
      opts.signal?.removeEventListener("abort", abort);
      reader?.cancel().catch(() => {});
      resolve(r);
    };
    const seen = (e: Deno.KvEntryMaybe<unknown> | undefined) => {
      if (e && e.versionstamp !== null) {
        finish({ kind: "value", entry: e as Deno.KvEntry<unknown> });
      }
    };
    const check = () => {
      if (!done) kv.get(key).then(seen, () => {});
    };
    const abort = () => finish({ kind: "aborted" });
    let delay = Math.max(1, Math.floor(opts.pollMs / FIRST_POLL_DIVISOR));
    const tick = () => {
      check();
      delay = Math.min(opts.pollMs, delay * 1.5);
      poll = setTimeout(tick, delay);
    };
    let poll = setTimeout(tick, delay);
    const bound = setTimeout(
      () => finish({ kind: "timeout" }),
      Math.max(0, opts.untilMs - Date.now()),
    );
    if (opts.signal?.aborted) return abort();
    opts.signal?.addEventListener("abort", abort, { once: true });
    try {
      reader = kv.watch([key]).getReader();
      (async () => {
        while (!done) {
          const step = await reader!.read();
          if (step.done) return;
          seen(step.value[0]);
        }
      })().catch(() => {}); // a watch that ends leaves the poll
    } catch {
      check(); // no watch here: the poll alone, starting now
    }
  });
}
