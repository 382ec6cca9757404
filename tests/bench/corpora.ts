/** The run's inputs, sized from the warm-up speed so a throughput phase lasts about as planned. */
import type { BenchPlan } from "./plan.ts";
import { tokenize } from "./raw_ort.ts";
import type { Corpora } from "./round.ts";
import { corpus, textOfTokens } from "./texts.ts";
import { Prng } from "@svc/fixture-models/prng";

/** Seeds of the three inputs (fixed: every run sends the same texts). */
const SEEDS = { throughput: 1101, padding: 2202, latency: 3303 } as const;

/** Number of texts so that `seconds` at `tokensPerS` is covered (at least one per in-flight slot). */
export function corpusSize(
  tokensPerS: number,
  seconds: number,
  range: [number, number],
  minCount: number,
): number {
  const mean = (range[0] + range[1]) / 2;
  return Math.max(minCount, Math.round((tokensPerS * seconds) / mean));
}

/** Build and tokenise the inputs; throws if the tokenizer disagrees with the planned lengths. */
export function buildCorpora(plan: BenchPlan, tokensPerS: number): Corpora {
  const tp = plan.throughputTokens;
  const pad = plan.paddingTokens;
  const throughput = corpus(
    corpusSize(
      tokensPerS,
      plan.throughputSeconds,
      tp,
      Math.max(plan.concurrency, plan.minThroughputTexts),
    ),
    tp[0],
    tp[1],
    SEEDS.throughput,
  );
  const padding = corpus(plan.paddingTexts, pad[0], pad[1], SEEDS.padding);
  const latency = textOfTokens(new Prng(SEEDS.latency), plan.latencyTokens);
  const throughputIds = tokenize(throughput);
  const [latencyIds] = tokenize([latency]);
  const check = [...throughput, latency];
  const ids = [...throughputIds, latencyIds];
  const bad = check.findIndex((t, i) => ids[i].length !== t.tokens);
  if (bad >= 0) {
    throw new Error(`tokenizer gave ${ids[bad].length} tokens for a planned ${check[bad].tokens}`);
  }
  return { throughput, throughputIds, padding, latency, latencyIds };
}
