/**
 * One interleaved round: every compared scenario measured once, back to back, so that A and B see
 * the same machine load. Odd rounds reverse the order (ABBA) so slow drift favours neither side.
 */
import type { LoadGen } from "./loadgen.ts";
import { counterDelta, type ModelCounters, scrapeCounters } from "./metrics.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuMs, usPerRequest } from "./cpu_time.ts";
import { startProbe } from "./probe.ts";
import { bestRawThroughput, type RawModel, rawSingleLatencies, rawThroughput } from "./raw_ort.ts";
import { type Sample, sampleFromBatches, sampleFromLoad, sampleFromRuns } from "./samples.ts";
import { BENCH_MODEL, PROFILE_HEADER, type Service } from "./services.ts";
import { type BenchText, totalTokens } from "./texts.ts";

/** Inputs of the scenarios, fixed for the whole run so that every round sees the same texts. */
export interface Corpora {
  throughput: BenchText[];
  throughputIds: number[][];
  padding: BenchText[];
  latency: BenchText;
  latencyIds: number[];
}

/** What a round needs: the plan, the baseline session, the load generator and the services. */
export interface RoundContext {
  plan: BenchPlan;
  /** The raw baseline once per candidate thread count; each round's ceiling is the fastest. */
  raws: RawModel[];
  /** The int8 twin, at the CPU count (compared with the float graph at the same count). */
  rawInt8: RawModel;
  loadgen: LoadGen;
  worker: Service;
  /** Absent when the router is not measured. */
  router?: Service;
  /** The router reaching the same worker over HTTP (absent when it did not start). */
  routerHttp?: Service;
  /** The floors (tests/bench/floor/server.ts); absent when they did not start. */
  floors?: { model: Service; proxy: Service };
  corpora: Corpora;
}

/** Measurements of one round. */
export interface RoundData {
  /** The raw ceiling: the fastest candidate of this round. */
  rawThroughput: Sample;
  /** Its thread count, and every candidate's tokens/s ("0" = onnxruntime's default). */
  rawThreads: number;
  rawTokensPerSByThreads: Record<string, number>;
  rawInt8Throughput: Sample;
  /** Tokens/s of the float graph at the int8 twin's thread count (the speed-up's denominator). */
  rawFp32SameThreadsTokensPerS: number;
  workerThroughput: Sample;
  /** The same texts in requests of `plan.largeItems` items, `plan.largeConcurrency` in flight. */
  workerLarge: Sample;
  /** Through the router, over the connection the worker dialled. */
  routerThroughput?: Sample;
  /** The same through the router that reaches the worker over HTTP. */
  routerHttpThroughput?: Sample;
  rawSingle: Sample;
  workerSingle: Sample;
  routerSingle?: Sample;
  routerHttpSingle?: Sample;
  /** The bare model server and the bare proxy at concurrency 1 (when the floors run). */
  floorSingle?: Sample;
  floorProxySingle?: Sample;
  /** /healthz latencies (ms) during the worker's saturation run. */
  healthzMs: number[];
  /** Worker counters over the saturation run. */
  throughputCounters: ModelCounters;
  /** Worker counters over the large-request run. */
  largeCounters: ModelCounters;
}

/** One run of the padding scenario: the load sample and the worker's counter deltas. */
export interface PaddingRun {
  sample: Sample;
  counters: ModelCounters;
}

/** Measure every interleaved scenario once. */
export async function runRound(ctx: RoundContext, index: number): Promise<RoundData> {
  const reverse = index % 2 === 1;
  const { corpora, plan } = ctx;
  const part: Partial<RoundData> = {};

  const throughputSteps: (() => Promise<void>)[] = [
    async () => {
      const ids = corpora.throughputIds;
      const b = await bestRawThroughput(ctx.raws, ids, plan.rawBatchBudget, reverse);
      part.rawThroughput = sampleFromBatches(b.result.items, b.result.tokens, b.result.elapsedMs);
      part.rawThreads = b.best.threads;
      part.rawTokensPerSByThreads = b.tokensPerSByThreads;
      const q = await rawThroughput(ctx.rawInt8, ids, plan.rawBatchBudget);
      part.rawInt8Throughput = sampleFromBatches(q.items, q.tokens, q.elapsedMs);
      part.rawFp32SameThreadsTokensPerS = b.tokensPerSByThreads[String(ctx.rawInt8.threads)];
    },
    async () => {
      const before = await scrapeCounters(ctx.worker.url, BENCH_MODEL);
      const probe = startProbe(`${ctx.worker.url}/healthz`, plan.probeIntervalMs);
      part.workerThroughput = await saturate(ctx, ctx.worker, corpora.throughput);
      part.healthzMs = await probe.stop();
      const after = await scrapeCounters(ctx.worker.url, BENCH_MODEL);
      part.throughputCounters = counterDelta(before, after);
    },
  ];
  throughputSteps.push(async () => {
    const before = await scrapeCounters(ctx.worker.url, BENCH_MODEL);
    part.workerLarge = await saturateLarge(ctx, corpora.throughput);
    const after = await scrapeCounters(ctx.worker.url, BENCH_MODEL);
    part.largeCounters = counterDelta(before, after);
  });
  if (ctx.router) {
    const router = ctx.router;
    throughputSteps.push(async () => {
      part.routerThroughput = await saturate(ctx, router, corpora.throughput);
    });
  }
  if (ctx.routerHttp) {
    const router = ctx.routerHttp;
    throughputSteps.push(async () => {
      part.routerHttpThroughput = await saturate(ctx, router, corpora.throughput);
    });
  }
  for (const step of reverse ? throughputSteps.reverse() : throughputSteps) await step();

  const latencySteps: (() => Promise<void>)[] = [
    async () => {
      // The best raw single-run p50 of the candidates.
      let best: Sample | undefined;
      for (const m of ctx.raws) {
        const ms = await rawSingleLatencies(m, corpora.latencyIds, plan.latencyRequests);
        const s = sampleFromRuns(ms, corpora.latencyIds.length);
        if (!best || s.latency.p50 < best.latency.p50) best = s;
      }
      part.rawSingle = best;
    },
    async () => {
      part.workerSingle = await oneAtATime(ctx, ctx.worker);
    },
  ];
  if (ctx.router) {
    const router = ctx.router;
    latencySteps.push(async () => {
      part.routerSingle = await oneAtATime(ctx, router);
    });
  }
  if (ctx.routerHttp) {
    const router = ctx.routerHttp;
    latencySteps.push(async () => {
      part.routerHttpSingle = await oneAtATime(ctx, router);
    });
  }
  if (ctx.floors) {
    const { model, proxy } = ctx.floors;
    latencySteps.push(async () => {
      part.floorSingle = await oneAtATime(ctx, model);
    });
    latencySteps.push(async () => {
      part.floorProxySingle = await oneAtATime(ctx, proxy);
    });
  }
  for (const step of reverse ? latencySteps.reverse() : latencySteps) await step();

  return part as RoundData;
}

/**
 * The padding scenario: mixed lengths at saturation, padding read from the worker's counters.
 * Not interleaved with a baseline: it is a share of the worker's own counts.
 */
export async function runPadding(ctx: RoundContext): Promise<PaddingRun> {
  const before = await scrapeCounters(ctx.worker.url, BENCH_MODEL);
  const sample = await saturate(ctx, ctx.worker, ctx.corpora.padding);
  const after = await scrapeCounters(ctx.worker.url, BENCH_MODEL);
  return { sample, counters: counterDelta(before, after) };
}

/** Encode URL and headers of a service (the router also needs the pool header). */
function target(ctx: RoundContext, svc: Service): { url: string; headers: Record<string, string> } {
  const url = `${svc.url}/v1/encode/${encodeURIComponent(BENCH_MODEL)}`;
  const routed = svc === ctx.router || svc === ctx.routerHttp;
  return { url, headers: routed ? { ...PROFILE_HEADER } : {} };
}

/** One text per request, `concurrency` in flight; stops sending at 4× the planned phase length. */
async function saturate(ctx: RoundContext, svc: Service, texts: BenchText[]): Promise<Sample> {
  const { url, headers } = target(ctx, svc);
  const result = await ctx.loadgen.run({
    url,
    headers,
    requests: texts.map((t) => [t.text]),
    concurrency: ctx.plan.concurrency,
    maxMs: ctx.plan.throughputSeconds * 4000,
    timeoutMs: 120_000,
  });
  return checked(sampleFromLoad(result, texts), result.firstError);
}

/**
 * Large requests: the texts in chunks of `plan.largeItems` per request, a few in flight; each
 * request counts as one text of its summed tokens.
 */
async function saturateLarge(ctx: RoundContext, texts: BenchText[]): Promise<Sample> {
  const { url, headers } = target(ctx, ctx.worker);
  const chunks: BenchText[][] = [];
  for (let i = 0; i < texts.length; i += ctx.plan.largeItems) {
    chunks.push(texts.slice(i, i + ctx.plan.largeItems));
  }
  const result = await ctx.loadgen.run({
    url,
    headers,
    requests: chunks.map((c) => c.map((t) => t.text)),
    concurrency: ctx.plan.largeConcurrency,
    maxMs: ctx.plan.throughputSeconds * 4000,
    timeoutMs: 120_000,
  });
  const perRequest = chunks.map((c) => ({ text: "", tokens: totalTokens(c) }));
  return checked(sampleFromLoad(result, perRequest), result.firstError);
}

/**
 * Concurrency 1: the latency text, one request after the other. The CPU spent per request is read
 * around it: of the worker's main thread (HTTP, batching, encoding; inference runs on its own
 * threads), or of the whole router process.
 */
async function oneAtATime(ctx: RoundContext, svc: Service): Promise<Sample> {
  const { url, headers } = target(ctx, svc);
  const n = ctx.plan.latencyRequests;
  const texts = new Array<BenchText>(n).fill(ctx.corpora.latency);
  const pid = svc.proc.child.pid;
  const mainThread = svc === ctx.worker;
  const cpuBefore = cpuMs(pid, mainThread);
  const result = await ctx.loadgen.run({
    url,
    headers,
    requests: texts.map((t) => [t.text]),
    concurrency: 1,
    maxMs: 60_000,
    timeoutMs: 30_000,
  });
  const sample = checked(sampleFromLoad(result, texts), result.firstError);
  const cpu = usPerRequest(cpuBefore, cpuMs(pid, mainThread), result.ok + result.failed);
  return cpu === null ? sample : { ...sample, cpuUsPerRequest: cpu };
}

/** A run where nothing succeeded is a broken setup, not a measurement. */
function checked(s: Sample, firstError: string | undefined): Sample {
  if (s.requests === 0) throw new Error(`no request succeeded: ${firstError ?? "unknown error"}`);
  return s;
}
