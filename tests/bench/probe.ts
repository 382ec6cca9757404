/**
 * Event-loop responsiveness under load: GET /healthz at a fixed interval while a load job runs.
 * Runs in the bench process, which is idle during load runs (the load comes from the child).
 */

/** A running probe. */
export interface Probe {
  /** Stop probing; resolves with the latencies (ms) of the probes that were answered. */
  stop(): Promise<number[]>;
}

/** Probe `url` every `intervalMs` (sequentially: a slow answer delays the next probe). */
export function startProbe(url: string, intervalMs: number): Probe {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer();
        if (res.ok) samples.push(performance.now() - t0);
      } catch {
        // A timed-out probe counts as the bound: the loop was blocked at least that long.
        samples.push(performance.now() - t0);
      }
      const wait = intervalMs - (performance.now() - t0);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}
