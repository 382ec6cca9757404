/** Warm-up before any measurement: session, JIT and connections, plus the speed that sizes corpora. */
import type { LoadGen } from "./loadgen.ts";
import type { BenchPlan } from "./plan.ts";
import { type RawModel, rawThroughput, tokenize } from "./raw_ort.ts";
import { BENCH_MODEL, PROFILE_HEADER, type Service } from "./services.ts";
import { corpus } from "./texts.ts";

/** Seed of the warm-up texts (different from every measured corpus). */
const WARMUP_SEED = 99;

/** Token ids of the warm-up texts (also what picks the baseline's thread count). */
export function warmupIds(plan: BenchPlan): number[][] {
  return tokenize(corpus(plan.warmupTexts, ...plan.throughputTokens, WARMUP_SEED));
}

/** Warm every path up; returns the baseline's tokens/s on the warm-up texts (second pass). */
export async function warmUp(
  plan: BenchPlan,
  raw: RawModel,
  loadgen: LoadGen,
  worker: Service,
  router: Service | undefined,
  routerHttp?: Service,
): Promise<number> {
  const texts = corpus(plan.warmupTexts, ...plan.throughputTokens, WARMUP_SEED);
  const ids = tokenize(texts);
  await rawThroughput(raw, ids, plan.rawBatchBudget);
  const speed = (await rawThroughput(raw, ids, plan.rawBatchBudget)).tokensPerS;
  for (const svc of [worker, router, routerHttp]) {
    if (!svc) continue;
    await loadgen.run({
      url: `${svc.url}/v1/encode/${encodeURIComponent(BENCH_MODEL)}`,
      headers: svc === worker ? {} : { ...PROFILE_HEADER },
      requests: texts.map((t) => [t.text]),
      concurrency: plan.concurrency,
      maxMs: 60_000,
      timeoutMs: 120_000,
    });
  }
  return speed;
}
