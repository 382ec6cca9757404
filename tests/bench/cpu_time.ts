/**
 * CPU time a service spends per request, read from /proc (Linux): a per-request fixed cost that a
 * shared machine's noise hardly moves, unlike a latency difference of a millisecond.
 */

/** Linux reports utime and stime in clock ticks of 1/100 s (USER_HZ) on every usual build. */
const MS_PER_TICK = 10;

/**
 * User plus system CPU milliseconds of process `pid`, or of its main thread only when
 * `mainThread` (the worker's request handling, without its inference threads); null off Linux.
 */
export function cpuMs(pid: number, mainThread: boolean): number | null {
  const path = mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`;
  // Read through `cat`: Deno lets only --allow-all read another process's /proc entries.
  let text: string;
  try {
    const out = new Deno.Command("cat", { args: [path], stdout: "piped", stderr: "null" })
      .outputSync();
    if (!out.success) return null;
    text = new TextDecoder().decode(out.stdout);
  } catch {
    return null;
  }
  // Fields after the parenthesised command name (which may hold spaces): utime is the 12th.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks * MS_PER_TICK : null;
}

/** Microseconds of CPU per request between two readings (null when either is missing). */
export function usPerRequest(
  before: number | null,
  after: number | null,
  requests: number,
): number | null {
  if (before === null || after === null || requests <= 0) return null;
  return ((after - before) * 1000) / requests;
}
