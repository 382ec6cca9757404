/** How much the bench measures: the full run and the `--quick` smoke run. */

/** Sizes and settings of one bench run. */
export interface BenchPlan {
  quick: boolean;
  /** Interleaved rounds (each measures every scenario once); fewer when the deadline nears. */
  rounds: number;
  /** Target length of one throughput phase; corpora are sized from the warm-up speed. */
  throughputSeconds: number;
  /** Runs of the padding scenario, after the rounds (a share of counts: few runs suffice). */
  paddingRuns: number;
  /**
   * Texts of the padding scenario. A fixed number rather than a duration: the share depends on
   * how batches are formed from a full queue, not on speed, and 5–500-token texts are slow.
   */
  paddingTexts: number;
  /** Texts sent to each service (and run raw) before measuring: sessions, JIT, connections. */
  warmupTexts: number;
  /** Requests (and raw runs) of each concurrency-1 latency scenario per round. */
  latencyRequests: number;
  /** In-flight requests of the saturation scenarios. */
  concurrency: number;
  /** Interval of the /healthz probe during saturation. */
  probeIntervalMs: number;
  /** Padded-token budget of the raw baseline's batches (sorted by length). */
  rawBatchBudget: number;
  /** Token range of the throughput corpus and of the padding corpus. */
  throughputTokens: [number, number];
  paddingTokens: [number, number];
  /** Token count of the latency text. */
  latencyTokens: number;
  /** Items per request of the large-request scenario, and how many such requests are in flight. */
  largeItems: number;
  largeConcurrency: number;
  /** Fewest texts in the throughput corpus (so the large scenario gets a few requests). */
  minThroughputTexts: number;
  /** No round starts that would likely end later than this after the start. */
  roundsDeadlineMs: number;
  /** Likewise for padding runs (at least one always runs). */
  paddingDeadlineMs: number;
}

/** The plan for `--quick` (a smoke run of about a minute) or the full run (under 5 minutes). */
export function makePlan(quick: boolean): BenchPlan {
  const common = {
    probeIntervalMs: 25,
    // 1–4k tokens per run is the usual best range on CPUs; interleaved runs on the reference 2-core
    // machine found 1024 fastest of 1024/2048/4096 (4096: −16 to −22 %), so the baseline uses it.
    rawBatchBudget: 1024,
    throughputTokens: [32, 160] as [number, number],
    paddingTokens: [5, 500] as [number, number],
    latencyTokens: 16,
    largeConcurrency: 2,
  };
  return quick
    ? {
      ...common,
      quick,
      rounds: 1,
      // Fewer in flight so that a short corpus (at least one text per slot) still saturates.
      concurrency: 32,
      throughputSeconds: 3,
      largeItems: 64,
      minThroughputTexts: 128,
      paddingRuns: 1,
      paddingTexts: 16,
      warmupTexts: 16,
      latencyRequests: 30,
      roundsDeadlineMs: 60_000,
      paddingDeadlineMs: 80_000,
    }
    : {
      ...common,
      quick,
      rounds: 7,
      concurrency: 64,
      largeItems: 256,
      minThroughputTexts: 256,
      // Short phases, many rounds: A and B closer in time cancel more of the machine's noise.
      throughputSeconds: 6,
      paddingRuns: 2,
      paddingTexts: 48,
      warmupTexts: 32,
      latencyRequests: 150,
      roundsDeadlineMs: 240_000,
      paddingDeadlineMs: 300_000,
    };
}
