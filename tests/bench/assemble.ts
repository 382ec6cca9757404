/** The results file from the measurements: targets, scenario medians, settings, diagnostics. */
import { scenario, sumCounters } from "./aggregate.ts";
import { buildTargets, outsideDiff } from "./targets.ts";
import { paddingFraction, planBatches } from "./batching.ts";
import { machineInfo } from "./machine.ts";
import { type ModelCounters, padShare } from "./metrics.ts";
import type { BenchPlan } from "./plan.ts";
import { type BenchResults, RESULTS_SCHEMA, type ThreadChoice } from "./results.ts";
import type { PaddingRun, RoundData } from "./round.ts";
import { BENCH_MODEL } from "./services.ts";
import { median } from "./stats.ts";

/** What `assemble` needs. */
export interface AssembleInput {
  plan: BenchPlan;
  rounds: RoundData[];
  padding: PaddingRun[];
  routerWhy: string | null;
  loadAvgStart: number[];
  threads: ThreadChoice;
  /** Cosine per throughput text between the float and the int8 graph's pooled vectors. */
  int8Cosines: number[];
  durationS: number;
  /** Worker entry point that was measured (worker/main.ts unless an A/B copy). */
  workerEntry: string;
  /** Token counts of the throughput corpus (for the baseline's own padding share). */
  throughputLengths: number[];
}

/** Build the complete results object. */
export async function assemble(input: AssembleInput): Promise<BenchResults> {
  const { plan, rounds, padding, routerWhy } = input;
  const routerNote = routerWhy === null ? undefined : `not measured: ${routerWhy}`;
  const floorNote = rounds.some((r) => r.floorSingle)
    ? undefined
    : "not measured: the floor servers did not start";
  const [tpLo, tpHi] = plan.throughputTokens;
  const [padLo, padHi] = plan.paddingTokens;
  const c = plan.concurrency;
  return {
    schema: RESULTS_SCHEMA,
    date: new Date().toISOString(),
    quick: plan.quick,
    durationS: input.durationS,
    machine: await machineInfo(input.loadAvgStart, input.threads),
    settings: {
      model: BENCH_MODEL,
      rounds: rounds.length,
      paddingRuns: padding.length,
      concurrency: c,
      itemsPerRequest: 1,
      rawBatchBudgetPaddedTokens: plan.rawBatchBudget,
      workerIntraOpThreads: input.threads.worker,
      rawIntraOpThreads: input.threads.raw === 0 ? "onnxruntime default" : input.threads.raw,
      largeItemsPerRequest: plan.largeItems,
      largeConcurrency: plan.largeConcurrency,
      throughputTokens: plan.throughputTokens,
      throughputTexts: input.throughputLengths.length,
      paddingTokens: plan.paddingTokens,
      paddingTexts: plan.paddingTexts,
      latencyTokens: plan.latencyTokens,
      latencyRequestsPerRound: plan.latencyRequests,
      probeIntervalMs: plan.probeIntervalMs,
      workerEntry: input.workerEntry,
      workerEnv:
        "defaults (SVC_INTRA_OP_THREADS auto, SVC_MAX_BATCH_REQUESTS 64, SVC_MAX_BATCH_ITEMS 64, " +
        "SVC_MAX_BATCH_WAIT_MS 0), SVC_DEVICE cpu",
    },
    targets: buildTargets(rounds, padding, routerWhy, input.int8Cosines),
    scenarios: [
      scenario(
        "raw_ort_batched",
        `in-process onnxruntime-node at its fastest thread count, texts of ${tpLo}–${tpHi} tokens sorted by length, batches ` +
          `of ≤ ${plan.rawBatchBudget} padded tokens; only session.run timed`,
        rounds.map((r) => r.rawThroughput),
      ),
      scenario(
        "raw_ort_int8_batched",
        `the int8 twin (MatMul weights per-channel int8, dynamic activations) on the same texts, ` +
          `same thread count`,
        rounds.map((r) => r.rawInt8Throughput),
      ),
      scenario(
        "worker_saturated",
        `same texts, one per msgpack request, ${c} in flight, direct to the worker`,
        rounds.map((r) => r.workerThroughput),
      ),
      scenario(
        "worker_large_requests",
        `same texts, ${plan.largeItems} per request, ${plan.largeConcurrency} in flight, direct`,
        rounds.map((r) => r.workerLarge),
      ),
      scenario(
        "router_saturated",
        `same texts and concurrency through the router, over the connection the worker dialled`,
        rounds.map((r) => r.routerThroughput),
        routerNote,
      ),
      scenario(
        "router_http_saturated",
        `the same through a router that reaches the worker over HTTP (the HTTP transport)`,
        rounds.map((r) => r.routerHttpThroughput),
        routerNote,
      ),
      scenario(
        "raw_ort_single",
        `one ${plan.latencyTokens}-token input per session.run, one after the other`,
        rounds.map((r) => r.rawSingle),
      ),
      scenario(
        "worker_c1",
        `the ${plan.latencyTokens}-token text, concurrency 1, direct to the worker`,
        rounds.map((r) => r.workerSingle),
      ),
      scenario(
        "router_c1",
        `the ${plan.latencyTokens}-token text, concurrency 1, through the router (connection)`,
        rounds.map((r) => r.routerSingle),
        routerNote,
      ),
      scenario(
        "router_http_c1",
        `the same through the router that reaches the worker over HTTP`,
        rounds.map((r) => r.routerHttpSingle),
        routerNote,
      ),
      scenario(
        "floor_c1",
        `the same, to a bare node:http server with one inference thread (tests/bench/floor)`,
        rounds.map((r) => r.floorSingle),
        floorNote,
      ),
      scenario(
        "floor_proxy_c1",
        `the same, through a bare node:http proxy in front of the worker`,
        rounds.map((r) => r.floorProxySingle),
        floorNote,
      ),
      scenario(
        "worker_mixed_lengths",
        `texts of ${padLo}–${padHi} tokens (uniform), one per request, ${c} in flight`,
        padding.map((p) => p.sample),
      ),
    ],
    diagnostics: diagnostics(input),
  };
}

/** Figures that explain the targets: batch shapes, padding of each side, overhead splits. */
function diagnostics(input: AssembleInput): Record<string, number | null> {
  const { rounds, padding, plan } = input;
  const saturated = sumCounters(rounds.map((r) => r.throughputCounters));
  const large = sumCounters(rounds.map((r) => r.largeCounters));
  const mixed = sumCounters(padding.map((p) => p.counters));
  const med = (v: number[]) => {
    const finite = v.filter(Number.isFinite);
    return finite.length > 0 ? median(finite) : null;
  };
  return {
    int8CosineMin: input.int8Cosines.length > 0 ? Math.min(...input.int8Cosines) : null,
    saturatedMeanBatchItems: meanBatch(saturated),
    saturatedPadShare: padShare(saturated),
    largeMeanBatchItems: meanBatch(large),
    largePadShare: padShare(large),
    // The same texts as the baseline plans them (sorted over the whole set).
    rawPlanPadShare: paddingFraction(
      input.throughputLengths,
      planBatches(input.throughputLengths, plan.rawBatchBudget),
    ),
    // Client tokens vs the worker's counter: 1.0 means every token was counted once.
    saturatedTokensCountedRatio: saturated.tokens /
      Math.max(1, rounds.reduce((s, r) => s + r.workerThroughput.tokens, 0)),
    mixedMeanBatchItems: meanBatch(mixed),
    mixedPadShare: padShare(mixed),
    workerC1OutsideInferenceP50Ms: med(
      rounds.map((r) => r.workerSingle.outside?.inferenceP50 ?? NaN),
    ),
    workerC1OutsideServerP50Ms: med(rounds.map((r) => r.workerSingle.outside?.serverP50 ?? NaN)),
    routerC1OutsideServerP50Ms: med(
      rounds.map((r) => r.routerSingle?.outside?.serverP50 ?? NaN),
    ),
    routerAddedP50NaiveMs: med(
      rounds.map((r) =>
        r.routerSingle ? r.routerSingle.latency.p50 - r.workerSingle.latency.p50 : NaN
      ),
    ),
    routerAddedP50PairedMs: med(rounds.map((r) => outsideDiff(r.routerSingle, r.workerSingle))),
    // The HTTP transport beside the connection, in the same rounds.
    routerHttpAddedP50PairedMs: med(
      rounds.map((r) => outsideDiff(r.routerHttpSingle, r.workerSingle)),
    ),
    routerHttpThroughputRatio: med(
      rounds.map((r) =>
        r.routerHttpThroughput
          ? r.routerHttpThroughput.tokensPerS / r.workerThroughput.tokensPerS
          : NaN
      ),
    ),
    routerHttpC1ProcessCpuUsPerRequest: med(
      rounds.map((r) => r.routerHttpSingle?.cpuUsPerRequest ?? NaN),
    ),
    // CPU per concurrency-1 request: the fixed cost behind the latency targets, steadier than them.
    workerC1MainThreadCpuUsPerRequest: med(
      rounds.map((r) => r.workerSingle.cpuUsPerRequest ?? NaN),
    ),
    routerC1ProcessCpuUsPerRequest: med(
      rounds.map((r) => r.routerSingle?.cpuUsPerRequest ?? NaN),
    ),
    // The floors: what HTTP plus one thread hop, and one bare proxy hop, cost on this machine.
    floorC1OverRawP50Ms: med(
      rounds.map((r) => r.floorSingle ? r.floorSingle.latency.p50 - r.rawSingle.latency.p50 : NaN),
    ),
    workerC1OverFloorP50Ms: med(
      rounds.map((r) =>
        r.floorSingle ? r.workerSingle.latency.p50 - r.floorSingle.latency.p50 : NaN
      ),
    ),
    // The same, each request paired with its own inference time (both sides time session.run
    // in their inference thread): the run's own spread, a millisecond or more between rounds
    // here, drops out, as it does for the router's paired figure.
    workerC1OverFloorPairedP50Ms: med(
      rounds.map((r) =>
        r.floorSingle?.outside && r.workerSingle.outside
          ? r.workerSingle.outside.inferenceP50 - r.floorSingle.outside.inferenceP50
          : NaN
      ),
    ),
    floorProxyAddedP50PairedMs: med(
      rounds.map((r) => outsideDiff(r.floorProxySingle, r.workerSingle)),
    ),
    routerOverFloorProxyP50Ms: med(
      rounds.map((r) => r.floorProxySingle ? outsideDiff(r.routerSingle, r.floorProxySingle) : NaN),
    ),
  };
}

function meanBatch(c: ModelCounters): number | null {
  return c.batches > 0 ? c.batchItems / c.batches : null;
}
