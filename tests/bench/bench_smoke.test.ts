/** Quick checks of the bench's pure helpers (the bench itself is `deno task bench`, not a test). */
import assert from "node:assert/strict";
import { scenario } from "./aggregate.ts";
import { parseArgs } from "./args.ts";
import { paddingFraction, planBatches } from "./batching.ts";
import { counterDelta, padShare, parseCounters } from "./metrics.ts";
import { resultsJson } from "./report.ts";
import type { BenchResults } from "./results.ts";
import type { RoundData } from "./round.ts";
import { sampleFromBatches, sampleFromLoad, sampleFromRuns } from "./samples.ts";
import { median, mostFrequent, quantile, summarize } from "./stats.ts";
import { escapeXml, renderChart } from "./svg.ts";
import { buildTargets } from "./targets.ts";
import { corpus, textOfTokens } from "./texts.ts";
import { Prng } from "@svc/fixture-models/prng";
import { contenders, type RawModel, threadCandidates } from "./raw_ort.ts";
import { fixtureTokenizer } from "../fixtures/testing.ts";

Deno.test("bench stats: quantiles interpolate, summaries cover empty input", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(quantile([0, 10], 0.25), 2.5);
  assert.equal(summarize([1, 2, 3, 4]).max, 4);
  assert.ok(Number.isNaN(summarize([]).p50));
});

Deno.test("bench texts: n words give n + 2 fixture tokens", () => {
  const tok = fixtureTokenizer();
  const texts = [textOfTokens(new Prng(1), 16), ...corpus(20, 5, 500, 7)];
  for (const t of texts) assert.equal(tok.encode(t.text).ids.length, t.tokens);
  assert.deepEqual(corpus(3, 5, 9, 7), corpus(3, 5, 9, 7));
});

Deno.test("bench batching: sorted groups respect the padded budget", () => {
  const lengths = [10, 50, 12, 48, 11];
  const plan = planBatches(lengths, 100);
  for (const b of plan) assert.ok(b.indexes.length * b.seq <= 100 || b.indexes.length === 1);
  assert.deepEqual(plan.map((b) => b.indexes), [[0, 4, 2], [3, 1]]);
  assert.equal(paddingFraction([10, 10], [{ indexes: [0, 1], seq: 10 }]), 0);
});

Deno.test("bench metrics: counters parsed by exact label, padding share from deltas", () => {
  const text = [
    'svc_tokens_processed_total{model="fixture/bench-small"} 150',
    'svc_tokens_processed_total{model="fixture/bench-smaller"} 9',
    'svc_padded_tokens_total{model="fixture/bench-small"} 200',
    'svc_batch_size_sum{model="fixture/bench-small"} 12',
    'svc_batch_size_count{model="fixture/bench-small"} 3',
  ].join("\n");
  const after = parseCounters(text, "fixture/bench-small");
  const d = counterDelta({ tokens: 50, padded: 100, batchItems: 2, batches: 1 }, after);
  assert.deepEqual(d, { tokens: 100, padded: 100, batchItems: 10, batches: 2 });
  assert.equal(padShare(after), 0.25);
});

Deno.test("bench args: flags and usage errors", () => {
  assert.deepEqual(parseArgs(["--quick", "--out", "x"]).outDir, "x");
  assert.equal(parseArgs([]).outDir, null);
  assert.equal(parseArgs([]).writeDocs, false);
  assert.equal(parseArgs(["--write-docs"]).writeDocs, true);
  assert.equal(parseArgs([]).quick, false);
  assert.throws(() => parseArgs(["--fast"]), /usage/);
});

Deno.test("bench report: targets, JSON shape and a self-contained SVG", () => {
  const load = (ms: number) => ({
    latenciesMs: [ms, ms, -1],
    serverMs: [ms - 1, ms - 1, -1],
    inferenceMs: [ms - 2, ms - 2, -1],
    elapsedMs: 1000,
    ok: 2,
    failed: 1,
    statuses: { "200": 2, "503": 1 },
  });
  const texts = corpus(3, 10, 10, 1);
  const round: RoundData = {
    rawThroughput: sampleFromBatches(1, 1000, 100),
    rawThreads: 2,
    rawTokensPerSByThreads: { "1": 6000, "2": 10_000 },
    rawInt8Throughput: sampleFromBatches(1, 1000, 40),
    rawFp32SameThreadsTokensPerS: 10_000,
    workerThroughput: sampleFromLoad(load(20), texts),
    workerLarge: sampleFromLoad(load(40), texts),
    rawSingle: sampleFromRuns([10, 10], 16),
    workerSingle: sampleFromLoad(load(11), texts),
    healthzMs: [1, 2, 3],
    throughputCounters: { tokens: 20, padded: 25, batchItems: 2, batches: 1 },
    largeCounters: { tokens: 40, padded: 50, batchItems: 4, batches: 2 },
  };
  const padding = [{
    sample: round.workerThroughput,
    counters: { tokens: 90, padded: 100, batchItems: 4, batches: 2 },
  }];
  const targets = buildTargets([round], padding, "disabled with --no-router", [0.995, 0.985]);
  const byId = Object.fromEntries(targets.map((t) => [t.id, t]));
  // 2 answered texts of 10 tokens in 1 s against 1000 tokens in 100 ms.
  assert.equal(byId.efficiency_small.value, 20 / 10_000);
  assert.equal(byId.efficiency_large.value, 20 / 10_000);
  assert.equal(byId.efficiency_large.target, 0.93);
  assert.equal(byId.latency_overhead.value, 1);
  assert.equal(byId.int8_speedup.value, 2.5);
  assert.equal(byId.int8_cosine.value, 0.99);
  assert.equal(byId.int8_cosine.pass, true);
  assert.equal(byId.router_throughput.pass, null);
  assert.equal(byId.padding_share.value, 0.1);
  assert.equal(byId.padding_share.pass, false); // bound 5 %
  const results: BenchResults = {
    schema: 1,
    date: "2025-01-01T00:00:00.000Z",
    quick: true,
    durationS: 1,
    machine: {
      cores: 2,
      cpuModel: "Test <CPU>",
      os: "linux",
      deno: "2",
      v8: "1",
      onnxruntimeNode: "1.30.0",
      loadAvgStart: [1, 1, 1],
      loadAvgEnd: [1, 1, 1],
      threads: {
        worker: 2,
        raw: 2,
        rawThreadsPerRound: [2],
        rawTokensPerSByThreads: { "0": 1, "1": 1, "2": 2 },
      },
    },
    settings: {},
    targets,
    scenarios: [scenario("raw_ort_batched", "raw", [round.rawThroughput])],
    diagnostics: { nothing: null },
  };
  const json = JSON.parse(resultsJson(results));
  assert.deepEqual(Object.keys(json), Object.keys(results));
  assert.equal(json.scenarios[0].median.p50Ms, null); // NaN is written as null
  const svg = renderChart(results);
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.trimEnd().endsWith("</svg>"));
  assert.ok(svg.includes(escapeXml("Test <CPU>")) && !svg.includes("Test <CPU>"));
  for (const t of targets) assert.ok(svg.includes(escapeXml(t.label)), t.id);
  assert.ok(!/<script|href=/.test(svg));
});

Deno.test("bench baseline tries ORT's default, 1, powers of two and every CPU", () => {
  assert.deepEqual(threadCandidates(1), [0, 1]);
  assert.deepEqual(threadCandidates(2), [0, 1, 2]);
  assert.deepEqual(threadCandidates(6), [0, 1, 2, 4, 6]);
  // Only counts within 75 % of the warm-up's best are timed in every round.
  const models = [0, 1, 2].map((threads) => ({ threads }) as unknown as RawModel);
  const kept = contenders(models, { "0": 3000, "1": 1600, "2": 3300 });
  assert.deepEqual(kept.map((m) => m.threads), [0, 2]);
});

Deno.test("bench int8 agreement: mean pooling over real tokens only", async () => {
  const { meanPool } = await import("./int8.ts");
  // 2 rows, seq 2, hidden 2; row 1 has one real token.
  const data = Float32Array.from([1, 2, 3, 4, 5, 6, 100, 100]);
  const [a, b] = meanPool(data, [[7, 8], [9]], 2);
  assert.deepEqual(Array.from(a), [2, 3]);
  assert.deepEqual(Array.from(b), [5, 6]);
});

Deno.test("bench stats: the raw thread count reported is the one that won most rounds", () => {
  // A median of [0, 2, 2, 0] would be 1: a count that was never timed.
  assert.equal(mostFrequent([0, 2, 2, 0]), 0);
  assert.equal(mostFrequent([0, 2, 2, 2]), 2);
  assert.equal(mostFrequent([4]), 4);
});
