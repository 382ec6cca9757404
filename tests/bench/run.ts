/**
 * `deno task bench [--quick] [--out DIR] [--no-router]`: measures the worker (and the router when
 * it works) against in-process onnxruntime-node on bench-small, in interleaved rounds, and writes
 * results.json and chart.svg. Every process it starts is killed before it returns.
 */
import { dirname, join, resolve } from "node:path";
import { ensureFixtures } from "../fixtures/mod.ts";
import { parseArgs } from "./args.ts";
import { assemble } from "./assemble.ts";
import { buildCorpora } from "./corpora.ts";
import { type LoadGen, startLoadGen } from "./loadgen.ts";
import { loadAvg } from "./machine.ts";
import { type BenchPlan, makePlan } from "./plan.ts";
import type { ThreadChoice } from "./results.ts";
import { killAll, REPO } from "./procs.ts";
import { openBestRawModel, openRawModel } from "./raw_ort.ts";
import { int8Cosines } from "./int8.ts";
import {
  type Corpora,
  type PaddingRun,
  type RoundContext,
  type RoundData,
  runPadding,
  runRound,
} from "./round.ts";
import { summaryText, writeReport } from "./report.ts";
import { type Services, startServices } from "./setup.ts";
import { warmUp, warmupIds } from "./warmup.ts";
import { scrapeGauge } from "./metrics.ts";

/** Progress goes to stderr so that stdout stays the summary. */
function log(msg: string): void {
  console.error(`[bench] ${msg}`);
}

/** Run the bench and write the report; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const plan = makePlan(args.quick);
  const started = performance.now();
  const loadAvgStart = loadAvg();
  log(`${plan.quick ? "quick" : "full"} run; load average ${loadAvgStart.join(" ")}`);
  const fx = await ensureFixtures(undefined, { bench: true });
  const services = await startServices(fx, args.router, args.workerEntry);
  if (services.routerWhy) log(`router: ${services.routerWhy}`);
  const loadgen = startLoadGen();
  try {
    const { rounds, padding, corpora, threads, cosines } = await measure(
      plan,
      fx,
      services,
      loadgen,
      started,
    );
    const results = await assemble({
      plan,
      rounds,
      padding,
      throughputLengths: corpora.throughput.map((t) => t.tokens),
      routerWhy: services.routerWhy,
      workerEntry: args.workerEntry,
      loadAvgStart,
      threads,
      int8Cosines: cosines,
      durationS: (performance.now() - started) / 1000,
    });
    // --out is relative to where the command runs; the default is the untracked bench/results/,
    // --write-docs the committed copy in docs/bench.
    const dir = args.outDir
      ? resolve(args.outDir)
      : join(REPO, args.writeDocs ? "docs/bench" : "bench/results");
    const untracked = join(REPO, "bench/results");
    const files = await writeReport(dir, results, !dir.startsWith(untracked));
    console.log(summaryText(results));
    log(`wrote ${files.join(", ")} in ${results.durationS.toFixed(0)} s`);
    return 0;
  } finally {
    await Promise.all([loadgen.close(), services.stop()]);
  }
}

/** Open the baseline, warm up, size the corpora, then run rounds until done or out of time. */
async function measure(
  plan: BenchPlan,
  fixturesDir: string,
  services: Services,
  loadgen: LoadGen,
  started: number,
): Promise<
  {
    rounds: RoundData[];
    padding: PaddingRun[];
    corpora: Corpora;
    threads: ThreadChoice;
    cosines: number[];
  }
> {
  const modelPath = join(fixturesDir, "cache/fixture/bench-small/onnx/model.onnx");
  log("finding the baseline's fastest thread count");
  const best = await openBestRawModel(modelPath, warmupIds(plan), plan.rawBatchBudget);
  const raw = best.model;
  const rawInt8 = await openRawModel(join(dirname(modelPath), "model_int8.onnx"), raw.threads);
  const threads: ThreadChoice = {
    worker: await scrapeGauge(services.worker.url, "svc_compute_threads"),
    raw: raw.threads,
    rawTokensPerSByThreads: best.tokensPerSByThreads,
  };
  log(
    `intra-op threads: worker ${threads.worker} (its default), raw ceiling ${raw.threads} ` +
      `(tried ${JSON.stringify(best.tokensPerSByThreads)}; 0 = ORT's default)`,
  );
  try {
    log("warming up");
    const speed = await warmUp(plan, raw, loadgen, services.worker, services.router);
    const corpora = buildCorpora(plan, speed);
    log(
      `warm-up speed ${Math.round(speed)} tok/s: throughput corpus ` +
        `${corpora.throughput.length} texts, padding corpus ${corpora.padding.length} texts`,
    );
    const cosines = await int8Cosines(raw, rawInt8, corpora.throughputIds, plan.rawBatchBudget);
    const ctx: RoundContext = {
      plan,
      raw,
      rawInt8,
      loadgen,
      worker: services.worker,
      router: services.router,
      corpora,
    };
    const rounds = await repeat(
      plan.rounds,
      plan.roundsDeadlineMs,
      started,
      "round",
      (i) => runRound(ctx, i),
    );
    log("padding scenario");
    const padding = await repeat(
      plan.paddingRuns,
      plan.paddingDeadlineMs,
      started,
      "padding run",
      () => runPadding(ctx),
    );
    return { rounds, padding, corpora, threads, cosines };
  } finally {
    await raw.session.release().catch(() => {});
    await rawInt8.session.release().catch(() => {});
  }
}

/**
 * Run `step` up to `times` times; a run only starts if, at the pace of the slowest so far, it
 * would end before `deadlineMs` after `started` (the first always runs).
 */
async function repeat<T>(
  times: number,
  deadlineMs: number,
  started: number,
  what: string,
  step: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = [];
  let slowest = 0;
  for (let i = 0; i < times; i++) {
    if (i > 0 && performance.now() - started + slowest > deadlineMs) {
      log(`stopping after ${i} ${what}s (time bound)`);
      break;
    }
    const t0 = performance.now();
    out.push(await step(i));
    const ms = performance.now() - t0;
    slowest = Math.max(slowest, ms);
    log(`${what} ${i + 1}/${times} took ${(ms / 1000).toFixed(1)} s`);
  }
  return out;
}

if (import.meta.main) {
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(sig, () => killAll().finally(() => Deno.exit(130)));
  }
  Deno.exit(await main(Deno.args));
}
