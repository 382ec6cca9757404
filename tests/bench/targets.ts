/**
 * The performance targets (docs/bench/README.md) from the rounds' samples: each judged on the
 * median of its per-round values (the padding share on the pooled counts).
 */
import { padShare } from "./metrics.ts";
import type { Comparison, TargetResult } from "./results.ts";
import { meets } from "./results.ts";
import type { PaddingRun, RoundData } from "./round.ts";
import type { Sample } from "./samples.ts";
import { median, quantile } from "./stats.ts";
import { sumCounters } from "./aggregate.ts";

/** A target from per-round values: the median is the value that is judged. */
export function target(
  id: string,
  label: string,
  unit: TargetResult["unit"],
  comparison: Comparison,
  bound: number,
  perRound: number[],
  note?: string,
): TargetResult {
  const values = perRound.filter(Number.isFinite);
  const value = values.length > 0 ? median(values) : null;
  return {
    id,
    label,
    unit,
    comparison,
    target: bound,
    value,
    perRound: values,
    pass: value === null ? null : meets(value, comparison, bound),
    note,
  };
}

/** A target that could not be measured in this run. */
export function notMeasured(
  id: string,
  label: string,
  unit: TargetResult["unit"],
  comparison: Comparison,
  bound: number,
  why: string,
): TargetResult {
  return {
    id,
    label,
    unit,
    comparison,
    target: bound,
    value: null,
    perRound: [],
    pass: null,
    note: `not measured: ${why}`,
  };
}

/**
 * The performance bounds (ratios on one interleaved run): issue 15's, with the concurrency-1
 * and many-small-requests bounds the edge issue (27) tightened.
 */
export const BOUNDS = {
  efficiencyLarge: 0.93,
  efficiencySmall: 0.93,
  latencyOverheadMs: 1.0,
  routerThroughput: 0.97,
  routerAddedMs: 0.5,
  healthzP99Ms: 20,
  paddingShare: 0.05,
  int8Speedup: 2,
  int8Cosine: 0.99,
} as const;

/** The performance targets (router ones as "not measured" without a router). */
export function buildTargets(
  rounds: RoundData[],
  padding: PaddingRun[],
  routerWhy: string | null,
  int8Cosines: readonly number[] = [],
): TargetResult[] {
  const healthz = rounds.map((r) => quantile(r.healthzMs, 0.99));
  const padRounds = padding.map((p) => p.counters);
  const pooled = sumCounters(padRounds);
  const out: TargetResult[] = [
    target(
      "efficiency_large",
      "Worker (256-item requests) ÷ best raw ORT",
      "ratio",
      ">=",
      BOUNDS.efficiencyLarge,
      rounds.map((r) => r.workerLarge.tokensPerS / r.rawThroughput.tokensPerS),
    ),
    target(
      "efficiency_small",
      "Worker (1 item, c64) ÷ best raw ORT",
      "ratio",
      ">=",
      BOUNDS.efficiencySmall,
      rounds.map((r) => r.workerThroughput.tokensPerS / r.rawThroughput.tokensPerS),
    ),
    target(
      "latency_overhead",
      "Worker p50 − raw p50 at concurrency 1",
      "ms",
      "<=",
      BOUNDS.latencyOverheadMs,
      rounds.map((r) => r.workerSingle.latency.p50 - r.rawSingle.latency.p50),
    ),
  ];
  if (routerWhy === null) {
    out.push(
      target(
        "router_throughput",
        "Through router ÷ direct throughput (connection)",
        "ratio",
        ">=",
        BOUNDS.routerThroughput,
        rounds.map((r) => ratio(r.routerThroughput, r.workerThroughput)),
      ),
      target(
        "router_added_p50",
        "Router added p50 at concurrency 1 (connection)",
        "ms",
        "<=",
        BOUNDS.routerAddedMs,
        rounds.map((r) => outsideDiff(r.routerSingle, r.workerSingle)),
        "per round: p50 of (client latency − X-Total-Time) through the router minus the same " +
          "direct; pairing each request with its own server time removes inference-time noise",
      ),
    );
  } else {
    out.push(
      notMeasured(
        "router_throughput",
        "Through router ÷ direct throughput",
        "ratio",
        ">=",
        BOUNDS.routerThroughput,
        routerWhy,
      ),
      notMeasured(
        "router_added_p50",
        "Router added p50 at concurrency 1",
        "ms",
        "<=",
        BOUNDS.routerAddedMs,
        routerWhy,
      ),
    );
  }
  const padTarget = target(
    "padding_share",
    "Pad tokens ÷ all tokens run (5–500 tokens)",
    "share",
    "<=",
    BOUNDS.paddingShare,
    padRounds.map(padShare),
    "pooled over the padding runs from the svc_padded_tokens_total and " +
      "svc_tokens_processed_total deltas",
  );
  if (padRounds.length > 0) {
    // A share of all tokens run, so the rounds are pooled rather than their shares medianed.
    padTarget.value = padShare(pooled);
    padTarget.pass = meets(padTarget.value, "<=", BOUNDS.paddingShare);
  }
  const meanCos = int8Cosines.length > 0
    ? [int8Cosines.reduce((a, b) => a + b, 0) / int8Cosines.length]
    : [];
  out.push(
    target(
      "int8_speedup",
      "Raw ORT int8 ÷ fp32 throughput (same threads)",
      "ratio",
      ">=",
      BOUNDS.int8Speedup,
      rounds.map((r) => r.rawInt8Throughput.tokensPerS / r.rawFp32SameThreadsTokensPerS),
    ),
    target(
      "int8_cosine",
      "Mean cosine, int8 vs fp32 vectors",
      "ratio",
      ">=",
      BOUNDS.int8Cosine,
      meanCos,
      "one value: mean over the throughput texts of the cosine between mean-pooled vectors",
    ),
    target("healthz_p99", "/healthz p99 under saturation", "ms", "<", BOUNDS.healthzP99Ms, healthz),
    padTarget,
  );
  return out;
}

/** Router-added time outside the worker at concurrency 1 (NaN without a router sample). */
export function outsideDiff(router: Sample | undefined, direct: Sample): number {
  if (!router?.outside || !direct.outside) return NaN;
  return router.outside.serverP50 - direct.outside.serverP50;
}

function ratio(a: Sample | undefined, b: Sample): number {
  return a ? a.tokensPerS / b.tokensPerS : NaN;
}
